"""``contacts_candidate_rank``: whom a proactive share could go to, and what. Decisions only.

Spec 003 names the knobs (``limit``, ``freshness_window``, ``max_linked_history_items``,
``human_public_send_enabled``, ``push_topic``) and not the formula; this is ours, kept
small enough to explain in one breath (docs/organiser.md says why):

The candidate pool is what the agent wrote down lately (its memories within the
freshness window). For each active contact that can be reached, every candidate gets

    score = (0.50 * topic_fit + 0.20 * freshness + 0.15 * reciprocity_norm
             + 0.15 * understanding_depth / 100) * (0.5 if shared within the window else 1)

- ``topic_fit``: the contact's highest ``topic_weights`` weight among the topics the item
  touches (its tags, or the topic's word in its text); 0.3 when the contact has no
  weights (unknown, not uninterested), 0 when it has weights and none fits;
- ``freshness``: 1 for an item written now, falling linearly to 0 at the window's edge;
- the item the contact was last sent is never offered again, and a contact in its
  ``cooldown_until`` is left out.

Each contact gets its best item; decisions are sorted by score (ties by contact id) and
cut at ``limit``. A human contact whose only addresses are group chats or channels (a
``tg:`` id below zero, ``slack:``, ``discord:``) is left out unless
``human_public_send_enabled``. Nothing is sent and nothing is changed.
"""

from __future__ import annotations

import base64
import json
import os
import re
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TypedDict

from agent_kernel.core.times import parse_iso
from agent_kernel.organiser.contacts import Contact, ContactStore

DEFAULT_PUSH_TOPIC = "share.proactive.v1"
UNKNOWN_FIT = 0.3
WEIGHTS = {"topic_fit": 0.50, "freshness": 0.20, "reciprocity": 0.15, "depth": 0.15}
RECENT_SHARE_FACTOR = 0.5
_DURATION = r"(\d+(?:\.\d+)?)(ms|s|m|h|d)"
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_window(text: str) -> timedelta:
    """A Go-style duration (``72h``, ``1h30m``, ``45m``; ``d`` for days too) as a
    timedelta; ValueError in words when it is not one or not positive."""
    raw = text.strip().lower()
    pos, seconds = 0, 0.0
    for match in re.finditer(_DURATION, raw):
        if match.start() != pos:
            break
        seconds += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if not raw or pos != len(raw) or seconds <= 0:
        raise ValueError(f"invalid freshness_window: {text!r} (a duration such as 72h, "
                         "90m or 3d)")
    return timedelta(seconds=seconds)


def uuid7() -> str:
    """A UUIDv7 (time-ordered), as spec 003's conversational topics want a session id."""
    millis = int(time.time() * 1000) & ((1 << 48) - 1)
    rand = int.from_bytes(os.urandom(10), "big")
    value = (millis << 80) | (0x7 << 76) | ((rand >> 66) & 0xFFF) << 64 \
        | (0b10 << 62) | (rand & ((1 << 62) - 1))
    return str(uuid.UUID(int=value))


@dataclass
class Candidate:
    """Something the agent could share: a memory's id, text, tags and time."""

    item_id: str
    text: str
    created_at: datetime
    tags: list[str] = field(default_factory=list)


class Reasons(TypedDict):
    """Why a decision scored what it did (each part before weighting)."""

    topic_fit: float
    freshness: float
    reciprocity: float
    depth: float
    recently_shared: bool


class Decision(TypedDict):
    """One proposed share: to whom, where, what, and why."""

    contact_id: str
    contact_nickname: str
    kind: str
    target: str
    chat_id: str
    peer_id: str
    item_id: str
    item_preview: str
    topic: str
    score: float
    reasons: Reasons
    content_type: str
    payload_base64: str
    session_id: str
    idempotency_key: str
    linked_history_ids: list[str]


class RankResult(TypedDict):
    """``contacts_candidate_rank``'s result."""

    count: int
    decisions: list[Decision]


def is_public_target(target: str) -> bool:
    """True for a group chat or channel (``tg:-100...``, ``slack:``, ``discord:``)."""
    return target.startswith(("tg:-", "slack:", "discord:"))


def _topics(candidate: Candidate) -> tuple[set[str], str]:
    return {t.strip().lower() for t in candidate.tags if t.strip()}, candidate.text.lower()


def topic_fit(contact: Contact, candidate: Candidate) -> float:
    """The contact's highest weight among the candidate's topics (see the module text)."""
    if not contact.topic_weights:
        return UNKNOWN_FIT
    tags, text = _topics(candidate)
    fits = [w for k, w in contact.topic_weights.items()
            if k.lower() in tags or re.search(rf"\b{re.escape(k.lower())}\b", text)]
    return max(fits, default=0.0)


def _when(text: str) -> datetime | None:
    try:
        return parse_iso(text) if text else None
    except ValueError:
        return None


def _envelope(text: str, now: datetime) -> str:
    body = {"message_id": f"msg_{uuid.uuid4().hex[:16]}", "text": text,
            "sent_at": now.strftime("%Y-%m-%dT%H:%M:%SZ")}
    raw = json.dumps(body, ensure_ascii=False).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def rank(contacts: list[Contact], candidates: list[Candidate], *, now: datetime,
         window: timedelta, limit: int, max_linked: int, human_public_send_enabled: bool,
         push_topic: str = DEFAULT_PUSH_TOPIC) -> RankResult:
    """The decisions, best first (see the module text for the score)."""
    fresh = [c for c in candidates if timedelta(0) <= now - c.created_at <= window
             or c.created_at > now]
    decisions: list[Decision] = []
    for contact in contacts:
        if contact.status != "active":
            continue
        cooldown = _when(contact.cooldown_until)
        if cooldown is not None and cooldown > now:
            continue
        targets = ContactStore.reachable_ids(contact)
        if contact.kind == "human" and not human_public_send_enabled:
            targets = [t for t in targets if not is_public_target(t)]
        if not targets:
            continue
        shared = _when(contact.last_shared_at)
        recently = shared is not None and now - shared <= window
        best: tuple[float, Candidate, Reasons] | None = None
        for item in fresh:
            if item.item_id == contact.last_shared_item_id:
                continue
            age = max(0.0, (now - item.created_at).total_seconds())
            reasons: Reasons = {
                "topic_fit": round(topic_fit(contact, item), 3),
                "freshness": round(max(0.0, 1 - age / window.total_seconds()), 3),
                "reciprocity": contact.reciprocity_norm,
                "depth": round(contact.understanding_depth / 100, 3),
                "recently_shared": recently}
            score = (WEIGHTS["topic_fit"] * reasons["topic_fit"]
                     + WEIGHTS["freshness"] * reasons["freshness"]
                     + WEIGHTS["reciprocity"] * reasons["reciprocity"]
                     + WEIGHTS["depth"] * reasons["depth"])
            score *= RECENT_SHARE_FACTOR if recently else 1.0
            if best is None or score > best[0]:
                best = (score, item, reasons)
        if best is None:
            continue
        score, item, reasons = best
        target = targets[0]
        tags, _ = _topics(item)
        linked = [c.item_id for c in fresh if c.item_id != item.item_id
                  and tags & _topics(c)[0]][:max(0, max_linked)]
        decisions.append({
            "contact_id": contact.contact_id, "contact_nickname": contact.contact_nickname,
            "kind": contact.kind, "target": target,
            "chat_id": target.removeprefix("tg:") if re.fullmatch(r"tg:-?\d+", target)
            else "",
            "peer_id": contact.peer_id, "item_id": item.item_id,
            "item_preview": item.text[:200], "topic": push_topic or DEFAULT_PUSH_TOPIC,
            "score": round(score, 4), "reasons": reasons,
            "content_type": "application/json", "payload_base64": _envelope(item.text, now),
            "session_id": uuid7(),
            "idempotency_key": f"share:{contact.contact_id}:{item.item_id}",
            "linked_history_ids": linked})
    decisions.sort(key=lambda d: (-d["score"], d["contact_id"]))
    chosen = decisions[:limit] if limit > 0 else decisions
    return {"count": len(chosen), "decisions": chosen}


def now_utc() -> datetime:
    """The current time, aware (for :func:`rank`)."""
    return datetime.now(timezone.utc)
