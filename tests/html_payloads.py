"""Hostile strings and every HTML view that shows them (shared by the fast test and the
browser test).

``HOSTILE`` joins the payloads an attacker would plant in a prompt, a tool's result, a
name or a file: tags with handlers, script, frames, forms, a refresh, ``javascript:``
links spelt to slip past a naive check, CSS that loads or runs, attribute breaks in
both quotes. Each payload that could run sets ``window.akPwned`` (or opens a dialog);
each that could load reaches ``evil.example``. ``views(text)`` draws every view with
``text`` in every field it has: the run's HTML fallback (with a nested team agent),
the triggers panel, the team board and task tree, the memory table, notices, and the
HTML inside the ipywidgets of questions, approvals and the panel's and board's controls.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

PAYLOADS = (
    "<img src=x onerror=\"window.akPwned=1\">",
    "<script>window.akPwned=1</script>",
    "javascript:window.akPwned=1",
    "<svg onload=\"window.akPwned=1\"><circle r=9></circle></svg>",
    "\"><b onmouseover=\"window.akPwned=1\">quoted</b>",
    "'><i onclick='window.akPwned=1'>single</i>",
    "</textarea></pre></td></table></details><img src=x onerror=alert(1)>",
    "<a href=\"jav&#x61;script:window.akPwned=1\">entity link</a>",
    "<a href=\"  JaVaScRiPt:window.akPwned=1\">spaced link</a>",
    "<p style=\"background:url(https://evil.example/css.png)\">styled</p>",
    "<div style=\"width:expression(alert(1))\">old ie</div>",
    "<iframe src=\"https://evil.example/frame\"></iframe>",
    "<form action=\"https://evil.example/post\"><button>send</button></form>",
    "<meta http-equiv=\"refresh\" content=\"0;url=https://evil.example/go\">",
    "<img src=\"https://evil.example/raw.png\" alt=\"raw\">",
    "![tracker](https://evil.example/pixel.png)",
    "[click](javascript:window.akPwned=1)",
    "<style>body{background:url(https://evil.example/style.png)}</style>",
    "<object data=\"https://evil.example/o\"></object><embed src=\"https://evil.example/e\">",
    "<video src=\"https://evil.example/v.mp4\" autoplay></video>",
    "<details open ontoggle=\"window.akPwned=1\"><summary>t</summary></details>",
    "<!-- comment -->&lt;escaped&gt;",
)
HOSTILE = " ".join(PAYLOADS)
"""All payloads in one string: what every field of every view gets."""
BENIGN = "plain words"
WHEN = "2026-11-25T12:00:00+00:00"
NOW = datetime(2026, 11, 25, 12, 5, tzinfo=timezone.utc)


def run_state(text: str) -> dict[str, Any]:
    """A run's saved state with ``text`` in every field a model, tool or file can set."""
    from agent_kernel.core.events import (
        AgentActivity,
        ConsoleOutput,
        Loading,
        ModelCallStarted,
        Notice,
        Question,
        QuestionAnswered,
        RunError,
        RunFinished,
        RunStarted,
        TextDelta,
        ToolCallFinished,
        ToolCallStarted,
        for_display,
    )
    from agent_kernel.engine.agent import RunResult
    from agent_kernel.views.mime import Transcript

    run = "run_h"
    args = {"command": text, text: text}
    record = {"record_id": text, "timestamp": WHEN, "hash": text}
    calls: list[tuple[str, Any, bool, str | None]] = [
        ("run_command", {"stdout": text, "stderr": text, "sandbox": text, "exit_code": 0},
         True, None),
        ("url_fetch", {"status": 200, "url": text, "content_type": text, "title": text,
                       "path": text, "bytes": text, "content": text, "note": text}, True, None),
        ("url_fetch", {"status": 200, "url": text, "json": {text: text}}, True, None),
        (text, text, True, None),
        ("memory_search", [{text: text, "content": text}], True, None),
        ("memory_search", {"results": [{text: text}], text: text}, True, None),
        ("read_file", {text: [text]}, True, None),
        ("plan_create", {"plan": {"summary": text, "steps": [
            {"step": text, "status": "in_progress"}, {"step": text, "status": text}],
            "risks": [text], "questions": [text], "completion": text}}, True, None),
        ("todo_update", {"ok": True, "action": "add", "entry": {"content": text},
                         "updated_counts": {"open_count": 1}, "warnings": [text]}, True, None),
        ("contacts_candidate_rank", {"count": 1, "decisions": [
            {"contact_nickname": text, "contact_id": text}]}, True, None),
        (text, None, False, text),
    ]
    events: list[Any] = [RunStarted(run, prompt=text, model=text, agent_id=text),
                         Loading(run, what=text), Loading(run, what=text, seconds=1.0),
                         ModelCallStarted(run), TextDelta(run, text)]
    for n, (tool, result, ok, error) in enumerate(calls):
        call = f"c{n}"
        events.append(ToolCallStarted(run, call_id=call, tool_name=tool, arguments=args))
        events.append(ToolCallFinished(run, call_id=call, tool_name=tool, arguments=args,
                                       result=result, success=ok, error=error, duration_ms=5,
                                       record=record, summary=text))
    events += [
        ToolCallStarted(run, call_id="ca", tool_name=text, arguments=args),
        Question(run, "qa", text, ["Approve", "Deny"], 60.0, "Deny", kind="approval",
                 details={"tool": text, "arguments": args, "sandbox": text}),
        Question(run, "qb", text, [text, text], 60.0, text),
        QuestionAnswered(run, "qb", text, "user"),
        Question(run, "qc", text, None, 60.0, text),
        Question(run, "qd", text, ["Approve", "Deny"], 60.0, "Deny", kind="approval",
                 details={"tool": text, "arguments": args, "asked_by": text,
                          "asked_by_role": text}),
        ConsoleOutput(run, text), Notice(run, text), Notice(run, text, level="warning"),
        Notice(run, text, level="error"),
    ]
    for inner in (RunStarted("run_w", prompt=text, model=text, agent_id=text),
                  TextDelta("run_w", text),
                  ToolCallStarted("run_w", call_id="w1", tool_name=text, arguments=args),
                  ToolCallFinished("run_w", call_id="w1", tool_name=text, arguments=args,
                                   result=text, success=True, error=None, duration_ms=3,
                                   summary=text),
                  Question("run_w", "qw", text, [text], 60.0, text,
                           details={"asked_by": text, "asked_by_role": text}),
                  RunError("run_w", text)):
        events.append(AgentActivity(run, agent_id=text, role=text, task_id="t1",
                                    parent_task_id=None, prompt=text, inner=inner))
    events += [TextDelta(run, "\n\n" + text), RunError(run, text),
               RunFinished(run, result=RunResult(run_id=run, model=text, status="error",
                                                 reply=text, error=text))]
    t = Transcript(run_id=run)
    for event in events:
        t.feed(for_display(event))
    return t.state()


def trigger_rows(text: str) -> list[Any]:
    """Triggers as a planted triggers file could hold them: ``text`` everywhere."""
    from agent_kernel.triggers.model import Trigger

    base = dict(kind="interval", prompt=text, agent_id=text, created_at=WHEN, interval=60.0,
                next_run=WHEN, last_fired_at=WHEN, last_run_id=text, last_status=text,
                last_result=text, runs=3, errors=1, skipped=1, trace_id=text, model=text)
    return [Trigger(id=text, **base),  # type: ignore[arg-type]
            Trigger(id=text + " 2", **{**base, "kind": "condition",  # type: ignore[arg-type]
                                       "condition": {"kind": "file", "path": text},
                                       "status": "needs_approval", "interval": 5.0}),
            Trigger(id=text + " 3", **{  # type: ignore[arg-type]
                **base, "next_run": text, "last_fired_at": text, "status": text,
                "kind": "condition",
                "condition": {"kind": "expression", "expression": repr(text[:400])}}),
            Trigger(id=text + " 4", **{  # type: ignore[arg-type]
                **base, "kind": "condition", "status": "needs_approval",
                "condition": {"kind": text, "expression": text}})]  # no longer reads


def board_state(text: str) -> dict[str, Any]:
    """A team board's data with ``text`` in every field its snapshot copies from files."""
    task = {"id": text, "role": text, "type": text, "priority": text, "status": text,
            "prompt": text, "created": WHEN, "by": text, "agent": text, "started": WHEN}
    return {
        "as_of": NOW.isoformat(), "note": text, "outcomes": [text, text],
        "running": [{**task, "status": "running", "waiting": text}],
        "queues": {"planner": [task], "worker": [{**task, "created": text}], "held": [task]},
        "triggers": [{"id": text, "status": text, "schedule": text, "type": text,
                      "priority": text, "prompt": text}],
        "agents": [{"id": text, "role": text, "task": text, "task_id": text}],
        "roles": [{"name": text, "builtin": False, "createdBy": text, "createdAt": WHEN,
                   "tools": [text, text]}],
        "messages": [{"from": text, "to": text, "text": text, "at": WHEN}],
        "artifacts": [{"ref": text, "type": text, "createdBy": text, "createdAt": WHEN}],
        "artifact_count": 1, "ended": {text: 1},
        "limits": {"max_workers": text, "max_planners": text},
    }


def task_tree(text: str) -> dict[str, Any]:
    """A team's task tree (the summary under a Teller's run)."""
    leaf = {"role": text, "status": text, "priority": text, "result": text, "children": []}
    return {"children": [{**leaf, "children": [leaf, {**leaf, "result": None,
                                                      "error": text}]}]}


def memory_rows(text: str) -> list[dict[str, Any]]:
    """Memories as the store returns them, ``text`` in each column."""
    return [{"timestamp": text, "content": text, "tags": [text, text], "long_term": True,
             "score": 0.5, "memory_id": text, "kind": text},
            {"timestamp": WHEN, "content": text, "tags": [], "long_term": False,
             "memory_id": text}]


def live_widgets(text: str) -> dict[str, Any]:
    """The live ipywidgets with ``text`` in every field: a question's and an approval's
    controls (name -> its box)."""

    from agent_kernel.core.events import Question
    from agent_kernel.notebook.widgets import QuestionControl

    approval = Question("run_h", "qa", text, ["Approve", "Deny"], 60.0, "Deny",
                        kind="approval", details={"tool": text, "asked_by": text,
                                                  "arguments": {text: text, "command": text}})
    ask = Question("run_h", "qb", text, [text], 60.0, text,
                   details={"asked_by": text, "asked_by_role": text})
    exact = {text: text, "command": f"API_KEY={text} run", "api_key": text}
    out: dict[str, Any] = {
        "approval widget": QuestionControl(approval, lambda _answer: None, exact),
        "question widget": QuestionControl(ask, lambda _answer: None)}
    return out


def show_live_widgets(text: str) -> None:
    """Display :func:`live_widgets` in the running notebook cell."""
    from IPython.display import display

    for control in live_widgets(text).values():
        display(control.box)


def widget_html(text: str) -> dict[str, str]:
    """The HTML inside each of :func:`live_widgets` (what their HTML widgets draw)."""
    html: dict[str, str] = {}
    for name, control in live_widgets(text).items():
        found = [control.box]
        values = []
        while found:
            widget = found.pop(0)
            found.extend(getattr(widget, "children", ()))
            if type(widget).__name__ == "HTML":
                values.append(widget.value)
        html[name] = "".join(values)
    return html


def views(text: str) -> dict[str, str]:
    """Every static HTML view drawn with ``text`` in every field (name -> HTML)."""
    from agent_kernel.notebook.cells import outcome_bundle
    from agent_kernel.notebook.widgets import static_bundle
    from agent_kernel.views.board import board_html
    from agent_kernel.views.memory_table import MemoryTable
    from agent_kernel.views.run_html import html_of
    from agent_kernel.views.team_summary import tree_html
    from agent_kernel.views.trigger_panel import panel_html

    triggers = trigger_rows(text)
    return {
        "run": html_of(run_state(text)),
        "triggers panel": panel_html(triggers, NOW, running=[triggers[0].id],
                                     history={triggers[0].id: [(WHEN, text, text),
                                                               (text, "ok", text)]}),
        "team board": board_html(board_state(text)),
        "task tree": tree_html(task_tree(text)),
        "memory table": MemoryTable(memory_rows(text), text)._repr_html_(),
        "notices": outcome_bundle([text, text])["text/html"],
        "control outcome": static_bundle(text)["text/html"],
        "triggers panel controls": trigger_controls(text)["text/html"],
        "board controls": board_controls(text)["text/html"],
    }


def board_controls(text: str) -> dict[str, str]:
    """The team board's controls without our extension (words, no widget), with
    ``text`` in every field."""
    from types import SimpleNamespace

    from agent_kernel.notebook.board import TextBoardControls

    controls = TextBoardControls.__new__(TextBoardControls)
    controls.rows = {text: ("cancel", text), f"{text}2": ("stop", text)}
    task = SimpleNamespace(prompt=text, role=text, status="queued", priority=5, trigger_id=None)
    controls.board = SimpleNamespace(  # type: ignore[assignment]
        supervisor=SimpleNamespace(tasks={text: task}, desk=None))  # the other row: its label
    controls.outcomes = [text]
    return controls.bundle()


def trigger_controls(text: str) -> dict[str, str]:
    """The triggers panel's controls without our extension (words, no widget), with
    ``text`` in every field: their rows, without a scheduler behind."""
    from agent_kernel.notebook.trigger_panel import TextControls

    controls = TextControls.__new__(TextControls)
    controls.rows, controls.outcomes = {}, [text, text]
    controls.handle, controls.settled = None, False
    for trigger in trigger_rows(text):
        controls._add_row(trigger)
    return controls.bundle()
