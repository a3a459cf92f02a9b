"""The live view of a run in a notebook cell: one run output, plus live controls.

Views never compute what happened; they show the stream of events. A
:class:`WidgetView` keeps the run's :class:`~agent_kernel.views.mime.Transcript`
and shows it as ONE display output carrying the run's MIME bundle (the run
state for our JupyterLab extension, ``text/html`` and ``text/plain``), updated
in place through its display id while the run streams: at most
:data:`UPDATES_PER_SECOND` times a second, once a second for the elapsed time
when nothing else changed, and always once at the end. That output never
carries a widget, live or saved, so a notebook reopened without its kernel
reads the same as it did live.

What a person can press depends on who is connected (see
:mod:`agent_kernel.notebook.frontend`). With our JupyterLab extension
(``channel`` set), the extension draws every control inside the run output:
an approval in the card it gates with its countdown, question buttons or a
text box, Stop in the header; answers come back over the extension's comm.
Otherwise the controls live in SEPARATE outputs with their own display id:
ipywidgets (this is the only module of the run view that imports ipywidgets)
for a question's buttons or text box (Enter sends), an approval's Approve /
Deny / Always allow, and Stop while the run is running; each is replaced by a
static text bundle ("You chose tea · 12:04:31", "Stopped") as soon as it is
answered or the run ends. Either way no saved output depends on a widget model.
Headless runs (nobody can click) show no controls at all.
"""

from __future__ import annotations

import asyncio
import time
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from agent_kernel.core.events import (
    Event,
    Question,
    QuestionAnswered,
    RunError,
    RunFinished,
    for_display,
)
from agent_kernel.core.redaction import redact_text
from agent_kernel.notebook.cells import Header, display_pub, in_cell, update_output
from agent_kernel.views.exact import exact_html, exact_rows
from agent_kernel.views.mime import Transcript, mime_bundle
from agent_kernel.views.run_html import esc, outcome, question_text
from agent_kernel.views.run_record import STOPPED_OUTCOME
from agent_kernel.views.summaries import HANDLE_ARGUMENTS, asked_by, question_label, work_name

if TYPE_CHECKING:
    from IPython.display import DisplayHandle

UPDATES_PER_SECOND = 4
TICK_SECONDS = 1 / UPDATES_PER_SECOND
ELAPSED_EVERY = 1.0
_STATIC_STYLE = ("font-size:13px;line-height:1.45;"
                 "color:var(--jp-ui-font-color1,#1f1f1f)")


def _classed(widget: Any, *classes: str) -> Any:
    for name in classes:
        widget.add_class(name)
    return widget


def close_widget(widget: object) -> None:
    """Close a widget and the layout and style models it made, so none outlives its use."""
    for part in (getattr(widget, "layout", None), getattr(widget, "style", None), widget):
        if isinstance(part, w.Widget):
            part.close()


def static_bundle(line: str, css: str = "agent-kernel-answered") -> dict[str, str]:
    """A control's replacement once it has done its work: the outcome as text."""
    if not line:
        return {"text/plain": "", "text/html": ""}
    return {"text/plain": line,
            "text/html": f"<div class='{css} agent-kernel-outcome' style='{_STATIC_STYLE}'>"
                         f"{esc(line)}</div>"}


def _countdown(left: float) -> str:
    left = max(0, int(left))
    if left >= 3600:
        return f"{left // 3600} h {left % 3600 // 60:02d} min"
    return f"{left // 60}:{left % 60:02d}"


class QuestionControl:
    """The live controls of one question or approval, shown in their own output."""

    def __init__(self, event: Question, answer: Callable[[str], object],
                 exact: object = None, who: str | None = None) -> None:
        """``event`` as shown (redacted); ``exact``: the approval's arguments as the tool will
        receive them (shown, secrets marked: see :mod:`.exact`); ``who``: the team agent that
        asks, by its work (``run command sleep 30 · Worker``), when the run knows it."""
        self.event = event
        self.deadline = time.monotonic() + event.timeout
        self.handle: DisplayHandle | None = None
        self.cell: Header | None = None
        """The header of the cell it shows in (its updates go there and to the running one)."""
        self.settled = False
        approval = event.kind == "approval"
        if approval:
            details = event.details or {}
            who = who or asked_by(details)
            title = ((f"<b>{esc(who)} asks:</b> " if who else "")
                     + f"<b>Allow <code>{esc(details.get('tool', '?'))}</code> to run?</b> "
                     "It will run with exactly:" + exact_html(exact))
            if isinstance(details.get("where"), str):  # files/ on an object store
                title += f"<div>where: {esc(details['where'])}</div>"
        else:
            label = f"{who} asks" if who else question_label(False, event.details)
            title = (f"<b>{esc(label)}:</b> "
                     f"{question_text(event.question)}")
        self.text = w.HTML(f"<div style='{_STATIC_STYLE}'>{title}</div>")
        self.buttons: list[w.Button] = []
        self.entry: w.Text | None = None
        css = "agent-kernel-approval" if approval else "agent-kernel-option"
        if event.options:
            for option in event.options:
                primary = approval and option == "Approve"
                button = _classed(w.Button(description=option, tooltip=option,
                                           button_style="primary" if primary else "",
                                           layout=w.Layout(width="auto", min_width="110px")),
                                  css)
                button.on_click(lambda _b, text=option: answer(text))
                self.buttons.append(button)
            controls = w.HBox(self.buttons)
        else:
            self.entry = _classed(w.Text(placeholder="Your answer, then Enter"),
                                  "agent-kernel-answer-text")
            send = _classed(w.Button(description="Send", button_style="primary"),
                            "agent-kernel-answer-send")
            send.on_click(lambda _b: answer(self.entry.value if self.entry else ""))
            with warnings.catch_warnings():  # on_submit is the one way to hear Enter alone
                warnings.simplefilter("ignore", DeprecationWarning)
                self.entry.on_submit(lambda box: answer(box.value))
            self.buttons.append(send)
            controls = w.HBox([self.entry, send])
        self.countdown = _classed(w.Label(""), "agent-kernel-countdown")
        self.box = _classed(w.VBox([self.text, controls, self.countdown]),
                            "agent-kernel-question")
        self.tick()

    def show(self) -> None:
        """Display the controls as an output of their own."""
        from IPython.display import display

        self.handle = display(self.box, display_id=True)

    def disable(self) -> None:
        """No more answers: grey out the controls (until the static text replaces them)."""
        for button in self.buttons:
            button.disabled = True
        if self.entry is not None:
            self.entry.disabled = True

    def settle(self, line: str) -> None:
        """Replace the controls with how the question ended."""
        if self.settled:
            return
        self.settled = True
        self.disable()
        if self.handle is not None:
            update_output(self.handle, static_bundle(line), self.cell)
        for widget in (*self.buttons, self.entry, self.text, self.countdown, *self.box.children,
                       self.box):
            if widget is not None:
                close_widget(widget)

    def tick(self) -> None:
        """The time left to answer, shown from the start."""
        if self.settled:
            return
        then = f" · then: {self.event.default}" if self.event.default else ""
        self.countdown.value = (f"answer within {_countdown(self.deadline - time.monotonic())}"
                                f"{then}")


class WidgetView:
    """One run in a notebook cell: the run output and its live controls."""

    def __init__(self, agent: Any, run_id: str, stop: Callable[[], Any] | None = None) -> None:
        self.agent = agent
        self.run_id = run_id
        self.interactive = False
        self.transcript = Transcript(run_id=run_id)
        self.transcript.started_at = time.time()
        self.done = False
        self.stopped_by_person = False
        self.questions: dict[str, QuestionControl] = {}
        self.updates = 0
        self._handle: DisplayHandle | None = None
        self._stop_handle: DisplayHandle | None = None
        self._emptied: list[DisplayHandle] = []
        """Stop's earlier outputs, emptied when a question came (said again at the end)."""
        self._parent: Header | None = None
        self._last_push = 0.0
        self._pending = False
        self._ticker: asyncio.Task[Any] | None = None
        self._stop = stop
        self._stop_button: Any = None
        self.channel: Any = None
        """The extension's channel (a FrontendProbe) when the extension draws the controls."""
        self.exact: dict[str, Any] = {}
        """The exact arguments of each approval still waiting, by question id (live only)."""
        self._unsubscribe = agent.bus.subscribe(self.on_event)

    @property
    def stop_button(self) -> Any:
        """The Stop button, made on first use: a widget made is a model a headless client
        saves in the notebook even if it is never shown."""
        if self._stop_button is None:
            self._stop_button = _classed(w.Button(description="Stop", icon="stop",
                                                  tooltip="Stop this run",
                                                  layout=w.Layout(width="90px")),
                                         "agent-kernel-stop")
            self._stop_button.on_click(self._on_stop)
        return self._stop_button

    @property
    def status(self) -> str:
        """The run's status word (``running``, ``done``, ``denied``, ``stopped``...)."""
        return self.transcript.status

    # -- display --------------------------------------------------------------
    def bundle(self) -> dict[str, Any]:
        """The run's MIME bundle: run state, ``text/html``, ``text/plain``; never a widget."""
        return mime_bundle(self.transcript)

    def show(self) -> None:
        """Display the run (and Stop, when someone can press it); start the ticker."""
        from IPython.display import display

        pub = display_pub()
        self._parent = dict(getattr(pub, "parent_header", None) or {}) or None
        if self.interactive and self.channel is not None:
            self.transcript.controls = "extension"
            self.channel.add_run(self)
        self._handle = display(self.bundle(), raw=True, display_id=True)
        self._last_push = time.monotonic()
        if self.interactive and self.channel is None:
            self._stop_handle = self._display_stop()
        try:
            self._ticker = asyncio.get_running_loop().create_task(self._tick())
        except RuntimeError:
            self._ticker = None

    def push(self, force: bool = False) -> None:
        """Update the run output now (``force``) or when the throttle allows."""
        if self._handle is None:
            return
        now = time.monotonic()
        if not force and now - self._last_push < TICK_SECONDS:
            self._pending = True
            return
        self._pending = False
        self._last_push = now
        self.updates += 1
        update_output(self._handle, self.bundle(), self._parent)

    async def _tick(self) -> None:
        while not self.done:
            self.refresh()
            await asyncio.sleep(TICK_SECONDS)

    def refresh(self) -> None:
        """Countdowns, pending updates, and the elapsed time once a second."""
        if self.done:
            return
        for control in self.questions.values():
            control.tick()
        if self._pending or time.monotonic() - self._last_push >= ELAPSED_EVERY:
            self.push()

    # -- events ---------------------------------------------------------------
    def on_event(self, event: Event) -> None:
        """Fold one event of this run into the transcript and the controls."""
        if event.run_id != self.run_id:
            return
        exact = (event.details or {}).get("arguments") if (
            isinstance(event, Question) and event.kind == "approval") else None
        if isinstance(event, Question) and event.kind == "approval" and not self.done:
            self.exact[event.question_id] = exact  # live only: never in the saved bundle
        event = for_display(event)
        self.transcript.feed(event)
        if (isinstance(event, Question) and self.interactive and self.channel is None
                and not self.done):
            qid = event.question_id
            control = QuestionControl(event, lambda text: self.answer(qid, text),
                                      self._as_in_card(qid, exact), self._who_asks(event))
            self.questions[qid] = control
            control.cell = self._parent
            if self._handle is not None:
                with in_cell(self._parent):
                    control.show()
                    self._stop_last()
        elif isinstance(event, QuestionAnswered):
            self.exact.pop(event.question_id, None)
            self._settle(event.question_id)
        elif isinstance(event, RunFinished):
            self._end()
        self.push()

    def _who_asks(self, event: Question) -> str | None:
        """The team agent that asks, named by its work as its nested run is (its id is
        for the ledger); None when no agent of this run asks or it is not known yet."""
        agent = (event.details or {}).get("asked_by")
        for who, _run in self.transcript.agents.values():
            if agent and who.get("agent_id") == agent:
                return work_name(who.get("prompt") or "", who.get("role") or "")
        return None

    def _as_in_card(self, question_id: str, exact: object) -> object:
        """The exact arguments of the names the call's card shows, in its order.

        The card (the run output) shows the call as the model made it; the approval
        holds the arguments after the tool filled its defaults. Shown side by side they
        read as two different calls, so the control shows the card's names, exactly."""
        card = next((c for c in self.transcript.tools.values()
                     if c.approval is not None and c.approval.question_id == question_id),
                    None)
        if card is None or not isinstance(card.arguments, dict) or not isinstance(exact, dict):
            return exact
        # a cell named by its id in the call is named by its position in the approval
        names = ["index" if k in HANDLE_ARGUMENTS else k for k in card.arguments]
        shown = {k: exact[k] for k in names if k in exact}
        return shown or exact

    def _stop_last(self) -> None:
        """Keep Stop below every question, so outcomes read top to bottom in order.

        Outputs cannot move: Stop's old output is emptied and Stop shown again below."""
        if self._stop_handle is None or self.done:
            return
        update_output(self._stop_handle, static_bundle(""), self._parent)
        self._emptied.append(self._stop_handle)
        self._stop_handle = self._display_stop()

    def _display_stop(self) -> DisplayHandle | None:
        """Stop, as an output of its own below the last one of the cell."""
        from IPython.display import display

        return display(self.stop_button, display_id=True)

    def _settle(self, question_id: str) -> None:
        control = self.questions.get(question_id)
        q = self.transcript.questions.get(question_id)
        if control is None or q is None:
            return
        line = outcome(q.state())
        if q.kind == "approval":
            line = f"{(q.details or {}).get('tool', 'approval')}: {line}"
        control.settle(line)

    def answer(self, question_id: str, text: str) -> bool:
        """A click, Send or Enter: hand the answer to the waiting run (any thread)."""
        control = self.questions.get(question_id)
        if control is not None:
            control.disable()
        from agent_kernel.engine.questions import AnswerRefused

        try:
            taken = bool(self.agent.questions.answer(question_id, text))
        except AnswerRefused:  # not one of its options (a button always is): it still waits,
            if control is not None:  # and the extension tells the person why
                for button in control.buttons:
                    button.disabled = False
            raise
        if not taken and control is not None:
            control.settle("This question is no longer waiting.")
        return taken

    def exact_rows(self, question_id: str) -> list[dict[str, Any]] | None:
        """The exact arguments of a waiting approval as marked rows; None once it ended."""
        if self.done or question_id not in self.exact:
            return None
        return [row.to_json() for row in exact_rows(self.exact[question_id])]

    def request_stop(self) -> bool:
        """Stop pressed (a widget or the extension's header; any thread)."""
        if self.done:
            return False
        self.stopped_by_person = self.transcript.stopped_by_person = True
        if self._stop is not None:
            self._stop()
        return True

    def _on_stop(self, _button: object) -> None:
        self.stop_button.disabled = True
        self.request_stop()

    # -- the end --------------------------------------------------------------
    def _end(self) -> None:
        if self.done:
            return
        self.done = True
        self.exact.clear()
        if self.channel is not None:
            self.channel.drop_run(self.run_id)
        for question_id, control in self.questions.items():
            if not control.settled:
                q = self.transcript.questions.get(question_id)
                control.settle(outcome(q.state()) if q and q.source else STOPPED_OUTCOME)
        if self._stop_handle is not None:
            stopped = self.status == "stopped"
            line = f"Stopped · {time.strftime('%H:%M:%S')}" if stopped else ""
            # where every other update goes: its cell, and the running one (nbclient)
            update_output(self._stop_handle, static_bundle(line, "agent-kernel-stopped"),
                          self._parent)
            self._stop_handle = None
            for earlier in self._emptied:  # emptied while no cell ran, nbclient missed it
                update_output(earlier, static_bundle(""), self._parent)
            self._emptied.clear()
        if self._stop_button is not None:
            close_widget(self._stop_button)

    def fail(self, message: str, status: str = "failed") -> None:
        """The run could not finish normally: say why in the view."""
        message = redact_text(message)
        self.transcript.ended = "stopped" if status == "stopped" else "failed"
        self.transcript.feed(RunError(self.run_id, message,
                                      kind="cancelled" if status == "stopped" else "error"))
        self._end()

    def finish(self) -> None:
        """Stop listening; the run output gets its final, static bundle."""
        if not self.done:
            if self.transcript.result is None and self.transcript.ended is None:
                self.transcript.ended = "failed"
            self._end()
        self._unsubscribe()
        if self._ticker is not None and not self._ticker.done():
            self._ticker.cancel()
        self.push(force=True)

    def answered_text(self) -> list[str]:
        """How each question of this run ended, in words (for tests and scripts)."""
        return [outcome(q.state()) for q in self.transcript.questions.values()]
