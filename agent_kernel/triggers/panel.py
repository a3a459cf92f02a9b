"""The triggers panel: each trigger's kind, next run, last run and result, and a cancel button.

A restored condition with no approval on record reads "needs approval", shows
the exact condition and prompt, and has an **Approve** button (which records
the person's approval and arms it) beside Cancel.

One :class:`TriggersPanel` is shown in the cell where a trigger was made
(filtered to that trigger) and ``%agent_triggers`` shows one with every
trigger. Rows are live: the scheduler calls the panel whenever a trigger
fires, finishes a run, is skipped or cancelled, and the row's widgets are
updated in place, so the output of fired runs appears under the cell that
made the trigger. ipywidgets is imported here and nowhere else in the
package. Saved notebooks and headless clients get a plain-text table as the
``text/plain`` part of the same display.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .model import LIVE, parse_iso

if TYPE_CHECKING:
    from .host import TriggerHost
    from .model import Trigger

HISTORY = 5
RESULT_CHARS = 400


def shown(trigger: Trigger) -> Trigger:
    """A copy fit to be shown and saved in a notebook: prompt, result and condition redacted."""
    from dataclasses import replace

    from ..redaction import redact_text, scrub

    return replace(trigger, prompt=redact_text(trigger.prompt),
                   last_result=redact_text(trigger.last_result or "") or trigger.last_result,
                   condition=scrub(trigger.condition) if trigger.condition else None)


def _local(text: str | None) -> str:
    moment = parse_iso(text)
    if moment is None:
        return "-"
    moment = moment.astimezone()
    return moment.strftime("%H:%M:%S") if moment.date() == datetime.now().date() else \
        moment.strftime("%Y-%m-%d %H:%M:%S")


def _last(trigger: Trigger) -> str:
    if not trigger.last_status:
        return "not run yet"
    result = (trigger.last_result or "").strip().replace("\n", " ")
    if len(result) > 80:
        result = result[:79] + "…"
    return f"{_local(trigger.last_fired_at)} {trigger.last_status}: {result}"


def text_table(triggers: Iterable[Trigger]) -> str:
    """The plain-text view: one line per trigger."""
    rows = list(triggers)
    if not rows:
        return "No triggers. Ask the agent, e.g. %agent every 2 seconds check the build"
    active = sum(1 for t in rows if t.active)
    waiting = sum(1 for t in rows if t.needs_approval)
    more = f", {waiting} need approval (%agent_triggers approve ID)" if waiting else ""
    lines = [f"{len(rows)} trigger(s), {active} active{more}:"]
    for t in map(shown, rows):
        lines.append(f"  {t.id} [{t.kind}, {t.status_text}] {t.schedule_text()}: "
                     f"{t.prompt[:60]}")
        lines.append(f"      next run: {_local(t.next_run)}; runs {t.runs}, errors {t.errors}, "
                     f"skipped {t.skipped}; last: {_last(t)}")
    return "\n".join(lines)


class _Row:
    """The widgets of one trigger."""

    def __init__(self, panel: TriggersPanel, trigger: Trigger) -> None:
        import ipywidgets as w

        self.trigger_id = trigger.id
        self.history: list[str] = []
        self.seen_run: str | None = None
        self.html = w.HTML()
        self.cancel = w.Button(description="Cancel", button_style="warning",
                               tooltip=f"cancel trigger {trigger.id}",
                               layout=w.Layout(width="90px"))
        self.cancel.on_click(lambda _b: panel.scheduler.cancel(self.trigger_id))
        self.approve = w.Button(description="Approve", button_style="primary",
                                tooltip=f"approve the condition of trigger {trigger.id} and "
                                        "start checking it",
                                layout=w.Layout(width="90px"))
        self.approve.on_click(lambda _b: panel.scheduler.approve(self.trigger_id))
        self.box = w.HBox([self.html, self.approve, self.cancel],
                          layout=w.Layout(border="1px solid #ddd", padding="4px",
                                          margin="2px 0", align_items="flex-start"))
        self.update(trigger)

    def update(self, t: Trigger) -> None:
        t = shown(t)
        if t.last_run_id and t.last_run_id != self.seen_run and t.last_status:
            self.seen_run = t.last_run_id
            color = "#2a7" if t.last_status == "ok" else "#c33"
            body = html.escape((t.last_result or "")[:RESULT_CHARS])
            self.history.insert(0, f"<div><span style='color:{color}'>{_local(t.last_fired_at)} "
                                   f"{html.escape(t.last_status)}</span> {body}</div>")
            del self.history[HISTORY:]
        status = {"active": "#2a7", "cancelled": "#999", "done": "#777",
                  "needs_approval": "#a60"}.get(t.status, "#c33")
        why = ("<div style='color:#a60'>Restored without an approval on record: it is not "
               "checked until you approve this exact condition and prompt.</div>"
               if t.needs_approval else "")
        self.html.value = (
            f"<div><b>{html.escape(t.kind)}</b> <code>{html.escape(t.id)}</code> "
            f"<span style='color:{status}'>{html.escape(t.status_text)}</span> · "
            f"{html.escape(t.schedule_text())}</div>{why}"
            f"<div>{html.escape(t.prompt[:200])}</div>"
            f"<div style='color:#666'>next run {_local(t.next_run)} · runs {t.runs} · "
            f"errors {t.errors} · skipped {t.skipped}</div>"
            + "".join(self.history))
        self.cancel.disabled = t.status not in LIVE
        self.approve.layout.display = None if t.needs_approval else "none"
        self.approve.disabled = not t.needs_approval


class TriggersPanel:
    """A live list of triggers; ``trigger_ids`` limits it to some (else all, new ones too)."""

    def __init__(self, scheduler: TriggerHost, trigger_ids: Iterable[str] | None = None):
        import ipywidgets as w

        self.scheduler = scheduler
        self.only = set(trigger_ids) if trigger_ids is not None else None
        self.rows: dict[str, _Row] = {}
        self.title = w.HTML()
        self.box = w.VBox([self.title])
        for trigger in self._shown():
            self._row(trigger)
        self._title()
        scheduler.listeners.append(self.changed)

    def _shown(self) -> list[Trigger]:
        if self.only is not None:
            return [t for i, t in self.scheduler.triggers.items() if i in self.only]
        return [t for t in self.scheduler.triggers.values()
                if t.status in LIVE or t.id in self.rows]

    def _row(self, trigger: Trigger) -> None:
        row = _Row(self, trigger)
        self.rows[trigger.id] = row
        self.box.children = (*self.box.children, row.box)

    def _title(self) -> None:
        shown = self._shown()
        active = sum(1 for t in shown if t.active)
        waiting = sum(1 for t in shown if t.needs_approval)
        more = f", {waiting} need approval" if waiting else ""
        self.title.value = f"<b>Triggers</b> ({active} active{more})"

    def changed(self, trigger: Trigger) -> None:
        """Called by the scheduler when ``trigger`` changed."""
        if self.only is not None and trigger.id not in self.only:
            return
        row = self.rows.get(trigger.id)
        if row is None:
            self._row(trigger)
        else:
            row.update(trigger)
        self._title()

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.box._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        data = dict(data or {})
        data["text/plain"] = text_table(self._shown())
        return data
