"""The contacts store: spec 003's normalisation and constraints, kept across a restart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_kernel.core.workspace import Workspace
from agent_kernel.organiser.contacts import (
    ContactError,
    ContactStore,
    derive_contact_id,
    is_reference_id,
    normalize_timezone,
)


@pytest.fixture
def store(tmp_path: Path) -> ContactStore:
    return ContactStore(Workspace(tmp_path / "ws"))


def test_a_contact_survives_a_new_store_and_keeps_what_an_update_leaves_out(
        store: ContactStore, tmp_path: Path) -> None:
    made = store.upsert({"contact_id": "tg:@alice", "contact_nickname": "Alice",
                         "timezone": "Europe/Paris", "topic_weights": {"jazz": 0.8}})
    assert (made.kind, made.status, made.understanding_depth, made.reciprocity_norm) == \
        ("human", "active", 30.0, 0.5)
    again = ContactStore(Workspace(tmp_path / "ws"))  # a restart: only the file is left
    updated = again.upsert({"contact_id": "tg:@alice", "persona_brief": "short answers"})
    assert updated.contact_nickname == "Alice" and updated.timezone == "Europe/Paris"
    assert updated.topic_weights == {"jazz": 0.8} and updated.persona_brief == "short answers"
    assert updated.created_at == made.created_at
    assert [c.contact_id for c in again.list()] == ["tg:@alice"]
    assert (tmp_path / "ws" / "state" / "contacts.json").is_file()


def test_kind_and_status_are_checked(store: ContactStore) -> None:
    with pytest.raises(ContactError, match="invalid kind: robot"):
        store.upsert({"contact_id": "tg:1", "kind": "robot"})
    with pytest.raises(ContactError, match="invalid status: gone"):
        store.upsert({"contact_id": "tg:1", "status": "gone"})
    assert store.list() == []  # a refused upsert stores nothing
    store.upsert({"contact_id": "tg:1", "kind": "agent", "status": "inactive"})
    assert [c.contact_id for c in store.list("inactive")] == ["tg:1"]
    assert store.list("active") == []


def test_time_zones_must_be_iana_names_or_become_empty() -> None:
    assert normalize_timezone("America/New_York") == "America/New_York"
    for bad in ("UTC+8", "Mars/Olympus", "localtime", "../etc/passwd", "", "asia/shanghai"):
        assert normalize_timezone(bad) == "", bad


def test_scores_are_clipped(store: ContactStore) -> None:
    made = store.upsert({"contact_id": "tg:2", "understanding_depth": 250,
                         "reciprocity_norm": -3, "persona_traits": {"warm": 7, "dry": -1},
                         "topic_weights": {"go": 0.25, "bad": "high"}, "timezone": "Nowhere"})
    assert made.understanding_depth == 100.0 and made.reciprocity_norm == 0.0
    assert made.persona_traits == {"warm": 1.0, "dry": 0.0}
    assert made.topic_weights == {"go": 0.25} and made.timezone == ""
    low = store.upsert({"contact_id": "tg:2", "understanding_depth": -5,
                        "reciprocity_norm": 9})
    assert (low.understanding_depth, low.reciprocity_norm) == (0.0, 1.0)


def test_the_id_comes_from_the_subject_when_missing(store: ContactStore) -> None:
    with pytest.raises(ContactError, match="contact_id or subject_id is required"):
        store.upsert({"contact_nickname": "nobody"})
    assert store.upsert({"subject_id": "tg:@bob"}).contact_id == "tg:@bob"
    assert store.upsert({"subject_id": "bob-42"}).contact_id == "human:bob-42"
    assert derive_contact_id("helper", "agent") == "agent:helper"
    assert store.get("human:bob-42") is not None and store.get("nobody") is None


def test_reachable_ids_are_the_referenceable_ones(store: ContactStore) -> None:
    made = store.upsert({"contact_id": "human:carol",
                         "addresses": ["email:carol@example.org", "tg:42", "maep:peer-1"]})
    assert made.peer_id == "peer-1"
    assert store.reachable_ids(made) == ["email:carol@example.org", "maep:peer-1", "tg:42"]
    with pytest.raises(ContactError, match="invalid address: 'phone:123'"):
        store.upsert({"contact_id": "human:carol", "addresses": ["phone:123"]})
    for good in ("tg:-100123", "tg:@a_b", "maep:x.y-z", "slack:C1:2", "discord:99"):
        assert is_reference_id(good), good
    for bad in ("tg:abc", "tg:@a b", "email:nobody", "slack:", "x:1"):
        assert not is_reference_id(bad), bad


def test_secrets_never_reach_the_file(store: ContactStore, tmp_path: Path) -> None:
    key = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2"
    store.upsert({"contact_id": "tg:3", "preference_context": f"his key is {key}"})
    text = (tmp_path / "ws" / "state" / "contacts.json").read_text()
    assert key not in text and "[REDACTED]" in text


def test_a_broken_file_is_refused_in_words_and_left_alone(store: ContactStore,
                                                          tmp_path: Path) -> None:
    path = tmp_path / "ws" / "state" / "contacts.json"
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    with pytest.raises(ContactError, match="cannot be read"):
        store.upsert({"contact_id": "tg:4"})
    assert path.read_text() == "{not json"
    path.write_text(json.dumps({"contacts": [{"contact_id": "tg:5", "kind": "alien",
                                              "understanding_depth": 900}, {"x": 1}]}))
    (only,) = store.list()
    assert (only.contact_id, only.kind, only.understanding_depth) == ("tg:5", "human", 100.0)


def test_a_share_is_recorded(store: ContactStore) -> None:
    store.upsert({"contact_id": "tg:6"})
    store.record_share("tg:6", "msg-1", at="2026-11-26T05:00:00Z")
    got = store.get("tg:6")
    assert got is not None and got.last_shared_at == "2026-11-26T05:00:00Z"
    with pytest.raises(ContactError, match="no contact"):
        store.record_share("tg:7")
