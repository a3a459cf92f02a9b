"""The history journal: each run's prompt and reply as one JSON line, cheap to write.

Writing a conversation straight into LanceDB cost a chat-only kernel the
lancedb import (and, warmed after it, the embedding model: over 300 MiB at its
first run) and left a table version and a data file per run. So the history writer appends
here instead, with the standard library only: one line per record, written
whole under a file lock and fsync'd, its text redacted first. The LanceDB
``history`` table is filled from this file when a reader first needs it:
:meth:`HistoryJournal.ingest` takes every pending line in one batch.

How far the table has got is a byte offset in ``history.cursor.json``,
replaced atomically. Ingestion takes the ingest lock, re-reads the cursor,
adds the pending lines and only then advances the cursor, so two processes
never add the same line and never skip one. A row's id is a hash of its
line, and before adding the cursor notes the range it is about to add: after
a crash between the add and the cursor's advance, the next ingestion sees
that note and drops the rows the table already has.

The journal heals only at its end, as the ledger does. A process that died
mid-append leaves bytes after the last newline; readers never take an
unterminated line, and the next appender moves those bytes to
``history.quarantine.jsonl`` before writing. A complete line that is not a
record is skipped by readers and passed by the cursor.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agent_kernel.core.ledger_lines import AppendFailed, append_all, lines_backward, read_at
from agent_kernel.core.redaction import redact_text
from agent_kernel.core.safe_open import WorkspaceLock, folder_fd, open_fd, read_bytes, write_atomic

log = logging.getLogger(__name__)

JOURNAL_DIR = "memory"  # beside the short-term markdown mirrors
JOURNAL_FILE = "history.jsonl"
CURSOR_FILE = "history.cursor.json"
QUARANTINE_FILE = "history.quarantine.jsonl"
FIELDS = ("role", "text", "createdAt", "run_id", "conversation_id", "agent_id")
BATCH_LINES = 5_000  # records per table write


def line_id(line: bytes) -> str:
    """A record's row id: a hash of its line, the same in every process that reads it."""
    return "hist_" + hashlib.blake2b(line.rstrip(b"\n"), digest_size=12).hexdigest()


def _stamp(moment: datetime | float) -> str:
    at = moment if isinstance(moment, datetime) else datetime.fromtimestamp(
        float(moment), timezone.utc)
    return at.astimezone(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def parse_line(line: bytes) -> dict[str, Any] | None:
    """One complete line as a history row (with ``id``), or None when it is not a record."""
    try:
        value = json.loads(line)
        if not isinstance(value, dict) or not isinstance(value.get("text"), str):
            return None
        row = {name: value.get(name) for name in FIELDS}
        if row["role"] not in ("user", "assistant"):
            return None
        stamp = str(value["createdAt"])  # Python 3.10's fromisoformat takes no "Z"
        created = datetime.fromisoformat(stamp[:-1] + "+00:00" if stamp.endswith("Z") else stamp)
        if created.tzinfo is None:
            return None
        row["createdAt"] = created
    except (ValueError, KeyError, RecursionError, UnicodeDecodeError):
        return None
    if not all(row[n] is None or isinstance(row[n], str)
               for n in ("run_id", "conversation_id", "agent_id")):
        return None
    row["id"] = line_id(line)
    return row


@dataclass
class Pending:
    """The complete lines of the journal from ``start`` to ``end`` (a line boundary)."""

    start: int
    end: int
    rows: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0  # complete lines that are not records


@dataclass
class Cursor:
    """How far the table has got: a byte offset, and the range being added, if any."""

    offset: int = 0
    adding: int | None = None  # set while a batch is between the table and the cursor
    inode: int | None = None
    found: bool = False  # False when there was no readable cursor file


class HistoryJournal:
    """``<workspace>/memory/history.jsonl`` and its cursor, shared by every process."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        folder = self.root / JOURNAL_DIR
        self.path = folder / JOURNAL_FILE
        self.cursor_path = folder / CURSOR_FILE
        self.quarantine_path = folder / QUARANTINE_FILE
        # Every file here is opened through safe_open: never through a link, never a FIFO.
        self._append_lock = WorkspaceLock(self.root, f"{JOURNAL_DIR}/{JOURNAL_FILE}.lock")
        self._ingest_lock = WorkspaceLock(self.root, f"{JOURNAL_DIR}/history.ingest.lock")

    # -- writing ------------------------------------------------------------
    def append(self, records: Iterable[dict[str, Any]]) -> None:
        """Redact and durably append records (role, text, createdAt, run and ids)."""
        lines = []
        for record in records:
            body = {name: record.get(name) for name in FIELDS}
            body["text"] = redact_text(str(record.get("text") or ""))
            body["createdAt"] = _stamp(record.get("createdAt") or datetime.now(timezone.utc))
            lines.append(json.dumps(body, ensure_ascii=False, separators=(",", ":")) + "\n")
        if not lines:
            return
        data = "".join(lines).encode("utf-8")
        with self._append_lock:
            fd = open_fd(self.root, self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND,
                         create_folders=True)
            try:
                self._heal(fd)
                _write_all(fd, data)
            finally:
                os.close(fd)

    def _heal(self, fd: int) -> None:
        """Under the append lock: move an unterminated last line aside (a torn write)."""
        size = os.fstat(fd).st_size
        if size == 0 or read_at(fd, size - 1, 1) == b"\n":
            return
        start, torn = next(lines_backward(fd, size))
        entry = {"quarantined_at": _stamp(datetime.now(timezone.utc)), "offset": start,
                 "size": len(torn), "sha256": hashlib.sha256(torn).hexdigest(),
                 "reason": "a torn write: the last line has no newline",
                 "base64": base64.b64encode(torn).decode("ascii")}
        quarantine = open_fd(self.root, self.quarantine_path,
                             os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            _write_all(quarantine, (json.dumps(entry) + "\n").encode("ascii"))
        finally:
            os.close(quarantine)
        os.ftruncate(fd, start)
        os.fsync(fd)
        log.warning("history journal: moved a torn last line (%d bytes at offset %d) to %s",
                    len(torn), start, self.quarantine_path.name)

    # -- reading ------------------------------------------------------------
    def read(self, start: int = 0, max_lines: int | None = None) -> Pending:
        """The complete lines from byte ``start`` on (an unterminated last line is left)."""
        pending = Pending(start, start)
        try:
            handle = os.fdopen(open_fd(self.root, self.path, os.O_RDONLY), "rb")
        except FileNotFoundError:
            return pending
        with handle:
            handle.seek(start)
            for line in handle:
                if not line.endswith(b"\n"):
                    break  # being written now, or torn: the next appender heals it
                pending.end += len(line)
                row = parse_line(line) if line.strip() else None
                if row is not None:
                    pending.rows.append(row)
                elif line.strip():
                    pending.skipped += 1
                if max_lines is not None and len(pending.rows) >= max_lines:
                    break
        return pending

    def pending(self) -> bool:
        """Whether the journal holds lines the table has not got (cheap: two small reads)."""
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return False
        cursor = self.cursor()
        return stat.st_size != cursor.offset or stat.st_ino != cursor.inode

    def cursor(self) -> Cursor:
        """The persisted cursor (offset 0, not found, when there is none or it is unreadable)."""
        try:
            value = json.loads(read_bytes(self.root, self.cursor_path, 4096))
            adding = value.get("adding")
            return Cursor(int(value["offset"]), None if adding is None else int(adding),
                          value.get("inode"), True)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return Cursor()

    def _save_cursor(self, cursor: Cursor) -> None:
        """Replace the cursor file atomically (write, fsync, rename, fsync the folder)."""
        data = json.dumps({"offset": cursor.offset, "adding": cursor.adding,
                           "inode": cursor.inode}).encode("ascii")
        write_atomic(self.root, self.cursor_path, data, fsync=True)

    @contextmanager
    def _ingesting(self) -> Iterator[Cursor]:
        with folder_fd(self.root, JOURNAL_DIR, create=True), self._ingest_lock:
            cursor = self.cursor()
            try:
                inode = self.path.stat().st_ino
                size = self.path.stat().st_size
            except FileNotFoundError:
                inode, size = None, 0
            if cursor.found and (cursor.inode != inode or size < cursor.offset):
                # The journal was replaced (deleted, restored, copied): read it from
                # the start; ids drop whatever the table already has.
                log.warning("history journal: %s was replaced; reading it again from the "
                            "start", self.path.name)
                cursor = Cursor(0, adding=size, inode=inode, found=True)
            cursor.inode = inode
            yield cursor

    def ingest(self, add: Callable[[list[dict[str, Any]]], None],
               known: Callable[[list[str]], set[str]]) -> int:
        """Give every pending line to ``add`` in batches; returns how many rows were added.

        ``known(ids)`` says which ids the table already has; it is asked only
        when a previous ingestion may have stopped between its add and its
        cursor (or there was no cursor), so an ordinary ingestion is one add.
        """
        added = 0
        with self._ingesting() as cursor:
            # Lines up to here may be in the table already (see the module's docstring).
            doubtful = cursor.adding if cursor.found else None
            if not cursor.found:
                doubtful = self.path.stat().st_size if self.path.exists() else 0
            while True:
                batch = self.read(cursor.offset, BATCH_LINES)
                if batch.end == cursor.offset:
                    if not cursor.found or cursor.adding is not None:
                        cursor.adding, cursor.found = None, True
                        self._save_cursor(cursor)
                    return added
                rows = batch.rows
                if rows and doubtful is not None and batch.start < doubtful:
                    have = known([row["id"] for row in rows])
                    rows = [row for row in rows if row["id"] not in have]
                if batch.skipped:
                    log.warning("history journal: skipped %d unreadable lines", batch.skipped)
                if rows:
                    cursor.adding = batch.end
                    self._save_cursor(cursor)
                    add(rows)
                    added += len(rows)
                cursor.offset, cursor.adding, cursor.found = batch.end, None, True
                self._save_cursor(cursor)


def _write_all(fd: int, data: bytes) -> None:
    """Write every byte and fsync; on failure the file is cut back to where it was."""
    try:
        append_all(fd, data)
    except AppendFailed as exc:
        if not exc.removed:  # the next appender moves the partial line aside
            log.warning("history journal: %s", exc.undone)
        raise
