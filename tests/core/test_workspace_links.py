"""Planted links and special files in the workspace never redirect nor hang the runtime.

A workspace can arrive with a cloned repository (``.agent/`` beside the notebook) and git
keeps symbolic links, so every runtime file and folder is planted here as a link to a file
or folder *outside* the workspace (a stand-in for ``~/.bashrc`` or ``~/.bashrc.d``), then a
real run through the scripted server remembers (both kinds), replies, fetches a URL holding
``$(...)``, recalls with a query long enough to go to a blob, puts an artifact and schedules
a trigger. The target must stay byte-identical and the run must return. FIFOs at each
runtime path must be refused at once (each case runs under a timeout). Every case fails
without :mod:`agent_kernel.core.safe_open`: the unguarded code appends, truncates or blocks.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from scripted_server import Call, Message, ScriptedServer

from agent_kernel import Agent, Settings
from agent_kernel.core.events import EventBus, Question
from agent_kernel.core.safe_open import UnsafeWorkspacePath, WorkspaceLock, append_bytes, read_bytes
from agent_kernel.core.workspace import Workspace, WorkspaceError
from agent_kernel.engine.questions import Pending, QuestionChannel
from agent_kernel.team.asking import PendingQuestion, QuestionStore
from agent_kernel.team.members import AGENTS_FOLDER, MESSAGES_FOLDER
from agent_kernel.team.queue import FOLDER as TASKS_FOLDER
from agent_kernel.team.queue import TaskStore
from agent_kernel.triggers.scheduler import TriggerScheduler
from agent_kernel.triggers.store import TriggerStore

ORIGINAL = b"# the person's own file\nexport PS1='$ '\n"
EVIL = "$(touch /tmp/agent-kernel-links-pwned)"

# (path planted in the workspace, kind of link: to a file or to a folder)
FILE_LINKS = ["memory.md", "memory/history.jsonl", "ledger.jsonl", "ledger.jsonl.lock",
              ".memory-md.lock", "memory/history.jsonl.lock", "memory/history.ingest.lock",
              "ledger.quarantine.jsonl", "memory/history.quarantine.jsonl"]
# A torn last line makes the next append move it to the quarantine file.
TORN = {"ledger.quarantine.jsonl": "ledger.jsonl",
        "memory/history.quarantine.jsonl": "memory/history.jsonl"}
FOLDER_LINKS = ["memory", "ledger-blobs", "team/artifacts", "triggers", "team"]


def _plant(ws: Path, relative: str, target: Path) -> None:
    link = ws / relative
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(target, link.parent), link)


def _snapshot(target: Path) -> dict[str, bytes]:
    if target.is_file():
        return {"": target.read_bytes()}
    return {str(p.relative_to(target)): p.read_bytes() if p.is_file() else b"<dir>"
            for p in sorted(target.rglob("*"))}


async def _full_run(ws: Path) -> Any:
    """One run that touches every runtime file: both memories, a URL fetch, a large recall
    (a ledger blob), an artifact, a trigger, and a reply (the history journal)."""
    calls = [
        Call("remember", json.dumps({"content": f"note\ntouch {EVIL}", "longTerm": True}),
             id="c1"),
        Call("remember", json.dumps({"content": f"short {EVIL}"}), id="c2"),
        Call("url_fetch", json.dumps({"url": f"http://127.0.0.1:9/{EVIL}"}), id="c3"),
        Call("recall", json.dumps({"query": EVIL + "x" * 70000}), id="c4"),
        Call("put_artifact", json.dumps({"type": "document", "content": EVIL}), id="c5"),
        Call("schedule", json.dumps({"prompt": f"hello {EVIL}", "type": "recurring",
                                     "interval": 3600}), id="c6"),
    ]
    with ScriptedServer() as server:
        agent = Agent(model="openai/test-model", workspace=ws,
                      settings=Settings(api_base=server.base_url, api_key="sk-x"))
        scheduler = TriggerScheduler(agent)
        agent.services.triggers = scheduler
        scheduler.start(pump=False)
        try:
            server.script(Message(calls=calls, pieces=1), Message(text=f"Done {EVIL}"))
            result = await asyncio.wait_for(agent.arun("remember and fetch"), 120)
            return result, agent
        finally:
            await scheduler.close()


@pytest.mark.parametrize("relative", FILE_LINKS + FOLDER_LINKS)
async def test_a_planted_link_is_never_written_through(tmp_path: Path, relative: str) -> None:
    home = tmp_path / "home"
    ws = home / "project" / ".agent"
    ws.mkdir(parents=True)
    if relative in FOLDER_LINKS:
        target = home / ".bashrc.d"
        target.mkdir()
        (target / "existing.sh").write_bytes(ORIGINAL)
    else:
        target = home / ".bashrc"
        target.write_bytes(ORIGINAL)
    _plant(ws, relative, target)
    if relative in TORN:
        (ws / TORN[relative]).parent.mkdir(parents=True, exist_ok=True)
        (ws / TORN[relative]).write_bytes(b'{"torn": "no newline')
    before = _snapshot(target)
    result, agent = await _full_run(ws)
    assert result.status in ("ok", "error")  # the run returned
    assert _snapshot(target) == before, f"{relative}: the link's target changed"
    assert (ws / relative).is_symlink()  # left for the person to look at and remove
    if relative in ("ledger.jsonl", "ledger.jsonl.lock", "ledger-blobs",
                    "ledger.quarantine.jsonl"):
        # No record can be kept: the run ends with the refusal in words, not a traceback.
        assert result.status == "error" and "symbolic link" in str(result.error)
        assert "Traceback" not in str(result.error)


async def test_the_runs_refusal_is_told_to_the_model_in_words(tmp_path: Path) -> None:
    ws = tmp_path / "project" / ".agent"
    ws.mkdir(parents=True)
    (tmp_path / ".bashrc").write_bytes(ORIGINAL)
    _plant(ws, "memory.md", tmp_path / ".bashrc")
    with ScriptedServer() as server:
        agent = Agent(model="openai/test-model", workspace=ws,
                      settings=Settings(api_base=server.base_url, api_key="sk-x"))
        server.script(Message(calls=[Call("remember", json.dumps(
            {"content": "note", "longTerm": True}), id="c1")]), Message(text="ok"))
        result = await agent.arun("remember")
        told = json.dumps(server.requests[-1]["messages"][-1])
    assert result.status == "ok"
    assert "memory.md is a symbolic link" in told and "Remove the link" in told
    assert (tmp_path / ".bashrc").read_bytes() == ORIGINAL
    # Nothing was kept either: the refusal comes before the memory table is written.
    from agent_kernel.memory.service import MemoryStore

    assert MemoryStore(ws).count() == 0


# -- direct writers the run above does not reach ------------------------------------------


def _question() -> PendingQuestion:
    return PendingQuestion.new(f"q {EVIL}", None, 60, None)


WRITERS: dict[str, tuple[str, Callable[[Workspace], Any]]] = {
    "team question": ("team", lambda w: QuestionStore(w).save(_question())),
    "team question clear": ("team", lambda w: QuestionStore(w).clear()),
    "team tasks": (TASKS_FOLDER, lambda w: TaskStore(w).delete("task_x")),
    "trigger delete": ("triggers", lambda w: TriggerStore(w).delete("trg_x")),
}


@pytest.mark.parametrize("case", sorted(WRITERS))
def test_direct_writers_refuse_a_planted_folder_link(tmp_path: Path, case: str) -> None:
    relative, write = WRITERS[case]
    ws = tmp_path / "project" / ".agent"
    ws.mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in ("pending_question.json", "task_x.json", "trg_x.json"):
        (outside / name).write_bytes(ORIGINAL)
    _plant(ws, relative, outside)
    before = _snapshot(outside)
    with pytest.raises(UnsafeWorkspacePath, match="symbolic link"):
        write(Workspace(ws))
    assert _snapshot(outside) == before


def test_the_pending_question_file_link_is_replaced_not_followed(tmp_path: Path) -> None:
    ws = tmp_path / ".agent"
    ws.mkdir()
    (tmp_path / ".bashrc").write_bytes(ORIGINAL)
    _plant(ws, "pending_question.json", tmp_path / ".bashrc")
    _plant(ws, "pending_question.tmp", tmp_path / ".bashrc")  # the temporary name it once used
    channel = QuestionChannel(EventBus(), Workspace(ws))
    loop = asyncio.new_event_loop()
    try:
        channel.pending["q"] = Pending(
            Question("run_1", "q", f"what {EVIL}", None, 5.0, None), loop.create_future(),
            loop, datetime.now(timezone.utc))
        channel._write_pending()
    finally:
        loop.close()
    assert (tmp_path / ".bashrc").read_bytes() == ORIGINAL
    assert not (ws / "pending_question.json").is_symlink()
    channel.pending.clear()
    channel._write_pending()
    assert (tmp_path / ".bashrc").read_bytes() == ORIGINAL


# -- FIFOs ------------------------------------------------------------------------------------

TEAM_FIFOS = ["team/pending_question.json", "team/agents/a.json", "team/messages/m.json",
              f"{TASKS_FOLDER}/task_x.json", "team/roles/r.json", "triggers/trg_x.json"]
RUN_FIFOS = ["memory.md", "memory/history.jsonl", "ledger.jsonl", "ledger.jsonl.lock",
             ".memory-md.lock", "memory/history.cursor.json"]


def _child(code: str, *args: Path) -> subprocess.CompletedProcess[str]:
    """``code`` in a child with a time limit: a blocked open would hang the test run, not
    fail it, so a block shows as TimeoutExpired here."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).parents[2]), str(Path(__file__).parents[1])])}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *map(str, args)],
                          env=env, capture_output=True, text=True, timeout=400)


def test_planted_fifos_never_block_team_restore(tmp_path: Path) -> None:
    ws = tmp_path / ".agent"
    assert AGENTS_FOLDER.startswith("team/") and MESSAGES_FOLDER.startswith("team/")
    for relative in TEAM_FIFOS:
        (ws / relative).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(ws / relative)
    done = _child("""
        import sys
        from agent_kernel import Settings
        from agent_kernel.team import Team
        from agent_kernel.triggers.store import TriggerStore
        from agent_kernel.core.workspace import Workspace
        team = Team(model="openai/x", workspace=sys.argv[1],
                    settings=Settings(api_base="http://127.0.0.1:9", api_key="sk-x"))
        for problem in team.restore_report.problems:
            print("team:", problem)
        for problem in TriggerStore(Workspace(sys.argv[1])).load_all()[1]:
            print("triggers:", problem)
    """, ws)
    assert done.returncode == 0, done.stderr[-2000:]
    for name in ("pending_question.json", "a.json", "m.json", "task_x.json", "trg_x.json"):
        assert name in done.stdout  # each refused FIFO is named among the problems


def test_planted_fifos_never_block_a_run(tmp_path: Path) -> None:
    for index, relative in enumerate(RUN_FIFOS):
        ws = tmp_path / f"ws{index}" / ".agent"
        (ws / relative).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(ws / relative)
    done = _child("""
        import asyncio, json, sys
        from scripted_server import Call, Message, ScriptedServer
        from agent_kernel import Agent, Settings
        for ws in sys.argv[1:]:
            with ScriptedServer() as server:
                agent = Agent(model="openai/test-model", workspace=ws,
                              settings=Settings(api_base=server.base_url, api_key="sk-x"))
                server.script(Message(calls=[Call("remember", json.dumps(
                    {"content": "note", "longTerm": True}), id="c1")]), Message(text="done"))
                result = asyncio.run(agent.arun("hi"))
                print("run", result.status)
    """, *(tmp_path / f"ws{i}" / ".agent" for i in range(len(RUN_FIFOS))))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("run ") == len(RUN_FIFOS)
    for index, relative in enumerate(RUN_FIFOS):  # each FIFO is still there, unread
        assert stat.S_ISFIFO(os.lstat(tmp_path / f"ws{index}" / ".agent" / relative).st_mode)


def test_safe_open_refuses_a_fifo_at_once_and_names_it(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    outcome: list[BaseException | bytes] = []

    def read() -> None:
        try:
            outcome.append(read_bytes(tmp_path, "pipe"))
        except BaseException as exc:  # noqa: BLE001 - kept for the assertion
            outcome.append(exc)

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(5)
    assert not worker.is_alive(), "reading a FIFO blocked"
    assert isinstance(outcome[0], UnsafeWorkspacePath)
    assert "FIFO" in str(outcome[0]) and "Remove it" in str(outcome[0])


def test_safe_open_walks_from_the_root_and_makes_folders_without_links(tmp_path: Path) -> None:
    append_bytes(tmp_path, "a/b/c.txt", b"x")
    assert (tmp_path / "a/b/c.txt").read_bytes() == b"x"
    (tmp_path / "elsewhere").mkdir()
    os.symlink("../elsewhere", tmp_path / "a" / "d")
    with pytest.raises(UnsafeWorkspacePath, match="a/d is a symbolic link"):
        append_bytes(tmp_path, "a/d/e/f.txt", b"x")
    assert list((tmp_path / "elsewhere").iterdir()) == []
    with pytest.raises(UnsafeWorkspacePath, match="climbs out"):
        append_bytes(tmp_path, "a/../../x", b"x")
    (tmp_path / "target").write_bytes(ORIGINAL)
    os.symlink("target", tmp_path / "x.lock")
    with pytest.raises(UnsafeWorkspacePath), WorkspaceLock(tmp_path, "x.lock"):
        pass
    assert (tmp_path / "target").read_bytes() == ORIGINAL


def test_a_memory_table_folder_that_is_a_link_is_refused(tmp_path: Path) -> None:
    from agent_kernel.memory.service import MemoryStore

    ws = tmp_path / ".agent"
    (ws / "lancedb").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    os.symlink("../../outside", ws / "lancedb" / "memories.lance")
    with pytest.raises(UnsafeWorkspacePath, match="memories.lance is a symbolic link"):
        MemoryStore(ws).remember("x", agent_id="main")
    assert list((tmp_path / "outside").iterdir()) == []
    os.unlink(ws / "lancedb" / "memories.lance")
    os.symlink("../outside", ws / "lancedb2")
    os.rmdir(ws / "lancedb")
    os.rename(ws / "lancedb2", ws / "lancedb")
    with pytest.raises(UnsafeWorkspacePath, match="lancedb is a symbolic link"):
        MemoryStore(ws).remember("x", agent_id="main")
    assert list((tmp_path / "outside").iterdir()) == []


# -- the workspace root ----------------------------------------------------------------------


def test_a_default_workspace_that_is_a_link_is_refused_and_a_chosen_one_is_honoured(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project, chosen = tmp_path / "project", tmp_path / "chosen"
    project.mkdir()
    chosen.mkdir()
    os.symlink("../chosen", project / ".agent")
    monkeypatch.chdir(project)
    monkeypatch.delenv("AGENT_KERNEL_WORKSPACE", raising=False)
    with pytest.raises(WorkspaceError, match="default workspace .* is a symbolic link"):
        Workspace()
    with pytest.raises(WorkspaceError, match="symbolic link"):
        Agent()
    # Chosen on purpose (the variable, or an explicit path): resolved once, then used.
    monkeypatch.setenv("AGENT_KERNEL_WORKSPACE", str(project / ".agent"))
    assert Workspace().root == chosen.resolve()
    assert Workspace(project / ".agent").root == chosen.resolve()


def test_the_cli_refuses_a_linked_default_workspace_in_words(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "elsewhere").mkdir()
    os.symlink("../elsewhere", project / ".agent")
    env = {k: v for k, v in os.environ.items() if k != "AGENT_KERNEL_WORKSPACE"}
    env["PYTHONPATH"] = str(Path(__file__).parents[2])
    done = subprocess.run([sys.executable, "-m", "agent_kernel", "verify"], cwd=project,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "is a symbolic link" in done.stderr and "Traceback" not in done.stderr
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_a_lock_kept_open_locks_the_file_at_its_name_when_the_name_changed(
        tmp_path: Path) -> None:
    """A lock file replaced between holds: the next hold is on the new file, the one another
    process would lock, never on the old one kept open."""
    import fcntl

    from agent_kernel.core.safe_open import LockTimeout

    lock = WorkspaceLock(tmp_path, "x.lock", keep_open=True)
    with lock:
        pass
    (tmp_path / "x.lock").unlink()
    (tmp_path / "x.lock").write_text("")
    other = os.open(tmp_path / "x.lock", os.O_RDWR)  # another process's hold, on the new file
    fcntl.flock(other, fcntl.LOCK_EX)
    try:
        with pytest.raises(LockTimeout), lock.acquire(timeout=0.1):
            pass
    finally:
        os.close(other)
    with lock.acquire(timeout=5):  # free again: taken, on the file at the name
        other = os.open(tmp_path / "x.lock", os.O_RDWR)
        with pytest.raises(BlockingIOError):
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.close(other)
    (tmp_path / "x.lock").unlink()
    (tmp_path / "x.lock").symlink_to(tmp_path / "elsewhere")  # a link: refused, not followed
    with pytest.raises(UnsafeWorkspacePath), lock:
        pass
    assert not (tmp_path / "elsewhere").exists()
    with pytest.raises(ValueError, match="one name"):
        WorkspaceLock(tmp_path, "a/x.lock", keep_open=True)
