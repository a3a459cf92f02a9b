"""The scripted server's script in-process: a :class:`ScriptedModel` on ``FunctionModel``.

For a loop test that needs particular answers and nothing of HTTP: each model call takes
the next :class:`~scripted_server.Message` of the script, made into the turn the server
and litellm would have made of it (call ids ``call_<request>_<i>``, usage 10 + 5 unless
the message says). Every request is kept as the body litellm would send
(``messages``, and ``tools`` when there are any) in :attr:`ScriptedModel.requests`, so
the assertions the server's tests make read the same. What is about HTTP (retries, cut
streams, provider errors, what litellm sends) stays on :mod:`scripted_server`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from scripted_server import Message, usage

from agent_kernel.engine.models import FunctionModel, ModelRequest, ModelTurn, ToolCallRequest
from agent_kernel.engine.models.provider_errors import ProviderError

MODEL = "openai/test-model"


def body_of(name: str, request: ModelRequest) -> dict[str, Any]:
    """What litellm would send for ``request``: the messages, and the tools if any."""
    body: dict[str, Any] = {"model": name, "messages": request.messages}
    if request.tools:
        body["tools"] = request.tools
    return body


async def turn_of(message: Message, number: int) -> ModelTurn:
    """The turn the server's answer ``message`` to request ``number`` becomes."""
    if message.delay:
        await asyncio.sleep(message.delay)
    return ModelTurn(
        text=message.text or "",
        tool_calls=[ToolCallRequest(c.id or f"call_{number}_{i}", c.name, c.arguments)
                    for i, c in enumerate(message.calls)],
        usage=dict(message.usage or usage(10, 5)))


class ScriptedModel(FunctionModel):
    """Answers each model call with the next message of its script; use as a context
    manager like the server (there is nothing to start)."""

    def __init__(self, *script: Message, name: str = MODEL) -> None:
        super().__init__(self._answer, name=name)
        self._script = list(script)
        self.requests: list[dict[str, Any]] = []

    def script(self, *entries: Message) -> ScriptedModel:
        """Replace the script with ``entries``."""
        self._script = list(entries)
        return self

    def tool_messages(self, request_index: int) -> list[dict[str, Any]]:
        """The ``role: tool`` messages of one received request."""
        return [m for m in self.requests[request_index]["messages"] if m.get("role") == "tool"]

    async def _answer(self, request: ModelRequest) -> ModelTurn:
        number = len(self.requests)
        self.requests.append(body_of(self.name, request))
        if not self._script:  # the server answers 500: the run ends with a provider error
            raise ProviderError("The model provider failed: the test script is exhausted",
                                status=500, retryable=False)
        return await turn_of(self._script.pop(0), number)

    def __enter__(self) -> ScriptedModel:
        return self

    def __exit__(self, *exc: object) -> None:
        return None
