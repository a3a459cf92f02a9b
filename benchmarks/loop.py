"""Loop benchmark: one tool round trip through the agent on both model paths, beside the floor.

Run on purpose (never in the test suite)::

    python benchmarks/loop.py            # 200 round trips of each kind
    python benchmarks/loop.py --runs 500
    python benchmarks/loop.py --profile  # where a model call's time goes (cProfile)

A scripted OpenAI-compatible server (``tests/scripted_server.py``) runs on
127.0.0.1. One *round trip* is the script "tool call → final answer": the
model asks for ``echo``, gets the result, answers. It is timed four ways,
interleaved round by round (the order rotates) so drift hits all alike:

* ``agent, fast path``: ``Agent.arun(prompt, new=True)`` with the openai-SDK fast
  path (the default for an OpenAI-API provider): the whole loop (events,
  validation, the tool in a thread, the fsync'd ledger record, the tool result
  message, usage and cost);
* ``agent, litellm``: the same with ``Settings(openai_fast_path=False)``, every
  turn through ``litellm.acompletion``;
* ``openai SDK`` (the floor): the same two streamed calls with the same messages
  and tool schemas through one ``AsyncOpenAI`` client's ``chat.completions.create``,
  each stream read to the end, nothing else (a hand-written loop);
* ``raw litellm``: the same two calls through ``litellm.acompletion``.

Each is printed with its ratio to the floor. It also times one ledger append
(redaction, lock, chain, write, fsync), which the loop pays once per tool call.
``%load_ext`` time is measured by ``benchmarks/load_ext.py``.
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


def _second_turn(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return messages + [
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": CALL.id, "type": "function",
                         "function": {"name": CALL.name, "arguments": CALL.arguments}}]},
        {"role": "tool", "tool_call_id": CALL.id, "content": "benchmark"},
    ]


async def raw_round_trip(litellm: Any, base_url: str, tools: list[dict[str, Any]],
                         system: dict[str, Any]) -> None:
    """The two provider calls of one round trip, straight through litellm."""
    common = {"model": "openai/test-model", "api_base": base_url, "api_key": "sk-bench",
              "tools": tools, "stream": True, "stream_options": {"include_usage": True},
              "num_retries": 0, "timeout": 30}
    messages: list[dict[str, Any]] = [system, {"role": "user", "content": PROMPT}]
    for turn in (messages, _second_turn(messages)):
        stream = await litellm.acompletion(messages=turn, **common)
        async for _ in stream:
            pass


async def sdk_round_trip(client: Any, tools: list[dict[str, Any]],
                         system: dict[str, Any]) -> None:
    """The floor: the same two calls through the openai SDK, as a hand-written loop does."""
    messages: list[dict[str, Any]] = [system, {"role": "user", "content": PROMPT}]
    for turn in (messages, _second_turn(messages)):
        stream = await client.chat.completions.create(
            model="test-model", messages=turn, tools=tools, stream=True,
            stream_options={"include_usage": True}, timeout=30)
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


KINDS = ("agent, fast path", "agent, litellm", "openai SDK (floor)", "raw litellm")


async def measure_loop(runs: int, warmup: int, full: bool) -> dict[str, list[float]]:
    """Time ``runs`` round trips of each kind (see the module's docstring), interleaved.

    ``full`` gives the agents every built-in tool module (the default tools); otherwise
    they have ``echo`` alone, which isolates the loop itself.
    """
    from openai import AsyncOpenAI

    from agent_kernel.tools.core import echo

    litellm = llm.load_litellm()
    clock = ModelClock()
    llm.complete = clock.complete  # type: ignore[assignment]
    times: dict[str, list[float]] = {kind: [] for kind in KINDS}
    times.update({f"{kind}, outside llm.complete": [] for kind in KINDS[:2]})
    try:
        with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as folder, \
                ScriptedServer() as server:
            # code from before the fast path (run against an older checkout) has litellm only
            paths = (True, False) if "openai_fast_path" in Settings.__dataclass_fields__ \
                else (False,)
            agents = {fast: Agent(model="openai/test-model", workspace=f"{folder}/{fast}",
                                  tools=None if full else [echo], builtin_tools=full,
                                  settings=Settings(api_base=server.base_url, api_key="sk-bench",
                                                    **({"openai_fast_path": fast}
                                                       if len(paths) == 2 else {})))
                      for fast in paths}
            tools = agents[False].registry.schemas(agents[False].role)
            system = agents[False]._system_message() or {"role": "system", "content": ""}
            client = AsyncOpenAI(base_url=server.base_url, api_key="sk-bench", max_retries=0)
            for index in range(warmup + runs):
                order = KINDS[index % 4:] + KINDS[:index % 4]
                for kind in order:
                    if kind == KINDS[0] and True not in agents:
                        continue
                    server.script(Message(calls=[CALL]), Message(text=ANSWER))
                    clock.total = 0.0
                    started = time.perf_counter()
                    if kind.startswith("agent"):
                        result = await agents[kind == KINDS[0]].arun(PROMPT, new=True)
                        if result.status != "ok" or result.tool_calls[0].result != "benchmark":
                            raise SystemExit(f"agent run failed: {result}")
                    elif kind == KINDS[2]:
                        await sdk_round_trip(client, tools, system)
                    else:
                        await raw_round_trip(litellm, server.base_url, tools, system)
                    elapsed = time.perf_counter() - started
                    if index >= warmup:
                        times[kind].append(elapsed * 1000)
                        if kind.startswith("agent"):
                            times[f"{kind}, outside llm.complete"].append(
                                (elapsed - clock.total) * 1000)
            await client.close()
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


PROFILE_GROUPS = (
    ("litellm/litellm_core_utils/streaming", "litellm: its stream wrapper, per chunk"),
    ("litellm/litellm_core_utils/litellm_logging", "litellm: its logging object"),
    ("litellm/cost_calculator", "litellm: cost"),
    ("litellm/utils.py", "litellm: params and model data"),
    ("litellm/main.py", "litellm: request building"),
    ("litellm/", "litellm: the rest"),
    ("openai/_utils/_transform", "openai SDK: body transform"),
    ("openai/", "openai SDK: the rest"),
    ("httpx", "httpx / httpcore"), ("httpcore", "httpx / httpcore"),
    ("pydantic", "pydantic"), ("asyncio", "asyncio (the event loop)"),
    ("agent_kernel/core/redaction", "ours: redaction"),
    ("agent_kernel/core/ledger", "ours: ledger"), ("agent_kernel/core/events", "ours: events"),
    ("agent_kernel/engine/registry", "ours: registry, schemas, tool call"),
    ("agent_kernel/engine/context", "ours: context window check"),
    ("agent_kernel/engine/models", "ours: model seam"),
    ("agent_kernel/", "ours: the rest"),
)
WAITS = ("poll' of 'select", "acquire' of '_thread.lock", "release' of '_thread.lock",
         "'put' of '_queue", "start_new_thread")
"""Where the event loop thread waits or hands work to threads: not CPU spent on a call."""


def profile(runs: int, full: bool, fast: bool) -> None:
    """cProfile ``runs`` agent round trips and print CPU time per round trip by owner."""
    import cProfile
    import pstats

    from agent_kernel.tools.core import echo

    async def go() -> cProfile.Profile:
        llm.load_litellm()
        with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as folder, \
                ScriptedServer() as server:
            agent = Agent(model="openai/test-model", workspace=folder,
                          tools=None if full else [echo], builtin_tools=full,
                          settings=Settings(api_base=server.base_url, api_key="sk-bench",
                                            openai_fast_path=fast))
            profiler = cProfile.Profile()
            for index in range(10 + runs):
                server.script(Message(calls=[CALL]), Message(text=ANSWER))
                if index == 10:
                    profiler.enable()
                await agent.arun(PROMPT, new=True)
            profiler.disable()
            return profiler

    stats = pstats.Stats(asyncio.run(go())).stats  # type: ignore[attr-defined]
    owners: dict[Any, str] = {}

    def owner(function: Any, seen: frozenset[Any] = frozenset()) -> str:
        """The group of a function, or of the caller that spent most in it (a builtin's or
        the standard library's time goes to whoever called it: json.dumps to the SDK)."""
        if function in owners:
            return owners[function]
        label = next((label for key, label in PROFILE_GROUPS if key in function[0]), None)
        if label is None:
            callers = stats[function][4] if function in stats else {}
            ranked = sorted(callers, key=lambda c: -callers[c][3])
            label = next((owner(c, seen | {function}) for c in ranked if c not in seen),
                         "the standard library")
        owners[function] = label
        return label

    spent: dict[str, float] = {}
    for function, (_, _, own, _, _) in stats.items():
        if function[0] == "~" and any(w in function[2] for w in WAITS):
            continue
        group = owner(function)
        spent[group] = spent.get(group, 0.0) + own
    total = sum(spent.values())
    label = f"{'fast path' if fast else 'litellm'}, {'default tools' if full else 'echo only'}"
    print(f"-- {label}: {total / runs * 1000:.1f} ms CPU per round trip under cProfile")
    for owner, seconds in sorted(spent.items(), key=lambda kv: -kv[1])[:14]:
        print(f"   {owner:42} {seconds / runs * 1000:6.2f} ms  {seconds / total:5.1%}")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="timed round trips of each kind")
    parser.add_argument("--warmup", type=int, default=10, help="untimed round trips first")
    parser.add_argument("--appends", type=int, default=500, help="timed ledger appends")
    parser.add_argument("--profile", action="store_true",
                        help="profile the agent's round trips on both paths instead")
    args = parser.parse_args(argv)
    print(f"Python {sys.version.split()[0]}, litellm {version('litellm')}, openai "
          f"{version('openai')}; load average {Path('/proc/loadavg').read_text().split()[:3]}")
    if args.profile:
        for full in (False, True):
            for fast in (False, True):
                profile(min(args.runs, 100), full, fast)
        return 0

    ledger = measure_ledger(args.appends)
    append = statistics.median(ledger)
    print(f"loop benchmark: {args.runs} round trips of each kind, scripted server on 127.0.0.1")
    print(f"{'':44} {'median ms':>10} {'p95 ms':>10} {'x floor':>8}")
    print(f"{'ledger append (lock, chain, fsync)':44} {append:10.2f} "
          f"{percentile(ledger, 0.95):10.2f}")
    bare = asyncio.run(measure_bare(args.runs * 2, args.warmup))
    print(f"{'loop alone, canned model turns':44} {statistics.median(bare):10.2f} "
          f"{percentile(bare, 0.95):10.2f}")
    for full in (False, True):
        times = asyncio.run(measure_loop(args.runs, args.warmup, full))
        floor = statistics.median(times[KINDS[2]])
        label = "the default tools" if full else "echo only (the loop itself)"
        print(f"-- agents with {label}")
        for name, values in times.items():
            if not values:
                continue
            median = statistics.median(values)
            ratio = f"{median / floor:8.2f}" if "outside" not in name else ""
            print(f"{name:44} {median:10.2f} {percentile(values, 0.95):10.2f} {ratio}")
        for kind in KINDS[:2]:
            if not times[kind]:
                continue
            paired = statistics.median(a / f for a, f in zip(times[kind], times[KINDS[2]],
                                                             strict=True))
            print(f"{kind + ': median of paired ratios':44} {'':10} {'':10} {paired:8.2f}")
    print(f"load average after: {Path('/proc/loadavg').read_text().split()[:3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
