"""The run's saved form drawn as HTML and as plain text, for frontends without our extension.

Notebook 7 without the extension, VS Code, nbconvert, GitHub and nbviewer show
the ``text/html`` of a run's bundle; this module draws it from the same state
the extension reads (``Transcript.state()``), so both show one run. The HTML
has no script and loads nothing: a header whose status says what happened,
one ``<details>`` card per tool call with its one-line summary, results drawn by
kind (monospace blocks, pretty JSON with a height limit, tables of records),
the ledger as one quiet line, questions and approvals as the outcome they had.
Colours come only from JupyterLab's theme variables, each with a fallback, so
the dark theme works and a page without those variables still reads.
Everything from the model or a tool goes through :mod:`.safe_html` (escaped, or for an
answer's Markdown, sanitised with its images held until clicked).
"""

from __future__ import annotations

import json
import re

from agent_kernel.core.json_types import JsonObject
from agent_kernel.core.statuses import run_status_words
from agent_kernel.core.times import parse_iso
from agent_kernel.views.code_html import (
    CODE_CSS,
    argument_html,
    diff_html,
    python_result_html,
)
from agent_kernel.views.memory_table import is_memories, memory_list_html
from agent_kernel.views.run_record import (
    STOPPED_OUTCOME,
    AgentData,
    EntryData,
    LedgerLineData,
    QuestionData,
    RunData,
    ToolData,
    ended_waits,
)
from agent_kernel.views.safe_html import esc, markdown
from agent_kernel.views.summaries import (
    HANDLE_ARGUMENTS,
    STEP_MARKS,
    asked_by,
    asker_id,
    plan_lines,
    plan_steps,
    question_label,
    records_of,
    work_name,
)

MARKS = {"running": "◌", "waiting": "?", "ok": "✓", "failed": "✗"}
TABLE_COLUMNS = 6
CELL_CHARS = 200
TEXT_RESULT_CHARS = 200

# JupyterLab marks its dark themes with data-jp-theme-light="false" on <body>: there the
# darker status shades fall under 4.5:1, so the lighter ones (…-color2) are used. Warning
# text is our own darker orange in light themes: the theme's --jp-warn-color0 (#e65100) is
# 3.79:1 on white; #9a4600 is 6.5:1 on white and 4.9:1 on --jp-layout-color3.
_CSS = """<style>
.agent-kernel-run{font-size:13px;line-height:1.45;color:var(--jp-ui-font-color1,#1f1f1f);
font-family:var(--jp-ui-font-family,system-ui,sans-serif)}
.agent-kernel-run p{margin:2px 0 6px}
.agent-kernel-run .ak-muted{color:var(--jp-ui-font-color2,#4a4a4a)}
.agent-kernel-run .ak-header{margin:0 0 4px}
.agent-kernel-run details.agent-kernel-tool{border:1px solid var(--jp-border-color2,#c8c8c8);
border-radius:4px;padding:2px 8px;margin:4px 0}
.agent-kernel-run summary{cursor:pointer}
.agent-kernel-run details.agent-kernel-agent{border-left:3px solid var(--jp-brand-color1,#1976d2);
padding:2px 0 2px 8px;margin:6px 0}
.agent-kernel-run pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:2px 0 4px;
padding:4px 6px;font-family:var(--jp-code-font-family,monospace);font-size:12px;
line-height:1.4;background:var(--jp-layout-color2,#f2f2f2);
color:var(--jp-content-font-color1,#1f1f1f);border-radius:3px}
.agent-kernel-run pre.ak-json,.agent-kernel-run pre.ak-page{max-height:18em;overflow:auto}
.agent-kernel-run table{border-collapse:collapse;font-size:12px;margin:2px 0 4px}
.agent-kernel-run th,.agent-kernel-run td{border:1px solid var(--jp-border-color2,#c8c8c8);
padding:1px 6px;text-align:left;vertical-align:top}
.agent-kernel-run ul.ak-plan{list-style:none;padding-left:4px;margin:2px 0 4px}
.agent-kernel-run .ak-failed{color:var(--jp-error-color0,#a4161a)}
.agent-kernel-run .ak-ok{color:var(--jp-success-color0,#1b5e20)}
.agent-kernel-run .ak-warn{color:#9a4600}
[data-jp-theme-light='false'] .agent-kernel-run .ak-ok{color:var(--jp-success-color2)}
[data-jp-theme-light='false'] .agent-kernel-run .ak-failed{color:var(--jp-error-color2)}
[data-jp-theme-light='false'] .agent-kernel-run .ak-warn{color:var(--jp-warn-color2,#ffb74d)}
</style>""".replace("</style>", f"{CODE_CSS}\n</style>")


def clock(stamp: str | None) -> str:
    """``12:04:31`` (local time) from an ISO stamp; ``""`` when there is none."""
    try:
        moment = parse_iso(stamp)
    except ValueError:
        return ""
    return moment.astimezone().strftime("%H:%M:%S") if moment else ""


def seconds(ms: int | None) -> str:
    """``3.2 s`` or ``2 min 5 s``."""
    if ms is None:
        return ""
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    return f"{ms // 60_000} min {ms % 60_000 // 1000} s"


FROM_PHONE = {"telegram": " on Telegram", "email": " by e-mail"}
"""Where an answer given away from the notebook came from (labextension/src/words.ts)."""


def outcome(q: QuestionData) -> str:
    """How a question or approval ended, in words (``You chose tea · 12:04:31``)."""
    answer, source = q.get("answer"), q.get("source")
    if source is None:
        return "waiting for your approval" if q.get("approval") else "waiting for an answer"
    if source == "stopped":
        return STOPPED_OUTCOME
    if q.get("approval"):
        if source == "headless":
            text = ("allowed by the headless policy" if answer == "Approve" else
                    "not run: no one could approve it")
        elif source == "standing":
            text = "allowed by your standing permission"
        elif source in ("user", "telegram", "email"):
            text = {"Approve": "Approved", "Deny": "Denied",
                    "Always allow this tool": "Always allowed for this session"}.get(
                        answer or "", f"Answered {answer}") + FROM_PHONE.get(source, "")
        else:
            text = "No answer in time: not run"
    elif source in ("user", "telegram", "email"):
        text = (f"You chose {answer}" if q.get("options") else f"You answered “{answer}”") \
            + FROM_PHONE.get(source, "")
    elif source == "timeout":
        text = "No answer in time"
    else:
        text = f"No answer: used the default, {answer}"
    at = clock(q.get("answered_at"))
    return f"{text} · {at}" if at and source != "headless" else text


def model_words(state: RunData) -> str:
    """``offline demo model``, or the model with its usage and cost when known."""
    if state.get("offline"):
        return "offline demo model"
    parts = [str(state.get("model", ""))]
    if usage := state.get("usage"):
        parts.append(f"{usage['total_tokens']} tokens ({usage['prompt_tokens']} in, "
                     f"{usage['completion_tokens']} out)")
    if state.get("cost"):
        parts.append(f"${state['cost']:.4f}")
    return " · ".join(parts)


def phase(state: RunData) -> str:
    """What a running run is doing, from its entries."""
    if state.get("queued"):
        return "waiting for the run above to finish"
    loading = state.get("loading")
    if loading and loading.get("seconds") is None:
        return f"loading {loading['what']}"
    for entry in reversed(state["entries"]):
        if entry["kind"] == "question" and entry["source"] is None:
            return "waiting for your answer"
        if entry["kind"] == "tool" and entry["state"] == "waiting":
            asked = entry["approval"]
            return ("waiting for your answer" if asked and not asked["approval"]
                    else "waiting for your approval")
        if entry["kind"] == "tool" and entry["state"] == "running":
            return f"running {entry['tool']}"
    return "working"


def _code_spans(text: str) -> str:
    """Escape, then show `backticked` parts as code."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", esc(text))


def question_text(text: str) -> str:
    """A question's words as written: its own lines kept, `backticked` parts as code."""
    return f"<span style='white-space:pre-line'>{_code_spans(text)}</span>"


def _compact(value: object, limit: int = CELL_CHARS) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           default=repr)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _arguments(arguments: object, tool: object = None) -> str:
    """The arguments as rows; a cell's id folded below them (the model's handle only)."""
    if not isinstance(arguments, dict):
        return f"<pre>{esc(_compact(arguments, 4000))}</pre>"
    named = tool if isinstance(tool, str) else None

    def rows(handles: bool) -> str:
        return "".join(f"<tr><th>{esc(k)}</th><td>"
                       f"{argument_html(named, str(k), v) or _value_html(v)}</td></tr>"
                       for k, v in arguments.items()
                       if v is not None and (k in HANDLE_ARGUMENTS) is handles)

    shown, folded = rows(False), rows(True)
    table = f"<table class='ak-args'>{shown}</table>" if shown else ""
    if folded:
        table += (f"<details class='ak-muted'><summary>cell id</summary>"
                  f"<table class='ak-args'>{folded}</table></details>")
    return table


def _value_html(value: object) -> str:
    if isinstance(value, str) and "\n" in value:
        return f"<pre>{esc(value)}</pre>"
    return esc(_compact(value, 4000))


def _records_table(records: list[JsonObject]) -> str:
    columns: list[str] = []
    for record in records:
        columns.extend(k for k in record if k not in columns)
    columns = columns[:TABLE_COLUMNS]
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{esc(_compact(r.get(c, '')))}</td>" for c in columns)
                   + "</tr>" for r in records)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _page(result: JsonObject) -> str:
    """A fetched response: where it came from, then what it says."""
    head = " · ".join(esc(v) for v in (result.get("status"), result.get("url"),
                                         result.get("content_type")) if v)
    parts = [f"<div class='ak-muted'>{head}</div>"]
    if result.get("title"):
        parts.append(f"<div><b>{esc(result['title'])}</b></div>")
    if result.get("path"):
        parts.append(f"<div>saved to <code>{esc(result['path'])}</code> · "
                     f"{esc(result.get('bytes'))} bytes</div>")
    body = result.get("content", result.get("body"))
    if "json" in result:
        body = json.dumps(result["json"], ensure_ascii=False, indent=2, default=repr)
    if isinstance(body, str) and body:
        parts.append(f"<pre class='ak-page'>{esc(body)}</pre>")
    elif body is not None and not isinstance(body, str):
        pretty = json.dumps(body, ensure_ascii=False, indent=2, default=repr)
        parts.append(f"<pre class='ak-json'>{esc(pretty)}</pre>")
    if result.get("note"):
        parts.append(f"<div class='ak-muted'>{esc(result['note'])}</div>")
    return "".join(parts)


def _result(entry: ToolData) -> str:
    kind, result = entry["result_kind"], entry["result"]
    if kind == "error":
        return f"<div class='ak-failed'>{esc(entry['error'] or 'failed')}</div>"
    failed = (f"<div class='ak-failed'>{esc(entry['error'])}</div>"
              if entry.get("error") else "")
    return failed + _shown(kind, result)


def _shown(kind: str | None, result: object) -> str:
    if kind == "text" and isinstance(result, dict):  # a command: its streams as they were
        parts = []
        for stream in ("stdout", "stderr"):
            if result.get(stream):
                parts.append(f"<div class='ak-muted'>{stream}</div>"
                             f"<pre>{esc(result[stream])}</pre>")
        notes = [n for n in ("truncated", "timed_out") if result.get(n)]
        if notes:
            parts.append(f"<div class='ak-muted'>{esc(', '.join(notes).replace('_', ' '))}</div>")
        parts.append(python_result_html(result))  # run_python: value, outputs, traceback
        if not any(parts):
            parts.append("<div class='ak-muted'>no output</div>")
        if result.get("sandbox"):
            parts.append(f"<div class='ak-muted'>sandbox: {esc(result['sandbox'])}</div>")
        return "".join(parts)
    if kind == "page" and isinstance(result, dict):
        return _page(result)
    if kind == "text":
        return f"<pre>{esc(result)}</pre>"
    if kind == "table":
        records = records_of(result) or []
        if is_memories(records):  # recall's: a short list, ids and scores folded
            return f"<div class='agent-kernel-memory'>{memory_list_html(records)}</div>"
        extra = ""
        if isinstance(result, dict):
            rest = {k: v for k, v in result.items() if v is not records and not (
                isinstance(v, list) and v and isinstance(v[0], dict))}
            extra = " · ".join(f"{esc(k)}: {esc(_compact(v))}" for k, v in rest.items())
            extra = f"<div class='ak-muted'>{extra}</div>" if extra else ""
        return _records_table(records) + extra
    if kind == "json":
        pretty = json.dumps(result, ensure_ascii=False, indent=2, default=repr)
        return f"<pre class='ak-json'>{esc(pretty)}</pre>"
    return ""


def _ledger(ledger: LedgerLineData | None) -> str:
    if not ledger:
        return ""
    digest = (ledger.get("hash") or "")[:12]
    return (f"<div class='ak-muted ak-ledger'>ledger {esc(ledger['record_id'])} · "
            f"{esc(clock(ledger.get('timestamp')))} · in ledger ✓ · {esc(digest)}</div>")


def _diff(details: object) -> str:
    """An approval's ``diff`` note (an edit's unified diff), lines marked; else nothing."""
    diff = details.get("diff") if isinstance(details, dict) else None
    return diff_html(diff) if isinstance(diff, str) and diff else ""


def plan_html(result: object, steps: list[tuple[str, str]]) -> str:
    """A plan as a checklist: its summary, then each step with a mark and its status in
    words (the model's words escaped); risks and questions below, when there are any."""
    plan = result.get("plan") if isinstance(result, dict) else None
    plan = plan if isinstance(plan, dict) else {}
    items = []
    for step, status in steps:
        mark, words = STEP_MARKS.get(status, STEP_MARKS["pending"])
        items.append(f"<li data-status='{esc(status)}'><span aria-hidden='true'>{mark}</span> "
                     f"{esc(step)} <span class='ak-muted'>({words})</span></li>")
    parts = [f"<div>{esc(plan['summary'])}</div>" if plan.get("summary") else "",
             f"<ul class='ak-plan'>{''.join(items)}</ul>"]
    for key, title in (("risks", "Risks"), ("questions", "Questions")):
        said = [x for x in plan.get(key) or [] if isinstance(x, str)]
        if said:
            parts.append(f"<div class='ak-muted'>{title}: {esc('; '.join(said))}</div>")
    if plan.get("completion"):
        parts.append(f"<div class='ak-muted'>Done when: {esc(plan['completion'])}</div>")
    return "".join(parts)


def tool_html(entry: ToolData) -> str:
    """One tool call: a ``<details>`` card whose summary line says what it did."""
    state = entry["state"]
    mark_class = {"ok": "ak-ok", "failed": "ak-failed", "waiting": "ak-warn"}.get(state, "")
    head = (f"<span class='{mark_class}'>{MARKS.get(state, '')}</span> <b>{esc(entry['tool'])}"
            f"</b> · <span class='ak-summary'>{_code_spans(entry['summary'])}</span>")
    asked = entry.get("approval")
    if asked is not None and not asked["approval"]:
        # ask_user's question in its card: the question and its answer, once each.
        choices = asked["options"]
        options = f" <span class='ak-muted'>({esc(' / '.join(choices))})</span>" \
            if choices else ""
        body = [f"<div class='agent-kernel-question'><b>Question:</b> "
                f"{question_text(asked['question'])}{options}"
                f"<div class='agent-kernel-answered'>{esc(outcome(asked))}</div></div>",
                _ledger(entry.get("ledger"))]
        opened = " open"  # a question and its answer stay in view, as a question block did
        return (f"<details class='agent-kernel-tool' data-state='{esc(state)}'{opened}>"
                f"<summary>{head}</summary>{''.join(body)}</details>")
    body = [_arguments(entry["arguments"], entry["tool"])]
    if (approval := entry.get("approval")) is not None:
        body.append(_diff(approval.get("details")))
        sandbox = (approval.get("details") or {}).get("sandbox")
        if sandbox and approval.get("source") is None:
            body.append(f"<div class='ak-muted'>sandbox: {esc(sandbox)}</div>")
        where = (approval.get("details") or {}).get("where")  # files/ on an object store:
        if isinstance(where, str) and where:  # what was approved, also once answered
            body.append(f"<div class='ak-muted'>where: {esc(where)}</div>")
        body.append(f"<div class='agent-kernel-answered'>{esc(outcome(approval))}</div>")
    steps = plan_steps(entry["result"]) if entry["tool"] == "plan_create" \
        and state == "ok" else None
    body.append(plan_html(entry["result"], steps) if steps else _result(entry))
    body.append(_ledger(entry.get("ledger")))
    opened = " open" if state == "waiting" or steps else ""
    return (f"<details class='agent-kernel-tool' data-state='{esc(state)}'{opened}>"
            f"<summary>{head}</summary>{''.join(body)}</details>")


def question_html(q: QuestionData) -> str:
    """A question (or an approval with no card) and how it ended."""
    title = question_label(bool(q["approval"]), q.get("details"))
    choices = q["options"]
    options = f" <span class='ak-muted'>({esc(' / '.join(choices))})</span>" \
        if choices and not q["approval"] else ""
    details = ""
    if q["approval"] and q.get("details"):
        noted = q["details"] or {}
        details = _arguments(noted.get("arguments"), noted.get("tool")) + _diff(noted)
    agent = asker_id(q.get("details"))  # a team agent's id: a tooltip, never the words
    tip = f" title='{esc(agent)}'" if agent else ""
    return (f"<div class='agent-kernel-question'><b{tip}>{esc(title)}:</b> "
            f"{question_text(q['question'])}{options}{details}"
            f"<div class='agent-kernel-answered'>{esc(outcome(q))}</div></div>")


def _entries_html(entries: list[EntryData]) -> list[str]:
    out: list[str] = []
    for entry in entries:
        if entry["kind"] == "text":
            out.append(f"<div class='agent-kernel-reply'>{markdown(entry['text'])}</div>")
        elif entry["kind"] == "tool":
            out.append(tool_html(entry))
        elif entry["kind"] == "question":
            out.append(question_html(entry))
        elif entry["kind"] == "console":
            out.append(f"<pre class='ak-console'>{esc(entry['text'])}</pre>")
        elif entry["kind"] == "notice":
            level = {"warning": "ak-warn", "error": "ak-failed"}.get(entry["level"], "ak-muted")
            out.append(f"<div class='{level}'>{esc(entry['text'])}</div>")
        elif entry["kind"] == "error":
            out.append(f"<div class='ak-failed'><b>Error:</b> {esc(entry['text'])}</div>")
        elif entry["kind"] == "agent":
            out.append(agent_html(entry))
    return out


def agent_label(entry: AgentData) -> str:
    """``research Lisbon for a… · Worker · done · 1.2 s``: a team agent's nested run in
    one line, named by its work (its id, ``worker-3``, is the line's tooltip)."""
    parts = [work_name(entry["prompt"], entry["role"]), run_status_words(entry["status"])]
    if entry.get("elapsed_ms") is not None:
        parts.append(seconds(entry["elapsed_ms"]))
    return " · ".join(parts)


def _waits(entries: list[EntryData]) -> bool:
    """Does anything here (nested runs too) wait for the person's answer?"""
    for entry in entries:
        if entry["kind"] == "tool" and entry["state"] == "waiting":
            return True
        if entry["kind"] == "question" and entry.get("source") is None:
            return True
        if entry["kind"] == "agent" and _waits(entry["entries"]):
            return True
    return False


def agent_html(entry: AgentData) -> str:
    """A Planner's or Worker's run inside the Teller's: folded, open while it runs."""
    opened = " open" if entry["status"] == "running" or _waits(entry["entries"]) else ""
    prompt = _compact(entry["prompt"], 200)
    whole = work_name(entry["prompt"], entry["role"]).startswith(f"{entry['prompt'].strip()} · ")
    head = (f"<b title='{esc(entry['agent_id'])}'>{esc(agent_label(entry))}</b> "
            f"<span class='ak-muted'>{'' if whole else esc(prompt)}</span>")
    return (f"<details class='agent-kernel-agent' data-agent-role='{esc(entry['role'])}' "
            f"data-state='{esc(entry['status'])}'{opened}><summary>{head}</summary>"
            f"{''.join(_entries_html(entry['entries']))}</details>")


def html_of(state: RunData) -> str:
    """The whole run as self-contained HTML."""
    state = ended_waits(state)
    status = state["status"]
    words = run_status_words(status)
    if status == "running":
        words = f"running · {phase(state)}"
    elif status == "stopped" and state.get("stopped_by_person"):
        words = "stopped by you"
    status_class = {"done": "ak-ok", "failed": "ak-failed", "stopped": "ak-warn",
                    "done_with_failures": "ak-warn", "denied": "ak-warn",
                    "limit": "ak-warn"}.get(status, "")
    header = [f"<b class='agent-kernel-status {status_class}' data-status='{esc(status)}'>"
              f"{esc(words)}</b>"]
    if state.get("elapsed_ms") is not None:
        header.append(f"<span class='agent-kernel-elapsed'>{seconds(state['elapsed_ms'])}</span>")
    header.append(f"<span class='ak-muted'>{esc(model_words(state))}</span>")
    out = [_CSS, f"<div class='agent-kernel-run' data-run-id='{esc(state['run_id'])}'>",
           f"<div class='ak-header'>{' · '.join(header)}</div>",
           f"<div class='ak-prompt'><span class='ak-muted'>Prompt:</span> {esc(state['prompt'])}"
           "</div>"]
    if (loading := state.get("loading")) is not None:
        line = (f"loading {loading['what']}…" if loading.get("seconds") is None else
                f"loaded {loading['what']} in {loading['seconds']:.1f} s")
        out.append(f"<div class='ak-muted'>{esc(line)}</div>")
    out.extend(_entries_html(state["entries"]))
    out.append("</div>")
    return "".join(out)


def _entries_text(entries: list[EntryData]) -> list[str]:
    lines: list[str] = []
    for entry in entries:
        if entry["kind"] == "text":
            lines.append(entry["text"].strip())
        elif entry["kind"] == "tool":
            line = entry["ledger"]
            ledger = f" [ledger {line['record_id']}]" if line else ""
            lines.append(f"- {entry['tool']}: {entry['summary']}{ledger}")
            if (approval := entry["approval"]) and not approval["approval"]:
                lines.append(f"    ? {approval['question']} -> {outcome(approval)}")
                continue
            if approval:
                lines.append(f"    approval: {outcome(approval)}")
            if entry["state"] == "ok":
                lines += ["    " + step for step in plan_lines(entry["tool"], entry["result"])]
            if entry["result_kind"] in ("text", "page"):
                result = entry["result"]
                shown = result if isinstance(result, str) else result.get(
                    "stdout", result.get("content", result.get("body", ""))) \
                    if isinstance(result, dict) else ""
                if isinstance(shown, str) and shown.strip():
                    lines.append("    " + _compact(shown.strip(), TEXT_RESULT_CHARS))
        elif entry["kind"] == "question":
            who = asked_by(entry.get("details"))  # a team agent's: by its work, not its id
            lines.append(f"? {f'{who} asks: ' if who else ''}{entry['question']} -> "
                         f"{outcome(entry)}")
        elif entry["kind"] == "error":
            lines.append(f"Error: {entry['text']}")
        elif entry["kind"] == "agent":
            whole = work_name(entry["prompt"], entry["role"]).startswith(
                f"{entry['prompt'].strip()} · ")
            lines.append(f"> {agent_label(entry)}" +
                         ("" if whole else f": {_compact(entry['prompt'], 200)}"))
            lines += ["    " + line for line in _entries_text(entry["entries"])]
        else:
            lines.append(entry["text"])
    return lines


def text_of(state: RunData) -> str:
    """The whole run as plain text."""
    state = ended_waits(state)
    status = run_status_words(state["status"])
    lines = [f"[agent · {state['model']}] {state['prompt']}"]  # the run id is in the state
    if (loading := state.get("loading")) is not None and loading.get("seconds") is not None:
        lines.append(f"loaded {loading['what']} in {loading['seconds']:.1f} s")
    lines.extend(_entries_text(state["entries"]))
    tail = [status]
    if state.get("elapsed_ms") is not None:
        tail.append(seconds(state["elapsed_ms"]))
    tail.append(model_words(state))
    lines.append(" · ".join(tail))
    return "\n".join(lines)
