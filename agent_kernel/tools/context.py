"""Context tools (spec 004): ``get_context_status`` and ``compress_context``.

An agent looks at how full its context window is and, when it chooses, replaces
its older messages by a summary it wrote itself. Both work on the conversation
of the run that calls them (``agent.windows``); counting, thresholds and the
rule that a tool call and its result are never parted live in
:mod:`agent_kernel.engine.context`. Results are spec 004's ``{ok, ...}`` envelopes.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, TypedDict

from agent_kernel.core.events import ContextCompacted
from agent_kernel.engine.context import ContextStatus, ContextWindow, message_count
from agent_kernel.engine.registry import Field, Tool, ToolContext, ToolError

MAX_SUMMARY_CHARS = 20_000


class Compressed(TypedDict):
    """What ``compress_context`` returns: how many messages went, how many stayed."""

    ok: bool
    compressedCount: int  # noqa: N815 - spec 004's keys
    remainingCount: int  # noqa: N815


def _window(ctx: ToolContext) -> ContextWindow:
    window: ContextWindow | None = getattr(ctx.agent, "windows", {}).get(ctx.run_id)
    if window is None:
        raise ToolError("this run has no conversation to look at",
                        guidance="Context tools work only inside an agent's run.")
    return window


async def get_context_status(ctx: ToolContext) -> ContextStatus:
    """How full your context window is: usedTokens, maxTokens, usagePercent and status.

    Notes:
        status is normal below 70 %, warning from 70 %, critical from 90 % (the
        conversation is compacted automatically before the next model call) and exceeded
        from 100 %. The tools counted are those this run's requests carry.
    """
    window = _window(ctx)
    tools = ctx.agent.registry.offered(ctx.agent.role, ctx.run_id)  # what requests carry
    return await asyncio.to_thread(window.status, tools)


async def compress_context(
    summary: Annotated[str, Field(min_length=1, max_length=MAX_SUMMARY_CHARS)],
    ctx: ToolContext,
    keepRecentCount: Annotated[int, Field(ge=0, le=10_000)] = 10,  # noqa: N803 (spec name)
) -> Compressed:
    """Compress the conversation: older messages are replaced by your summary.

    Notes:
        The system prompt and the most recent keepRecentCount messages stay; a tool call
        and its result stay or go together, and this turn always stays.

    Args:
        summary: What the replaced messages said that still matters (facts, decisions,
            open questions); it is all you will see of them.
        keepRecentCount: How many of the most recent messages to keep as they are.
    """
    if not summary.strip():
        raise ToolError("summary cannot be empty",
                        guidance="Write what the older messages said that still matters.")
    compressed, remaining = _window(ctx).compress(summary, keepRecentCount)
    if compressed:
        ctx.emit(ContextCompacted(
            ctx.run_id, f"The agent compacted its context: "
            f"{message_count(compressed, 'earlier')} replaced by its summary; "
            f"{message_count(remaining, 'recent')} kept",
            compressed_count=compressed, remaining_count=remaining, summary_by="agent"))
    return {"ok": True, "compressedCount": compressed, "remainingCount": remaining}


TOOLS = [Tool(f, source="builtin") for f in (get_context_status, compress_context)]
