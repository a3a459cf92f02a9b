"""Spec 003's contact tools: ``contacts_upsert``, ``contacts_list``, ``contacts_candidate_rank``.

The store is :class:`agent_kernel.organiser.contacts.ContactStore`
(``state/contacts.json``), which normalises what the model writes (kinds, statuses, IANA
time zones, clipped scores). ``contacts_upsert`` also takes ``addresses`` (ours: the
spec's upsert has no argument for where a contact is reached, so its referenceable
ids, ``tg:<chat id>``, ``tg:@<username>``, ``maep:<peer_id>``, ``slack:<channel_id>``,
``discord:<channel_id>`` and ``email:<address>``, are given here). ``contacts_send``
(which does send, and asks first) is the channels' tool.

``contacts_candidate_rank`` ranks the agent's recent memories against the contacts and
returns decisions only: it sends nothing and changes nothing
(:mod:`agent_kernel.organiser.ranking` explains the score). Writes stay in the agent's
state folder and ask no one (engine/ask_policy.py says why). Each tool has its switch in
``LIMITS`` (spec 003's ``... tool is disabled``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from agent_kernel.core.times import parse_iso
from agent_kernel.engine.registry import Field, Tool, ToolContext, ToolError
from agent_kernel.organiser.contacts import (
    ContactError,
    ContactJson,
    ContactStore,
    ContactUpdate,
)
from agent_kernel.organiser.ranking import (
    DEFAULT_PUSH_TOPIC,
    Candidate,
    RankResult,
    now_utc,
    parse_window,
    rank,
)


@dataclass
class ContactsLimits:
    """Spec 003's ``tools.contacts.*`` and ``contacts.*`` settings; change ``LIMITS``."""

    upsert_enabled: bool = True
    list_enabled: bool = True
    candidate_rank_enabled: bool = True
    rank_limit: int = 3
    """How many decisions ``contacts_candidate_rank`` returns unless told."""
    freshness_window: str = "72h"
    human_public_send_enabled: bool = False
    """Whether a human's group chats and channels may be proposed as targets."""
    max_pool: int = 100
    """How many recent memories the candidate pool holds at most."""


LIMITS = ContactsLimits()


def _disabled(name: str) -> ToolError:
    return ToolError(f"{name} tool is disabled",
                     guidance=f"The person turned {name} off "
                              "(agent_kernel.tools.contacts.LIMITS).")


def contacts_upsert(
    ctx: ToolContext,
    contact_id: str | None = None,
    kind: str | None = None,
    status: str | None = None,
    contact_nickname: str | None = None,
    persona_brief: str | None = None,
    persona_traits: dict[str, float] | None = None,
    pronouns: str | None = None,
    timezone: str | None = None,
    preference_context: str | None = None,
    subject_id: str | None = None,
    understanding_depth: float | None = None,
    topic_weights: dict[str, float] | None = None,
    reciprocity_norm: float | None = None,
    addresses: Annotated[list[str] | None, Field(max_length=20)] = None,
) -> ContactJson:
    """Create or update one contact; fields you leave out keep their value.

    Args:
        contact_id: The contact's stable id (give it when updating).
        kind: agent or human.
        status: active (the default) or inactive.
        contact_nickname: What to call them.
        persona_brief: How they like to interact, briefly.
        persona_traits: Trait weights, each 0..1.
        pronouns: Such as she/her or they/them.
        timezone: An IANA time zone such as Asia/Shanghai (anything else is stored empty).
        preference_context: Longer notes on their preferences.
        subject_id: The person's subject id; the contact id is derived from it when
            contact_id is missing.
        understanding_depth: How well you know them, 0..100 (default 30).
        topic_weights: Topic interest weights, each 0..1.
        reciprocity_norm: Reciprocity score, 0..1 (default 0.5).
        addresses: Where they can be reached: tg:<chat id>, tg:@<username>,
            maep:<peer_id>, slack:<channel_id>, discord:<channel_id> or email:<address>.
    """
    if not LIMITS.upsert_enabled:
        raise _disabled("contacts_upsert")
    given = {"contact_id": contact_id, "kind": kind, "status": status,
             "contact_nickname": contact_nickname, "persona_brief": persona_brief,
             "persona_traits": persona_traits, "pronouns": pronouns, "timezone": timezone,
             "preference_context": preference_context, "subject_id": subject_id,
             "understanding_depth": understanding_depth, "topic_weights": topic_weights,
             "reciprocity_norm": reciprocity_norm, "addresses": addresses}
    update: ContactUpdate = {k: v for k, v in given.items()  # type: ignore[assignment]
                             if v is not None}
    try:
        return ContactStore(ctx.workspace).upsert(update).to_json()
    except ContactError as exc:
        raise ValueError(str(exc)) from None


def contacts_list(ctx: ToolContext, status: str = "all", limit: int = 0) -> list[ContactJson]:
    """List contacts.

    Args:
        status: all, active or inactive.
        limit: At most this many; 0 or less means all.
    """
    if not LIMITS.list_enabled:
        raise _disabled("contacts_list")
    try:
        found = ContactStore(ctx.workspace).list(status.strip().lower() or "all", limit)
    except ContactError as exc:
        raise ValueError(str(exc)) from None
    return [c.to_json() for c in found]


async def _candidates(ctx: ToolContext, days: float) -> list[Candidate]:
    """The agent's memories of the last ``days`` days, as share candidates."""
    from agent_kernel.tools.memory import _with_store

    found = await _with_store(ctx, lambda store: store.recent(
        agent_id=ctx.agent_id, days=days, limit=LIMITS.max_pool))
    out: list[Candidate] = []
    for memory in found:
        when = parse_iso(memory["timestamp"])
        if when is not None and memory["content"].strip():
            out.append(Candidate(memory["memory_id"], memory["content"].strip(), when,
                                 list(memory["tags"])))
    return out


async def contacts_candidate_rank(
    ctx: ToolContext,
    limit: int | None = None,
    freshness_window: str | None = None,
    max_linked_history_items: int = 4,
    human_public_send_enabled: bool | None = None,
    push_topic: str = DEFAULT_PUSH_TOPIC,
) -> RankResult:
    """Rank whom a proactive share could go to, and with what (your recent memories).
    Returns decisions only: nothing is sent and nothing changes.

    Args:
        limit: How many decisions at most (default 3).
        freshness_window: How far back candidates go, as a duration such as 72h.
        max_linked_history_items: Related memory ids per decision (default 4).
        human_public_send_enabled: Whether a person's group chats and channels may be
            proposed.
        push_topic: The topic put in each decision (default share.proactive.v1).
    """
    if not LIMITS.candidate_rank_enabled:
        raise _disabled("contacts_candidate_rank")
    window = parse_window(freshness_window or LIMITS.freshness_window)
    try:
        contacts = ContactStore(ctx.workspace).list("active")
    except ContactError as exc:
        raise ValueError(str(exc)) from None
    pool = await _candidates(ctx, window.total_seconds() / 86400) if contacts else []
    return rank(contacts, pool, now=now_utc(), window=window,
                limit=LIMITS.rank_limit if limit is None else limit,
                max_linked=max_linked_history_items,
                human_public_send_enabled=LIMITS.human_public_send_enabled
                if human_public_send_enabled is None else human_public_send_enabled,
                push_topic=push_topic.strip() or DEFAULT_PUSH_TOPIC)


TOOLS = [Tool(contacts_upsert, source="builtin"), Tool(contacts_list, source="builtin"),
         Tool(contacts_candidate_rank, source="builtin", timeout=120.0)]
