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
from agent_kernel.core.redaction import StreamRedactor, redact_text
from agent_kernel.core.statuses import outcome_words
from agent_kernel.views.mime import usage_line
from agent_kernel.views.run_record import STOPPED_OUTCOME
from agent_kernel.views.summaries import (
    HANDLE_ARGUMENTS,
    asker_id,
    plan_lines,
    question_label,
    summarise,
    task_words,
    work_name,
)

if TYPE_CHECKING:
    from agent_kernel.core.events import EventBus


def gist(text: str, limit: int = 240) -> str:
    """``text`` on one line, cut (when it must be) after its last whole sentence or clause
    that fits, else at a word, never inside one: "… (N more characters)"."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = text[:limit]
    end = max(head.rfind(". "), head.rfind("; "), head.rfind("! "), head.rfind("? "))
    if end < limit // 2:
        end = head.rfind(" ")
    kept = head[: end + 1].rstrip(" ;") if end > 0 else head
    return f"{kept} … ({len(text) - len(kept)} more characters)"


def _short(value: object, limit: int = 200) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           default=repr)
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _without_handles(arguments: object) -> object:
    """The arguments without a cell's id: one line names a cell by its position."""
    if isinstance(arguments, dict):
        return {k: v for k, v in arguments.items() if k not in HANDLE_ARGUMENTS}
    return arguments


def task_rows(tool: str, result: object) -> list[str]:
    """``list_tasks``'s rows as lines a person reads: what, its state and kind, since when,
    and its id last (what ``cancel_task`` and ``%agent_triggers cancel`` take)."""
    if tool != "list_tasks" or not isinstance(result, dict):
        return []
    from agent_kernel.core.times import parse_iso

    rows = []
    for task in result.get("tasks") or []:
        if not isinstance(task, dict):
            continue
        since = ""
        try:
            when = parse_iso(str(task.get("createdAt")))
            since = f" · since {when.astimezone():%H:%M %Z}" if when else ""
        except ValueError:
            pass
        state = {"trigger": "scheduled", "needs_approval": "waits for your approval"}.get(
            str(task.get("status")), str(task.get("status")))
        rows.append(f"{gist(str(task.get('prompt', '')), 100)} · {state} · "
                    f"{task.get('type')}{since} ({task.get('id')})")
    return rows or ["no tasks"]


class TextView:
    """Writes an agent's events as plain text to ``stream`` (stdout by default)."""

    def __init__(self, bus: EventBus, stream: TextIO | None = None,
                 run_id: str | None = None) -> None:
        self.stream = stream or sys.stdout
        self.run_id = run_id
        self._at_line_start = True
        self._reader_gone = False
        self._streamed = StreamRedactor()
        self._held: list[str] = []
        """Team lines that came while the answer streamed mid-line: written after the line,
        so a sentence of the answer is never split by them."""
        self._turn_text = False
        """Text of the model's answer was written since its last call began (a retry voids it)."""
        self._open: dict[str, str] = {}
        """Questions asked and not answered yet (by id: approval or question): said at the
        run's end as not answered, so a log never leaves one reading as still waiting."""
        self._works: dict[str, str] = {}
        """Each team agent's work by its id, to name one that asks by it."""
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
        if text.endswith("\n") and self._held:  # the answer's line is done: their turn
            held, self._held = self._held, []
            for line in held:
                self._write(line + "\n")

    def line(self, text: str) -> None:
        """Write ``text`` on a line of its own."""
        self._write(self._streamed.flush())
        if not self._at_line_start:
            self._write("\n")
        self._write(text + "\n")

    def _team_line(self, text: str) -> None:
        """A team agent's line: now, or after the answer's line that is streaming."""
        if self._at_line_start and not self._streamed.holding:
            self._write(text + "\n")
        else:
            self._held.append(text)

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
        agents working at once would interleave), each led by the agent named by its work,
        as the notebook names it (``[research Paris · Worker]``), never by its id."""
        inner = for_display(event.inner)
        if isinstance(inner, RunStarted):
            self._works[event.agent_id] = redact_text(task_words(event.prompt))
        work = self._works.get(event.agent_id) or redact_text(task_words(event.prompt))
        who = f"[{work_name(work, event.role)}]"
        if isinstance(inner, RunStarted):
            self._team_line(f"{who} starts: {gist(work)}")
        elif isinstance(inner, ToolCallFinished):
            outcome = "ok" if inner.success else f"FAILED: {gist(str(inner.shown))}"
            self._team_line(f"{who} [tool] {inner.tool_name} {outcome}")
        elif isinstance(inner, RunFinished) and inner.result is not None:
            result = inner.result
            said = result.reply if result.status == "ok" else (result.error or result.status)
            self._team_line(f"{who} {outcome_words(result.status)}: "
                            f"{gist(said or '(no text)')}")

    @staticmethod
    def _result_words(event: ToolCallFinished) -> str:
        """The result itself when it is short text, else its one line in words (never a
        cut JSON object)."""
        whole = _short(event.result, 10_000)
        rows = event.tool_name == "list_tasks"  # its rows follow, one a line
        if isinstance(event.result, str) or (len(whole) <= 200 and not rows):
            return _short(event.result)
        said = summarise(event.tool_name, event.arguments, event.result, success=True,
                         duration_ms=None)
        return said if said != "ok" else f"{len(whole):,} characters of result (in the ledger)"

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
            self.line(f"[tool] {event.tool_name} {_short(_without_handles(event.arguments))} ...")
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
                          f"{self._result_words(event)}")
                for row in task_rows(event.tool_name, event.result):
                    self.line(f"  {row}")
                for step in plan_lines(event.tool_name, event.result):
                    self.line(f"  {step}")
            else:
                self.line(f"[tool] {event.tool_name} FAILED in {event.duration_ms} ms{ledger}: "
                          f"{_short(event.shown)}")
        elif isinstance(event, Question):
            options = f" [{' / '.join(event.options)}]" if event.options else ""
            kind = "approval" if event.kind == "approval" else "question"
            details = dict(event.details or {})
            if (agent := asker_id(details)) is not None and agent in self._works:
                details["asked_by_work"] = self._works[agent]
            who = f"{question_label(False, details)}: " if asker_id(details) else ""
            self.line(f"[{kind}] {who}{event.question}{options}")
            self._open[event.question_id] = kind
            if event.kind == "approval" and event.details:
                self.line(f"  {_short(event.details, 500)}")
        elif isinstance(event, QuestionAnswered):
            self._open.pop(event.question_id, None)
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
            self._not_answered()
            self.line(f"[{usage_line(event.result)}]")

    def _not_answered(self) -> None:
        """The run ended: each question still open reads so (``[answer] not answered…``)."""
        for kind in self._open.values():
            self.line(f"[answer] {STOPPED_OUTCOME[0].lower()}{STOPPED_OUTCOME[1:]} ({kind})")
        self._open.clear()
