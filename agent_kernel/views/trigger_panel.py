"""The triggers panel as a saved notebook keeps it: one static HTML table and its text twin.

A panel's output must read the same with no kernel (a teacher's saved
notebook, Binder, nbconvert, GitHub), so this module draws it from plain
``Trigger`` records and nothing live: a header with the moment it shows
("as of 12:04:31 CET"), then one row per trigger with its status in words,
its schedule and prompt, the next and last run as local times with the zone
(never "in 4 min" or "2 min ago": a saved "ago" is wrong a minute later), the run count, the
last result, and the id last, small and quiet. Colours come only from
JupyterLab's theme variables, each with a fallback; every string from the
model or a run is HTML-escaped. No ipywidgets here (see :mod:`.panel`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime

from agent_kernel.triggers.model import LIVE, Trigger
from agent_kernel.triggers.model import parse_iso as _parse_iso
from agent_kernel.views.safe_html import esc

RESULT_CHARS = 300
PROMPT_CHARS = 200

# JupyterLab marks its dark themes with data-jp-theme-light="false" on <body>: there the
# darker status shades fall under 4.5:1, so the lighter ones (…-color2) are used. Warning
# text is our own darker orange in light themes: the theme's --jp-warn-color0 (#e65100) is
# 3.79:1 on white; #9a4600 is 6.5:1 on white and 4.9:1 on --jp-layout-color3.
_CSS = """<style>
.agent-kernel-triggers{font-size:13px;line-height:1.45;color:var(--jp-ui-font-color1,#1f1f1f);
font-family:var(--jp-ui-font-family,system-ui,sans-serif)}
.agent-kernel-triggers table{border-collapse:collapse;margin:4px 0;font-size:12px}
div.agent-kernel-triggers table th,div.agent-kernel-triggers table td{border:none;
border-bottom:1px solid var(--jp-border-color2,#c8c8c8);padding:3px 8px;text-align:left;
vertical-align:top;line-height:1.45}
div.agent-kernel-triggers table th{font-weight:600;color:var(--jp-ui-font-color2,#4a4a4a)}
div.agent-kernel-triggers table .ak-num{text-align:right;font-variant-numeric:tabular-nums}
div.agent-kernel-triggers table .ak-prompt{min-width:12em;max-width:24em}
div.agent-kernel-triggers table .ak-result{min-width:16em;max-width:32em}
div.agent-kernel-triggers table .ak-time{white-space:nowrap}
.agent-kernel-triggers .ak-muted{color:var(--jp-ui-font-color2,#4a4a4a)}
.agent-kernel-triggers .ak-id{color:var(--jp-ui-font-color2,#4a4a4a);font-size:11px;
font-family:var(--jp-code-font-family,monospace)}
.agent-kernel-triggers .ak-ok{color:var(--jp-success-color0,#1b5e20)}
.agent-kernel-triggers .ak-failed{color:var(--jp-error-color0,#a4161a)}
.agent-kernel-triggers .ak-warn{color:#9a4600}
[data-jp-theme-light='false'] .agent-kernel-triggers .ak-ok{color:var(--jp-success-color2)}
[data-jp-theme-light='false'] .agent-kernel-triggers .ak-failed{color:var(--jp-error-color2)}
[data-jp-theme-light='false'] .agent-kernel-triggers .ak-warn{color:var(--jp-warn-color2,#ffb74d)}
</style>"""

# Inline, because JupyterLab's rendered-HTML rules right-align table cells over a <style>.
_LEFT = "style='text-align:left'"
_RIGHT = "style='text-align:right'"
STATUS_CSS = {"active": "ak-ok", "needs_approval": "ak-warn", "error": "ak-failed",
              "missed": "ak-failed", "cancelled": "ak-muted", "done": "ak-muted"}


def shown(trigger: Trigger) -> Trigger:
    """A copy fit to be shown and saved in a notebook: prompt, result and condition redacted."""
    from agent_kernel.core.redaction import redact_text, scrub

    return replace(trigger, prompt=redact_text(trigger.prompt),
                   last_result=redact_text(trigger.last_result or "") or trigger.last_result,
                   condition=scrub(trigger.condition) if trigger.condition else None)


def parse_iso(text: str | None) -> datetime | None:
    """The moment ``text`` names; None for none and for text that is not a time (a planted
    file's value is shown as no time, never drawn)."""
    try:
        return _parse_iso(text)
    except (TypeError, ValueError):
        return None


def local_time(text: str | None, now: datetime) -> str:
    """``12:04:31 CET`` today, ``2026-01-05 09:00:00 CET`` on another day, ``-`` for none."""
    moment = parse_iso(text)
    if moment is None:
        return "-"
    moment = moment.astimezone()
    zone = moment.strftime("%Z") or moment.strftime("%z")
    day = "" if moment.date() == now.astimezone().date() else moment.strftime("%Y-%m-%d ")
    return f"{day}{moment.strftime('%H:%M:%S')} {zone}"


def _when(text: str | None, now: datetime) -> str:
    """A moment as a saved notebook can keep it: the local time with its zone. Never
    "2 min ago": the kernel cannot tell when the page saves, and a saved "ago" is wrong
    the next minute (the header's "as of" says when the table was drawn)."""
    return local_time(text, now)


def status_words(trigger: Trigger, running: bool) -> str:
    """``active``, ``active · running now``, ``needs approval``, ``cancelled``..."""
    return trigger.status_text + (" · running now" if running and trigger.active else "")


def _one_line(text: str | None, limit: int) -> str:
    line = " ".join((text or "").split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def text_table(triggers: Iterable[Trigger], now: datetime | None = None,
               running: Iterable[str] = ()) -> str:
    """The plain-text view: two lines per trigger (the panel's ``text/plain``), each led by
    its schedule and prompt; a live one's id only last, in the magic that acts on it."""
    rows = list(triggers)
    now = now or datetime.now().astimezone()
    if not rows:
        return "No triggers. Ask the agent, e.g. %agent every 2 seconds check the build"
    busy = set(running)
    active = sum(1 for t in rows if t.active)
    waiting = sum(1 for t in rows if t.needs_approval)
    more = f", {waiting} need approval (%agent_triggers approve ID)" if waiting else ""
    moment = local_time(now.isoformat(), now)
    lines = [f"{len(rows)} trigger(s), {active} active{more} (as of {moment}):"]
    for t in map(shown, rows):
        act = ("approve" if t.needs_approval else "cancel" if t.status in LIVE else None)
        lines.append(f"  {t.schedule_text()}: {_one_line(t.prompt, 60)} [{t.kind}, "
                     f"{status_words(t, t.id in busy)}]"
                     + (f" — to {act} it: %agent_triggers {act} {t.id}" if act else ""))
        last = (f"{_when(t.last_fired_at, now)} {t.last_status}: "
                f"{_one_line(t.last_result, 80)}" if t.last_status else "not run yet")
        lines.append(f"      next run: {_when(t.next_run, now)}; runs {t.runs}, errors {t.errors}, "
                     f"skipped {t.skipped}; last: {last}")
    return "\n".join(lines)


def _time_cell(text: str | None, now: datetime) -> str:
    if parse_iso(text) is None:
        return f"<td {_LEFT} class='ak-muted'>-</td>"
    return f"<td {_LEFT} class='ak-time' title='{esc(text)}'>{esc(_when(text, now))}</td>"


def _result_cell(t: Trigger, earlier: Sequence[tuple[str, str, str]], now: datetime) -> str:
    if not t.last_status:
        return f"<td {_LEFT} class='ak-muted'>not run yet</td>"
    css = "ak-ok" if t.last_status == "ok" else "ak-failed"
    body = (f"<span class='{css}'>{esc(t.last_status)}</span> "
            f"{esc(_one_line(t.last_result, RESULT_CHARS))}")
    if earlier:
        items = "".join(f"<li>{esc(local_time(at, now))} "
                        f"<span class='{'ak-ok' if status == 'ok' else 'ak-failed'}'>"
                        f"{esc(status)}</span> {esc(_one_line(result, 120))}</li>"
                        for at, status, result in earlier)
        body += (f"<details><summary class='ak-muted'>{len(earlier)} earlier</summary>"
                 f"<ul style='margin:2px 0;padding-left:18px'>{items}</ul></details>")
    return f"<td {_LEFT} class='ak-result'>{body}</td>"


def _row(t: Trigger, now: datetime, running: bool,
         earlier: Sequence[tuple[str, str, str]]) -> str:
    css = STATUS_CSS.get(t.status, "ak-failed")
    status = (f"<td {_LEFT}><span class='agent-kernel-trigger-status {css}'"
              f" data-status='{esc(t.status)}'>{esc(status_words(t, running))}</span></td>")
    what = "checked" if t.kind == "conditional" else "run"
    why = ("<br><span class='ak-warn'>Restored without a signed record that you made or "
           f"approved it: it is not {what} until you approve this exact "
           f"{'condition' if t.kind == 'conditional' else 'schedule'} and prompt.</span>"
           if t.needs_approval else "")
    counts = [f"{t.errors} failed"] if t.errors else []
    counts += [f"{t.skipped} skipped"] if t.skipped else []
    runs = f"{t.runs}" + (f"<br><span class='ak-muted'>{esc(' · '.join(counts))}</span>"
                          if counts else "")
    next_run = _time_cell(t.next_run, now) if t.status in ("active",) else \
        f"<td {_LEFT} class='ak-muted'>-</td>"
    return (f"<tr class='agent-kernel-trigger' data-trigger-id='{esc(t.id)}'>{status}"
            f"<td {_LEFT}>{esc(t.schedule_text())}<br>"
            f"<span class='ak-muted'>{esc(t.kind)}</span></td>"
            f"<td {_LEFT} class='ak-prompt'>{esc(_one_line(t.prompt, PROMPT_CHARS))}{why}</td>"
            f"{next_run}{_time_cell(t.last_fired_at, now)}"
            f"<td {_RIGHT} class='ak-num agent-kernel-trigger-runs'>{runs}</td>"
            f"{_result_cell(t, earlier, now)}"
            f"<td {_LEFT} class='ak-id'>{_breakable(t.id)}</td></tr>")


def _breakable(trigger_id: str) -> str:
    """The id, allowed to wrap at its underscores so a narrow cell keeps the whole of it."""
    return esc(trigger_id).replace("_", "_<wbr>")


def panel_html(triggers: Iterable[Trigger], now: datetime | None = None,
               running: Iterable[str] = (),
               history: Mapping[str, Sequence[tuple[str, str, str]]] | None = None) -> str:
    """The panel as static HTML: a header and one aligned row per trigger.

    ``running`` holds the ids of triggers whose run is going now; ``history`` gives each
    trigger's earlier runs as ``(fired_at, status, result)``, newest first.
    """
    rows = [shown(t) for t in triggers]
    now = now or datetime.now().astimezone()
    busy, history = set(running), history or {}
    active = sum(1 for t in rows if t.active)
    waiting = sum(1 for t in rows if t.needs_approval)
    words = [f"{active} active"] + ([f"{waiting} need approval"] if waiting else [])
    header = (f"<div><b>Triggers</b> · {esc(', '.join(words))} "
              f"<span class='ak-muted'>· as of {esc(local_time(now.isoformat(), now))}</span>"
              "</div>")
    if not rows:
        body = ("<p class='ak-muted'>No triggers. Ask the agent, e.g. "
                "<code>%agent every 2 seconds check the build</code></p>")
    else:
        head = "".join(f"<th style='text-align:{'right' if name == 'Runs' else 'left'}'>{name}</th>"
                       for name in
                       ("Status", "Schedule", "Prompt", "Next run", "Last run", "Runs",
                        "Last result", "Id"))
        body = (f"<table><thead><tr>{head}</tr></thead><tbody>"
                + "".join(_row(t, now, t.id in busy, history.get(t.id, ())) for t in rows)
                + "</tbody></table>")
    return f"{_CSS}<div class='agent-kernel-triggers'>{header}{body}</div>"
