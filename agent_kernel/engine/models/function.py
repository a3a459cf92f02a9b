"""A model that is a plain function: for tests, and for anyone scripting a model's answers.

As httpx's ``MockTransport`` makes a test a function from request to response, and
pydantic-ai's ``FunctionModel`` a function from messages to a response,
:class:`FunctionModel` puts a function (sync or async) behind the model seam. It
receives a :class:`ModelRequest` (the asking agent's role, the conversation and the
tools on offer) and returns a :class:`~agent_kernel.engine.models.base.ModelTurn` or
just its text. A team test answers each role by its name, without HTTP, litellm or
parsing the instructions::

    def answer(request: ModelRequest) -> ModelTurn | str:
        if request.role == "teller" and request.last["role"] == "user":
            return ModelTurn(tool_calls=[call("delegate", prompt="research Rome")])
        return "Done."

    team = Team(model=FunctionModel(answer), workspace=tmp_path)

Missing tool-call ids are made up, and missing usage is estimated (four characters a
token), so the budget and the views see what a real model would give.
"""

from __future__ import annotations

import inspect
import json
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agent_kernel.core.config import Settings
from agent_kernel.engine.models.base import (
    ChatMessage,
    JsonObject,
    Model,
    ModelTurn,
    OnRetry,
    OnText,
    ToolCallRequest,
    ToolSchema,
    _ignore,
    estimate_tokens,
)

__all__ = ["Answer", "FunctionModel", "ModelRequest", "call"]


@dataclass(frozen=True)
class ModelRequest:
    """What a model is asked: by which role, the conversation so far, the tools on offer."""

    role: str | None
    messages: list[ChatMessage]
    tools: list[ToolSchema]
    settings: Settings

    @property
    def last(self) -> ChatMessage:
        """The latest message (a prompt, or a tool's result)."""
        return self.messages[-1]

    @property
    def tool_names(self) -> list[str]:
        """The names of the tools on offer, in their order."""
        return [str(t.get("function", {}).get("name")) for t in self.tools]

    @property
    def system(self) -> str:
        """The system message's text ('' when there is none)."""
        return next((str(m.get("content") or "") for m in self.messages
                     if m.get("role") == "system"), "")


Answer = ModelTurn | str
"""What a model function returns: a whole turn, or only the text of an answer."""
ModelFunction = Callable[[ModelRequest], Answer | Awaitable[Answer]]


def call(name: str, arguments: JsonObject | str | None = None, /, **more: Any
         ) -> ToolCallRequest:
    """A tool call for a scripted turn: ``call("echo", value="hi")``; ``arguments`` as a
    string is sent as it is (to script broken JSON)."""
    raw = arguments if isinstance(arguments, str) else json.dumps({**(arguments or {}), **more})
    return ToolCallRequest("", name, raw)


class FunctionModel(Model):
    """A model whose every turn is ``function(request)``; see the module's docstring."""

    def __init__(self, function: ModelFunction, *, name: str = "function") -> None:
        self.function = function
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
        """Ask the function; copy what it is given, so later turns cannot change it."""
        request = ModelRequest(role, json.loads(json.dumps(messages)),
                               json.loads(json.dumps(tools)), settings)
        answer = self.function(request)
        if inspect.isawaitable(answer):
            answer = await answer
        turn = ModelTurn(text=answer) if isinstance(answer, str) else answer
        if not isinstance(turn, ModelTurn):
            raise TypeError(f"a model function returns a ModelTurn or a str, got "
                            f"{type(turn).__name__}")
        for tool_call in turn.tool_calls:
            tool_call.id = tool_call.id or f"call_{uuid.uuid4().hex[:12]}"
        if turn.finish_reason is None:
            turn.finish_reason = "tool_calls" if turn.tool_calls else "stop"
        if not turn.usage:
            prompt = estimate_tokens(messages, tools)
            completion = estimate_tokens([turn.as_message()]) if turn.text or \
                turn.tool_calls else 0
            turn.usage = {"prompt_tokens": prompt, "completion_tokens": completion,
                          "total_tokens": prompt + completion}
        if turn.text:
            on_text(turn.text)
        return turn
