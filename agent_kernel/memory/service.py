"""What the tools, the magic and the Python API ask of memory: remember, search, forget.

:class:`MemoryStore` holds the rules (spec 001's 2000 characters and 10,000
memories per agent, the oldest short-term ones cleaned first; validated
filters; the markdown mirrors) and leaves the tables to
:class:`~agent_kernel.memory.store.LanceTables`. Creating one costs nothing:
lancedb and the embedding model load on the first real call, which the tools
make in a worker thread, never on the event loop. Conversation history is
appended to the history journal (:mod:`.journal`, no lancedb) and brought into
the ``history`` table by the first read that needs it.
"""

from __future__ import annotations

import builtins
import secrets
import threading
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from agent_kernel.core import object_store
from agent_kernel.core.redaction import redact_text
from agent_kernel.memory import filters, markdown
from agent_kernel.memory.filters import (
    check_agent_id,
    check_content,
    check_memory_id,
    check_tags,
    parse_time,
)
from agent_kernel.memory.journal import HistoryJournal

if TYPE_CHECKING:
    from agent_kernel.engine.registry import ToolHost

MEMORY_COLUMNS = ["id", "agent_id", "content", "tags", "created_at", "run_id", "long_term"]
_STORES: dict[tuple[str, str | None, str | None, tuple[tuple[str, str], ...]], MemoryStore] = {}
_RECOUNT_EVERY = 100
_RECOUNT_MARGIN = 500
_stores_lock = threading.Lock()


def new_memory_id(at: datetime) -> str:
    """``mem_YYYYMMDD_HHMMSS_xxxxxxxx`` (the shape spec 001 shows)."""
    return f"mem_{at:%Y%m%d_%H%M%S}_{secrets.token_hex(4)}"


def iso(moment: object) -> str:
    """ISO 8601 in UTC with a trailing Z."""
    text: str = moment.isoformat(timespec="seconds") if hasattr(moment, "isoformat") else str(
        moment)
    return text.replace("+00:00", "Z")


def _through(end: datetime | None) -> datetime | None:
    """An inclusive end: a time given to the second covers that whole second."""
    if end is not None and end.microsecond == 0:
        return end + timedelta(microseconds=999_999)
    return end


class _MemoryFields(TypedDict):
    memory_id: str
    agent_id: str
    content: str
    tags: list[str]
    timestamp: str
    run_id: str | None
    long_term: bool
    path: str


class Memory(_MemoryFields, total=False):
    """One memory as the tools, magics and views see it (``score`` only from a search)."""

    score: float


class MemoryFull(ValueError):
    """More memories in one batch than an agent may keep at all (spec 001's limit)."""


class MemoryStore:
    """Memories and conversation history of every agent in one workspace."""

    def __init__(self, root: str | Path, *, embedding: str | None = None,
                 api_base: str | None = None, max_memories: int = 10_000,
                 max_chars: int = filters.MAX_CHARS, index_threshold: int = 10_000,
                 mirror: bool = True, uri: str | None = None,
                 storage_options: dict[str, str] | None = None) -> None:
        from agent_kernel.memory.store import LanceTables

        self.root = Path(root)
        self.max_memories = max_memories
        self.max_chars = max_chars
        self.mirror = mirror
        # The tables at an object-store URI (shared by every kernel and worker given it)
        # or in the workspace; checked here too, so no credential is ever held or shown.
        uri = object_store.check_uri(uri) if uri else None
        self.tables = LanceTables(self.root, embedding, api_base, index_threshold, uri=uri,
                                  storage_options=object_store.check_options(storage_options))
        self.journal = HistoryJournal(self.root)
        self._counts: dict[str, tuple[int, int]] = {}

    @classmethod
    def for_workspace(cls, root: str | Path, embedding: str | None = None, *,
                      uri: str | None = None,
                      storage_options: dict[str, str] | None = None) -> MemoryStore:
        """One shared store per workspace folder (and memory URI) in this process."""
        key = (str(Path(root).resolve()), embedding, uri or None,
               tuple(sorted((storage_options or {}).items())))
        with _stores_lock:
            if key not in _STORES:
                _STORES[key] = cls(root, embedding=embedding, uri=uri,
                                   storage_options=storage_options)
            return _STORES[key]

    @property
    def where(self) -> str:
        """Where the tables are, in words safe to show (no credential is ever in them)."""
        return (object_store.describe(self.tables.uri, self.tables.storage_options)
                if self.tables.remote else str(self.tables.path))

    def __repr__(self) -> str:
        return f"MemoryStore({self.where!r})"

    # -- status -------------------------------------------------------------
    @property
    def notice(self) -> str | None:
        """Why search is keyword-only (or uses another model than configured), if it is."""
        self.tables.memories()
        return self.tables.notice

    @property
    def loaded(self) -> bool:
        """Whether the first use's loading (LanceDB, the table, the embedding model) is done."""
        return self.tables.opened and getattr(self.tables.embedder, "loaded", True)

    def load(self) -> None:
        """Do the first use's loading now (seconds, the first time in a process), so a
        caller can say so before and after: importing LanceDB, opening the table, and
        loading the embedding model when it is a local one."""
        self.tables.memories()
        load = getattr(self.tables.embedder, "load", None)
        if callable(load):
            load()

    @property
    def embedder_name(self) -> str:
        """The embedding model in use, or ``none (keyword search)``."""
        self.tables.memories()
        return self.tables.embedder.name if self.tables.embedder else "none (keyword search)"

    def _embed(self, texts: list[str]) -> Any:
        self.tables.memories()
        embedder = self.tables.embedder
        return None if embedder is None else embedder.embed(texts)

    # -- writing ------------------------------------------------------------
    def remember(self, content: str, *, agent_id: str, tags: Iterable[str] | None = None,
                 long_term: bool = False, run_id: str | None = None) -> dict[str, Any]:
        """Store one memory; returns ``{path, memory_id, timestamp}``."""
        return self.remember_many([{"content": content, "tags": tags, "long_term": long_term}],
                                  agent_id=agent_id, run_id=run_id)[0]

    def remember_many(self, items: Sequence[dict[str, Any]], *, agent_id: str,
                      run_id: str | None = None, vectors: object = None,
                      mirror: bool | None = None) -> list[dict[str, Any]]:
        """Store several memories in one batch (one embedding call, one table write).

        ``vectors`` may carry precomputed embeddings (benchmarks, bulk imports);
        ``mirror=False`` skips the markdown files for a bulk load.
        """
        from agent_kernel.memory.store import utcnow

        check_agent_id(agent_id)
        rows: list[dict[str, Any]] = []
        now = utcnow()
        for offset, item in enumerate(items):
            # What is stored is what may be kept: a remembered secret becomes [REDACTED]
            # in the table, the mirror and the mirror's file name alike.
            content = redact_text(check_content(item["content"], self.max_chars))
            at = item.get("created_at") or now + timedelta(microseconds=offset)
            tags = [redact_text(t) for t in check_tags(item.get("tags"))]
            rows.append({"id": new_memory_id(at), "agent_id": agent_id, "content": content,
                         "tags": tags, "created_at": at,
                         "run_id": item.get("run_id", run_id),
                         "long_term": bool(item.get("long_term"))})
        if not rows:
            return []
        if self.mirror if mirror is None else mirror:
            for row in rows:  # a mirror that is a planted link: refused before anything is kept
                markdown.check(self.root, markdown.mirror_path(
                    row["content"], row["created_at"], row["long_term"]))
        if vectors is None:
            vectors = self._embed([r["content"] for r in rows])
        self._make_room(agent_id, len(rows))
        self.tables.add_memories(rows, vectors)
        self.tables.housekeeping.wrote(len(rows))
        results = []
        for row in rows:
            path = markdown.mirror_path(row["content"], row["created_at"], row["long_term"])
            if self.mirror if mirror is None else mirror:
                path = markdown.write(self.root, row["id"], row["content"], row["tags"],
                                      row["created_at"], row["long_term"])
            results.append({"path": path, "memory_id": row["id"],
                            "timestamp": iso(row["created_at"])})
        return results

    def _make_room(self, agent_id: str, incoming: int) -> None:
        """Keep each agent under the limit (spec 001: the oldest are cleaned): its oldest
        short-term memories first, then, when they are not enough, its oldest long-term ones."""
        if incoming > self.max_memories:
            raise MemoryFull(f"cannot store {incoming} memories at once: the limit is "
                             f"{self.max_memories} per agent")
        table = self.tables.memories()
        known = self._counts.get(agent_id)
        if known is not None and known[1] < _RECOUNT_EVERY and (
                known[0] + incoming <= self.max_memories - _RECOUNT_MARGIN):
            # Far from the limit: trust this process's count for a while. Other
            # processes enforce the limit on their own writes, and the exact count
            # is taken again every 100 writes and always near the limit.
            self._counts[agent_id] = (known[0] + incoming, known[1] + 1)
            return
        count = table.count_rows(filters.where(agent_id))
        excess = count + incoming - self.max_memories
        self._counts[agent_id] = (count + incoming - max(0, excess), 0)
        if excess <= 0:
            return
        columns = ["id", "created_at", "content", "long_term"]
        short = self.tables.scan(table, filters.where(agent_id, long_term=False),
                                 columns).sort_by("created_at")
        oldest = short.slice(0, excess).to_pylist()
        if len(oldest) < excess:  # spec 001: the oldest memories go, long-term ones too
            long = self.tables.scan(table, filters.where(agent_id, long_term=True),
                                    columns).sort_by("created_at")
            oldest += long.slice(0, excess - len(oldest)).to_pylist()
        ids = ", ".join(filters.quote(check_memory_id(r["id"])) for r in oldest)
        self.tables.delete(table, f"id IN ({ids})")
        if self.mirror:
            for row in oldest:
                markdown.remove(self.root, markdown.mirror_path(
                    row["content"], row["created_at"], bool(row["long_term"])), row["id"])

    def forget(self, memory_id: str, *, agent_id: str | None = None) -> bool:
        """Delete one memory (and its markdown entry); False when there is no such memory."""
        memory_id = check_memory_id(memory_id)
        table = self.tables.memories()
        where = f"id = {filters.quote(memory_id)}"
        if agent_id is not None:
            where += f" AND {filters.where(agent_id)}"
        found = self.tables.scan(table, where, ["id", "content", "created_at", "long_term"])
        if found.num_rows == 0:
            return False
        row = found.to_pylist()[0]
        self.tables.delete(table, where)
        self._counts.clear()
        self.tables.housekeeping.wrote(1)
        markdown.remove(self.root, markdown.mirror_path(row["content"], row["created_at"],
                                                        row["long_term"]), memory_id)
        return True

    # -- reading ------------------------------------------------------------
    def search(self, query: str, *, agent_id: str | None, limit: int = 5,
               after: str | datetime | None = None, before: str | datetime | None = None,
               tags: Iterable[str] | None = None,
               long_term: bool | None = None) -> list[Memory]:
        """Memories for ``query``, best first: hybrid vector + keyword search, filtered first."""
        if not isinstance(query, str) or not query.strip():
            raise ValueError("query cannot be empty")
        if len(query) > self.max_chars:
            raise ValueError(f"query exceeds {self.max_chars} characters (got {len(query)})")
        if not 1 <= int(limit) <= 100:
            raise ValueError(f"limit must be between 1 and 100, got {limit}")
        start, end = parse_time(after, "after"), _through(parse_time(before, "before"))
        if start and end and start > end:
            raise ValueError(f"after ({iso(start)}) is later than before ({iso(end)})")
        where = filters.where(agent_id, after=start, before=end, tags=tags, long_term=long_term)
        vectors = self._embed([query])
        vector = None if vectors is None else vectors[0]
        rows = self.tables.search(query, vector, where, int(limit), MEMORY_COLUMNS)
        return [self._public(r) for r in rows]

    def recent(self, *, agent_id: str | None, days: float = 3, limit: int = 20,
               long_term: bool | None = None) -> list[Memory]:
        """Memories written in the last ``days`` days, newest first."""
        from agent_kernel.memory.store import utcnow

        where = filters.where(agent_id, after=utcnow() - timedelta(days=days),
                              long_term=long_term)
        return self.list(agent_id=None, limit=limit, where=where)

    def list(self, *, agent_id: str | None, limit: int = 50,
             where: str | None = None) -> list[Memory]:
        """The newest memories (of one agent, or all), newest first."""
        if where is None:
            where = filters.where(agent_id)
        table = self.tables.memories()
        found = self.tables.scan(table, where, MEMORY_COLUMNS)
        found = found.sort_by([("created_at", "descending")]).slice(0, max(0, int(limit)))
        return [self._public(r) for r in found.to_pylist()]

    def get(self, memory_id: str) -> Memory | None:
        """One memory by id, or None."""
        where = f"id = {filters.quote(check_memory_id(memory_id))}"
        found = self.tables.scan(self.tables.memories(), where, MEMORY_COLUMNS).to_pylist()
        return self._public(found[0]) if found else None

    def count(self, agent_id: str | None = None) -> int:
        """How many memories an agent (or everyone) has."""
        return int(self.tables.memories().count_rows(filters.where(agent_id)))

    def _public(self, row: dict[str, Any]) -> Memory:
        out: Memory = {
            "memory_id": row["id"], "agent_id": row["agent_id"], "content": row["content"],
            "tags": list(row.get("tags") or []), "timestamp": iso(row["created_at"]),
            "run_id": row.get("run_id"), "long_term": bool(row["long_term"]),
            "path": markdown.mirror_path(row["content"], row["created_at"],
                                         bool(row["long_term"]))}
        if "score" in row:
            out["score"] = round(float(row["score"]), 6)
        return out

    # -- history --------------------------------------------------------------
    def add_history(self, records: builtins.list[dict[str, Any]]) -> None:
        """Append history records (role, text, createdAt, run_id, conversation_id, agent_id).

        They go to the journal, redacted and fsync'd, with no lancedb involved;
        :meth:`history` brings them into the table when it reads.
        """
        self.journal.append(records)

    def ingest_history(self) -> int:
        """Bring the journal's pending records into the ``history`` table; how many were added."""
        if not self.journal.pending():
            return 0
        added = self.journal.ingest(self.tables.add_history, self.tables.history_ids)
        if added:
            self.tables.housekeeping.ingested_history()
        return added

    def history(self, *, agent_id: str | None, count: int | None = None, offset: int = 0,
                after: str | datetime | None = None,
                before: str | datetime | None = None) -> builtins.list[dict[str, str]]:
        """Messages newest-first by position (``count``/``offset``) or oldest-first in a window.

        Records still only in the journal are ingested first, so every one is seen.
        """
        start, end = parse_time(after, "after"), _through(parse_time(before, "before"))
        self.ingest_history()
        where = filters.where(agent_id, after=start, before=end, time_column="createdAt")
        found = self.tables.scan(self.tables.history(), where, ["role", "text", "createdAt"])
        if count is not None:
            found = found.sort_by([("createdAt", "descending")]).slice(offset, count)
        else:
            found = found.sort_by("createdAt")
        return [{"role": r["role"], "text": r["text"], "createdAt": iso(r["createdAt"])}
                for r in found.to_pylist()]

    def maintain(self) -> dict[str, Any]:
        """Run housekeeping now (history ingested, vector index when due, compaction, ...)."""
        self.ingest_history()
        return self.tables.housekeeping.maintain()


def store_of(agent: ToolHost) -> MemoryStore:
    """The agent's memory store (``agent.services.memory``), made for its workspace on first
    use. Raises TypeError when something other than a :class:`MemoryStore` was put there."""
    store = agent.services.memory
    if store is None:
        store = agent.services.memory = MemoryStore.for_workspace(
            agent.workspace.root, uri=agent.settings.memory_uri,
            storage_options=agent.settings.memory_options)
    if not isinstance(store, MemoryStore):
        raise TypeError(f"agent.services.memory is a {type(store).__name__}, not a MemoryStore")
    return store
