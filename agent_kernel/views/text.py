"""A plain-text view of runs, for terminals, logs and headless runs.

It subscribes to an agent's event bus and writes as events arrive: the
streamed answer as it comes, one line per tool call start and finish (with
duration, success and the ledger record id), questions and their answers,
notices, errors, and a final usage and cost line. It needs nothing beyond a
writable stream.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, TextIO

from agent_kernel.core.events import (
    AgentActivity,
    ConsoleOutput,
    Event,
    LedgerRecorded,
    Loading,
    Notice,
    Question,
    QuestionAnswered,
    Reply,
    RunError,
    RunFinished,
    RunStarted,
    StreamReset,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    for_display,
)
from agent_kernel.core.redaction import StreamRedactor
from agent_kernel.views.mime import usage_line
from agent_kernel.views.summaries import question_label

if TYPE_CHECKING:
    from agent_kernel.core.events import EventBus


def _short(value: object, limit: int = 200) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           default=repr)
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


class TextView:
    """Writes an agent's events as plain text to ``stream`` (stdout by default)."""

    def __init__(self, bus: EventBus, stream: TextIO | None = None,
                 run_id: str | None = None) -> None:
        self.stream = stream or sys.stdout
        self.run_id = run_id
        self._at_line_start = True
        self._reader_gone = False
        self._streamed = StreamRedactor()
        self._turn_text = False
        """Text of the model's answer was written since its last call began (a retry voids it)."""
        self.bus = getattr(bus, "bus", bus)
        self._unsubscribe = self.bus.subscribe(self.on_event)

    def close(self) -> None:
        """Stop listening."""
        self._unsubscribe()

    def _write(self, text: str) -> None:
        if self._reader_gone:
            return
        try:
            self.stream.write(text)
            self.stream.flush()
        except BrokenPipeError:  # ``run ... | head``: the reader left; the run goes on
            self._reader_gone = True
            return
        if text:
            self._at_line_start = text.endswith("\n")

    def line(self, text: str) -> None:
        """Write ``text`` on a line of its own."""
        self._write(self._streamed.flush())
        if not self._at_line_start:
            self._write("\n")
        self._write(text + "\n")

    def prompt(self, text: str) -> None:
        """Write ``text`` on a line of its own and leave the line open for the person's typing."""
        self._write(self._streamed.flush())
        if not self._at_line_start:
            self._write("\n")
        self._write(text)

    def typed(self, text: str) -> None:
        """The person typed ``text`` and Enter at the prompt: a terminal has echoed it; any
        other stream (a pipe, a log) gets it written, so the transcript keeps the answer."""
        try:
            echoed = self.stream.isatty()
        except (AttributeError, ValueError):
            echoed = False
        if echoed:
            self._at_line_start = True
        else:
            self._write(text + "\n")

    def _agent(self, event: AgentActivity) -> None:
        """A team agent's run, a line per start, tool call and end (its text is not streamed:
        agents working at once would interleave)."""
        inner, who = for_display(event.inner), f"[{event.agent_id}]"
        if isinstance(inner, RunStarted):
            self.line(f"{who} {event.role} starts: {_short(event.prompt)}")
        elif isinstance(inner, ToolCallFinished):
            outcome = "ok" if inner.success else f"FAILED: {_short(inner.shown)}"
            self.line(f"{who} [tool] {inner.tool_name} {outcome}")
        elif isinstance(inner, RunFinished) and inner.result is not None:
            result = inner.result
            said = result.reply if result.status == "ok" else (result.error or result.status)
            self.line(f"{who} {result.status}: {_short(said or '(no text)')}")

    def on_event(self, event: Event) -> None:
        """Render one event."""
        if self.run_id is not None and event.run_id != self.run_id:
            return
        if isinstance(event, AgentActivity):
            self._agent(event)
            return
        event = for_display(event)
        if isinstance(event, RunStarted):
            origin = f" (trigger {event.trigger.get('trigger_id', '')})" if event.trigger else ""
            self.line(f">>> [{event.model}] {event.prompt}{origin}")
        elif isinstance(event, TextDelta):
            self._turn_text = self._turn_text or bool(event.text)
            self._write(self._streamed.feed(event.text))
        elif isinstance(event, StreamReset):
            # The notice that follows says why; the reset matters only for text shown.
            if self._turn_text:
                self.line("[the answer above was cut off; the model is asked again]")
            self._turn_text = False
        elif isinstance(event, ToolCallStarted):
            self._turn_text = False
            self.line(f"[tool] {event.tool_name} {_short(event.arguments)} ...")
        elif isinstance(event, LedgerRecorded):
            if event.record.get("source") == "always" and event.record.get("kind") == "approval":
                self.line(f"[approval] {event.record.get('tool_name')} allowed by your standing "
                          f"permission · ledger {event.record.get('record_id')}")
            elif event.record.get("kind") != "tool_call":  # those show on their tool's line
                self.line(f"[ledger] {event.record.get('kind')} {event.record.get('record_id')}")
        elif isinstance(event, ToolCallFinished):
            record = event.record
            ledger = f" · ledger {record.get('record_id')}" if record else ""
            if event.success:
                self.line(f"[tool] {event.tool_name} ok in {event.duration_ms} ms{ledger} -> "
                          f"{_short(event.result)}")
            else:
                self.line(f"[tool] {event.tool_name} FAILED in {event.duration_ms} ms{ledger}: "
                          f"{_short(event.shown)}")
        elif isinstance(event, Question):
            options = f" [{' / '.join(event.options)}]" if event.options else ""
            label = question_label(event.kind == "approval", event.details).lower()
            self.line(f"[{label}] {event.question}{options}")
            if event.kind == "approval" and event.details:
                self.line(f"  {_short(event.details, 500)}")
        elif isinstance(event, QuestionAnswered):
            answer = "(no answer)" if event.source == "timeout" else event.answer
            self.line(f"[answer] {answer} ({event.source})")
        elif isinstance(event, Reply):
            self.line(f"[reply] {event.text}")
        elif isinstance(event, ConsoleOutput):
            self.line(event.text)
        elif isinstance(event, Notice):
            self.line(f"[{event.level}] {event.text}")
        elif isinstance(event, Loading):
            self.line(f"[info] {event.shown}")
        elif isinstance(event, RunError):
            self.line(f"[{'stopped' if event.kind == 'cancelled' else event.kind}] "
                      f"{event.message}")
        elif isinstance(event, RunFinished):
            self.line(f"[{usage_line(event.result)}]")
