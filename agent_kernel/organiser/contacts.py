"""The contacts store: spec 003's ``Contact`` records, one JSON file in the state folder.

``<workspace>/state/contacts.json`` holds every contact, so they survive a restart, move
with the workspace and can be read by a person. The file is rewritten whole (through a
temporary file, never through a link) under a workspace lock, redacted first like
everything the runtime writes. Normalisation is the store's, so every caller gets the
same rules: ``kind`` is ``human`` | ``agent``, ``status`` ``active`` | ``inactive``, a
time zone that is not an IANA name becomes empty, ``understanding_depth`` is clipped to
[0, 100] and every score (``reciprocity_norm``, ``persona_traits``, ``topic_weights``)
to [0, 1]; a missing ``contact_id`` is derived from ``subject_id``.

Who reads what (the seam other rooms rely on):

- ``contacts_send`` (the channels) reads ``contact_id``, ``kind``, ``status``,
  ``contact_nickname`` (to name the person on the approval card), ``addresses`` and
  :meth:`ContactStore.reachable_ids` (where a message may go: ``tg:<chat id>``,
  ``tg:@<username>``, ``maep:<peer_id>``, ``slack:<channel_id>``,
  ``discord:<channel_id>`` from spec 003, and ``email:<address>``, ours, for mail), and
  calls :meth:`ContactStore.record_share` after a send;
- ``todo_update`` reads the active contacts' names and reachable ids (a todo's
  ``Name (ref_id)`` references must be reachable);
- ``contacts_candidate_rank`` reads the scores, ``topic_weights``, ``timezone`` and the
  share state (``last_shared_at``, ``last_interaction_at``, ``cooldown_until``).
"""

from __future__ import annotations

import builtins
import functools
import json
import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from typing import Literal, TypedDict, cast

from agent_kernel.core.safe_open import (
    LockTimeout,
    TooLarge,
    WorkspaceLock,
    read_capped,
    write_atomic,
)
from agent_kernel.core.workspace import Workspace
from agent_kernel.organiser import STATE_DIR

Kind = Literal["human", "agent"]
Status = Literal["active", "inactive"]
KINDS: tuple[Kind, ...] = ("human", "agent")
STATUSES: tuple[Status, ...] = ("active", "inactive")

FILE = f"{STATE_DIR}/contacts.json"
LOCK = f"{STATE_DIR}/.contacts.lock"
MAX_CONTACTS = 2000
MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_TEXT = 4000
"""Longest free text kept in one field (``preference_context`` and the like)."""
MAX_WEIGHTS = 64
DEFAULT_DEPTH = 30.0
DEFAULT_RECIPROCITY = 0.5

REFERENCE_PATTERNS = (
    r"tg:-?\d+",
    r"tg:@[A-Za-z0-9_]+",
    r"maep:[A-Za-z0-9._-]+",
    r"slack:[A-Za-z0-9._:-]+",
    r"discord:[A-Za-z0-9._:-]+",
    r"email:[^@\s()<>,;\"]+@[^@\s()<>,;\"]+\.[^@\s()<>,;\"]+",
)
"""Spec 003's referenceable ids, and ``email:<address>`` (ours, for mail). Patterns as text,
compiled on first use (``re``'s cache), so importing this module stays cheap."""


class ContactError(ValueError):
    """A contact could not be stored (bad input or an unreadable store); the text says why."""


def is_reference_id(text: str) -> bool:
    """True when ``text`` is a referenceable id (``tg:123``, ``tg:@name``, ``maep:peer``,
    ``slack:C1``, ``discord:42``, ``email:a@b.c``)."""
    return any(re.fullmatch(p, text) for p in REFERENCE_PATTERNS)


@functools.cache
def _zones() -> frozenset[str]:
    import zoneinfo

    return frozenset(zoneinfo.available_timezones() - {"localtime", "posixrules", "Factory"})


def normalize_timezone(value: str) -> str:
    """``value`` when it is an IANA time zone name (``Asia/Shanghai``), else ``""``."""
    text = value.strip()
    return text if text in _zones() else ""


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _clip(value: float, low: float, high: float, default: float) -> float:
    if not math.isfinite(value):
        return default
    return min(high, max(low, float(value)))


def _text(value: object, limit: int = MAX_TEXT) -> str:
    return str(value).strip()[:limit] if value is not None else ""


def _weights(value: Mapping[str, object]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, raw in value.items():
        name = str(key).strip()[:100]
        if not name or isinstance(raw, bool) or not isinstance(raw, (int, float)):
            continue
        out[name] = _clip(float(raw), 0.0, 1.0, 0.0)
        if len(out) >= MAX_WEIGHTS:
            break
    return out


ContactJson = dict[str, object]
"""A contact as JSON (``contacts_list``'s elements): :class:`Contact`'s fields by name, so
the fields are written down once, in the dataclass."""


@dataclass
class Contact:
    """One person or agent the agent knows (spec 003's ``Contact``, ``contacts/types.go``)."""

    contact_id: str
    kind: Kind = "human"
    status: Status = "active"
    contact_nickname: str = ""
    persona_brief: str = ""
    persona_traits: dict[str, float] = field(default_factory=dict)
    pronouns: str = ""
    timezone: str = ""
    preference_context: str = ""
    subject_id: str = ""
    node_id: str = ""
    peer_id: str = ""
    addresses: list[str] = field(default_factory=list)
    """Where the contact can be reached, as referenceable ids (``tg:123``, ``email:a@b.c``)."""
    understanding_depth: float = DEFAULT_DEPTH
    topic_weights: dict[str, float] = field(default_factory=dict)
    reciprocity_norm: float = DEFAULT_RECIPROCITY
    created_at: str = ""
    updated_at: str = ""
    last_interaction_at: str = ""
    """When the contact last spoke with the agent (share state)."""
    last_shared_at: str = ""
    """When the agent last sent this contact something (share state, set by a send)."""
    last_shared_item_id: str = ""
    cooldown_until: str = ""
    """No proactive share before this time (share state)."""

    def to_json(self) -> ContactJson:
        """The contact as plain JSON data (the tools' and the file's shape)."""
        return asdict(self)


class ContactUpdate(TypedDict, total=False):
    """The fields ``contacts_upsert`` may set; a field left out keeps its old value."""

    contact_id: str
    kind: str
    status: str
    contact_nickname: str
    persona_brief: str
    persona_traits: Mapping[str, object]
    pronouns: str
    timezone: str
    preference_context: str
    subject_id: str
    understanding_depth: float
    topic_weights: Mapping[str, object]
    reciprocity_norm: float
    addresses: list[str]


def derive_contact_id(subject_id: str, kind: str = "human") -> str:
    """The contact id for a subject: the subject itself when it is a referenceable id
    (``tg:@alice``), else ``<kind>:<subject>`` (``human:alice``)."""
    subject = subject_id.strip()
    return subject if is_reference_id(subject) else f"{kind}:{subject}"


def _check_id(contact_id: str) -> str:
    text = contact_id.strip()
    if not text:
        raise ContactError("contact_id or subject_id is required")
    if len(text) > 200 or any(c.isspace() or ord(c) < 32 for c in text):
        raise ContactError(f"invalid contact_id: {text[:80]!r} (at most 200 characters, "
                           "no spaces)")
    return text


def _addresses(values: list[str]) -> list[str]:
    out: list[str] = []
    for raw in values:
        text = str(raw).strip()
        if not is_reference_id(text):
            raise ContactError(f"invalid address: {text[:80]!r} (use tg:<chat id>, "
                               "tg:@<username>, maep:<peer_id>, slack:<channel_id>, "
                               "discord:<channel_id> or email:<address>)")
        if text not in out:
            out.append(text)
    return out[:20]


def _from_json(raw: Mapping[str, object]) -> Contact:
    """A stored record back to a Contact, normalised again (a hand-edited file is data)."""
    known = {f.name for f in fields(Contact)}
    contact = Contact(contact_id=_check_id(str(raw.get("contact_id") or "")))
    values = {k: v for k, v in raw.items() if k in known and k != "contact_id"}
    _apply(contact, cast(ContactUpdate, values), strict=False)
    for name in ("created_at", "updated_at", "last_interaction_at", "last_shared_at",
                 "last_shared_item_id", "cooldown_until", "node_id", "peer_id"):
        if isinstance(raw.get(name), str):
            setattr(contact, name, _text(raw[name], 200))
    return contact


def _number(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ContactError(f"{name} must be a number")
    return float(value)


def _apply(contact: Contact, update: ContactUpdate, strict: bool = True) -> None:
    """Set the fields ``update`` names, normalised; ``strict`` refuses a bad kind/status
    (a tool call) where a stored file's bad value falls back to the default."""
    if "kind" in update:
        kind = str(update["kind"]).strip().lower()
        if kind in KINDS:
            contact.kind = cast(Kind, kind)
        elif strict:
            raise ContactError(f"invalid kind: {kind} (use agent or human)")
    if "status" in update:
        status = str(update["status"]).strip().lower()
        if status in STATUSES:
            contact.status = cast(Status, status)
        elif strict:
            raise ContactError(f"invalid status: {status} (use active or inactive)")
    for name in ("contact_nickname", "persona_brief", "pronouns", "preference_context",
                 "subject_id"):
        if name in update:
            setattr(contact, name, _text(update[name]))  # type: ignore[literal-required]
    if "timezone" in update:
        contact.timezone = normalize_timezone(_text(update["timezone"], 100))
    if "understanding_depth" in update:
        contact.understanding_depth = _clip(
            _number(update["understanding_depth"], "understanding_depth"), 0.0, 100.0,
            DEFAULT_DEPTH)
    if "reciprocity_norm" in update:
        contact.reciprocity_norm = _clip(
            _number(update["reciprocity_norm"], "reciprocity_norm"), 0.0, 1.0,
            DEFAULT_RECIPROCITY)
    for name in ("persona_traits", "topic_weights"):
        if name in update:
            value = update[name]  # type: ignore[literal-required]
            if not isinstance(value, Mapping):
                raise ContactError(f"{name} must be an object of numbers")
            setattr(contact, name, _weights(value))
    if "addresses" in update:
        contact.addresses = _addresses(list(update["addresses"]))
        peers = [a.removeprefix("maep:") for a in contact.addresses if a.startswith("maep:")]
        if peers:
            contact.peer_id = peers[0]


class ContactStore:
    """The workspace's contacts (``state/contacts.json``): get, list, upsert, reachable ids."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def _lock(self) -> WorkspaceLock:
        return WorkspaceLock(self.workspace.ensure(), LOCK, timeout=10)

    def _read(self) -> builtins.list[Contact]:
        try:
            data = json.loads(read_capped(self.workspace.root, FILE, MAX_FILE_BYTES))
        except FileNotFoundError:
            return []
        except (TooLarge, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ContactError(f"the contacts file {FILE} cannot be read ({exc}); fix or "
                               "move it away, nothing was changed") from None
        items = data.get("contacts") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise ContactError(f"the contacts file {FILE} has no \"contacts\" list; fix or "
                               "move it away, nothing was changed")
        out: builtins.list[Contact] = []
        for raw in items:
            if isinstance(raw, dict):
                try:
                    out.append(_from_json(raw))
                except ContactError:
                    continue  # one broken record costs that record, not the rest
        return out

    def _write(self, contacts: builtins.list[Contact]) -> None:
        from agent_kernel.core.redaction import scrub

        body = {"version": 1, "contacts": [c.to_json() for c in contacts]}
        write_atomic(self.workspace.ensure(), FILE,
                     json.dumps(scrub(body), ensure_ascii=False, indent=2).encode("utf-8"),
                     fsync=True)

    def get(self, contact_id: str) -> Contact | None:
        """The contact with this id, or None."""
        wanted = contact_id.strip()
        return next((c for c in self._read() if c.contact_id == wanted), None)

    def list(self, status: str = "all", limit: int = 0) -> builtins.list[Contact]:
        """Contacts in stored order (oldest first); ``status`` ``all`` | ``active`` |
        ``inactive``; ``limit <= 0`` means all."""
        if status not in ("all", *STATUSES):
            raise ContactError(f"invalid status: {status} (use all, active or inactive)")
        found = [c for c in self._read() if status == "all" or c.status == status]
        return found[:limit] if limit > 0 else found

    def upsert(self, update: ContactUpdate) -> Contact:
        """Create or update one contact; fields ``update`` leaves out keep their value.

        ``contact_id`` or ``subject_id`` is needed; without ``contact_id`` the id is
        derived from ``subject_id`` (:func:`derive_contact_id`)."""
        given = str(update.get("contact_id") or "").strip()
        subject = str(update.get("subject_id") or "").strip()
        if not given and not subject:
            raise ContactError("contact_id or subject_id is required")
        kind = str(update.get("kind") or "human").strip().lower()
        contact_id = _check_id(given or derive_contact_id(subject, kind if kind in KINDS
                                                          else "human"))
        try:
            with self._lock():
                contacts = self._read()
                existing = next((c for c in contacts if c.contact_id == contact_id), None)
                contact = existing or Contact(contact_id=contact_id, created_at=_now())
                changes = cast(ContactUpdate, {k: v for k, v in update.items()
                                               if k != "contact_id"})
                _apply(contact, changes)
                contact.updated_at = _now()
                if existing is None:
                    if len(contacts) >= MAX_CONTACTS:
                        raise ContactError(f"the contacts store is full ({MAX_CONTACTS}); "
                                           "mark old contacts inactive or remove them")
                    contacts.append(contact)
                self._write(contacts)
        except LockTimeout:
            raise ContactError("the contacts store is busy (another process writes it); "
                               "try again") from None
        return contact

    def record_share(self, contact_id: str, item_id: str = "", at: str | None = None) -> None:
        """Note that something was sent to the contact (``last_shared_at``), for the ranking."""
        with self._lock():
            contacts = self._read()
            for contact in contacts:
                if contact.contact_id == contact_id.strip():
                    contact.last_shared_at = at or _now()
                    contact.last_shared_item_id = item_id[:200]
                    self._write(contacts)
                    return
        raise ContactError(f"no contact {contact_id!r}")

    @staticmethod
    def reachable_ids(contact: Contact) -> builtins.list[str]:
        """Where the contact can be reached, as referenceable ids, sorted: its
        ``contact_id`` when referenceable, its ``addresses``, and ``maep:<peer_id>``."""
        ids = {contact.contact_id, *contact.addresses}
        if contact.peer_id:
            ids.add(f"maep:{contact.peer_id}")
        return sorted(i for i in ids if is_reference_id(i))
