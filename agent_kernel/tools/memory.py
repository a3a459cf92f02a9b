"""Memory tools: remember, recall, search_memory, memory_recently and the two history tools.

Names, arguments and shapes are the specs' own. ``remember`` is one tool for
spec 000 (``content``, ``longTerm`` → ``{path}``) and spec 001 (``tags``, at
most 2000 characters → ``{memory_id, timestamp}``) and returns all three.
``recall`` is spec 001's (``limit`` 1-20 → ``{memories, count}``),
``search_memory`` and the history tools are spec 000's, ``memory_recently``
is spec 003's. Each runs its LanceDB and embedding work in a worker thread,
so the event loop never waits for them, and emits its events on the loop.
Each reads and writes the memories and conversation of ``services.memory_owner``
(in a team the Teller's, spec 000) or else of the calling agent.

The bounds spec 001 words itself (``content cannot be empty``, ``content
exceeds 2000 characters (got 2001)``, ``limit must be between 1 and 20, got
21``) are checked by the tool with those words before anything is opened; the
schema shows the same bounds (``SCHEMA_*``) but pydantic, which would answer in
its own words first, leaves them to the tool.

:func:`attach` puts the workspace's store in ``agent.services.memory``
(nothing is imported or opened until the first call) and subscribes a
:class:`~agent_kernel.memory.history.HistoryWriter` to the agent's bus.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, TypedDict, TypeVar

from agent_kernel.core import object_store
from agent_kernel.core.events import Loading, Notice
from agent_kernel.engine.registry import Field, Tool, ToolContext, ToolError, ToolHost
from agent_kernel.memory.filters import MAX_CHARS, check_content
from agent_kernel.memory.warming import LOADING as MEMORY_LOADING

if TYPE_CHECKING:
    from agent_kernel.memory.service import MemoryStore

T = TypeVar("T")
SNIPPET_CHARS = 300
HISTORY_CAP = 1000
RECALL_LIMIT = (1, 20)
SCHEMA_CONTENT = Field(json_schema_extra={"minLength": 1, "maxLength": MAX_CHARS})
SCHEMA_RECALL_LIMIT = Field(json_schema_extra={"minimum": RECALL_LIMIT[0],
                                               "maximum": RECALL_LIMIT[1]})


def _open_store(ctx: ToolContext) -> tuple[MemoryStore, str | None]:
    """The workspace's store, opened (in a worker thread), and a notice not yet given."""
    from agent_kernel.memory.service import store_of

    store = store_of(ctx.agent)
    notice = store.notice
    told = ctx.agent.services.memory_notices
    if notice and notice not in told:
        told.add(notice)
        return store, notice
    return store, None


async def _loaded(ctx: ToolContext) -> None:
    """The first memory call of a process loads LanceDB and the embedding model (seconds):
    say so before and after, as a run says it loads the model library."""
    from agent_kernel.memory.service import store_of

    store = await asyncio.to_thread(store_of, ctx.agent)  # made on first use: no loop wait
    if store.loaded:
        return
    started = time.perf_counter()
    ctx.emit(Loading(ctx.run_id, MEMORY_LOADING))
    await asyncio.to_thread(store.load)
    ctx.emit(Loading(ctx.run_id, MEMORY_LOADING, seconds=time.perf_counter() - started))


async def _with_store(ctx: ToolContext, work: Callable[[MemoryStore], T]) -> T:
    """Run ``work(store)`` in a worker thread; say on the loop when search is keyword-only.
    A failure of memory's object store is one sentence, not the store client's report."""
    try:
        await _loaded(ctx)
        store, notice = await asyncio.to_thread(_open_store, ctx)
        if notice:
            ctx.emit(Notice(ctx.run_id, f"Memory: {notice}.", level="warning"))
        return await asyncio.to_thread(work, store)
    except Exception as exc:
        settings = ctx.agent.settings
        said = (object_store.store_failure(exc, settings.memory_uri, settings.memory_options)
                if settings.memory_uri else None)
        if said is None:
            raise
        raise ToolError(said, summary=said) from exc


def _owner(ctx: ToolContext) -> str:
    """Whose memories and conversation the call reads and writes: the agent's own, or in a
    team the Teller's (``services.memory_owner``; spec 000's Teller → memory → Planner)."""
    return ctx.agent.services.memory_owner or ctx.agent_id


def _flush_history(ctx: ToolContext) -> None:
    writer = ctx.agent.services.history_writer
    if writer is not None:
        writer.flush(10.0)


async def remember(
    content: Annotated[str, SCHEMA_CONTENT],
    ctx: ToolContext,
    longTerm: bool = False,  # noqa: N803 - spec 000's name
    tags: list[str] | None = None,
) -> dict[str, Any]:
    """Store something worth remembering in memory, for this and later sessions.

    Args:
        content: What to remember (at most 2000 characters).
        longTerm: true appends it to memory.md (kept when memory is full); false (default)
            writes it to memory/YYYY-MM-DD-{slug}.md.
        tags: Optional tags for categorization, e.g. ["trading", "lesson"].
    """
    check_content(content)  # spec 001's words, before the store is opened
    return await _with_store(ctx, lambda store: store.remember(
        content, agent_id=_owner(ctx), tags=tags, long_term=longTerm, run_id=ctx.run_id))


async def recall(
    query: Annotated[str, Field(min_length=1, max_length=2000)],
    ctx: ToolContext,
    limit: Annotated[int, SCHEMA_RECALL_LIMIT] = 5,
) -> dict[str, Any]:
    """Search memory for relevant past facts and lessons (by meaning and by keywords).

    Args:
        query: What to search for, e.g. "entry timing lessons".
        limit: Maximum number of memories to return (1-20, default 5).
    """
    low, high = RECALL_LIMIT
    if not low <= limit <= high:
        raise ValueError(f"limit must be between {low} and {high}, got {limit}")
    memories = await _with_store(ctx, lambda store: store.search(
        query, agent_id=_owner(ctx), limit=limit))
    shown = [{k: v for k, v in memory.items() if k != "agent_id"} for memory in memories]
    return {"memories": shown, "count": len(shown)}


class SearchHit(TypedDict):
    """One hit of ``search_memory``: where the memory is mirrored, its start, its score."""

    source: str
    content: str
    score: float


class _RecentFields(TypedDict):
    memory_id: str
    created_at: str
    summary: str
    tags: list[str]
    long_term: bool
    path: str


class RecentItem(_RecentFields, total=False):
    """One memory as ``memory_recently`` lists it (``body`` when asked for)."""

    body: str


class Recent(TypedDict):
    """What ``memory_recently`` returns."""

    items: list[RecentItem]
    count: int
    days: int


async def search_memory(
    query: Annotated[str, Field(min_length=1, max_length=2000)],
    ctx: ToolContext,
    after: str | None = None,
    before: str | None = None,
    limit: Annotated[int, Field(ge=1, le=50)] = 5,
) -> dict[str, list[SearchHit]]:
    """Search memory, optionally within a time range.

    Args:
        query: Search keywords.
        after: Only memories written at or after this ISO 8601 time.
        before: Only memories written at or before this ISO 8601 time.
        limit: Maximum number of hits (default 5).
    """
    found = await _with_store(ctx, lambda store: store.search(
        query, agent_id=_owner(ctx), limit=limit, after=after, before=before))
    return {"hits": [{"source": m["path"], "content": m["content"][:SNIPPET_CHARS],
                      "score": m["score"]} for m in found]}


async def memory_recently(
    ctx: ToolContext,
    days: Annotated[int, Field(ge=1, le=365)] = 3,
    limit: Annotated[int, Field(ge=1, le=100)] = 20,
    include_body: bool = False,
) -> Recent:
    """Read the most recent memories with a one-line summary and their metadata.

    Args:
        days: Time window in days (default 3).
        limit: Maximum number of items (default 20).
        include_body: Also return each memory's full text.
    """
    found = await _with_store(ctx, lambda store: store.recent(
        agent_id=_owner(ctx), days=days, limit=limit))
    items: list[RecentItem] = []
    for memory in found:
        first = memory["content"].strip().splitlines()[0]
        item: RecentItem = {"memory_id": memory["memory_id"], "created_at": memory["timestamp"],
                "summary": first if len(first) <= 120 else first[:117] + "...",
                "tags": memory["tags"], "long_term": memory["long_term"],
                "path": memory["path"]}
        if include_body:
            item["body"] = memory["content"]
        items.append(item)
    return {"items": items, "count": len(items), "days": days}


async def get_recent_history(
    count: Annotated[int, Field(ge=1, le=HISTORY_CAP)],
    ctx: ToolContext,
    offset: Annotated[int, Field(ge=0)] = 0,
) -> dict[str, Any]:
    """Get past conversation messages by position, counting back from the most recent.

    Args:
        count: How many messages to return.
        offset: Skip the N most recent messages (default 0).
    """
    def read(store: MemoryStore) -> list[dict[str, str]]:
        _flush_history(ctx)
        return store.history(agent_id=_owner(ctx), count=count, offset=offset)

    messages = await _with_store(ctx, read)
    return {"messages": list(reversed(messages))}


async def get_history_by_time(
    after: Annotated[str, Field(min_length=1, max_length=40)],
    ctx: ToolContext,
    before: str | None = None,
) -> dict[str, Any]:
    """Get past conversation messages in a time range, oldest first.

    Args:
        after: Start time, ISO 8601 (inclusive).
        before: End time, ISO 8601 (inclusive); default now.
    """
    def read(store: MemoryStore) -> list[dict[str, str]]:
        _flush_history(ctx)
        return store.history(agent_id=_owner(ctx), after=after, before=before)

    messages = await _with_store(ctx, read)
    return {"messages": messages[-HISTORY_CAP:]}


TOOLS = [Tool(remember, source="builtin", side_effects=False)] + [
    Tool(f, source="builtin") for f in (recall, search_memory, memory_recently,
                                        get_recent_history, get_history_by_time)]


def attach(agent: ToolHost) -> None:
    """Give ``agent`` the workspace's memory store and record its runs in history (cheap)."""
    from agent_kernel.memory.history import HistoryWriter
    from agent_kernel.memory.service import store_of

    writer = HistoryWriter(agent, store_of(agent))
    agent.services.history_writer = writer
    agent.bus.subscribe(writer)
