"""One model turn, streamed, retried on provider errors: the loop's door to a model.

litellm is loaded by :mod:`agent_kernel.engine.models.litellm_loader` on first use by a
model that needs it, and its failures are worded by
:mod:`agent_kernel.engine.models.provider_errors`. The offline ``demo`` model needs none of
it: :func:`complete` asks :mod:`agent_kernel.engine.models.demo` in-process and hands back
the same :class:`ModelTurn` (text streamed word by word, tool calls with ids,
usage, cost 0), so a demo run imports nothing heavy. For other models
:func:`complete` streams one assistant turn, gathering tool-call deltas split
across chunks, and retries 429s, 5xx, timeouts and broken streams with
exponential backoff before giving up with a :class:`ProviderError` a person
can read.
"""

from __future__ import annotations

import asyncio
import json
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent_kernel.core.config import DEMO_MODEL, Settings
from agent_kernel.engine.models.litellm_loader import (
    LIBRARY,
    load_litellm,
    load_off_loop,
    needs_loading,
    warm_up,
)
from agent_kernel.engine.models.provider_errors import (
    CUT_STREAM_WORDS,
    BrokenStream,
    ProviderError,
    classify,
    retry_after,
)

__all__ = ["LIBRARY", "BrokenStream", "ModelTurn", "ProviderError", "ToolCallRequest",
           "complete", "load_litellm", "load_off_loop", "needs_loading", "warm_up"]

MAX_RETRY_AFTER = 60.0


@dataclass
class ToolCallRequest:
    """A tool call as the model asked for it (arguments still raw JSON text)."""

    id: str
    name: str
    arguments: str


@dataclass
class ModelTurn:
    """One assistant response: its text, tool calls and usage."""

    text: str = ""
    tool_calls: list[ToolCallRequest] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    cost: float | None = None
    finish_reason: str | None = None
    attempts: int = 1

    def as_message(self) -> dict[str, Any]:
        """The OpenAI-format assistant message for the conversation."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text or None}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": _valid_json(c.arguments)}}
                for c in self.tool_calls
            ]
        return message


def _valid_json(arguments: str) -> str:
    """The arguments to keep in the conversation: ``{}`` when they are not JSON.

    Some providers' message conversion (Anthropic's, in litellm) parses the
    arguments of earlier calls and fails the whole request on bad JSON; the
    tool result already tells the model what was wrong with what it sent.
    """
    try:
        json.loads(arguments)
    except (ValueError, RecursionError):  # too deep is as unusable as broken
        return "{}"
    return arguments


def _cost(litellm: Any, model: str, usage: dict[str, int]) -> float | None:
    try:
        prompt, completion = litellm.cost_per_token(
            model=model,
            prompt_tokens=usage.get("prompt_tokens", 0),
            completion_tokens=usage.get("completion_tokens", 0),
        )
        return float(prompt + completion)
    except Exception:
        return None


def _usage_dict(usage: object) -> dict[str, int]:
    if usage is None:
        return {}
    keys = ("prompt_tokens", "completion_tokens", "total_tokens")
    return {k: int(getattr(usage, k, 0) or 0) for k in keys}


async def _complete_once(
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    settings: Settings,
    on_text: Callable[[str], None],
) -> ModelTurn:
    if model == DEMO_MODEL:
        return await _complete_demo(messages, tools, settings, on_text)
    litellm = load_litellm()
    kwargs: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "timeout": settings.request_timeout,
        "num_retries": 0,
        **settings.extra_completion_args,
    }
    if tools:
        kwargs["tools"] = tools
    if settings.api_base:
        kwargs["api_base"] = settings.api_base
    if settings.api_key:
        kwargs["api_key"] = settings.api_key
    if settings.temperature is not None:
        kwargs["temperature"] = settings.temperature
    turn = ModelTurn()
    if not settings.stream:
        response = await litellm.acompletion(**kwargs)
        choice = response.choices[0]
        turn.text = choice.message.content or ""
        if turn.text:
            on_text(turn.text)
        for call in choice.message.tool_calls or []:
            turn.tool_calls.append(
                ToolCallRequest(call.id or f"call_{uuid.uuid4().hex[:12]}",
                                call.function.name or "", call.function.arguments or "")
            )
        turn.finish_reason = choice.finish_reason
        turn.usage = _usage_dict(getattr(response, "usage", None))
        turn.cost = _cost(litellm, kwargs["model"], turn.usage)
        return turn

    stream = await litellm.acompletion(
        **kwargs, stream=True, stream_options={"include_usage": True}
    )
    partial: dict[int, dict[str, str]] = {}
    text_parts: list[str] = []
    async for chunk in stream:
        usage = getattr(chunk, "usage", None)
        if usage:
            turn.usage = _usage_dict(usage)
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        delta = choice.delta
        if getattr(delta, "content", None):
            text_parts.append(delta.content)
            on_text(delta.content)
        for call in getattr(delta, "tool_calls", None) or []:
            index = call.index if call.index is not None else len(partial)
            slot = partial.setdefault(index, {"id": "", "name": "", "arguments": ""})
            if call.id:
                slot["id"] = call.id
            if call.function is not None:
                if call.function.name:
                    slot["name"] += call.function.name
                if call.function.arguments:
                    slot["arguments"] += call.function.arguments
        if choice.finish_reason:
            turn.finish_reason = choice.finish_reason
    if turn.finish_reason is None or _truncated(stream):
        raise BrokenStream(CUT_STREAM_WORDS)
    turn.text = "".join(text_parts)
    for index in sorted(partial):
        slot = partial[index]
        turn.tool_calls.append(
            ToolCallRequest(slot["id"] or f"call_{uuid.uuid4().hex[:12]}", slot["name"],
                            slot["arguments"])
        )
    turn.cost = _cost(litellm, kwargs["model"], turn.usage)
    return turn


async def _complete_demo(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    settings: Settings,
    on_text: Callable[[str], None],
) -> ModelTurn:
    """The offline demo model's turn, in-process: no litellm, no network."""
    from agent_kernel.engine.models import (
        demo_team,  # the team's roles first, then the single demo model's rules
    )

    answer = demo_team.respond(messages, tools)
    turn = ModelTurn(text=answer.text, cost=0.0,
                     finish_reason="tool_calls" if answer.tool_calls else "stop")
    if settings.stream:
        words = answer.text.split(" ") if answer.text else []
        for i, word in enumerate(words):
            on_text(word + (" " if i < len(words) - 1 else ""))
            if i % 8 == 7:  # let the loop draw what has streamed so far
                await asyncio.sleep(0.01)
    elif answer.text:
        on_text(answer.text)
    turn.tool_calls = [
        ToolCallRequest(f"call_demo_{uuid.uuid4().hex[:10]}", name,
                        json.dumps(args, ensure_ascii=False))
        for name, args in answer.tool_calls
    ]
    prompt = sum(len(str(m.get("content") or "").split()) for m in messages)
    completion = len(answer.text.split())
    turn.usage = {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion}
    return turn


def _truncated(stream: object) -> bool:
    """An OpenAI stream that ended with no ``finish_reason`` from the server.

    litellm adds a closing chunk with ``finish_reason="stop"`` to every stream
    that ends, so a body cut short but closed cleanly looks complete; the
    stream wrapper still remembers whether the server itself said it finished.
    """
    if getattr(stream, "custom_llm_provider", None) != "openai":
        return False
    return (getattr(stream, "received_finish_reason", "") is None
            and getattr(stream, "intermittent_finish_reason", "") is None)


async def complete(
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    settings: Settings,
    *,
    on_text: Callable[[str], None],
    on_retry: Callable[[int, float, str], None],
) -> ModelTurn:
    """One assistant turn, retried with backoff; raises :class:`ProviderError`."""
    attempts = settings.max_retries + 1
    for attempt in range(1, attempts + 1):
        try:
            turn = await _complete_once(model, messages, tools, settings, on_text)
            turn.attempts = attempt
            return turn
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            retryable, status, message = classify(exc, model, bool(settings.api_key))
            if not retryable or attempt == attempts:
                tried = f" after {attempt} attempts" if attempt > 1 else ""
                raise ProviderError(
                    f"The model provider failed{tried}: {message}", status=status,
                    retryable=retryable,
                ) from exc
            delay = min(settings.retry_max_delay, settings.retry_base_delay * 2 ** (attempt - 1))
            asked = retry_after(exc)
            # A server may ask for any wait; a run never stalls longer than MAX_RETRY_AFTER.
            delay = min(asked, MAX_RETRY_AFTER) if asked else delay * (0.8 + 0.4 * random.random())
            on_retry(attempt, delay, message)
            await asyncio.sleep(delay)
    raise AssertionError("unreachable")
