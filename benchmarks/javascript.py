"""Benchmark: what one ``run_javascript`` call costs beyond the work itself.

The work is timed in-process (a fresh quickjs-ng context in this process, the
same code and input); the call is timed through the tool's runner
(``run_script``: a child process, its limits, the JSON both ways). The difference
is the overhead, measured:

- **warm**: a spare child is waiting (the normal case: one is started after
  every call), with and without bubblewrap;
- **cold**: no spare, so the call starts Python and the engine itself (the
  first call of a session).

The work is timed in the same rounds as the calls, one in-process run before each
call (interleaved), so load on a shared machine lands on both; each row's overhead
is its median minus the median of the work timed beside it.

Target: under 50 ms warm. Run: ``python benchmarks/javascript.py [--runs 30] [--json]``.
Nothing is asserted: the figures go to docs/security.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from agent_kernel import Agent
from agent_kernel.engine.registry import ToolContext
from agent_kernel.guards import sandbox
from agent_kernel.tools import javascript

CODE = "return input.items.filter(x => x.active).map(x => x.name)"
DATA = {"items": [{"name": f"n{i}", "active": i % 2 == 0} for i in range(200)]}
SETTLE = 0.3  # seconds between calls, so the spare started after one is up for the next


def in_process_once() -> float:
    """The work alone: a fresh engine context, the same code and input, no child."""
    import quickjs

    started = time.perf_counter()
    context = quickjs.Context()
    make = context.eval("(function (code, data) { return JSON.stringify("
                        "new Function('input', code)(JSON.parse(data))) })")
    json.loads(make(CODE, json.dumps(DATA)))
    return time.perf_counter() - started


async def through_tool(ctx: ToolContext, runs: int,
                       cold: bool) -> tuple[list[float], list[float]]:
    """Whole tool calls, each after the spare had time to start (or with none, cold),
    each beside one in-process run of the same work (the floor, interleaved)."""
    times, work = [], []
    await javascript.run_script(CODE, ctx, DATA)  # the first spare
    for _ in range(runs):
        await asyncio.sleep(SETTLE)
        if cold:
            javascript.drop_spare()
        work.append(in_process_once())
        started = time.perf_counter()
        result = await javascript.run_script(CODE, ctx, DATA)
        times.append(time.perf_counter() - started)
        assert result["ok"], result
    javascript.drop_spare()
    return times, work


def summary(timed: tuple[list[float], list[float]]) -> dict[str, float]:
    times, work = timed
    ordered = sorted(times)
    median = statistics.median(ordered)
    base = statistics.median(work)
    return {"median_ms": round(median * 1000, 1),
            "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 1),
            "work_ms": round(base * 1000, 1),
            "overhead_ms": round((median - base) * 1000, 1)}


async def measure(runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        agent = Agent(workspace=Path(folder) / "ws")
        ctx = ToolContext(agent=agent, run_id="bench", agent_id="bench",
                          workspace=agent.workspace)
        rows: dict[str, Any] = {}
        boxed = sandbox.find_bubblewrap() is not None
        for sandboxed in ([True, False] if boxed else [False]):
            javascript.LIMITS.sandboxed = sandboxed
            where = "bubblewrap" if sandboxed else "no sandbox"
            rows[f"warm, {where}"] = summary(await through_tool(ctx, runs, cold=False))
            rows[f"cold, {where}"] = summary(await through_tool(ctx, max(runs // 3, 5),
                                                                cold=True))
        javascript.LIMITS.sandboxed = True
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = asyncio.run(measure(args.runs))
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'':24} {'median':>9} {'p95':>9} {'work':>9} {'overhead':>9}"
          f"   (ms, {args.runs} runs; work: the same code in-process, interleaved)")
    for name, row in rows.items():
        print(f"{name:24} {row['median_ms']:9.1f} {row['p95_ms']:9.1f} {row['work_ms']:9.1f}"
              f" {row['overhead_ms']:9.1f}")


if __name__ == "__main__":
    main()
