"""The memory store: two LanceDB tables in the workspace, the one place lancedb is imported.

``memories`` (id, agent_id, content, tags, created_at, run_id, long_term,
vector) is searched by a vector query and LanceDB's native full-text index
together, fused by reciprocal rank, with every filter applied before ranking.
``history`` keeps each run's prompt and reply. The connection uses
``read_consistency_interval=0``, so every kernel and CLI on the workspace reads
the latest version, and Lance's commit protocol lets several processes write
at once without losing rows.

Housekeeping runs in a background thread: a vector index (IVF_HNSW_SQ) once
the table passes ``index_threshold`` rows, and now and then ``optimize()``
(compaction, index refresh, removal of versions older than ten minutes). It
takes this process's write side of a readers-writer lock, so it never runs
while a search here is reading, and a file lock, so one process at a time
does it; other processes always read the newest version, which cleanup never
removes.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from .embeddings import ENV_VAR, Embedder, LiteLLMEmbedder, resolve_embedder

log = logging.getLogger(__name__)

MEMORIES = "memories"
HISTORY = "history"
DB_DIR = "lancedb"
MAX_MEMORIES = 10_000
INDEX_THRESHOLD = 10_000
MAINTAIN_EVERY = 50
_KEEP_VERSIONS = timedelta(minutes=10)
_RRF_K = 60
_registered = False
_register_lock = threading.Lock()


def _lancedb() -> Any:
    """Import lancedb quietly (its Rust side logs a deprecation line per search otherwise)."""
    for name in ("LANCEDB_LOG", "RUST_LOG"):
        if not os.environ.get(name):
            os.environ[name] = "error"
    import lancedb

    _register_functions()
    return lancedb


def _register_functions() -> None:
    """Register the project's embedders with LanceDB's registry (names, never paths)."""
    global _registered
    with _register_lock:
        if _registered:
            return
        from lancedb.embeddings import TextEmbeddingFunction, get_registry
        from pydantic import PrivateAttr

        registry = get_registry()

        class AgentKernelMiniLM(TextEmbeddingFunction):
            """all-MiniLM-L6-v2 int8 from the installed wheels (see memory/embeddings.py)."""

            _embedder: Any = PrivateAttr(default=None)

            def embedder(self) -> Embedder:
                if self._embedder is None:
                    from .embeddings import MiniLMEmbedder

                    self._embedder = MiniLMEmbedder()
                return self._embedder  # type: ignore[no-any-return]

            def ndims(self) -> int:
                return 384

            def generate_embeddings(self, texts: Any, *args: Any, **kwargs: Any) -> list[Any]:
                return list(self.embedder().embed([str(t) for t in texts]))

        class AgentKernelLiteLLM(TextEmbeddingFunction):
            """An embedding model reached through litellm; keys stay in the environment."""

            model: str
            _embedder: Any = PrivateAttr(default=None)

            def embedder(self) -> Embedder:
                if self._embedder is None:
                    self._embedder = LiteLLMEmbedder(self.model)
                return self._embedder  # type: ignore[no-any-return]

            def ndims(self) -> int:
                return self.embedder().dim

            def generate_embeddings(self, texts: Any, *args: Any, **kwargs: Any) -> list[Any]:
                return list(self.embedder().embed([str(t) for t in texts]))

        registry.register("agent-kernel-minilm")(AgentKernelMiniLM)
        registry.register("agent-kernel-litellm")(AgentKernelLiteLLM)
        _registered = True


def _function_for(embedder: Embedder) -> Any:
    """The registered LanceDB embedding function for one of our embedders."""
    from lancedb.embeddings import get_registry

    if isinstance(embedder, LiteLLMEmbedder):
        func = get_registry().get("agent-kernel-litellm").create(model=embedder.model)
    else:
        func = get_registry().get("agent-kernel-minilm").create()
    func._embedder = embedder
    return func


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
    """The ``history`` table's Arrow schema."""
    import pyarrow as pa

    return pa.schema([
        pa.field("role", pa.string(), nullable=False),
        pa.field("text", pa.string(), nullable=False),
        pa.field("createdAt", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("run_id", pa.string()),
        pa.field("conversation_id", pa.string()),
        pa.field("agent_id", pa.string()),
    ])


class _ReadWriteLock:
    """Many searches at once, or one maintenance pass, never both."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False

    @contextmanager
    def reading(self) -> Iterator[None]:
        with self._cond:
            while self._writer:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            while self._writer or self._readers:
                self._cond.wait()
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


class LanceTables:
    """The connection, the two tables and their housekeeping, for one workspace folder."""

    def __init__(self, root: Path, embedding: str | None = None, api_base: str | None = None,
                 index_threshold: int = INDEX_THRESHOLD) -> None:
        self.path = Path(root) / DB_DIR
        self.embedding_setting = embedding
        self.api_base = api_base
        self.index_threshold = index_threshold
        self.rw = _ReadWriteLock()
        self.notice: str | None = None
        self.embedder: Embedder | None = None
        self._db: Any = None
        self._memories: Any = None
        self._history: Any = None
        self._open_lock = threading.Lock()
        self._writes = 0
        self._unchecked = 0
        self._counted = False
        self._maintenance: threading.Thread | None = None
        self._pool: Any = None
        self._schema: Any = None
        self.has_fts = False
        self.has_vector_index = False

    # -- opening ------------------------------------------------------------
    def db(self) -> Any:
        """The LanceDB connection (strongly consistent reads)."""
        if self._db is None:
            lancedb = _lancedb()
            self.path.mkdir(parents=True, exist_ok=True)
            self._db = lancedb.connect(str(self.path), read_consistency_interval=timedelta(0))
        return self._db

    def memories(self) -> Any:
        """The ``memories`` table, created on first use with the configured embedder."""
        if self._memories is not None:
            return self._memories
        with self._open_lock:
            if self._memories is None:
                self._memories = self._open_memories()
        return self._memories

    def _open_memories(self) -> Any:
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
                    function=_function_for(self.embedder))]
            table = db.create_table(MEMORIES, schema=memory_schema(dim), exist_ok=True,
                                    **kwargs)
            if self.embedder is not None and "vector" not in table.schema.names:
                self.embedder = None
                self.notice = "this memory table has no vectors: memory search uses keywords"
        self._refresh_indices(table)
        if not self.has_fts:
            self._create_fts(table)
        return table

    def _table_embedder(self, table: Any, configured: Embedder | None) -> Embedder | None:
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
        embedder = conf.function.embedder()
        explicit = self.embedding_setting or os.environ.get(ENV_VAR)
        if explicit and configured is not None and configured.name != embedder.name:
            self.notice = (f"the memory table was built with {embedder.name}; the configured "
                           f"{configured.name} is not used for it")
        if isinstance(embedder, LiteLLMEmbedder) and self.api_base:
            embedder.api_base = self.api_base
        return embedder

    def _create_fts(self, table: Any) -> None:
        from lancedb.index import FTS

        try:
            table.create_index("content", config=FTS(with_position=False))
        except Exception as exc:  # another process made it first
            log.debug("FTS index not created: %s", exc)
        self._refresh_indices(table)

    def _refresh_indices(self, table: Any) -> None:
        indices = table.list_indices()
        self.has_fts = any(i.index_type == "FTS" for i in indices)
        self.has_vector_index = any("vector" in i.columns and i.index_type != "FTS"
                                    for i in indices)

    def history(self) -> Any:
        """The ``history`` table, created on first use."""
        if self._history is None:
            with self._open_lock:
                if self._history is None:
                    self._history = self.db().create_table(
                        HISTORY, schema=history_schema(), exist_ok=True)
        return self._history

    def add_memories(self, rows: list[dict[str, Any]], vectors: Any) -> None:
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
        table.add(pa.table(columns, schema=pa.schema([schema.field(n) for n in columns])))

    # -- searching -------------------------------------------------------------
    def search(self, text: str, vector: Any, where: str | None, limit: int,
               columns: list[str]) -> list[dict[str, Any]]:
        """Rows for a query, best first, each with ``score``; filters apply before ranking.

        With a vector and a full-text index: both searches, fused by reciprocal rank.
        With one of them: that search alone (cosine similarity or BM25 as the score).
        """
        table = self.memories()
        use_text = self.has_fts and bool(text.strip())
        with self.rw.reading():
            if vector is not None and use_text:
                return self._hybrid(table, text, vector, where, limit, columns)
            if vector is not None:
                return [{**_strip(r), "score": 1.0 - float(r["_distance"])}
                        for r in self._vector_query(table, vector, where, limit, columns)]
            if not use_text:
                return []
            return [{**_strip(r), "score": float(r["_score"])}
                    for r in self._text_query(table, text, where, limit, columns)]

    def _vector_query(self, table: Any, vector: Any, where: str | None, limit: int,
                      columns: list[str]) -> list[dict[str, Any]]:
        query = self._tune(table.search(vector, vector_column_name="vector"))
        if where:
            query = query.where(where, prefilter=True)
        return query.select([*columns, "_distance"]).limit(limit).to_list()  # type: ignore[no-any-return]

    @staticmethod
    def _text_query(table: Any, text: str, where: str | None, limit: int,
                    columns: list[str]) -> list[dict[str, Any]]:
        query = table.search(text, query_type="fts", fts_columns="content")
        if where:
            query = query.where(where, prefilter=True)
        return query.select([*columns, "_score"]).limit(limit).to_list()  # type: ignore[no-any-return]

    def _hybrid(self, table: Any, text: str, vector: Any, where: str | None, limit: int,
                columns: list[str]) -> list[dict[str, Any]]:
        """Both searches at once, fused by reciprocal rank (k=60, as LanceDB's RRFReranker).

        Done here rather than by LanceDB's hybrid query, which builds a thread pool and
        normalises scores on every call: the same ranking at about half the latency.
        """
        columns = columns if "id" in columns else [*columns, "id"]
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(2, thread_name_prefix="agent-kernel-fts")
        text_rows = self._pool.submit(self._text_query, table, text, where, limit, columns)
        vector_rows = self._vector_query(table, vector, where, limit, columns)
        scores: dict[str, float] = {}
        rows: dict[str, dict[str, Any]] = {}
        for ranked in (vector_rows, text_rows.result()):
            for rank, row in enumerate(ranked):
                scores[row["id"]] = scores.get(row["id"], 0.0) + 1.0 / (_RRF_K + rank + 1)
                rows.setdefault(row["id"], row)
        best = sorted(scores, key=lambda key: -scores[key])[:limit]
        return [{**_strip(rows[key]), "score": scores[key]} for key in best]

    def _tune(self, query: Any) -> Any:
        if self.has_vector_index:
            query = query.ef(128).refine_factor(4)
        return query

    def scan(self, table: Any, where: str | None, columns: list[str]) -> Any:
        """Every row matching ``where`` as an Arrow table (no ranking)."""
        with self.rw.reading():
            query = table.search().select(columns)
            if where:
                query = query.where(where)
            return query.limit(None).to_arrow() if hasattr(query, "limit") else query.to_arrow()

    # -- housekeeping ----------------------------------------------------------
    def wrote(self, rows: int) -> None:
        """Count writes and start housekeeping in the background when it is due."""
        self._writes += rows
        self._unchecked += rows
        due = self._writes >= MAINTAIN_EVERY
        if (not self.has_vector_index and self.embedder is not None
                and (self._unchecked >= 100 or not self._counted)):
            # Counting every row costs a few ms: look again every 100 writes.
            self._unchecked, self._counted = 0, True
            due = due or self.memories().count_rows() >= self.index_threshold
        if due and (self._maintenance is None or not self._maintenance.is_alive()):
            self._writes = 0
            self._maintenance = threading.Thread(target=self.maintain, daemon=True,
                                                 name="agent-kernel-memory-maintenance")
            self._maintenance.start()

    def maintain(self) -> dict[str, Any]:
        """Build the vector index when due, then compact and drop old versions."""
        from filelock import FileLock, Timeout

        done: dict[str, Any] = {"vector_index": False, "optimized": False}
        lock = FileLock(str(self.path / ".maintenance.lock"))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            return done
        try:
            table = self.memories()
            rows = table.count_rows()
            self._refresh_indices(table)
            if (self.embedder is not None and rows >= self.index_threshold
                    and (not self.has_vector_index or self._vector_index_stale(table, rows))):
                # Built outside the read lock: index creation commits a new version
                # and leaves the old one readable, so searches go on meanwhile.
                from lancedb.index import IvfHnswSq

                table.create_index("vector", replace=True, config=IvfHnswSq(
                    distance_type="cosine", num_partitions=max(1, rows // 50_000)))
                done["vector_index"] = True
                self._refresh_indices(table)
            if rows >= self.index_threshold:
                self._scalar_indices(table)
            with self.rw.exclusive():
                table.optimize(cleanup_older_than=_KEEP_VERSIONS)
                if self._history is not None:
                    self._history.optimize(cleanup_older_than=_KEEP_VERSIONS)
            done["optimized"] = True
        except Exception as exc:
            log.warning("memory maintenance failed: %s", exc)
            done["error"] = str(exc)
        finally:
            lock.release()
        return done

    @staticmethod
    def _vector_index_stale(table: Any, rows: int) -> bool:
        """True when the table has more than doubled since the vector index was trained."""
        for index in table.list_indices():
            if "vector" in index.columns and index.index_type != "FTS":
                indexed = getattr(index, "num_indexed_rows", None)
                return indexed is not None and indexed * 2 < rows
        return False

    def _scalar_indices(self, table: Any) -> None:
        """Indices for the prefilters every search runs (agent, time): ~40% off a query."""
        from lancedb.index import Bitmap, BTree

        have = {tuple(i.columns) for i in table.list_indices()}
        for column, config in (("agent_id", Bitmap()), ("created_at", BTree())):
            if (column,) not in have:
                table.create_index(column, config=config)

    def wait(self, timeout: float | None = None) -> None:
        """Wait for background housekeeping to finish (tests and benchmarks)."""
        if self._maintenance is not None:
            self._maintenance.join(timeout)


def _strip(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if not k.startswith("_") and k != "vector"}


def _table_names(db: Any) -> list[str]:
    listed = db.list_tables()
    names = getattr(listed, "tables", listed)
    return list(names)


def utcnow() -> datetime:
    """Now, in UTC, at microsecond precision (what the tables store)."""
    return datetime.now(timezone.utc)
