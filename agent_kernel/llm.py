"""The only door to litellm: one streamed model turn, retried on provider errors.

litellm takes seconds to import, so it is loaded on first use (or warmed in a
background thread by ``%load_ext``). Loading also sets the offline cost map,
silences its banner, and registers the offline ``demo`` model as a litellm
custom provider, so the demo runs through exactly the same path as a real
model. :func:`complete` streams one assistant turn, gathering tool-call deltas
split across chunks, and retries 429s, 5xx, timeouts and broken streams with
exponential backoff before giving up with a :class:`ProviderError` a person
can read.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import random
import re
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from .config import DEMO_MODEL, Settings

DEMO_PROVIDER = "agent-kernel-demo"
MAX_RETRY_AFTER = 60.0
_lock = threading.Lock()
_litellm: Any = None


def load_litellm() -> Any:
    """Import and configure litellm once; safe from any thread."""
    global _litellm
    if _litellm is not None:
        return _litellm
    with _lock:
        if _litellm is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            import litellm

            litellm.suppress_debug_info = True
            litellm.telemetry = False
            # litellm imports this on the first call with tools (seconds): do it now
            with contextlib.suppress(ImportError):
                import litellm.responses.mcp.chat_completions_handler  # noqa: F401
            _register_demo(litellm)
            _litellm = litellm
    return _litellm


def warm_up() -> threading.Thread:
    """Import litellm in a daemon thread so the first run does not wait for it."""
    thread = threading.Thread(target=load_litellm, name="agent-kernel-warmup", daemon=True)
    thread.start()
    # A process that exits while this thread is inside litellm's import aborts
    # ("FATAL: exception not rethrown"): let the import finish before exiting.
    atexit.register(thread.join, 30.0)
    return thread


def litellm_model(model: str) -> str:
    """The litellm model string for a user-facing model name."""
    return f"{DEMO_PROVIDER}/demo" if model == DEMO_MODEL else model


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


class ProviderError(RuntimeError):
    """The model provider failed and retries did not help."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False):
        super().__init__(message)
        self.status = status
        self.retryable = retryable


class BrokenStream(RuntimeError):
    """The stream ended before the model said it had finished."""


_MISSING_KEY = re.compile(r"(?i)missing credentials|api_key client option must be set|"
                          r"no api key|api[_ ]key (?:is )?(?:not set|missing|required)")


def _classify(exc: BaseException, model: str = "", key_given: bool = False
              ) -> tuple[bool, int | None, str]:
    """(retryable, status, short message) for an exception from litellm."""
    status = getattr(exc, "status_code", None)
    name = type(exc).__name__
    # litellm's class prefixes go ("litellm.BadRequestError: …"); its URLs stay whole.
    text = re.sub(r"\blitellm\.(?=[A-Z])", "", str(exc)).strip()
    text = re.sub(r"^(\w+): (?:\1: )+", r"\1: ", text)  # litellm repeats the class name
    if len(text) > 300:
        text = text[:297] + "..."
    if isinstance(exc, BrokenStream):
        return True, None, str(exc)
    if status in (401, 403) or "Authentication" in name or "PermissionDenied" in name or \
            _MISSING_KEY.search(text):
        said = text.split(" - ", 1)[-1][:200]
        advice = _key_advice(model, status, key_given)
        return False, status, f"{advice} (the provider said: {said})"
    if "MidStream" in name or "RemoteProtocol" in name or "ReadError" in name:
        return True, status, f"the stream broke: {text}"
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)) or "Timeout" in name:
        return True, status, f"the request timed out ({text})"
    if status == 429 or "RateLimit" in name:
        return True, 429, f"rate limited (429): {text}"
    if isinstance(status, int) and status >= 500:
        return True, status, f"server error ({status}): {text}"
    if "APIConnectionError" in name or "ServiceUnavailable" in name or "InternalServer" in name:
        return True, status, f"connection problem: {text}"
    if isinstance(status, int):
        return False, status, f"request refused ({status}): {text}"
    return False, status, f"{name}: {text}"


def _key_advice(model: str, status: int | None, key_given: bool = False) -> str:
    """Which variable to set for ``model``'s provider, from litellm's own provider data."""
    provider, missing, present = "the provider", [], []
    try:
        litellm = load_litellm()
        target = litellm_model(model)
        provider = str(litellm.get_llm_provider(target)[1])
        if not key_given:
            missing = list(litellm.validate_environment(target).get("missing_keys") or [])
    except Exception:  # an unknown model string: say what we can
        pass
    if not missing:
        from .redaction import secret_name

        prefix = provider.upper().replace("-", "_") + "_"
        present = sorted(k for k in os.environ if k.startswith(prefix) and secret_name(k))
    switch = ("or switch to the offline demo model (`%agent_config --model demo` in a "
              "notebook, `--model demo` on the command line)")
    if missing:
        return (f"no API key for {provider}: set {' and '.join(missing)} in the environment "
                f"(or pass api_key), {switch}")
    said = f" ({status})" if status else ""
    where = " given as api_key" if key_given else (
        f" in {', '.join(present)}" if present else "")
    return (f"{provider} refused the API key{said}: check the key{where} and that it may use "
            f"this model, {switch}")


def _retry_after(exc: BaseException) -> float | None:
    """The server's ``Retry-After`` in seconds (litellm keeps the headers aside)."""
    for headers in (getattr(exc, "litellm_response_headers", None),
                    getattr(getattr(exc, "response", None), "headers", None),
                    getattr(exc, "headers", None)):
        get = getattr(headers, "get", None)
        value = get("retry-after") if callable(get) else None
        if value is not None:
            try:
                return max(0.0, float(value))
            except ValueError:
                return None
    return None


def _cost(litellm: Any, model: str, usage: dict[str, int]) -> float | None:
    if model.startswith(DEMO_PROVIDER):
        return 0.0
    try:
        prompt, completion = litellm.cost_per_token(
            model=model,
            prompt_tokens=usage.get("prompt_tokens", 0),
            completion_tokens=usage.get("completion_tokens", 0),
        )
        return float(prompt + completion)
    except Exception:
        return None


def _usage_dict(usage: Any) -> dict[str, int]:
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
    litellm = load_litellm()
    kwargs: dict[str, Any] = {
        "model": litellm_model(model),
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
        raise BrokenStream("the stream ended before the model finished its answer")
    turn.text = "".join(text_parts)
    for index in sorted(partial):
        slot = partial[index]
        turn.tool_calls.append(
            ToolCallRequest(slot["id"] or f"call_{uuid.uuid4().hex[:12]}", slot["name"],
                            slot["arguments"])
        )
    turn.cost = _cost(litellm, kwargs["model"], turn.usage)
    return turn


def _truncated(stream: Any) -> bool:
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
            retryable, status, message = _classify(exc, model, bool(settings.api_key))
            if not retryable or attempt == attempts:
                tried = f" after {attempt} attempts" if attempt > 1 else ""
                raise ProviderError(
                    f"The model provider failed{tried}: {message}", status=status,
                    retryable=retryable,
                ) from exc
            delay = min(settings.retry_max_delay, settings.retry_base_delay * 2 ** (attempt - 1))
            asked = _retry_after(exc)
            # A server may ask for any wait; a run never stalls longer than MAX_RETRY_AFTER.
            delay = min(asked, MAX_RETRY_AFTER) if asked else delay * (0.8 + 0.4 * random.random())
            on_retry(attempt, delay, message)
            await asyncio.sleep(delay)
    raise AssertionError("unreachable")


def _register_demo(litellm: Any) -> None:
    """Serve :mod:`agent_kernel.demo` to litellm as the ``agent-kernel-demo`` provider."""
    from litellm import CustomLLM
    from litellm.types.utils import ModelResponse

    from . import demo

    def tokens(messages: list[dict[str, Any]], text: str) -> dict[str, int]:
        prompt = sum(len(str(m.get("content") or "").split()) for m in messages)
        completion = len(text.split())
        return {"prompt_tokens": prompt, "completion_tokens": completion,
                "total_tokens": prompt + completion}

    def calls_of(turn: demo.DemoTurn) -> list[dict[str, Any]]:
        import json

        return [
            {"id": f"call_demo_{uuid.uuid4().hex[:10]}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}
            for name, args in turn.tool_calls
        ]

    class DemoLLM(CustomLLM):  # type: ignore[misc]
        """The offline demo model as a litellm provider."""

        async def acompletion(self, *args: Any, **kwargs: Any) -> Any:
            messages = kwargs.get("messages") or []
            turn = demo.respond(messages, (kwargs.get("optional_params") or {}).get("tools", []))
            calls = calls_of(turn)
            return ModelResponse(
                model="demo",
                choices=[{
                    "index": 0,
                    "finish_reason": "tool_calls" if calls else "stop",
                    "message": {"role": "assistant", "content": turn.text or None,
                                "tool_calls": calls or None},
                }],
                usage=tokens(messages, turn.text),
            )

        def completion(self, *args: Any, **kwargs: Any) -> Any:
            return asyncio.run(self.acompletion(*args, **kwargs))

        # litellm calls it with keywords only; its declared signature lists them all.
        async def astreaming(  # type: ignore[override]
                self, *args: Any, **kwargs: Any) -> AsyncIterator[dict[str, Any]]:
            messages = kwargs.get("messages") or []
            turn = demo.respond(messages, (kwargs.get("optional_params") or {}).get("tools", []))
            words = turn.text.split(" ") if turn.text else []
            for i, word in enumerate(words):
                yield {"text": word + (" " if i < len(words) - 1 else ""), "tool_use": None,
                       "is_finished": False, "finish_reason": "", "usage": None, "index": 0}
                if i % 8 == 7:
                    await asyncio.sleep(0.01)
            for i, call in enumerate(calls_of(turn)):
                yield {"text": "", "tool_use": {**call, "index": i}, "is_finished": False,
                       "finish_reason": "", "usage": None, "index": 0}
            yield {"text": "", "tool_use": None, "is_finished": True,
                   "finish_reason": "tool_calls" if turn.tool_calls else "stop",
                   "usage": tokens(messages, turn.text), "index": 0}

    litellm.custom_provider_map = [
        *[p for p in litellm.custom_provider_map if p.get("provider") != DEMO_PROVIDER],
        {"provider": DEMO_PROVIDER, "custom_handler": DemoLLM()},
    ]
    from litellm.utils import custom_llm_setup

    custom_llm_setup()


def monotonic_ms(start: float) -> int:
    """Milliseconds since ``start`` (a ``time.perf_counter`` reading)."""
    return int((time.perf_counter() - start) * 1000)
