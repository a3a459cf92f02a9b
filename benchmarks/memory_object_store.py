"""``remember`` and ``recall`` with the memory on an object store, beside the local folder.

One process, keyword-only memory (no embedding model: its cost is the same in both and
would hide the store's), the two stores taking turns write by write so a slow spell of
the machine falls on both: ``remember`` into ``<workspace>/lancedb/`` (the floor) and into
``s3://`` on moto's S3 in server mode on 127.0.0.1 (``tests/s3_server.py``), then
``recall`` (the keyword search) on each. Also counts the requests one ``remember`` sends.
moto is far slower than a real S3 per request in some ways (each LIST walks the bucket)
and far faster in others (no network), so read the ratio as "what the round trips cost
here", not as a forecast for a cloud bucket.

    python benchmarks/memory_object_store.py --writes 100
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=100)
    args = parser.parse_args()
    from s3_server import S3Server, fake_aws_env

    from agent_kernel.memory.service import MemoryStore

    with fake_aws_env(), tempfile.TemporaryDirectory() as tmp:
        server = S3Server()
        server.bucket("bench")
        counts: collections.Counter[str] = collections.Counter()
        app = server._app

        def counting(environ: dict[str, Any], start: Any) -> Any:
            query = environ.get("QUERY_STRING", "")
            counts["LIST" if "list-type" in query else environ["REQUEST_METHOD"]] += 1
            return app(environ, start)

        server._app = counting
        local = MemoryStore(Path(tmp) / "local", embedding="none", mirror=False)
        remote = MemoryStore(Path(tmp) / "remote", embedding="none", mirror=False,
                             uri="s3://bench/memory", storage_options=server.options)
        stores = {"local folder (floor)": local, "s3 on moto": remote}
        for store in stores.values():
            store.remember("warm-up note", agent_id="bench")
        times: dict[str, dict[str, list[float]]] = {n: {"remember": [], "recall": []}
                                                     for n in stores}
        counts.clear()
        for i in range(args.writes):
            for name, store in stores.items():
                started = time.perf_counter()
                store.remember(f"note {i} about the build server orion-{i}", agent_id="bench")
                times[name]["remember"].append(time.perf_counter() - started)
        per_write = {k: v / args.writes for k, v in counts.items()}
        for i in range(args.writes):
            for name, store in stores.items():
                started = time.perf_counter()
                store.search(f"orion-{i}", agent_id="bench", limit=5)
                times[name]["recall"].append(time.perf_counter() - started)
        for store in stores.values():
            store.tables.housekeeping.wait(60)
        server.stop()
    floor = {op: statistics.median(times["local folder (floor)"][op])
             for op in ("remember", "recall")}
    print(f"{args.writes} writes and searches each, keyword-only memory\n")
    print(f"{'store':24} {'remember median':>16} {'× floor':>8} {'recall median':>14} "
          f"{'× floor':>8}")
    for name, ops in times.items():
        rem, rec = statistics.median(ops["remember"]), statistics.median(ops["recall"])
        print(f"{name:24} {rem * 1000:13.1f} ms {rem / floor['remember']:7.1f}× "
              f"{rec * 1000:11.1f} ms {rec / floor['recall']:7.1f}×")
    print("\nrequests per remember on the store: " + ", ".join(
        f"{k} {v:.1f}" for k, v in sorted(per_write.items())))


if __name__ == "__main__":
    main()
