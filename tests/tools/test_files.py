"""The file tools: read_file, write_file, list_files and get_workspace_info.

Real files in tmp_path. Every answer is spec 004's envelope (``{ok, ...}`` or
``{ok: false, error}``), writes land only in files/ and state/, and the
listings show neither the runtime's files nor deny-listed names.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import time
from pathlib import Path
from typing import Any

import pytest
from tool_helpers import call_tool

from agent_kernel import Agent
from agent_kernel.engine.registry import ToolArgumentError
from agent_kernel.tools import files
from agent_kernel.views.summaries import summarise


@pytest.fixture
def agent(tmp_path: Path) -> Agent:
    return Agent(workspace=tmp_path / "ws")


@pytest.fixture
def limits(monkeypatch: pytest.MonkeyPatch) -> files.FileToolLimits:
    fresh = files.FileToolLimits()
    monkeypatch.setattr(files, "LIMITS", fresh)
    return fresh


call = call_tool


def refused(result: Any, *fragments: str) -> bool:
    """A spec 004 failure envelope whose error says every one of ``fragments``."""
    return (isinstance(result, dict) and set(result) == {"ok", "error"}
            and result["ok"] is False and all(f in result["error"] for f in fragments))


# Shapes: the union of the two specs' arguments, spec 004's results.

def test_argument_shapes(agent: Agent) -> None:
    shapes = {name: agent.registry.get(name).parameters
              for name in ("read_file", "write_file", "list_files", "get_workspace_info")}
    assert {n: (sorted(s["properties"]), s["required"]) for n, s in shapes.items()} == {
        "read_file": (["path"], ["path"]),
        "write_file": (["content", "mode", "path"], ["path", "content"]),
        "list_files": (["path"], []),
        "get_workspace_info": ([], []),
    }
    mode = shapes["write_file"]["properties"]["mode"]
    assert mode["enum"] == ["overwrite", "append"] and mode["default"] == "overwrite"
    assert [agent.registry.get(n).side_effects for n in shapes] == [False, True, False, False]


async def test_write_then_read_and_append(agent: Agent) -> None:
    wrote = await call(agent, "write_file", path="notes/today.txt", content="hello")
    assert wrote == {"ok": True, "path": "files/notes/today.txt", "bytes": 5,
                     "mode": "overwrite"}
    appended = await call(agent, "write_file", path="notes/today.txt", content=" wörld",
                          mode="append")
    assert appended["ok"] is True and appended["bytes"] == 7
    assert await call(agent, "read_file", path="notes/today.txt") == {
        "ok": True, "content": "hello wörld"}
    assert await call(agent, "read_file", path="file_cache_dir/notes/today.txt") == {
        "ok": True, "content": "hello wörld"}
    await call(agent, "write_file", path="notes/today.txt", content="new")
    assert (agent.workspace.root / "files/notes/today.txt").read_text() == "new"


async def test_state_alias(agent: Agent) -> None:
    wrote = await call(agent, "write_file", path="file_state_dir/plan.md", content="# plan")
    assert wrote["path"] == "state/plan.md"
    assert (agent.workspace.root / "state" / "plan.md").read_text() == "# plan"
    assert (await call(agent, "read_file", path="file_state_dir/plan.md"))["content"] == "# plan"


@pytest.mark.parametrize("path", ["../../escape.txt", "/etc/passwd", "file_state_dir/../../x",
                                  "~/x.txt", "/proc/self/root/etc/passwd"])
async def test_paths_outside_the_workspace_are_refused(agent: Agent, path: str) -> None:
    for name, extra in (("read_file", {}), ("write_file", {"content": "x"}), ("list_files", {})):
        assert refused(await call(agent, name, path=path, **extra), "outside the workspace"), name
    assert not (agent.workspace.root.parent / "escape.txt").exists()


async def test_absolute_path_inside_the_workspace_is_fine(agent: Agent) -> None:
    target = agent.workspace.root / "files" / "abs.txt"
    assert (await call(agent, "write_file", path=str(target), content="ok"))["ok"] is True
    assert target.read_text() == "ok"


async def test_alias_without_a_file_is_refused_but_lists(agent: Agent) -> None:
    assert refused(await call(agent, "read_file", path="file_cache_dir"),
                   "'file_cache_dir' needs a file path after it")
    assert refused(await call(agent, "write_file", path="file_state_dir/", content="x"),
                   "'file_state_dir' needs a file path after it")
    await call(agent, "write_file", path="file_state_dir/a.txt", content="x")
    listed = await call(agent, "list_files", path="file_state_dir")
    assert listed["entries"] == [{"name": "a.txt", "type": "file"}]


async def test_bad_input_is_a_readable_refusal(agent: Agent) -> None:
    assert refused(await call(agent, "read_file", path="a\x00b"), "NUL character")
    assert refused(await call(agent, "read_file", path="~nosuchuser_xyz/a"),
                   "unknown home folder")
    assert refused(await call(agent, "write_file", path="s.txt", content="bad \ud800"),
                   "lone surrogate", "nothing was written")
    assert not (agent.workspace.root / "files" / "s.txt").exists()


async def test_deny_paths(agent: Agent) -> None:
    assert refused(await call(agent, "write_file", path="secrets/.env", content="KEY=1"),
                   "'secrets/.env' is a protected file (it holds secrets)")
    assert not (agent.workspace.root / "files/secrets/.env").exists()
    agent.workspace.ensure()
    (agent.workspace.root / "ledger.jsonl").write_text("{}\n")
    assert refused(await call(agent, "read_file",
                              path="/" + str(agent.workspace.root / "ledger.jsonl")),
                   "is a protected file (the ledger")


async def test_deny_paths_hold_in_any_case(agent: Agent) -> None:
    """``KEY.PEM`` is a key as much as ``key.pem`` (and on a case-insensitive disk ``.ENV`` is
    ``.env``): protected names match in any case, for writes, reads and listings."""
    for path in ("secrets/.ENV", "KEY.PEM", "Id_Rsa.pub"):
        assert refused(await call(agent, "write_file", path=path, content="K=1"),
                       "is a protected file"), path
    (agent.workspace.root / "files").mkdir(parents=True, exist_ok=True)
    (agent.workspace.root / "files" / "Server.Pem").write_text("-----BEGIN-----")
    assert refused(await call(agent, "read_file", path="Server.Pem"), "is a protected file")
    assert (await call(agent, "list_files"))["entries"] == []


async def test_missing_file_and_folder(agent: Agent) -> None:
    assert await call(agent, "read_file", path="nope.txt") == {
        "ok": False, "error": "no such file: files/nope.txt"}
    await call(agent, "write_file", path="dir/a.txt", content="a")
    assert refused(await call(agent, "read_file", path="dir"), "files/dir is a folder")
    assert refused(await call(agent, "write_file", path="dir", content="x"), "is a folder")
    assert refused(await call(agent, "list_files", path="nope"), "no such folder: files/nope")
    assert refused(await call(agent, "list_files", path="dir/a.txt"), "not a folder")


async def test_byte_limits(agent: Agent, limits: files.FileToolLimits) -> None:
    await call(agent, "write_file", path="big.txt", content="keep me")
    limits.write_max_bytes = 10
    assert refused(await call(agent, "write_file", path="big.txt", content="x" * 11),
                   "content is 11 bytes; write_file allows at most 10")
    assert refused(await call(agent, "write_file", path="big.txt", content="é" * 6),
                   "content is 12 bytes")
    assert (agent.workspace.root / "files/big.txt").read_text() == "keep me"
    assert (await call(agent, "write_file", path="big.txt", content="x" * 10))["ok"] is True
    limits.read_max_bytes = 4
    await call(agent, "write_file", path="small.txt", content="abcdefgh")
    text = (await call(agent, "read_file", path="small.txt"))["content"]
    assert text.startswith("abcd\n") and "truncated: showed 4 of 8 bytes" in text


async def test_bad_mode_is_a_clear_argument_error(agent: Agent) -> None:
    tool = agent.registry.get("write_file")
    with pytest.raises(ToolArgumentError, match="mode"):
        tool.validate({"path": "a", "content": "b", "mode": "truncate"})


@pytest.mark.parametrize("name,arguments", [
    ("read_file", {"path": "a.txt"}), ("write_file", {"path": "b.txt", "content": "new"}),
    ("list_files", {}), ("get_workspace_info", {})])
async def test_disabled_tools_answer_in_spec_003s_words(
        agent: Agent, limits: files.FileToolLimits, name: str, arguments: dict[str, Any]) -> None:
    await call(agent, "write_file", path="a.txt", content="old")
    setattr(limits, f"{name}_enabled", False)
    result = await call(agent, name, **arguments)
    assert refused(result) and result["error"].startswith(f"{name} tool is disabled")
    assert not (agent.workspace.root / "files/b.txt").exists()
    others = {"read_file", "write_file", "list_files", "get_workspace_info"} - {name}
    for other in others:  # the switch is per tool
        assert getattr(limits, f"{other}_enabled") is True


# Writes: only files/ and state/, on the fully resolved path.

@pytest.fixture
def runtime_files(agent: Agent) -> dict[str, bytes]:
    """The runtime's own files, with content to compare after an attack."""
    root = agent.workspace.root
    made = {"ledger.jsonl": b'{"seq": 1}\n', "triggers/t1.json": b'{"condition": "True"}',
            "memory.md": b"# memory\n", "lancedb/x.txt": b"table", "pending_question.json": b"{}"}
    for relative, data in made.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_bytes(data)
    (root / "files").mkdir(exist_ok=True)
    return made


def unchanged(agent: Agent, made: dict[str, bytes]) -> bool:
    root = agent.workspace.root
    return (all((root / rel).read_bytes() == data for rel, data in made.items())
            and not (root / "triggers" / "evil.json").exists())


@pytest.mark.parametrize("path", [
    "../triggers/evil.json", "file_state_dir/../triggers/evil.json", "../memory.md",
    "../lancedb/x.txt", "../lancedb/new.txt", "../ledger.jsonl", "../pending_question.json",
    "../new_file.txt", "ABS/triggers/evil.json", "ABS/memory.md",
    "/proc/self/root/ABS/memory.md", "/proc/self/root/ABS/triggers/evil.json"])
async def test_write_file_refuses_the_runtime_files(
        agent: Agent, runtime_files: dict[str, bytes], path: str) -> None:
    path = path.replace("/ABS", str(agent.workspace.root)).replace(
        "ABS", str(agent.workspace.root))
    result = await call(agent, "write_file", path=path, content="pwned")
    assert refused(result, "is a protected file") or refused(
        result, "belongs to the runtime", "files/ (file_cache_dir) or state/ (file_state_dir)")
    assert unchanged(agent, runtime_files)
    assert not (agent.workspace.root / "new_file.txt").exists()


async def test_write_file_refuses_symlinks_out_of_files(
        agent: Agent, runtime_files: dict[str, bytes]) -> None:
    root = agent.workspace.root
    cache = root / "files"
    (cache / "led").symlink_to("../ledger.jsonl")
    (cache / "trig").symlink_to("../triggers")
    (cache / "mem").symlink_to(root / "memory.md")
    (cache / "viaproc").symlink_to(f"/proc/self/root{root}/memory.md")
    (cache / "procdir").symlink_to(f"/proc/self/root{root}/triggers")
    for path in ("led", "trig/evil.json", "mem", "file_cache_dir/mem", "viaproc",
                 "procdir/evil.json"):
        result = await call(agent, "write_file", path=path, content="pwned", mode="append")
        assert refused(result), path
    assert unchanged(agent, runtime_files)
    # A symlink that stays inside files/ is followed.
    (cache / "real.txt").write_text("a")
    (cache / "alias.txt").symlink_to("real.txt")
    assert (await call(agent, "write_file", path="alias.txt", content="b", mode="append"))["ok"]
    assert (cache / "real.txt").read_text() == "ab"


async def test_a_symlink_at_the_ledger_is_not_read_or_listed(
        agent: Agent, runtime_files: dict[str, bytes]) -> None:
    root = agent.workspace.root
    cache = root / "files"
    (cache / "led").symlink_to("../ledger.jsonl")
    (cache / "viaproc").symlink_to(f"/proc/self/root{root}/ledger.jsonl")
    (cache / "parent").symlink_to("..")  # a symlinked parent folder
    for path in ("led", "viaproc", "parent/ledger.jsonl", f"/proc/self/root{root}/ledger.jsonl",
                 "parent/files/led"):
        result = await call(agent, "read_file", path=path)
        assert refused(result, "is a protected file"), path
        assert "seq" not in json.dumps(result)
    for path in ("parent", "parent/triggers", "trig/../.."):
        assert refused(await call(agent, "list_files", path=path), "belongs to the runtime")
    listed = await call(agent, "list_files")
    assert {e["name"]: e["type"] for e in listed["entries"]} == {
        "led": "symlink", "viaproc": "symlink", "parent": "symlink"}


async def test_relative_runtime_names_land_in_files(
        agent: Agent, runtime_files: dict[str, bytes]) -> None:
    wrote = await call(agent, "write_file", path="triggers/evil.json", content="{}")
    assert wrote["path"] == "files/triggers/evil.json"
    assert unchanged(agent, runtime_files)


async def test_write_file_refuses_hard_links(agent: Agent, runtime_files: dict[str, bytes]) -> None:
    os.link(agent.workspace.root / "memory.md", agent.workspace.root / "files" / "m.md")
    assert refused(await call(agent, "write_file", path="m.md", content="pwned"), "hard links")
    assert unchanged(agent, runtime_files)


async def test_files_folder_that_is_a_symlink_is_refused(
        agent: Agent, runtime_files: dict[str, bytes]) -> None:
    root = agent.workspace.root
    (root / "files").rmdir()
    (root / "files").symlink_to(root)
    for path in ("memory.md", "triggers/evil.json", "x.txt"):
        assert refused(await call(agent, "write_file", path=path, content="pwned")), path
    assert refused(await call(agent, "list_files"), "not a plain folder")
    info = await call(agent, "get_workspace_info")
    assert refused(info, "not a plain folder")
    assert unchanged(agent, runtime_files)


def test_a_folder_swapped_for_a_symlink_after_the_check_is_refused(
        agent: Agent, runtime_files: dict[str, bytes]) -> None:
    # What a command running at the same time could do between resolve() and the write.
    cache = agent.workspace.root / "files"
    (cache / "sub").symlink_to("../triggers")
    with (pytest.raises(PermissionError, match="sub is a symbolic link .*Remove the link"),
          files._folder_fd(cache, ["sub"], create=True)):
        pass
    with pytest.raises(PermissionError, match="changed while it was opened"):
        files._open_folder(agent.workspace, "files", ["sub"])
    assert unchanged(agent, runtime_files)


async def test_reads_stay_workspace_wide_with_deny_paths(
        agent: Agent, runtime_files: dict[str, bytes]) -> None:
    assert await call(agent, "read_file", path="../triggers/t1.json") == {
        "ok": True, "content": '{"condition": "True"}'}
    (agent.workspace.root / "files" / "led").symlink_to("../ledger.jsonl")
    for path in ("../ledger.jsonl", "led", "../pending_question.json"):
        assert refused(await call(agent, "read_file", path=path), "is a protected file"), path


# Reads, writes and listings refuse FIFOs, sockets and devices without blocking.

@pytest.mark.timeout(10)
async def test_read_file_refuses_a_fifo_at_once(agent: Agent) -> None:
    cache = agent.workspace.root / "files"
    cache.mkdir(parents=True)
    os.mkfifo(cache / "pipe")
    started = time.perf_counter()
    assert refused(await call(agent, "read_file", path="pipe"),
                   "files/pipe is a FIFO (named pipe); read_file works only on regular files")
    assert refused(await call(agent, "write_file", path="pipe", content="x"),
                   "socket or FIFO; write_file works only")
    listed = await call(agent, "list_files")
    assert listed["entries"] == [{"name": "pipe", "type": "other"}]
    info = (await call(agent, "get_workspace_info"))["info"]
    assert (info["fileCount"], info["directoryCount"]) == (0, 0)
    assert time.perf_counter() - started < 2


@pytest.mark.timeout(10)
async def test_read_file_refuses_sockets_and_devices(agent: Agent) -> None:
    cache = agent.workspace.root / "files"
    cache.mkdir(parents=True)
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(cache / "sock"))
        assert refused(await call(agent, "read_file", path="sock"),
                       "files/sock is a socket or FIFO")
    finally:
        server.close()
    (cache / "zero").symlink_to("/dev/zero")  # resolves outside the workspace
    assert refused(await call(agent, "read_file", path="zero"), "outside the workspace")
    if os.geteuid() == 0:
        os.mknod(cache / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        assert refused(await call(agent, "read_file", path="null"),
                       "files/null is a character device")


# Listings: files/ and state/ only, deny-listed names hidden, the work bounded.

async def test_list_files_shows_the_file_folders(
        agent: Agent, runtime_files: dict[str, bytes]) -> None:
    assert await call(agent, "list_files") == {
        "ok": True, "path": "files", "entries": [], "truncated": False}
    for path in ("src/index.js", "package.json", "src/lib/a.js", "file_state_dir/TODO.WIP.md"):
        await call(agent, "write_file", path=path, content="x")
    (agent.workspace.root / "files" / "link").symlink_to("src")
    listed = await call(agent, "list_files")
    assert listed == {"ok": True, "path": "files", "truncated": False, "entries": [
        {"name": "src", "type": "directory"}, {"name": "link", "type": "symlink"},
        {"name": "package.json", "type": "file"}]}
    assert [e["name"] for e in (await call(agent, "list_files", path="src"))["entries"]] == [
        "lib", "index.js"]
    # A symlink to a folder inside files/ is resolved, like read_file does.
    assert (await call(agent, "list_files", path="link/lib"))["path"] == "files/src/lib"
    assert (await call(agent, "list_files", path="file_state_dir"))["entries"] == [
        {"name": "TODO.WIP.md", "type": "file"}]
    root = agent.workspace.root
    for path in ("..", "../triggers", str(root), str(root / "triggers"), "file_state_dir/.."):
        result = await call(agent, "list_files", path=path)
        assert refused(result, "belongs to the runtime", "list only files/"), path


async def test_deny_listed_names_never_leak(
        agent: Agent, runtime_files: dict[str, bytes]) -> None:
    cache, state = agent.workspace.root / "files", agent.workspace.root / "state"
    state.mkdir()
    for folder in (cache, cache / "keys", state):
        folder.mkdir(exist_ok=True)
        for name in (".env", "server.pem", "id_rsa.pub", "ledger.jsonl", "ok.txt"):
            (folder / name).write_text("SECRET=hunter2hunter2")
    everything = [await call(agent, "list_files"), await call(agent, "list_files", path="keys"),
                  await call(agent, "list_files", path="file_state_dir")]
    for listed in everything:
        names = [e["name"] for e in listed["entries"]]
        assert "ok.txt" in names and not {".env", "server.pem", "id_rsa.pub",
                                          "ledger.jsonl"} & set(names)
    info = (await call(agent, "get_workspace_info"))["info"]
    assert info["fileCount"] == 3  # the three ok.txt
    assert info["totalSize"] == 3 * len("SECRET=hunter2hunter2")
    assert refused(await call(agent, "list_files", path="x/.env"), "is a protected file")


async def test_workspace_info_counts_the_file_folders(
        agent: Agent, runtime_files: dict[str, bytes]) -> None:
    assert (await call(agent, "get_workspace_info"))["info"] == {
        "fileCount": 0, "directoryCount": 0, "totalSize": 0, "lastModified": None}
    written = {"a.txt": "hello", "src/b.py": "print(1)\n", "src/deep/c.md": "# c",
               "file_state_dir/plan.md": "plan", "file_state_dir/notes/n.txt": "n"}
    for path, content in written.items():
        await call(agent, "write_file", path=path, content=content)
    newest = agent.workspace.root / "state" / "plan.md"
    os.utime(newest, (2_000_000_000, 2_000_000_000))  # 2033-05-18T03:33:20Z
    (agent.workspace.root / "files" / "to_ledger").symlink_to("../ledger.jsonl")
    result = await call(agent, "get_workspace_info")
    assert set(result) == {"ok", "info", "truncated"} and result["truncated"] is False
    assert result["info"] == {
        "fileCount": len(written), "directoryCount": 3,  # src, src/deep, notes
        "totalSize": sum(len(c.encode()) for c in written.values()),
        "lastModified": "2033-05-18T03:33:20Z"}


@pytest.mark.timeout(60)
async def test_a_huge_tree_is_capped(agent: Agent, limits: files.FileToolLimits) -> None:
    cache = agent.workspace.root / "files"
    (cache / "many").mkdir(parents=True)
    for i in range(3000):
        (cache / "many" / f"f{i:04}.txt").write_bytes(b"x")
    limits.list_max_entries, limits.info_max_entries = 100, 500
    listed = await call(agent, "list_files", path="many")
    assert len(listed["entries"]) == 100 and listed["truncated"] is True
    assert "first 100 entries" in listed["note"]
    info = await call(agent, "get_workspace_info")
    assert info["truncated"] is True and "totals are lower bounds" in info["note"]
    assert info["info"]["fileCount"] + info["info"]["directoryCount"] == 500
    limits.list_max_entries, limits.info_max_entries = 5000, 5000
    assert len((await call(agent, "list_files", path="many"))["entries"]) == 3000
    whole = await call(agent, "get_workspace_info")
    assert whole["truncated"] is False and whole["info"]["fileCount"] == 3000


async def test_a_deep_tree_stops_descending(agent: Agent) -> None:
    deep = agent.workspace.root / "files" / "/".join(["d"] * (files._MAX_DEPTH + 6))
    deep.mkdir(parents=True)
    (deep / "bottom.txt").write_text("x")
    info = await call(agent, "get_workspace_info")
    assert info["truncated"] is True
    assert info["info"]["directoryCount"] == files._MAX_DEPTH and info["info"]["fileCount"] == 0


async def test_errors_reach_the_model_as_tool_results(agent: Agent) -> None:
    agent.settings.headless_approval = "allow"
    result = await agent.arun("write file ../../outside.txt with nope")
    [record] = result.tool_calls
    # refused before anyone is asked (issue 25), and the model reads why
    from agent_kernel.engine.tool_calls import tool_message

    # in spec 004's shape, {ok: false, error}, though the tool never ran
    assert not record.success and record.result["ok"] is False
    assert record.result["error"].startswith("path '../../outside.txt' is outside the workspace")
    assert "path '../../outside.txt' is outside the workspace" in str(
        tool_message(record, 10_000)["content"])
    assert result.ok and not (agent.workspace.root.parent.parent / "outside.txt").exists()


# What the person reads for each answer.

def test_summaries_of_the_file_answers() -> None:
    assert summarise("write_file", {"path": "notes.txt"},
                     {"ok": True, "path": "files/notes.txt", "bytes": 27, "mode": "overwrite"},
                     success=True, duration_ms=3) == "saved files/notes.txt · 27 bytes · 3 ms"
    assert summarise("read_file", {"path": "a.txt"}, {"ok": True, "content": "héllo"},
                     success=True, duration_ms=None) == "read a.txt · 6 bytes"
    assert summarise("list_files", {}, {"ok": True, "path": "files", "truncated": True,
                                        "entries": [{"name": "a", "type": "file"}]},
                     success=True, duration_ms=None) == "listed files · 1 entry (cut short)"
    assert summarise("get_workspace_info", {}, {"ok": True, "truncated": False, "info": {
        "fileCount": 2, "directoryCount": 1, "totalSize": 10, "lastModified": None}},
                     success=True, duration_ms=None) == "2 files, 1 folder · 10 bytes"
    denied = {"ok": False, "error": "path '../ledger.jsonl' is denied (deny_paths pattern)"}
    assert summarise("read_file", {"path": "../ledger.jsonl"}, denied, success=True,
                     duration_ms=4) == denied["error"]


# Through a real run: the model reads the envelopes, the ledger keeps every call.

@pytest.mark.timeout(30)
async def test_a_run_reads_the_envelopes(tmp_path: Path) -> None:
    from scripted_server import Call, Message, ScriptedServer

    from agent_kernel import Settings

    with ScriptedServer() as server:
        agent = Agent(model="openai/test-model", workspace=tmp_path / "ws",
                      settings=Settings(api_base=server.base_url, api_key="sk-test-0123456789ab",
                                        headless_approval="allow"))
        (agent.workspace.root / "files").mkdir(parents=True)
        os.mkfifo(agent.workspace.root / "files" / "pipe")
        server.script(
            Message(calls=[Call("write_file", json.dumps({"path": "notes.txt",
                                                          "content": "27 bytes of notes, really"})),
                           Call("write_file", json.dumps({"path": "../triggers/evil.json",
                                                          "content": "{}"}))]),
            Message(calls=[Call("list_files", "{}"), Call("read_file", '{"path": "pipe"}'),
                           Call("get_workspace_info", "")]),
            Message(text="done"))
        result = await agent.arun("take notes")
    assert result.ok and result.reply == "done"
    first, second = (m["content"] for m in server.tool_messages(1))
    assert json.loads(first) == {"ok": True, "path": "files/notes.txt", "bytes": 25,
                                 "mode": "overwrite"}
    # refused before anyone was asked (issue 25): the model reads the error and what to do
    envelope, guidance = second.split("\n\n", 1)  # spec 004's {ok: false, error}, then what to do
    assert json.loads(envelope)["ok"] is False
    assert "belongs to the runtime" in json.loads(envelope)["error"]
    assert "Use a relative path" in guidance
    told = [json.loads(m["content"]) for m in server.tool_messages(2)[-3:]]
    assert {e["name"] for e in told[0]["entries"]} == {"notes.txt", "pipe"}
    assert refused(told[1], "is a FIFO (named pipe)")
    assert told[2]["info"]["fileCount"] == 1 and told[2]["info"]["totalSize"] == 25
    assert not (agent.workspace.root / "triggers" / "evil.json").exists()
    assert [c.tool_name for c in result.tool_calls] == [
        "write_file", "write_file", "list_files", "read_file", "get_workspace_info"]
    recorded = [json.loads(line) for line in
                (agent.workspace.root / "ledger.jsonl").read_text().splitlines()]
    calls = [r for r in recorded if r.get("tool_name") in {
        "write_file", "list_files", "read_file", "get_workspace_info"}
        and r.get("kind") == "tool_call"]
    assert len(calls) == 5
    [evil] = [r for r in calls if r["arguments"].get("path") == "../triggers/evil.json"]
    assert evil["success"] is False and "belongs to the runtime" in evil["error"]
