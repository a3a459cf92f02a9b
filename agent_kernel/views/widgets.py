"""The live notebook view of one run, built from ipywidgets.

This is the only module that imports ipywidgets. A :class:`WidgetView`
subscribes to the agent's bus for one run and shows: a header with a working
indicator and the elapsed time (refreshed ~4 times a second by a task on the
kernel loop), the answer as Markdown (re-rendered at most ~10 times a
second), a collapsible card per tool call with its ledger record, questions
as buttons or a text box with a countdown near the timeout, approvals with
the exact arguments, and a Stop button.

The cell's output is ONE display carrying both the widget view and a static
``text/html`` transcript (``views.mime``), updated when the run ends. A live
frontend renders the widget; nbconvert, nbviewer and GitHub, which have no
widget state, fall back to the static HTML. Every widget gets an
``agent-kernel-*`` CSS class that the browser tests rely on.
"""

from __future__ import annotations

import asyncio
import html
import time
from collections.abc import Callable
from typing import Any

import ipywidgets as w

from ..events import (
    ConsoleOutput,
    Event,
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
from .mime import (
    STATUS_WORDS,
    Transcript,
    dumps,
    markdown_to_html,
    mime_bundle,
    question_answer_line,
    tool_card_html,
    usage_line,
)

TICK_SECONDS = 0.25
RENDER_EVERY = 0.1
COUNTDOWN_FROM = 60.0
SPINNER = "◐◓◑◒"  # plain geometric shapes: common fonts have them, unlike emoji


def _classed(widget: Any, *classes: str) -> Any:
    for name in classes:
        widget.add_class(name)
    return widget


class QuestionBox:
    """The widgets of one question: text, buttons or a text box, countdown, answer."""

    def __init__(self, event: Question, answer: Callable[[str], None], live: bool) -> None:
        self.event = event
        self.deadline = time.monotonic() + event.timeout
        title = "Approval needed" if event.kind == "approval" else "Question"
        parts = [f"<b>{title}:</b> {html.escape(event.question)}"]
        if event.kind == "approval" and event.details:
            parts.append(f"<pre style='white-space:pre-wrap'>{html.escape(dumps(event.details))}"
                         "</pre>")
        self.text = w.HTML("".join(parts))
        self.buttons: list[w.Button] = []
        self.entry: w.Text | None = None
        css = "agent-kernel-approval" if event.kind == "approval" else "agent-kernel-option"
        controls: list[Any] = []
        if event.options:
            for option in event.options:
                button = _classed(w.Button(description=option, disabled=not live,
                                           tooltip=option,
                                           layout=w.Layout(width="auto", min_width="120px")), css)
                button.on_click(lambda _b, text=option: answer(text))
                self.buttons.append(button)
            controls.append(w.HBox(self.buttons))
        else:
            self.entry = _classed(w.Text(placeholder="Your answer", disabled=not live),
                                  "agent-kernel-answer-text")
            send = _classed(w.Button(description="Send", disabled=not live),
                            "agent-kernel-answer-send")
            send.on_click(lambda _b: answer(self.entry.value if self.entry else ""))
            self.buttons.append(send)
            controls.append(w.HBox([self.entry, send]))
        self.countdown = _classed(w.Label("", layout=w.Layout(display="none")),
                                  "agent-kernel-countdown")
        self.answered = w.Label("")
        self.box = _classed(w.VBox([self.text, *controls, self.countdown, self.answered]),
                            "agent-kernel-question")

    def disable(self) -> None:
        """No more answers: grey out the controls."""
        for button in self.buttons:
            button.disabled = True
        if self.entry is not None:
            self.entry.disabled = True

    def settle(self, event: QuestionAnswered) -> None:
        """Show how the question ended; the chosen button stays highlighted."""
        self.disable()
        self.countdown.value = ""
        self.countdown.layout.display = "none"
        for button in self.buttons:
            if button.description == event.answer and event.source == "user":
                button.button_style = "success"
        self.answered.value = f"Answered: {event.answer} ({event.source})" if (
            event.source != "timeout") else "No answer (timeout)"
        self.answered.add_class("agent-kernel-answered")

    def tick(self) -> None:
        """Show a countdown during the last minute before the timeout."""
        left = self.deadline - time.monotonic()
        if 0 < left <= COUNTDOWN_FROM and not self.answered.value:
            default = f"; then: {self.event.default}" if self.event.default else ""
            self.countdown.value = f"{int(left)} s left to answer{default}"
            self.countdown.layout.display = None


class WidgetView:
    """The live transcript widget of one run."""

    def __init__(self, agent: Any, run_id: str, stop: Callable[[], Any] | None = None) -> None:
        self.agent = agent
        self.run_id = run_id
        self.interactive = False
        self.transcript = Transcript(run_id=run_id)
        self.started = time.monotonic()
        self.phase = "starting"
        self.done = False
        self._dirty = False
        self._last_render = 0.0
        self._handle: Any = None
        self._ticker: asyncio.Task[Any] | None = None
        self._stop = stop
        self.cards: dict[str, w.HTML] = {}
        self.questions: dict[str, QuestionBox] = {}
        self._loading: w.HTML | None = None
        self.status = _classed(w.Label("starting"), "agent-kernel-status")
        self.elapsed = _classed(w.Label(""), "agent-kernel-elapsed")
        self.stop_button = _classed(w.Button(description="Stop", button_style="danger",
                                             icon="stop", layout=w.Layout(width="80px")),
                                    "agent-kernel-stop")
        self.stop_button.on_click(self._on_stop)
        self.prompt = w.HTML("")
        self.activity = w.VBox([])
        self.reply = _classed(w.HTML(""), "agent-kernel-reply")
        self.footer = _classed(w.HTML(""), "agent-kernel-footer")
        header = w.HBox([self.status, self.elapsed, self.stop_button])
        self.box = _classed(w.VBox([header, self.prompt, self.activity, self.reply, self.footer]),
                            "agent-kernel-transcript")
        self._unsubscribe = agent.bus.subscribe(self.on_event)

    # -- display --------------------------------------------------------------
    def bundle(self) -> dict[str, Any]:
        """Widget view plus the static transcript, for one display."""
        data = dict(mime_bundle(self.transcript))
        widget = self.box._repr_mimebundle_() or {}
        if isinstance(widget, tuple):
            widget = widget[0]
        data.update({k: v for k, v in widget.items() if k != "text/plain"})
        return data

    def show(self) -> None:
        """Display in the current cell and start the working indicator."""
        from IPython.display import display

        self._handle = display(self.bundle(), raw=True, display_id=True)
        try:
            self._ticker = asyncio.get_running_loop().create_task(self._tick())
        except RuntimeError:
            self._ticker = None

    async def _tick(self) -> None:
        while not self.done:
            self.refresh()
            await asyncio.sleep(TICK_SECONDS)

    def refresh(self) -> None:
        """Update the indicator, countdowns and any pending answer text."""
        if self._dirty:
            self._render_reply()
        if self.done:
            return
        seconds = time.monotonic() - self.started
        frame = SPINNER[int(seconds / TICK_SECONDS) % len(SPINNER)]
        self.status.value = f"{frame} {self.current_phase()}…"
        self.elapsed.value = f"{seconds:.1f} s"
        for box in self.questions.values():
            box.tick()

    def current_phase(self) -> str:
        """What the run is doing: waiting for an answer, running tools, thinking, writing."""
        if self.phase == "stopping":
            return self.phase
        if any(q.source is None for q in self.transcript.questions.values()):
            return "waiting for your answer" if self.interactive else "asking"
        running = [c.tool_name for c in self.transcript.tools.values() if c.success is None]
        if running:
            return "running " + ", ".join(running)
        return self.phase

    def _render_reply(self) -> None:
        self._dirty = False
        self._last_render = time.monotonic()
        self.reply.value = markdown_to_html(self.transcript.text)

    # -- events ---------------------------------------------------------------
    def on_event(self, event: Event) -> None:
        """Apply one event of this run to the widgets."""
        if event.run_id != self.run_id:
            return
        event = for_display(event)
        self.transcript.feed(event)
        if isinstance(event, RunStarted):
            self.prompt.value = (f"<b>Prompt:</b> {html.escape(event.prompt)} <span "
                                 f"style='color:#666'>· {html.escape(event.model)}</span>")
        elif isinstance(event, ModelCallStarted):
            self.phase = "thinking"
        elif isinstance(event, (TextDelta, StreamReset)):
            self.phase = "writing"
            self._dirty = True
            if time.monotonic() - self._last_render >= RENDER_EVERY:
                self._render_reply()
        elif isinstance(event, ToolCallStarted):
            card = _classed(w.HTML(tool_card_html(self.transcript.tools[event.call_id])),
                            "agent-kernel-tool")
            self.cards[event.call_id] = card
            self.activity.children = (*self.activity.children, card)
        elif isinstance(event, ToolCallFinished):
            self.phase = "thinking"
            if (card := self.cards.get(event.call_id)) is not None:
                card.value = tool_card_html(self.transcript.tools[event.call_id])
        elif isinstance(event, Question):
            qid = event.question_id
            asked = QuestionBox(event, lambda text: self.answer(qid, text), live=self.interactive)
            self.questions[qid] = asked
            self.activity.children = (*self.activity.children, asked.box)
        elif isinstance(event, QuestionAnswered):
            if (box := self.questions.get(event.question_id)) is not None:
                box.settle(event)
        elif isinstance(event, Reply):
            self._append_html("<b>Reply:</b> " + markdown_to_html(event.text))
        elif isinstance(event, ConsoleOutput):
            self._append_html(f"<pre style='margin:0'>{html.escape(event.text)}</pre>")
        elif isinstance(event, Notice):
            self._append_html(f"<i>{html.escape(event.level)}:</i> {html.escape(event.text)}")
        elif isinstance(event, Loading):
            line = f"<i>{html.escape(event.shown)}</i>"
            if event.seconds is None:
                self.phase = f"loading {event.what}"
                self.refresh()
                self._loading = w.HTML(line)
                self.activity.children = (*self.activity.children, self._loading)
            elif self._loading is not None:
                self._loading.value = line
            else:
                self._append_html(line)
        elif isinstance(event, RunError):
            color = "#b00" if event.kind not in ("cancelled", "limit") else "#a60"
            self._append_html(f"<span style='color:{color}'><b>{html.escape(event.kind)}:</b> "
                              f"{html.escape(event.message)}</span>")
        elif isinstance(event, RunFinished):
            self._end(STATUS_WORDS.get(event.result.status, "error"))

    def _append_html(self, value: str) -> None:
        self.activity.children = (*self.activity.children, w.HTML(value))

    def answer(self, question_id: str, text: str) -> None:
        """A click or Send: hand the answer to the waiting run (any thread)."""
        box = self.questions.get(question_id)
        if box is not None:
            box.disable()
        if not self.agent.questions.answer(question_id, text) and box is not None:
            box.answered.value = "This question is no longer waiting."

    def _on_stop(self, _button: Any) -> None:
        self.stop_button.disabled = True
        self.phase = "stopping"
        if self._stop is not None:
            self._stop()

    # -- the end --------------------------------------------------------------
    def _end(self, status: str) -> None:
        if self.done:
            return
        self.done = True
        self._render_reply()
        self.status.value = status
        self.elapsed.value = f"{time.monotonic() - self.started:.1f} s"
        self.stop_button.disabled = True
        for box in self.questions.values():
            box.disable()
        usage = html.escape(usage_line(self.transcript.result)) if self.transcript.result else ""
        self.footer.value = f"<span style='color:#666'>{usage}</span>"

    def fail(self, message: str, status: str = "error") -> None:
        """The run could not finish normally: say why in the view."""
        message = redact_text(message)
        self.transcript.errors.append(message)
        self.transcript.entries.append(("error", message))
        self._append_html(f"<span style='color:#b00'><b>{html.escape(status)}:</b> "
                          f"{html.escape(message)}</span>")
        self._end(status)

    def finish(self) -> None:
        """Stop listening and put the final static transcript into the cell's output."""
        if not self.done:
            self._end(self.transcript.status if self.transcript.result else "error")
        self._unsubscribe()
        if self._ticker is not None and not self._ticker.done():
            self._ticker.cancel()
        if self._handle is not None:
            self._handle.update(self.bundle(), raw=True)

    def answered_text(self) -> list[str]:
        """The answer lines of this run's questions (for tests and scripts)."""
        return [question_answer_line(q) for q in self.transcript.questions.values()]
