"""The ledger: an append-only, hash-chained record of everything the agent did.

Every tool call (success or failure), every decision logged with
``log_decision`` and every approval is one JSON line in ``ledger.jsonl``.
Each record carries the hash of the record before it and its own hash over
its canonical JSON, so :meth:`Ledger.verify` can re-derive the chain and
name the first record that was changed, removed or moved.

Appends from several processes are serialised by a lock file; under the lock
the writer reads the last hash from the end of the file, writes one line and
fsyncs it before the caller hears back, so a record is on disk before its
result reaches the model. Strings that look like API keys are redacted
before anything is written.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from filelock import FileLock

GENESIS = "0" * 64
LEDGER_FILE = "ledger.jsonl"

_SECRET_PATTERNS = [
    re.compile(r"sk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_\-]{16,}"),
    re.compile(r"AKIA[0-9A-Z]{16}"),
    re.compile(r"gh[pousr]_[A-Za-z0-9]{30,}"),
    re.compile(r"xox[abprs]-[A-Za-z0-9\-]{10,}"),
    re.compile(r"AIza[0-9A-Za-z_\-]{35}"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._\-]{16,}"),
]
_SECRET_KEY_NAMES = re.compile(r"(?i)(api[_-]?key|secret|password|token|authorization)")
REDACTED = "[REDACTED]"


def redact(value: Any) -> Any:
    """Return ``value`` with API-key-like strings and secret-named fields masked."""
    if isinstance(value, str):
        for pattern in _SECRET_PATTERNS:
            if pattern.groups:
                value = pattern.sub(lambda m: m.group(1) + REDACTED, value)
            else:
                value = pattern.sub(REDACTED, value)
        return value
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if isinstance(key, str) and _SECRET_KEY_NAMES.search(key) and isinstance(item, str):
                out[key] = REDACTED if item else item
            else:
                out[key] = redact(item)
        return out
    if isinstance(value, (list, tuple)):
        return [redact(item) for item in value]
    return value


def now_iso() -> str:
    """The current UTC time as ISO 8601 with a ``Z``."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_id(prefix: str) -> str:
    """An id like ``rec_20260210_173000_1a2b3c4d``: sortable by time, unique by chance."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d_%H%M%S")
    return f"{prefix}_{stamp}_{secrets.token_hex(4)}"


def _jsonable(value: Any) -> Any:
    """Make ``value`` JSON-safe, falling back to ``repr`` for foreign objects."""
    return json.loads(json.dumps(value, default=repr))


def _digest(record: dict[str, Any]) -> str:
    body = {k: v for k, v in record.items() if k != "hash"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass
class VerifyResult:
    """The outcome of :meth:`Ledger.verify`."""

    ok: bool
    count: int
    bad_index: int | None = None
    bad_record_id: str | None = None
    reason: str | None = None

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        if self.ok:
            return f"ledger ok: {self.count} records verify"
        return (
            f"ledger broken at record #{self.bad_index} "
            f"({self.bad_record_id or 'unreadable'}): {self.reason}"
        )


class Ledger:
    """Append-only JSON-lines ledger with a hash chain, safe across processes."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = FileLock(str(self.path) + ".lock")

    def _last_hash(self, handle: Any) -> str:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        if size == 0:
            return GENESIS
        block = 4096
        data = b""
        pos = size
        while pos > 0:
            step = min(block, pos)
            pos -= step
            handle.seek(pos)
            data = handle.read(step) + data
            lines = data.rstrip(b"\n").split(b"\n")
            if len(lines) > 1 or pos == 0:
                last = lines[-1]
                try:
                    return str(json.loads(last)["hash"])
                except (ValueError, KeyError) as exc:
                    raise LedgerError(
                        f"the last ledger line is unreadable ({exc}); run verify()"
                    ) from exc
        return GENESIS

    def append(self, record: dict[str, Any]) -> dict[str, Any]:
        """Redact, chain and durably write one record; returns it with its hash."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        body = _jsonable(redact(record))
        body.setdefault("record_id", new_id("rec"))
        body.setdefault("timestamp", now_iso())
        with self._lock, open(self.path, "a+b") as handle:
            body["prev_hash"] = self._last_hash(handle)
            body["hash"] = _digest(body)
            line = json.dumps(body, ensure_ascii=False, separators=(",", ":")) + "\n"
            handle.seek(0, os.SEEK_END)
            handle.write(line.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        return body

    def record_tool_call(
        self,
        *,
        agent_id: str,
        run_id: str,
        tool_name: str,
        arguments: Any,
        result: Any,
        success: bool,
        error: str | None,
        duration_ms: int,
        timestamp: str | None = None,
    ) -> dict[str, Any]:
        """Append a tool-call record with spec 001's fields."""
        return self.append(
            {
                "kind": "tool_call",
                "record_id": new_id("rec"),
                "agent_id": agent_id,
                "run_id": run_id,
                "tool_name": tool_name,
                "arguments": arguments,
                "result": result,
                "success": success,
                "error": error,
                "timestamp": timestamp or now_iso(),
                "duration_ms": duration_ms,
            }
        )

    def record_decision(
        self, *, agent_id: str, run_id: str, reasoning: str, decision_type: str
    ) -> dict[str, Any]:
        """Append a ``log_decision`` record (spec 001's decision log structure)."""
        return self.append(
            {
                "kind": "decision",
                "record_id": new_id("rec"),
                "decision_id": new_id("dec"),
                "agent_id": agent_id,
                "run_id": run_id,
                "reasoning": reasoning,
                "decision_type": decision_type,
                "timestamp": now_iso(),
            }
        )

    def record_event(self, kind: str, **fields: Any) -> dict[str, Any]:
        """Append any other record (approvals, cancellations, trigger firings)."""
        return self.append({"kind": kind, "record_id": new_id("rec"), **fields})

    def records(self) -> list[dict[str, Any]]:
        """All records, oldest first (unreadable lines are skipped; see verify)."""
        if not self.path.exists():
            return []
        out = []
        with open(self.path, encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        continue
        return out

    def verify(self) -> VerifyResult:
        """Re-derive the chain; name the first record that does not fit."""
        if not self.path.exists():
            return VerifyResult(ok=True, count=0)
        previous = GENESIS
        count = 0
        with open(self.path, encoding="utf-8") as handle:
            for index, line in enumerate(handle):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except ValueError as exc:
                    return VerifyResult(False, count, index, None, f"not valid JSON: {exc}")
                record_id = record.get("record_id") if isinstance(record, dict) else None
                if not isinstance(record, dict) or "hash" not in record:
                    return VerifyResult(False, count, index, record_id, "record has no hash")
                if record.get("prev_hash") != previous:
                    return VerifyResult(
                        False,
                        count,
                        index,
                        record_id,
                        "prev_hash does not match the record before it "
                        "(a record was removed, inserted or moved)",
                    )
                if _digest(record) != record["hash"]:
                    return VerifyResult(
                        False, count, index, record_id, "hash does not match the content"
                    )
                previous = record["hash"]
                count += 1
        return VerifyResult(ok=True, count=count)


class LedgerError(RuntimeError):
    """The ledger cannot be appended to safely."""
