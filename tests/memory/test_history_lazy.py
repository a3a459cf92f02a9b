"""Conversation history goes to a journal first; LanceDB only when someone reads it.

A kernel that only chats must not load lancedb or the embedding model (they
took it from 214 to 585 MiB). These tests run real agents on the demo model
in fresh processes, real LanceDB tables and real concurrent processes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from agent_kernel import Agent
from agent_kernel.memory.journal import HistoryJournal
from agent_kernel.memory.service import MemoryStore

CHAT_ONLY = r"""
import asyncio, json, sys
from agent_kernel import Agent
agent = Agent(model="demo", workspace=sys.argv[1])
for word in ("alpha", "bravo", "charlie", "delta"):
    asyncio.run(agent.arun(f"echo {word} tango"))
assert agent.services.history_writer.flush(30)
print(json.dumps(sorted(m for m in ("lancedb", "lance", "onnxruntime", "tokenizers", "pyarrow")
                        if m in sys.modules)))
"""


def _python(code: str, *args: str, timeout: float = 240) -> str:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


def _table_rows(store: MemoryStore) -> list[dict[str, Any]]:
    return store.tables.history().to_arrow().to_pylist()  # type: ignore[no-any-return]


def test_a_chat_only_process_loads_no_vector_store_and_no_model(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    assert json.loads(_python(CHAT_ONLY, str(root))) == []
    assert not (root / "lancedb").exists()
    lines = (root / "memory" / "history.jsonl").read_text().splitlines()
    assert len(lines) == 8
    # Another process reads the history: the pending lines are ingested, all of them.
    store = MemoryStore(root)
    recent = store.history(agent_id="agent", count=8)
    prompts = [m["text"] for m in reversed(recent) if m["role"] == "user"]
    assert prompts == [f"echo {w} tango" for w in ("alpha", "bravo", "charlie", "delta")]
    rows = _table_rows(store)
    assert len(rows) == 8 == len({r["id"] for r in rows})
    assert store.journal.cursor().offset == (root / "memory" / "history.jsonl").stat().st_size
    # Read again: nothing is added twice.
    assert store.ingest_history() == 0 and len(_table_rows(store)) == 8


async def test_a_run_reads_its_own_prompt_through_the_history_tool(tmp_path: Path) -> None:
    agent = Agent(model="demo", workspace=str(tmp_path / "ws"))
    await agent.arun("echo before")
    result = await agent.arun("get_recent_history 3")
    read = result.tool_calls[-1]  # after the find_tools that brought the memory tools in
    assert read.tool_name == "get_recent_history" and read.success, read.error
    texts = [m["text"] for m in read.result["messages"]]
    assert texts[0] == "echo before" and texts[-1] == "get_recent_history 3"


INGEST_AND_APPEND = r"""
import sys, time
from pathlib import Path
from agent_kernel.memory.service import MemoryStore
root, name, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = MemoryStore(root)
store.tables.history()  # import lancedb before the start
go = Path(root) / "go"
while not go.exists():
    time.sleep(0.005)
for i in range(rounds):
    store.add_history([{"role": "user", "text": f"{name} line {i}", "run_id": f"run_{name}_{i}",
                        "conversation_id": "conv", "agent_id": "agent"}])
    store.ingest_history()
print("done")
"""


def test_two_processes_ingesting_at_once_add_every_line_once(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    store = MemoryStore(root)
    store.add_history([{"role": "user", "text": f"before {i}", "agent_id": "agent"}
                       for i in range(40)])
    procs = [subprocess.Popen([sys.executable, "-c", INGEST_AND_APPEND, str(root), name, "30"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name in ("kernel", "cli")]
    time.sleep(0.5)  # let both import lancedb; the go file starts them together
    (root / "go").write_text("")
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
    store.ingest_history()
    rows = _table_rows(store)
    expected = ({f"before {i}" for i in range(40)} | {f"kernel line {i}" for i in range(30)}
                | {f"cli line {i}" for i in range(30)})
    assert sorted(r["text"] for r in rows) == sorted(expected)
    assert len({r["id"] for r in rows}) == len(rows) == 100


CRASH_AFTER_ADD = r"""
import os, sys
from agent_kernel.memory.service import MemoryStore
store = MemoryStore(sys.argv[1])

def add_then_die(rows):
    store.tables.add_history(rows)
    os._exit(3)  # dies between the table write and the cursor's advance

store.journal.ingest(add_then_die, store.tables.history_ids)
"""


def test_a_crash_between_the_add_and_the_cursor_adds_nothing_twice(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    store = MemoryStore(root)
    store.add_history([{"role": "user", "text": f"line {i}", "agent_id": "agent"}
                       for i in range(5)])
    done = subprocess.run([sys.executable, "-c", CRASH_AFTER_ADD, str(root)], timeout=240)
    assert done.returncode == 3
    assert store.journal.cursor().adding is not None  # the crash left its note
    store.add_history([{"role": "assistant", "text": "line 5", "agent_id": "agent"}])
    messages = store.history(agent_id="agent", after="2000-01-01")
    assert [m["text"] for m in messages] == [f"line {i}" for i in range(6)]
    assert len(_table_rows(store)) == 6
    assert store.journal.cursor().adding is None


def test_a_torn_last_line_is_skipped_then_moved_aside_by_the_next_append(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    store = MemoryStore(root)
    store.add_history([{"role": "user", "text": "whole one", "agent_id": "agent"}])
    journal = root / "memory" / "history.jsonl"
    with open(journal, "ab") as handle:  # a writer died in the middle of its line
        handle.write(b'{"role":"user","text":"half a li')
    assert [m["text"] for m in store.history(agent_id="agent", count=5)] == ["whole one"]
    store.add_history([{"role": "assistant", "text": "after the tear", "agent_id": "agent"}])
    assert [m["text"] for m in store.history(agent_id="agent", count=5)] == [
        "after the tear", "whole one"]
    lines = journal.read_bytes().splitlines(keepends=True)
    assert len(lines) == 2 and all(line.endswith(b"\n") and json.loads(line) for line in lines)
    moved = json.loads((root / "memory" / "history.quarantine.jsonl").read_text())
    assert moved["size"] == len(b'{"role":"user","text":"half a li')


def test_a_line_that_is_not_a_record_is_passed_over(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    journal = HistoryJournal(root)
    journal.append([{"role": "user", "text": "first", "agent_id": "agent"}])
    with open(journal.path, "ab") as handle:
        handle.write(b"not json at all\n{\"role\": \"system\", \"text\": \"x\"}\n")
    journal.append([{"role": "user", "text": "second", "agent_id": "agent"}])
    store = MemoryStore(root)
    assert [m["text"] for m in store.history(agent_id="agent", count=5)] == ["second", "first"]
    assert store.journal.cursor().offset == journal.path.stat().st_size


async def test_a_secret_in_a_prompt_never_reaches_the_journal_or_the_table(
        tmp_path: Path) -> None:
    secret = "sk-proj-Zq8wXv2Lr5Tn9Kp3Hs6Jd1Fg4"
    agent = Agent(model="demo", workspace=str(tmp_path / "ws"))
    await agent.arun(f"echo OPENAI_API_KEY={secret} please")
    assert agent.services.history_writer.flush(30)
    text = (tmp_path / "ws" / "memory" / "history.jsonl").read_text()
    assert secret not in text and "OPENAI_API_KEY=[REDACTED]" in text
    store = agent.services.memory
    assert store.history(agent_id=agent.agent_id, count=1)  # ingested
    on_disk = b"".join(p.read_bytes() for p in (tmp_path / "ws").rglob("*") if p.is_file())
    assert secret.encode() not in on_disk and b"OPENAI_API_KEY=[REDACTED]" in on_disk


def test_a_table_made_before_the_journal_keeps_its_rows(tmp_path: Path) -> None:
    import lancedb
    import pyarrow as pa

    root = tmp_path / "ws"
    old = pa.schema([pa.field("role", pa.string(), nullable=False),
                     pa.field("text", pa.string(), nullable=False),
                     pa.field("createdAt", pa.timestamp("us", tz="UTC"), nullable=False),
                     pa.field("run_id", pa.string()), pa.field("conversation_id", pa.string()),
                     pa.field("agent_id", pa.string())])
    db = lancedb.connect(str(root / "lancedb"))
    db.create_table("history", schema=old).add([{
        "role": "user", "text": "from the old days", "createdAt": "2026-01-01T00:00:00Z",
        "run_id": "r", "conversation_id": "c", "agent_id": "agent"}])
    store = MemoryStore(root)
    store.add_history([{"role": "user", "text": "from the journal", "agent_id": "agent"}])
    assert [m["text"] for m in store.history(agent_id="agent", after="2000-01-01")] == [
        "from the old days", "from the journal"]


def test_history_ingested_in_many_small_reads_is_compacted(tmp_path: Path) -> None:
    from agent_kernel.memory.housekeeping import COMPACT_EVERY

    store = MemoryStore(tmp_path / "ws")
    for i in range(COMPACT_EVERY):
        store.add_history([{"role": "user", "text": f"turn {i}", "agent_id": "agent"}])
        assert store.history(agent_id="agent", count=1)[0]["text"] == f"turn {i}"
    store.tables.housekeeping.wait(120)
    table = store.tables.history()
    assert len(table.to_lance().get_fragments()) == 1
    assert table.count_rows() == COMPACT_EVERY
