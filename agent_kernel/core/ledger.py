"""The ledger: an append-only, hash-chained record of everything the agent did.

Every tool call (success or failure), every decision logged with
``log_decision`` and every approval is one JSON line in ``ledger.jsonl``.
Each record carries the hash of the record before it and its own hash over
its canonical JSON, so :meth:`Ledger.verify` can re-derive the chain and
name the first line that was changed, removed, moved or is unreadable, for
any bytes at all: it never raises.

Appends from several processes are serialised by a lock file; under the lock
the writer finds the last complete record at the end of the file, writes the
lines and fsyncs them before the caller hears back, so a record is on disk
before its result reaches the model. Within one process every ``Ledger`` of a
file shares one :class:`_Commit`: appends that arrive while a write is under
way wait and go together in the next one (group commit: one lock, one write,
one fsync for all of them, in the order they arrived), so twenty concurrent
runs do not queue for twenty fsyncs nor poll each other's file lock. From
the loop, :meth:`Ledger.append_async` waits on a future, not in a thread, and
:meth:`Ledger.queue` fixes a record's place in the chain without waiting.
Every record a caller appends goes
through :func:`agent_kernel.core.redaction.scrub` first, so no secret is written.

The ledger heals, and only at its end. A process that died in the middle of
a write (or bytes appended by something else) leaves a tail after the last
complete record; the next writer, in whichever process, moves exactly those
bytes to a quarantine file beside the ledger, records a ``ledger_repaired``
event and goes on. A failed write removes its own partial line. Damage
*before* the last record is never touched: rewriting history would hide
tampering, so ``verify`` keeps naming it. ``Ledger.repair`` (and
``python -m agent_kernel verify --repair``) does the same healing on demand.

The ledger is bounded: a record's line holds at most ``LIMITS.line_bytes``;
larger fields (a tool's result, usually) move to files in ``ledger-blobs/``
named by their SHA-256, which the record names and ``verify`` checks
(:mod:`agent_kernel.core.ledger_blobs`).
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import contextlib
import hashlib
import json
import logging
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from agent_kernel.core.ledger_blobs import (
    BLOB_DIR,
    Blob,
    LedgerLimits,
    check_blobs,
    read_field,
    remove_stale_partials,
    spill,
    write_blobs,
)
from agent_kernel.core.ledger_lines import (
    GENESIS,
    AppendFailed,
    append_all,
    digest,
    digest_matches,
    is_blank,
    lines_forward,
    load_object,
    load_record,
    read_at,
    scan_tail,
)
from agent_kernel.core.redaction import REDACTED as REDACTED  # re-exported for older imports
from agent_kernel.core.redaction import scrub
from agent_kernel.core.safe_open import KeptFile, UnsafeWorkspacePath, WorkspaceLock, open_fd

log = logging.getLogger(__name__)
LEDGER_FILE = "ledger.jsonl"
REPAIRED = "ledger_repaired"
REPAIR_HINT = "`python -m agent_kernel verify --repair` moves it aside"
LIMITS = LedgerLimits()
"""What one record may write, for every ledger not given its own ``limits``."""


class LedgerError(RuntimeError):
    """The ledger cannot be appended to safely."""


def now_iso() -> str:
    """The current UTC time as ISO 8601 with a ``Z``."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


_ID_BYTES = 4096
_random_hex: list[str] = []
"""Random hex for ids, 8 characters each, from one ``os.urandom`` of :data:`_ID_BYTES`: a
call of its own was ~40 µs on a loaded VM and a team task takes about ten ids."""
_random_lock = threading.Lock()


def _fresh_hex() -> None:  # a forked child must not hand out its parent's next ids
    _random_hex.clear()


os.register_at_fork(after_in_child=_fresh_hex)


def new_id(prefix: str) -> str:
    """An id like ``rec_20260210_173000_1a2b3c4d``: sortable by time, unique by chance
    (8 hex characters of ``os.urandom``, as ``secrets.token_hex(4)`` gives)."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d_%H%M%S")
    with _random_lock:
        if not _random_hex:
            text = os.urandom(_ID_BYTES).hex()
            _random_hex.extend(text[i:i + 8] for i in range(0, len(text), 8))
        tail = _random_hex.pop()
    return f"{prefix}_{stamp}_{tail}"


@dataclass
class VerifyResult:
    """The outcome of :meth:`Ledger.verify`.

    ``bad_index`` is the 0-based line of the first bad line (``line`` is 1-based),
    ``head`` the hash of the last record that verified (the value to anchor), and
    ``repairable`` says the bad part is a tail that :meth:`Ledger.repair` moves aside.
    """

    ok: bool
    count: int
    bad_index: int | None = None
    bad_record_id: str | None = None
    reason: str | None = None
    head: str = GENESIS
    repairable: bool = False
    anchor_missing: bool = False
    """The chain verifies but the anchor given is not in it (not a broken ledger)."""

    def __bool__(self) -> bool:
        return self.ok

    @property
    def line(self) -> int | None:
        """The 1-based line number of the first bad line."""
        return None if self.bad_index is None else self.bad_index + 1

    def __str__(self) -> str:
        if self.ok:
            return f"ledger ok: {self.count} records verify"
        if self.anchor_missing:
            return f"anchor not found: {self.reason}"
        if self.bad_index is None:
            return f"ledger broken: {self.reason}"
        return (f"ledger broken at line {self.line} "
                f"({self.bad_record_id or 'unreadable'}): {self.reason}")


@dataclass
class Moved:
    """Bytes that healing moved from the end of the ledger to the quarantine file."""

    offset: int
    size: int
    sha256: str
    lines: int
    reason: str
    quarantine: str


@dataclass
class RepairReport:
    """What :meth:`Ledger.repair` did, and any damage it left in place on purpose."""

    moved: Moved | None = None
    newline_added: bool = False
    record_id: str | None = None  # the ledger_repaired record
    damage: VerifyResult | None = None
    partials_removed: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        out = []
        if self.moved is not None:
            m = self.moved
            out.append(
                f"repair: moved {m.size:,} bytes ({m.lines} line{'s' * (m.lines != 1)}) from "
                f"offset {m.offset:,} ({m.reason}) to {m.quarantine} (sha256 {m.sha256[:16]}…); "
                f"recorded as {self.record_id}")
        elif self.newline_added:
            out.append("repair: the last record was whole but lacked its newline; added it, "
                       "nothing moved")
        else:
            out.append("repair: nothing needed moving")
        if self.partials_removed:
            count = len(self.partials_removed)
            out.append(f"repair: removed {count} partial blob file{'s' * (count != 1)} left by "
                       f"writes that died (no record names them)")
        if self.damage is not None:
            out.append(f"repair: line {self.damage.line} is damaged ({self.damage.reason}) and "
                       "records follow it; left in place, since rewriting history would hide "
                       "tampering")
        return "\n".join(out)


def decision_record(*, agent_id: str, run_id: str, reasoning: str,
                    decision_type: str) -> dict[str, object]:
    """A ``log_decision`` record (spec 001's decision log structure), not yet written."""
    return {"kind": "decision", "record_id": new_id("rec"), "decision_id": new_id("dec"),
            "agent_id": agent_id, "run_id": run_id, "reasoning": reasoning,
            "decision_type": decision_type, "timestamp": now_iso()}


class _Batch:
    """One caller's records, waiting to be written by whichever thread writes next."""

    def __init__(self, bodies: list[dict[str, object]],
                 notify: Callable[[], None] | None = None) -> None:
        self.bodies = bodies
        self.wake = threading.Event()
        self.notify = notify
        """Called (from the writing thread) once the batch is written or failed."""
        self.written = False
        self.error: BaseException | None = None
        self.lead = False
        """A synchronous caller that found no write under way: it writes, in its thread."""

    def done(self, error: BaseException | None) -> None:
        self.error = self.error or error
        self.written = True
        self.wake.set()
        if self.notify is not None:
            self.notify()


class _Commit:
    """A ledger file's in-process side: its lock and the appends waiting for a write.

    Shared by every :class:`Ledger` of the file in this process (a team makes an agent,
    and so a ``Ledger``, per task), so they wait on a thread lock, in order, not on
    each other's ``flock`` (which polls).
    """

    def __init__(self, root: Path, name: str) -> None:
        self.key = os.path.abspath(root / name)
        self.lock = WorkspaceLock(root, name + ".lock", keep_open=True)
        self.file = KeptFile(root, name, os.O_RDWR | os.O_CREAT | os.O_APPEND)
        """The ledger, kept open between groups with its lock file (used under the lock;
        each group checks both are still the files at their names: one ``lstat`` each)."""
        self.mutex = threading.Lock()
        self.waiting: list[_Batch] = []
        self.writing = False
        self.groups = 0
        """Groups written so far (each one write and one fsync): tests read it."""

    def close_files(self) -> bool:
        """Close the kept files unless a thread holds the lock (False: still open)."""
        return self.lock.close_kept(self.file)


_COMMITS: dict[str, _Commit] = {}
_COMMITS_MUTEX = threading.Lock()

KEPT_OPEN = 4
"""Ledgers whose files a process keeps open between writes (the least recently written
are closed first): a kernel writes one ledger, or one a workspace; a test run makes
thousands, and must not hold two descriptors for each."""

_OPEN: OrderedDict[str, _Commit] = OrderedDict()


def _kept_open(commit: _Commit) -> None:
    """``commit`` held its lock just now (its files may be open): close the least recently
    used others' beyond :data:`KEPT_OPEN` (a ledger being written keeps its own)."""
    with _COMMITS_MUTEX:
        _OPEN[commit.key] = commit
        _OPEN.move_to_end(commit.key)
        for other_key, other in list(_OPEN.items())[:-KEPT_OPEN]:
            if other.close_files():
                del _OPEN[other_key]


def _commit_of(path: Path) -> _Commit:
    key = os.path.abspath(path)
    with _COMMITS_MUTEX:
        commit = _COMMITS.get(key)
        if commit is None:
            commit = _COMMITS[key] = _Commit(path.parent, path.name)
        return commit


_WRITERS: ThreadPoolExecutor | None = None


def _writers() -> ThreadPoolExecutor:
    """The threads that write what the loop queued (appends from the loop wait in none)."""
    global _WRITERS
    with _COMMITS_MUTEX:
        if _WRITERS is None:
            _WRITERS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="agent-kernel-ledger")
        return _WRITERS


def _forget_commits() -> None:
    """In a forked child: the parent's waiting appends, held locks, open files and threads
    are not its own."""
    global _COMMITS_MUTEX, _WRITERS
    _OPEN.clear()  # their open files are closed in the child already (safe_open.KeptFile)
    _QUEUED.clear()  # the parent's records, its to write
    _COMMITS.clear()
    _COMMITS_MUTEX = threading.Lock()
    _WRITERS = None


os.register_at_fork(after_in_child=_forget_commits)


_QUEUED: weakref.WeakSet[Ledger] = weakref.WeakSet()
"""Ledgers that queued records with :meth:`Ledger.queue` (their timers need a loop). A
record still waiting keeps its ledger here: the ``_Commit`` holds its batch, the batch
its ``PendingAppend``, and that the ledger."""


def _write_queued_at_exit() -> None:
    """At the process's exit: write what :meth:`Ledger.queue` left for a loop that ended
    before its timer, when nothing wrote the file since (a writer thread under way
    finishes by itself: the interpreter joins it first)."""
    for ledger in list(_QUEUED):
        try:
            ledger._start_line(here=True)
        except Exception:  # each waiting record's caller was told; nothing more to do
            log.exception("writing queued ledger records at exit")


atexit.register(_write_queued_at_exit)

QUEUED_WAIT = 0.02
"""Seconds a record queued with :meth:`Ledger.queue` (which no one waits for) waits for the
file's next write to go with, before a write of its own starts: a team's ``task_started``
then shares its run's first record's fsync instead of taking the writer thread while the
run makes its first model call, and that record waited for it (docs/performance.md)."""

INLINE_TEXT = 1024
"""Records with less text than this are redacted on the loop (a millisecond at most);
longer ones in a thread: redaction costs about 0.1 ms per kilobyte of ordinary text and
up to 0.5 ms of text full of key-like literals (benchmarks/redaction.py), which would hold
up everything else on the loop (objects other than JSON's go to the thread too)."""


def _text_size(value: object, limit: int, depth: int = 0) -> int:
    """The characters of text in ``value``, counted until ``limit`` is reached (deep or
    foreign values count as ``limit``: the thread handles them)."""
    if isinstance(value, (str, bytes, bytearray)):
        return len(value)
    if value is None or isinstance(value, (bool, int, float)):
        return 0
    if depth >= 8:
        return limit
    if isinstance(value, Mapping):
        items: Iterable[object] = [*value.keys(), *value.values()]
    elif isinstance(value, (list, tuple)):
        items = value
    else:
        return limit
    size = 0
    for item in items:
        size += _text_size(item, limit - size, depth + 1)
        if size >= limit:
            return size
    return size


class PendingAppend:
    """Records queued with :meth:`Ledger.queue`; :meth:`written` waits for them on disk."""

    def __init__(self, ledger: Ledger, bodies: list[dict[str, object]]) -> None:
        self.ledger, self.bodies = ledger, bodies
        self.batch: _Batch | None = None
        self._loop = asyncio.get_running_loop()
        self._future: asyncio.Future[None] = self._loop.create_future()

    def notify(self) -> None:
        """From the writing thread: the batch is written (or failed)."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: no one waits
            self._loop.call_soon_threadsafe(self._settle)

    def _settle(self) -> None:
        if not self._future.done():
            self._future.set_result(None)

    async def written(self) -> list[dict[str, object]]:
        """The records once on disk (fsynced), with their hashes; LedgerError if the write
        failed. Cancelling the wait does not take them back: they are written anyway."""
        if self.batch is not None:
            await self._future
            Ledger._raise_for(self.batch)
        return self.bodies


def tool_call_record(*, agent_id: str, run_id: str, tool_name: str, arguments: object,
                     result: object, success: bool, error: str | None, duration_ms: int,
                     timestamp: str | None = None, **context: object) -> dict[str, object]:
    """A tool-call record with spec 001's fields, not yet written."""
    return {"kind": "tool_call", "record_id": new_id("rec"), "agent_id": agent_id,
            "run_id": run_id, "tool_name": tool_name, "arguments": arguments,
            "result": result, "success": success, "error": error,
            "timestamp": timestamp or now_iso(), "duration_ms": duration_ms, **context}


class Ledger:
    """Append-only JSON-lines ledger with a hash chain, safe and self-healing across processes."""

    def __init__(self, path: str | os.PathLike[str], limits: LedgerLimits | None = None
                 ) -> None:
        self.path = Path(path)
        self.limits = limits
        """None: the module's ``LIMITS``, read at each append."""
        self.blob_folder = self.path.parent / BLOB_DIR
        self.quarantine_path = self.path.with_name(
            f"{self.path.stem}.quarantine{self.path.suffix or '.jsonl'}")
        self.root = self.path.parent
        """The folder the ledger's files are opened under, never through a link below it."""
        self._commit = _commit_of(self.path)
        self._lock = self._commit.lock

    # --- writing -------------------------------------------------------------------------

    def append(self, record: dict[str, Any]) -> dict[str, Any]:
        """Redact, chain and durably write one record; returns it with its hash.

        Fields that would make the line longer than the limits allow are written first, to
        blobs the record names. A torn tail left by an earlier writer is moved aside first.
        Raises :class:`LedgerError` when the write fails; the partial line is removed.
        """
        return self.append_many([record])[0]

    def append_many(self, records: Sequence[Mapping[str, object]]
                    ) -> list[dict[str, object]]:
        """:meth:`append` for several records at once, chained in order: one lock, one
        write and one fsync for all of them (spec 001 writes its decision log in batches).
        All or none: a failed write removes every line of the batch."""
        bodies = self._prepare(records)
        if bodies:
            self._wait(self._queue(bodies))
        return bodies

    def queue(self, records: Sequence[Mapping[str, object]]) -> PendingAppend:
        """Queue ``records`` now, in this order among every append of the file, and return
        at once: :meth:`PendingAppend.written` waits (on the loop) until they are on disk.
        Any record appended after this call is chained after them, so once a later record
        is on disk these are too. For a record the caller need not wait for (a team's
        ``task_started``: its run begins meanwhile). They go with the file's next write
        (one fsync for both), or alone :data:`QUEUED_WAIT` seconds later when none came."""
        pending = self._pending(self._prepare(records), start=False)
        if pending.batch is not None:
            asyncio.get_running_loop().call_later(QUEUED_WAIT, self._start_line)
            _QUEUED.add(self)  # a loop that ends first leaves them to the process's exit
        return pending

    def _pending(self, bodies: list[dict[str, object]], start: bool = True) -> PendingAppend:
        """Queue prepared ``bodies`` (none: nothing to wait for) and return the handle
        (``start=False``: no write starts for them; the next one takes them)."""
        pending = PendingAppend(self, bodies)
        if bodies:
            pending.batch = self._queue(bodies, pending.notify, start=start)
        return pending

    async def append_async(self, records: Sequence[Mapping[str, object]]
                           ) -> list[dict[str, object]]:
        """:meth:`append_many` from the loop, holding no thread while it waits: the records
        are made here, large fields written in a thread, and the write is the group's."""
        if _text_size(records, INLINE_TEXT) < INLINE_TEXT:
            bodies, blobs = self._bodies(records)
            if blobs:
                await asyncio.to_thread(self._write_blobs, blobs)
        else:  # redacting a long text takes milliseconds: not on the loop
            bodies = await asyncio.to_thread(self._prepare, records)
        if not bodies:
            return []
        return await self._pending(bodies).written()

    async def arecord_tool_call(self, *, agent_id: str, run_id: str, tool_name: str,
                                arguments: object, result: object, success: bool,
                                error: str | None, duration_ms: int, **context: object
                                ) -> dict[str, object]:
        """:meth:`record_tool_call` from the loop (see :meth:`append_async`)."""
        return (await self.append_async([{**tool_call_record(
            agent_id=agent_id, run_id=run_id, tool_name=tool_name, arguments=arguments,
            result=result, success=success, error=error, duration_ms=duration_ms),
            **context}]))[0]

    async def arecord_event(self, kind: str, **fields: object) -> dict[str, object]:
        """:meth:`record_event` from the loop (see :meth:`append_async`)."""
        return (await self.append_async([{"kind": kind, "record_id": new_id("rec"),
                                          **fields}]))[0]

    def _bodies(self, records: Sequence[Mapping[str, object]]
                ) -> tuple[list[dict[str, object]], list[Blob]]:
        """Each record redacted, stamped and cut to the limits; the blobs its large fields
        go to (not yet written)."""
        bodies, blobs = [], []
        for record in records:
            body = scrub(record)
            body.setdefault("record_id", new_id("rec"))
            body.setdefault("timestamp", now_iso())
            try:
                blobs += spill(body, self.limits or LIMITS)
            except ValueError as exc:
                raise LedgerError(str(exc)) from exc
            bodies.append(body)
        return bodies, blobs

    def _prepare(self, records: Sequence[Mapping[str, object]]) -> list[dict[str, object]]:
        bodies, blobs = self._bodies(records)
        self._write_blobs(blobs)
        return bodies

    def _write_blobs(self, blobs: list[Blob]) -> None:
        """Large fields, whole on disk before any record names them (a record with none
        costs no system call here: the writer makes the folder it writes in)."""
        if not blobs:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            write_blobs(self.blob_folder, blobs)
        except UnsafeWorkspacePath as exc:
            raise LedgerError(f"{exc}; nothing was recorded") from exc
        except OSError as exc:
            raise LedgerError(f"cannot write a large field to {self.blob_folder} ({exc}); "
                              "nothing was recorded") from exc

    # --- group commit ----------------------------------------------------------------------

    def _queue(self, bodies: list[dict[str, object]],
               notify: Callable[[], None] | None = None, start: bool = True) -> _Batch:
        """Put a batch in line (its place in the chain is fixed now). With no write under
        way, a synchronous caller (no ``notify``) writes it itself in :meth:`_wait`; for
        one on the loop a writer thread starts, so the loop never waits on the disk
        (``start=False``: none starts; the next write, or :meth:`_start_line`, takes it)."""
        batch = _Batch(bodies, notify)
        commit = self._commit
        with commit.mutex:
            commit.waiting.append(batch)
            start = start and not commit.writing
            commit.writing = commit.writing or start
        if start:
            if notify is None:
                batch.lead = True
            else:
                self._writer_thread()
        return batch

    def _start_line(self, here: bool = False) -> None:
        """Have a writer thread take what waits in line, unless one has it already
        (``here``: write it in this thread)."""
        commit = self._commit
        with commit.mutex:
            start = bool(commit.waiting) and not commit.writing
            commit.writing = commit.writing or start
        if start and here:
            self._drain()
        elif start:
            self._writer_thread()

    def _writer_thread(self) -> None:
        """Have one of the process's ledger writer threads drain the line (two threads,
        made once: starting a thread waits for it to run, which the loop must not)."""
        try:
            _writers().submit(self._drain_logged)
        except RuntimeError:  # the interpreter is shutting down: a thread of its own
            threading.Thread(target=self._drain_logged, daemon=True).start()

    def _drain_logged(self) -> None:
        try:
            self._drain()
        except BaseException:  # told to every caller already; the writer thread goes on
            log.exception("the ledger writer was interrupted")

    def _wait(self, batch: _Batch) -> None:
        """A synchronous caller: write (when it leads) or wait until its batch is written."""
        if batch.lead:
            self._drain()
        else:
            try:
                batch.wake.wait()
            except BaseException:  # interrupted: leave the line if no write took it yet
                self._withdraw(batch)
                raise
        self._raise_for(batch)

    def _withdraw(self, batch: _Batch) -> None:
        with self._commit.mutex:
            if not batch.written and batch in self._commit.waiting:
                self._commit.waiting.remove(batch)

    def _drain(self) -> None:
        """Write group after group until no one waits (each waiting caller's records go in
        the next group: one lock, one write, one fsync)."""
        commit = self._commit
        while True:
            with commit.mutex:
                group, commit.waiting = commit.waiting, []
                if not group:
                    commit.writing = False
                    return
            try:
                self._write_group(group)
            except (LedgerError, OSError):
                continue  # each caller of the group is told; the next group goes on
            except BaseException:  # interrupted mid-write: the rest are still written
                with commit.mutex:
                    if commit.waiting:
                        self._writer_thread()
                    else:
                        commit.writing = False
                raise

    @staticmethod
    def _raise_for(batch: _Batch) -> None:
        error = batch.error
        if error is not None:
            said = str(error) if isinstance(error, (LedgerError, OSError)) else (
                f"the write was interrupted ({type(error).__name__}); nothing was recorded")
            raise LedgerError(said) from error

    def _write_group(self, group: list[_Batch]) -> None:
        """Under the file lock: heal, chain every batch in order, one write, one fsync; then
        tell each caller. All or none: a failed write removes every line of the group (a
        batch that cannot be made a line fails alone, before anything is written)."""
        error: BaseException | None = None
        commit = self._commit
        try:
            try:  # the lock file is made with its folder, which the ledger is in
                held = self._lock.acquire()
            except OSError as exc:
                raise LedgerError(f"cannot lock the ledger: {exc}") from exc
            with held:
                fd = self._kept_file()
                try:
                    last, _ = self._heal(fd)
                    lines = []
                    for batch in group:
                        try:
                            made, head = self._lines(batch.bodies, last)
                        except (ValueError, TypeError, RecursionError) as exc:
                            batch.error = LedgerError(f"a record is not JSON ({exc}); "
                                                      "nothing was recorded")
                            continue
                        lines += made
                        last = head
                    if lines:
                        self._write(fd, ("\n".join(lines) + "\n").encode("utf-8"))
                except BaseException:  # opened afresh by the next group
                    commit.file.close()
                    raise
            commit.groups += 1
        except BaseException as exc:
            error = exc
            raise
        finally:
            _kept_open(commit)
            for batch in group:
                batch.done(error)

    def _lines(self, bodies: list[dict[str, object]], last: str) -> tuple[list[str], str]:
        """The lines of one batch chained after ``last``, and the hash of its last record."""
        lines = []
        for body in bodies:
            last = self._chain(body, last)
            lines.append(json.dumps(body, ensure_ascii=False, separators=(",", ":")))
        return lines, last

    def repair(self) -> RepairReport:
        """Move a torn or unreadable tail aside now; report damage before it, untouched.

        Partial blob files left by writes that died are removed; a blob is never removed.
        """
        partials = remove_stale_partials(self.blob_folder)
        if not self.path.exists():
            return RepairReport(partials_removed=partials)
        with self._lock:
            _, report = self._heal(self._kept_file())
        _kept_open(self._commit)
        report.partials_removed = partials
        verdict = self.verify()
        if not verdict.ok and verdict.bad_index is not None:
            report.damage = verdict
        return report

    def _reader(self) -> IO[bytes]:
        """The ledger opened for reading, never through a link nor waiting on a FIFO."""
        return os.fdopen(open_fd(self.root, self.path.name, os.O_RDONLY), "rb")

    def _kept_file(self) -> int:
        """Under the lock: the ledger kept open, still the file at its name (else walked to
        and opened afresh, never through a link); LedgerError when it cannot be."""
        try:
            return self._commit.file.fd()
        except UnsafeWorkspacePath as exc:
            raise LedgerError(f"cannot open the ledger: {exc}") from exc
        except OSError as exc:
            raise LedgerError(f"cannot open the ledger {self.path}: {exc}") from exc

    def _heal(self, fd: int) -> tuple[str, RepairReport]:
        """Under the lock: make the file end with a complete record; return its hash."""
        report = RepairReport()
        tail = scan_tail(fd, os.fstat(fd).st_size)
        if tail.needs_newline:
            self._write(fd, b"\n")
            report.newline_added = True
            return tail.last_hash, report
        if not tail.damaged:
            return tail.last_hash, report
        data = read_at(fd, tail.good_end, tail.size - tail.good_end)
        torn = not data.endswith(b"\n")
        report.moved = Moved(
            offset=tail.good_end, size=len(data), sha256=hashlib.sha256(data).hexdigest(),
            lines=data.count(b"\n") + torn,
            reason="a torn write: the last line has no newline" if torn
            else "lines at the end that are not readable records",
            quarantine=self.quarantine_path.name)
        report.record_id = new_id("rec")
        self._quarantine(report.moved, report.record_id, data)
        try:
            os.ftruncate(fd, tail.good_end)
            os.fsync(fd)
        except OSError as exc:
            raise LedgerError(f"cannot cut the torn tail off the ledger: {exc}") from exc
        event = {"kind": REPAIRED, "record_id": report.record_id, "timestamp": now_iso(),
                 "offset": report.moved.offset, "bytes": report.moved.size,
                 "sha256": report.moved.sha256, "lines": report.moved.lines,
                 "reason": report.moved.reason, "quarantine": report.moved.quarantine,
                 "pid": os.getpid()}
        return self._write_record(fd, event, tail.last_hash)["hash"], report

    def _quarantine(self, moved: Moved, record_id: str, data: bytes) -> None:
        entry = {"quarantined_at": now_iso(), "ledger": self.path.name, "offset": moved.offset,
                 "size": moved.size, "sha256": moved.sha256, "reason": moved.reason,
                 "ledger_record_id": record_id,
                 "base64": base64.b64encode(data).decode("ascii")}
        line = (json.dumps(entry, separators=(",", ":")) + "\n").encode("ascii")
        try:
            fd = open_fd(self.root, self.quarantine_path.name,
                         os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        except OSError as exc:
            raise LedgerError(f"cannot open the quarantine file for the torn tail: {exc}") from exc
        try:
            self._write(fd, line, what="the quarantine file")
        finally:
            os.close(fd)

    @staticmethod
    def _chain(body: dict[str, object], prev_hash: str) -> str:
        """Link ``body`` to the record before it; returns its own hash."""
        body["prev_hash"] = prev_hash
        body["hash"] = digest(body)
        return str(body["hash"])

    def _write_record(self, fd: int, body: dict[str, Any], prev_hash: str) -> dict[str, Any]:
        self._chain(body, prev_hash)
        line = json.dumps(body, ensure_ascii=False, separators=(",", ":")) + "\n"
        self._write(fd, line.encode("utf-8"))
        return body

    @staticmethod
    def _write(fd: int, data: bytes, what: str = "the ledger") -> None:
        """Append ``data`` and fsync; on failure cut the file back and raise LedgerError."""
        try:
            append_all(fd, data)
        except AppendFailed as exc:
            raise LedgerError(f"writing to {what} failed ({exc}); {exc.undone}") from exc

    # --- convenience records -------------------------------------------------------------

    def record_tool_call(
        self,
        *,
        agent_id: str,
        run_id: str,
        tool_name: str,
        arguments: object,
        result: object,
        success: bool,
        error: str | None,
        duration_ms: int,
        timestamp: str | None = None,
        **context: object,
    ) -> dict[str, Any]:
        """Append a tool-call record with spec 001's fields (``context``: the caller's place in
        a team, such as ``role``, ``task_id`` and ``trace_id``)."""
        return self.append(tool_call_record(
            agent_id=agent_id, run_id=run_id, tool_name=tool_name, arguments=arguments,
            result=result, success=success, error=error, duration_ms=duration_ms,
            timestamp=timestamp, **context))

    def record_decision(
        self, *, agent_id: str, run_id: str, reasoning: str, decision_type: str
    ) -> dict[str, Any]:
        """Append a ``log_decision`` record (spec 001's decision log structure)."""
        return self.append(decision_record(agent_id=agent_id, run_id=run_id,
                                           reasoning=reasoning, decision_type=decision_type))

    def record_event(self, kind: str, **fields: object) -> dict[str, Any]:
        """Append any other record (approvals, cancellations, trigger firings)."""
        return self.append({"kind": kind, "record_id": new_id("rec"), **fields})

    # --- reading -------------------------------------------------------------------------

    def records(self) -> list[dict[str, Any]]:
        """All records, oldest first (lines that are not JSON objects are skipped; see verify)."""
        if not self.path.exists():
            return []
        out = []
        with self._reader() as handle:
            for raw in handle:
                if raw.strip():
                    value, _ = load_object(raw)
                    if value is not None:
                        out.append(value)
        return out

    def full_field(self, record: dict[str, Any], name: str) -> tuple[Any, bool]:
        """A record's field as written, read back from its blob if it was moved: (value,
        whole); ``whole`` is False for a blob cut at the limit, missing or changed."""
        return read_field(self.blob_folder, record, name, (self.limits or LIMITS).blob_bytes)

    def verify(self, anchor: str | None = None) -> VerifyResult:
        """Re-derive the chain, check every blob it names, name the first bad line; never raises.

        With ``anchor`` (a record hash kept somewhere else), the ledger is also broken
        unless a record with that hash is in the verified chain.
        """
        try:
            return self._verify(anchor)
        except (OSError, MemoryError) as exc:
            return VerifyResult(False, 0, reason=f"the ledger cannot be read: {exc}")

    def _settled_size(self) -> int:
        """The file's size between appends (so a write in progress is not read as torn)."""
        try:
            with self._lock.acquire(timeout=10):
                return self.path.stat().st_size
        except OSError:  # a read-only folder, a stuck lock (LockTimeout): read what is there
            return self.path.stat().st_size
        finally:
            _kept_open(self._commit)

    def _verify(self, anchor: str | None) -> VerifyResult:
        wanted = anchor.strip().lower() if anchor is not None else None
        if wanted is not None and (len(wanted) != 64 or any(c not in "0123456789abcdef"
                                                             for c in wanted)):
            return VerifyResult(False, 0, reason=f"the anchor {anchor!r} is not a record hash "
                                                 "(64 hex digits, as `verify` prints)")
        if not self.path.exists():
            return self._anchored(VerifyResult(True, 0), wanted, found=False)
        size = self._settled_size()
        previous, count, found = GENESIS, 0, False
        limit = (self.limits or LIMITS).blob_bytes
        seen: dict[tuple[str, int], tuple[int, str] | str] = {}  # each blob hashed once
        with self._reader() as handle:
            for index, (offset, raw) in enumerate(lines_forward(handle, size)):
                if is_blank(raw):
                    continue
                record, why = load_record(raw)
                record_id = None
                if record is not None:
                    candidate = record.get("record_id")
                    record_id = candidate if isinstance(candidate, str) else None
                    if record.get("prev_hash") != previous:
                        why = ("prev_hash does not match the record before it "
                               "(a record was removed, inserted or moved)")
                    elif not digest_matches(record):
                        why = "hash does not match the content"
                    else:
                        why = check_blobs(self.blob_folder, record, limit, seen) or ""
                if record is None or why:
                    return self._broken(handle, size, index, offset, raw, record_id, why,
                                        count, previous)
                previous = record["hash"]
                count += 1
                found = found or previous == wanted
        return self._anchored(VerifyResult(True, count, head=previous), wanted, found)

    @staticmethod
    def _anchored(result: VerifyResult, wanted: str | None, found: bool) -> VerifyResult:
        if wanted is None or found:
            return result
        return VerifyResult(
            False, result.count, head=result.head, anchor_missing=True,
            reason=f"{wanted[:16]}… is not in the ledger's chain of {result.count} records, "
                   "which verify on their own: the ledger was emptied, replaced or rewritten "
                   "since that hash was kept, or the hash is another workspace's")

    @staticmethod
    def _broken(handle: IO[bytes], size: int, index: int, offset: int, raw: bytes,
                record_id: str | None, why: str, count: int, head: str) -> VerifyResult:
        tail = scan_tail(handle.fileno(), size)
        repairable = tail.damaged and offset >= tail.good_end
        if repairable and not raw.endswith(b"\n"):
            why = f"the last line is incomplete (a torn write); {REPAIR_HINT}"
        elif repairable:
            why = f"{why}; it is in the unreadable tail, and {REPAIR_HINT}"
        return VerifyResult(False, count, index, record_id, why, head=head,
                            repairable=repairable)
