"""The offline ``demo`` model behind the model seam: in-process, no litellm, no network.

:class:`DemoModel` asks the demo rules (:mod:`agent_kernel.engine.models.demo_team`,
which plays the team's roles and falls back on :mod:`agent_kernel.engine.models.demo`)
and hands back the same :class:`~agent_kernel.engine.models.base.ModelTurn` a real
model gives: text streamed word by word, tool calls with ids, usage counted in
words, cost 0. So the loop, the tools and the views cannot tell them apart, and a
demo run imports nothing heavy. It writes no compaction summaries (a digest does). The
organiser's JSON requests are answered by :mod:`.demo_organiser`; a tool the rules want
that is not offered is searched for first (:mod:`.demo_find`).
"""

from __future__ import annotations

import asyncio
import json
import uuid

from agent_kernel.core.config import DEMO_MODEL, Settings
from agent_kernel.engine.models import demo_find, demo_organiser
from agent_kernel.engine.models.base import (
    ChatMessage,
    Model,
    ModelTurn,
    OnRetry,
    OnText,
    ToolCallRequest,
    ToolSchema,
    _ignore,
)


class DemoModel(Model):
    """The offline demo model: fixed rules that play a tool-calling LLM."""

    name = DEMO_MODEL
    writes_summaries = False

    def accepts_images(self, settings: Settings) -> bool:
        """The demo reads words only, whatever ``settings.model_images`` says."""
        return False

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
        """The demo rules' answer as ``role``, streamed word by word when asked to; an
        organiser request (a todo's references, a plan) gets its JSON answer whole."""
        if (organised := demo_organiser.answer(messages)) is not None:
            return ModelTurn(text=organised, cost=0.0, finish_reason="stop",
                             usage={"prompt_tokens": 0, "completion_tokens": 0,
                                    "total_tokens": 0})
        answer = demo_find.respond(messages, tools, role)
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
