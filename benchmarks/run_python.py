"""Benchmark: what ``run_python`` costs beyond executing the same code directly.

Side by side in one process, on one ``InteractiveShell``'s namespace:

- **exec**: ``exec`` of the code compiled once more each time (what a bare cell body
  costs: compile and run, nothing else);
- **service**: ``KernelPython.run_now`` (``notebook/python.py``): IPython's input
  transformations, the cached compile, the last expression's value formatted, stdout
  and displays captured, the timer and interrupt handler armed and restored, the names
  diffed before and after, figures looked for;
- **tool**: the ``run_python`` tool on top (bounding the result for the model), without
  the approval (a person's click is not overhead).

Each with a small namespace and with 10,000 names in it (the names diff walks them).
Target: overhead (service - exec) under 5 ms. Run:
``python benchmarks/run_python.py [--runs 200] [--json]``. Nothing is asserted: the
figures go to docs/performance.md ("Python in the kernel").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from IPython.core.interactiveshell import InteractiveShell

from agent_kernel import Agent
from agent_kernel.engine.registry import ToolContext
from agent_kernel.notebook.python import KernelPython
from agent_kernel.tools import python as python_tool

CODES = {
    "statement": "total = sum(range(1000))",
    "print and value": "print('rows', len(data))\nsorted(data)[:5]",
}


def timed(action: Callable[[], object], runs: int) -> list[float]:
    """Milliseconds per call, after three warm-up calls."""
    for _ in range(3):
        action()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return times


def summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {"median_ms": round(statistics.median(ordered), 3),
            "p95_ms": round(ordered[int(len(ordered) * 0.95) - 1], 3)}


def measure(runs: int) -> list[dict[str, object]]:
    shell = InteractiveShell.instance()
    service = KernelPython(shell)
    agent = Agent(workspace=Path(tempfile.mkdtemp()) / "ws")
    agent.services.python = service
    ctx = ToolContext(agent=agent, run_id="bench", agent_id="agent", workspace=agent.workspace)
    loop = asyncio.new_event_loop()
    rows: list[dict[str, object]] = []
    for names in (10, 10_000):
        shell.reset()
        shell.user_ns.update({f"name_{i}": i for i in range(names)})
        shell.user_ns["data"] = list(range(500, 0, -1))
        for label, code in CODES.items():
            def direct(code: str = code, namespace: dict[str, object] = shell.user_ns) -> None:
                exec(compile(code, "<bench>", "exec"), namespace)  # noqa: S102

            def through_service(code: str = code) -> None:
                service.run_now(code, timeout=30, run_id="bench")

            def through_tool(code: str = code) -> None:
                loop.run_until_complete(python_tool.run_python(code, ctx, 30))

            exec_ms = summary(timed(direct, runs))
            service_ms = summary(timed(through_service, runs))
            tool_ms = summary(timed(through_tool, runs))
            rows.append({"names": names, "code": label, "exec": exec_ms,
                         "service": service_ms, "tool": tool_ms,
                         "overhead_median_ms": round(service_ms["median_ms"]
                                                     - exec_ms["median_ms"], 3)})
    loop.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = measure(args.runs)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'names':>6}  {'code':<16} {'exec':>9} {'service':>9} {'tool':>9} "
          f"{'overhead':>9}   (median ms; p95 in brackets)")
    for row in rows:
        cells = [f"{row[k]['median_ms']:.3f}" for k in ("exec", "service", "tool")]  # type: ignore[index]
        print(f"{row['names']:>6}  {row['code']:<16} {cells[0]:>9} {cells[1]:>9} {cells[2]:>9} "
              f"{row['overhead_median_ms']:>9.3f}   "
              f"[{row['service']['p95_ms']:.3f}]")  # type: ignore[index]


if __name__ == "__main__":
    main()
