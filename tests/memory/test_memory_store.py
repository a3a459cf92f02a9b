"""The memory store on real LanceDB tables with the real default embedding model."""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from agent_kernel.memory.service import MemoryFull, MemoryStore

HOSTILE = [
    "x' OR '1'='1",
    "'; DROP TABLE memories; --",
    "agent') OR (1=1",
    '" OR ""="',
    "\\' OR 1=1 --",
    "content:* OR id IS NOT NULL",
    "%' AND long_term = false AND '%'='",
]


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    return MemoryStore(tmp_path / "ws")


def test_remember_returns_path_id_and_timestamp_and_mirrors(store: MemoryStore) -> None:
    short = store.remember("The staging server restarts every Sunday night",
                           agent_id="a", tags=["ops", "#servers"], run_id="run_1")
    assert short["path"].startswith("memory/") and short["path"].endswith(
        "-the-staging-server-restarts-every-sunday.md")
    assert short["memory_id"].startswith("mem_")
    assert datetime.fromisoformat(short["timestamp"].replace("Z", "+00:00"))
    assert "Sunday night" in (store.root / short["path"]).read_text()
    long = store.remember("Always answer in British English", agent_id="a", long_term=True)
    assert long["path"] == "memory.md"
    text = (store.root / "memory.md").read_text()
    assert long["memory_id"] in text and "British English" in text
    got = store.get(short["memory_id"])
    assert got is not None
    assert got["tags"] == ["ops", "servers"] and got["run_id"] == "run_1"
    assert got["long_term"] is False


def test_paraphrase_recall_with_the_default_embedder(store: MemoryStore) -> None:
    assert store.embedder_name == "all-MiniLM-L6-v2-int8"
    facts = ["I keep a golden retriever called Biscuit",
             "The quarterly tax filing is due on the fifteenth",
             "My flight to Lisbon departs Thursday morning",
             "The database backup runs at midnight",
             "Our office coffee machine is broken"]
    for fact in facts:
        store.remember(fact, agent_id="a")
    # No word shared with the memory it should find.
    hits = store.search("which pet animal lives with me?", agent_id="a", limit=1)
    assert hits[0]["content"] == facts[0]
    hits = store.search("when is my plane to Portugal?", agent_id="a", limit=1)
    assert hits[0]["content"] == facts[2]


def test_keyword_search_finds_exact_words_and_scores_are_ordered(store: MemoryStore) -> None:
    store.remember("Project codename is ZEPHYRINE-42", agent_id="a")
    for i in range(10):
        store.remember(f"Unrelated note {i} about lunch plans", agent_id="a")
    hits = store.search("ZEPHYRINE-42", agent_id="a", limit=3)
    assert hits[0]["content"] == "Project codename is ZEPHYRINE-42"
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)


def test_agents_do_not_see_each_others_memories(store: MemoryStore) -> None:
    store.remember("Agent A's secret is blue", agent_id="a")
    store.remember("Agent B's secret is red", agent_id="b")
    assert [h["content"] for h in store.search("secret", agent_id="a", limit=5)] == [
        "Agent A's secret is blue"]
    assert store.count("a") == 1 and store.count("b") == 1 and store.count() == 2


def test_time_and_tag_filters_apply_before_ranking(store: MemoryStore) -> None:
    now = datetime.now(timezone.utc)
    old = now - timedelta(days=10)
    store.remember_many([
        {"content": "Deploy freeze announced for the release", "created_at": old},
        {"content": "Deploy freeze lifted after the release", "tags": ["release"]},
    ], agent_id="a")
    everything = store.search("deploy freeze", agent_id="a", limit=5)
    assert len(everything) == 2
    recent = store.search("deploy freeze", agent_id="a", limit=5,
                          after=(now - timedelta(days=1)).isoformat())
    assert [h["content"] for h in recent] == ["Deploy freeze lifted after the release"]
    older = store.search("deploy freeze", agent_id="a", limit=5,
                         before=(now - timedelta(days=5)).strftime("%Y-%m-%dT%H:%M:%SZ"))
    assert [h["content"] for h in older] == ["Deploy freeze announced for the release"]
    tagged = store.search("announced", agent_id="a", limit=5, tags=["release"])
    assert [h["content"] for h in tagged] == ["Deploy freeze lifted after the release"]
    assert store.search("deploy", agent_id="a", after="2999-01-01") == []
    with pytest.raises(ValueError, match="ISO 8601"):
        store.search("deploy", agent_id="a", after="last tuesday")
    with pytest.raises(ValueError, match="later than before"):
        store.search("deploy", agent_id="a", after="2026-02-01", before="2026-01-01")


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_strings_never_reach_the_filter(store: MemoryStore, hostile: str) -> None:
    store.remember("Only agent a knows this", agent_id="a")
    store.remember("Only agent b knows this", agent_id="b")
    # As a query: searched as text, other agents stay invisible.
    hits = store.search(hostile, agent_id="a", limit=10)
    assert all(h["agent_id"] == "a" for h in hits)
    # As a time, a tag, an id or an agent: refused with a clear message.
    with pytest.raises(ValueError, match="ISO 8601"):
        store.search("knows", agent_id="a", after=hostile)
    with pytest.raises(ValueError, match="ISO 8601"):
        store.search("knows", agent_id="a", before=hostile)
    if any(c in hostile for c in "'\"()%;*\\=") or "--" in hostile:
        with pytest.raises(ValueError, match="not allowed"):
            store.search("knows", agent_id="a", tags=[hostile])
        with pytest.raises(ValueError, match="not allowed"):
            store.remember("tagged", agent_id="a", tags=[hostile])
    with pytest.raises(ValueError, match="not a memory id"):
        store.forget(hostile)
    with pytest.raises(ValueError, match="agent_id"):
        store.search("knows", agent_id=hostile)
    assert store.count() == 2


def test_a_quote_inside_content_and_tags_round_trips(store: MemoryStore) -> None:
    saved = store.remember("Bob's password hint: it's O'Brien's dog", agent_id="a",
                           tags=["bob-s"])
    assert store.get(saved["memory_id"])["content"] == "Bob's password hint: it's O'Brien's dog"
    assert store.search("O'Brien's dog", agent_id="a")[0]["memory_id"] == saved["memory_id"]


def test_content_and_query_limits(store: MemoryStore) -> None:
    assert store.remember("x" * 2000, agent_id="a")["memory_id"]
    with pytest.raises(ValueError, match=r"content exceeds 2000 characters \(got 2001\)"):
        store.remember("x" * 2001, agent_id="a")
    with pytest.raises(ValueError, match="content cannot be empty"):
        store.remember("   ", agent_id="a")
    with pytest.raises(ValueError, match="at most 20 tags"):
        store.remember("many tags", agent_id="a", tags=[f"t{i}" for i in range(21)])
    with pytest.raises(ValueError, match="query cannot be empty"):
        store.search(" ", agent_id="a")


def test_oldest_short_term_memories_are_cleaned_first_long_term_kept(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "ws", max_memories=5)
    kept = store.remember("Long-term rule one", agent_id="a", long_term=True)
    first = store.remember("short one", agent_id="a")
    second = store.remember("short two", agent_id="a")
    for i in range(3):
        store.remember(f"short {i + 3}", agent_id="a")
    assert store.count("a") == 5
    assert store.get(first["memory_id"]) is None  # the oldest short-term one went
    assert not (store.root / first["path"]).exists()
    assert store.get(second["memory_id"]) is not None
    assert store.get(kept["memory_id"]) is not None
    for i in range(4):
        store.remember(f"Long-term rule {i + 2}", agent_id="a", long_term=True)
    # only long-term memories left: spec 001 cleans the oldest, long-term too (no MemoryFull)
    assert [m["content"] for m in store.list(agent_id="a", limit=10)] == [
        f"Long-term rule {i}" for i in (5, 4, 3, 2)] + ["Long-term rule one"]
    six = store.remember("Long-term rule six", agent_id="a", long_term=True)
    assert store.count("a") == 5 and store.get(kept["memory_id"]) is None
    assert store.get(six["memory_id"]) is not None
    assert "Long-term rule one" not in (store.root / "memory.md").read_text()
    assert "Long-term rule six" in (store.root / "memory.md").read_text()
    store.remember("another agent is not affected", agent_id="b")
    assert store.count("a") == 5 and store.count("b") == 1


def test_the_real_limit_of_10000_memories_per_agent(tmp_path: Path) -> None:
    # No vector index here (its own test covers it): this one is about the limit.
    store = MemoryStore(tmp_path / "ws", mirror=False, index_threshold=10**9)
    assert store.max_memories == 10_000
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(10_000, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    start = datetime.now(timezone.utc) - timedelta(days=30)
    items = [{"content": f"bulk memory {i}", "created_at": start + timedelta(seconds=i),
              "long_term": i == 0} for i in range(10_000)]
    for i in range(0, 10_000, 5000):
        store.remember_many(items[i:i + 5000], agent_id="a", vectors=vectors[i:i + 5000])
    assert store.count("a") == 10_000
    store.remember("the ten thousand and first", agent_id="a")
    assert store.count("a") == 10_000
    contents = {m["content"] for m in store.list(agent_id="a", limit=10_000)}
    assert "bulk memory 0" in contents  # long-term, kept
    assert "bulk memory 1" not in contents  # the oldest short-term one, cleaned
    assert "the ten thousand and first" in contents
    with pytest.raises(MemoryFull, match="at once"):
        store.remember_many([{"content": "x"}] * 10_001, agent_id="a", vectors=np.zeros(
            (10_001, 384), dtype=np.float32))


def test_forget_removes_row_and_markdown_entry(store: MemoryStore) -> None:
    keep = store.remember("Keep this long-term fact", agent_id="a", long_term=True)
    drop = store.remember("Drop this long-term fact", agent_id="a", long_term=True)
    short = store.remember("A passing short-term note", agent_id="a")
    assert store.forget(drop["memory_id"], agent_id="a") is True
    assert store.forget(drop["memory_id"], agent_id="a") is False
    assert store.forget(keep["memory_id"], agent_id="someone-else") is False
    text = (store.root / "memory.md").read_text()
    assert "Keep this" in text and "Drop this" not in text
    assert store.forget(short["memory_id"]) is True
    assert not (store.root / short["path"]).exists()


def test_recent_lists_newest_first_within_the_window(store: MemoryStore) -> None:
    now = datetime.now(timezone.utc)
    store.remember_many([{"content": "ten days ago", "created_at": now - timedelta(days=10)},
                         {"content": "two days ago", "created_at": now - timedelta(days=2)}],
                        agent_id="a")
    store.remember("just now", agent_id="a")
    assert [m["content"] for m in store.recent(agent_id="a", days=3)] == [
        "just now", "two days ago"]
    assert [m["content"] for m in store.recent(agent_id="a", days=3, limit=1)] == ["just now"]


def test_keyword_fallback_without_a_model_says_so(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "ws", embedding="none")
    store.remember("The wifi password is on the fridge", agent_id="a")
    store.remember("Dinner is at eight", agent_id="a")
    assert "keywords only" in (store.notice or "")
    assert store.embedder_name == "none (keyword search)"
    assert "vector" not in store.tables.memories().schema.names
    hits = store.search("wifi password", agent_id="a")
    assert [h["content"] for h in hits] == ["The wifi password is on the fridge"]
    assert store.search("router credentials", agent_id="a") == []  # no meaning without a model


def test_table_schema_names_the_registered_function_not_a_path(store: MemoryStore) -> None:
    store.remember("anything", agent_id="a")
    meta = store.tables.memories().schema.metadata[b"embedding_functions"].decode()
    functions = json.loads(meta)
    assert functions[0]["name"] == "agent-kernel-minilm"
    assert "/" not in json.dumps(functions[0]["model"])
    assert "site-packages" not in meta and ".onnx" not in meta
    # A plain LanceDB user can search by text: the registry embeds the query.
    import lancedb

    table = lancedb.connect(str(store.tables.path)).open_table("memories")
    assert table.search("anything").limit(1).to_list()[0]["content"] == "anything"


def test_vector_index_is_built_in_the_background_and_keeps_recall(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "ws", index_threshold=300, mirror=False)
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(400, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store.remember_many([{"content": f"row {i}"} for i in range(400)], agent_id="a",
                        vectors=vectors)
    store.tables.housekeeping.wait(120)
    assert store.tables.has_vector_index
    indexed = {tuple(i.columns) for i in store.tables.memories().list_indices()}
    assert {("agent_id",), ("created_at",), ("content",), ("vector",)} <= indexed
    hits = 0
    for q in vectors[:20] + rng.normal(scale=0.05, size=(20, 384)).astype(np.float32):
        exact = {f"row {j}" for j in np.argsort(-(vectors @ q))[:5]}
        found = store.tables.search("", q, "agent_id = 'a'", 5, ["content"])
        hits += len(exact & {r["content"] for r in found})
    assert hits / 100 >= 0.9


def test_segments_to_merge_is_size_tiered() -> None:
    from agent_kernel.memory.housekeeping import segments_to_merge

    assert segments_to_merge([10_000]) == 0
    assert segments_to_merge([10_000, 100]) == 0            # one delta: nothing to merge
    assert segments_to_merge([10_000, 100, 100]) == 2
    assert segments_to_merge([10_000, 2_000, 100]) == 0     # the big one waits
    assert segments_to_merge([10_000, 2_000, 400, 100]) == 3
    assert segments_to_merge([10_000, 5_000, 400, 100, 100]) == 3  # the trained one never
    sizes = [10_000]
    for _ in range(60):                                     # 60 passes of 100 new rows
        sizes.append(100)
        merged = segments_to_merge(sizes)
        if merged:
            sizes[-merged:] = [sum(sizes[-merged:])]
        assert len(sizes) <= 5
    assert sum(sizes) == 16_000


def test_vector_index_segments_stay_few_as_rows_arrive(tmp_path: Path) -> None:
    from agent_kernel.memory.housekeeping import vector_segments

    store = MemoryStore(tmp_path / "ws", index_threshold=300, mirror=False)
    rng = np.random.default_rng(2)
    vectors = rng.normal(size=(1100, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store.remember_many([{"content": f"row {i}"} for i in range(400)], agent_id="a",
                        vectors=vectors[:400])
    store.tables.housekeeping.wait(120)
    for start in range(400, 1100, 100):                     # each batch is due a full pass
        store.remember_many([{"content": f"row {i}"} for i in range(start, start + 100)],
                            agent_id="a", vectors=vectors[start:start + 100])
        store.tables.housekeeping.wait(120)
        store.maintain()
    table = store.tables.memories()
    found = vector_segments(table)
    assert found is not None
    name, sizes = found
    assert sum(sizes) == 1100 and len(sizes) <= 3, sizes    # not one segment per pass
    assert sizes[0] * 2 >= 1100, sizes                       # retrained once doubled
    assert table.to_lance().stats.index_stats(name)["num_unindexed_rows"] == 0
    hits = 0
    for q in vectors[-20:]:
        exact = {f"row {j}" for j in np.argsort(-(vectors @ q))[:5]}
        found_rows = store.tables.search("", q, "agent_id = 'a'", 5, ["content"])
        hits += len(exact & {r["content"] for r in found_rows})
    assert hits / 100 >= 0.9


def test_removing_old_versions_waits_for_searches_in_progress(store: MemoryStore) -> None:
    store.remember("something to compact", agent_id="a")
    finished = threading.Event()
    with store.tables.rw.reading():
        worker = threading.Thread(target=lambda: (store.maintain(), finished.set()))
        worker.start()
        time.sleep(0.5)
        assert not finished.is_set()  # cleanup waits for the reader
    worker.join(60)
    assert finished.is_set()
    assert store.search("compact", agent_id="a")[0]["content"] == "something to compact"


def fragments(store: MemoryStore) -> int:
    return len(store.tables.memories().to_lance().get_fragments())


def test_single_writes_are_merged_by_the_light_pass_while_searches_go_on(
        tmp_path: Path) -> None:
    from agent_kernel.memory import housekeeping

    store = MemoryStore(tmp_path / "ws", mirror=False)
    for i in range(housekeeping.COMPACT_EVERY - 1):
        store.remember(f"note {i} about the garden", agent_id="a")
    assert fragments(store) == housekeeping.COMPACT_EVERY - 1  # one per write, no pass yet
    store.remember("the fifth note starts the light pass", agent_id="a")
    store.tables.housekeeping.wait(60)
    assert fragments(store) == 1
    assert store.count("a") == housekeeping.COMPACT_EVERY

    for i in range(3):
        store.remember(f"later note {i}", agent_id="a")
    with store.tables.rw.reading():  # a search in progress does not hold compaction up
        assert store.tables.housekeeping.compact()
    assert fragments(store) == 1
    assert {m["content"] for m in store.list(agent_id="a", limit=20)} >= {
        "the fifth note starts the light pass", "later note 2"}
    assert store.search("gardening", agent_id="a", limit=1)[0]["content"].endswith(
        "about the garden")


def test_full_pass_drops_old_versions_and_keeps_every_row(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_kernel.memory import housekeeping

    store = MemoryStore(tmp_path / "ws", mirror=False)
    ids = [store.remember(f"fact number {i}", agent_id="a")["memory_id"] for i in range(8)]
    store.tables.housekeeping.wait(60)
    table = store.tables.memories()
    before = len(table.list_versions())
    assert before > 8
    monkeypatch.setattr(housekeeping, "KEEP_VERSIONS", timedelta(0))
    done = store.maintain()
    assert done == {"vector_index": False, "optimized": True}
    assert len(table.list_versions()) < before
    assert fragments(store) == 1
    assert {m["memory_id"] for m in store.list(agent_id="a", limit=20)} == set(ids)
    assert store.search("fact number 3", agent_id="a", limit=1)[0]["memory_id"] == ids[3]


def test_housekeeping_in_another_process_is_not_repeated(store: MemoryStore) -> None:
    from filelock import FileLock

    store.remember("held elsewhere", agent_id="a")
    with FileLock(str(store.tables.path / ".maintenance.lock")):
        assert store.maintain() == {"vector_index": False, "optimized": False}
        assert store.tables.housekeeping.compact() is False
    assert store.maintain()["optimized"] is True
