"""Background housekeeping for the memory tables: compaction, indices, old versions.

Every ``remember`` appends a small fragment to the ``memories`` table, and a
search visits each fragment, so left alone a busy table slows down write by
write. Two passes keep it fast, both in a background thread:

- a **light pass** every ``COMPACT_EVERY`` writes merges the small fragments
  (``compact_files`` into fragments of up to ``COMPACT_TARGET`` rows, one
  thread, no index work: tens of milliseconds at any table size);
- a **full pass** every ``MAINTAIN_EVERY`` rows, and as soon as the table
  passes the index threshold: the vector index (IVF_HNSW_SQ, cosine) built
  or, when the table has more than doubled since, rebuilt; bitmap and B-tree
  indices for the ``agent_id`` and ``created_at`` prefilters; LanceDB's
  ``optimize()`` (compaction, new rows folded into every index); the newest
  vector index segments merged when they have piled up; and last the removal
  of versions older than ten minutes.

``optimize()`` adds the new rows to the vector index as a new delta segment
each time, and a search visits every segment (about 0.5 ms each at 10k rows);
fragments covered by different segments are never compacted together either.
So the newest segments are merged size-tiered, as a log-structured store
merges its runs: an older segment joins the merge while it is at most
``MERGE_RATIO`` times the newer ones together. That keeps a few segments
besides the trained one, and each row is re-indexed a few times at most. The
trained segment itself is rebuilt when the table has doubled since.

Compaction and index work only commit new versions and leave the old files in
place, so searches go on meanwhile. Removing old versions is the one step
that deletes files: it takes the write side of :class:`ReadWriteLock`, which
every search in this process holds while it reads, and other processes always
read the newest version, which is never removed. A file lock lets one process
at a time do housekeeping. A pass waits for ``QUIET_S`` without memory
traffic first (an agent recalls and remembers between model calls, so the
pass runs while the model thinks), unless ``FORCE_APPENDS`` writes have piled
up. The ``history`` table gets a pass of its own every ``COMPACT_EVERY``
ingestions from the history journal: compaction and old versions removed,
nothing else (it has no indices), and the ``memories`` table is not opened.

This module types against :class:`Tables`, not :mod:`.store`, so imports go
one way: store imports housekeeping.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from lancedb.table import Table

    from agent_kernel.memory.embeddings import Embedder

log = logging.getLogger(__name__)

COMPACT_EVERY = 5
COMPACT_EVERY_REMOTE = 25
"""On an object store: every request is a round trip and several kernels compact the same
table, whose Rewrite commits conflict with each other; so the light pass runs less often."""
COMPACT_TARGET = 1024
MAINTAIN_EVERY = 100
FORCE_APPENDS = 20
QUIET_S = 0.1
MERGE_RATIO = 4
KEEP_VERSIONS = timedelta(minutes=10)
_running: weakref.WeakSet[threading.Thread] = weakref.WeakSet()
_closing = threading.Event()
_atexit_lock = threading.Lock()
_atexit_registered = False


def _finish_at_exit() -> None:
    """At interpreter exit: start no new pass and let a running one finish.

    A pass left running inside Lance when Python finalizes aborts the process
    (its native threads call back into a finalized interpreter), so exit waits
    for it; passes still waiting for a quiet moment are skipped.
    """
    _closing.set()
    for thread in list(_running):
        thread.join(120)


def _register_atexit() -> None:
    global _atexit_registered
    with _atexit_lock:
        if not _atexit_registered:
            atexit.register(_finish_at_exit)
            _atexit_registered = True


_CONFLICT_WORDS = ("commit conflict", "concurrent writer", "concurrent commit",
                   "failed to commit", "retryable", "preconditionfailed", "precondition failed",
                   "conditionalrequestconflict", "connection reset", "timed out", "timeout")


def is_commit_conflict(exc: BaseException) -> bool:
    """Whether ``exc`` is Lance giving up on a commit another writer beat (or an I/O hiccup
    during one): the operation may be tried again from the newest version."""
    text = f"{type(exc).__name__} {exc}".lower()
    return any(word in text for word in _CONFLICT_WORDS)


class ReadWriteLock:
    """Many searches at once, or one removal of old versions, never both."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Held by every search while it reads."""
        with self._cond:
            while self._writer:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Held while old versions are removed."""
        with self._cond:
            while self._writer or self._readers:
                self._cond.wait()
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


class Tables(Protocol):
    """What housekeeping needs of :class:`~agent_kernel.memory.store.LanceTables`."""

    lock_root: Path
    lock_name: str
    remote: bool
    rw: ReadWriteLock
    embedder: Embedder | None
    index_threshold: int
    has_vector_index: bool

    def memories(self) -> Table: ...

    def history_if_open(self) -> Table | None: ...

    def refresh_indices(self, table: Table) -> None: ...


class Housekeeper:
    """Counts one process's writes to a workspace's tables and runs the passes due."""

    def __init__(self, tables: Tables) -> None:
        self.tables = tables
        self._rows = 0
        self._appends = 0
        self._ingests = 0
        self._uncounted = 0
        self._counted = False
        self._index_due = False
        self._last_use = 0.0
        self._thread: threading.Thread | None = None
        self.compact_every = COMPACT_EVERY_REMOTE if tables.remote else COMPACT_EVERY

    def touch(self) -> None:
        """Note memory traffic (a pass waits for a quiet moment)."""
        self._last_use = time.monotonic()

    def wrote(self, rows: int) -> None:
        """Count one write of ``rows`` rows and start a pass in the background when due."""
        self._rows += rows
        self._appends += 1
        self._uncounted += rows
        tables = self.tables
        if (not tables.has_vector_index and tables.embedder is not None
                and (self._uncounted >= 100 or not self._counted)):
            # Counting every row costs a few ms: look again every 100 rows.
            self._uncounted, self._counted = 0, True
            if tables.memories().count_rows() >= tables.index_threshold:
                self._index_due = True
        self._start_if_due()

    def ingested_history(self) -> None:
        """Count one ingestion into ``history``; compact it in the background when due."""
        self._ingests += 1
        self._start_if_due()

    def _start_if_due(self) -> None:
        due = (self._index_due or self._rows >= MAINTAIN_EVERY
               or self._appends >= self.compact_every or self._ingests >= COMPACT_EVERY)
        if due and not _closing.is_set() and (self._thread is None
                                              or not self._thread.is_alive()):
            _register_atexit()
            self._thread = threading.Thread(target=self._run, daemon=True,
                                            name="agent-kernel-memory-housekeeping")
            _running.add(self._thread)
            self._thread.start()

    def _run(self) -> None:
        while (time.monotonic() - self._last_use < QUIET_S
               and self._appends < FORCE_APPENDS and not self._index_due):
            if _closing.wait(QUIET_S / 2):
                return
        if _closing.is_set():
            return
        if self._index_due or self._rows >= MAINTAIN_EVERY:
            self.maintain()
        elif self._appends >= self.compact_every:
            self.compact()
        if self._ingests >= COMPACT_EVERY:
            self.compact_history()

    def compact(self) -> bool:
        """The light pass: merge small fragments; False when another process holds the lock."""
        self._appends = 0
        with self._locked() as held:
            if held:
                self.tables.memories().to_lance().optimize.compact_files(
                    target_rows_per_fragment=COMPACT_TARGET, num_threads=1)
        return held

    def compact_history(self) -> bool:
        """The history pass: merge its fragments, remove old versions; False when locked out."""
        self._ingests = 0
        table = self.tables.history_if_open()
        if table is None:
            return False
        with self._locked() as held:
            if held:
                # No indices on history, so optimize() is compaction (and prunes
                # versions a week old); the newer old versions go as in the full pass.
                table.optimize()
                with self.tables.rw.exclusive():
                    table.to_lance().cleanup_old_versions(older_than=KEEP_VERSIONS)
        return held

    def maintain(self) -> dict[str, Any]:
        """The full pass; returns what it did (``error`` when it failed, logged too)."""
        done: dict[str, Any] = {"vector_index": False, "optimized": False}
        self._rows = self._appends = self._ingests = 0
        self._index_due = False
        with self._locked(done) as held:
            if not held:
                return done
            tables = self.tables
            table = tables.memories()
            rows = table.count_rows()
            tables.refresh_indices(table)
            if (tables.embedder is not None and rows >= tables.index_threshold
                    and (not tables.has_vector_index or _vector_index_stale(table, rows))):
                from lancedb.index import IvfHnswSq

                table.create_index("vector", replace=True, config=IvfHnswSq(
                    distance_type="cosine", num_partitions=max(1, rows // 50_000)))
                done["vector_index"] = True
                tables.refresh_indices(table)
            if rows >= tables.index_threshold:
                _scalar_indices(table)
            every = [t for t in (table, tables.history_if_open()) if t is not None]
            for each in every:
                # Compaction and index merge: new versions only (LanceDB's own
                # pruning inside optimize() keeps a week of versions).
                each.optimize()
            if tables.has_vector_index:
                done["segments_merged"] = _merge_vector_segments(table)
            with tables.rw.exclusive():
                for each in every:
                    each.to_lance().cleanup_old_versions(older_than=KEEP_VERSIONS)
            done["optimized"] = True
        return done

    @contextmanager
    def _locked(self, done: dict[str, Any] | None = None) -> Iterator[bool]:
        """One pass at a time across processes; a failure is logged, never raised."""
        from agent_kernel.core.safe_open import LockTimeout, WorkspaceLock

        # Opened without following a link (safe_open); in the workspace even when the
        # tables are on an object store.
        lock = WorkspaceLock(self.tables.lock_root, self.tables.lock_name)
        try:
            lock.acquire(timeout=0)
        except LockTimeout:
            yield False
            return
        except OSError as exc:  # a planted link or FIFO: no pass, said in the log
            log.warning("memory housekeeping skipped: %s", exc)
            yield False
            return
        try:
            yield True
        except Exception as exc:
            if is_commit_conflict(exc):  # another kernel's commit won: usual on a shared store
                log.info("memory housekeeping gave way to another writer: %s", exc)
            else:
                log.warning("memory housekeeping failed: %s", exc)
            if done is not None:
                done["error"] = str(exc)
        finally:
            lock.release()

    def wait(self, timeout: float | None = None) -> None:
        """Wait for a running pass to finish (tests and benchmarks)."""
        if self._thread is not None:
            self._thread.join(timeout)


def _vector_index_stale(table: Table, rows: int) -> bool:
    """True when the table has more than doubled since the vector index was trained.

    The trained segment is the first one: the rows folded in later as delta
    segments count as indexed, but the partitions were not trained on them.
    """
    found = vector_segments(table)
    sizes = found[1] if found else []
    return bool(sizes) and sizes[0] * 2 < rows


def segments_to_merge(sizes: list[int], ratio: int = MERGE_RATIO) -> int:
    """How many of the newest vector index segments to merge into one (0: none).

    ``sizes`` are the segments' row counts, oldest (the trained one) first, which
    never takes part. Walking back from the newest, an older segment joins while
    it holds at most ``ratio`` times the rows of those already taken.
    """
    count = taken = 0
    for size in reversed(sizes[1:]):
        if count and taken * ratio < size:
            break
        count += 1
        taken += size
    return count if count >= 2 else 0


def vector_segments(table: Table) -> tuple[str, list[int]] | None:
    """The vector index's name and its segments' row counts, oldest first."""
    for index in table.list_indices():
        if "vector" in index.columns and index.index_type != "FTS":
            stats = table.to_lance().stats.index_stats(index.name)
            return index.name, [sum(p["size"] for p in segment.get("partitions", []))
                                for segment in stats.get("indices", [])]
    return None


def _merge_vector_segments(table: Table) -> int:
    """Merge the newest vector index segments when due; returns how many were merged."""
    found = vector_segments(table)
    if found is None:
        return 0
    name, sizes = found
    count = segments_to_merge(sizes)
    if count:
        table.to_lance().optimize.optimize_indices(num_indices_to_merge=count,
                                                   index_names=[name])
    return count


def _scalar_indices(table: Table) -> None:
    """Indices for the prefilters every search runs (agent, time): ~40% off a query."""
    from lancedb.index import Bitmap, BTree

    have = {tuple(i.columns) for i in table.list_indices()}
    for column, config in (("agent_id", Bitmap()), ("created_at", BTree())):
        if (column,) not in have:
            table.create_index(column, config=config)
