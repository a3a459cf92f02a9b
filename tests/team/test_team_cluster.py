"""A team's Workers on a Dask cluster (docs/scale.md): one LocalCluster of two worker
processes on 127.0.0.1 for the module, real Dask tasks, the real supervisor and ledger.

The Workers' agent loops and tools run in the worker processes; their model calls,
ledger appends and approvals come back to this process. The tests read what a person
reads (the transcript, the board's words, the ledger) and compare it with the same
team in-process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pickle
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cluster_tools import shout, wait_here
from scripted_server import Call, Message
from test_team import RoleModel, RoleServer, delegate, first_prompt, last, make_team
from test_team_ask import worker_writes

from agent_kernel.core.events import AgentActivity, Event, LedgerRecorded, Notice, Question
from agent_kernel.core.ledger import Ledger
from agent_kernel.team import Team
from agent_kernel.team.roles import PLANNER, TELLER

pytestmark = pytest.mark.cluster
HERE = Path(__file__).resolve().parent
CITIES = "research three cities for a trip and compare them"


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """One LocalCluster of two single-threaded worker processes for the module."""
    from distributed import Client, LocalCluster

    os.environ["PYTHONPATH"] = os.pathsep.join(  # the workers import cluster_tools
        [str(HERE), *filter(None, [os.environ.get("PYTHONPATH")])])
    cluster = LocalCluster(processes=True, n_workers=2, threads_per_worker=1,
                           host="127.0.0.1", dashboard_address=":0")
    made = Client(cluster, set_as_default=False)
    yield made
    made.close()
    cluster.close()


def addresses(client: Any) -> set[str]:
    return set(client.scheduler_info()["workers"])


def worker_runs(events: list[Event]) -> dict[str, list[str]]:
    """Each Worker run's events, by the run's agent, as their kinds in order (text
    streamed in pieces counted once: the pieces depend on the model, not the place)."""
    runs: dict[str, list[str]] = {}
    for event in events:
        if isinstance(event, AgentActivity) and event.role == "worker":
            kinds = runs.setdefault(event.task_id, [])
            kind = type(event.inner).__name__
            if not (kinds and kinds[-1] == kind == "TextDelta"):
                kinds.append(kind)
    return runs


def run_with_relay(team: Team, prompt: str) -> tuple[Any, list[Event]]:
    from agent_kernel.team.relay import TellerRelay

    async def go() -> tuple[Any, list[Event]]:
        relay = TellerRelay(team, "run_shown")
        shown: list[Event] = []
        relay.bus.subscribe(shown.append)
        result = await team.arun(prompt)
        relay.close(result)
        return result, shown

    return asyncio.run(go())


def test_the_demo_teams_workers_run_on_the_cluster_and_read_as_in_process(
        client: Any, tmp_path: Path) -> None:
    from agent_kernel.views.mime import transcript_of

    here = Team(model="demo", workspace=tmp_path / "here", max_workers=2)
    there = Team(model="demo", workspace=tmp_path / "there", max_workers=2, cluster=client)
    (mine, shown_here), (theirs, shown_there) = (run_with_relay(here, CITIES),
                                                 run_with_relay(there, CITIES))
    assert mine.ok and theirs.ok, (mine.error, theirs.error)
    assert [(t["status"], t["error"]) for t in theirs.tasks()] == [("ok", None)] * 4

    def table(reply: str) -> list[str]:
        return [line for line in reply.splitlines() if line.startswith("|")]

    assert table(theirs.reply) == table(mine.reply) and len(table(mine.reply)) > 3

    # the transcript: each Worker's nested run has the same entries, in the same order
    def nested(shown: list[Event]) -> list[list[str]]:
        state = transcript_of(shown).state()

        def walk(entries: list[Any]) -> list[Any]:
            return [x for e in entries for x in [e, *walk(e.get("entries") or [])]]

        return sorted([[e["kind"] for e in agent["entries"]]
                       for agent in walk(state["entries"])
                       if agent["kind"] == "agent" and agent["role"] == "worker"])

    assert nested(shown_there) == nested(shown_here) and len(nested(shown_here)) == 3
    # the events of each Worker's run, in order (the task_started record's event comes when
    # its write ends, before or after the run begins: counted, not placed)
    def steps(shown: list[Event]) -> list[tuple[list[str], int]]:
        return sorted(([k for k in kinds if k != "LedgerRecorded"], kinds.count("LedgerRecorded"))
                      for kinds in worker_runs(shown).values())

    assert steps(shown_there) == steps(shown_here)

    # the ledger: one chain, the same records, the Workers' said where they ran
    def kinds(team: Team) -> list[tuple[str, str | None, str | None]]:
        return sorted((r["kind"], r.get("tool_name"), r.get("role"))
                      for r in team.ledger.records())

    assert kinds(there) == kinds(here)
    assert there.ledger.verify().ok
    records = there.ledger.records()
    workers = {t["id"] for t in theirs.tasks() if t["role"] == "worker"}
    remote = [r for r in records if r.get("ran_on")]
    assert {r["task_id"] for r in remote} == workers
    assert {r["ran_on"] for r in remote} <= addresses(client)
    assert not [r for r in remote if "ran_on_said" in r]  # the scheduler confirmed each
    assert sorted(r["kind"] for r in remote) == ["task_finished"] * 3 + ["tool_call"] * 3
    assert all(r["role"] == "worker" for r in remote)
    assert len({r["record_id"] for r in records}) == len(records)  # nothing twice
    started = [r for r in records if r["kind"] == "task_started" and r["task_id"] in workers]
    assert {r.get("cluster") for r in started} == {client.scheduler.address}


def test_no_key_goes_to_the_cluster_and_the_model_is_called_here(
        client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Over litellm's HTTP path: the Worker's model calls reach the scripted server from
    this process, and what Dask carries to the worker holds no key."""
    from agent_kernel.team import cluster as cluster_module

    specs: list[Any] = []
    made = cluster_module.RemoteRun.spec

    def seen(self: Any) -> Any:
        spec = made(self)
        specs.append(spec)
        return spec

    monkeypatch.setattr(cluster_module.RemoteRun, "spec", seen)
    with RoleServer(worker_writes) as server:
        team = make_team(server, tmp_path, cluster=client)
        result = team.run("notes please")
        workers = server.by_role("worker")
    assert result.ok and result.reply == "The notes are written.", result
    assert (tmp_path / "files" / "notes.md").read_text() == "from the Worker"
    assert len(workers) == 2 and len(specs) == 1
    [spec] = specs
    # the model's address may carry a key too (user:key@host, ?api-key=): the kernel makes
    # every model call, so the worker is given neither
    assert spec["settings"].api_key is None and spec["settings"].api_base is None
    carried = pickle.dumps(spec)  # what Dask carries through the scheduler
    assert b"sk-test" not in carried and server.base_url.encode() not in carried
    [write] = [r for r in team.ledger.records() if r.get("tool_name") == "write_file"
               and r["kind"] == "tool_call"]
    assert write["ran_on"] in addresses(client) and write["success"]
    assert team.ledger.verify().ok


def test_a_remote_workers_approval_is_asked_through_the_tellers_channel(
        client: Any, tmp_path: Path) -> None:
    from agent_kernel.team.relay import TellerRelay
    from agent_kernel.views.mime import transcript_of

    async def go() -> tuple[Any, list[Any]]:
        with RoleModel(worker_writes) as model:
            team = make_team(model, tmp_path, cluster=client)
            team.supervisor.settings.headless_approval = "deny"  # only a person can allow it
            relay = TellerRelay(team, "run_shown")
            shown: list[Any] = []
            relay.bus.subscribe(shown.append)

            def click(event: Any) -> None:
                if isinstance(event, Question) and event.kind == "approval":
                    asyncio.get_running_loop().call_soon(
                        relay.questions.answer, event.question_id, "Approve")

            relay.bus.subscribe(click)
            team.teller.questions.attach_answerer()
            result = await team.arun("notes please")
            relay.close(result)
        return result, shown

    result, shown = asyncio.run(go())
    assert result.ok and result.reply == "The notes are written.", result
    assert (tmp_path / "files" / "notes.md").read_text() == "from the Worker"
    [asked] = [e for e in shown if isinstance(e, Question)]
    worker = next(t for t in result.tasks() if t["role"] == "worker")
    assert asked.details["asked_by"] == worker["agent_id"]
    assert asked.details["task_id"] == worker["id"] and asked.details["tool"] == "write_file"
    records = Ledger(tmp_path / "ledger.jsonl").records()
    [approval] = [r for r in records if r.get("kind") == "approval"]
    assert (approval["source"], approval["agent_id"], approval["task_id"]) == (
        "user", worker["agent_id"], worker["id"])
    [write] = [r for r in records if r.get("tool_name") == "write_file"
               and r["kind"] == "tool_call"]
    assert write["ran_on"] in addresses(client)
    state = transcript_of(shown).state()

    def walk(entries: list[Any]) -> list[Any]:
        return [x for e in entries for x in [e, *walk(e.get("entries") or [])]]

    [card] = [e for e in walk(state["entries"]) if e["kind"] == "tool"
              and e["tool"] == "write_file"]
    assert card["approval"]["answer"] == "Approve"


def waits(seconds: float) -> Any:
    """Teller → Planner → one Worker, whose first step is ``wait_here(seconds)``."""
    import json

    def respond(role: str, body: dict[str, Any]) -> Message:
        said = last(body)
        if role == TELLER:
            if said["role"] == "user" and "has ended" not in said["content"]:
                return Message(calls=[delegate("the long job")])
            return Message(text="The team is done." if "has ended" in said["content"]
                           else "(waiting)")
        if role == PLANNER:
            if said["role"] == "user":
                return Message(calls=[delegate("wait for the long job")])
            return Message(text="planned")
        if said["role"] == "user":
            return Message(calls=[Call("wait_here", json.dumps({"seconds": seconds}))])
        return Message(text=f"waited after {first_prompt(body)}")

    return respond


def remote_run(team: Team) -> Any:
    assert team.cluster is not None
    [run] = team.cluster.runs.values()
    return run


def worker_task(result: Any) -> dict[str, Any]:
    [task] = [t for t in result.tasks() if t["role"] == "worker"]
    return task


def records_of(team: Team, task_id: str) -> list[dict[str, Any]]:
    return [r for r in team.ledger.records() if r.get("task_id") == task_id]


def test_the_board_says_where_a_remote_worker_runs_and_stop_reaches_it(
        client: Any, tmp_path: Path) -> None:
    from agent_kernel.views.board import board_html, board_text, snapshot

    boards: list[dict[str, Any]] = []

    async def go() -> tuple[Team, Any]:
        with RoleModel(waits(60)) as model:
            team = make_team(model, tmp_path, cluster=client, tools=[wait_here])

            def look_and_stop(task_id: str) -> None:
                boards.append(snapshot(team))
                team.stop(task_id)

            def stop_it(event: Event) -> None:
                if approved(event):  # its tool is running on the worker
                    run = remote_run(team)
                    asyncio.get_running_loop().call_later(0.5, look_and_stop, run.task.id)

            team.bus.subscribe(stop_it)
            return team, await team.arun("the long job, please")

    team, result = asyncio.run(go())
    [board] = boards
    [row] = [r for r in board["running"] if r["role"] == "worker"]
    [call] = [r for r in team.ledger.records() if r["kind"] == "tool_call"
              and r["tool_name"] == "wait_here"]
    host = call["ran_on"].removeprefix("tcp://")
    assert row["where"] == f"on the cluster, worker {host}"
    assert board["dashboard"] == client.dashboard_link
    html, text = board_html(board), board_text(board)
    assert f"on the cluster, worker {host}" in html and f"on the cluster, worker {host}" in text
    assert f"href='{client.dashboard_link}'" in html and client.dashboard_link in text
    assert "javascript:" not in board_html({**board, "dashboard": "javascript:alert(1)"})
    import jsonschema

    schema = json.loads((HERE.parents[1] / "labextension" / "schema" / "board.v1.json")
                        .read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(json.loads(json.dumps(
        {"version": 1, "state": board, "controls": "none", "rows": []})))
    assert snapshot(team)["running"] == []  # ended: no row says where any more
    assert result.ok and result.reply == "The team is done.", result
    task = worker_task(result)
    assert task["status"] == "cancelled"
    records = records_of(team, task["id"])
    [call] = [r for r in records if r["kind"] == "tool_call"]
    assert call["tool_name"] == "wait_here" and call["error"] == "cancelled by the user"
    assert call["duration_ms"] < 30_000  # stopped, not waited out
    [stopped] = [r for r in records if r["kind"] == "run_cancelled"]
    assert stopped["ran_on"] == call["ran_on"] and call["ran_on"] in addresses(client)
    [finished] = [r for r in records if r["kind"] == "task_finished"]
    assert finished["status"] == "cancelled" and finished["ran_on"] == call["ran_on"]
    assert team.ledger.verify().ok


def approved(event: Event) -> bool:
    """The approval of ``wait_here`` is on record: the tool starts on the worker now."""
    return isinstance(event, LedgerRecorded) and event.record.get("kind") == "approval" \
        and event.record.get("tool_name") == "wait_here"


def kill_when_waiting(team: Team) -> Any:
    """Kill the worker process of the one remote run while its tool waits."""
    def kill(event: Event) -> None:
        if approved(event):
            pid = remote_run(team).pid
            asyncio.get_running_loop().call_later(0.5, os.kill, pid, signal.SIGKILL)

    return kill


def test_a_worker_killed_after_a_side_effect_ends_its_task_interrupted(
        client: Any, tmp_path: Path) -> None:
    async def go() -> tuple[Team, Any, list[Event]]:
        with RoleModel(waits(60)) as model:
            team = make_team(model, tmp_path, cluster=client, tools=[wait_here])
            seen: list[Event] = []
            team.bus.subscribe(seen.append)
            team.bus.subscribe(kill_when_waiting(team))
            return team, await team.arun("the long job, please"), seen

    team, result, seen = asyncio.run(go())
    assert result.ok and result.reply == "The team is done.", result  # the team went on
    task = worker_task(result)
    assert task["status"] == "interrupted" and "died mid-task" in task["error"]
    records = records_of(team, task["id"])
    assert [r["kind"] for r in records if r["kind"].startswith("task_")] == [
        "task_started", "task_finished"]
    [finished] = [r for r in records if r["kind"] == "task_finished"]
    assert finished["status"] == "interrupted"
    [approval] = [r for r in records if r["kind"] == "approval"]  # the side effect on record
    assert approval["decision"] == "approved"
    assert not [e for e in seen if isinstance(e, Notice) and "runs once more" in e.text]
    assert team.ledger.verify().ok
    wait_for_workers(client, 2)


def wait_for_workers(client: Any, count: int) -> None:
    """The nanny restarts a killed worker: wait for it, so the next test has two."""
    deadline = time.monotonic() + 30
    while len(addresses(client)) < count and time.monotonic() < deadline:
        time.sleep(0.1)


def test_a_worker_killed_before_any_side_effect_runs_its_task_once_more(
        client: Any, tmp_path: Path) -> None:
    asked: list[int] = []
    holder: dict[str, Team] = {}

    def respond(role: str, body: dict[str, Any]) -> Message:
        said = last(body)
        if role == "worker" and said["role"] == "user":
            asked.append(1)
            if len(asked) == 1:  # the Worker waits for this reply: its process dies
                run = remote_run(holder["team"])
                os.kill(run.pid, signal.SIGKILL)
                deadline = time.monotonic() + 20
                while run.interrupted is None and time.monotonic() < deadline:
                    time.sleep(0.05)
                return Message(text="a reply nobody reads")
            return Message(text="done on the second try")
        return waits(1)(role, body)

    async def go() -> tuple[Team, Any, list[Event]]:
        with RoleModel(respond) as model:
            team = holder["team"] = make_team(model, tmp_path, cluster=client)
            seen: list[Event] = []
            team.bus.subscribe(seen.append)

            return team, await team.arun("the long job, please"), seen

    team, result, seen = asyncio.run(go())
    assert result.ok, result
    task = worker_task(result)
    assert task["status"] == "ok" and task["result"] == "done on the second try"
    assert len(asked) == 2
    [again] = [e for e in seen if isinstance(e, Notice) and "runs once more" in e.text]
    assert "died mid-task" in again.text
    records = records_of(team, task["id"])
    assert [r["kind"] for r in records] == ["task_started", "task_finished"]
    assert team.ledger.verify().ok
    wait_for_workers(client, 2)


def test_the_scheduler_going_away_interrupts_and_later_workers_run_here(
        tmp_path: Path) -> None:
    from distributed import Client, LocalCluster

    cluster = LocalCluster(processes=True, n_workers=1, threads_per_worker=1,
                           host="127.0.0.1", dashboard_address=":0")
    made = Client(cluster, set_as_default=False)

    async def go() -> tuple[Team, Any, Any, list[Event]]:
        with RoleModel(waits(60)) as model:
            team = make_team(model, tmp_path, cluster=made, tools=[wait_here])
            seen: list[Event] = []
            team.teller.bus.subscribe(seen.append)

            def close(event: Event) -> None:
                if approved(event):  # the scheduler alone goes; the workers stay
                    threading.Timer(0.5, cluster.sync, [cluster.scheduler.close]).start()

            team.bus.subscribe(close)
            first = await team.arun("the long job, please")
            team.bus.unsubscribe(close)
            model.respond = waits(0.01)
            second = await team.arun("and another")
            return team, first, second, seen

    try:
        team, first, second, seen = asyncio.run(go())
    finally:
        made.close(timeout=5)
        with contextlib.suppress(Exception):  # its workers cannot reach a scheduler now
            cluster.close(timeout=3)
    assert first.ok and second.ok, (first, second)
    task = worker_task(first)
    assert task["status"] == "interrupted" and "went away" in task["error"]
    [said] = [e for e in seen if isinstance(e, Notice) and "went away" in e.text]
    assert "run in this kernel" in said.text and "Traceback" not in said.text
    later = worker_task(second)
    assert later["status"] == "ok"
    assert not [r for r in records_of(team, later["id"]) if r.get("ran_on")]
    assert team.ledger.verify().ok


def test_the_cli_and_the_notebook_point_a_team_at_a_scheduler(
        client: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import subprocess
    import sys

    address = client.scheduler.address
    done = subprocess.run(
        [sys.executable, "-m", "agent_kernel", "run", "--team", "--model", "demo",
         "--workspace", str(tmp_path / "cli"), "--max-workers", "2", "--cluster", address,
         CITIES], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "worker · ok" in done.stdout and "Traceback" not in done.stderr
    records = Ledger(tmp_path / "cli" / "ledger.jsonl").records()
    assert {r["ran_on"] for r in records if r.get("ran_on")} <= addresses(client)
    assert len([r for r in records if r.get("ran_on") and r["kind"] == "tool_call"]) == 3
    refused = subprocess.run([sys.executable, "-m", "agent_kernel", "run", "--cluster", address,
                              "hi"], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1 and "add --team" in refused.stderr

    from IPython.core.interactiveshell import InteractiveShell

    from agent_kernel.notebook.team_magics import session_team

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "agent_kernel")
    magics = shell.magics_manager.registry["AgentMagics"]
    shell.run_line_magic("agent_config", f"--workspace {tmp_path / 'nb'} --model demo "
                                         f"--cluster {address}")
    assert f"cluster: {address}" in capsys.readouterr().out
    session = session_team(magics)  # what the next %agent --team prompt does first
    assert session is not None
    team = session.team
    assert team.cluster is not None and team.cluster.given == address
    made = team.cluster
    assert session_team(magics) is session and team.cluster is made  # the same client
    shell.run_line_magic("agent_config", "--cluster off")
    assert session_team(magics) is session and team.cluster is None and made.lost is not None
    assert "cluster: off (the team works in this kernel)" in capsys.readouterr().out


def test_a_run_that_fails_on_the_worker_ends_in_words(client: Any, tmp_path: Path) -> None:
    """A person's tool the workers cannot import: the Dask task fails before the run
    begins, and the task ends with that error (no run waits for a word that never comes)."""
    from agent_kernel.engine.registry import Tool

    def missing(seconds: float) -> str:
        """Not on the workers."""
        return "never"

    missing.__module__, missing.__qualname__ = "no_such_module_on_the_workers", "missing"
    async def go() -> Any:
        with RoleModel(waits(1)) as model:
            team = make_team(model, tmp_path, cluster=client, tools=[Tool(missing)])
            return await team.arun("the long job, please")

    result = asyncio.run(go())
    assert result.ok, result  # the team went on
    task = worker_task(result)
    assert task["status"] == "error"
    assert "failed on the worker" in task["error"] and "no_such_module_on_the_workers" in task[
        "error"]


@pytest.mark.kernel
@pytest.mark.timeout(240)
def test_a_notebooks_team_runs_its_workers_on_the_cluster(
        client: Any, run_notebook: Any, output_text: Any, tmp_path: Path) -> None:
    """A real kernel: ``%agent_config --cluster``, then ``%agent --team``; the Worker's
    write is approved (the headless policy here: nobody clicks in nbclient) through the
    Teller's channel, and runs on a Dask worker; the ledger is one verified chain."""
    ws, address = tmp_path / "ws", client.scheduler.address
    with RoleServer(worker_writes) as server:
        nb = run_notebook([
            "%load_ext agent_kernel\nimport sys\nprint('dask loaded:', 'distributed' in "
            "sys.modules)",
            f"import agent_kernel.notebook.magics as m\nm.current().api_base = "
            f"{server.base_url!r}\n%config AgentMagics.headless_approval = 'allow'\n"
            f"%agent_config --model openai/test-model --workspace {ws} --cluster {address}",
            "%agent --team --wait notes please",
            "team = m.current()._team.team\nprint('where:', [r.get('ran_on') for r in "
            "team.ledger.records() if r['kind'] == 'tool_call' and r['tool_name'] == "
            "'write_file'])\nprint(team.ledger.verify())",
        ], cwd=tmp_path, timeout=120, env={"OPENAI_API_KEY": "sk-test-0123456789abcdef"})
    cells = nb.cells
    assert "dask loaded: False" in output_text(cells[0])  # %load_ext imports no Dask
    assert f"cluster: {address}" in output_text(cells[1])
    assert "The notes are written." in output_text(cells[2], "text/html")
    said = output_text(cells[3])
    [where] = [line for line in said.splitlines() if line.startswith("where:")]
    assert any(f"'{worker}'" in where for worker in addresses(client)), where
    assert "ledger ok" in said
    assert (ws / "files" / "notes.md").read_text() == "from the Worker"
    records = Ledger(ws / "ledger.jsonl").records()
    [approval] = [r for r in records if r["kind"] == "approval"]
    assert approval["source"] == "policy" and approval["role"] == "worker"


@pytest.mark.kernel
@pytest.mark.timeout(240)
def test_a_remote_workers_approval_is_answered_in_the_notebook(
        client: Any, run_notebook: Any, output_text: Any, tmp_path: Path) -> None:
    """A real kernel, a person there: the remote Worker's approval waits in the Teller's
    channel (the one the run's card answers) and the person's Approve reaches the worker."""
    ws, address = tmp_path / "ws", client.scheduler.address
    with RoleServer(worker_writes) as server:
        nb = run_notebook([
            f"%load_ext agent_kernel\nimport agent_kernel.notebook.magics as m\n"
            f"m.current().api_base = {server.base_url!r}\n"
            f"%config AgentMagics.interactive = True\n"
            f"%agent_config --model openai/test-model --workspace {ws} --cluster {address}",
            "%agent --team notes please",
            "import asyncio\nchannel = m.current()._team.team.teller.questions\n"
            "for _ in range(400):\n    if channel.pending:\n        break\n"
            "    await asyncio.sleep(0.05)\n"
            "[(qid, waiting)] = channel.pending.items()\n"
            "print('asked by', waiting.event.details['asked_by_role'], 'for',"
            " waiting.event.details['tool'])\n"
            "print('answered:', channel.answer(qid, 'Approve'))",
            "%agent_wait\nprint(m.current().last_result.reply)",
        ], cwd=tmp_path, timeout=120, env={"OPENAI_API_KEY": "sk-test-0123456789abcdef"})
    cells = nb.cells
    assert "asked by worker for write_file" in output_text(cells[2])
    assert "answered: True" in output_text(cells[2])
    assert "The notes are written." in output_text(cells[3])
    assert (ws / "files" / "notes.md").read_text() == "from the Worker"
    records = Ledger(ws / "ledger.jsonl").records()
    [approval] = [r for r in records if r["kind"] == "approval"]
    assert (approval["source"], approval["role"], approval["decision"]) == (
        "user", "worker", "approved")
    [write] = [r for r in records if r["kind"] == "tool_call" and r["tool_name"] == "write_file"]
    assert write["ran_on"] in addresses(client)
    assert Ledger(ws / "ledger.jsonl").verify().ok


def test_a_workers_tool_schemas_are_built_once_per_worker_process(tmp_path: Path) -> None:
    """The second Worker rebuilt in a process offers the first one's schemas (the same
    objects, not built again), equal to what a fresh registry builds; another role or
    other settings do not share them."""
    import dataclasses

    from agent_kernel.core.config import Settings
    from agent_kernel.team import remote
    from agent_kernel.team.remote_run import KERNEL_TOOLS

    def spec(run: str, role: str = "worker", settings: Settings | None = None
             ) -> remote.RemoteSpec:
        return remote.RemoteSpec(
            run=run, task_id=run, run_id=f"run_{run}", agent_id="worker-1", role=role,
            prompt="job", system_prompt=None, workspace=str(tmp_path),
            settings=remote.public_settings(settings or Settings()), ledger_fields={},
            model="scripted", window=128_000, accepts_images=False, writes_summaries=False,
            kernel_tools=list(KERNEL_TOOLS), imported_tools=[], left_out=list(remote.LEFT_OUT),
            inbox="inbox", outbox="outbox")

    channel: Any = object()  # nothing is sent: no run is made
    remote.SCHEMAS.clear()
    first_spec = spec("t1#1")
    first = remote.build_agent(first_spec, channel)
    offered = first.registry.offered("worker", "run_t1", [])
    remote.SCHEMAS[remote.schemas_key(first_spec, first)] = dict(first.registry._cache)

    second = remote.build_agent(spec("t2#1"), channel)
    again = second.registry.offered("worker", "run_t2", [])
    assert again == offered and all(a is b for a, b in zip(again, offered, strict=True))
    fresh = [tool.schema() for tool in second.registry._pick("worker", frozenset())]
    assert again == fresh

    other = dataclasses.replace(Settings(), max_tool_calls=3)
    for different in (spec("t3#1", role="planner"), spec("t4#1", settings=other)):
        agent = remote.build_agent(different, channel)
        assert not agent.registry._cache  # built for itself
    remote.SCHEMAS.clear()


def test_a_tree_budget_stops_a_remote_worker_as_in_process(client: Any, tmp_path: Path
                                                             ) -> None:
    """The budget check rides on the remote Worker's model request (the kernel checks it
    right before it calls the model): a spent tree budget still stops the remote run with
    the in-process test's status, words and record (tests/team/test_team_budget.py)."""
    from test_team_budget import budget_records, two_workers

    from agent_kernel.core.events import RunError
    from agent_kernel.team import TeamLimits

    with RoleModel(two_workers) as server:
        team = make_team(server, tmp_path / "ws", max_workers=1, cluster=client,
                         limits=TeamLimits(max_workers=1, max_tree_tokens=250))
        errors: list[RunError] = []
        team.bus.subscribe(lambda e: errors.append(e) if isinstance(e, RunError) else None)
        result = team.run("compare two cities")
        assert not server.hook_errors, server.hook_errors

    message = ("Token budget spent: this task tree used 300 tokens of its 250; the run "
               "stops (TeamLimits.max_tree_tokens)")
    assert (result.status, result.error) == ("limit", message)
    [planner] = result.tree["children"]
    first, second = sorted(planner["children"], key=lambda t: -t["priority"])
    assert first["status"] == "limit" and first["error"] == message
    assert (tmp_path / "ws" / "files" / "rome.md").read_text() == "Rome notes"  # on the worker
    assert second["status"] == "limit" and second["started_at"] is None
    assert [e.message for e in errors if e.kind == "limit"].count(message) == 2  # Worker, Teller
    [record] = budget_records(team)
    assert (record["budget"], record["used"], record["limit"]) == ("max_tree_tokens", 300, 250)
    finished = {r["task_id"]: r for r in team.ledger.records() if r["kind"] == "task_finished"}
    assert finished[first["id"]]["status"] == "limit" and finished[first["id"]]["ran_on"]
    assert team.ledger.verify()


def test_an_ended_runs_queues_are_released_on_the_scheduler(client: Any, tmp_path: Path
                                                            ) -> None:
    """The runs' queues go from the scheduler after the runs end (with the next submission,
    or soon after the last): only the team's inbox stays while the team uses the cluster,
    and nothing of the team's stays once it leaves it."""
    from test_team_budget import two_workers

    def queues(dask_scheduler: Any) -> list[str]:
        return list(dask_scheduler.extensions["queues"].queues)

    with RoleModel(two_workers) as server:
        team = make_team(server, tmp_path / "ws", max_workers=1, cluster=client)
        result = team.run("compare two cities")
    assert result.ok, result
    cluster = team.supervisor.cluster
    assert cluster is not None
    inbox = cluster.inbox
    prefix = inbox.removesuffix("-inbox")
    deadline = time.monotonic() + 10
    while True:
        ours = [q for q in client.run_on_scheduler(queues) if q.startswith(prefix)]
        if ours == [inbox] or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert ours == [inbox]


def test_a_workers_message_over_the_cap_ends_its_task_in_words_and_the_team_goes_on(
        client: Any, tmp_path: Path) -> None:
    """A Worker's tool says 100 KB where the team's cap is 64 KiB: its record and the model
    request after it are never sent; the task ends ``error`` saying so, the kernel and the
    team go on, and the ledger is one verified chain without the record."""
    from agent_kernel.core.events import RunError

    def respond(role: str, body: dict[str, Any]) -> Message:
        said = last(body)
        if role == TELLER:
            if said["role"] == "user" and "has ended" not in said["content"]:
                return Message(calls=[delegate("the loud job")])
            return Message(text="The team is done." if "has ended" in said["content"]
                           else "(waiting)")
        if role == PLANNER:
            if said["role"] == "user":
                return Message(calls=[delegate("shout")])
            return Message(text="planned")
        if said["role"] == "user":
            return Message(calls=[Call("shout", json.dumps({"kb": 100}))])
        return Message(text="shouted")

    with RoleModel(respond) as model:
        team = make_team(model, tmp_path, cluster=client, tools=[shout])
        team.supervisor.settings.cluster_message_cap = 2**16
        assert team.cluster is not None
        team.cluster.message_cap = 2**16
        errors: list[RunError] = []
        team.bus.subscribe(lambda e: errors.append(e) if isinstance(e, RunError) else None)
        result = team.run("the loud job, please")
    assert result.ok and result.reply == "The team is done.", result
    task = worker_task(result)
    assert task["status"] == "error" and "Settings.cluster_message_cap" in task["error"], task
    assert any("over the cap of 65,536 bytes" in e.message for e in errors)
    assert not [r for r in team.ledger.records() if r.get("tool_name") == "shout"]
    assert team.ledger.verify().ok
