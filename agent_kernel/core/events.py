"""Typed events: the one stream a run speaks in.

The loop never draws anything. It emits these dataclasses on an
:class:`EventBus`, and views (widgets, plain text, MIME transcripts) subscribe
and render them. A view that raises is reported once and unsubscribed, so a
broken view can never break a run.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent_kernel.core.statuses import AnswerSource, NoticeLevel

log = logging.getLogger(__name__)


@dataclass
class Event:
    """Base of all events; ``run_id`` ties an event to its run."""

    run_id: str
    at: float = field(default_factory=time.time, kw_only=True)


@dataclass
class RunStarted(Event):
    """A run began with this prompt on this model."""

    prompt: str
    model: str
    agent_id: str
    trigger: dict[str, Any] | None = None


@dataclass
class ModelCallStarted(Event):
    """The model is thinking (a request to the provider is in flight)."""

    attempt: int = 1


@dataclass
class TextDelta(Event):
    """A piece of the model's streamed answer."""

    text: str


@dataclass
class StreamReset(Event):
    """A broken stream is being retried: views drop the partial text of this turn."""

    reason: str


@dataclass
class ToolCallStarted(Event):
    """A tool call is about to run."""

    call_id: str
    tool_name: str
    arguments: Any


@dataclass
class ToolCallFinished(Event):
    """A tool call ended, successfully or not."""

    call_id: str
    tool_name: str
    arguments: Any
    result: Any
    success: bool
    error: str | None
    duration_ms: int
    record: dict[str, Any] | None = None
    """The ledger record written for this call (already on disk)."""
    summary: str | None = None
    """A failed call in the person's words ("You denied write_file"); views show it
    instead of ``error``. What the model is told besides never reaches an event."""

    @property
    def shown(self) -> str:
        """The line a view shows for a failed call: the summary, else the error."""
        return self.summary or self.error or ""


@dataclass
class LedgerRecorded(Event):
    """A ledger record reached the disk."""

    record: dict[str, Any]


@dataclass
class Question(Event):
    """The agent asks the person something; ``kind`` is ``ask`` or ``approval``."""

    question_id: str
    question: str
    options: list[str] | None
    timeout: float
    default: str | None
    kind: str = "ask"
    details: dict[str, Any] | None = None


@dataclass
class QuestionAnswered(Event):
    """A question ended: answered, defaulted or timed out."""

    question_id: str
    answer: str
    source: AnswerSource


@dataclass
class Reply(Event):
    """The agent replied to the person through the ``reply`` tool."""

    text: str


@dataclass
class ConsoleOutput(Event):
    """Text the agent printed with ``console_print``."""

    text: str


@dataclass
class Notice(Event):
    """Something the person should know that is not the model's answer."""

    text: str
    level: NoticeLevel = "info"


@dataclass
class ContextCompacted(Notice):
    """Older messages were replaced by a summary to keep the conversation in the window.

    A :class:`Notice` (``text`` says it in a person's words), so every view shows it as
    one; the counts let a view say more. ``summary_by`` is ``model``, ``digest`` (made
    without a model) or ``agent`` (its own ``compress_context`` call).
    """

    compressed_count: int = 0
    remaining_count: int = 0
    tokens_before: int | None = None
    tokens_after: int | None = None
    max_tokens: int | None = None
    summary_by: str = "model"


@dataclass
class Loading(Event):
    """The run waits for ``what`` to load; sent again with ``seconds`` once it has."""

    what: str
    seconds: float | None = None

    @property
    def shown(self) -> str:
        """The line a view shows: ``loading X…`` while it loads, then ``loaded X in 1.2 s``."""
        if self.seconds is None:
            return f"loading {self.what}…"
        return f"loaded {self.what} in {self.seconds:.1f} s"


@dataclass
class RunFinished(Event):
    """A run ended; ``result`` is the :class:`~agent_kernel.engine.agent.RunResult`."""

    result: Any


@dataclass
class RunError(Event):
    """A run ended with an error the person can act on."""

    message: str
    kind: str = "error"


@dataclass
class AgentActivity(Event):
    """An event of another agent of a team (a Planner's, a Worker's), carried into the run
    whose work it does, where it is shown nested under that agent."""

    agent_id: str
    role: str
    task_id: str
    parent_task_id: str | None
    prompt: str
    inner: Event
    order: int = 0
    """The task's place in the order the team made its tasks (siblings are shown so)."""


Subscriber = Callable[[Event], None]


class EventBus:
    """Delivers every event to every subscriber, in order."""

    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Add a subscriber; returns a function that removes it."""
        self._subscribers.append(subscriber)
        return lambda: self.unsubscribe(subscriber)

    def unsubscribe(self, subscriber: Subscriber) -> None:
        """Remove a subscriber if present."""
        if subscriber in self._subscribers:
            self._subscribers.remove(subscriber)

    def emit(self, event: Event) -> None:
        """Hand ``event`` to each subscriber; a failing subscriber is dropped."""
        for subscriber in list(self._subscribers):
            try:
                subscriber(event)
            except Exception:
                log.exception("event subscriber %r failed and was removed", subscriber)
                self.unsubscribe(subscriber)


DISPLAY_MAX_CHARS = 20_000
_RAW_FIELDS = {"run_id", "at", "inner"}  # inner: redacted when it is fed on


def for_display(event: Event) -> Event:
    """A copy of ``event`` fit to be shown or saved: every secret redacted, long text cut.

    Views call this first, so a transcript in any format (widget state, HTML, plain
    text, a terminal) carries no secret. Streamed ``TextDelta`` pieces stay as they are:
    a secret may span two pieces, so views redact the text they have put together.
    """
    if getattr(event, "_for_display", False) or isinstance(event, TextDelta):
        return event
    from dataclasses import fields, replace

    from agent_kernel.core.redaction import redact_text, scrub

    changes: dict[str, Any] = {}
    for item in fields(event):
        if item.name in _RAW_FIELDS or not item.init or isinstance(event, RunFinished):
            continue
        value = getattr(event, item.name)
        if value is not None and not isinstance(value, (bool, int, float)):
            changes[item.name] = scrub(value, max_chars=DISPLAY_MAX_CHARS)
    if isinstance(event, RunFinished) and event.result is not None:
        result = event.result
        with contextlib.suppress(TypeError):  # not a RunResult: leave it to the view
            changes["result"] = replace(result, reply=redact_text(result.reply or ""),
                                        error=redact_text(result.error) if result.error
                                        else result.error)
    clean = replace(event, **changes)
    clean._for_display = True  # type: ignore[attr-defined]
    return clean
