"""The litellm model: one turn for every provider, streamed, retried on provider errors.

:class:`LitellmModel` is the :class:`~agent_kernel.engine.models.base.Model` of every
real provider. litellm is loaded by :mod:`agent_kernel.engine.models.litellm_loader` on
the first turn (never at import: ``%load_ext`` stays fast), and its failures are
worded by :mod:`agent_kernel.engine.models.provider_errors`. A turn streams one
assistant response, gathering tool-call deltas split across chunks, and retries
429s, 5xx, timeouts and broken streams with exponential backoff before giving up
with a :class:`ProviderError` a person can read. It counts tokens with litellm's
tokenizer and reads the window from litellm's model data.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
import uuid
from typing import Any

from agent_kernel.core.config import Settings
from agent_kernel.engine.models import fast_path
from agent_kernel.engine.models.base import (
    DEFAULT_WINDOW,
    ChatMessage,
    Model,
    ModelTurn,
    OnRetry,
    OnText,
    ToolCallRequest,
    ToolSchema,
    _ignore,
)
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

__all__ = ["LIBRARY", "BrokenStream", "LitellmModel", "ModelTurn", "ProviderError",
           "ToolCallRequest", "complete", "load_litellm", "load_off_loop", "needs_loading",
           "warm_up"]

MAX_RETRY_AFTER = 60.0


_model_data: dict[tuple[str, str, int], object] = {}
"""What litellm's model data said of a model (its window, whether it reads images, that it
has no price), by question, model and the size of litellm's table: looking a model up
tries a dozen spellings of its name (about 0.5 ms, 1.5 ms for a model it does not know)
and a turn asked up to three times; ``register_model`` grows the table, so a newly
priced model is looked up again."""


def _known(litellm: Any, question: str, model: str) -> object:
    """The cached answer, or ``_model_data`` itself when there is none yet."""
    return _model_data.get((question, model, len(litellm.model_cost)), _model_data)


def _remember(litellm: Any, question: str, model: str, answer: object) -> None:
    if len(_model_data) > 1000:  # many models or registrations: start over
        _model_data.clear()
    _model_data[(question, model, len(litellm.model_cost))] = answer


def _cost(litellm: Any, model: str, usage: dict[str, int]) -> float | None:
    """litellm's price of ``usage`` (None when it has none for the model)."""
    if _known(litellm, "unpriced", model) is True:
        return None
    try:
        prompt, completion = litellm.cost_per_token(
            model=model,
            prompt_tokens=usage.get("prompt_tokens", 0),
            completion_tokens=usage.get("completion_tokens", 0),
        )
        return float(prompt + completion)
    except Exception:  # litellm has no price for the model: it will not have one next turn
        _remember(litellm, "unpriced", model, True)
        return None


_USAGE_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")


def _usage_dict(usage: object) -> dict[str, int]:
    if usage is None:
        return {}
    return {k: int(getattr(usage, k, 0) or 0) for k in _USAGE_KEYS}


def _asked(model: str, messages: list[ChatMessage], tools: list[ToolSchema],
           settings: Settings) -> dict[str, Any]:
    """What a turn asks the provider for, the same on both paths."""
    asked = {"model": model, "messages": messages, **settings.extra_completion_args}
    if tools:
        asked["tools"] = tools
    if settings.temperature is not None:
        asked["temperature"] = settings.temperature
    return asked


async def _complete_once(
    model: str,
    messages: list[ChatMessage],
    tools: list[ToolSchema],
    settings: Settings,
    on_text: OnText,
) -> ModelTurn:
    litellm = load_litellm()
    where = fast_path.route(model, settings, litellm)
    if where is not None:
        return await _complete_fast(litellm, where, model, messages, tools, settings, on_text)
    # extra_completion_args may set litellm's own timeout and num_retries
    kwargs = {"timeout": settings.request_timeout, "num_retries": 0,
              **_asked(model, messages, tools, settings)}
    if settings.api_base:
        kwargs["api_base"] = settings.api_base
    if settings.api_key:
        kwargs["api_key"] = settings.api_key
    if not settings.stream:
        response = await litellm.acompletion(**kwargs)
        turn = _whole_turn(response, on_text)
        turn.cost = _cost(litellm, model, turn.usage)
        return turn
    stream = await litellm.acompletion(
        **kwargs, stream=True, stream_options={"include_usage": True}
    )
    turn = await _read_stream(stream, on_text)
    if _truncated(stream):
        raise BrokenStream(CUT_STREAM_WORDS)
    turn.cost = _cost(litellm, model, turn.usage)
    return turn


async def _complete_fast(litellm: Any, where: fast_path.Route, model: str,
                         messages: list[ChatMessage], tools: list[ToolSchema],
                         settings: Settings, on_text: OnText) -> ModelTurn:
    """The same turn through the openai SDK (see :mod:`.fast_path`); failures come out as
    the exceptions litellm raises for them."""
    body = _asked(where.model, fast_path.as_sent(messages), tools, settings)
    if settings.stream:
        body.update(stream=True, stream_options={"include_usage": True})
    started = time.time()
    fast_path.requests_sent += 1
    try:
        answer = await fast_path.send(where, body, settings.request_timeout)
    except Exception as exc:
        raise fast_path.litellm_error(exc, model, where.model, settings.request_timeout,
                                      started, streamed=settings.stream) from exc
    if not settings.stream:
        turn = _whole_turn(answer, on_text)
    else:
        said: list[str] = []

        def heard(text: str) -> None:
            said.append(text)
            on_text(text)

        try:
            turn = await _read_chunks(answer, heard)
        except BrokenStream:
            raise
        except Exception as exc:
            raise fast_path.litellm_error(exc, model, where.model, settings.request_timeout,
                                          started, mid_stream=True,
                                          generated="".join(said)) from exc
        finally:  # a stream left unread (stopped, broken) gives its connection back
            with contextlib.suppress(Exception):
                await answer.close()
    turn.cost = _cost(litellm, model, turn.usage)
    return turn


def _whole_turn(response: Any, on_text: OnText) -> ModelTurn:
    """A non-streamed response as a turn (its text said at once)."""
    choice = response.choices[0]
    turn = ModelTurn(text=choice.message.content or "", finish_reason=choice.finish_reason)
    if turn.text:
        on_text(turn.text)
    for call in choice.message.tool_calls or []:
        turn.tool_calls.append(
            ToolCallRequest(call.id or f"call_{uuid.uuid4().hex[:12]}",
                            call.function.name or "", call.function.arguments or "")
        )
    turn.usage = _usage_dict(getattr(response, "usage", None))
    return turn


async def _read_stream(stream: Any, on_text: OnText) -> ModelTurn:
    """Read a stream of chat chunks (litellm's or the SDK's) into a turn, text said live,
    tool-call deltas gathered by index; :class:`BrokenStream` when no chunk finished it."""
    turn = ModelTurn()
    partial: dict[int, dict[str, str]] = {}
    text_parts: list[str] = []
    async for chunk in stream:
        usage = getattr(chunk, "usage", None)  # litellm's chunks may lack it
        if usage:
            turn.usage = _usage_dict(usage)
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        delta = choice.delta
        content = getattr(delta, "content", None)
        if content:
            text_parts.append(content)
            on_text(content)
        for call in getattr(delta, "tool_calls", None) or ():
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
    return _finished(turn, text_parts, partial)


async def _read_chunks(stream: Any, on_text: OnText) -> ModelTurn:
    """:func:`_read_stream` for the fast path's chunks, the JSON the server sent as dicts.

    Read as leniently as the SDK builds its chunk models (which validate nothing): a field
    that is missing or null is skipped, one of another type is taken as it comes.
    """
    turn = ModelTurn()
    partial: dict[int, dict[str, str]] = {}
    text_parts: list[str] = []
    async for chunk in stream:
        if not isinstance(chunk, dict):
            continue
        usage = chunk.get("usage")
        if usage:
            turn.usage = {k: int(usage.get(k) or 0) for k in _USAGE_KEYS}
        choices = chunk.get("choices")
        if not choices:
            continue
        choice = choices[0]
        delta = choice.get("delta") or {}
        content = delta.get("content")
        if content:
            text_parts.append(content)
            on_text(content)
        for call in delta.get("tool_calls") or ():
            index = call.get("index")
            slot = partial.setdefault(len(partial) if index is None else index,
                                      {"id": "", "name": "", "arguments": ""})
            if call.get("id"):
                slot["id"] = call["id"]
            function = call.get("function")
            if function:
                if function.get("name"):
                    slot["name"] += function["name"]
                if function.get("arguments"):
                    slot["arguments"] += function["arguments"]
        if choice.get("finish_reason"):
            turn.finish_reason = choice["finish_reason"]
    return _finished(turn, text_parts, partial)


def _finished(turn: ModelTurn, text_parts: list[str],
              partial: dict[int, dict[str, str]]) -> ModelTurn:
    """The turn a whole stream made: its text and tool calls (a stream with no
    ``finish_reason`` was cut short)."""
    if turn.finish_reason is None:
        raise BrokenStream(CUT_STREAM_WORDS)
    turn.text = "".join(text_parts)
    for index in sorted(partial):
        slot = partial[index]
        turn.tool_calls.append(
            ToolCallRequest(slot["id"] or f"call_{uuid.uuid4().hex[:12]}", slot["name"],
                            slot["arguments"])
        )
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
    messages: list[ChatMessage],
    tools: list[ToolSchema],
    settings: Settings,
    *,
    on_text: OnText,
    on_retry: OnRetry,
) -> ModelTurn:
    """One assistant turn of litellm's ``model``, retried with backoff; raises
    :class:`ProviderError`."""
    attempts = settings.max_retries + 1
    for attempt in range(1, attempts + 1):
        try:
            turn = await _complete_once(model, messages, tools, settings, on_text)
            turn.attempts = attempt
            return turn
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            retryable, status, message = classify(exc, model, bool(settings.api_key),
                                                  settings.api_base)
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


class LitellmModel(Model):
    """Any model litellm routes (``openai/gpt-4o-mini``, ``anthropic/...``), over HTTP.

    The role is not sent: a provider reads who is asking from the instructions.
    """

    library = LIBRARY

    def __init__(self, name: str) -> None:
        self.name = name

    async def complete(
        self,
        messages: list[ChatMessage],
        tools: list[ToolSchema],
        settings: Settings,
        *,
        role: str | None = None,
        on_text: OnText = _ignore,
        on_retry: OnRetry = _ignore,
    ) -> ModelTurn:
        """One turn through litellm (see :func:`complete`)."""
        return await complete(self.name, messages, tools, settings, on_text=on_text,
                              on_retry=on_retry)

    def accepts_images(self, settings: Settings) -> bool:
        """``settings.model_images`` when set, else litellm's model data says (a model it
        does not know reads none)."""
        if settings.model_images is not None:
            return settings.model_images
        litellm = load_litellm()
        known = _known(litellm, "images", self.name)
        if isinstance(known, bool):
            return known
        try:
            reads = bool(litellm.supports_vision(model=self.name))
        except Exception:  # litellm raises for a model it has no data on
            reads = False
        _remember(litellm, "images", self.name, reads)
        return reads

    def count_tokens(self, messages: list[ChatMessage], tools: list[ToolSchema] | None = None
                     ) -> int:
        """litellm's tokenizer for this model."""
        return int(load_litellm().token_counter(model=self.name, messages=messages,
                                                tools=tools or None))

    def window(self, settings: Settings) -> int:
        """``settings.context_window``, else litellm's ``max_input_tokens`` (or
        ``max_tokens``) for the model, else :data:`DEFAULT_WINDOW`. Reads no network."""
        if settings.context_window is not None:
            return settings.context_window
        litellm = load_litellm()
        known = _known(litellm, "window", self.name)
        if isinstance(known, int):
            return known
        try:
            info = litellm.get_model_info(self.name)
            value = info.get("max_input_tokens") or info.get("max_tokens")
            window = int(value) if value else DEFAULT_WINDOW
        except Exception:  # litellm does not know the model
            window = DEFAULT_WINDOW
        _remember(litellm, "window", self.name, window)
        return window

    def needs_loading(self) -> bool:
        """True until litellm is imported in this process."""
        return needs_loading(self.name)

    async def load(self) -> float:
        """Import litellm in a worker thread; the seconds waited."""
        return await load_off_loop()

    def warm_up(self) -> None:
        """Import litellm in a background thread."""
        warm_up()
