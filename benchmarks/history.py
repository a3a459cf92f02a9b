"""History benchmark: what a chat-only kernel pays for conversation history.

Run on purpose (never in the test suite)::

    python benchmarks/history.py                 # 300 short runs
    python benchmarks/history.py --runs 1000

A fresh process makes ``Agent(model="demo")`` on a new workspace and runs
``echo hi`` ``--runs`` times, as a notebook's ``%agent`` cells would. It
reports the CPU the process spends on each run after ``arun`` returns (the
history writer's background work, until its queue is drained), the peak
memory, and whether lancedb or onnxruntime were loaded. Then one history read
(which brings the pending history into the LanceDB table, one batch) and the
history table's files and bytes on disk, per run; and last, how long a second
read takes when nothing is pending.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

CHILD = r"""
import asyncio, json, resource, sys, time
from pathlib import Path
from agent_kernel import Agent

runs, root = int(sys.argv[1]), Path(sys.argv[2])
agent = Agent(model="demo", workspace=root)
writer = agent.services.history_writer
store = agent.services.memory

def rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

def tree(path):
    files = [p for p in path.rglob("*") if p.is_file()] if path.exists() else []
    return len(files), sum(p.stat().st_size for p in files)

after, total = [], []
for _ in range(runs):
    start = time.process_time()
    asyncio.run(agent.arun("echo hi"))
    returned = time.process_time()
    writer.flush(60)
    done = time.process_time()
    after.append((done - returned) * 1000)
    total.append((done - start) * 1000)
out = {"runs": runs, "cpu_after_return_ms": after, "cpu_per_run_ms": total,
       "rss_after_runs_mib": rss_mib(),
       "loaded_after_runs": [m for m in ("lancedb", "lance", "onnxruntime", "pyarrow")
                             if m in sys.modules]}
journal = root / "memory" / "history.jsonl"
out["journal_bytes"] = journal.stat().st_size if journal.exists() else 0
wall, cpu = time.perf_counter(), time.process_time()
rows = store.history(agent_id=agent.agent_id, count=2 * runs + 10)
out["first_read_ms"] = (time.perf_counter() - wall) * 1000
out["first_read_cpu_ms"] = (time.process_time() - cpu) * 1000
out["rows"] = len(rows)
store.tables.housekeeping.wait(120)
out["table_files"], out["table_bytes"] = tree(root / "lancedb" / "history.lance")
wall = time.perf_counter()
store.history(agent_id=agent.agent_id, count=10)
out["second_read_ms"] = (time.perf_counter() - wall) * 1000
out["rss_after_read_mib"] = rss_mib()
print(json.dumps(out))
"""


def measure(runs: int) -> dict[str, Any]:
    """One fresh process: ``runs`` demo runs, then one history read."""
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run([sys.executable, "-c", CHILD, str(runs), str(Path(tmp) / "ws")],
                              capture_output=True, text=True, check=True, timeout=3600)
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def report(found: dict[str, Any]) -> None:
    """Print the figures as docs/memory.md quotes them."""
    runs = int(found["runs"])
    after, total = found["cpu_after_return_ms"], found["cpu_per_run_ms"]
    print(f"{runs} runs of `echo hi` on the demo model, one fresh process")
    print(f"  CPU after a run returns: median {statistics.median(after[1:]):.2f} ms, "
          f"mean {statistics.fmean(after[1:]):.2f} ms (first run {after[0]:.1f} ms)")
    print(f"  CPU per run, all of it: median {statistics.median(total[1:]):.2f} ms")
    loaded = found["loaded_after_runs"] or "none of lancedb, lance, onnxruntime, pyarrow"
    print(f"  peak RSS after the runs: {found['rss_after_runs_mib']:.0f} MiB; loaded: {loaded}")
    print(f"  history journal: {found['journal_bytes']:,} bytes "
          f"({found['journal_bytes'] / runs:.0f} per run)")
    print(f"  first history read (ingests everything pending): {found['first_read_ms']:.0f} ms "
          f"wall, {found['first_read_cpu_ms']:.0f} ms CPU, {found['rows']} rows")
    files, size = found["table_files"], found["table_bytes"]
    print(f"  history table: {files} files, {size:,} bytes "
          f"({files / runs:.3f} files and {size / runs:.0f} bytes per run)")
    print(f"  a later read with nothing pending: {found['second_read_ms']:.1f} ms")
    print(f"  peak RSS after the read: {found['rss_after_read_mib']:.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--json", action="store_true", help="print the raw figures too")
    args = parser.parse_args()
    found = measure(args.runs)
    if args.json:
        print(json.dumps(found))
    report(found)


if __name__ == "__main__":
    main()
