"""Benchmark: what the supervisor itself costs, and how fast a queue of tasks drains.

Against the scripted OpenAI-compatible server on 127.0.0.1 (litellm's real HTTP
path, no network), two figures:

1. **Cost per delegation hop beyond the model calls.** The same N one-answer
   runs, once as plain sequential ``Agent.arun`` calls (a Worker agent, no
   team) and once as N worker tasks queued by a Planner and run by a team with
   ``max_workers=1``. The server stamps each request's arrival; the gap between
   two consecutive requests is everything between two model calls. The team's
   median gap minus the plain median gap is what the supervisor adds per hop:
   making the task's agent, saving and deleting its file, the ``task_started``
   and ``task_finished`` ledger records, settling, and starting the next one.
   Target: under 10 ms median.
2. **Throughput of 200 queued tasks**: a Planner delegates 200 tasks in one
   response; the time from the first worker request to the end of the team's
   run, with ``max_workers`` 1 and 8.

Run: ``python benchmarks/team.py [--hops 60] [--tasks 200] [--json]``. Nothing is
asserted: the figures go to docs/team.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from scripted_server import Call, Message, ScriptedServer  # noqa: E402

from agent_kernel import Agent, Settings  # noqa: E402
from agent_kernel.team import Team, TeamLimits  # noqa: E402

MODEL = "openai/test-model"


class StampedServer(ScriptedServer):
    """Answers by role; keeps each request's arrival time and role."""

    def __init__(self, jobs: int) -> None:
        super().__init__()
        self.jobs = jobs
        self.arrivals: list[tuple[float, str]] = []
        self._open: dict[int, Message] = {}
        self._count = 0
        self.on_request = self._fill

    def _next(self) -> tuple[int, Message]:
        with self._lock:
            self._count += 1
            self._open[self._count] = Message()
            return self._count, self._open[self._count]

    def _fill(self, number: int, body: dict[str, Any]) -> None:
        now = time.perf_counter()
        first = body["messages"][0]["content"]
        said = body["messages"][-1]
        role = "teller" if "Teller" in first else "planner" if "Planner" in first else "worker"
        self.arrivals.append((now, role))
        if role == "teller":
            made = (Message(calls=[Call("delegate", '{"prompt": "the batch"}')])
                    if said["role"] == "user" and not said["content"].startswith("The work")
                    else Message(text="done"))
        elif role == "planner":
            made = (Message(calls=[Call("delegate", json.dumps({"prompt": f"job {i}"}))
                                   for i in range(self.jobs)])
                    if said["role"] == "user" else Message(text="planned"))
        else:
            made = Message(text="job done")
        self._open.pop(number).__dict__.update(made.__dict__)


def settings(server: ScriptedServer) -> Settings:
    return Settings(api_base=server.base_url, api_key="sk-bench-0123456789abcdef",
                    max_tool_calls=1000)


def gaps(arrivals: list[tuple[float, str]], role: str) -> list[float]:
    times = [t for t, r in arrivals if r == role]
    return [(b - a) * 1000 for a, b in zip(times, times[1:], strict=False)]


async def hop_cost(hops: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp, StampedServer(hops) as server:
        agent = Agent(model=MODEL, workspace=Path(tmp) / "plain", role="worker",
                      settings=settings(server), system_prompt="You are a Worker.")
        for i in range(hops):
            await agent.arun(f"job {i}", isolated=True)
        plain = gaps(server.arrivals, "worker")
        server.arrivals.clear()
        team = Team(model=MODEL, workspace=Path(tmp) / "team", settings=settings(server),
                    limits=TeamLimits(max_workers=1, max_delegations=hops))
        await team.arun("go")
        teamed = gaps(server.arrivals, "worker")
    return {"plain_median_ms": statistics.median(plain),
            "team_median_ms": statistics.median(teamed),
            "hop_median_ms": statistics.median(teamed) - statistics.median(plain),
            "plain_p95_ms": sorted(plain)[int(len(plain) * 0.95)],
            "team_p95_ms": sorted(teamed)[int(len(teamed) * 0.95)]}


async def throughput(tasks: int, workers: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp, StampedServer(tasks) as server:
        team = Team(model=MODEL, workspace=Path(tmp), settings=settings(server),
                    limits=TeamLimits(max_workers=workers, max_delegations=tasks))
        result = await team.arun("go")
        end = time.perf_counter()
        first = next(t for t, r in server.arrivals if r == "worker")
        done = sum(1 for t in result.tasks() if t["role"] == "worker" and t["status"] == "ok")
    seconds = end - first
    return {"workers": workers, "tasks": done, "seconds": seconds, "per_second": done / seconds}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hops", type=int, default=60)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    await hop_cost(5)  # warm litellm up outside the figures
    hop = await hop_cost(args.hops)
    rows = [await throughput(args.tasks, w) for w in (1, 8)]
    if args.json:
        print(json.dumps({"hop": hop, "throughput": rows}, indent=2))
        return
    print(f"between two worker model calls, median: plain {hop['plain_median_ms']:.1f} ms, "
          f"team {hop['team_median_ms']:.1f} ms (p95 {hop['plain_p95_ms']:.1f} / "
          f"{hop['team_p95_ms']:.1f} ms)")
    print(f"supervisor cost per hop (median difference): {hop['hop_median_ms']:.1f} ms "
          "(target < 10 ms)")
    for row in rows:
        print(f"{row['tasks']} queued tasks, max_workers={row['workers']}: "
              f"{row['seconds']:.2f} s, {row['per_second']:.0f} tasks/s")


if __name__ == "__main__":
    asyncio.run(main())
