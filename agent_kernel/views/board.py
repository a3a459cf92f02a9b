"""The team board as a saved notebook keeps it: a snapshot of plain data, drawn as HTML and text.

``%agent_team`` (see :mod:`.board`) shows what the session's team is doing
now. Everything a person reads must still read the same with no kernel, so
the board is drawn in two steps: :func:`snapshot` copies what is live (the
supervisor's queues and running tasks, the desk's triggers, the agents, the
roles and artifacts under ``<workspace>/team/``, messages when the supervisor
keeps any) into JSON-ready dicts, redacted; :func:`board_html` and
:func:`board_text` draw those dicts and nothing else. Colours come from
JupyterLab's theme variables with fallbacks, with the lighter ``…-color2``
shades on dark themes, as in the triggers panel; warning text is our own
darker orange in light themes (the theme's is 3.79:1 on white). No widget, no script.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from agent_kernel.team.queue import task_of
from agent_kernel.triggers import existing_scheduler
from agent_kernel.views.safe_html import esc
from agent_kernel.views.summaries import one_line, role_word, work_name
from agent_kernel.views.trigger_panel import local_time

if TYPE_CHECKING:
    from agent_kernel.core.workspace import Workspace
    from agent_kernel.team.queue import Task
    from agent_kernel.team.supervisor import Supervisor

PROMPT_CHARS = 160
LIST_LIMIT = 20
"""Roles made at run time, artifacts and messages shown (the newest)."""
_SCAN_LIMIT = 2000
"""Artifact files looked at, newest first, when the folder is large."""

_CSS = """<style>
.agent-kernel-team-board{font-size:13px;line-height:1.45;color:var(--jp-ui-font-color1,#1f1f1f);
font-family:var(--jp-ui-font-family,system-ui,sans-serif)}
.agent-kernel-team-board .ak-section{margin:6px 0 2px;font-weight:600}
.agent-kernel-team-board table{border-collapse:collapse;margin:2px 0 4px;font-size:12px}
div.agent-kernel-team-board table th,div.agent-kernel-team-board table td{border:none;
border-bottom:1px solid var(--jp-border-color2,#c8c8c8);padding:3px 8px;text-align:left;
vertical-align:top;line-height:1.45}
div.agent-kernel-team-board table th{font-weight:600;color:var(--jp-ui-font-color2,#4a4a4a)}
div.agent-kernel-team-board table .ak-num{text-align:right;font-variant-numeric:tabular-nums}
div.agent-kernel-team-board table .ak-prompt{min-width:14em;max-width:32em}
div.agent-kernel-team-board table .ak-time{white-space:nowrap}
.agent-kernel-team-board .ak-muted{color:var(--jp-ui-font-color2,#4a4a4a)}
.agent-kernel-team-board .ak-id{color:var(--jp-ui-font-color2,#4a4a4a);font-size:11px;
font-family:var(--jp-code-font-family,monospace)}
.agent-kernel-team-board .ak-ok{color:var(--jp-success-color0,#1b5e20)}
.agent-kernel-team-board .ak-failed{color:var(--jp-error-color0,#a4161a)}
.agent-kernel-team-board .ak-warn{color:#9a4600}
[data-jp-theme-light='false'] .agent-kernel-team-board .ak-ok{color:var(--jp-success-color2)}
[data-jp-theme-light='false'] .agent-kernel-team-board .ak-failed{color:var(--jp-error-color2)}
[data-jp-theme-light='false'] .agent-kernel-team-board .ak-warn{color:var(--jp-warn-color2,#ffb74d)}
</style>"""
_LEFT = "style='text-align:left'"
_RIGHT = "style='text-align:right'"


# -- the snapshot -----------------------------------------------------------------------


class TaskRow(TypedDict):
    """A task as the board lists it (queued, held or running)."""

    id: str
    role: str
    type: str
    priority: int
    status: str
    prompt: str
    created: str
    by: str | None
    agent: str | None
    started: str | None


class RunningRow(TaskRow):
    """A running task, what its agent waits for from the person (None: nothing), and
    where it runs when not in this kernel (``on the cluster, worker 127.0.0.1:40123``)."""

    waiting: str | None
    where: str | None


class AgentRow(TypedDict):
    """An agent of the team and the task it works on."""

    id: str
    role: str
    task: str
    task_id: str | None


class TriggerRow(TypedDict):
    """A trigger of the team's desk, and the task its last firing made."""

    id: str
    type: str
    schedule: str
    prompt: str
    status: str
    priority: int
    task_id: str | None
    created: str


def _task_row(task: Task, status: str | None = None) -> TaskRow:
    return {"id": task.id, "role": task.role, "type": task.type, "priority": task.priority,
            "status": status or task.status, "prompt": one_line(task.prompt),
            "created": task.created_at, "by": task.parent_agent_id,
            "agent": task.agent_id, "started": task.started_at}


def _running_row(task: Task, waiting: dict[str, str], where: Mapping[str, str]
                 ) -> RunningRow:
    asks = waiting.get(task.agent_id) if task.agent_id is not None else None
    return {**_task_row(task, "running"), "waiting": asks, "where": where.get(task.id)}


def _waiting(team: object) -> dict[str, str]:
    """Agent id -> what it waits for from the person (its question in the Teller's channel)."""
    channel = getattr(getattr(team, "teller", None), "questions", None)
    found: dict[str, str] = {}
    for pending in list(getattr(channel, "pending", {}).values()):
        event = pending.event
        asked_by = (event.details or {}).get("asked_by")
        if isinstance(asked_by, str):
            found[asked_by] = ("waiting for your approval" if event.kind == "approval"
                               else "waiting for your answer")
    return found


def _agents(team: Any, triggers: int) -> list[AgentRow]:
    sup = team.supervisor
    rows: list[AgentRow] = []
    teller = getattr(team, "teller", None)
    if teller is not None:
        task = task_of(teller)
        busy = task if task is not None and task.status == "running" else None
        rows.append({"id": teller.agent_id, "role": "teller",
                     "task": one_line(busy.prompt) if busy else "", "task_id":
                     busy.id if busy else None})
    for task_id, agent in list(sup.agents.items()):
        task = sup.tasks.get(task_id)
        rows.append({"id": agent.agent_id, "role": agent.role or "",
                     "task": one_line(task.prompt) if task else "", "task_id": task_id})
    listed = {r["id"] for r in rows}
    records = getattr(getattr(sup, "society", None), "records", None)
    for record in list(records.values()) if isinstance(records, Mapping) else []:
        ident = getattr(record, "id", None)
        if getattr(record, "alive", False) and isinstance(ident, str) and ident not in listed:
            status = getattr(record, "status", "")
            rows.append({"id": ident, "role": one_line(getattr(record, "roleName", ""), 60),
                         "task": f"spawned by {someone(getattr(record, 'parentAgentId', '?'))}"
                                 + (f", {status}" if status else ""),
                         "task_id": getattr(record, "teamTaskId", None)})
    if sup.desk is not None:
        rows.append({"id": sup.desk.agent_id, "role": "trigger desk",
                     "task": f"holds {triggers} trigger(s)" if triggers else "", "task_id": None})
    return rows


def _triggers(sup: Supervisor) -> list[TriggerRow]:
    scheduler = existing_scheduler(sup.desk) if sup.desk is not None else None
    if scheduler is None:
        return []
    made = {t.trigger_id: t for t in sup.tasks.values() if t.trigger_id}
    rows: list[TriggerRow] = []
    for trigger in [*scheduler.active(), *scheduler.pending()]:
        task = made.get(trigger.id)
        rows.append({"id": trigger.id, "type": trigger.kind, "schedule": trigger.schedule_text(),
                     "prompt": one_line(trigger.prompt), "status": trigger.status_text,
                     "priority": task.priority if task else 5, "task_id": task.id if task else None,
                     "created": trigger.created_at})
    return rows


def _field(item: object, *names: str) -> Any:
    for name in names:
        value = item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)
        if value is not None:
            return value
    return None


def _messages(sup: object) -> list[dict[str, Any]]:
    """The supervisor's messages between agents, when it keeps any (newest last)."""
    import json

    found = getattr(sup, "messages", None)
    if found is None:  # kept by spec 004's society, when the team has one
        found = getattr(getattr(sup, "society", None), "messages", None)
    if not isinstance(found, Iterable) or isinstance(found, (str, bytes, Mapping)):
        return []
    try:
        items = list(found)[-LIST_LIMIT:]
    except Exception:
        return []
    rows = []
    for item in items:
        body = _field(item, "payload", "content", "text", "body")
        if not isinstance(body, str):
            try:
                body = json.dumps(body, ensure_ascii=False, default=str)
            except (TypeError, ValueError):
                body = str(body)
        rows.append({"from": one_line(_field(item, "from", "sender", "from_agent", "fromAgent",
                                             "source") or "?", 60),
                     "to": one_line(_field(item, "to", "recipient", "to_agent", "toAgent") or "?",
                                    60),
                     "text": one_line(body), "at": _field(item, "createdAt", "created_at", "at",
                                                          "sent_at")})
    return rows


_CACHE: dict[tuple[str, str], tuple[tuple[int, int], list[dict[str, Any]]]] = {}


def _stamp(folder: Path) -> tuple[int, int] | None:
    try:
        info = folder.stat()
    except OSError:
        return None
    return info.st_mtime_ns, info.st_ino


def _roles(workspace: Workspace) -> list[dict[str, Any]]:
    from agent_kernel.team.society import RoleStore

    store = RoleStore(workspace)
    stamp = _stamp(store.folder) or (0, 0)
    key = ("roles", str(store.folder))
    cached = _CACHE.get(key)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    rows = [{"name": one_line(r.name, 100), "builtin": r.builtin, "createdBy": r.createdBy,
             "createdAt": r.createdAt, "tools": list(r.tools)} for r in store.all()]
    _CACHE[key] = (stamp, rows)
    return rows


def _artifacts(workspace: Workspace) -> tuple[list[dict[str, Any]], int]:
    """The newest artifacts (ref, type, createdBy, createdAt) and how many there are."""
    from agent_kernel.team.society import (
        ARTIFACTS_FOLDER,
        MAX_META_BYTES,
        REF_PREFIX,
        SocietyError,
        _read_json,
    )

    folder = workspace.root / ARTIFACTS_FOLDER
    stamp = _stamp(folder)
    if stamp is None:
        return [], 0
    key = ("artifacts", str(folder))
    cached = _CACHE.get(key)
    if cached is not None and cached[0] == stamp:
        return cached[1][:-1], int(cached[1][-1]["count"])
    entries = []
    with os.scandir(folder) as found:
        for entry in found:
            if entry.name.endswith(".json") and entry.is_file(follow_symlinks=False):
                try:
                    entries.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.path))
                except OSError:
                    continue
    entries.sort(reverse=True)
    rows: list[dict[str, Any]] = []
    for _, path in entries[:_SCAN_LIMIT]:
        if len(rows) == LIST_LIMIT:
            break
        try:
            record = _read_json(Path(path), 2_000_000 + MAX_META_BYTES)
        except (OSError, SocietyError):
            continue
        if isinstance(record.get("id"), str) and isinstance(record.get("type"), str):
            rows.append({"ref": REF_PREFIX + record["id"], "type": one_line(record["type"], 100),
                         "createdBy": one_line(record.get("createdBy") or "?", 60),
                         "createdAt": record.get("createdAt")
                         if isinstance(record.get("createdAt"), str) else None})
    _CACHE[key] = (stamp, [*rows, {"count": len(entries)}])
    return rows, len(entries)


def snapshot(team: Any, now: datetime | None = None) -> dict[str, Any]:
    """What the board shows, copied from ``team`` as JSON-ready dicts (redacted)."""
    from agent_kernel.team.roles import PLANNER, WORKER

    sup = team.supervisor
    now = now or datetime.now().astimezone()
    triggers = _triggers(sup)
    held = sorted((t for t in sup.tasks.values() if t.status == "held"),
                  key=lambda t: (-t.priority, t.seq))
    ended: dict[str, int] = {}
    for task in sup.tasks.values():
        if task.depth > 0 and not task.open and task.status != "trigger":
            ended[task.status] = ended.get(task.status, 0) + 1
    artifacts, artifact_count = _artifacts(team.workspace)
    waiting = _waiting(team)
    cluster = getattr(team, "cluster", None)  # docs/scale.md: Workers on a Dask cluster
    where: Mapping[str, str] = dict(cluster.where) if cluster is not None else {}
    return {
        "as_of": now.isoformat(),
        "dashboard": cluster.dashboard if cluster is not None else None,
        "running": [_running_row(t, waiting, where) for t in list(sup.running.values())],
        "queues": {PLANNER: [_task_row(t) for t in sup.queues[PLANNER].waiting()],
                   WORKER: [_task_row(t) for t in sup.queues[WORKER].waiting()],
                   "held": [_task_row(t) for t in held]},
        "triggers": triggers,
        "agents": _agents(team, len(triggers)),
        "roles": _roles(team.workspace),
        "messages": _messages(sup),
        "artifacts": artifacts,
        "artifact_count": artifact_count,
        "ended": ended,
        "limits": {"max_workers": sup.limits.max_workers,
                   "max_planners": sup.limits.max_planners},
    }


# -- drawing ------------------------------------------------------------------------------


def _now(state: Mapping[str, Any]) -> datetime:
    try:
        return datetime.fromisoformat(state["as_of"])
    except (KeyError, TypeError, ValueError):
        return datetime.now().astimezone()


def _counts(state: Mapping[str, Any]) -> list[str]:
    queues = state["queues"]
    queued = sum(len(rows) for rows in queues.values())
    words = [f"{len(state['running'])} running", f"{queued} queued"]
    if state["triggers"]:
        words.append(f"{len(state['triggers'])} trigger(s)")
    if state["ended"]:
        words.append("ended: " + ", ".join(f"{n} {s}" for s, n in sorted(state["ended"].items())))
    return words


def _when_html(text: str | None, now: datetime) -> str:
    if not text:
        return f"<td {_LEFT} class='ak-muted'>-</td>"
    # the local time with its zone, never "2 min ago" (saved, it would be wrong at once)
    return f"<td {_LEFT} class='ak-time' title='{esc(text)}'>{esc(local_time(text, now))}</td>"


def _table(head: Iterable[str], rows: Iterable[str]) -> str:
    cells = "".join(f"<th style='text-align:{'right' if h == 'Priority' else 'left'}'>{esc(h)}"
                    "</th>" for h in head)
    return f"<table><thead><tr>{cells}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _section(title: str, count: int | None, body: str) -> str:
    number = f" · {count}" if count is not None else ""
    return f"<div class='ak-section'>{esc(title)}{number}</div>{body}"


def _work_of(row: AgentRow) -> str:
    """The task an agent's name comes from: a delegated task's prompt, not a spawned
    agent's "spawned by" line nor the desk's trigger count."""
    task = row["task"]
    return task if row["task_id"] and not task.startswith("spawned by") else ""


def _folded(title: str, count: int, body: str) -> str:
    """A section a person opens when they want it (roles, artifacts): the work comes first."""
    return (f"<details class='ak-fold'><summary class='ak-section'>{esc(title)} · {count}"
            f"</summary>{body}</details>")


def _who(agent_id: object) -> str:
    """Who, in a word (``Planner`` for ``planner-3``, ``Trigger desk`` for ``team-desk``;
    the id is the cell's tooltip)."""
    text = str(agent_id or "").strip()
    if not text:
        return "-"
    if text == "team-desk":
        return "Trigger desk"
    head, _, number = text.rpartition("-")
    return (head if head and number.isdigit() else text).replace("_", " ").capitalize()


def someone(agent_id_or_role: object) -> str:
    """Who, as a sentence says it: ``a Worker``, ``an Analyst``, ``the Teller``."""
    word = _who(agent_id_or_role)
    if word in ("-", "?"):
        return "someone"
    if word in ("Teller", "Trigger desk"):
        return f"the {word}"
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


def _none(text: str) -> str:
    return f"<div class='ak-muted'>{esc(text)}</div>"


def _queue_rows(rows: list[TaskRow], now: datetime) -> list[str]:
    return [f"<tr class='agent-kernel-team-task' data-task-id='{esc(r['id'])}' "
            f"data-status='{esc(r['status'])}' title='{esc(r['id'])}'>"
            f"<td {_RIGHT} class='ak-num'>{esc(r['priority'])}</td>"
            f"<td {_LEFT}>{esc(role_word(r['role']))}<br><span class='ak-muted'>"
            f"{esc(r['status'])}</span></td>"
            f"<td {_LEFT} class='ak-prompt'>{esc(r['prompt'])}</td>"
            f"<td {_LEFT} title='{esc(r['by'] or '')}'>{esc(_who(r['by']))}</td>"
            f"{_when_html(r['created'], now)}"
            "</tr>" for r in rows]


def board_html(state: Mapping[str, Any]) -> str:
    """The board as static HTML: a header, then one section per part of the team."""
    now = _now(state)
    header = (f"<div><b>Team</b> · {esc(', '.join(_counts(state)))} <span class='ak-muted'>"
              f"· as of {esc(local_time(state['as_of'], now))}</span></div>")
    link = state.get("dashboard")
    if isinstance(link, str) and link.startswith(("http://", "https://")):
        header += (f"<div class='ak-muted agent-kernel-dashboard'>Workers run on a Dask "
                   f"cluster: <a href='{esc(link)}' target='_blank' rel='noopener noreferrer'>"
                   f"its dashboard</a></div>")
    if state.get("note"):
        header += f"<div class='ak-warn'>{esc(state['note'])}</div>"
    header += "".join(f"<div class='ak-muted agent-kernel-outcome'>{esc(line)}</div>"
                      for line in state.get("outcomes") or [])
    parts = [header]
    running = state["running"]
    parts.append(_section("Running", len(running), _table(
        ("Agent", "Priority", "Prompt", "Started"),
        (f"<tr class='agent-kernel-team-task' data-task-id='{esc(r['id'])}' "
         f"data-status='running' title='{esc(r['id'])}'><td {_LEFT} "
         f"title='{esc(r['agent'] or '')}'>"
         f"{esc(str(r['role']).capitalize())}"
         + (f"<br><span class='ak-warn agent-kernel-team-waiting'>{esc(r['waiting'])}</span>"
            if r.get("waiting") else "")
         + (f"<br><span class='ak-muted agent-kernel-team-where'>{esc(r['where'])}</span>"
            if r.get("where") else "") + "</td>"
         f"<td {_RIGHT} class='ak-num'>{esc(r['priority'])}</td>"
         f"<td {_LEFT} class='ak-prompt'>{esc(r['prompt'])}</td>"
         f"{_when_html(r['started'], now)}</tr>" for r in running))
        if running else _none("Nothing is running.")))
    queues = state["queues"]
    limits = state.get("limits", {})
    titles = {"planner": f"Planner queue · at most {limits.get('max_planners', '?')} run at "
                         "once",
              "worker": f"Worker queue · at most {limits.get('max_workers', '?')} run at once, "
                        "in the order they start",
              "held": "Held · a Planner's delegations, queued when its run ends"}
    head = ("Priority", "Role", "Prompt", "From", "Created")
    for name in ("planner", "worker", "held"):
        rows = queues.get(name, [])
        if rows or name != "held":
            parts.append(_section(titles[name], len(rows), _table(head, _queue_rows(rows, now))
                                  if rows else _none("Empty.")))
    triggers = state["triggers"]
    if triggers:
        parts.append(_section("Triggers", len(triggers), _table(
            ("Status", "Schedule", "Priority", "Prompt"),
            (f"<tr class='agent-kernel-team-trigger' data-trigger-id='{esc(r['id'])}' "
             f"title='{esc(r['id'])}'>"
             f"<td {_LEFT}><span class='{'ak-ok' if r['status'] == 'active' else 'ak-warn'}'>"
             f"{esc(r['status'])}</span></td><td {_LEFT}>{esc(r['schedule'])}<br>"
             f"<span class='ak-muted'>{esc(r['type'])}</span></td>"
             f"<td {_RIGHT} class='ak-num'>{esc(r['priority'])}</td>"
             f"<td {_LEFT} class='ak-prompt'>{esc(r['prompt'])}</td></tr>"
             for r in triggers))))
    agents = state["agents"]
    parts.append(_section("Agents", len(agents), _table(
        ("Agent", "Working on"),
        (f"<tr class='agent-kernel-team-agent' data-agent-id='{esc(r['id'])}'>"
         f"<td {_LEFT} title='{esc(r['id'])}'>"  # the role: its work is the next column
         f"{esc(role_word(r['role']))}</td>"
         f"<td {_LEFT} class='ak-prompt'>{esc(r['task']) or '<span class=ak-muted>idle</span>'}"
         "</td></tr>" for r in agents))))
    roles = state["roles"]
    made = [r for r in roles if not r["builtin"]]
    shown_roles = [r for r in roles if r["builtin"]] + made[-LIST_LIMIT:]
    parts.append(_folded("Roles", len(roles), _table(
        ("Role", "Made by", "Tools"),
        (f"<tr class='agent-kernel-team-role' data-builtin='{str(r['builtin']).lower()}'>"
         f"<td {_LEFT}><b>{esc(r['name'])}</b></td><td {_LEFT}>"
         + ("<span class='ak-muted'>built-in</span>" if r["builtin"] else
            f"<span title='{esc(r['createdBy'])}'>{esc(_who(r['createdBy']))}</span>"
            "<br><span class='ak-muted'>"
            f"{esc(local_time(r['createdAt'], now))}</span>")
         + f"</td><td {_LEFT} class='ak-prompt'>{len(r['tools'])}: "
         f"<span class='ak-muted'>{esc(', '.join(r['tools'][:8]))}"
         f"{', …' if len(r['tools']) > 8 else ''}</span></td></tr>" for r in shown_roles))))
    messages = state.get("messages") or []
    if messages:
        parts.append(_section("Messages", len(messages), _table(
            ("From", "To", "Message", "Sent"),
            (f"<tr class='agent-kernel-team-message'><td {_LEFT} title='{esc(r['from'])}'>"
             f"{esc(_who(r['from']))}</td><td {_LEFT} title='{esc(r['to'])}'>"
             f"{esc(_who(r['to']))}</td><td {_LEFT} class='ak-prompt'>{esc(r['text'])}"
             f"</td>{_when_html(r['at'] if isinstance(r['at'], str) else None, now)}</tr>"
             for r in messages))))
    artifacts, count = state["artifacts"], state.get("artifact_count", len(state["artifacts"]))
    more = (f"<div class='ak-muted'>and {count - len(artifacts)} older</div>"
            if count > len(artifacts) else "")
    parts.append(_folded("Artifacts", count, _table(
        ("Type", "Made by", "Created", "Reference"),
        (f"<tr class='agent-kernel-team-artifact'><td {_LEFT}>{esc(r['type'])}</td>"
         f"<td {_LEFT} title='{esc(r['createdBy'])}'>{esc(_who(r['createdBy']))}</td>"
         f"{_when_html(r['createdAt'], now)}"
         f"<td {_LEFT} class='ak-id'>{esc(r['ref'])}</td></tr>" for r in artifacts)) + more
        if artifacts else _none("None yet.")))
    return f"{_CSS}<div class='agent-kernel-team-board'>{''.join(parts)}</div>"


def _hint(op: str, ident: object) -> str:
    """The magic a person types to act on a live row: after the words, the one place an id
    is shown (``— to stop it: %agent_team stop task_…``)."""
    return f" — to {op} it: %agent_team {op} {ident}"


def board_text(state: Mapping[str, Any]) -> str:
    """The board as plain text: a header line, then one short block per part. Each row
    leads with its work and its role in words; a live row's id comes last, in the
    ``%agent_team stop|cancel`` line that acts on it."""
    now = _now(state)
    lines = [f"Team: {', '.join(_counts(state))} (as of {local_time(state['as_of'], now)})"]
    link = state.get("dashboard")
    if isinstance(link, str) and link.startswith(("http://", "https://")):
        lines.append(f"Workers run on a Dask cluster; its dashboard: {link}")
    if state.get("note"):
        lines.append(state["note"])
    lines.extend(str(line) for line in state.get("outcomes") or [])
    lines.append("Running:" if state["running"] else "Running: nothing")
    for r in state["running"]:
        more = f", {r['waiting']}" if r.get("waiting") else ""
        more += f", {r['where']}" if r.get("where") else ""
        lines.append(f"  {one_line(r['prompt'], 80)} · {role_word(r['role'])} (priority "
                     f"{r['priority']}, started {local_time(r['started'], now)}{more})"
                     + _hint("stop", r["id"]))
    for name, title in (("planner", "Planner queue"), ("worker", "Worker queue"),
                        ("held", "Held")):
        rows = state["queues"].get(name, [])
        if not rows and name == "held":
            continue
        lines.append(f"{title}:" if rows else f"{title}: empty")
        for r in rows:
            asked = f", from {someone(r['by'])}" if r.get("by") else ""
            lines.append(f"  {one_line(r['prompt'], 80)} · {role_word(r['role'])} (priority "
                         f"{r['priority']}, {r['status']}{asked})" + _hint("cancel", r["id"]))
    if state["triggers"]:
        lines.append("Triggers:")
        for r in state["triggers"]:
            lines.append(f"  {one_line(r['prompt'], 80)} ({r['schedule']}, {r['status']}, "
                         f"priority {r['priority']})" + _hint("cancel", r["id"]))
    lines.append("Agents: " + "; ".join(
        work_name(_work_of(r), r["role"])
        + (f" ({one_line(r['task'], 60)})" if r["task"] and not _work_of(r) else "")
        for r in state["agents"]))
    lines.append("Roles: " + ", ".join(
        r["name"] + ("" if r["builtin"] else f" (made by {someone(r['createdBy'])})")
        for r in state["roles"]))
    for r in state.get("messages") or []:
        lines.append(f"Message from {_who(r['from'])} to {_who(r['to'])}: "
                     f"{one_line(r['text'], 80)}")
    count = state.get("artifact_count", len(state["artifacts"]))
    lines.append(f"Artifacts ({count}):" if state["artifacts"] else "Artifacts: none yet")
    for r in state["artifacts"]:  # the reference last: what a prompt names to use it
        lines.append(f"  {r['type']} by {someone(r['createdBy'])}: {r['ref']}")
    return "\n".join(lines)


def board_bundle(state: Mapping[str, Any]) -> dict[str, str]:
    """The board's static bundle: ``text/html`` and ``text/plain``."""
    return {"text/html": board_html(state), "text/plain": board_text(state)}
