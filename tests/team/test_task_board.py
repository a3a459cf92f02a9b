"""The team's task board: one life cycle for every task, whoever started it.

A Planner's or Worker's task (the supervisor's) and a spawned agent's task (the
society's) both live through :class:`~agent_kernel.team.board.TaskLife`: one
``task_started`` and one ``task_finished`` record each, with the task's place in the
tree written by the same code, the board's listeners told when each ends, and each
settled. The team is real and runs in-process on the offline demo model.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from import_graph import graph, imports, on_a_loop

from agent_kernel.engine import tool_calls
from agent_kernel.engine.agent import Agent
from agent_kernel.engine.models.llm import ToolCallRequest
from agent_kernel.team import Team
from agent_kernel.team.board import task_fields
from agent_kernel.team.queue import Task
from agent_kernel.team.roles import PLANNER, TELLER, WORKER

PACKAGE = Path(__file__).resolve().parents[2] / "agent_kernel"
TASK_KEYS = {"agent_id", "role", "task_id", "parent_task_id", "parent_agent_id", "trace_id",
             "priority", "type", "run_id"}
"""What every record about a task says of it (``board.task_record``)."""
_calls = itertools.count()


async def ok(agent: Agent, tool: str, /, **arguments: Any) -> Any:
    request = ToolCallRequest(id=f"call_board_{next(_calls)}", name=tool,
                              arguments=json.dumps(arguments))
    record = await tool_calls.execute(agent, request, "run_board")
    assert record.success, (record.error, record.guidance)
    return record.result


def records(team: Team, kind: str, task: Task) -> list[dict[str, Any]]:
    return [r for r in team.ledger.records() if r["kind"] == kind and r.get("task_id") == task.id]


def assert_one_life(team: Team, task: Task, seen: list[tuple[str, str]]) -> dict[str, Any]:
    """``task`` started and finished once, its records say where it sits, the board's
    listeners saw it end; returns its ``task_finished`` record."""
    [started] = records(team, "task_started", task)
    [finished] = records(team, "task_finished", task)
    for record in (started, finished):
        assert {k: record[k] for k in task_fields(task)} == task_fields(task)
        assert (record["agent_id"], record["run_id"]) == (task.agent_id, task.run_id)
    assert (finished["status"], finished["error"]) == (task.status, task.error)
    assert finished["result"] == task.result[:2000] and task.result
    assert (task.id, task.status) in seen, "the board's listeners never saw it end"
    assert task.id not in team.supervisor.board.running
    assert task.id not in team.supervisor.board.agents
    return finished


async def test_a_delegated_and_a_spawned_task_live_the_same_life(tmp_path: Path) -> None:
    team = Team(model="demo", workspace=tmp_path / "ws")
    board = team.supervisor.board
    seen: list[tuple[str, str]] = []
    board.listeners.append(lambda task: seen.append((task.id, task.status)))

    result = await team.arun("write a haiku about the sea")  # Teller -> Planner -> Worker
    assert result.ok, result.error
    [planner] = result.tree["children"]
    [worker] = planner["children"]
    delegated = board.tasks[worker["id"]]
    assert (delegated.role, delegated.status) == (WORKER, "ok")

    root = board.root("look into it", TELLER)
    plan = board.new_task(root, "teller", PLANNER, "plan it", status="running")
    spawner = team.supervisor.make_agent(PLANNER, "planner-90")
    board.label(spawner, plan)
    plan.agent_id = spawner.agent_id
    role = await ok(spawner, "create_role", name="Analyst",
                    rolePrompt="You are the Analyst. Analyse.", tools=["send_message"])
    made = await ok(spawner, "spawn_agent", roleId=role["id"], taskBrief={
        "objective": "say hello", "constraints": [], "inputs": "none",
        "outputs": "a greeting", "completion_criteria": "said"})
    [spawned] = [t for t in board.tasks.values() if t.agent_id == made["id"]]
    assert (spawned.parent_id, spawned.parent_agent_id) == (plan.id, "planner-90")
    assert await board.settled(spawned) is spawned  # it settles like any task
    assert (spawned.role, spawned.status) == ("Analyst", "ok")

    one = assert_one_life(team, delegated, seen)
    other = assert_one_life(team, spawned, seen)
    said = {"status", "error", "result"}
    assert TASK_KEYS | said <= set(one) and TASK_KEYS | said | {"role_id"} <= set(other)
    assert set(other) - set(one) == {"role_id"} and other["role_id"] == role["id"]
    assert spawned.trace_id == root.trace_id and spawned.root_id == root.id
    assert team.supervisor.society.records[made["id"]].status == "ok"
    assert spawned.id not in board.started, "a spawned task took a queue's room"
    assert team.ledger.verify().ok


def test_the_team_modules_import_one_way_even_for_types() -> None:
    edges = [edge for edge in imports(PACKAGE)
             if edge.module.startswith("agent_kernel.team.")
             and edge.target.startswith("agent_kernel.team.")]
    walk = graph(edges)
    assert "agent_kernel.team.board" in walk["agent_kernel.team.supervisor"]  # the walk sees
    assert "agent_kernel.team.board" in walk["agent_kernel.team.members"]
    assert any(edge.typing_only and edge.module == "agent_kernel.team.budget"  # a type-only
               and edge.target == "agent_kernel.team.board" for edge in edges)  # import counts
    assert on_a_loop(edges) == [], "team modules on an import loop"


async def test_a_planner_settles_only_when_every_childs_task_finished_is_down(
        tmp_path: Path) -> None:
    """A child's task has ended but its ``task_finished`` is still being written: a sibling
    that ends meanwhile must not settle their Planner (and the Teller's run) before it."""
    import asyncio

    team = Team(model="demo", workspace=tmp_path / "ws")
    board = team.supervisor.board
    record = board.record
    held: list[Task] = []
    release = asyncio.Event()

    async def slow_first_worker_end(kind: str, task: Task, **fields: object) -> None:
        if kind == "task_finished" and task.role == WORKER and not held:
            held.append(task)
            await release.wait()  # the first Worker's record is slow to reach the disk
        await record(kind, task, **fields)

    board.record = slow_first_worker_end  # type: ignore[method-assign]
    run = asyncio.ensure_future(team.arun("compare Lisbon, Kyoto and Porto"))
    while not (held and all(not t.open for t in board.tasks.values() if t.role == WORKER)
               and len([t for t in board.tasks.values() if t.role == WORKER]) == 3):
        await asyncio.sleep(0.01)  # every Worker has ended; the first one's record waits
    [planner] = [t for t in board.tasks.values() if t.role == PLANNER]
    await asyncio.sleep(0.2)
    assert not board._settled[planner.id].done(), "settled before a child's record was down"
    assert not run.done()
    release.set()
    result = await asyncio.wait_for(run, 60)
    assert result.ok, result.error
    [finished] = records(team, "task_finished", held[0])
    assert finished["status"] == "ok" and team.ledger.verify().ok
