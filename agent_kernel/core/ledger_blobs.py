"""Large fields of a ledger record, kept beside the ledger in files named by their SHA-256.

One idea governs this module: a record's line stays small, and whatever leaves it
is still held by the chain. When a record (already redacted) would be longer than
``LedgerLimits.line_bytes``, its largest fields move out, largest first, until it
fits. A moved field leaves in the line a short preview and, under the record's
``blobs`` field, the SHA-256 and length of its whole canonical JSON and the name
of the blob file that holds it: ``ledger-blobs/<sha256 of the file's bytes>``.
Since ``blobs`` is inside the hashed record, a blob that is changed, swapped or
removed no longer matches the chain, and ``Ledger.verify`` says so.

A record's blobs together hold at most ``LedgerLimits.blob_bytes``: a field whose
share is smaller than it is cut there (``blob_bytes`` < ``bytes``), and the hash
and length of the whole field are still recorded. So one record adds at most
``blob_bytes`` to ``ledger-blobs/`` and ``line_bytes`` to ``ledger.jsonl``, whatever
a tool returned (:meth:`LedgerLimits.record_bound`).

Blobs are written to a ``.part-`` file, fsynced, renamed to their name and the
folder fsynced *before* the record that names them is written, so a process that
dies at any point leaves at worst a partial file or a blob no record names, never
a record naming a blob that is not whole.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_kernel.core.ledger_lines import canonical
from agent_kernel.core.safe_open import folder_fd, read_bytes

BLOB_DIR = "ledger-blobs"
BLOBS = "blobs"
PARTIAL_PREFIX = ".part-"
# A partial file this old belongs to no write in progress (a write takes milliseconds).
STALE_PARTIAL_SECONDS = 600.0
# Fields that are never moved: the chain, and what names and dates a record.
FIXED_FIELDS = frozenset({"kind", "record_id", "timestamp", "prev_hash", "hash", BLOBS})
_HEX64 = re.compile(r"[0-9a-f]{64}")
_STUB_BYTES = 512  # what one entry under ``blobs`` takes at most (two hashes, two sizes)
_NO_REPAIR = "; repair cannot bring a blob back: restore it from a copy of the workspace"


@dataclass(frozen=True)
class LedgerLimits:
    """How much one record may write; set ``agent_kernel.core.ledger.LIMITS`` or pass ``limits=``.

    ``line_bytes``: the longest line a record writes, its moved fields' previews and
    stubs included; ``preview_bytes``: what a moved field leaves in the line;
    ``blob_bytes``: all blobs of one record together.
    """

    line_bytes: int = 64 * 1024
    preview_bytes: int = 1024
    blob_bytes: int = 2 * 1024 * 1024

    def __post_init__(self) -> None:
        if self.preview_bytes < 64:
            raise ValueError(f"preview_bytes must be at least 64, got {self.preview_bytes}")
        if self.line_bytes < 4 * self.preview_bytes:
            raise ValueError(f"line_bytes must be at least 4 x preview_bytes "
                             f"({4 * self.preview_bytes}), got {self.line_bytes}")
        if self.blob_bytes < 0:
            raise ValueError(f"blob_bytes must be 0 or more, got {self.blob_bytes}")

    def record_bound(self) -> int:
        """The most bytes one record adds to the workspace: its blobs and its line.

        The line stays within ``line_bytes`` because fields are moved until it does and
        what a moved field leaves (its preview and stub) is counted; that holds for any
        record of fewer than ``line_bytes // (preview_bytes + 600)`` fields (40 by
        default; a tool call has 8 to 14).
        """
        return self.blob_bytes + self.line_bytes


@dataclass
class Blob:
    """One moved field's bytes, to be written under its name before the record."""

    name: str
    data: bytes


def preview(text: str, limit: int) -> str:
    """The start of ``text`` whose JSON form in the line takes at most ``limit`` bytes,
    ending with an ellipsis."""
    cut = min(len(text), limit)
    while cut > 0:
        shown = text[:cut] + "…"
        size = len(json.dumps(shown, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        if size <= limit:
            return shown
        cut = min(cut - 1, cut * limit // size)
    return "…"


def spill(body: dict[str, Any], limits: LedgerLimits) -> list[Blob]:
    """Move ``body``'s largest fields out until its line fits; returns the blobs to write.

    ``body`` is changed in place: each moved field becomes its preview (a string's
    start, or the start of any other value's JSON) and gains an entry under ``blobs``:
    ``sha256`` and ``bytes`` of the whole field's canonical JSON, ``blob`` and
    ``blob_bytes`` of the file that holds it (or its first ``blob_bytes``).
    """
    if BLOBS in body:
        raise ValueError(f"{BLOBS!r} is the ledger's own field; a record may not set it")
    data = {k: canonical(v) for k, v in body.items() if k not in FIXED_FIELDS}
    fixed = {k: v for k, v in body.items() if k in FIXED_FIELDS}
    total = len(canonical(fixed)) + sum(len(d) + len(k) + 4 for k, d in data.items()) + 200
    moved: list[str] = []
    for name in sorted(data, key=lambda k: len(data[k]), reverse=True):
        if total <= limits.line_bytes or len(data[name]) <= limits.preview_bytes:
            break
        moved.append(name)
        total -= len(data[name]) - limits.preview_bytes - _STUB_BYTES
    if not moved:
        return []
    blobs: list[Blob] = []
    entries: dict[str, dict[str, Any]] = {}
    budget = limits.blob_bytes
    for done, name in enumerate(sorted(moved, key=lambda k: len(data[k]))):
        whole = data[name]
        kept = whole[:min(len(whole), budget // (len(moved) - done))]
        budget -= len(kept)
        digest = hashlib.sha256(kept).hexdigest()
        entries[name] = {"sha256": hashlib.sha256(whole).hexdigest(), "bytes": len(whole),
                         "blob": digest, "blob_bytes": len(kept)}
        blobs.append(Blob(digest, kept))
        value = body[name]
        text = value if isinstance(value, str) else whole[:4 * limits.preview_bytes].decode(
            "utf-8", "replace")
        body[name] = preview(text, limits.preview_bytes)
    body[BLOBS] = {name: entries[name] for name in moved}
    return blobs


# --- writing ---------------------------------------------------------------------------------

def write_blobs(folder: Path, blobs: list[Blob]) -> None:
    """Write each blob whole under its name (temporary file, fsync, rename, fsync the folder).

    The folder is opened under its parent without following a link (safe_open), so a
    planted ``ledger-blobs`` link is refused. Raises ``OSError``; a partial file of a
    failed write is removed when it can be.
    """
    if not blobs:
        return
    with folder_fd(folder.parent, folder.name, create=True) as parent:
        for blob in blobs:
            partial = f"{PARTIAL_PREFIX}{blob.name[:16]}-{secrets.token_hex(4)}"
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | os.O_CLOEXEC, 0o644, dir_fd=parent)
            try:
                try:
                    view = memoryview(blob.data)
                    while view:
                        view = view[os.write(fd, view):]
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.replace(partial, blob.name, src_dir_fd=parent, dst_dir_fd=parent)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(partial, dir_fd=parent)
                raise
        os.fsync(parent)
    with folder_fd(folder.parent) as above:  # the folder's own name must outlive a crash
        os.fsync(above)


def remove_stale_partials(folder: Path, older_than: float = STALE_PARTIAL_SECONDS) -> list[str]:
    """Remove ``.part-`` files left by writes that died; never a named blob. Their names."""
    removed: list[str] = []
    now = time.time()
    try:
        with folder_fd(folder.parent, folder.name) as fd, os.scandir(fd) as found:
            for entry in found:
                if not entry.name.startswith(PARTIAL_PREFIX):
                    continue
                with contextlib.suppress(OSError):
                    if entry.is_file(follow_symlinks=False) and \
                            now - entry.stat(follow_symlinks=False).st_mtime >= older_than:
                        os.unlink(entry.name, dir_fd=fd)
                        removed.append(entry.name)
    except OSError:  # no folder yet, or a planted link: nothing of ours to remove
        return removed
    return sorted(removed)


# --- checking --------------------------------------------------------------------------------

def _hash_file(path: Path, expected_size: int) -> tuple[int, str] | str:
    """(size, sha256) of a regular file, or why it cannot be read as one."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return "is missing"
    except OSError as exc:
        return f"cannot be opened ({exc.strerror or exc})"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "is not a regular file"
        if info.st_size != expected_size:
            return f"has {info.st_size:,} bytes, not the {expected_size:,} on record"
        hasher = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            hasher.update(chunk)
        return info.st_size, hasher.hexdigest()
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    finally:
        os.close(fd)


def _entry_problem(name: str, entry: object, limit: int | None = None) -> str | None:
    """Why ``entry`` is not a blob entry ``spill`` could have written, or None.

    With ``limit`` (``LedgerLimits.blob_bytes``), a blob longer than it is refused before
    its file is opened: ``spill`` never writes one, and hashing what a planted entry
    names (a sparse file of terabytes costs nothing on disk) would take minutes.
    """
    if not isinstance(entry, dict):
        return f"its blob entry for {name!r} is not an object"
    for key in ("sha256", "blob"):
        if not isinstance(entry.get(key), str) or not _HEX64.fullmatch(entry[key]):
            return f"its blob entry for {name!r} has no valid {key} (64 hex digits)"
    for key in ("bytes", "blob_bytes"):
        if not isinstance(entry.get(key), int) or isinstance(entry[key], bool) or entry[key] < 0:
            return f"its blob entry for {name!r} has no valid {key}"
    if entry["blob_bytes"] > entry["bytes"]:
        return f"its blob entry for {name!r} says the blob is longer than the field"
    if limit is not None and entry["blob_bytes"] > limit:
        return (f"its blob entry for {name!r} names a blob of {entry['blob_bytes']:,} bytes, "
                f"more than the {limit:,} a record may keep (LedgerLimits.blob_bytes): the "
                "ledger never writes one, so it was planted, unless the limit was lowered "
                "after it was written")
    if entry["blob_bytes"] == entry["bytes"] and entry["blob"] != entry["sha256"]:
        return f"its blob entry for {name!r} names a whole blob that is not the field's"
    return None


def check_blobs(folder: Path, record: dict[str, Any], limit: int | None = None,
                seen: dict[tuple[str, int], tuple[int, str] | str] | None = None) -> str | None:
    """None when every blob ``record`` names is whole and unchanged, else why not, in words.

    ``limit``: the most bytes one record's blobs hold together (``LedgerLimits.blob_bytes``);
    an entry or a record past it is refused before any file is read. ``seen``: what was
    found for each (blob, size) already checked, shared across one ``verify`` so that a
    blob many records name is read and hashed once.
    """
    named = record.get(BLOBS)
    if named is None:
        return None
    if not isinstance(named, dict):
        return f"its {BLOBS!r} field is not an object"
    total = 0
    for name, entry in named.items():
        problem = _entry_problem(name, entry, limit)
        if problem is not None:
            return problem
        total += entry["blob_bytes"]
    if limit is not None and total > limit:
        return (f"its blobs hold {total:,} bytes together, more than the {limit:,} a record "
                "may keep (LedgerLimits.blob_bytes): the ledger never writes that, so they "
                "were planted, unless the limit was lowered after they were written")
    for name, entry in named.items():
        shown = f"{BLOB_DIR}/{entry['blob'][:16]}…"
        key = (entry["blob"], entry["blob_bytes"])
        found = seen.get(key) if seen is not None else None
        if found is None:
            found = _hash_file(folder / entry["blob"], entry["blob_bytes"])
            if seen is not None:
                seen[key] = found
        if isinstance(found, str):
            return f"its {name} is kept in {shown}, which {found}{_NO_REPAIR}"
        if found[1] != entry["blob"]:
            return (f"its {name} is kept in {shown}, which was changed (its sha256 is now "
                    f"{found[1][:16]}…){_NO_REPAIR}")
    return None


def read_field(folder: Path, record: dict[str, Any], name: str, limit: int | None = None
               ) -> tuple[Any, bool]:
    """A field of ``record`` as it was written: (value, whole).

    A field kept in the line is returned as it is; a moved one is read from its blob:
    parsed when the blob is whole and matches, else its bytes as text and ``False``
    (a cut blob, or one that is missing or changed: then the preview). An entry naming
    a blob longer than ``limit`` is not followed.
    """
    entry = (record.get(BLOBS) or {}).get(name) if isinstance(record.get(BLOBS), dict) else None
    if entry is None:
        return record.get(name), True
    if _entry_problem(name, entry, limit) is not None:
        return record.get(name), False
    try:
        data = read_bytes(folder.parent, f"{folder.name}/{entry['blob']}")
    except OSError:
        return record.get(name), False
    if hashlib.sha256(data).hexdigest() != entry["blob"]:
        return record.get(name), False
    if entry["blob_bytes"] < entry["bytes"]:
        return data.decode("utf-8", "replace"), False
    return json.loads(data.decode("utf-8", "surrogatepass")), True
