"""Trust: approvals of model-written code that can be checked later, against a key not on disk
next to the code.

Code a model wrote (a trigger's condition today) may run only when an approval of *exactly*
that code is on record. An approval is a ledger record carrying ``digest``, the SHA-256 of
canonical JSON of what was approved, and ``mac``, an HMAC-SHA256 of the digest under a
per-user key kept outside the workspace (``<jupyter data dir>/agent_kernel/approval.key``,
32 random bytes, mode 0600). The hash chain alone proves nothing to us: anyone who can write
the workspace (a cloned repository shipping a ``.agent/`` folder, say) can append a record
and recompute every hash. With the key, only approvals made on this machine by this user
count; a workspace copied elsewhere comes back "needs approval". Anything that cannot be
checked (no record, changed code, a broken chain, a missing or unreadable key) is *not*
approved: every failure here fails closed.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .ledger_lines import canonical
from .redaction import scrub

KEY_BYTES = 32
KEY_FILE = "approval.key"


class TrustError(RuntimeError):
    """The approval key cannot be read or made."""


def digest(payload: dict[str, Any]) -> str:
    """SHA-256 (hex) of ``payload`` in its saved, scrubbed form."""
    return hashlib.sha256(canonical(scrub(payload))).hexdigest()


def condition_digest(agent_id: str, condition: dict[str, Any] | None, prompt: str) -> str:
    """The digest of a conditional trigger's code: agent, condition and prompt.

    The prompt is included so a copied approved trigger with another prompt does not
    inherit the approval. Values are scrubbed first, exactly as the trigger store saves
    them, so a trigger whose prompt held a secret still matches after a restore.
    """
    return digest({"what": "condition", "agent_id": agent_id, "condition": condition,
                   "prompt": prompt})


def key_path() -> Path:
    """Where this user's approval key lives (outside every workspace)."""
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / "agent_kernel" / KEY_FILE


def _read_key(path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TrustError(f"cannot read the approval key {path}: {exc}") from None
    if len(data) != KEY_BYTES:
        raise TrustError(f"the approval key {path} is not a {KEY_BYTES}-byte key; delete it "
                         "to make a new one (approvals made with it will need approving again)")
    return data


def load_key(*, create: bool) -> bytes | None:
    """This user's approval key; None when there is none and ``create`` is false.

    A new key is written to a private temporary file (mode 0600) and linked into place,
    so two processes starting at once agree on one key and none ever reads half a key.
    """
    path = key_path()
    if path.exists() or not create:
        return _read_key(path) if path.exists() else None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            path.parent.chmod(0o700)
        tmp = path.with_name(f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        handle = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(handle, secrets.token_bytes(KEY_BYTES))
            os.fsync(handle)
        finally:
            os.close(handle)
        try:
            os.link(tmp, path)  # fails if another process made the key first: use theirs
        except FileExistsError:
            pass
        except OSError:  # no hard links here: an exclusive rename is the next best thing
            if not path.exists():
                os.replace(tmp, path)
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
    except OSError as exc:
        raise TrustError(f"cannot create the approval key {path}: {exc}") from None
    return _read_key(path)


def sign(value: str, key: bytes | None = None) -> str:
    """The HMAC-SHA256 (hex) of a digest under this user's key (made on first use)."""
    key = key if key is not None else load_key(create=True)
    if key is None:
        raise TrustError("no approval key could be made")
    return hmac.new(key, value.encode("ascii"), hashlib.sha256).hexdigest()


def signed(value: str, mac: Any, key: bytes) -> bool:
    """True when ``mac`` is this key's HMAC of the digest ``value``."""
    if not isinstance(mac, str) or not isinstance(value, str):
        return False
    expected = hmac.new(key, value.encode("ascii", "replace"), hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, mac)


class ApprovalBook:
    """The approvals on record in one ledger, checked once and looked up by digest.

    ``reason(digest)`` is None when an approved record of that digest carries a valid mac,
    else a sentence saying why not. The chain is verified on first use (once per restore).
    """

    def __init__(self, ledger: Any) -> None:
        self.ledger = ledger
        self._loaded = False
        self._broken: str | None = None
        self._key: bytes | None = None
        self._key_problem: str | None = None
        self._records: dict[str, list[dict[str, Any]]] = {}

    def _load(self) -> None:
        self._loaded = True
        try:
            verdict = self.ledger.verify()
            records = self.ledger.records() if verdict.ok else []
        except Exception as exc:  # an unreadable ledger approves nothing
            self._broken = f"the ledger could not be read ({type(exc).__name__}: {exc})"
            return
        if not verdict.ok:
            self._broken = (f"the ledger's hash chain is broken ({verdict}); no approval in it "
                            "can be trusted until ledger.jsonl is repaired or set aside")
            return
        try:
            self._key = load_key(create=False)
        except TrustError as exc:
            self._key_problem = str(exc)
        self._index(records)

    def _index(self, records: Iterable[dict[str, Any]]) -> None:
        for record in records:
            if record.get("kind") == "approval" and record.get("decision") == "approved" \
                    and isinstance(record.get("digest"), str):
                self._records.setdefault(record["digest"], []).append(record)

    def reason(self, value: str) -> str | None:
        """None when ``value`` (a digest) was approved on this machine, else why not."""
        if not self._loaded:
            self._load()
        if self._broken:
            return self._broken
        found = self._records.get(value, [])
        if not found:
            return "no approval of this exact condition and prompt is on record"
        if self._key_problem:
            return self._key_problem
        if self._key is None:
            return ("an approval is on record, but this machine has no approval key, so it was "
                    "made elsewhere (a copied workspace) or forged")
        if any(signed(value, r.get("mac"), self._key) for r in found):
            return None
        return ("an approval is on record, but its signature does not match this user's key "
                "(made on another machine or by another user, or forged)")


__all__ = ["ApprovalBook", "TrustError", "condition_digest", "digest",
           "key_path", "load_key", "sign", "signed"]
