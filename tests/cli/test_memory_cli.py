"""``python -m agent_kernel memory``: a terminal on the same tables a kernel uses."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from agent_kernel.memory.service import MemoryStore


def memory_cli(ws: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agent_kernel", "memory", "--workspace",
                           str(ws), *args], capture_output=True, text=True, timeout=180)


def test_cli_and_an_open_store_see_each_others_writes(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    kernel_side = MemoryStore(ws)
    kept = kernel_side.remember("The quarterly numbers go to Priya on Fridays",
                                agent_id="agent", tags=["work"])

    # The CLI finds what the open store wrote, by meaning, not by shared words.
    found = memory_cli(ws, "search", "who", "receives", "the", "financial", "report?")
    assert found.returncode == 0, found.stderr
    assert kept["memory_id"] in found.stdout
    assert "The quarterly numbers go to Priya on Fridays" in found.stdout

    added = memory_cli(ws, "remember", "The", "boiler", "service", "is", "booked", "for",
                       "March", "--tag", "home", "--long-term")
    assert added.returncode == 0, added.stderr
    memory_id = re.search(r"Remembered (mem_\w+)", added.stdout).group(1)
    # The store opened before the CLI wrote sees the new row on its next read.
    assert kernel_side.get(memory_id)["tags"] == ["home"]
    assert kernel_side.count("agent") == 2
    assert "The boiler service is booked for March" in (ws / "memory.md").read_text()

    listing = memory_cli(ws, "list")
    assert listing.returncode == 0
    assert "Newest memories of agent 'agent' (2 in all)" in listing.stdout
    assert listing.stdout.index(memory_id) < listing.stdout.index(kept["memory_id"])

    status = memory_cli(ws, "status")
    assert "embedding: all-MiniLM-L6-v2-int8" in status.stdout
    assert "memories: 2 for 'agent', 2 in all" in status.stdout

    gone = memory_cli(ws, "forget", memory_id)
    assert gone.returncode == 0 and f"Forgot {memory_id}." in gone.stdout
    assert kernel_side.get(memory_id) is None
    assert "boiler" not in (ws / "memory.md").read_text()


def test_cli_refuses_bad_input_with_a_clear_message(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    too_long = memory_cli(ws, "remember", "x" * 2001)
    assert too_long.returncode == 1
    assert "2000 characters" in too_long.stdout and "Traceback" not in too_long.stderr

    missing = memory_cli(ws, "forget", "mem_20260101_000000_deadbeef")
    assert missing.returncode == 1
    assert "No memory 'mem_20260101_000000_deadbeef' for agent 'agent'." in missing.stdout

    hostile = memory_cli(ws, "forget", "x' OR '1'='1")
    assert hostile.returncode == 1 and "error:" in hostile.stdout

    bad_time = memory_cli(ws, "search", "anything", "--after", "next tuesday")
    assert bad_time.returncode == 1 and "error:" in bad_time.stdout
    assert "Traceback" not in bad_time.stderr

    maintain = memory_cli(ws, "maintain")
    assert maintain.returncode == 0 and "optimized: True" in maintain.stdout
