"""The file tools with ``files/`` on an object store, beside the bare fsspec call they make.

One process, moto's S3 in server mode on 127.0.0.1 (``tests/s3_server.py``). For each
of ``write_file``, ``read_file`` and ``list_files`` (called as the loop calls a tool:
schema, then the function, in a thread) the median time on the store, the same tool
on the local folder, and the floor: the one bare s3fs request the tool cannot do
without (``pipe_file``, a ranged ``cat_file``, one ``list_objects_v2`` page), taking
turns call by call so a slow spell of the machine falls on all three. The tool's own
cost on the store is its time over the floor: the path checks, the HEAD a read or a
write makes first (a folder is refused, a size is known before the GET), the result.
moto is not S3: read the ratios as "what the round trips cost here".

    python benchmarks/files_object_store.py --calls 100
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100)
    args = parser.parse_args()
    from s3_server import S3Server, fake_aws_env
    from tool_helpers import call_tool

    from agent_kernel import Agent
    from agent_kernel.core.config import Settings
    from agent_kernel.tools import files_store

    with fake_aws_env(), tempfile.TemporaryDirectory() as tmp:
        server = S3Server()
        server.bucket("bench")
        store = Agent(workspace=Path(tmp) / "store", settings=Settings(
            files_uri="s3://bench/files", files_options=server.options))
        local = Agent(workspace=Path(tmp) / "local")
        root = files_store.root_of(store.settings)
        assert root is not None
        fs = files_store._filesystem(root)
        text = "x" * 1000
        for i in range(20):  # folders the listings walk, written once
            for agent in (store, local):
                asyncio.run(call_tool(agent, "write_file", path=f"d/f{i}.txt", content=text))

        def tool(agent: Agent, name: str, **arguments: Any) -> Callable[[], Any]:
            return lambda: asyncio.run(call_tool(agent, name, **arguments))

        cases: dict[str, dict[str, Callable[[], Any]]] = {
            "write_file 1 kB": {
                "bare s3fs (floor)": lambda: fs.pipe_file("bench/files/w.txt", text.encode()),
                "tool on the store": tool(store, "write_file", path="w.txt", content=text),
                "tool on the local folder": tool(local, "write_file", path="w.txt",
                                                 content=text)},
            "read_file 1 kB": {
                "bare s3fs (floor)": lambda: fs.cat_file("bench/files/d/f0.txt", start=0,
                                                         end=1000),
                "tool on the store": tool(store, "read_file", path="d/f0.txt"),
                "tool on the local folder": tool(local, "read_file", path="d/f0.txt")},
            "list_files 20 entries": {
                "bare s3fs (floor)": lambda: fs.call_s3(
                    "list_objects_v2", Bucket="bench", Prefix="files/d/", Delimiter="/",
                    MaxKeys=1001),
                "tool on the store": tool(store, "list_files", path="d"),
                "tool on the local folder": tool(local, "list_files", path="d")},
        }
        times = {case: {name: [] for name in ways} for case, ways in cases.items()}
        for _ in range(args.calls):
            for case, ways in cases.items():
                for name, run in ways.items():
                    started = time.perf_counter()
                    run()
                    times[case][name].append(time.perf_counter() - started)
        server.stop()
    print(f"{args.calls} calls each, medians; the floor is the bare s3fs request\n")
    print(f"{'call':24} {'way':26} {'median':>10} {'× floor':>8}")
    for case, ways in times.items():
        floor = statistics.median(ways["bare s3fs (floor)"])
        for name, taken in ways.items():
            median = statistics.median(taken)
            print(f"{case:24} {name:26} {median * 1000:7.2f} ms {median / floor:7.2f}×")


if __name__ == "__main__":
    main()
