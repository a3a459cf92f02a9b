"""A run's transcript as a MIME bundle that needs no kernel to show.

:class:`Transcript` folds the events of one run into plain data (prompt,
answer text, tool calls with their ledger record ids, questions and answers,
notices, errors, the result). :func:`render_html` turns it into self-contained
HTML (the answer's Markdown rendered, one collapsible ``<details>`` card per
tool call) and :func:`render_text` into plain text, so a saved notebook shows
the transcript on GitHub, nbviewer or in JupyterLab with no widget state.
Everything that came from the model or a tool is HTML-escaped.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from typing import Any

from ..events import (
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
from ..redaction import redact_text

STATUS_WORDS = {"ok": "done", "cancelled": "stopped", "error": "error", "limit": "limit"}


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
    record: dict[str, Any] | None = None
    summary: str | None = None
    """A failed call in the person's words (the error stays under details)."""


@dataclass
class QuestionCard:
    """One question (ask_user or an approval) and how it ended."""

    question_id: str
    question: str
    options: list[str] | None
    kind: str
    timeout: float
    default: str | None
    details: dict[str, Any] | None = None
    answer: str | None = None
    source: str | None = None
    record_id: str | None = None


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
    _turn_mark: tuple[int, int] = (0, 0)

    @property
    def text(self) -> str:
        """All answer text of the run, turns joined (secrets redacted)."""
        return redact_text("\n\n".join(v for k, v in self.entries if k == "text" and v.strip()))

    @property
    def status(self) -> str:
        """``running``, or how the run ended: done, stopped, error or limit."""
        if self.result is None:
            return "error" if self.errors else "running"
        return STATUS_WORDS.get(getattr(self.result, "status", "error"), "error")

    def feed(self, event: Event) -> None:
        """Fold one event of this run into the transcript (redacted: see ``for_display``)."""
        if self.run_id is None:
            self.run_id = event.run_id
        if event.run_id != self.run_id:
            return
        event = for_display(event)
        if isinstance(event, RunStarted):
            self.prompt, self.model = event.prompt, event.model
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
            self._on_record(event.record)
        elif isinstance(event, ToolCallFinished):
            self._on_tool_finished(event)
        elif isinstance(event, Question):
            qcard = QuestionCard(event.question_id, event.question, event.options, event.kind,
                                 event.timeout, event.default, event.details)
            self.questions[event.question_id] = qcard
            self.entries.append(("question", qcard))
        elif isinstance(event, QuestionAnswered):
            if (q := self.questions.get(event.question_id)) is not None:
                q.answer, q.source = event.answer, event.source
        elif isinstance(event, Reply):
            self.entries.append(("reply", event.text))
        elif isinstance(event, ConsoleOutput):
            self.entries.append(("console", event.text))
        elif isinstance(event, Notice):
            self.entries.append(("notice", f"{event.level}: {event.text}"))
        elif isinstance(event, Loading):  # "loaded X in 1.2 s" takes the place of "loading X…"
            loading = ("notice", Loading(event.run_id, event.what).shown)
            if event.seconds is not None and loading in self.entries:
                self.entries[self.entries.index(loading)] = ("notice", event.shown)
            else:
                self.entries.append(("notice", event.shown))
        elif isinstance(event, RunError):
            if event.kind not in ("cancelled", "limit"):
                self.errors.append(event.message)
            self.entries.append(("error" if event.kind not in ("cancelled", "limit")
                                 else "notice", event.message))
        elif isinstance(event, RunFinished):
            self.result = event.result

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

    def _on_record(self, record: dict[str, Any]) -> None:
        record_id = record.get("record_id")
        if record_id:
            self.ledger_ids.append(record_id)
        if record.get("kind") == "approval":
            for q in reversed(list(self.questions.values())):
                if q.kind == "approval" and q.record_id is None and (
                        (q.details or {}).get("tool") == record.get("tool_name")):
                    q.record_id = record_id
                    break
            else:
                decision = record.get("decision", "?")
                self.entries.append(("notice", f"approval: {record.get('tool_name')} "
                                               f"{decision} ({record.get('source')})"))

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


def dumps(value: Any) -> str:
    """Readable JSON for arguments and results (strings shown as they are)."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, indent=2, default=repr)
    except (TypeError, ValueError):
        return repr(value)


def markdown_to_html(text: str) -> str:
    """Render Markdown safely: raw HTML in the text is escaped, not passed through."""
    try:
        import mistune
    except ImportError:  # pragma: no cover - mistune is a dependency
        return f"<pre>{html.escape(text)}</pre>"
    return str(mistune.create_markdown(escape=True, plugins=["strikethrough", "table"])(text))


def usage_line(result: Any) -> str:
    """``done · 89 tokens (80 in, 9 out) · $0.000000 · 6.2 s`` for a RunResult."""
    if result is None:
        return "running"
    usage = getattr(result, "usage", {}) or {}
    parts = [STATUS_WORDS.get(result.status, result.status)]
    if usage:
        parts.append(f"{usage.get('total_tokens', 0)} tokens ({usage.get('prompt_tokens', 0)} in, "
                     f"{usage.get('completion_tokens', 0)} out)")
    if result.cost is not None:
        parts.append(f"${result.cost:.6f}")
    parts.append(f"{result.duration_ms / 1000:.1f} s")
    parts.append(f"{len(result.tool_calls)} tool call" + ("" if len(result.tool_calls) == 1
                                                          else "s"))
    return " · ".join(parts)


def question_answer_line(q: QuestionCard) -> str:
    """``Answered: tea (user)``, or how the question ended without an answer."""
    if q.source is None:
        return "Waiting for an answer"
    if q.source == "timeout":
        return "No answer (timeout)"
    return f"Answered: {q.answer} ({q.source})"


_CSS = ("<style>.agent-kernel-static details{margin:4px 0;border:1px solid #ccc;"
        "border-radius:4px;padding:2px 8px}.agent-kernel-static pre{white-space:pre-wrap;"
        "margin:2px 0}.agent-kernel-static .ak-muted{color:#666;font-size:90%}</style>")


def tool_card_html(card: ToolCard) -> str:
    """A collapsible ``<details>`` card for one tool call."""
    esc = html.escape
    if card.success is None:
        mark, state = "…", "running"
    else:
        mark, state = ("✓", "ok") if card.success else ("✗", "failed")
    duration = f" · {card.duration_ms} ms" if card.duration_ms is not None else ""
    summary = f"{mark} <code>{esc(card.tool_name)}</code> {state}{duration}"
    if card.success is False and card.summary:
        summary += f" · {esc(card.summary)}"
    body = [f"<div><b>arguments</b><pre>{esc(dumps(card.arguments))}</pre></div>"]
    if card.success is not None:
        if card.success:
            body.append(f"<div><b>result</b><pre>{esc(dumps(card.result))}</pre></div>")
        else:
            body.append(f"<div><b>error</b><pre>{esc(card.error or '')}</pre></div>")
    if card.record_id:
        record = esc(dumps(card.record)) if card.record else ""
        body.append(f"<details class='ak-muted'><summary>ledger record <code>"
                    f"{esc(card.record_id)}</code></summary><pre>{record}</pre></details>")
    return (f"<details class='ak-tool'><summary>{summary}</summary>"
            f"{''.join(body)}</details>")


def question_html(q: QuestionCard) -> str:
    """A question (or approval) with its options and the answer it got."""
    esc = html.escape
    title = "Approval" if q.kind == "approval" else "Question"
    parts = [f"<div class='ak-question'><b>{title}:</b> {esc(q.question)}"]
    if q.kind == "approval" and q.details:
        parts.append(f"<pre>{esc(dumps(q.details))}</pre>")
    if q.options:
        opts = " ".join(
            f"<button disabled>{'<b>' + esc(o) + '</b>' if o == q.answer else esc(o)}</button>"
            for o in q.options)
        parts.append(f"<div>{opts}</div>")
    answer = esc(question_answer_line(q))
    ledger = f" · ledger record <code>{esc(q.record_id)}</code>" if q.record_id else ""
    parts.append(f"<div class='ak-answered'>{answer}{ledger}</div></div>")
    return "".join(parts)


def render_html(t: Transcript) -> str:
    """The transcript as self-contained HTML."""
    esc = html.escape
    out = [_CSS, "<div class='agent-kernel-static'>",
           f"<div class='ak-muted'>agent · model <code>{esc(t.model)}</code> · run "
           f"<code>{esc(t.run_id or '')}</code></div>",
           f"<div><b>Prompt:</b> {esc(t.prompt)}</div>"]
    for kind, value in t.entries:
        if kind == "text" and value.strip():
            out.append(f"<div class='ak-reply'>{markdown_to_html(redact_text(value))}</div>")
        elif kind == "tool":
            out.append(tool_card_html(value))
        elif kind == "question":
            out.append(question_html(value))
        elif kind == "reply":
            out.append(f"<div><b>Reply:</b> {markdown_to_html(value)}</div>")
        elif kind == "console":
            out.append(f"<pre>{esc(value)}</pre>")
        elif kind == "notice":
            out.append(f"<div class='ak-muted'>{esc(value)}</div>")
        elif kind == "error":
            out.append(f"<div style='color:#b00'><b>Error:</b> {esc(value)}</div>")
    out.append(f"<div class='ak-muted ak-status'>{esc(usage_line(t.result))}</div>")
    out.append("</div>")
    return "".join(out)


def render_text(t: Transcript) -> str:
    """The transcript as plain text."""
    lines = [f"[agent · {t.model} · {t.run_id}] {t.prompt}"]
    for kind, value in t.entries:
        if kind == "text" and value.strip():
            lines.append(redact_text(value.strip()))
        elif kind == "tool":
            state = "running" if value.success is None else ("ok" if value.success else "failed")
            detail = dumps(value.result) if value.success else (value.summary or value.error or "")
            ledger = f" [ledger {value.record_id}]" if value.record_id else ""
            lines.append(f"- tool {value.tool_name}({json.dumps(value.arguments, default=repr)})"
                         f" {state} {value.duration_ms or 0} ms{ledger}: {detail}")
        elif kind == "question":
            lines.append(f"? {value.question} {value.options or ''} -> "
                         f"{question_answer_line(value)}")
        elif kind == "reply":
            lines.append(f"Reply: {value}")
        elif kind in ("console", "notice"):
            lines.append(value)
        elif kind == "error":
            lines.append(f"Error: {value}")
    lines.append(usage_line(t.result))
    return "\n".join(lines)


def mime_bundle(t: Transcript) -> dict[str, str]:
    """``{"text/html": ..., "text/plain": ...}`` for the transcript."""
    return {"text/html": render_html(t), "text/plain": render_text(t)}


class TranscriptDisplay:
    """Wraps a transcript so IPython's ``display`` shows it as HTML or text."""

    def __init__(self, transcript: Transcript) -> None:
        self.transcript = transcript

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return mime_bundle(self.transcript)


def transcript_of(events: list[Event]) -> Transcript:
    """Build a transcript from a list of events of one run."""
    t = Transcript()
    for event in events:
        t.feed(event)
    return t
