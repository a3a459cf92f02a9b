"""The team: Teller → Planner → Workers, with scripted model answers per role.

A :class:`RoleModel` answers each model call by who asks (the role the model seam
gives it) and what they last read, so agents running at the same time each get their
own answers, in-process. Everything else is real: the supervisor, the queues, the
tools (``write_file`` writes into the workspace), the ledger. :class:`RoleServer` is
the same over litellm's real HTTP path against a local server (the role read from the
instructions that open the conversation): the tests that need HTTP (another process,
a kernel, litellm itself) use it, and one team test here runs through it end to end.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from scripted_model import body_of, turn_of
from scripted_server import Call, Message, ScriptedServer

from agent_kernel import Settings
from agent_kernel.engine.models import FunctionModel, ModelRequest, ModelTurn
from agent_kernel.team import Team, TeamLimits
from agent_kernel.team.roles import PLANNER, TELLER, WORKER

MODEL = "openai/test-model"
Respond = Callable[[str, dict[str, Any]], Message]


class RoleServer(ScriptedServer):
    """A scripted server whose answer is ``respond(role, body)`` for each request."""

    def __init__(self, respond: Respond) -> None:
        super().__init__()
        self.respond = respond
        self._numbers = itertools.count()
        self._open: dict[int, Message] = {}
        self.on_request = self._fill

    def _next(self) -> tuple[int, Message]:
        with self._lock:
            number = next(self._numbers)
            self._open[number] = Message()
            return number, self._open[number]

    def _fill(self, number: int, body: dict[str, Any]) -> None:
        made = self.respond(role_of(body), body)
        self._open.pop(number).__dict__.update(made.__dict__)

    def by_role(self, role: str) -> list[dict[str, Any]]:
        """The requests an agent of ``role`` sent."""
        return [b for b in self.requests if role_of(b) == role]


class RoleModel(FunctionModel):
    """:class:`RoleServer`'s shape in-process: the answer to each model call is
    ``respond(role, body)``, with the role the model seam gives and ``body`` what litellm
    would send (``messages``, ``tools``); every body is kept in :attr:`requests`.

    ``respond`` runs in a worker thread, as on the server's threads (a script may block
    until the test releases it). Answers become turns as the server renders them (call
    ids ``call_<request>_<i>``, usage 10 + 5 unless the message says); a ``respond``
    that raises is kept in :attr:`hook_errors` and answered with an empty message, as the
    server does.
    """

    def __init__(self, respond: Respond, name: str = MODEL) -> None:
        super().__init__(self._answer, name=name)
        self.respond = respond
        self.requests: list[dict[str, Any]] = []
        self.roles: list[str | None] = []
        self.hook_errors: list[BaseException] = []

    def role(self, request: ModelRequest) -> str | None:
        """Who asks: the role the seam gives (subclasses may name it otherwise)."""
        return request.role

    async def _answer(self, request: ModelRequest) -> ModelTurn:
        number = len(self.requests)
        body = body_of(self.name, request)
        self.requests.append(body)
        role = self.role(request)
        self.roles.append(role)
        try:  # in a thread, as the server answers: a script may wait for the test
            made = await asyncio.to_thread(self.respond, role, body)
        except Exception as exc:  # kept for the test to re-raise (a cancel stops the run)
            self.hook_errors.append(exc)
            made = Message()
        return await turn_of(made, number)

    def by_role(self, role: str) -> list[dict[str, Any]]:
        """The requests an agent of ``role`` sent."""
        return [b for b, r in zip(self.requests, self.roles, strict=True) if r == role]

    def __enter__(self) -> RoleModel:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def role_of(body: dict[str, Any]) -> str:
    first = body["messages"][0]["content"]
    return next(r for r in (TELLER, PLANNER, WORKER) if first.startswith(f"You are the "
                                                                       f"{r.capitalize()}")
                or first.startswith(f"You are a {r.capitalize()}"))


def last(body: dict[str, Any]) -> dict[str, Any]:
    return body["messages"][-1]


def first_prompt(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def delegate(prompt: str, **more: Any) -> Call:
    return Call("delegate", json.dumps({"prompt": prompt, **more}))


def make_team(server: ScriptedServer | RoleModel, workspace: Path, **options: Any) -> Team:
    """A team whose model is ``server`` (a :class:`RoleModel`), or litellm's ``MODEL`` at
    ``server``'s address."""
    settings = Settings(api_base=getattr(server, "base_url", None),
                        api_key="sk-test-0123456789abcdef",
                        retry_base_delay=0.01, headless_approval="allow",
                        max_tool_calls=options.pop("max_tool_calls", 50))
    model = server if isinstance(server, RoleModel) else MODEL
    return Team(model=options.pop("model", model), workspace=workspace, settings=settings,
                **options)


def tool_records(team: Team) -> list[dict[str, Any]]:
    return [r for r in team.ledger.records() if r.get("kind") == "tool_call"]


def three_levels(role: str, body: dict[str, Any]) -> Message:
    """Teller delegates, Planner splits in two, each Worker writes a file, Teller replies."""
    said = last(body)
    if role == TELLER:
        if said["role"] == "user" and said["content"].startswith("The work you delegated"):
            return Message(calls=[Call("reply", json.dumps({"text": "Paris and Rome: compared."}))])
        if said["role"] == "user":  # delegations alone: the Teller's run ends with them
            return Message(text="On it.", calls=[delegate("compare Paris and Rome for a trip")])
        return Message(text="Done.")  # after its reply
    if role == PLANNER:
        if said["role"] == "user":  # delegations alone: the Planner's run ends with them
            return Message(text="Plan: one Worker per city.",
                           calls=[delegate("research Rome", priority=3),
                                  delegate("research Paris", priority=7)])
        return Message(text="a second Planner call, which a delegations-only turn never needs")
    city = first_prompt(body).split()[-1]
    if said["role"] == "user":
        return Message(calls=[Call("write_file", json.dumps(
            {"path": f"{city.lower()}.md", "content": f"{city} notes"}))])
    return Message(text=f"{city}: notes written")


@pytest.fixture(params=["in-process", "http"])
def three_level_server(request):
    """The three levels in-process, and once end to end through litellm's HTTP path."""
    with (RoleModel if request.param == "in-process" else RoleServer)(three_levels) as server:
        yield server
        assert not server.hook_errors, server.hook_errors


async def test_three_levels_each_hop_recorded_by_its_agent_and_role(three_level_server, tmp_path):
    team = make_team(three_level_server, tmp_path / "ws", max_workers=1)
    result = await team.arun("compare two cities for my trip")

    assert result.status == "ok", result.error
    assert result.reply == "Paris and Rome: compared."
    [planner] = result.tree["children"]
    assert (planner["role"], planner["status"], planner["result"]) == (
        PLANNER, "ok", "Plan: one Worker per city.")
    # its one response was all delegations: its run ended there, with that response's text
    assert len(three_level_server.by_role(PLANNER)) == 1
    # so did the Teller's: it was called next with the results, to answer (reply, then its
    # last turn)
    tellers = three_level_server.by_role(TELLER)
    assert len(tellers) == 3
    assert tellers[1]["messages"][-1]["content"].startswith("The work you delegated")
    assert [(run.ended_by, run.reply) for run in result.runs] == [
        ("delegate", "On it."), (None, "Done.")]
    workers = planner["children"]
    assert [(w["prompt"], w["priority"], w["status"], w["result"]) for w in workers] == [
        ("research Rome", 3, "ok", "Rome: notes written"),
        ("research Paris", 7, "ok", "Paris: notes written")]
    files = tmp_path / "ws" / "files"
    assert (files / "paris.md").read_text() == "Paris notes"
    assert (files / "rome.md").read_text() == "Rome notes"
    # held until the Planner's run ended, then the higher priority ran first
    started = [team.supervisor.tasks[t].prompt for t in team.supervisor.started]
    assert started == ["compare Paris and Rome for a trip", "research Paris", "research Rome"]
    # the Teller read both Workers' results before it answered
    teller_reads = three_level_server.by_role(TELLER)[-1]["messages"]
    told = next(m["content"] for m in teller_reads if m["role"] == "user"
                and m["content"].startswith("The work you delegated"))
    assert "Paris: notes written" in told and "Rome: notes written" in told

    records = tool_records(team)
    hops = [(r["tool_name"], r["role"], r["agent_id"].split("-")[0], r["parent_agent_id"]
             and r["parent_agent_id"].split("-")[0]) for r in records]
    assert ("delegate", TELLER, "teller", None) in hops
    assert hops.count(("delegate", PLANNER, "planner", "teller")) == 2
    assert hops.count(("write_file", WORKER, "worker", "planner")) == 2
    assert ("reply", TELLER, "teller", None) in hops
    root_trace = result.tree["trace_id"]
    assert {r["trace_id"] for r in records} == {root_trace}
    by_task = {r["task_id"] for r in records if r["tool_name"] == "write_file"}
    assert by_task == {w["id"] for w in workers}
    assert all(r["parent_task_id"] == planner["id"] for r in records
               if r["tool_name"] == "write_file")
    kinds = [r["kind"] for r in team.ledger.records()]
    assert kinds.count("task_started") == 3 and kinds.count("task_finished") == 3
    assert team.ledger.verify().ok
    assert not list((tmp_path / "ws" / "team" / "tasks").glob("*.json")), "ended tasks stay saved"


async def call(agent: Any, name: str, **arguments: Any) -> Any:
    """Invoke a tool as the loop does, for ``agent``'s current run."""
    from agent_kernel.engine.registry import ToolContext

    tool = agent.registry.get(name)
    ctx = ToolContext(agent=agent, run_id="run_test", agent_id=agent.agent_id,
                      workspace=agent.workspace)
    return await tool.invoke(tool.validate(arguments), ctx)


async def until(check: Callable[[], Any], seconds: float = 20.0) -> Any:
    for _ in range(int(seconds / 0.02)):
        if value := check():
            return value
        await asyncio.sleep(0.02)
    raise AssertionError("timed out waiting")


async def test_cancel_queued_trigger_and_running_tasks(tmp_path):
    import threading

    release = threading.Event()

    def script(role: str, body: dict[str, Any]) -> Message:
        said = last(body)
        if role == TELLER:
            if said["role"] == "user" and not said["content"].startswith("The work"):
                return Message(calls=[delegate("three jobs and a watch")])
            return Message(text="all ended")
        if role == PLANNER:
            if said["role"] == "user":
                return Message(calls=[
                    delegate("job A", priority=9), delegate("job B", priority=5),
                    delegate("job C", priority=1),
                    delegate("when flag.txt appears, report", type="conditional", priority=4,
                             condition={"kind": "file", "path": "flag.txt"})])
            return Message(text="planned")
        if first_prompt(body) == "job A":
            release.wait(20)
        return Message(text=f"{first_prompt(body)} done")

    with RoleModel(script) as server:
        team = make_team(server, tmp_path / "ws", max_workers=1)
        running = asyncio.create_task(team.arun("go"))
        sup = team.supervisor
        job_a = await until(lambda: next((t for t in sup.running.values()
                                          if t.prompt == "job A"), None))
        teller = team.teller
        queued = (await call(teller, "list_tasks", scope="queue", role="worker"))["tasks"]
        assert [(r["prompt"], r["priority"], r["type"], r["status"]) for r in queued] == [
            ("job B", 5, "oneshot", "queued"), ("job C", 1, "oneshot", "queued")]
        assert set(queued[0]) == {"id", "type", "prompt", "priority", "status", "createdAt"}
        # written off the loop, before the next run begins (docs/team.md, "Persistence")
        await sup.board.store.written(queued[1]["id"])
        saved = json.loads((tmp_path / "ws" / "team" / "tasks" / f"{queued[1]['id']}.json")
                           .read_text())
        assert (saved["prompt"], saved["priority"], saved["status"]) == ("job C", 1, "queued")
        [watch] = (await call(teller, "list_tasks", scope="triggers"))["tasks"]
        assert (watch["type"], watch["priority"], watch["status"]) == ("conditional", 4, "trigger")
        [run_row] = (await call(teller, "list_tasks", scope="running", role="worker"))["tasks"]
        assert run_row["id"] == job_a.id and run_row["priority"] == 9
        assert (await call(teller, "list_tasks", scope="running", role="planner"))["tasks"] == []

        assert await call(teller, "cancel_task", taskId=queued[0]["id"]) == {"success": True}
        assert await call(teller, "cancel_task", id=job_a.id) == {"success": False}
        assert await call(teller, "cancel_task", id="task_unknown") == {  # with the reason
            "success": False, "reason": "No queued task, running task or trigger has id "
                                        "'task_unknown'; list_tasks shows the ids"}
        assert await call(teller, "cancel_task", id=watch["id"]) == {"success": True}
        assert team.stop(job_a.id)
        result = await asyncio.wait_for(running, 30)
        release.set()
        await team.triggers.close()

    assert result.status == "ok", result.error
    jobs = {t["prompt"]: t for t in result.tree["children"][0]["children"]}
    assert jobs["job A"]["status"] == "cancelled"
    assert jobs["job B"]["status"] == "cancelled"
    assert (jobs["job C"]["status"], jobs["job C"]["result"]) == ("ok", "job C done")
    assert jobs["when flag.txt appears, report"]["status"] == "cancelled"
    assert not team.triggers.active()
    assert not list((tmp_path / "ws" / "team" / "tasks").glob("*.json"))
    assert team.ledger.verify().ok


async def test_stop_at_the_moment_a_task_starts_is_not_lost(tmp_path):
    """Stop pressed as a task is dispatched, before its coroutine has begun: it still ends
    the task, which then makes no model call."""

    def script(role: str, body: dict[str, Any]) -> Message:
        said = last(body)
        if role == TELLER:
            if said["role"] == "user" and not said["content"].startswith("The work"):
                return Message(calls=[delegate("one job")])
            return Message(text="ended")
        if role == PLANNER:
            return Message(calls=[delegate("job A")] if said["role"] == "user" else [],
                           text="" if said["role"] == "user" else "planned")
        return Message(text="job A done")

    with RoleModel(script) as server:
        team = make_team(server, tmp_path / "ws")
        stopped: list[bool] = []

        def on_change(task: Any) -> None:  # called in the dispatch, before the task's run
            if task.prompt == "job A" and task.status == "running" and not stopped:
                stopped.append(team.stop(task.id))

        team.supervisor.listeners.append(on_change)
        result = await team.arun("go")
        workers = server.by_role(WORKER)

    assert stopped == [True]
    [planner] = result.tree["children"]
    [job] = planner["children"]
    assert job["status"] == "cancelled" and workers == []


async def test_teller_priority_refused_and_a_delegation_loop_stopped(tmp_path):
    def script(role: str, body: dict[str, Any]) -> Message:
        said = last(body)
        if role == TELLER:
            if said["role"] == "user" and not said["content"].startswith("The work"):
                return Message(calls=[delegate("do it", priority=9)])
            if said["role"] == "tool" and said["content"].startswith("Error"):
                return Message(calls=[delegate("do it")])
            return Message(text="answered")
        if role == PLANNER:  # a loop: one more step after every result (a turn that also
            # lists tasks is not delegations alone, so the run goes on)
            steps = sum(1 for m in body["messages"] if m["role"] == "tool") // 2
            return Message(calls=[delegate(f"step {steps}"), Call("list_tasks", "{}")])
        return Message(text="step done")

    with RoleModel(script) as server:
        team = make_team(server, tmp_path / "ws", limits=TeamLimits(max_delegations=5))
        result = await team.arun("go")
        refused = server.by_role(TELLER)[1]["messages"][-1]["content"]

    assert refused.startswith("Error: Tool 'delegate' execution failed: Only the Planner may "
                              "set priority")
    assert "Call delegate again with just the prompt" in refused
    assert result.status == "ok", result.error
    [planner] = result.tree["children"]
    assert planner["status"] == "limit"
    assert "already delegated 5 tasks, the limit per run" in planner["error"]
    assert [c["prompt"] for c in planner["children"]] == [f"step {n}" for n in range(5)]
    assert all(c["status"] == "ok" for c in planner["children"])
    assert team.ledger.verify().ok


async def test_a_conditional_delegation_fires_as_a_worker_task(tmp_path):
    flag = tmp_path / "flag.txt"

    def script(role: str, body: dict[str, Any]) -> Message:
        said = last(body)
        if role == TELLER:
            if said["role"] == "user" and not said["content"].startswith("The work"):
                return Message(calls=[delegate("watch for the flag")])
            return Message(text="watching")
        if role == PLANNER:
            if said["role"] == "user":
                return Message(calls=[delegate(
                    "report the flag", type="conditional", priority=8, traceId="trace-flag",
                    condition={"kind": "file", "path": str(flag)})])
            return Message(text="a watch is set")
        return Message(text="flag reported")

    with RoleModel(script) as server:
        team = make_team(server, tmp_path / "ws")
        result = await team.arun("tell me when the flag appears")
        assert result.status == "ok", result.error
        [watch] = result.tree["children"][0]["children"]
        assert (watch["status"], watch["type"]) == ("trigger", "conditional")
        assert watch["trigger_id"] in {t.id for t in team.triggers.active()}
        team.triggers.namespace = {}
        flag.write_text("up")
        sup = team.supervisor
        fired = await until(lambda: next((t for t in sup.tasks.values() if t.role == WORKER
                                          and t.parent_id == watch["id"]
                                          and t.status == "ok"), None), 15)
        await team.triggers.close()

    assert (fired.result, fired.priority, fired.trace_id) == ("flag reported", 8, "trace-flag")
    approvals = [r for r in team.ledger.records() if r.get("kind") == "approval"]
    assert approvals and approvals[0]["decision"] == "approved"
    assert team.ledger.verify().ok


async def test_a_workers_agent_starts_from_the_schemas_an_earlier_one_built(tmp_path):
    """An agent made per task takes the tool schema lists the team's earlier agent of the same
    tools built (the same objects), and only then: a different tool set builds its own."""
    from agent_kernel.engine.registry import Tool

    server = RoleModel(three_levels)
    team = make_team(server, tmp_path / "ws", max_workers=1)
    sup = team.supervisor
    assert sup.make_agent(WORKER, "worker-90").registry.built_schemas() == {}  # none yet
    result = await team.arun("compare two cities for my trip")
    assert result.status == "ok", result.error

    # each ended task left its schemas: a new Worker and a new Planner start from them
    worker, planner = sup.make_agent(WORKER, "worker-91"), sup.make_agent(PLANNER, "planner-92")
    seeded = worker.registry.built_schemas()
    assert seeded and planner.registry.built_schemas()
    offered = worker.registry.offered(WORKER, "run_x")
    kept = seeded[(WORKER, frozenset())]  # a run's first request: its role's core
    assert all(a is b for a, b in zip(offered, kept, strict=True))
    assert {s["function"]["name"] for s in offered} >= {"write_file"}

    def measure_rain(city: str) -> str:
        """Millimetres of rain in ``city`` this week."""
        return "12"

    sup.tools.append(Tool(measure_rain))  # another tool set: nothing kept is reused
    other = sup.make_agent(WORKER, "worker-93")
    assert other.registry.built_schemas() == {}
    assert "measure_rain" in {s["function"]["name"] for s in other.registry.offered(WORKER, "r")}
    worker.registry.add(Tool(measure_rain))  # a registry changed after it was seeded rebuilds
    assert "measure_rain" in {s["function"]["name"] for s in
                              worker.registry.offered(WORKER, "run_y")}
