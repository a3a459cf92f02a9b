"""Sharing a workspace: processes writing at once lose nothing and see each other's rows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from agent_kernel.memory.service import MemoryStore

WRITER = r"""
import json, sys
from agent_kernel.memory.service import MemoryStore
root, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = MemoryStore(root)
store.count()  # open the table (and load the model) before the start line
print("ready", flush=True)
sys.stdin.readline()  # the start line: every writer is ready, all begin at once
ids = [store.remember(f"{name} wrote note number {i}", agent_id="shared",
                      long_term=(i % 5 == 0))["memory_id"] for i in range(count)]
print(json.dumps(ids))
"""


def test_two_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    observer = MemoryStore(root)
    observer.remember("written before the others start", agent_id="shared")
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(root), name, "25"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for name in ("alpha", "beta")]
    for proc in procs:  # both have the table open and the model loaded
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    outputs = [p.communicate(timeout=240)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    ids = [i for out in outputs for i in json.loads(out.strip().splitlines()[-1])]
    assert len(ids) == 50 == len(set(ids))
    # The handle opened before the writes sees them (strongly consistent reads).
    assert observer.count("shared") == 51
    stored = {m["memory_id"] for m in observer.list(agent_id="shared", limit=100)}
    assert set(ids) <= stored
    hits = observer.search("beta wrote note number 7", agent_id="shared", limit=3)
    assert "beta wrote note number 7" in [h["content"] for h in hits]
    long_term = (root / "memory.md").read_text()
    assert all(f"{n} wrote note number {i}" in long_term for n in ("alpha", "beta")
               for i in range(0, 25, 5))
    short_files = list((root / "memory").glob("*.md"))
    assert len(short_files) == 1 + 40
