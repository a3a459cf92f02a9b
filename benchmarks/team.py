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

3. **Concurrent runs** (``--concurrent N``): N runs at once, each "tool call →
   answer", against a scripted server in a process of its own, in interleaved
   rounds: N separate agents on one workspace (as a team's Workers), N isolated
   runs of one agent, N hand-written openai-SDK loops (the floor) and N raw
   litellm loops; runs per second and the ratio to the floor. And the loop
   alone (a canned ``FunctionModel``, no HTTP): N runs one after another
   against N at once, which shows whether anything per run serialises them.

Run: ``python benchmarks/team.py [--hops 60] [--tasks 200] [--json]``, or
``python benchmarks/team.py --concurrent 20 [--rounds 8]``. Nothing is
asserted: the figures go to docs/team.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
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
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp, \
            StampedServer(hops) as server:
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
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp, \
            StampedServer(tasks) as server:
        team = Team(model=MODEL, workspace=Path(tmp), settings=settings(server),
                    limits=TeamLimits(max_workers=workers, max_delegations=tasks))
        result = await team.arun("go")
        end = time.perf_counter()
        first = next(t for t, r in server.arrivals if r == "worker")
        done = sum(1 for t in result.tasks() if t["role"] == "worker" and t["status"] == "ok")
    seconds = end - first
    return {"workers": workers, "tasks": done, "seconds": seconds, "per_second": done / seconds}


def serve() -> None:
    """``--serve``: the scripted server for ``--concurrent``, in this process until stdin
    closes; a user message gets a call of ``echo``, a tool result the answer."""

    class Echoing(ScriptedServer):
        def __init__(self) -> None:
            super().__init__()
            self._open: dict[int, Message] = {}
            self.on_request = self._fill

        def _next(self) -> tuple[int, Message]:
            made = Message()
            with self._lock:
                self._open[id(made)] = made
                self.requests.clear()  # nothing reads them: keep the memory flat
            return id(made), made

        def _fill(self, key: int, body: dict[str, Any]) -> None:
            said = body["messages"][-1]
            made = (Message(calls=[Call("echo", json.dumps({"value": "bench"}))])
                    if said["role"] == "user" else Message(text="The echo tool returned: bench"))
            self._open.pop(key).__dict__.update(made.__dict__)

    with Echoing() as server:
        print(server.port, flush=True)
        sys.stdin.read()


async def floor_run(client: Any, tools: list[dict[str, Any]]) -> None:
    """One round trip on the openai SDK by hand: stream, gather the call, answer it, stream."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are an agent."},
                                      {"role": "user", "content": "echo bench"}]
    calls: dict[int, dict[str, str]] = {}
    stream = await client.chat.completions.create(
        model="test-model", messages=messages, tools=tools, stream=True,
        stream_options={"include_usage": True})
    async for chunk in stream:
        for part in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            call = calls.setdefault(part.index, {"id": part.id or "", "name": "", "args": ""})
            call["name"] += part.function.name or ""
            call["args"] += part.function.arguments or ""
    call = calls[0]
    messages += [{"role": "assistant", "content": None, "tool_calls": [
        {"id": call["id"], "type": "function",
         "function": {"name": call["name"], "arguments": call["args"]}}]},
        {"role": "tool", "tool_call_id": call["id"],
         "content": json.loads(call["args"])["value"]}]
    stream = await client.chat.completions.create(
        model="test-model", messages=messages, tools=tools, stream=True,
        stream_options={"include_usage": True})
    async for _ in stream:
        pass


async def litellm_run(litellm: Any, base_url: str, tools: list[dict[str, Any]]) -> None:
    """The same two calls straight through ``litellm.acompletion`` (no loop of ours)."""
    common = {"model": MODEL, "api_base": base_url, "api_key": "sk-bench", "tools": tools,
              "stream": True, "stream_options": {"include_usage": True}, "num_retries": 0}
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are an agent."},
                                      {"role": "user", "content": "echo bench"}]
    async for _ in await litellm.acompletion(messages=messages, **common):
        pass
    messages += [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "echo", "arguments": '{"value": "bench"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "bench"}]
    async for _ in await litellm.acompletion(messages=messages, **common):
        pass


async def loop_alone(runs: int, rounds: int) -> dict[str, float]:
    """The loop on canned turns (no HTTP): runs/s one after another, and ``runs`` at once
    (separate agents on one workspace)."""
    from agent_kernel.engine.models import FunctionModel, ModelRequest, ModelTurn
    from agent_kernel.engine.models.base import ToolCallRequest
    from agent_kernel.tools.core import echo

    def canned(request: ModelRequest) -> ModelTurn:
        if request.last["role"] == "user":
            return ModelTurn(tool_calls=[ToolCallRequest("call_1", "echo", '{"value": "b"}')])
        return ModelTurn(text="done")

    out = {"sequential": 0.0, "concurrent": 0.0}
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        agents = [Agent(model=FunctionModel(canned, name="canned"), workspace=tmp,
                        tools=[echo], builtin_tools=False, agent_id=f"agent-{i}")
                  for i in range(runs)]
        await agents[0].arun("warm up", isolated=True)
        for index in range(rounds):
            for kind in ("sequential", "concurrent")[::1 if index % 2 == 0 else -1]:
                started = time.perf_counter()
                if kind == "sequential":
                    for agent in agents:
                        await agent.arun("echo", isolated=True)
                else:
                    await asyncio.gather(*(a.arun("echo", isolated=True) for a in agents))
                out[kind] += runs / (time.perf_counter() - started) / rounds
    return out


async def concurrent(runs: int, rounds: int) -> dict[str, float]:
    """Runs per second (mean over ``rounds`` interleaved rounds) of ``runs`` at once."""
    import subprocess

    import openai

    from agent_kernel.engine.models.llm import load_litellm
    from agent_kernel.tools.core import echo

    server = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        base_url = f"http://127.0.0.1:{int(server.stdout.readline())}/v1"
        chosen = Settings(api_base=base_url, api_key="sk-bench")
        with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
            agents = [Agent(model=MODEL, workspace=tmp, tools=[echo], builtin_tools=False,
                            settings=chosen, agent_id=f"agent-{i}") for i in range(runs)]
            tools = agents[0].registry.schemas(None)
            client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-bench")
            litellm = load_litellm()
            kinds = {
                "floor": lambda: asyncio.gather(*(floor_run(client, tools)
                                                  for _ in range(runs))),
                "litellm": lambda: asyncio.gather(*(litellm_run(litellm, base_url, tools)
                                                    for _ in range(runs))),
                "agents": lambda: asyncio.gather(*(a.arun("echo bench", isolated=True)
                                                   for a in agents)),
                "one_agent": lambda: asyncio.gather(*(agents[0].arun("echo bench",
                                                                     isolated=True)
                                                      for _ in range(runs))),
            }
            for run in kinds.values():  # warm every path up outside the figures
                await run()
            rates: dict[str, list[float]] = {kind: [] for kind in kinds}
            for index in range(rounds):
                order = list(kinds)[index % len(kinds):] + list(kinds)[:index % len(kinds)]
                for kind in order:
                    started = time.perf_counter()
                    results = await kinds[kind]()
                    if kind in ("agents", "one_agent") and not all(r.ok for r in results):
                        raise SystemExit(f"a run failed: {next(r for r in results if not r.ok)}")
                    rates[kind].append(runs / (time.perf_counter() - started))
            if not agents[0].ledger.verify().ok:
                raise SystemExit("the ledger does not verify")
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(10)
    return {kind: statistics.median(values) for kind, values in rates.items()}


def machine() -> str:
    """The date, the cores and the load the figures were measured at."""
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    return (f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
            f"{os.cpu_count()} cores, load {load}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hops", type=int, default=60)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--concurrent", type=int, default=0, metavar="N",
                        help="time N concurrent runs instead (beside the floor)")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.concurrent:
        rates = await concurrent(args.concurrent, args.rounds)
        alone = await loop_alone(args.concurrent, args.rounds)
        if args.json:
            print(json.dumps({"concurrent": rates, "loop_alone": alone}, indent=2))
            return
        print(f"{args.concurrent} concurrent runs (tool call -> answer), median of "
              f"{args.rounds} rounds; {machine()}")
        for kind, label in (("floor", "openai SDK by hand (the floor)"),
                            ("litellm", "raw litellm"),
                            ("agents", f"{args.concurrent} agents, one workspace"),
                            ("one_agent", "one agent, isolated runs")):
            print(f"  {label:34} {rates[kind]:7.1f} runs/s  {rates[kind] / rates['floor']:5.2f}x")
        print(f"loop alone (canned model turns): one after another "
              f"{alone['sequential']:.0f} runs/s, {args.concurrent} at once "
              f"{alone['concurrent']:.0f} runs/s")
        return
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
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        asyncio.run(main())
