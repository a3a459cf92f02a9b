"""The triggers panel in a notebook: a static table updated in place, and its controls apart.

A panel is shown in the cell where a trigger was made (filtered to that
trigger) and by ``%agent_triggers`` (every trigger, new ones too). Like a run,
its output is ONE display of a static bundle (``text/html`` + ``text/plain``
from :mod:`.panel_html`), never a widget: the scheduler tells the panel
whenever a trigger is made, fires, finishes a run, is skipped, cancelled or
approved, and the panel updates that output through its display id, at most
:data:`UPDATES_PER_SECOND` times a second (and every :data:`REFRESH_SECONDS`
while a trigger is live, so its "as of" stays near the clock). A saved notebook keeps the
last real state, with local times and their zone (no "in 4 min" to go stale).

The updates carry the parent header of the panel's own cell (JupyterLab maps
display ids per cell) and, when another cell is running, of that cell too
(nbclient and papermill apply display updates only while they read the running
cell's messages).

What a person presses lives in a SEPARATE output: one row per live trigger
(Approve for a restored trigger that needs approval, Cancel), drawn by our JupyterLab
extension where it is active (:class:`ExtensionControls`), and otherwise said in words
with the ``%agent_triggers`` line that does each (:class:`TextControls`). Never a
widget: a trigger outlives the session that made it, and a notebook saved with a live
widget in it reopens as "Error displaying widget: model not found". Only the
newest panel showing a trigger holds its controls; an older panel's controls
output turns into text when it has none left ("Cancelled: check the build (every 2 s) · 12:04:31",
or that the controls moved to a newer panel). Headless clients get no
controls.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from agent_kernel.core.mime_types import CONTROLS_MIME
from agent_kernel.notebook.cells import LiveOutput, in_cell, outcome_bundle
from agent_kernel.triggers.model import LIVE
from agent_kernel.views.summaries import one_line
from agent_kernel.views.trigger_panel import (
    local_time,
    panel_html,
    shown,
    status_words,
    text_table,
)

if TYPE_CHECKING:
    from IPython.display import DisplayHandle

    from agent_kernel.notebook.requests import TriggerRequest
    from agent_kernel.triggers.host import TriggerHost
    from agent_kernel.triggers.model import Trigger

UPDATES_PER_SECOND = 2
REFRESH_SECONDS = 30.0
HISTORY = 4
# The newest panel that holds each live trigger's controls, by trigger id.
_CONTROLS_OWNER: dict[str, TriggersPanel] = {}

__all__ = ["TriggersPanel", "text_table"]


def _now_text() -> str:
    now = datetime.now().astimezone()
    return local_time(now.isoformat(), now)


def trigger_words(trigger: Trigger | None, unknown: str = "that trigger") -> str:
    """A trigger as a person knows it, by what it asks and when (``check the build (every
    2 s)``); its id is for the magic a person types."""
    if trigger is None:
        return unknown
    return f"{one_line(trigger.prompt, 60)} ({trigger.schedule_text()})"


def trigger_outcome(action: str, trigger: Trigger | None, done: bool) -> str:
    """What Cancel or Approve did, in words (``Cancelled: check the build (every 2 s)``)."""
    what = trigger_words(trigger)
    if done:
        return f"{'Cancelled' if action == 'cancel' else 'Approved'}: {what}"
    return f"Nothing to {action}: {what} is no longer waiting for it"


class TriggersPanel:
    """A static, self-updating table of triggers; ``trigger_ids`` limits it (else all)."""

    def __init__(self, scheduler: TriggerHost, trigger_ids: Iterable[str] | None = None):
        self.scheduler = scheduler
        self.only = set(trigger_ids) if trigger_ids is not None else None
        self.seen: list[str] = [t.id for t in self._live_ones()]
        self.history: dict[str, list[tuple[str, str, str]]] = {}
        self._seen_run: dict[str, str | None] = {t.id: t.last_run_id
                                                 for t in scheduler.triggers.values()}
        self.controls: _Controls | None = None
        self.output = LiveOutput(self.bundle, UPDATES_PER_SECOND)
        self._refresher: asyncio.TimerHandle | None = None
        scheduler.listeners.append(self.changed)

    def _live_ones(self) -> list[Trigger]:
        if self.only is not None:
            return [t for i, t in self.scheduler.triggers.items() if i in self.only]
        return [t for t in self.scheduler.triggers.values() if t.status in LIVE]

    def triggers(self) -> list[Trigger]:
        """The triggers this panel shows, in the order they first appeared in it."""
        return [self.scheduler.triggers[i] for i in self.seen if i in self.scheduler.triggers]

    def _running(self) -> set[str]:
        running = getattr(self.scheduler, "running", {}) or {}
        return {f.trigger_id for f in running.values()}

    def bundle(self) -> dict[str, str]:
        """The panel's static bundle: ``text/html`` and ``text/plain``; never a widget."""
        now = datetime.now().astimezone()
        shown_now, running = self.triggers(), self._running()
        earlier = {i: runs[1:] for i, runs in self.history.items()}  # [0] is the last run
        return {"text/html": panel_html(shown_now, now, running, earlier),
                "text/plain": text_table(shown_now, now, running)}

    def _repr_mimebundle_(self, **_kwargs: object) -> dict[str, str]:
        return self.bundle()

    def show(self, controls: bool = False, channel: object = None) -> None:
        """Display the table (and the controls when a person can click) in this cell.

        With ``channel`` (our extension's, see :mod:`agent_kernel.notebook.frontend`), the
        extension draws the controls; otherwise they are words (:class:`TextControls`).
        """
        self.output.show()
        if controls:
            made = ExtensionControls(self, channel) if channel is not None else \
                TextControls(self)
            self.controls = made
            made.show()
        self._schedule_refresh()

    # -- updates --------------------------------------------------------------
    def changed(self, trigger: Trigger) -> None:
        """Called by the scheduler when ``trigger`` changed."""
        if self.only is not None and trigger.id not in self.only:
            return
        if trigger.id not in self.seen:
            if trigger.status not in LIVE:
                return
            self.seen.append(trigger.id)
        if trigger.last_run_id and trigger.last_status and \
                self._seen_run.get(trigger.id) != trigger.last_run_id:
            self._seen_run[trigger.id] = trigger.last_run_id
            t = shown(trigger)
            earlier = self.history.setdefault(trigger.id, [])
            earlier.insert(0, (t.last_fired_at or "", t.last_status or "", t.last_result or ""))
            del earlier[HISTORY + 1:]
        if self.controls is not None:
            self.controls.changed(trigger)
        self.push()

    def push(self, force: bool = False) -> None:
        """Update the table now, or as soon as the throttle allows."""
        self.output.push(force)

    @property
    def updates(self) -> int:
        """How many times the table was redrawn."""
        return self.output.updates

    def _schedule_refresh(self) -> None:
        if not any(t.status in LIVE for t in self.triggers()):
            self._refresher = None
            return
        with contextlib.suppress(RuntimeError):
            self._refresher = asyncio.get_running_loop().call_later(REFRESH_SECONDS,
                                                                    self._refresh)

    def _refresh(self) -> None:
        self.push()
        self._schedule_refresh()


class _Controls:
    """What both kinds of panel controls share: which rows are live, and what was done."""

    def __init__(self, panel: TriggersPanel) -> None:
        self.panel = panel
        self.rows: dict[str, Any] = {}
        self.outcomes: list[str] = []
        self.handle: DisplayHandle | None = None
        self.settled = False
        self._acting: str | None = None  # the trigger a click acts on (it says so itself)

    def _claim_live(self) -> None:
        for trigger in self.panel.triggers():
            if trigger.status in LIVE:
                self._claim(trigger)

    def _claim(self, trigger: Trigger) -> None:
        previous = _CONTROLS_OWNER.get(trigger.id)
        _CONTROLS_OWNER[trigger.id] = self.panel
        if previous is not None and previous is not self.panel and previous.controls:
            previous.controls.drop(trigger.id, moved=True)
        self._add_row(trigger)

    def _add_row(self, trigger: Trigger) -> None:
        raise NotImplementedError

    def _remove_row(self, row: object) -> None:
        raise NotImplementedError

    def _redraw(self) -> None:
        """Show the rows and outcomes as they are now."""

    def use(self, action: str, trigger_id: str) -> tuple[bool, str]:
        """A click on Cancel or Approve: act, then say what happened (and return it)."""
        scheduler = self.panel.scheduler
        trigger = scheduler.triggers.get(trigger_id)
        self._acting = trigger_id
        try:
            done = scheduler.cancel(trigger_id) if action == "cancel" else \
                scheduler.approve(trigger_id)
        finally:
            self._acting = None
        line = f"{trigger_outcome(action, trigger, bool(done))} · {_now_text()}"
        self.outcomes.append(line)
        self._after_change(trigger_id)
        if not self.settled:
            self._redraw()
        elif self.handle is not None:  # settled by the change itself: add this outcome
            with in_cell(self.panel.output.cell):
                self.handle.update(self._text_bundle(), raw=True)
        return bool(done), line

    def changed(self, trigger: Trigger) -> None:
        """A trigger of the panel changed: add, update or drop its row."""
        if self.settled:
            return
        if trigger.id not in self.rows and trigger.status in LIVE:
            self._claim(trigger)
        self._after_change(trigger.id)

    def _after_change(self, trigger_id: str) -> None:
        trigger = self.panel.scheduler.triggers.get(trigger_id)
        if trigger_id not in self.rows:
            return
        if trigger is None or trigger.status not in LIVE:
            self.drop(trigger_id)
            return
        self._update_row(trigger)

    def _update_row(self, trigger: Trigger) -> None:
        self._redraw()

    def drop(self, trigger_id: str, moved: bool = False) -> None:
        """Remove one trigger's row; with none left, the output becomes text."""
        row = self.rows.pop(trigger_id, None)
        if row is None:
            return
        if moved:
            self.outcomes.append(f"Controls for {self._named(trigger_id)} moved to a newer "
                                 f"triggers panel · {_now_text()}")
        elif trigger_id != self._acting:  # ended by the magic, a run or its schedule
            self.outcomes.append(self._ended_line(trigger_id))
        elif _CONTROLS_OWNER.get(trigger_id) is self.panel:
            del _CONTROLS_OWNER[trigger_id]
        self._remove_row(row)
        if not self.rows:
            self.settle()
        else:
            self._redraw()

    def _named(self, trigger_id: str) -> str:
        """A trigger of this panel in words (:func:`trigger_words`)."""
        return trigger_words(self.panel.scheduler.triggers.get(trigger_id), "a trigger")

    def _ended_line(self, trigger_id: str) -> str:
        trigger = self.panel.scheduler.triggers.get(trigger_id)
        if trigger is None:
            return f"A trigger is gone · {_now_text()}"
        word = status_words(trigger, running=False)
        return f"{word[:1].upper()}{word[1:]}: {self._named(trigger_id)} · {_now_text()}"

    def _text_bundle(self) -> dict[str, str]:
        return outcome_bundle(self.outcomes or [f"No live trigger to cancel · {_now_text()}"])

    def settle(self) -> None:
        """Replace the buttons with what was done, as text."""
        if self.settled:
            return
        self.settled = True
        if self.handle is not None:
            with in_cell(self.panel.output.cell):
                self.handle.update(self._text_bundle(), raw=True)
        self._closed()

    def _closed(self) -> None:
        """Free what the live controls held."""


class TextControls(_Controls):
    """Without our extension: each live row as words with the magic that acts on it.

    No widget: a live widget saved in a notebook (JupyterLab saves every two minutes)
    reopens as "Error displaying widget: model not found", since JupyterLab's widget
    renderer wins over every fallback in the bundle. A trigger lives for hours or days,
    so its controls are what a saved notebook shows too: plain text, updated in place.
    """

    def __init__(self, panel: TriggersPanel) -> None:
        super().__init__(panel)
        self.rows: dict[str, tuple[str, bool]] = {}
        self._claim_live()

    def show(self) -> None:
        """Display the controls' bundle (or their text if none is live)."""
        from IPython.display import display

        self.settled = not self.rows
        self.handle = display(self.bundle(), raw=True, display_id=True)

    def hints(self) -> list[str]:
        """One line per live row: what it is and the magic that cancels or approves it."""
        lines = []
        for trigger_id, (label, needs_approval) in self.rows.items():
            how = f"cancel with %agent_triggers cancel {trigger_id}"
            if needs_approval:
                how = f"approve with %agent_triggers approve {trigger_id}, or {how}"
            lines.append(f"{label} — {how}")
        return lines

    def bundle(self) -> Mapping[str, object]:
        """The live rows as words (what was done first), or the final text."""
        if self.settled or not self.rows:
            return self._text_bundle()
        return outcome_bundle([*self.outcomes, *self.hints()])

    def _add_row(self, trigger: Trigger) -> None:
        t = shown(trigger)
        self.rows[t.id] = (f"{t.schedule_text()} · {t.prompt[:60]}", trigger.needs_approval)
        self._redraw()

    def _update_row(self, trigger: Trigger) -> None:
        label, _needs = self.rows[trigger.id]
        self.rows[trigger.id] = (label, trigger.needs_approval)
        self._redraw()

    def _remove_row(self, row: object) -> None:
        pass

    def _redraw(self) -> None:
        if self.handle is not None and not self.settled:
            with in_cell(self.panel.output.cell):
                self.handle.update(self.bundle(), raw=True)


class ExtensionControls(TextControls):
    """The panel's Cancel / Approve drawn by our JupyterLab extension: no widget at all.

    The output is a bundle of :data:`CONTROLS_MIME` (the live rows and what was done)
    with ``text/html`` and ``text/plain`` saying how to do the same with
    ``%agent_triggers``; clicks come back over the extension's comm
    (:mod:`agent_kernel.notebook.frontend`, action ``trigger``). Once no row is live, the
    output is plain text like :class:`TextControls`'.
    """

    def __init__(self, panel: TriggersPanel, channel: Any) -> None:
        from agent_kernel.notebook.requests import TriggerRequest

        self.channel = channel
        channel.on_action("trigger", TriggerRequest, _trigger_action)
        super().__init__(panel)

    def bundle(self) -> dict[str, Any]:
        """The live rows for the extension, with words for every other frontend."""
        if self.settled or not self.rows:
            return self._text_bundle()
        rows = [{"trigger_id": i, "label": label, "needs_approval": needs}
                for i, (label, needs) in self.rows.items()]
        hint = "; ".join(f"%agent_triggers cancel {i}" for i in self.rows)
        words = [*self.outcomes, f"Live controls (while the kernel runs): {hint}"]
        return {CONTROLS_MIME: {"version": 1, "kind": "triggers", "rows": rows,
                                "outcomes": self.outcomes}, **outcome_bundle(words)}


def _trigger_action(request: TriggerRequest) -> tuple[bool, str]:
    """The extension's Cancel or Approve: the panel holding the trigger's controls acts."""
    op, trigger_id = request.op, request.trigger_id
    panel = _CONTROLS_OWNER.get(trigger_id)
    if panel is None or panel.controls is None or trigger_id not in panel.controls.rows:
        return False, f"{trigger_id[:40]} has no live controls in this kernel."
    done, line = panel.controls.use(op, trigger_id)
    return done, "" if done else line
