"""A team's Workers on a Dask cluster (docs/scale.md): one LocalCluster of two worker
processes on 127.0.0.1 for the module, real Dask tasks, the real supervisor and ledger.

The Workers' agent loops and tools run in the worker processes; their model calls,
ledger appends and approvals come back to this process. The tests read what a person
reads (the transcript, the board's words, the ledger) and compare it with the same
team in-process.
"""

from __future__ import annotations

import asyncio
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_team import RoleModel, RoleServer, make_team
from test_team_ask import worker_writes

from agent_kernel.core.events import AgentActivity, Event, Question
from agent_kernel.core.ledger import Ledger
from agent_kernel.team import Team

pytestmark = pytest.mark.cluster
CITIES = "research three cities for a trip and compare them"


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """One LocalCluster of two single-threaded worker processes for the module."""
    from distributed import Client, LocalCluster

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
    assert all(r["role"] == "worker" and r["kind"] == "tool_call" for r in remote)
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
    assert spec["settings"].api_key is None and spec["settings"].api_base == server.base_url
    assert b"sk-test" not in pickle.dumps(spec)  # what Dask carries through the scheduler
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
