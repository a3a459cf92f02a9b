"""File tools benchmark: what ``list_files`` and ``get_workspace_info`` cost on a big tree.

Run on purpose (never in the test suite)::

    python benchmarks/files.py                  # 100,000 files
    python benchmarks/files.py --files 20000

Builds a workspace whose ``files/`` holds ``--files`` one-byte files, half in one
flat folder and half spread over 100 subfolders, then times each tool (median of
``--rounds`` calls, through ``Tool.invoke`` as the loop calls it) with the default
caps (``list_max_entries`` 1,000, ``info_max_entries`` 20,000) and with the caps
lifted, so the table shows what the caps save. Beside each call, in the same
rounds and interleaved with it, the floor: the same listing done bare with
``os.scandir`` (the flat folder's names and kinds; the whole tree walked, with each
file's size), so the table shows what the tool adds beyond reading the folder.
Nothing is asserted: the point is that a huge workspace answers in well under a
second and says it was cut short.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from agent_kernel import Agent
from agent_kernel.engine.registry import ToolContext
from agent_kernel.tools import files


def build(root: Path, count: int) -> None:
    flat = root / "files" / "flat"
    flat.mkdir(parents=True)
    for i in range(count // 2):
        (flat / f"f{i:06}.txt").write_bytes(b"x")
    for i in range(count - count // 2):
        folder = root / "files" / "tree" / f"d{i % 100:03}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i:06}.txt").write_bytes(b"x")


def scan_flat(folder: Path) -> int:
    """The floor for ``list_files``: one folder's names and kinds, bare."""
    with os.scandir(folder) as entries:
        return len([(e.name, e.is_dir()) for e in entries])


def scan_tree(folder: Path) -> int:
    """The floor for ``get_workspace_info``: every file under the folder, with its size."""
    count, pending = 0, [str(folder)]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                else:
                    entry.stat(follow_symlinks=False)
                    count += 1
    return count


async def timed(agent: Agent, name: str, rounds: int, floor: Any,
                **arguments: Any) -> tuple[float, float, Any]:
    """Median ms of the tool call and of its floor, taken in turn in the same rounds."""
    tool = agent.registry.get(name)
    assert tool is not None, name
    ctx = ToolContext(agent=agent, run_id="bench", agent_id="bench", workspace=agent.workspace)
    took, bare, result = [], [], None
    for _ in range(rounds):
        started = time.perf_counter()
        floor()
        bare.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        result = await tool.invoke(tool.validate(arguments), ctx)
        took.append((time.perf_counter() - started) * 1000)
    return statistics.median(took), statistics.median(bare), result


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        build(Path(tmp) / "ws", args.files)
        print(f"built {args.files} files in {time.perf_counter() - started:.1f} s\n")
        agent = Agent(workspace=str(Path(tmp) / "ws"))
        root = Path(tmp) / "ws" / "files"
        floors = {"list_files": lambda: scan_flat(root / "flat"),
                  "get_workspace_info": lambda: scan_tree(root)}
        print("| call | caps | median ms | os.scandir floor ms | × floor | answer |\n"
              "|---|---|---:|---:|---:|---|")
        for caps in ("default", "lifted"):
            if caps == "lifted":
                files.LIMITS.list_max_entries = files.LIMITS.info_max_entries = 10**9
            for name, arguments in (("list_files", {"path": "flat"}),
                                    ("get_workspace_info", {})):
                ms, floor_ms, result = await timed(agent, name, args.rounds, floors[name],
                                                   **arguments)
                if name == "list_files":
                    said = f"{len(result['entries'])} entries, truncated={result['truncated']}"
                else:
                    said = f"{result['info']['fileCount']} files, truncated={result['truncated']}"
                print(f"| {name} {arguments or ''} | {caps} | {ms:.1f} | {floor_ms:.1f} "
                      f"| {ms / floor_ms:.1f} | {said} |")


if __name__ == "__main__":
    asyncio.run(main())
