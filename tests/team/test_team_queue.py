"""The worker queue under load: 100 tasks with mixed priorities through a real team.

The Planner delegates 100 tasks in one response (priorities 0..10 in a
scrambled order); each Worker calls a real tool, ``work``, that counts how
many Workers are inside it at once. With one Worker they run strictly by
priority, first in first out within a priority; with eight, never more than
eight at once; either way every task runs once and none is lost.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from scripted_server import Call, Message
from test_team import RoleModel, delegate, first_prompt, last, make_team

from agent_kernel import Tool
from agent_kernel.team.roles import PLANNER, TELLER

COUNT = 100
PRIORITIES = [(i * 7) % 11 for i in range(COUNT)]


def script(role: str, body: dict[str, Any]) -> Message:
    said = last(body)
    if role == TELLER:
        if said["role"] == "user" and not said["content"].startswith("The work you delegated"):
            return Message(calls=[delegate("run the batch")])
        return Message(text="batch done")
    if role == PLANNER:
        if said["role"] == "user":
            return Message(calls=[delegate(f"job {i}", priority=p)
                                  for i, p in enumerate(PRIORITIES)])
        return Message(text="100 jobs planned")
    job = first_prompt(body)
    if said["role"] == "user":
        return Message(calls=[Call("work", json.dumps({"job": job}))])
    return Message(text=f"{job} done")


class Counter:
    def __init__(self) -> None:
        self.inside = 0
        self.most = 0
        self.done: list[str] = []

    async def work(self, job: str) -> str:
        """Do one job.

        Args:
            job: Which job.
        """
        self.inside += 1
        self.most = max(self.most, self.inside)
        await asyncio.sleep(0.01)
        self.inside -= 1
        self.done.append(job)
        return f"{job} worked"


@pytest.mark.parametrize("workers", [1, 8])
async def test_hundred_tasks_by_priority_within_the_worker_limit(workers, tmp_path) -> None:
    counter = Counter()
    with RoleModel(script) as server:
        team = make_team(server, tmp_path / "ws", max_workers=workers, max_tool_calls=200,
                         tools=[Tool(counter.work, name="work")])
        team.limits.max_delegations = COUNT
        result = await team.arun("run the batch")
        assert not server.hook_errors, server.hook_errors

    assert result.status == "ok", result.error
    [planner] = result.tree["children"]
    jobs = planner["children"]
    assert len(jobs) == COUNT and all(j["status"] == "ok" for j in jobs)
    assert sorted(counter.done) == sorted(f"job {i}" for i in range(COUNT)), "a task was lost"
    assert counter.most <= workers and team.supervisor.peak["worker"] <= workers
    started = [team.supervisor.tasks[t] for t in team.supervisor.started
               if team.supervisor.tasks[t].role == "worker"]
    order = [(t.priority, int(t.prompt.split()[1])) for t in started]
    if workers == 1:
        assert counter.most == 1
        assert counter.done == [f"job {n}" for _, n in order]
        wanted = sorted(((p, i) for i, p in enumerate(PRIORITIES)), key=lambda x: -x[0])
        assert order == wanted, "not highest priority first, first in first out within one"
    else:
        assert counter.most > 1, "eight workers never overlapped"
        assert [p for p, _ in order] == sorted(PRIORITIES, reverse=True)
