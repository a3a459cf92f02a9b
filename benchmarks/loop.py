"""Loop benchmark: what the agent loop adds per tool round trip beyond the raw litellm calls.

Run on purpose (never in the test suite)::

    python benchmarks/loop.py            # 200 runs of each
    python benchmarks/loop.py --runs 500

A scripted OpenAI-compatible server (``tests/scripted_server.py``) runs on
127.0.0.1. One *round trip* is the script "tool call → final answer": the
model asks for ``echo``, gets the result, answers. It is timed two ways,
interleaved run by run so drift hits both alike:

* ``agent``: ``Agent.arun(prompt, new=True)``: the whole loop (events,
  validation, the tool in a thread, the fsync'd ledger record, the tool result
  message, usage and cost);
* ``raw``: the same two streamed ``litellm.acompletion`` calls with the same
  messages and tool schemas, each stream read to the end, nothing else.

The loop's overhead is the difference of the medians, and the median of the
per-iteration differences (target: under 5 ms).
It also times one ledger append (redaction, lock, chain, write, fsync), which
the loop pays once per tool call, so the overhead can be read with and
without it. ``%load_ext`` time is measured by ``benchmarks/load_ext.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from scripted_server import Call, Message, ScriptedServer  # noqa: E402

from agent_kernel import Agent, Settings  # noqa: E402
from agent_kernel.core.ledger import Ledger  # noqa: E402
from agent_kernel.engine.models import llm  # noqa: E402

PROMPT = "echo benchmark"
CALL = Call("echo", json.dumps({"value": "benchmark"}), id="call_bench")
ANSWER = "The echo tool returned: benchmark"


def percentile(values: list[float], share: float) -> float:
    """The ``share`` quantile (0-1) by nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


async def raw_round_trip(litellm: Any, base_url: str, tools: list[dict[str, Any]],
                         system: dict[str, Any]) -> None:
    """The two provider calls of one round trip, straight through litellm."""
    common = {"model": "openai/test-model", "api_base": base_url, "api_key": "sk-bench",
              "tools": tools, "stream": True, "stream_options": {"include_usage": True},
              "num_retries": 0, "timeout": 30}
    messages: list[dict[str, Any]] = [system, {"role": "user", "content": PROMPT}]
    stream = await litellm.acompletion(messages=messages, **common)
    async for _ in stream:
        pass
    messages += [
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": CALL.id, "type": "function",
                         "function": {"name": CALL.name, "arguments": CALL.arguments}}]},
        {"role": "tool", "tool_call_id": CALL.id, "content": "benchmark"},
    ]
    stream = await litellm.acompletion(messages=messages, **common)
    async for _ in stream:
        pass


class ModelClock:
    """Adds up the time the loop spends inside ``llm.complete`` (the provider's share)."""

    def __init__(self) -> None:
        self.total = 0.0
        self.original = llm.complete

    async def complete(self, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await self.original(*args, **kwargs)
        finally:
            self.total += time.perf_counter() - started


async def measure_loop(runs: int, warmup: int, full: bool) -> dict[str, list[float]]:
    """Time ``runs`` round trips through the Agent and through raw litellm.

    ``full`` gives the agent every built-in tool module (memory, triggers, ...);
    otherwise it has ``echo`` alone, which isolates the loop itself.
    """
    from agent_kernel.tools.core import echo

    litellm = llm.load_litellm()
    clock = ModelClock()
    llm.complete = clock.complete  # type: ignore[assignment]
    times: dict[str, list[float]] = {"agent": [], "raw": [], "outside": []}
    try:
        with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as folder, \
                ScriptedServer() as server:
            agent = Agent(model="openai/test-model", workspace=folder,
                          tools=None if full else [echo], builtin_tools=full,
                          settings=Settings(api_base=server.base_url, api_key="sk-bench"))
            tools = agent.registry.schemas(agent.role)
            system = agent._system_message() or {"role": "system", "content": ""}
            for index in range(warmup + runs):
                server.script(Message(calls=[CALL]), Message(text=ANSWER),
                              Message(calls=[CALL]), Message(text=ANSWER))
                order = ("agent", "raw") if index % 2 == 0 else ("raw", "agent")
                for kind in order:
                    clock.total = 0.0
                    started = time.perf_counter()
                    if kind == "agent":
                        result = await agent.arun(PROMPT, new=True)
                        if result.status != "ok" or result.tool_calls[0].result != "benchmark":
                            raise SystemExit(f"agent run failed: {result}")
                    else:
                        await raw_round_trip(litellm, server.base_url, tools, system)
                    elapsed = time.perf_counter() - started
                    if index >= warmup:
                        times[kind].append(elapsed * 1000)
                        if kind == "agent":
                            times["outside"].append((elapsed - clock.total) * 1000)
    finally:
        llm.complete = clock.original  # type: ignore[assignment]
    return times


async def measure_bare(runs: int, warmup: int) -> list[float]:
    """Round trips on a ``FunctionModel`` of canned turns: the loop with no provider.

    Everything else is real: validation, the tool in a thread, the fsync'd
    ledger record, events and the conversation.
    """
    from agent_kernel.engine.models import FunctionModel, ModelRequest
    from agent_kernel.tools.core import echo

    def canned(request: ModelRequest) -> llm.ModelTurn:
        if request.last["role"] == "user":
            return llm.ModelTurn(tool_calls=[llm.ToolCallRequest(CALL.id or "c", CALL.name,
                                                                 CALL.arguments)])
        return llm.ModelTurn(text=ANSWER)

    out = []
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as folder:
        agent = Agent(model=FunctionModel(canned, name="canned"), workspace=folder,
                      tools=[echo], builtin_tools=False)
        for index in range(warmup + runs):
            started = time.perf_counter()
            result = await agent.arun(PROMPT, new=True)
            if index >= warmup:
                out.append((time.perf_counter() - started) * 1000)
            if result.status != "ok":
                raise SystemExit(f"bare run failed: {result}")
    return out


def measure_ledger(appends: int) -> list[float]:
    """Milliseconds per ledger append of a typical tool-call record."""
    with tempfile.TemporaryDirectory() as folder:
        ledger = Ledger(Path(folder) / "ledger.jsonl")
        out = []
        for i in range(appends):
            started = time.perf_counter()
            ledger.record_tool_call(agent_id="agent", run_id="run_bench", tool_name="echo",
                                    arguments={"value": f"benchmark {i}"}, result="benchmark",
                                    success=True, error=None, duration_ms=0)
            out.append((time.perf_counter() - started) * 1000)
        if not ledger.verify().ok:
            raise SystemExit("ledger does not verify")
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="timed round trips of each kind")
    parser.add_argument("--warmup", type=int, default=10, help="untimed round trips first")
    parser.add_argument("--appends", type=int, default=500, help="timed ledger appends")
    args = parser.parse_args(argv)

    ledger = measure_ledger(args.appends)
    append = statistics.median(ledger)
    print(f"loop benchmark: {args.runs} round trips of each kind, scripted server on "
          f"127.0.0.1, Python {sys.version.split()[0]}, litellm {version('litellm')}")
    print(f"{'':40} {'median ms':>10} {'p95 ms':>10}")
    print(f"{'ledger append (lock, chain, fsync)':40} {append:10.2f} "
          f"{percentile(ledger, 0.95):10.2f}")
    bare = asyncio.run(measure_bare(args.runs * 2, args.warmup))
    print(f"{'loop alone, canned model turns':40} {statistics.median(bare):10.2f} "
          f"{percentile(bare, 0.95):10.2f}")
    for full in (False, True):
        times = asyncio.run(measure_loop(args.runs, args.warmup, full))
        agent, raw, outside = times["agent"], times["raw"], times["outside"]
        label = "all built-in tool modules" if full else "echo only (the loop itself)"
        print(f"-- agent with {label}")
        for name, values in (("Agent.arun, tool call -> answer", agent),
                             ("raw litellm, the same two calls", raw),
                             ("Agent.arun outside llm.complete", outside)):
            print(f"{name:40} {statistics.median(values):10.2f} "
                  f"{percentile(values, 0.95):10.2f}")
        overhead = statistics.median(agent) - statistics.median(raw)
        paired = statistics.median(a - r for a, r in zip(agent, raw, strict=True))
        print(f"{'overhead: median(agent) - median(raw)':40} {overhead:10.2f}   (target < 5 ms)")
        print(f"{'overhead: median of paired differences':40} {paired:10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
