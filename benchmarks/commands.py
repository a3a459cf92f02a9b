"""Benchmark: what starting a sandboxed command costs beyond the work itself.

Three ways to run the same trivial command (``true``), interleaved so drift and
background load land on all of them:

1. **bare**: ``bash -c true`` through ``subprocess`` with pipes, no sandbox: the
   work itself plus the unavoidable process start;
2. **bwrap**: the same inside our bubblewrap sandbox (``Sandbox.argv``, no network,
   the seccomp filter, a sized ``/tmp``), through ``subprocess`` alone;
3. **run_command**: the whole tool as the model calls it after approval
   (``Tool.invoke``): the working folder, the clean environment, the sandbox, the
   command's cgroup (made, joined, read and removed) and rlimits, the output
   readers and the result;
4. **no_cgroup**: the same tool with ``LIMITS.use_cgroup = False``, so the cost of
   the cgroup (the kernel moving the new process into it, one RCU grace period per
   hierarchy) shows as the difference from 3.

The overhead is ``run_command`` minus ``bare`` (median of the paired differences,
and the difference of the medians). Target: under 50 ms. Run:
``python benchmarks/commands.py [--runs 100] [--json]``. Nothing is asserted: the
figures go to docs/security.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"median": round(statistics.median(ordered), 2),
            "p95": round(ordered[max(0, int(len(ordered) * 0.95) - 1)], 2),
            "min": round(ordered[0], 2)}


async def measure(runs: int) -> dict[str, Any]:
    """Time the three paths ``runs`` times each, interleaved."""
    from agent_kernel import Agent
    from agent_kernel.engine.registry import ToolContext
    from agent_kernel.guards import sandbox
    from agent_kernel.tools import commands

    bwrap = sandbox.find_bubblewrap()
    if bwrap is None:
        raise SystemExit(f"no sandbox here: {sandbox.unavailable_reason()}")
    with tempfile.TemporaryDirectory(dir="/var/tmp" if os.path.isdir("/var/tmp") else None) as d:
        agent = Agent(workspace=Path(d) / "ws")
        tool = agent.registry.get("run_command")
        assert tool is not None
        ctx = ToolContext(agent=agent, run_id="bench", agent_id="bench",
                          workspace=agent.workspace)
        root = agent.workspace.ensure()
        for name in ("files", "state"):
            (root / name).mkdir(exist_ok=True)
        env, _ = sandbox.clean_environment()
        box = sandbox.Sandbox(root=root, writable=(root / "files", root / "state"),
                              cwd=root / "files", env=env,
                              hidden=(*sandbox.private_paths(), *sandbox.socket_folders()),
                              tmp_bytes=512 << 20, syscall_filter=True)
        boxed = box.argv(bwrap, ["bash", "-c", "true"])

        def timed_process(argv: list[str]) -> float:
            started = time.perf_counter()
            process = sandbox.start(argv, cwd=root / "files", env=env,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE)
            process.communicate()
            assert process.returncode == 0
            return (time.perf_counter() - started) * 1000

        async def timed_tool(cgroup: bool = True) -> float:
            commands.LIMITS.use_cgroup = cgroup
            started = time.perf_counter()
            result = await tool.invoke(tool.validate({"command": "true"}), ctx)
            elapsed = (time.perf_counter() - started) * 1000
            commands.LIMITS.use_cgroup = True
            assert result["ok"] is True, result
            return elapsed

        await timed_tool()  # the first call probes bubblewrap once per process
        bare: list[float] = []
        wrapped: list[float] = []
        whole: list[float] = []
        ungrouped: list[float] = []
        for _ in range(runs):
            bare.append(timed_process(["bash", "-c", "true"]))
            wrapped.append(timed_process(boxed))
            whole.append(await timed_tool())
            ungrouped.append(await timed_tool(cgroup=False))
        agent.services.history_writer.flush(10)
    paired = [w - b for w, b in zip(whole, bare, strict=True)]
    return {
        "runs": runs,
        "bare_ms": _ms(bare),
        "bwrap_ms": _ms(wrapped),
        "run_command_ms": _ms(whole),
        "no_cgroup_ms": _ms(ungrouped),
        "overhead_ms": {
            "median_of_paired_differences": round(statistics.median(paired), 2),
            "difference_of_medians": round(statistics.median(whole) - statistics.median(bare),
                                           2),
        },
        "target_ms": 50,
    }


def main(argv: list[str] | None = None) -> int:
    """Print the table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    figures = asyncio.run(measure(args.runs))
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"{'path':<14} {'median ms':>10} {'p95 ms':>8} {'min ms':>8}   ({args.runs} runs)")
    for name in ("bare", "bwrap", "run_command", "no_cgroup"):
        row = figures[f"{name}_ms"]
        print(f"{name:<14} {row['median']:>10} {row['p95']:>8} {row['min']:>8}")
    over = figures["overhead_ms"]
    print(f"overhead of a sandboxed run_command beyond the work: "
          f"{over['median_of_paired_differences']} ms (paired median), "
          f"{over['difference_of_medians']} ms (difference of medians); target < 50 ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
