"""Context care: how full the model's window is, and making room in it.

A conversation grows with every turn until the next request no longer fits the
model's context window. This module counts a request's tokens for the run's
model (as the model counts them: litellm's tokenizer for a litellm model, an estimate
of four characters a token for the offline ``demo`` model, so a demo run never
imports litellm), reads the window from configuration or the model, says how full it
is, and compacts.

Compacting replaces the older messages by one summary message. The system prompt
and the most recent messages stay, and a conversation is cut only between
*units*: an assistant message that calls tools goes together with its tool
results, or stays together with them, because a provider refuses a tool result
whose call is gone. The agent compacts by itself with ``compress_context`` and
its own summary; :meth:`ContextWindow.fit` does it before a model call whose
request reaches the critical threshold, with a summary the model writes through the
same model seam as the run's turns, or a deterministic digest when it cannot (the
``demo`` model, a provider failure, an empty answer), so a run always goes on.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from dataclasses import dataclass, field
from typing import Protocol, TypedDict

from agent_kernel.core.config import Settings
from agent_kernel.core.events import ContextCompacted, EventBus, LedgerRecorded
from agent_kernel.core.ledger import Ledger
from agent_kernel.engine.models import Model, resolve
from agent_kernel.engine.models.base import (
    CHARS_PER_TOKEN,
    DEFAULT_WINDOW,
    ChatMessage,
    ToolSchema,
    content_text,
    estimate_tokens,
    tools_json_length,
)

__all__ = ["CHARS_PER_TOKEN", "DEFAULT_WINDOW", "ContextStatus", "ContextWindow", "compress",
           "count_tokens", "digest", "estimate_tokens", "max_tokens", "status_of", "transcript",
           "units", "upper_bound"]

WARNING_PERCENT = 70.0
"""From this share of the window on, the status is ``warning``."""
CRITICAL_PERCENT = 90.0
"""From here ``critical``; the loop compacts a request that reaches it."""
EXCEEDED_PERCENT = 100.0
KEEP_SHARE = 0.4
"""Automatic compaction keeps the recent messages that fit in this share of the window."""
SUMMARY_SHARE = 0.1
"""The share of the window a summary written for automatic compaction may take."""
SUMMARY_HEADING = "Summary of the earlier conversation (compacted to fit the context window):"
SUMMARY_REQUEST = (
    "You compact a conversation between a person and an AI agent so the agent can go on "
    "with less context. Write a concise summary of the transcript below: what the person "
    "asked for, what was decided, what the tools returned that still matters (names, "
    "numbers, file paths, ids), and what is still open. Write only the summary."
)


class ContextStatus(TypedDict):
    """How full the next request leaves the window (what ``get_context_status`` returns)."""

    ok: bool
    usedTokens: int  # noqa: N815 - the tool's result keys are camelCase
    maxTokens: int  # noqa: N815
    usagePercent: float  # noqa: N815
    status: str


def status_of(percent: float) -> str:
    """``normal`` below 70 %, ``warning`` below 90, ``critical`` below 100, else ``exceeded``."""
    if percent >= EXCEEDED_PERCENT:
        return "exceeded"
    if percent >= CRITICAL_PERCENT:
        return "critical"
    if percent >= WARNING_PERCENT:
        return "warning"
    return "normal"


def max_tokens(model: str | Model, settings: Settings) -> int:
    """The window: ``settings.context_window``, else what the model knows of its own
    (litellm's ``max_input_tokens``), else :data:`DEFAULT_WINDOW`. Reads no network."""
    return resolve(model).window(settings)


def count_tokens(model: str | Model, messages: list[ChatMessage],
                 tools: list[ToolSchema] | None = None) -> int:
    """The tokens a request with ``messages`` and ``tools`` takes, counted for ``model``."""
    return resolve(model).count_tokens(messages, tools)


def upper_bound(messages: list[ChatMessage], tools: list[ToolSchema] | None) -> int:
    """A cheap bound no tokenizer's count exceeds: a token is at least one byte, and the
    ASCII JSON of a request is longer than its text plus every framing token."""
    return (len(json.dumps(messages)) + (tools_json_length(tools) if tools else 2)
            + 8 * len(messages) + 64)


def units(messages: list[ChatMessage], start: int = 0) -> list[tuple[int, int]]:
    """``(begin, end)`` index ranges from ``start`` that may not be split: a tool message
    belongs to the unit of the assistant message before it."""
    found: list[tuple[int, int]] = []
    for index in range(start, len(messages)):
        if messages[index].get("role") == "tool" and found:
            found[-1] = (found[-1][0], index + 1)
        else:
            found.append((index, index + 1))
    return found


def _first_kept(messages: list[ChatMessage], head: int, keep_recent: int) -> int:
    """Where the kept part begins: at least ``keep_recent`` messages, whole units, the last
    unit always (the prompt being answered, or the turn whose tool calls are running)."""
    wanted = max(head, len(messages) - max(0, keep_recent))
    cut = len(messages)
    for begin, end in reversed(units(messages, head)):
        if end <= wanted and cut < len(messages):
            break
        cut = begin
    return cut


def _has_system(messages: list[ChatMessage]) -> int:
    return 1 if messages and messages[0].get("role") == "system" else 0


def summary_message(summary: str) -> ChatMessage:
    """The message that stands for the compacted part of the conversation."""
    return {"role": "user", "content": f"{SUMMARY_HEADING}\n\n{summary.strip()}"}


def compress(messages: list[ChatMessage], summary: str, keep_recent: int = 10
             ) -> tuple[int, int]:
    """Replace the older messages by ``summary``, in place; ``(compressed, remaining)``.

    The system prompt stays and is not counted; ``remaining`` counts the messages kept as
    they were (at least ``keep_recent`` when there are that many, more when a unit would be
    split). With nothing older than the kept part, nothing changes and ``compressed`` is 0.
    """
    head = _has_system(messages)
    cut = _first_kept(messages, head, keep_recent)
    compressed = cut - head
    if compressed > 0:
        messages[head:cut] = [summary_message(summary)]
        return compressed, len(messages) - head - 1
    return 0, len(messages) - head


def message_count(count: int, which: str) -> str:
    """``1 recent message``, ``3 recent messages``: for the person's notices."""
    return f"{count} {which} message{'' if count == 1 else 's'}"


def _clip(text: object, limit: int) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def transcript(messages: list[ChatMessage], max_chars: int, per_message: int = 1000
               ) -> str:
    """The messages as lines of text, each cut to ``per_message`` characters; past
    ``max_chars`` the first line stays and the latest lines that fit."""
    lines: list[str] = []
    for message in messages:
        role = message.get("role")
        content = content_text(message.get("content"))  # an image: "[image]", never base64
        if role == "tool":
            lines.append(f"  result: {_clip(content, per_message)}")
            continue
        if isinstance(content, str) and content.startswith(SUMMARY_HEADING):
            # an earlier compaction's summary: its substance, with room to carry it on
            earlier = content[len(SUMMARY_HEADING):]
            lines.append(f"- earlier summary: {_clip(earlier, max(per_message, max_chars // 2))}")
        elif content:
            lines.append(f"- {role}: {_clip(content, per_message)}")
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            arguments = _clip(function.get("arguments"), per_message // 4)
            lines.append(f"- {role} called {function.get('name')}({arguments})")
    if sum(len(line) + 1 for line in lines) <= max_chars or len(lines) < 2:
        return "\n".join(lines)[:max_chars]
    first, kept, used = lines[0], [], len(lines[0]) + 40
    for line in reversed(lines[1:]):
        if used + len(line) + 1 > max_chars:
            break
        kept.append(line)
        used += len(line) + 1
    skipped = len(lines) - 1 - len(kept)
    return "\n".join([first, f"[{skipped} lines left out]", *reversed(kept)])


def digest(messages: list[ChatMessage], max_chars: int) -> str:
    """A summary made without a model: every message, cut short (see :func:`transcript`)."""
    heading = (f"Digest of {len(messages)} earlier messages, made without a model "
               "(each is cut short):")
    return f"{heading}\n{transcript(messages, max(200, max_chars - len(heading)), 300)}"


class WindowHost(Protocol):
    """What compaction needs of the agent whose conversation it is."""

    agent_id: str
    bus: EventBus
    ledger: Ledger


class Spending(Protocol):
    """Where the summary call's tokens and cost are added (a run's result)."""

    usage: dict[str, int]
    cost: float | None


@dataclass(init=False)
class ContextWindow:
    """One run's conversation as the model sees it: its model, messages and window."""

    model: Model
    messages: list[ChatMessage]
    settings: Settings
    compactions: int = field(default=0)

    def __init__(self, model: str | Model, messages: list[ChatMessage],
                 settings: Settings) -> None:
        self.model = resolve(model)
        self.messages = messages
        self.settings = settings
        self.compactions = 0

    @property
    def max_tokens(self) -> int:
        """The window of this run's model (see :func:`max_tokens`)."""
        return self.model.window(self.settings)

    def status(self, tools: list[ToolSchema] | None = None) -> ContextStatus:
        """``{ok, usedTokens, maxTokens, usagePercent, status}`` for the next request."""
        used = self.model.count_tokens(self.messages, tools)
        limit = self.max_tokens
        percent = round(100.0 * used / limit, 2)
        return {"ok": True, "usedTokens": used, "maxTokens": limit, "usagePercent": percent,
                "status": status_of(percent)}

    def compress(self, summary: str, keep_recent: int = 10) -> tuple[int, int]:
        """Compact with ``summary`` (see :func:`compress`)."""
        done = compress(self.messages, summary, keep_recent)
        if done[0]:
            self.compactions += 1
        return done

    async def fit(self, host: WindowHost, run_id: str, tools: list[ToolSchema],
                  spent: Spending) -> ContextCompacted | None:
        """Before a model call: compact when the request reaches :data:`CRITICAL_PERCENT`.

        Keeps the latest whole units that fit in :data:`KEEP_SHARE` of the window (the
        last unit always), summarises the rest, records a ``context_compacted`` ledger
        event and emits :class:`ContextCompacted`. Raises only what cancels a run or
        keeps the ledger from recording.
        """
        if not self.settings.auto_compact:
            return None
        limit = self.max_tokens
        threshold = limit * CRITICAL_PERCENT / 100
        if upper_bound(self.messages, tools) < threshold:
            return None  # no tokenizer needed: most calls stop here
        used = await asyncio.to_thread(self.model.count_tokens, self.messages, tools)
        if used < threshold:
            return None
        head = _has_system(self.messages)
        fixed = await asyncio.to_thread(self.model.count_tokens, self.messages[:head], tools)
        budget, cut = limit * KEEP_SHARE - fixed, len(self.messages)
        for begin, end in reversed(units(self.messages, head)):
            size = await asyncio.to_thread(self.model.count_tokens, self.messages[begin:end])
            if cut < len(self.messages) and size > budget:
                break
            budget, cut = budget - size, begin
        older = self.messages[head:cut]
        if len(older) < 2:
            return None  # nothing to gain: the recent part alone fills the window
        summary, summary_by, why = await self._summarize(older, limit, spent)
        compressed, remaining = self.compress(summary, len(self.messages) - cut)
        after = await asyncio.to_thread(self.model.count_tokens, self.messages, tools)
        fields: dict[str, str] = {"summary_error": why} if why else {}
        record = await asyncio.to_thread(
            host.ledger.record_event, "context_compacted", agent_id=host.agent_id,
            run_id=run_id, compressed_count=compressed, remaining_count=remaining,
            tokens_before=used, tokens_after=after, max_tokens=limit, summary_by=summary_by,
            summary=summary, **fields)
        host.bus.emit(LedgerRecorded(run_id, record))
        by = "a summary the model wrote" if summary_by == "model" else "a digest"
        event = ContextCompacted(
            run_id, f"Context compacted: {message_count(compressed, 'earlier')} replaced by "
            f"{by}{f' ({why})' if why else ''}; {message_count(remaining, 'recent')} kept "
            f"({used:,} → {after:,} of {limit:,} tokens)", compressed_count=compressed,
            remaining_count=remaining, tokens_before=used, tokens_after=after,
            max_tokens=limit, summary_by=summary_by)
        host.bus.emit(event)
        return event

    async def _summarize(self, older: list[ChatMessage], limit: int, spent: Spending
                         ) -> tuple[str, str, str | None]:
        """``(summary, "model" | "digest", why the model's summary was not used)``."""
        summary_tokens = max(64, int(limit * SUMMARY_SHARE))
        if not self.model.writes_summaries:
            return digest(older, summary_tokens * 2), "digest", None

        quiet = dataclasses.replace(
            self.settings, max_retries=min(self.settings.max_retries, 1),
            extra_completion_args={**self.settings.extra_completion_args,
                                   "max_tokens": summary_tokens})
        request: list[ChatMessage] = [{"role": "system", "content": SUMMARY_REQUEST},
                   {"role": "user", "content": transcript(older, limit)}]
        try:
            # no role: the summary is asked for by the compaction, not by the agent's turn
            turn = await self.model.complete(request, [], quiet)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a provider failure, or ours: the digest still makes room
            return digest(older, summary_tokens * 2), "digest", _clip(exc, 300)
        for key, value in turn.usage.items():
            spent.usage[key] = spent.usage.get(key, 0) + int(value)
        if turn.cost is not None:
            spent.cost = (spent.cost or 0.0) + turn.cost
        text = turn.text.strip()
        if not text:
            return digest(older, summary_tokens * 2), "digest", "the model's summary was empty"
        return text[:summary_tokens * CHARS_PER_TOKEN], "model", None
