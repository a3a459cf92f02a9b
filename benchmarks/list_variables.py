"""``list_variables`` on a big namespace: time and memory beside a plain ``dir()``-like floor.

Run on purpose (never in the test suite)::

    python benchmarks/list_variables.py
    python benchmarks/list_variables.py --names 10000 --rows 1000000 --rounds 20

In one IPython shell with ``%load_ext agent_kernel`` (so names are stamped after each cell
as in a kernel), three namespaces are measured in turn: ``--names`` plain values (ints,
strings, lists, dicts, functions); the same with a ``--rows``-row pandas DataFrame made in
the newest cell (so it is among the 40 described); and the DataFrame alone. For each: the
floor (every name filtered and its type named, as ``%who`` would, nothing described), the
whole ``list_variables`` call through ``Tool.invoke`` as the loop calls it (median and
p95 of ``--rounds``), the memory it allocates at its peak beyond what was held before
(tracemalloc, in separate rounds so tracing does not slow the timed ones), and the cost
the stamping adds to each cell (the ``post_run_cell`` callback alone). Targets: < 50 ms
and < 5 MB extra. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from IPython.core.interactiveshell import InteractiveShell

from agent_kernel.engine.registry import ToolContext
from agent_kernel.notebook import magics
from agent_kernel.notebook.namespace import KernelNamespace

MAKE_NAMES = """
def _make(count):
    ns = globals()
    for i in range(count):
        kind = i % 5
        ns[f"v{{i}}"] = (i if kind == 0 else f"text {{i}}" if kind == 1 else [i, i + 1]
                       if kind == 2 else dict(i=i) if kind == 3 else (lambda x=i: x))
_make({names})
"""
MAKE_FRAME = """
import numpy as np, pandas as pd
_rng = np.random.default_rng(0)
big = pd.DataFrame({{"day": pd.date_range("2020-01-01", periods={rows}, freq="min"),
                    "region": _rng.choice(["north", "south", "east", "west"], {rows}),
                    "units": _rng.integers(0, 100, {rows}),
                    "total": _rng.random({rows}) * 1000}})
"""


def floor(shell: InteractiveShell) -> int:
    """What any listing must do at least: walk the names, drop the hidden, name the type."""
    hidden = shell.user_ns_hidden
    found = [(name, type(value).__name__) for name, value in list(shell.user_ns.items())
             if not name.startswith("_") and hidden.get(name, floor) is not value]
    return len(found)


def timed(call: Callable[[], object], rounds: int) -> tuple[float, float]:
    took = []
    for _ in range(rounds):
        started = time.perf_counter()
        call()
        took.append((time.perf_counter() - started) * 1000)
    took.sort()
    return statistics.median(took), took[min(len(took) - 1, int(len(took) * 0.95))]


def peak_extra(call: Callable[[], object], rounds: int = 3) -> float:
    """The most memory one call held at once beyond what was allocated before it (MB)."""
    worst = 0
    for _ in range(rounds):
        tracemalloc.start()
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        call()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        worst = max(worst, peak - before)
    return worst / 1e6


def measure(label: str, shell: InteractiveShell, rounds: int) -> str:
    agent = magics.current(shell).agent
    tool = agent.registry.get("list_variables")
    assert tool is not None
    ctx = ToolContext(agent=agent, run_id="bench", agent_id="bench", workspace=agent.workspace)
    arguments = tool.validate({})
    result: dict[str, Any] = {}

    def listing() -> None:
        result.update(asyncio.run(tool.invoke(arguments, ctx)))

    listing()  # warm: imports, first describers
    floor_ms, _ = timed(lambda: floor(shell), rounds)
    median, p95 = timed(listing, rounds)
    extra = peak_extra(listing)
    watched = agent.services.namespace
    assert isinstance(watched, KernelNamespace)
    cell = shell.execution_count
    stamp_ms, _ = timed(lambda: watched.rescan(cell), rounds)
    first = result["variables"][0]
    return (f"| {label} | {result['total']:,} | {floor_ms:.2f} | {median:.2f} | {p95:.2f} | "
            f"{extra:.2f} | {stamp_ms:.2f} | {result['shown']}, newest `{first['name']}` "
            f"({first['size'] or first['type']}) |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", type=int, default=10_000)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "agent_kernel")
    rows = ["| namespace | variables | floor ms | list_variables ms (median) | p95 ms | "
            "peak extra MB | stamping per cell ms | shown |", "|---|---|---|---|---|---|---|---|"]
    shell.run_cell(MAKE_NAMES.format(names=args.names))
    rows.append(measure(f"{args.names:,} plain values", shell, args.rounds))
    shell.run_cell(MAKE_FRAME.format(rows=args.rows))
    rows.append(measure(f"the same + a {args.rows:,}-row DataFrame", shell, args.rounds))
    shell.run_cell("for _n in [n for n in globals() if n.startswith('v') and n[1:].isdigit()]:"
                   "\n    del globals()[_n]")
    rows.append(measure(f"the {args.rows:,}-row DataFrame alone", shell, args.rounds))
    print("\n".join(rows))


if __name__ == "__main__":
    main()
