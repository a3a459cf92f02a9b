"""The memory store: two LanceDB tables in the workspace, the one place lancedb is imported.

``memories`` (id, agent_id, content, tags, created_at, run_id, long_term,
vector) is searched by a vector query and LanceDB's native full-text index
together, fused by reciprocal rank, with every filter applied before ranking.
``history`` keeps each run's prompt and reply, added in batches from the
history journal (:mod:`.journal`) when a reader needs them. The connection uses
``read_consistency_interval=0``, so every kernel and CLI on the workspace reads
the latest version, and Lance's commit protocol lets several processes write
at once without losing rows. The tables may instead live at an object-store
URI (``s3://bucket/prefix``, non-secret storage options only; LanceDB reads the
credentials from the environment), shared by kernels on several machines: there
Lance commits with conditional puts, and our writes are retried when Lance gives
up on a conflict (:func:`commit_retried`; appends never twice, :func:`append_retried`).

The ranked searches (vector and full-text) run concurrently through
LanceDB's async API on one event loop thread; everything else uses the sync
API. Both handles share one LanceDB session, so the indices are cached once.
Compaction, indices and old versions are :mod:`.housekeeping`'s job.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Coroutine
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from agent_kernel.core.safe_open import folder_fd
from agent_kernel.memory.embeddings import ENV_VAR, Embedder, LiteLLMEmbedder, resolve_embedder
from agent_kernel.memory.filters import quote
from agent_kernel.memory.housekeeping import Housekeeper, ReadWriteLock, is_commit_conflict
from agent_kernel.memory.registry import embedder_of, function_for, register_functions

if TYPE_CHECKING:
    from lancedb.db import DBConnection
    from lancedb.table import AsyncTable, Table

log = logging.getLogger(__name__)

MEMORIES = "memories"
HISTORY = "history"
DB_DIR = "lancedb"
MAX_MEMORIES = 10_000
INDEX_THRESHOLD = 10_000
_RRF_K = 60
T = TypeVar("T")


def _lancedb() -> Any:
    """Import lancedb quietly (its Rust side logs a deprecation line per search otherwise)."""
    for name in ("LANCEDB_LOG", "LANCE_LOG", "RUST_LOG"):
        if not os.environ.get(name):
            os.environ[name] = "error"
    # Housekeeping reads index statistics; the centroids are not needed there.
    os.environ.setdefault("LANCE_INCLUDE_VECTOR_CENTROIDS", "false")
    import lancedb

    register_functions()
    return lancedb


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run one of LanceDB's async calls on LanceDB's own background loop and wait for it.

    The ranked searches use LanceDB's async API: it skips the sync query
    builder's extra schema reads (each a version check on disk) and runs the
    vector and full-text queries concurrently, about 4 ms off a ``recall``.
    The loop is the one LanceDB's sync API runs on (and restarts after a fork).
    """
    from lancedb.background_loop import LOOP

    return LOOP.run(coro)  # type: ignore[no-any-return]


def memory_schema(dim: int | None) -> Any:
    """The ``memories`` table's Arrow schema (no vector column when embeddings are off)."""
    import pyarrow as pa

    fields = [
        pa.field("id", pa.string(), nullable=False),
        pa.field("agent_id", pa.string(), nullable=False),
        pa.field("content", pa.string(), nullable=False),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("created_at", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("run_id", pa.string()),
        pa.field("long_term", pa.bool_(), nullable=False),
    ]
    if dim:
        fields.append(pa.field("vector", pa.list_(pa.float32(), dim)))
    return pa.schema(fields)


def history_schema() -> Any:
    """The ``history`` table's Arrow schema (``id``: the journal line's hash, see journal.py)."""
    import pyarrow as pa

    return pa.schema([
        pa.field("id", pa.string()),
        pa.field("role", pa.string(), nullable=False),
        pa.field("text", pa.string(), nullable=False),
        pa.field("createdAt", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("run_id", pa.string()),
        pa.field("conversation_id", pa.string()),
        pa.field("agent_id", pa.string()),
    ])


def _plain_folders(root: Path, folder: str) -> None:
    """Make ``root/folder`` without following a link, and refuse a table folder in it that is
    a link: LanceDB writes its own files, so they must not lead out of the workspace."""
    with folder_fd(root, folder, create=True) as fd, os.scandir(fd) as found:
        for entry in found:
            if entry.is_symlink() or entry.is_dir(follow_symlinks=False):
                with folder_fd(root, f"{folder}/{entry.name}"):
                    pass


class LanceTables:
    """The connection and the two tables of one workspace folder."""

    def __init__(self, root: Path, embedding: str | None = None, api_base: str | None = None,
                 index_threshold: int = INDEX_THRESHOLD, uri: str | None = None,
                 storage_options: dict[str, str] | None = None) -> None:
        self.path = Path(root) / DB_DIR
        # An object-store URI (checked: no credential in it or its options) or the folder.
        self.uri = uri or str(self.path)
        self.remote = bool(uri)
        self.storage_options = dict(storage_options or {})
        # One housekeeping pass at a time per workspace (an object store has no file lock;
        # passes of different machines are kept apart by Lance's commit conflicts).
        self.lock_root, self.lock_name = ((Path(root), ".memory-maintenance.lock")
                                          if uri else (Path(root), f"{DB_DIR}/.maintenance.lock"))
        self.embedding_setting = embedding
        self.api_base = api_base
        self.index_threshold = index_threshold
        self.rw = ReadWriteLock()
        self.notice: str | None = None
        self.embedder: Embedder | None = None
        self._db: DBConnection | None = None
        self._memories: Table | None = None
        self._history: Table | None = None
        self._open_lock = threading.Lock()
        self._session: Any = None
        self._async_memories: AsyncTable | None = None
        self._schema: Any = None
        self.has_fts = False
        self.has_vector_index = False
        self.housekeeping = Housekeeper(self)

    # -- opening ------------------------------------------------------------
    def db(self) -> DBConnection:
        """The LanceDB connection (strongly consistent reads)."""
        if self._db is None:
            lancedb = _lancedb()
            if not self.remote:
                _plain_folders(self.path.parent, DB_DIR)
            # One session (index and metadata caches) for the sync and async handles.
            self._session = lancedb.Session()
            self._db = lancedb.connect(self.uri, read_consistency_interval=timedelta(0),
                                       session=self._session,
                                       storage_options=self.storage_options or None)
        return self._db

    async def _ranked_table(self) -> AsyncTable:
        """An async handle on ``memories`` (same session), for the ranked searches."""
        if self._async_memories is None:
            import lancedb

            db = await lancedb.connect_async(self.uri, session=self._session,
                                             read_consistency_interval=timedelta(0),
                                             storage_options=self.storage_options or None)
            self._async_memories = await db.open_table(MEMORIES)
        return self._async_memories

    @property
    def opened(self) -> bool:
        """Whether :meth:`memories` has opened the table (LanceDB imported, embedder chosen)."""
        return self._memories is not None

    def memories(self) -> Table:
        """The ``memories`` table, created on first use with the configured embedder."""
        if self._memories is not None:
            return self._memories
        with self._open_lock:
            if self._memories is None:
                self._memories = self._open_memories()
        return self._memories

    def _open_memories(self) -> Table:
        db = self.db()
        resolution = resolve_embedder(self.embedding_setting, self.api_base)
        if MEMORIES in _table_names(db):
            table = db.open_table(MEMORIES)
            self.embedder = self._table_embedder(table, resolution.embedder)
            if self.embedder is None and self.notice is None:
                self.notice = resolution.reason or (
                    "this memory table was created without embeddings: memory search uses "
                    "keywords only")
        else:
            self.embedder = resolution.embedder
            self.notice = resolution.reason or None
            kwargs: dict[str, Any] = {}
            dim = None
            if self.embedder is not None:
                from lancedb.embeddings import EmbeddingFunctionConfig

                dim = self.embedder.dim
                kwargs["embedding_functions"] = [EmbeddingFunctionConfig(
                    vector_column="vector", source_column="content",
                    function=function_for(self.embedder))]
            table = db.create_table(MEMORIES, schema=memory_schema(dim), exist_ok=True,
                                    **kwargs)
            if self.embedder is not None and "vector" not in table.schema.names:
                self.embedder = None
                self.notice = "this memory table has no vectors: memory search uses keywords"
        self.refresh_indices(table)
        if not self.has_fts:
            self._create_fts(table)
        return table

    def _table_embedder(self, table: Table, configured: Embedder | None) -> Embedder | None:
        """The embedder the table was built with; a different setting is reported, not used."""
        if "vector" not in table.schema.names:
            return None
        try:
            functions = table.embedding_functions
        except Exception:  # metadata from another version: treat as our default
            functions = {}
        conf = functions.get("vector")
        if conf is None:
            return configured
        embedder = embedder_of(conf.function)
        if embedder is None:  # a function not of ours: as if the table named none
            return configured
        explicit = self.embedding_setting or os.environ.get(ENV_VAR)
        if explicit and configured is not None and configured.name != embedder.name:
            self.notice = (f"the memory table was built with {embedder.name}; the configured "
                           f"{configured.name} is not used for it")
        if isinstance(embedder, LiteLLMEmbedder) and self.api_base:
            embedder.api_base = self.api_base
        return embedder

    def _create_fts(self, table: Table) -> None:
        from lancedb.index import FTS

        try:
            table.create_index("content", config=FTS(with_position=False))
        except Exception as exc:  # another process made it first
            log.debug("FTS index not created: %s", exc)
        self.refresh_indices(table)

    def refresh_indices(self, table: Table) -> None:
        """Note which indices the table has now."""
        indices = table.list_indices()
        self.has_fts = any(i.index_type == "FTS" for i in indices)
        self.has_vector_index = any("vector" in i.columns and i.index_type != "FTS"
                                    for i in indices)

    def history_if_open(self) -> Table | None:
        """The ``history`` table if this process has opened it, else None."""
        return self._history

    def history(self) -> Table:
        """The ``history`` table, created on first use."""
        if self._history is None:
            with self._open_lock:
                if self._history is None:
                    db = self.db()
                    if HISTORY in _table_names(db):
                        table = db.open_table(HISTORY)
                    else:
                        table = db.create_table(HISTORY, schema=history_schema(),
                                                exist_ok=True)
                    if "id" not in table.schema.names:
                        # Made before history came through the journal: rows then had no id.
                        try:
                            table.add_columns({"id": "CAST(NULL AS STRING)"})
                        except Exception as exc:  # another process added it first
                            log.debug("history id column not added: %s", exc)
                            table.checkout_latest()
                    self._history = table
        return self._history

    def add_history(self, rows: list[dict[str, Any]]) -> None:
        """Append history rows in one columnar write (the journal's ingestion calls it)."""
        import pyarrow as pa

        table = self.history()
        schema = table.schema
        columns = [pa.array([r.get(n) for r in rows], type=schema.field(n).type)
                   for n in schema.names]
        append_retried(table, pa.table(columns, schema=schema))

    def history_ids(self, ids: list[str]) -> set[str]:
        """Which of ``ids`` the ``history`` table already has."""
        table = self.history()
        found: set[str] = set()
        for start in range(0, len(ids), 500):
            chunk = ", ".join(quote(i) for i in ids[start:start + 500])
            found.update(self.scan(table, f"id IN ({chunk})", ["id"]).column("id").to_pylist())
        return found

    def add_memories(self, rows: list[dict[str, Any]], vectors: object) -> None:
        """Append rows (and their vectors, an ``(n, dim)`` array) in one columnar write."""
        import numpy as np
        import pyarrow as pa

        table = self.memories()
        if self._schema is None:
            # Asking the table costs about 1 ms per write; our code never alters it.
            self._schema = table.schema
        schema = self._schema
        names = [n for n in schema.names if n != "vector"]
        columns = {n: pa.array([r[n] for r in rows], type=schema.field(n).type) for n in names}
        if "vector" in schema.names:
            field = schema.field("vector")
            dim = field.type.list_size
            flat = np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1)
            if flat.size != dim * len(rows):
                raise ValueError(f"expected {len(rows)} vectors of {dim} floats")
            columns["vector"] = pa.FixedSizeListArray.from_arrays(pa.array(flat), dim)
        append_retried(table, pa.table(columns, schema=pa.schema([schema.field(n)
                                                                  for n in columns])))
        self.housekeeping.touch()

    def delete(self, table: Table, where: str) -> None:
        """Delete the rows matching ``where``, retried on a commit conflict (see
        :func:`commit_retried`: the predicate is the same each time, so a retry is safe)."""
        commit_retried(lambda: table.delete(where), what="delete")

    # -- searching -------------------------------------------------------------
    def search(self, text: str, vector: object, where: str | None, limit: int,
               columns: list[str]) -> list[dict[str, Any]]:
        """Rows for a query, best first, each with ``score``; filters apply before ranking.

        With a vector and a full-text index: both searches at once, fused by
        reciprocal rank (k=60, as LanceDB's ``RRFReranker``). With one of them: that
        search alone (cosine similarity or BM25 as the score).
        """
        self.memories()
        use_text = self.has_fts and bool(text.strip())
        if vector is None and not use_text:
            return []
        columns = columns if "id" in columns else [*columns, "id"]
        with self.rw.reading():
            by_vector, by_text = _run(self._ranked(text if use_text else None, vector, where,
                                                   limit, columns))
        self.housekeeping.touch()
        if by_text is None:
            return [{**_strip(r), "score": 1.0 - float(r["_distance"])}
                    for r in by_vector or []]
        if by_vector is None:
            return [{**_strip(r), "score": float(r["_score"])} for r in by_text]
        scores: dict[str, float] = {}
        rows: dict[str, dict[str, Any]] = {}
        for ranked in (by_vector, by_text):
            for rank, row in enumerate(ranked):
                scores[row["id"]] = scores.get(row["id"], 0.0) + 1.0 / (_RRF_K + rank + 1)
                rows.setdefault(row["id"], row)
        best = sorted(scores, key=lambda key: -scores[key])[:limit]
        return [{**_strip(rows[key]), "score": scores[key]} for key in best]

    async def _ranked(self, text: str | None, vector: object, where: str | None, limit: int,
                      columns: list[str]) -> tuple[list[dict[str, Any]] | None,
                                                   list[dict[str, Any]] | None]:
        """The vector search and the full-text search (each when asked), run concurrently."""
        table = await self._ranked_table()
        vector_rows = text_rows = None
        if vector is not None:
            query = table.query().nearest_to(vector).column("vector").distance_type("cosine")
            if self.has_vector_index:
                # recall@5 1.0 against brute force at 10k and 100k (docs/memory.md).
                query = query.ef(128).refine_factor(4)
            vector_rows = _rows(query, where, [*columns, "_distance"], limit)
        if text is not None:
            text_query = table.query().nearest_to_text(text, columns="content")
            text_rows = _rows(text_query, where, [*columns, "_score"], limit)
        if vector_rows is not None and text_rows is not None:
            found = await asyncio.gather(vector_rows, text_rows)
            return found[0], found[1]
        if vector_rows is not None:
            return await vector_rows, None
        return None, await text_rows  # type: ignore[misc]

    def scan(self, table: Table, where: str | None, columns: list[str]) -> Any:
        """Every row matching ``where`` as an Arrow table (no ranking)."""
        with self.rw.reading():
            query = table.search().select(columns)
            if where:
                query = query.where(where)
            return query.limit(None).to_arrow() if hasattr(query, "limit") else query.to_arrow()

async def _rows(query: Any, where: str | None, columns: list[str],
                limit: int) -> list[dict[str, Any]]:
    """Run a ranked async query (filters before ranking) and return its rows."""
    if where:
        query = query.where(where)
    table = await query.select(columns).limit(limit).to_arrow()
    return table.to_pylist()  # type: ignore[no-any-return]


COMMIT_ATTEMPTS = 8
def commit_retried(operation: Callable[[], T], *, what: str,
                   before_retry: Callable[[], bool] | None = None) -> T | None:
    """Run a table commit, and again after a commit conflict, with jittered backoff.

    Lance retries conflicting commits itself (an append is rebased onto the newer
    version); with many writers on an object store it can still give up ("Too many
    concurrent writers"). Such a commit was not made, so it is tried again, up to
    ``COMMIT_ATTEMPTS`` times. ``before_retry`` may say the work is already done (an
    append whose rows are all there after an ambiguous failure): then None is returned.
    """
    for attempt in range(1, COMMIT_ATTEMPTS + 1):
        try:
            return operation()
        except Exception as exc:
            if attempt == COMMIT_ATTEMPTS or not is_commit_conflict(exc):
                raise
            log.info("memory %s: commit conflict (attempt %d), retrying: %s", what, attempt,
                     str(exc).splitlines()[0][:200])
        time.sleep(random.uniform(0.02, 0.05 * 2 ** min(attempt, 5)))
        if before_retry is not None and before_retry():
            return None
    return None  # pragma: no cover - the loop returns or raises


def append_retried(table: Table, rows: Any) -> None:
    """Append an Arrow table of rows with ``id`` values, retried on a commit conflict.

    Before each retry the table is asked which of the ids it already has, and only
    the missing rows are sent again: a failure after the commit had landed (a lost
    reply) never duplicates a row.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    pending = [rows]

    def missing() -> bool:
        ids = [i for i in pending[0].column("id").to_pylist() if i]
        if not ids:
            return False
        found: set[str] = set()
        for start in range(0, len(ids), 500):
            chunk = ", ".join(quote(i) for i in ids[start:start + 500])
            found.update(table.search().where(f"id IN ({chunk})").select(["id"])
                         .limit(None).to_arrow().column("id").to_pylist())
        keep = pc.invert(pc.is_in(pending[0].column("id"), value_set=pa.array(list(found),
                                                                               pa.string())))
        pending[0] = pending[0].filter(keep)
        return pending[0].num_rows == 0

    commit_retried(lambda: table.add(pending[0]), what="append", before_retry=missing)


def _strip(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if not k.startswith("_") and k != "vector"}


def _table_names(db: DBConnection) -> list[str]:
    listed = db.list_tables()
    names = getattr(listed, "tables", listed)
    return list(names)


def utcnow() -> datetime:
    """Now, in UTC, at microsecond precision (what the tables store)."""
    return datetime.now(timezone.utc)
