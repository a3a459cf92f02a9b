"""The model seam: what the loop asks of a model, and what one turn of it gives back.

Every model a run talks to is a :class:`Model`: one ``async complete(...)`` that
turns the conversation, the tools on offer and the asking agent's role into a
:class:`ModelTurn` (text streamed through ``on_text``, tool calls, usage, cost).
The loop, the context window and the team know nothing else about it, so a test
or a user can put any function behind it (:class:`~.function.FunctionModel`) the
way httpx's ``MockTransport`` puts one behind a client. Three ship with the
package: :class:`~.llm.LitellmModel` (every provider, over HTTP, retried),
:class:`~.demo_model.DemoModel` (the offline rules) and
:class:`~.function.FunctionModel`. :func:`~.resolve.resolve` turns a name into one.

A model also says how it counts tokens and how large its window is, so context care
(:mod:`agent_kernel.engine.context`) needs no tokenizer for a model that has none:
the default is the estimate of four characters a token.
"""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, Literal, TypedDict, TypeVar

from agent_kernel.core.config import Settings
from agent_kernel.core.json_types import JsonObject

__all__ = ["CHARS_PER_TOKEN", "DEFAULT_WINDOW", "ChatMessage", "FunctionCall", "FunctionSpec",
           "JsonObject", "Model", "ModelTurn", "OnRetry", "OnText", "Role", "ToolCallItem",
           "ToolCallRequest", "ToolSchema", "estimate_tokens"]

DEFAULT_WINDOW = 128_000
"""The window of a model nothing says more of, unless ``Settings.context_window`` says."""
CHARS_PER_TOKEN = 4
"""The estimate of a model without a tokenizer; budgets of text assume a harsher two."""

OnText = Callable[[str], None]
"""Called with each piece of the answer's text as it streams."""
OnRetry = Callable[[int, float, str], None]
"""Called before a retry with the attempt that failed, the wait in seconds and why."""

Role = Literal["system", "user", "assistant", "tool"]
"""Who speaks in a chat message."""


class FunctionCall(TypedDict):
    """The function a tool call names, with its arguments as raw JSON text."""

    name: str
    arguments: str


class ToolCallItem(TypedDict):
    """One tool call in an assistant message (OpenAI format)."""

    id: str
    type: Literal["function"]
    function: FunctionCall


class _Spoken(TypedDict):
    """What every chat message has: who speaks."""

    role: Role


class ImageURL(TypedDict):
    """Where an image part's picture is: a ``data:image/png;base64,...`` URL here."""

    url: str


class ContentPart(TypedDict, total=False):
    """One part of a message made of parts (OpenAI format): text, or an image."""

    type: Literal["text", "image_url"]
    text: str
    image_url: ImageURL


class ChatMessage(_Spoken, total=False):
    """One OpenAI-format chat message: the shape the loop, the models, compaction and
    the team pass around (``content`` is None in an assistant turn of only calls;
    ``tool_call_id`` and ``name`` are on tool results)."""

    content: str | list[ContentPart] | None
    """Text; a list of parts only in the message that shows a model the tools' images."""
    tool_calls: list[ToolCallItem]
    tool_call_id: str
    name: str


class _Named(TypedDict):
    """What every function offered to a model has: its name."""

    name: str


class FunctionSpec(_Named, total=False):
    """A function offered to the model: name, what it does, its parameters' JSON Schema."""

    description: str
    parameters: JsonObject


class ToolSchema(TypedDict):
    """One OpenAI-format tool (``{"type": "function", "function": {...}}``)."""

    type: Literal["function"]
    function: FunctionSpec


_Made = TypeVar("_Made")


class PerSchemaList(Generic[_Made]):
    """``make(tools)`` worked out once per schema list and kept, by the identities of its
    schemas (which are kept with it, so no id is reused while its entry lives). A registry
    builds each schema once, shares it with every registry of the same tools and never
    changes it (``ToolRegistry._built``, which hands out copies of the list, not of the
    schemas), so a team's roles, each with its own list, each hit their own entry."""

    def __init__(self, make: Callable[[list[ToolSchema]], _Made], limit: int = 64) -> None:
        self._make = make
        self._limit = limit
        self._kept: dict[tuple[int, ...], tuple[list[ToolSchema], _Made]] = {}

    def __call__(self, tools: list[ToolSchema]) -> _Made:
        key = tuple(map(id, tools))
        kept = self._kept.get(key)
        if kept is not None:
            return kept[1]
        if len(self._kept) >= self._limit:  # tools changed often: start over
            self._kept.clear()
        made = self._make(tools)
        self._kept[key] = (list(tools), made)
        return made


tools_json_length = PerSchemaList(lambda tools: len(json.dumps(tools)))
"""The length of a schema list's JSON: most of a short request's, the same list every call."""


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

    def as_message(self) -> ChatMessage:
        """The OpenAI-format assistant message for the conversation."""
        message: ChatMessage = {"role": "assistant", "content": self.text or None}
        if self.tool_calls:
            message["tool_calls"] = [
                ToolCallItem(id=c.id, type="function",
                             function=FunctionCall(name=c.name,
                                                   arguments=_valid_json(c.arguments)))
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


IMAGE_TOKENS = 800
"""What one image is counted as, without a tokenizer (a 640×480 PNG: ~765 on OpenAI's
scale); an image part's base64 is never counted as text."""


def content_text(content: str | list[ContentPart] | None) -> str:
    """A message's content as text: parts joined, each image as a short placeholder."""
    if isinstance(content, list):
        return "\n".join(part.get("text", "") if part.get("type") == "text" else "[image]"
                         for part in content)
    return content or ""


Seen = tuple[str, JsonObject, str]
"""One tool call of a turn as the model read it: its name, arguments and result (text)."""


def turn_calls(turn: list[ChatMessage]) -> list[Seen]:
    """Each tool call the assistant made in ``turn``: its name, its arguments (``{}`` when
    they are not a JSON object) and the result the model read (text, "" when none came
    back). The offline demo stories choose their next step from these."""
    results = {m.get("tool_call_id"): str(m.get("content") or "") for m in turn
               if m.get("role") == "tool"}
    out: list[Seen] = []
    for message in turn:
        for call in message.get("tool_calls") or [] if message.get("role") == "assistant" else []:
            fn = call.get("function", {})
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except ValueError:
                args = {}
            out.append((str(fn.get("name", "?")), args if isinstance(args, dict) else {},
                        results.get(call.get("id"), "")))
    return out


def _text(message: ChatMessage) -> str:
    """Everything of a message that becomes tokens, as one string (images: see
    :data:`IMAGE_TOKENS`)."""
    parts = [content_text(message.get("content"))]
    for call in message.get("tool_calls") or ():
        function = call.get("function")
        name, arguments = (function.get("name", ""), function.get("arguments", "")) \
            if function else ("", "")
        parts.append(f"{name}({arguments})")
    return "\n".join(parts)


def estimate_tokens(messages: list[ChatMessage], tools: list[ToolSchema] | None = None) -> int:
    """Four characters a token, plus four a message for its framing, and
    :data:`IMAGE_TOKENS` an image (no tokenizer)."""
    chars = sum(len(_text(m)) for m in messages)
    if tools:
        chars += tools_json_length(tools)
    images = sum(1 for m in messages if isinstance(content := m.get("content"), list)
                 for part in content if part.get("type") == "image_url")
    return math.ceil(chars / CHARS_PER_TOKEN) + 4 * len(messages) + IMAGE_TOKENS * images


def _ignore(*_args: object) -> None:
    """The default listener: nothing streams anywhere."""


class Model(ABC):
    """A model a run can ask for one assistant turn.

    Subclasses implement :meth:`complete`; the rest has defaults for a model that
    needs no loading, has no tokenizer and writes its own compaction summaries.
    """

    name: str
    """What runs, the ledger and the views call this model (``openai/gpt-4o``, ``demo``)."""
    writes_summaries: bool = True
    """Whether compaction asks this model for a summary (else a digest is made)."""
    library: str = ""
    """What a run waits for while :meth:`load` works (see ``events.Loading``)."""

    @abstractmethod
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
        """One assistant turn for ``messages`` with ``tools`` on offer, asked by an agent
        of ``role`` (None outside a team); text goes to ``on_text`` as it comes."""

    def count_tokens(self, messages: list[ChatMessage], tools: list[ToolSchema] | None = None
                     ) -> int:
        """The tokens a request takes; by default the estimate (:func:`estimate_tokens`)."""
        return estimate_tokens(messages, tools)

    def window(self, settings: Settings) -> int:
        """The context window: ``settings.context_window``, else :data:`DEFAULT_WINDOW`."""
        return settings.context_window if settings.context_window is not None \
            else DEFAULT_WINDOW

    def needs_loading(self) -> bool:
        """True when the next turn would first wait for a slow import."""
        return False

    def accepts_images(self, settings: Settings) -> bool:
        """Whether the images tools make are shown to this model (``settings.model_images``
        decides when set; by default a model reads none)."""
        return bool(settings.model_images)

    async def load(self) -> float:
        """Do that import off the event loop; the seconds waited."""
        return 0.0

    def warm_up(self) -> None:
        """Start that import in the background, so a later turn does not wait for it."""
        return None

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"
