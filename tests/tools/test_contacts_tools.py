"""The contact tools as a model calls them: spec 003's arguments, defaults, normalisation,
the disabled texts, and a ranking that decides and sends nothing."""

from __future__ import annotations

import base64
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from tool_helpers import call_tool as call

from agent_kernel import Agent
from agent_kernel.organiser.contacts import Contact
from agent_kernel.organiser.ranking import Candidate, parse_window, rank, uuid7
from agent_kernel.tools import contacts


@pytest.fixture(autouse=True)
def limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(contacts, "LIMITS", contacts.ContactsLimits())


@pytest.fixture
def agent(tmp_path: Path) -> Agent:
    return Agent(workspace=tmp_path / "ws")


async def fails(agent: Agent, name: str, **arguments: Any) -> str:
    with pytest.raises(Exception) as caught:  # noqa: PT011 - the text is what is checked
        await call(agent, name, **arguments)
    return str(caught.value)


def test_the_schemas_are_the_specs(agent: Agent) -> None:
    upsert = agent.registry.get("contacts_upsert").parameters
    assert set(upsert["properties"]) == {
        "contact_id", "kind", "status", "contact_nickname", "persona_brief", "persona_traits",
        "pronouns", "timezone", "preference_context", "subject_id", "understanding_depth",
        "topic_weights", "reciprocity_norm", "addresses"}  # addresses: ours (docs)
    assert upsert["required"] == []
    listed = agent.registry.get("contacts_list").parameters["properties"]
    assert (listed["status"]["default"], listed["limit"]["default"]) == ("all", 0)
    ranked = agent.registry.get("contacts_candidate_rank").parameters["properties"]
    assert set(ranked) == {"limit", "freshness_window", "max_linked_history_items",
                           "human_public_send_enabled", "push_topic"}
    assert ranked["max_linked_history_items"]["default"] == 4
    assert ranked["push_topic"]["default"] == "share.proactive.v1"


async def test_upsert_and_list(agent: Agent) -> None:
    made = await call(agent, "contacts_upsert", subject_id="tg:@alice",
                      contact_nickname="Alice", timezone="Asia/Shanghai",
                      understanding_depth=140, reciprocity_norm=1.5,
                      topic_weights={"jazz": 0.9, "go": 3})
    assert made["contact_id"] == "tg:@alice" and made["status"] == "active"
    assert made["kind"] == "human" and made["timezone"] == "Asia/Shanghai"
    assert (made["understanding_depth"], made["reciprocity_norm"]) == (100.0, 1.0)
    assert made["topic_weights"] == {"jazz": 0.9, "go": 1.0}
    again = await call(agent, "contacts_upsert", contact_id="tg:@alice", timezone="Mars/Base",
                       status="inactive")
    assert again["timezone"] == "" and again["contact_nickname"] == "Alice"
    await call(agent, "contacts_upsert", contact_id="agent:helper", kind="agent")
    every = await call(agent, "contacts_list")
    assert [c["contact_id"] for c in every] == ["tg:@alice", "agent:helper"]
    assert set(every[0]) >= {"contact_id", "kind", "status", "contact_nickname",
                             "persona_brief", "persona_traits", "pronouns", "timezone",
                             "preference_context", "subject_id", "node_id", "peer_id",
                             "addresses", "understanding_depth", "topic_weights",
                             "reciprocity_norm", "created_at", "updated_at",
                             "last_shared_at"}
    assert [c["contact_id"] for c in await call(agent, "contacts_list", status="active")] == \
        ["agent:helper"]
    assert len(await call(agent, "contacts_list", limit=1)) == 1
    assert len(await call(agent, "contacts_list", limit=-1)) == 2


async def test_upsert_errors(agent: Agent) -> None:
    assert await fails(agent, "contacts_upsert", contact_nickname="x") == \
        "contact_id or subject_id is required"
    assert await fails(agent, "contacts_upsert", contact_id="tg:1", kind="robot") == \
        "invalid kind: robot (use agent or human)"
    assert await fails(agent, "contacts_upsert", contact_id="tg:1", status="away") == \
        "invalid status: away (use active or inactive)"
    assert await fails(agent, "contacts_list", status="gone") == \
        "invalid status: gone (use all, active or inactive)"
    assert await call(agent, "contacts_list") == []


async def test_each_tool_can_be_turned_off(agent: Agent) -> None:
    contacts.LIMITS.upsert_enabled = False
    contacts.LIMITS.list_enabled = False
    contacts.LIMITS.candidate_rank_enabled = False
    assert await fails(agent, "contacts_upsert", contact_id="tg:1") == \
        "contacts_upsert tool is disabled"
    assert await fails(agent, "contacts_list") == "contacts_list tool is disabled"
    assert await fails(agent, "contacts_candidate_rank") == \
        "contacts_candidate_rank tool is disabled"


def test_durations_and_session_ids() -> None:
    assert parse_window("72h") == timedelta(hours=72)
    assert parse_window("1h30m") == timedelta(minutes=90)
    assert parse_window("3d") == timedelta(days=3)
    for bad in ("", "soon", "-1h", "0h", "72"):
        with pytest.raises(ValueError, match="invalid freshness_window"):
            parse_window(bad)
    first, second = uuid7(), uuid7()
    assert first[14] == "7" and second[14] == "7" and first[19] in "89ab"
    assert first != second


NOW = datetime(2026, 11, 26, 12, 0, tzinfo=timezone.utc)


def _rank(people: list[Contact], pool: list[Candidate], **options: Any) -> Any:
    settings = {"now": NOW, "window": timedelta(hours=72), "limit": 3, "max_linked": 4,
                "human_public_send_enabled": False, **options}
    return rank(people, pool, **settings)


def test_the_ranking_follows_topics_freshness_and_the_share_state() -> None:
    jazz = Candidate("m1", "A new jazz club opened downtown", NOW - timedelta(hours=2),
                     ["jazz"])
    old = Candidate("m2", "Jazz festival line-up", NOW - timedelta(hours=70), ["jazz"])
    stale = Candidate("m3", "Last month's jazz news", NOW - timedelta(days=20), ["jazz"])
    go = Candidate("m4", "Go 1.30 is out", NOW - timedelta(hours=1), ["go"])
    alice = Contact("tg:@alice", topic_weights={"jazz": 0.9}, reciprocity_norm=0.8)
    bob = Contact("tg:1001", topic_weights={"go": 0.4})
    quiet = Contact("tg:1002", status="inactive")
    resting = Contact("tg:1003", cooldown_until="2026-11-27T00:00:00Z")
    group = Contact("human:club", addresses=["tg:-100123"])
    result = _rank([alice, bob, quiet, resting, group], [jazz, old, stale, go])
    assert [d["contact_id"] for d in result["decisions"]] == ["tg:@alice", "tg:1001"]
    first = result["decisions"][0]
    assert first["item_id"] == "m1" and first["linked_history_ids"] == ["m2"]
    assert first["topic"] == "share.proactive.v1" and first["target"] == "tg:@alice"
    assert first["content_type"] == "application/json"
    envelope = json.loads(base64.urlsafe_b64decode(first["payload_base64"] + "=="))
    assert envelope["text"] == "A new jazz club opened downtown"
    assert set(envelope) == {"message_id", "text", "sent_at"}
    assert first["session_id"][14] == "7"
    assert first["reasons"]["topic_fit"] == 0.9
    assert result["count"] == 2
    # a public target is allowed only when asked for; the last item shared is not offered
    shown = _rank([group], [jazz], human_public_send_enabled=True, push_topic="dm.checkin.v1")
    assert shown["decisions"][0]["target"] == "tg:-100123"
    assert shown["decisions"][0]["chat_id"] == "-100123"
    assert shown["decisions"][0]["topic"] == "dm.checkin.v1"
    alice.last_shared_item_id = "m1"
    alice.last_shared_at = "2026-11-26T10:00:00Z"
    again = _rank([alice], [jazz, old], limit=1)["decisions"][0]
    assert again["item_id"] == "m2" and again["reasons"]["recently_shared"] is True
    assert _rank([alice, bob], [jazz, go], limit=1)["count"] == 1


async def test_the_tool_ranks_the_agents_memories(agent: Agent) -> None:
    await call(agent, "contacts_upsert", contact_id="tg:@alice",
               topic_weights={"jazz": 0.9})
    await call(agent, "remember", content="The jazz club on 5th street opens Friday",
               tags=["jazz"])
    result = await call(agent, "contacts_candidate_rank", freshness_window="24h")
    assert result["count"] == 1
    decision = result["decisions"][0]
    assert decision["contact_id"] == "tg:@alice"
    assert decision["item_preview"].startswith("The jazz club")
    assert await fails(agent, "contacts_candidate_rank", freshness_window="soon") == \
        "invalid freshness_window: 'soon' (a duration such as 72h, 90m or 3d)"
