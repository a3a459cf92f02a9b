"""Reading a ledger file as bytes: what each line is, and where the readable part ends.

The ledger must stay usable whatever bytes end up in its file, so nothing here
trusts them: a line is bytes until it proves to be UTF-8, JSON, an object with
no key twice and a ``hash``. :func:`scan_tail` reads backwards from the end to
the last complete, readable record; whatever follows it is the tail that the
writer moves to quarantine. Only that tail: what lies before the last record
is history, and the ledger never rewrites history.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

GENESIS = "0" * 64
_BLOCK = 4096


class AppendFailed(OSError):
    """Appending failed; ``removed`` says whether the partial bytes were cut off again."""

    def __init__(self, cause: OSError, cut_error: OSError | None) -> None:
        super().__init__(str(cause))
        self.removed = cut_error is None
        self.undone = ("the partial write was removed; the file is as it was" if self.removed
                       else f"the partial write could not be removed ({cut_error}); the next "
                            "append moves it aside")


def append_all(fd: int, data: bytes) -> None:
    """Append every byte of ``data`` and fsync: a whole line or none.

    On a write or fsync error the file is cut back to where it was and
    :class:`AppendFailed` says whether that worked; an interrupt (Ctrl-C in a
    kernel) cuts back a partial line and goes on.
    """
    start = os.lseek(fd, 0, os.SEEK_END)
    view = memoryview(data)
    try:
        while view:
            written = os.write(fd, view)
            if written <= 0:
                raise OSError("write wrote nothing")
            view = view[written:]
        os.fsync(fd)
    except OSError as exc:
        raise AppendFailed(exc, _cut_back(fd, start)) from exc
    except BaseException:
        if view:
            _cut_back(fd, start)
        raise


def _cut_back(fd: int, size: int) -> OSError | None:
    """Truncate ``fd`` to ``size`` and fsync; the error if that failed."""
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    except OSError as exc:
        return exc
    return None


def canonical(value: object) -> bytes:
    """Canonical JSON bytes (keys sorted, no spaces, UTF-8): the same value, the same bytes."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    # surrogatepass: a foreign line may hold a lone surrogate; the writer never does.
    return text.encode("utf-8", "surrogatepass")


def digest(record: dict[str, Any]) -> str:
    """SHA-256 of the record's canonical JSON: every field but ``hash``."""
    return hashlib.sha256(canonical({k: v for k, v in record.items() if k != "hash"})).hexdigest()


def digest_matches(record: dict[str, Any]) -> bool:
    """Whether the record's ``hash`` is its digest (``False`` for anything unhashable)."""
    try:
        return digest(record) == record.get("hash")
    except (ValueError, TypeError, RecursionError):
        return False


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


_JSON_KINDS = {list: "an array", str: "a string", int: "a number", float: "a number",
               bool: "true or false", type(None): "null"}


def load_object(raw: bytes) -> tuple[dict[str, Any] | None, str]:
    """One line as a JSON object, or ``None`` and why not."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 (byte {exc.start + 1} of the line is {raw[exc.start]:#04x})"
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicates)
    except _DuplicateKey as exc:
        return None, f"duplicate key {exc.args[0]!r} (readers could disagree on its value)"
    except (ValueError, RecursionError) as exc:
        return None, f"not valid JSON: {exc}"
    if not isinstance(value, dict):
        return None, f"JSON that is not an object ({_JSON_KINDS.get(type(value), 'a value')})"
    return value, ""


def load_record(raw: bytes) -> tuple[dict[str, Any] | None, str]:
    """One line as a readable record (a JSON object with a hash), or ``None`` and why not."""
    value, why = load_object(raw)
    if value is not None and not isinstance(value.get("hash"), str):
        return None, "record has no hash"
    return value, why


def read_at(fd: int, offset: int, size: int) -> bytes:
    os.lseek(fd, offset, os.SEEK_SET)
    parts = []
    while size > 0:
        chunk = os.read(fd, size)
        if not chunk:
            break
        parts.append(chunk)
        size -= len(chunk)
    return b"".join(parts)


def lines_backward(fd: int, size: int) -> Iterator[tuple[int, bytes]]:
    """``(offset, line)`` from the last line of ``[0, size)`` to the first; lines keep ``\\n``."""
    buf, buf_start, end = b"", size, size
    while end > 0:
        while True:
            # the newline ending the line before this one is the last one before end - 1
            cut = buf.rfind(b"\n", 0, max(end - 1 - buf_start, 0))
            if cut >= 0 or buf_start == 0:
                break
            step = min(max(_BLOCK, len(buf)), buf_start)  # doubling: long lines stay linear
            buf_start -= step
            buf = read_at(fd, buf_start, step) + buf
        start = buf_start + cut + 1 if cut >= 0 else 0
        yield start, buf[start - buf_start:end - buf_start]
        end = start


def lines_forward(handle: IO[bytes], size: int) -> Iterator[tuple[int, bytes]]:
    """``(offset, line)`` for each line of the first ``size`` bytes; lines keep ``\\n``."""
    offset = 0
    for raw in handle:
        if offset >= size:
            return
        raw = raw[:size - offset]
        yield offset, raw
        offset += len(raw)


def is_blank(raw: bytes) -> bool:
    return raw.endswith(b"\n") and not raw.strip()


@dataclass
class Tail:
    """Where the last complete, readable record ends and what lies after it."""

    size: int
    good_end: int = 0
    last_hash: str = GENESIS
    needs_newline: bool = False  # the last line is a whole, chained record without its "\n"
    damaged: bool = False  # bytes after good_end that are not blank lines


def scan_tail(fd: int, size: int) -> Tail:
    """Find the tail after the last complete readable record (cheap when there is none)."""
    tail = Tail(size=size, good_end=size)
    pending: dict[str, Any] | None = None  # an unterminated last line that is a record
    first = True
    for start, raw in lines_backward(fd, size):
        if is_blank(raw):
            continue
        record, _ = load_record(raw)
        if record is not None and raw.endswith(b"\n"):
            if pending is not None and pending.get("prev_hash") == record["hash"]:
                tail.last_hash, tail.needs_newline, tail.damaged = pending["hash"], True, True
                return tail
            tail.good_end, tail.last_hash = start + len(raw), record["hash"]
            return tail
        whole = first and record is not None and digest_matches(record)
        pending = record if whole else None
        first = False
        tail.damaged = True
    tail.good_end = 0
    if pending is not None and pending.get("prev_hash") == GENESIS:
        tail.good_end, tail.last_hash, tail.needs_newline = size, pending["hash"], True
    return tail
