"""A run's transcript as plain data, and the MIME bundle a saved notebook keeps.

:class:`Transcript` folds the events of one run into plain data; its
:meth:`~Transcript.state` is the run's saved form (schema v1, documented in
``docs/notebook.md`` "The run's saved form"). :func:`mime_bundle` carries that
state under :data:`RUN_MIME` for the JupyterLab extension, plus complete
``text/html`` and ``text/plain`` fallbacks drawn from the same state
(``views.run_html``), so every frontend shows the same run and none needs a
kernel or a widget model. Everything passes ``events.for_display`` first, so
no secret reaches any of the three.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from pydantic import JsonValue

from agent_kernel.core.events import (
    AgentActivity,
    ConsoleOutput,
    Event,
    LedgerRecorded,
    Loading,
    ModelCallStarted,
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
from agent_kernel.core.json_types import JsonObject
from agent_kernel.core.mime_types import RUN_MIME
from agent_kernel.core.redaction import redact_text
from agent_kernel.core.statuses import (
    AnswerSource,
    RunStatus,
    ToolState,
    outcome_words,
    shown_status,
)
from agent_kernel.views.run_html import clock
from agent_kernel.views.run_record import (
    AgentEntry,
    ConsoleEntry,
    Entry,
    ErrorEntry,
    LedgerLine,
    LoadingData,
    NoticeEntry,
    QuestionData,
    QuestionEntry,
    RunData,
    RunState,
    TextEntry,
    ToolData,
    ToolEntry,
    Usage,
    ended_waits,
)
from agent_kernel.views.run_record import Loading as LoadingLine
from agent_kernel.views.summaries import is_envelope, result_kind, summarise, task_words

ASK_TOOL = "ask_user"
"""The tool whose question is drawn inside its own card (the card's ``approval`` slot holds
it, as a question: ``approval: false``), so a question reads once, in one place."""
APPROVE, DENY, ALWAYS = "Approve", "Deny", "Always allow this tool"
SAVED_VALUE_CHARS = 64_000
"""The most of one call's arguments or result a saved run keeps, as JSON text (the ledger
keeps more: docs/ledger.md), so a 60 MB result never lands in the notebook."""


def saved_value(value: object) -> Any:
    """``value`` as the saved form keeps it: itself when its JSON is short, else the start
    of that JSON as text, saying how much there was (``value`` is JSON data already)."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) <= SAVED_VALUE_CHARS:
        return value
    return (text[:SAVED_VALUE_CHARS] + f"\n…[{len(text):,} characters in all; the first "
            f"{SAVED_VALUE_CHARS:,} are kept in the notebook]")


def iso(at: float | None) -> str | None:
    """A Unix time as local ISO 8601 with its offset (seconds precision)."""
    if at is None:
        return None
    return datetime.fromtimestamp(at).astimezone().isoformat(timespec="seconds")


@dataclass
class QuestionCard:
    """One question (ask_user or an approval) and how it ended."""

    question_id: str
    question: str
    options: list[str] | None
    kind: str
    timeout: float
    default: str | None
    details: JsonObject | None = None
    answer: str | None = None
    source: AnswerSource | None = None
    record_id: str | None = None
    asked_at: float | None = None
    answered_at: float | None = None

    def entry(self) -> QuestionEntry:
        """The question entry of the saved form."""
        return QuestionEntry(
            kind="question", question_id=self.question_id, question=self.question,
            options=self.options, default=self.default, timeout=self.timeout,
            asked_at=iso(self.asked_at), approval=self.kind == "approval",
            details=_json_object(self.details), answer=self.answer, source=self.source,
            answered_at=iso(self.answered_at))

    def state(self) -> QuestionData:
        """The question entry as the saved JSON holds it."""
        return cast(QuestionData, self.entry().model_dump(mode="json", exclude_unset=True))

    @property
    def approved(self) -> bool:
        """An approval that let its call run (asked, or under a standing permission)."""
        return self.answer in (APPROVE, ALWAYS) or self.source == "standing"


@dataclass
class ToolCard:
    """One tool call as the transcript shows it."""

    call_id: str
    tool_name: str
    arguments: Any
    result: Any = None
    success: bool | None = None
    error: str | None = None
    duration_ms: int | None = None
    record_id: str | None = None
    record: JsonObject | None = None
    summary: str | None = None
    """A failed call in the person's words (the error stays under details)."""
    approval: QuestionCard | None = None
    _saved: dict[str, tuple[Any, Any]] = field(default_factory=dict, repr=False)

    def _kept(self, name: str, value: object) -> JsonValue:
        """:func:`saved_value` of ``value`` as JSON data, worked out once per value (state is
        redrawn often)."""
        memo = self._saved.get(name)
        if memo is None or memo[0] is not value:
            memo = self._saved[name] = (value, _jsonable(saved_value(value)))
        return memo[1]

    @property
    def denied(self) -> bool:
        """The call did not run because its approval was not given."""
        return (self.success is False and self.approval is not None
                and self.approval.kind == "approval" and not self.approval.approved)

    def entry(self) -> ToolEntry:
        """The tool entry of the saved form."""
        waiting = self.approval is not None and self.approval.source is None
        state: ToolState = ("waiting" if waiting else "running") if self.success is None else (
            "ok" if self.success else "failed")
        record = self.record or {}
        result = self._kept("result", self.result)
        return ToolEntry(
            kind="tool", call_id=self.call_id, tool=self.tool_name,
            arguments=self._kept("arguments", self.arguments), state=state,
            summary=summarise(self.tool_name, self.arguments, self.result,
                              success=self.success, duration_ms=self.duration_ms,
                              failure=self.summary or self.error, waiting=waiting),
            result=result if self.success or is_envelope(result) else None,
            result_kind=result_kind(self.tool_name, result, self.success),
            error=(self.summary or self.error) if self.success is False else None,
            duration_ms=self.duration_ms,
            ledger=LedgerLine(record_id=self.record_id, timestamp=record.get("timestamp"),
                              hash=record.get("hash")) if self.record_id else None,
            approval=self.approval.entry() if self.approval else None)

    def state(self) -> ToolData:
        """The tool entry as the saved JSON holds it."""
        return cast(ToolData, self.entry().model_dump(mode="json", exclude_unset=True))


def _named(event: Event) -> bool:
    """A question a team member asked through the Teller's channel (it names who asks)."""
    return isinstance(event, Question) and bool((event.details or {}).get("asked_by"))


@dataclass
class Transcript:
    """Everything one run showed, in order; feed it events with :meth:`feed`."""

    run_id: str | None = None
    prompt: str = ""
    model: str = ""
    entries: list[tuple[str, Any]] = field(default_factory=list)
    tools: dict[str, ToolCard] = field(default_factory=dict)
    questions: dict[str, QuestionCard] = field(default_factory=dict)
    ledger_ids: list[str] = field(default_factory=list)
    result: Any = None
    errors: list[str] = field(default_factory=list)
    started_at: float | None = None
    loading: LoadingData | None = None
    ended: RunStatus | None = None
    """How the run ended when it could not finish normally (``stopped``/``failed``)."""
    controls: str | None = None
    """``extension`` while our JupyterLab extension draws this run's live controls."""
    queued: bool = False
    stopped_by_person: bool = False
    """A person stopped the run (the view sets it): its status reads "stopped by you"."""
    """The run waits for the run before it (set by the view, cleared when it starts)."""
    agents: dict[str, tuple[dict[str, str], Transcript]] = field(default_factory=dict)
    """The team agents whose runs this run shows nested, by task id: who, and their run."""
    _turn_mark: tuple[int, int] = (0, 0)
    _floating: list[tuple[str, Any]] = field(default_factory=list)
    """Entries of other team agents (their runs, their questions) that came during this
    run's current step: shown after it, and placed there when the run's own next entry (a
    call, a notice, its own question) or its end comes, so the Teller's reply reads whole
    before the work it handed on."""
    _order: dict[str, int] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """All answer text of the run, turns joined (secrets redacted)."""
        return redact_text("\n\n".join(v for k, v in self.entries if k == "text" and v.strip()))

    @property
    def status(self) -> RunStatus:
        """running, done, done_with_failures, denied, stopped, failed or limit."""
        if self.result is None:
            return self.ended or ("failed" if self.errors else "running")
        status = getattr(self.result, "status", "error")
        if status != "ok":
            return shown_status(status)
        failed = [c for c in self.tools.values() if c.success is False]
        if any(run.status not in ("done", "running", "stopped")
               for _who, run in self.agents.values()):
            return "done_with_failures"  # a team agent failed (one stopped is no failure)
        if not failed:
            return "done"
        return "denied" if all(c.denied for c in failed) else "done_with_failures"

    def feed(self, event: Event) -> None:
        """Fold one event of this run into the transcript (redacted: see ``for_display``)."""
        if self.run_id is None:
            self.run_id = event.run_id
        if event.run_id != self.run_id:
            return
        if isinstance(event, AgentActivity):
            self._on_agent(event)
            return
        event = for_display(event)
        if self._floating and not isinstance(event, (
                TextDelta, StreamReset, ModelCallStarted, LedgerRecorded, Loading,
                ToolCallFinished, QuestionAnswered)) and not _named(event):
            self.entries += self._floating
            self._floating = []
        if isinstance(event, RunStarted):
            self.queued = False
            self.prompt, self.model = event.prompt, event.model
            self.started_at = self.started_at or event.at
        elif isinstance(event, ModelCallStarted):
            last = self.entries[-1] if self.entries else None
            self._turn_mark = (len(self.entries), len(last[1]) if last and last[0] == "text" else 0)
        elif isinstance(event, TextDelta):
            if self.entries and self.entries[-1][0] == "text":
                self.entries[-1] = ("text", self.entries[-1][1] + event.text)
            else:
                self.entries.append(("text", event.text))
        elif isinstance(event, StreamReset):
            self._drop_turn_text()
        elif isinstance(event, ToolCallStarted):
            card = ToolCard(event.call_id, event.tool_name, event.arguments)
            self.tools[event.call_id] = card
            self.entries.append(("tool", card))
        elif isinstance(event, LedgerRecorded):
            self._on_record(event.record, event.at)
        elif isinstance(event, ToolCallFinished):
            self._on_tool_finished(event)
        elif isinstance(event, Question):
            self._on_question(event)
        elif isinstance(event, QuestionAnswered):
            if (q := self.questions.get(event.question_id)) is not None:
                q.answer, q.source, q.answered_at = event.answer, event.source, event.at
        elif isinstance(event, Reply):
            self.entries.append(("text", event.text))
        elif isinstance(event, ConsoleOutput):
            self.entries.append(("console", event.text))
        elif isinstance(event, Notice):
            self.entries.append(("notice", (event.level, event.text)))
        elif isinstance(event, Loading):
            self._on_loading(event)
        elif isinstance(event, RunError):
            if event.kind in ("cancelled", "limit"):
                self.entries.append(("notice", ("warning", event.message)))
            else:
                self.errors.append(event.message)
                self.entries.append(("error", event.message))
        elif isinstance(event, RunFinished):
            self.result = event.result

    def _on_agent(self, event: AgentActivity) -> None:
        """A team agent's event: into its own nested transcript, under its parent's."""
        found = self.agents.get(event.task_id)
        if found is None:
            who = {"agent_id": event.agent_id, "role": event.role, "task_id": event.task_id,
                   "prompt": redact_text(task_words(event.prompt))}
            found = self.agents[event.task_id] = (who, Transcript(run_id=event.inner.run_id))
            self._order[event.task_id] = event.order
            parent = self.agents.get(event.parent_task_id or "")
            if parent is None:
                self._floating.append(("agent", event.task_id))
            else:  # siblings begun together read in the order they were delegated
                entries, at = parent[1].entries, len(parent[1].entries)
                while at and entries[at - 1][0] == "agent" and (
                        self._order.get(entries[at - 1][1], 0) > event.order):
                    at -= 1
                entries.insert(at, ("agent", event.task_id))
        found[1].feed(event.inner)

    def _drop_turn_text(self) -> None:
        index, keep = self._turn_mark
        kept: list[tuple[str, Any]] = []
        for i, (kind, value) in enumerate(self.entries):
            if kind == "text" and i >= index - 1:
                if i == index - 1:
                    kept.append((kind, value[:keep]))
                continue
            kept.append((kind, value))
        self.entries = kept

    def _on_loading(self, event: Loading) -> None:
        """The model library's load is the run's ``loading`` line; a later load (the memory
        index on first use) is a line in the transcript where it happened, then says how
        long it took."""
        if self.loading is None or self.loading["what"] == event.what:
            self.loading = {"what": event.what, "seconds": event.seconds}
            return
        line = ("notice", ("info", event.shown))
        for i in range(len(self.entries) - 1, -1, -1):
            kind, value = self.entries[i]
            if kind == "notice" and value == ("info", Loading(event.run_id, event.what).shown):
                self.entries[i] = line
                return
        self.entries.append(line)

    def _gated(self, tool: str | None) -> ToolCard | None:
        """The running card an approval of ``tool`` gates (else the last running card)."""
        running = [c for c in self.tools.values() if c.success is None]
        named = [c for c in running if c.tool_name == tool and c.approval is None]
        found = named or running
        return found[-1] if found else None

    def _on_question(self, event: Question) -> None:
        details = event.details
        if _named(event) and (work := self._work_of(details)) is not None:
            details = {**(details or {}), "asked_by_work": work}  # named by it, never its id
        qcard = QuestionCard(event.question_id, event.question, event.options, event.kind,
                             event.timeout, event.default, details, asked_at=event.at)
        self.questions[event.question_id] = qcard
        where: Transcript | None = self
        if _named(event):  # a team member's: in the card of its call, in its own run
            task_id = (event.details or {}).get("task_id")
            member = self.agents.get(task_id) if isinstance(task_id, str) else None
            where = member[1] if member is not None else None
        card = where._asking_card(event) if where is not None else None
        if where is not None and card is not None:
            card.approval = qcard
            where.questions[event.question_id] = qcard  # its ledger record finds it
        elif _named(event):  # a Worker's (or Planner's) question: with the work it belongs to
            self._floating.append(("question", qcard))
        else:
            self.entries.append(("question", qcard))

    def _work_of(self, details: Mapping[str, object] | None) -> str | None:
        """The work of the team agent that asks (its task, as its nested run is named)."""
        task_id, agent = (details or {}).get("task_id"), (details or {}).get("asked_by")
        found = self.agents.get(task_id) if isinstance(task_id, str) else None
        if found is None:
            found = next((a for a in self.agents.values() if a[0]["agent_id"] == agent), None)
        return found[0]["prompt"] if found is not None else None

    def _asking_card(self, event: Question) -> ToolCard | None:
        """The running card a question belongs to: the call an approval gates, or the
        ``ask_user`` call that asks it."""
        if event.kind == "approval":
            return self._gated((event.details or {}).get("tool"))
        asking = [c for c in self.tools.values()
                  if c.success is None and c.tool_name == ASK_TOOL and c.approval is None]
        return asking[-1] if asking else None

    def _on_record(self, record: JsonObject, at: float) -> None:
        record_id = record.get("record_id")
        if record_id:
            self.ledger_ids.append(record_id)
        if record.get("kind") != "approval":
            return
        for q in reversed(list(self.questions.values())):
            if q.kind == "approval" and q.record_id is None and (
                    (q.details or {}).get("tool") == record.get("tool_name")):
                q.record_id = record_id
                return
        # Decided without asking: the headless policy, or a standing permission.
        source = record.get("source")
        answer: str | None
        shown: AnswerSource
        if source == "always":
            since = clock(record.get("standing_since"))
            answer = f"{ALWAYS} (standing permission since {since})" if since else ALWAYS
            shown = "standing"
        else:
            answer = record.get("answer")
            shown = "headless" if source == "policy" else "user"
        qcard = QuestionCard(f"q_{record_id}", f"Allow `{record.get('tool_name')}` to run "
                             "with these arguments?", [APPROVE, DENY, ALWAYS], "approval", 0.0,
                             DENY, {"tool": record.get("tool_name"),
                                    "arguments": record.get("arguments")},
                             answer=answer, source=shown,
                             record_id=record_id, asked_at=at, answered_at=at)
        card = self._gated(record.get("tool_name"))
        if card is not None:
            card.approval = qcard
        else:
            self.entries.append(("question", qcard))

    def _on_tool_finished(self, event: ToolCallFinished) -> None:
        card = self.tools.get(event.call_id)
        if card is None:
            card = ToolCard(event.call_id, event.tool_name, event.arguments)
            self.tools[event.call_id] = card
            self.entries.append(("tool", card))
        card.result, card.success, card.error = event.result, event.success, event.error
        card.summary = event.summary
        card.duration_ms = event.duration_ms
        if event.record is not None:
            card.record_id, card.record = event.record.get("record_id"), event.record

    def state(self) -> RunData:
        """The run's saved form (schema v1): plain JSON, redacted, as the extension draws it."""
        return ended_waits(self.record().saved())

    def record(self) -> RunState:
        """The run's saved form as its typed record (``views/run_record.py``)."""
        result = self.result
        if result is not None:
            elapsed: int | None = getattr(result, "duration_ms", None)
        elif self.started_at is not None:
            elapsed = int((time.time() - self.started_at) * 1000)
        else:
            elapsed = None
        usage = getattr(result, "usage", None) or None
        run = RunState(
            # redacted here too: a view sets the prompt before the run's first event
            version=1, run_id=self.run_id or "", prompt=redact_text(self.prompt),
            model=self.model, offline=self.model == "demo", status=self.status,
            started_at=iso(self.started_at), elapsed_ms=elapsed,
            usage=Usage(prompt_tokens=int(usage.get("prompt_tokens", 0)),
                        completion_tokens=int(usage.get("completion_tokens", 0)),
                        total_tokens=int(usage.get("total_tokens", 0))) if usage else None,
            cost=getattr(result, "cost", None),
            loading=LoadingLine(**self.loading) if self.loading else None,
            entries=self._entries(self.agents))
        if self.queued and self.status == "running":
            run.queued = True
        if self.stopped_by_person and self.status == "stopped":
            run.stopped_by_person = True
        self._live(run)
        return run

    def _entries(self, agents: dict[str, tuple[dict[str, str], Transcript]]) -> list[Entry]:
        """The saved form of the entries, team agents' runs nested (``kind: agent``)."""
        entries: list[Entry] = []
        for kind, value in [*self.entries, *self._floating]:
            if kind == "text":
                if value.strip():
                    entries.append(TextEntry(kind="text", text=redact_text(value)))
            elif kind in ("tool", "question"):
                entries.append(value.entry())
            elif kind == "notice":
                entries.append(NoticeEntry(kind="notice", level=value[0], text=value[1]))
            elif kind == "agent":
                if value in agents:
                    who, run = agents[value]
                    entries.append(AgentEntry(
                        kind="agent", **who, status=run.status,
                        elapsed_ms=getattr(run.result, "duration_ms", None),
                        entries=run._entries(agents)))
            elif kind == "console":
                entries.append(ConsoleEntry(kind="console", text=value))
            else:
                entries.append(ErrorEntry(kind="error", text=value))
        return entries

    def _live(self, run: RunState) -> None:
        """While the extension draws the controls: say so, and each wait's seconds left."""
        if self.controls is None or self.status != "running":
            return
        now = time.time()
        entries = list(run.entries)
        while entries:  # team members' runs nested, their questions in their cards
            entry = entries.pop()
            if isinstance(entry, AgentEntry):
                entries.extend(entry.entries)
                continue
            question = entry.approval if isinstance(entry, ToolEntry) else entry
            if not isinstance(question, QuestionEntry):
                continue
            card = self.questions.get(question.question_id)
            if card is not None and card.source is None and card.asked_at is not None:
                question.seconds_left = max(0, round(card.asked_at + card.timeout - now))
        run.controls = "extension"


def _json_object(value: JsonObject | None) -> dict[str, JsonValue] | None:
    """A mapping as JSON would carry it (see :func:`_jsonable`)."""
    data = _jsonable(value)
    return data if isinstance(data, dict) else None


def _jsonable(value: object) -> JsonValue:
    """The value as JSON would carry it (tuples become lists, unknown objects their repr)."""
    data: JsonValue = json.loads(json.dumps(value, ensure_ascii=False, default=repr))
    return data


def usage_line(result: Any) -> str:
    """``done · 89 tokens (80 in, 9 out) · $0.000000 · 6.2 s`` for a RunResult."""
    if result is None:
        return "running"
    usage = getattr(result, "usage", {}) or {}
    parts = [outcome_words(result.status)]
    if usage:
        parts.append(f"{usage.get('total_tokens', 0)} tokens ({usage.get('prompt_tokens', 0)} in, "
                     f"{usage.get('completion_tokens', 0)} out)")
    if result.cost is not None:
        parts.append(f"${result.cost:.6f}")
    parts.append(f"{result.duration_ms / 1000:.1f} s")
    parts.append(f"{len(result.tool_calls)} tool call" + ("" if len(result.tool_calls) == 1
                                                          else "s"))
    return " · ".join(parts)


def render_html(t: Transcript) -> str:
    """The transcript as self-contained HTML (no script, nothing from the network)."""
    from agent_kernel.views.run_html import html_of

    return html_of(t.state())


def mime_bundle(t: Transcript) -> dict[str, Any]:
    """The run's display: its state under :data:`RUN_MIME`, ``text/html``, ``text/plain``."""
    from agent_kernel.views.run_html import html_of, text_of

    state = t.state()
    return {RUN_MIME: state, "text/html": html_of(state), "text/plain": text_of(state)}


class TranscriptDisplay:
    """Wraps a transcript so IPython's ``display`` shows it."""

    def __init__(self, transcript: Transcript) -> None:
        self.transcript = transcript

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, Any]:
        return mime_bundle(self.transcript)


def transcript_of(events: list[Event]) -> Transcript:
    """Build a transcript from a list of events of one run."""
    t = Transcript()
    for event in events:
        t.feed(event)
    return t
