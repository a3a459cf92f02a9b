"""Group commit: concurrent appends share one write and one fsync, and the chain holds.

Nothing here is timed: the tests hold the first write open on purpose, so the
appends that arrive meanwhile must wait and go together in the next write.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from agent_kernel.core.ledger import LEDGER_FILE, Ledger, LedgerError


def _append(ledger: Ledger, agent: str, value: int) -> dict[str, object]:
    return ledger.record_tool_call(agent_id=agent, run_id="run_" + agent, tool_name="echo",
                                   arguments={"value": value}, result=value, success=True,
                                   error=None, duration_ms=0)


def test_every_ledger_of_one_file_in_a_process_shares_one_lock(tmp_path: Path) -> None:
    """A team makes an agent (and a Ledger) per task: they must not poll each other's flock."""
    one, two = Ledger(tmp_path / LEDGER_FILE), Ledger(tmp_path / LEDGER_FILE)
    assert one._lock is two._lock
    with one._lock:  # held by this thread: another Ledger of the file appends at once
        _append(two, "b", 0)
    assert one.verify().ok and one.verify().count == 1
    assert Ledger(tmp_path / "other" / LEDGER_FILE)._lock is not one._lock


def test_appends_waiting_behind_a_write_go_together_in_one_write(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = Ledger(tmp_path / LEDGER_FILE)
    commit = first._commit
    make_lines = Ledger._lines
    holding = threading.Event()
    release = threading.Event()

    def slow_first(self: Ledger, bodies: list[dict[str, object]], last: str
                   ) -> tuple[list[str], str]:
        if bodies[0].get("agent_id") == "first":
            holding.set()
            assert release.wait(30)
        return make_lines(self, bodies, last)

    monkeypatch.setattr(Ledger, "_lines", slow_first)
    leader = threading.Thread(target=_append, args=(first, "first", 0))
    leader.start()
    assert holding.wait(30)
    writers = [threading.Thread(target=_append, args=(Ledger(first.path), f"w{i}", i))
               for i in range(8)]
    for writer in writers:
        writer.start()
    while True:  # each is queued behind the write in progress (no timing: wait until so)
        with commit.mutex:
            if len(commit.waiting) == len(writers):
                queued = [b.bodies[0]["agent_id"] for b in commit.waiting]
                break
        threading.Event().wait(0.005)
    groups = commit.groups
    release.set()
    for thread in [leader, *writers]:
        thread.join(30)
    assert commit.groups == groups + 2  # the first alone, then the eight in one write
    records = first.records()
    assert [r["agent_id"] for r in records] == ["first", *queued]  # in the order they came
    verdict = first.verify()
    assert verdict.ok and verdict.count == 9
    assert not commit.writing and not commit.waiting


def test_a_failed_group_write_fails_every_caller_in_it_and_removes_every_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger = Ledger(tmp_path / LEDGER_FILE)
    _append(ledger, "kept", 0)
    before = ledger.path.read_bytes()
    import agent_kernel.core.ledger_lines as lines

    real = lines.os.fsync
    calls = {"n": 0}

    def failing_fsync(fd: int) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError(28, "No space left on device")
        real(fd)

    monkeypatch.setattr(lines.os, "fsync", failing_fsync)
    with pytest.raises(LedgerError, match="No space left"):
        ledger.append_many([{"kind": "note", "n": 1}, {"kind": "note", "n": 2}])
    assert ledger.path.read_bytes() == before
    monkeypatch.setattr(lines.os, "fsync", real)
    after = _append(ledger, "after", 1)  # the ledger goes on: not wedged by the failure
    assert ledger.verify().ok and ledger.verify().count == 2
    assert after["prev_hash"] == ledger.records()[0]["hash"]
    assert not ledger._commit.writing


THREADED = textwrap.dedent("""
    import sys, threading
    from agent_kernel.core.ledger import Ledger
    path, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    def work(thread):
        ledger = Ledger(path)  # a Ledger per thread, as a team has one per agent
        for i in range(count):
            ledger.record_event("n", agent_id=name, thread=thread, value=i)
    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
""")


def test_two_processes_of_four_threads_each_leave_one_chain_in_order(tmp_path: Path) -> None:
    path = tmp_path / LEDGER_FILE
    procs = [subprocess.Popen([sys.executable, "-c", THREADED, str(path), name, "150"])
             for name in ("proc-a", "proc-b")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    ledger = Ledger(path)
    verdict = ledger.verify()
    assert verdict.ok, str(verdict)
    assert verdict.count == 2 * 4 * 150
    records = ledger.records()
    for name in ("proc-a", "proc-b"):
        for thread in range(4):
            mine = [r["value"] for r in records
                    if r["agent_id"] == name and r["thread"] == thread]
            assert mine == list(range(150))  # each caller's records in its own order


async def test_appends_from_the_loop_hold_no_thread_while_they_wait(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Twenty runs' records waiting on one write leave the loop's thread pool free (one
    worker here): before, each waited in a pool thread and the pool (6 threads on two
    cores) queued everything else behind them."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    loop = asyncio.get_running_loop()
    pool = ThreadPoolExecutor(max_workers=1)
    loop.set_default_executor(pool)
    ledger = Ledger(tmp_path / LEDGER_FILE)
    make_lines = Ledger._lines
    holding, release = threading.Event(), threading.Event()

    def held(self: Ledger, bodies: list[dict[str, object]], last: str
             ) -> tuple[list[str], str]:
        if bodies[0].get("agent_id") == "first":
            holding.set()
            assert release.wait(30)
        return make_lines(self, bodies, last)

    monkeypatch.setattr(Ledger, "_lines", held)
    first = asyncio.ensure_future(ledger.arecord_event("note", agent_id="first"))
    while not holding.is_set():  # the writer thread is inside the first write
        await asyncio.sleep(0.005)
    waiting = [asyncio.ensure_future(ledger.arecord_tool_call(
        agent_id=f"run-{i}", run_id=f"run_{i}", tool_name="echo", arguments={"value": i},
        result=i, success=True, error=None, duration_ms=0)) for i in range(20)]
    await asyncio.sleep(0)
    # the one pool thread is free (a guard against a hang, not a timing)
    assert await asyncio.wait_for(loop.run_in_executor(None, lambda: "free"), 30) == "free"
    release.set()
    made = await asyncio.gather(first, *waiting)
    assert [r["agent_id"] for r in ledger.records()] == [m["agent_id"] for m in made]
    assert ledger.verify().ok and ledger.verify().count == 21
    pool.shutdown()


async def test_a_queued_record_is_chained_before_everything_appended_after_it(
        tmp_path: Path) -> None:
    """A team's ``task_started`` is queued, not awaited: the run's records still follow it."""
    ledger = Ledger(tmp_path / LEDGER_FILE)
    pending = ledger.queue([{"kind": "task_started", "task_id": "t1"}])
    after = await ledger.arecord_event("tool_call", task_id="t1")
    [started] = await pending.written()
    assert after["prev_hash"] == started["hash"]
    assert [r["kind"] for r in ledger.records()] == ["task_started", "tool_call"]
    assert ledger.verify().ok


def test_which_records_are_redacted_on_the_loop() -> None:
    """Small plain records inline; long text, deep nesting, cycles and objects in a thread."""
    from agent_kernel.core.ledger import INLINE_TEXT, _text_size

    small = [{"kind": "tool_call", "result": "ok", "n": 3}]
    assert _text_size(small, INLINE_TEXT) == 22  # keys count too
    assert _text_size([{"result": "x" * 5000}], INLINE_TEXT) >= INLINE_TEXT
    looped: dict[str, object] = {}
    looped["self"] = looped
    assert _text_size([looped], INLINE_TEXT) >= INLINE_TEXT
    assert _text_size([{"value": object()}], INLINE_TEXT) >= INLINE_TEXT
    assert _text_size([{"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": "x"}}}}}}}}],
                      INLINE_TEXT) >= INLINE_TEXT


async def test_a_queued_record_waits_for_the_next_write_and_shares_its_fsync(
        tmp_path: Path) -> None:
    """``task_started`` starts no write of its own: the run's first record takes it along."""
    ledger = Ledger(tmp_path / LEDGER_FILE)
    ledger.append({"kind": "before"})
    groups = ledger._commit.groups
    pending = ledger.queue([{"kind": "task_started", "task_id": "t1"}])
    assert [r["kind"] for r in ledger.records()] == ["before"]  # no writer was started
    await ledger.arecord_event("tool_call", task_id="t1")
    await pending.written()
    assert ledger._commit.groups == groups + 1
    assert [r["kind"] for r in ledger.records()] == ["before", "task_started", "tool_call"]


async def test_a_queued_record_alone_is_written_a_moment_later(tmp_path: Path) -> None:
    from agent_kernel.core.ledger import QUEUED_WAIT

    ledger = Ledger(tmp_path / LEDGER_FILE)
    pending = ledger.queue([{"kind": "task_started", "task_id": "t1"}])
    assert ledger.records() == []
    [started] = await asyncio.wait_for(pending.written(), 30 + QUEUED_WAIT)
    assert [r["hash"] for r in ledger.records()] == [started["hash"]]
    # a synchronous append meanwhile writes it first, in its own thread
    pending = ledger.queue([{"kind": "task_started", "task_id": "t2"}])
    ledger.append({"kind": "plain"})
    assert [r["kind"] for r in ledger.records()] == ["task_started", "task_started", "plain"]
    await pending.written()


def _open_here(root: Path) -> list[str]:
    """The names under ``root`` this process has open (its descriptors, as Linux lists them)."""
    found = []
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = Path(os.readlink(fd))
        except OSError:
            continue
        if target.is_relative_to(root):
            found.append(str(target.relative_to(root)))
    return sorted(found)


def test_the_ledger_and_its_lock_stay_open_and_a_name_changed_meanwhile_is_opened_anew(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_kernel.core import safe_open

    opened: list[str] = []
    real = safe_open.open_fd

    def counted(root: Path, path: str, *args: Any, **kwargs: Any) -> int:
        opened.append(str(path))
        return real(root, path, *args, **kwargs)

    monkeypatch.setattr(safe_open, "open_fd", counted)
    ledger = Ledger(tmp_path / "ws" / LEDGER_FILE)
    for value in range(3):
        _append(ledger, "a", value)
    assert opened == [LEDGER_FILE + ".lock", LEDGER_FILE]  # once each, for three writes
    assert _open_here(tmp_path) == ["ws/" + LEDGER_FILE, "ws/" + LEDGER_FILE + ".lock"]

    # moved aside: the next record goes to a new file at the name, the old one is untouched
    (tmp_path / "ws" / LEDGER_FILE).rename(tmp_path / "ws" / "old.jsonl")
    (tmp_path / "ws" / (LEDGER_FILE + ".lock")).unlink()
    _append(ledger, "a", 3)
    assert opened[2:] == [LEDGER_FILE + ".lock", LEDGER_FILE]
    assert Ledger(tmp_path / "ws" / "old.jsonl").verify().count == 3
    assert [r["arguments"] for r in ledger.records()] == [{"value": 3}]
    assert (tmp_path / "ws" / (LEDGER_FILE + ".lock")).is_file()

    # a link planted at the name is refused, never written through
    outside = tmp_path / "outside.txt"
    outside.write_text("keep\n")
    (tmp_path / "ws" / LEDGER_FILE).unlink()
    (tmp_path / "ws" / LEDGER_FILE).symlink_to(outside)
    with pytest.raises(LedgerError, match="symbolic link"):
        _append(ledger, "a", 4)
    assert outside.read_text() == "keep\n"


def test_a_process_keeps_few_ledgers_open(tmp_path: Path) -> None:
    from agent_kernel.core.ledger import KEPT_OPEN

    ledgers = [Ledger(tmp_path / f"ws{n}" / LEDGER_FILE) for n in range(KEPT_OPEN + 3)]
    for ledger in ledgers:
        _append(ledger, "a", 0)
    still = _open_here(tmp_path)
    assert len(still) == 2 * KEPT_OPEN, still
    assert f"ws{KEPT_OPEN + 2}/{LEDGER_FILE}" in still  # the last written are kept
    assert not any(name.startswith("ws0/") for name in still)
    for ledger in ledgers:  # a closed one opens again when it writes
        _append(ledger, "a", 1)
        assert ledger.verify().count == 2
    for n in range(KEPT_OPEN + 3):  # ledgers only read (verify holds the lock too)
        (tmp_path / f"read{n}").mkdir()
        (tmp_path / f"read{n}" / LEDGER_FILE).write_bytes(ledgers[0].path.read_bytes())
        assert Ledger(tmp_path / f"read{n}" / LEDGER_FILE).verify().count == 2
    assert len(_open_here(tmp_path)) <= 2 * KEPT_OPEN, _open_here(tmp_path)


def test_a_record_queued_as_a_loop_ends_is_written_when_the_process_exits(
        tmp_path: Path) -> None:
    """The timer that starts its write needs the loop; a script whose loop ended first
    still leaves it on disk."""
    script = textwrap.dedent("""
        import asyncio, sys
        from agent_kernel.core.ledger import Ledger
        async def main():
            Ledger(sys.argv[1]).queue([{"kind": "task_started", "task_id": "t1"}])
        asyncio.run(main())
    """)
    subprocess.run([sys.executable, "-c", script, str(tmp_path / LEDGER_FILE)], check=True,
                   timeout=60)
    ledger = Ledger(tmp_path / LEDGER_FILE)
    assert [r["kind"] for r in ledger.records()] == ["task_started"]
    assert ledger.verify().ok


def test_a_forked_child_never_holds_the_parents_open_lock(tmp_path: Path) -> None:
    """The child's lock is its own open file: while the parent holds the ledger's lock,
    the child cannot take it (an flock on an inherited copy would be the parent's)."""
    from agent_kernel.core.safe_open import LockTimeout

    ledger = Ledger(tmp_path / LEDGER_FILE)
    ledger.verify()  # the lock file is open now, kept
    _append(ledger, "a", 0)
    to_child, from_parent = os.pipe()
    to_parent, from_child = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: wait until the parent holds the lock, then try it
        said = b"error"
        try:
            os.read(to_child, 1)
            with ledger._lock.acquire(timeout=0.2):
                said = b"held"
        except LockTimeout:
            said = b"refused"
        finally:
            os.write(from_child, said)
            os._exit(0)
    with ledger._lock:
        os.write(from_parent, b"go")
        answer = os.read(to_parent, 16)
    os.waitpid(pid, 0)
    for fd in (to_child, from_parent, to_parent, from_child):
        os.close(fd)
    assert answer == b"refused"
    _append(ledger, "a", 1)
    assert ledger.verify().count == 2
