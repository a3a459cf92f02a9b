"""One line a person reads for each tool call, and what kind of result it carries.

A run's tool card shows ``ran `ls -la` · exit 0 · 5 ms`` rather than the raw
result: each tool that has something better to say than "ok" gets a small
summariser here (a table keyed by tool name), every other tool falls back to
``ok · 12 ms``, and a failed call says its person-facing summary or its error.
``result_kind`` tells a renderer how to draw the result (text, JSON, a table of
records or an error), so the HTML fallback and the JupyterLab extension agree.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

from agent_kernel.core.json_types import JsonObject

Summariser = Callable[[JsonObject, Any], str | None]

CMD_CHARS = 60
COMMAND_TOOLS = ("bash", "run_command")
STREAM_TOOLS = (*COMMAND_TOOLS, "run_python")
"""Tools whose result is drawn as its streams (``text``), with what more it holds."""
PAGE_TOOLS = ("url_fetch", "http_request")

ResultKind = Literal["text", "page", "json", "table", "error"]
"""How a tool card draws its result (the saved form's ``result_kind``)."""


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _short(text: str, limit: int = CMD_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _bash(arguments: JsonObject, result: object) -> str | None:
    """bash and run_command: the command, then how it ended."""
    if not isinstance(result, dict) or not ("exit_code" in result or "exitCode" in result):
        return None
    ran = f"ran `{_short(arguments.get('cmd') or arguments.get('command') or '')}`"
    if result.get("timed_out") or result.get("timedOut") or (
            "exitCode" in result and result["exitCode"] is None):
        return f"{ran} · timed out"
    if isinstance(result.get("limit"), str):
        return f"{ran} · {_short(result['limit'], 70)}"
    return f"{ran} · exit {result.get('exit_code', result.get('exitCode'))}"


def _fetched(arguments: JsonObject, result: object) -> str | None:
    """url_fetch and http_request: method, address, status, and what came back."""
    if not isinstance(result, dict) or "status" not in result:
        return None
    method = str(arguments.get("method") or "GET").upper()
    verb = "fetched" if method == "GET" else method
    parts = [f"{verb} {_short(result.get('url') or arguments.get('url', ''), 70)}",
             str(result["status"])]
    if result.get("path"):
        parts.append(f"saved to {result['path']} · {_count(result.get('bytes', 0), 'byte')}")
    elif result.get("title"):
        parts.append(f"“{_short(result['title'], 50)}”")
    if result.get("truncated"):
        parts.append("cut short")
    return " · ".join(parts)


def _searched(arguments: JsonObject, result: object) -> str | None:
    if not isinstance(result, dict) or not isinstance(result.get("results"), list):
        return None
    query = _short(result.get("query") or arguments.get("q", ""), 50)
    return f"{_count(len(result['results']), 'result')} for “{query}”"


def _javascript(_arguments: JsonObject, result: object) -> str | None:
    """The code's value itself (spec 004): ``returned 579``."""
    shown = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
    more = " (cut short)" if isinstance(result, str) and "\n...[truncated: " in result else ""
    return f"returned {_short(shown.split(chr(10))[0] if more else shown, 50)}{more}"


def _write_file(arguments: JsonObject, result: object) -> str | None:
    if not isinstance(result, dict):
        return None
    verb = "added to" if result.get("mode") == "append" else "saved"
    path = result.get("path", arguments.get("path"))
    if isinstance(result.get("stored_at"), str):  # files/ on an object store: say where
        path = f"{path} ({result['stored_at']})"
    return f"{verb} {path} · {_count(result.get('bytes', 0), 'byte')}"


def _read_file(arguments: JsonObject, result: object) -> str | None:
    text = result.get("content") if isinstance(result, dict) else result
    if not isinstance(text, str):
        return None
    return f"read {arguments.get('path')} · {_count(len(text.encode()), 'byte')}"


def _list_files(_arguments: JsonObject, result: object) -> str | None:
    if not isinstance(result, dict) or not isinstance(result.get("entries"), list):
        return None
    more = " (cut short)" if result.get("truncated") else ""
    entries = _count(len(result["entries"]), "entry", "entries")
    return f"listed {result.get('path')} · {entries}{more}"


def _workspace_info(_arguments: JsonObject, result: Any) -> str | None:
    info = result.get("info") if isinstance(result, dict) else None
    if not isinstance(info, dict):
        return None
    more = " or more" if result.get("truncated") else ""
    return (f"{_count(info['fileCount'], 'file')}, {_count(info['directoryCount'], 'folder')}"
            f"{more} · {_count(info['totalSize'], 'byte')}")


def _listing(key: str, one: str, many: str | None = None) -> Summariser:
    def summarise(_arguments: JsonObject, result: object) -> str | None:
        if isinstance(result, dict) and isinstance(result.get(key), list):
            return _count(len(result[key]), one, many)
        return None
    return summarise


def _quoted(texts: list[str], room: int = 90) -> str:
    """The first texts, quoted and cut to fit one line: ``“a”, “b” and 2 more``."""
    shown: list[str] = []
    for text in texts:
        one = " ".join(str(text).split())
        if shown and sum(len(s) + 4 for s in shown) + min(len(one), 30) > room:
            break
        shown.append(_short(one, max(30, room - sum(len(s) + 4 for s in shown))))
    more = len(texts) - len(shown)
    quoted = ", ".join(f"“{s}”" for s in shown)
    return f"{quoted} and {more} more" if more else quoted


def _memories(key: str, verb: str, one: str = "memory", many: str = "memories") -> Summariser:
    """``recalled 2 memories: “the standup is in the Oak room”, “deploys on Tuesday”``."""
    def summarise(_arguments: Mapping[str, object], result: object) -> str | None:
        found = result.get(key) if isinstance(result, dict) else None
        if not isinstance(found, list):
            return None
        if not found:
            return f"{verb} no {many}"
        texts = [r.get("content") or r.get("summary") or "" for r in found
                 if isinstance(r, dict)]
        return f"{verb} {_count(len(found), one, many)}: {_quoted(texts)}"
    return summarise


def _remembered(arguments: Mapping[str, object], result: object) -> str | None:
    content = arguments.get("content")
    if not isinstance(result, dict) or not isinstance(content, str):
        return None
    return f"remembered “{_short(' '.join(content.split()), 80)}”"


def _ask_user(_arguments: JsonObject, result: object) -> str | None:
    if not isinstance(result, dict):
        return None
    source, answer = result.get("source"), _short(result.get("answer", ""))
    if source == "timeout":
        return "no answer in time"
    if source == "default":  # no one answered in time (or no one could): its default
        return f"no answer in time: used {answer}"
    return f"answered: {answer}"


def _scheduled(_arguments: JsonObject, result: object) -> str | None:
    if isinstance(result, dict):
        made = result.get("schedule_id") or result.get("taskId")
        return f"scheduled {made}" if made else None
    return None


HANDLE_ARGUMENTS = frozenset({"cell_id", "below_cell_id"})
"""Arguments that are the model's handle on a cell (its id): what a person reads names a
cell by its position, so these are folded below the arguments, or left out of one line."""


def _cell(verb: str) -> Summariser:
    """``inserted cell 2``, ``edited cell 2``, ``ran cell 2 · raised an error``."""
    def summarise(arguments: Mapping[str, object], result: object) -> str | None:
        if not isinstance(result, dict):
            return None
        index = result.get("index", arguments.get("index"))
        said = f"{verb} cell {index}" if index is not None else f"{verb} a cell"
        if result.get("changed") is False:
            said = f"cell {index} unchanged"
        status = result.get("status")
        if status == "error":
            said += " · it raised an error"
        elif status == "timeout":
            said += " · still running after its time"
        return said
    return summarise


def _read_cells(_arguments: Mapping[str, object], result: object) -> str | None:
    if not isinstance(result, dict) or not isinstance(result.get("cells"), list):
        return None
    where = " of the input history" if result.get("read_from") else ""
    return f"read {_count(len(result['cells']), 'cell')}{where}"
def _python(arguments: dict[str, object], result: object) -> str | None:
    """run_python: how much code ran, and how it ended (or which names it made)."""
    if not isinstance(result, dict) or "status" not in result:
        return None
    ran = f"ran {_count(len(str(arguments.get('code') or '').splitlines()), 'line')} of Python"
    error = result.get("error")
    if result["status"] == "error" and isinstance(error, dict):
        said = f"{error.get('type')}: {error.get('message')}"
        return f"{ran} · {_short(said, 90)}"
    if result["status"] in ("timeout", "stopped"):
        return f"{ran} · {'timed out' if result['status'] == 'timeout' else 'stopped'}"
    names = result.get("names")
    made = names.get("created") if isinstance(names, dict) else None
    if isinstance(made, list) and made:
        return f"{ran} · made {_short(', '.join(map(str, made)), 60)}"
    return ran


_REF = r"\s*\((?:tg|maep|slack|discord|email):[^()]*\)"


def _without_ids(text: str) -> str:
    """A todo's words without its ``(tg:@alice)`` references (the card is for people)."""
    return re.sub(_REF, "", text)


def _todo_update(_arguments: Mapping[str, object], result: object) -> str | None:
    """``added “Send Alice the report” to the todo list · 2 open``."""
    if not isinstance(result, dict) or not isinstance(result.get("entry"), dict):
        return None
    words = _short(_without_ids(str(result["entry"].get("content", ""))), 80)
    counts = result.get("updated_counts") or {}
    still = f"{counts.get('open_count', 0)} open"
    if result.get("action") == "complete":
        return f"ticked off “{words}” · {still}"
    raw = " (people written as given)" if result.get("warnings") else ""
    return f"added “{words}” to the todo list{raw} · {still}"


def _todo_list(_arguments: Mapping[str, object], result: object) -> str | None:
    """``2 open, 1 done: “Book the train”, “Pay the rent”``."""
    if not isinstance(result, dict):
        return None
    items = [*(result.get("wip_items") or []), *(result.get("done_items") or [])]
    texts = [_without_ids(str(i.get("content", ""))) for i in items if isinstance(i, dict)]
    head = f"{result.get('open_count', 0)} open, {result.get('done_count', 0)} done"
    return f"{head}: {_quoted(texts)}" if texts else head


def _contact_name(contact: Mapping[str, object]) -> str:
    return str(contact.get("contact_nickname") or contact.get("contact_id") or "someone")


def _contact_saved(_arguments: Mapping[str, object], result: object) -> str | None:
    return f"saved contact {_short(_contact_name(result), 40)}" \
        if isinstance(result, dict) else None


def _contacts_listed(_arguments: Mapping[str, object], result: object) -> str | None:
    if not isinstance(result, list):
        return None
    names = [_contact_name(c) for c in result if isinstance(c, dict)]
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"{_count(len(names), 'contact')}" + (f": {shown}" if names else "")


def _ranked(_arguments: Mapping[str, object], result: object) -> str | None:
    """``2 people to share with: Alice, Bob · nothing sent``."""
    if not isinstance(result, dict) or not isinstance(result.get("decisions"), list):
        return None
    names = [_contact_name(d) for d in result["decisions"] if isinstance(d, dict)]
    if not names:
        return "nobody to share with now · nothing sent"
    return f"{_count(len(names), 'person', 'people')} to share with: " \
           f"{_short(', '.join(names), 80)} · nothing sent"


def plan_steps(result: object) -> list[tuple[str, str]] | None:
    """A plan_create result's steps as ``(step, status)``, or None when it is not a plan."""
    plan = result.get("plan") if isinstance(result, dict) else None
    steps = plan.get("steps") if isinstance(plan, dict) else None
    if not isinstance(steps, list):
        return None
    return [(str(s.get("step", "")), str(s.get("status", "pending")))
            for s in steps if isinstance(s, dict)]


STEP_MARKS = {"completed": ("☑", "done"), "in_progress": ("◐", "in progress"),
              "pending": ("☐", "to do")}
"""A plan step's mark and its status in words, as every view draws it."""


def plan_lines(tool: str, result: object) -> list[str]:
    """A plan_create result's checklist as text lines (``☐ Chart it by month``), else []."""
    steps = plan_steps(result) if tool == "plan_create" else None
    return [f"{STEP_MARKS.get(status, STEP_MARKS['pending'])[0]} {step}"
            for step, status in steps or []]


def _planned(_arguments: Mapping[str, object], result: object) -> str | None:
    """``a plan of 3 steps, starting with “Load the sales data”``."""
    steps = plan_steps(result)
    if not steps:
        return None
    return f"a plan of {_count(len(steps), 'step')}, starting with “{_short(steps[0][0], 60)}”"


def _sent(_arguments: Mapping[str, object], result: object) -> str | None:
    """``sent a message to Ana on Telegram`` (or why it was not sent)."""
    if not isinstance(result, dict) or not isinstance(result.get("outcome"), dict):
        return None
    where = {"telegram": "on Telegram", "email": "by e-mail"}.get(str(result.get("channel")),
                                                                  "")
    who = _short(str(result.get("recipient") or "a contact"), 60)
    if result["outcome"].get("accepted"):
        return f"sent a message to {who} {where}".rstrip()
    return f"could not send the message to {who} {where}".rstrip()


def _found(arguments: Mapping[str, object], result: object) -> str | None:
    """``brought in the schedule tools`` (``find_tools``: which groups it added to the run)."""
    if not isinstance(result, str):
        return None
    groups = re.match(r"Offered from now on in this run \(([a-z, ]+)\)", result)
    if groups is None:
        return f"found no tools for “{_short(str(arguments.get('query') or ''), 60)}”"
    names = [g.strip() for g in groups.group(1).split(",") if g.strip()]
    return f"brought in the {' and '.join(names)} tools"


SUMMARISERS: dict[str, Summariser] = {
    "find_tools": _found,
    "bash": _bash,
    "run_command": _bash,
    "url_fetch": _fetched,
    "http_request": _fetched,
    "web_search": _searched,
    "run_javascript": _javascript,
    "run_python": _python,
    "write_file": _write_file,
    "read_file": _read_file,
    "list_files": _list_files,
    "get_workspace_info": _workspace_info,
    "remember": _remembered,
    "recall": _memories("memories", "recalled"),
    "search_memory": _memories("hits", "found"),
    "memory_recently": _memories("items", "listed", "recent memory", "recent memories"),
    "history": _listing("messages", "message"),
    "list_tasks": _listing("tasks", "task"),
    "ask_user": _ask_user,
    "contacts_send": _sent,
    "schedule": _scheduled,
    "schedule_once": _scheduled,
    "schedule_cron": _scheduled,
    "read_cells": _read_cells,
    "insert_cell": _cell("inserted"),
    "edit_cell": _cell("edited"),
    "run_cell": _cell("ran"),
    "todo_update": _todo_update,
    "todo_list": _todo_list,
    "contacts_upsert": _contact_saved,
    "contacts_list": _contacts_listed,
    "contacts_candidate_rank": _ranked,
    "plan_create": _planned,
}


WORK_WORDS = 4
"""How many words of its task name an agent (``run command sleep 30 · Worker``)."""


def one_line(text: object, limit: int = 160) -> str:
    """``text`` on one line, redacted, cut at ``limit`` characters."""
    from agent_kernel.core.redaction import redact_text

    line = " ".join(redact_text(str(text or "")).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def work_name(task: object, role: object) -> str:
    """An agent named by its work, as a person would: ``research Lisbon for a… · Worker``
    (its id, ``worker-6``, goes in a tooltip); a role alone when it works on nothing."""
    words = one_line(task, 200).split()
    if not words:
        return role_word(role)
    short = " ".join(words[:WORK_WORDS]).rstrip(".,:;")
    return f"{short}{'…' if len(words) > WORK_WORDS else ''} · {role_word(role)}"


def role_word(role: object) -> str:
    """A team role as a word a person reads: ``Worker``, ``Fact checker``."""
    return str(role or "agent").replace("_", " ").capitalize()


def task_words(prompt: str) -> str:
    """A team agent's task as a person reads it: a spawned agent's first message is its
    instructions (who it is, its brief, how to report: ``team.members.brief_text``), of
    which the objective is the task; any other prompt is the task itself."""
    for line in prompt.splitlines():
        if line.startswith("Objective: ") and prompt.startswith("You are "):
            return line.removeprefix("Objective: ").strip() or prompt
    return prompt


def asked_by(details: JsonObject | None) -> str | None:
    """Who asks, for a question a team agent put to the person, named by its work as its
    nested run is (``run command sleep 30 · Worker``: the saved question keeps the work as
    ``asked_by_work``), the role alone when its work is not known; never its id, which is
    for a tooltip (:func:`asker_id`). None when no team agent asks."""
    if asker_id(details) is None:
        return None
    work, role = (details or {}).get("asked_by_work"), (details or {}).get("asked_by_role")
    return work_name(work if isinstance(work, str) else "",
                     role if isinstance(role, str) and role else "agent")


def asker_id(details: Mapping[str, object] | None) -> str | None:
    """The id of the team agent that asks (``worker-3``), for a tooltip and the ledger."""
    agent = (details or {}).get("asked_by")
    return agent if isinstance(agent, str) and agent else None


def question_label(approval: bool, details: JsonObject | None) -> str:
    """A question's label: ``Approval``, ``Question``, or who asks by its work
    (``run command sleep 30 · Worker asks``), as the ipywidgets approval names it."""
    who = asked_by(details)
    if who is None:
        return "Approval" if approval else "Question"
    return f"{who} asks"


def summarise(tool: str, arguments: object, result: object, *, success: bool | None,
              duration_ms: int | None, failure: str | None = None,
              waiting: bool = False) -> str:
    """The card's one line: what the call did, in a person's words."""
    if success is None:
        return "waiting for your approval" if waiting else "running…"
    took = f"{duration_ms} ms" if duration_ms is not None else ""
    if not success and not is_envelope(result):
        return (failure or "failed").strip().splitlines()[0] if failure else "failed"
    if isinstance(result, dict) and result.get("ok") is False and not _said_more(result):
        # a refusal the tool returned, or one given in its shape before it ran: the
        # person-facing line when there is one, else its reason
        said = str((failure if not success else None) or result.get("error") or failure
                   or "").strip().splitlines()
        return _short(said[0], 160) if said else "failed"
    line = None
    if (summariser := SUMMARISERS.get(tool)) is not None:
        try:
            line = summariser(arguments if isinstance(arguments, dict) else {}, result)
        except (TypeError, ValueError, AttributeError):  # an odd result: say "ok"
            line = None
    if line is None:
        return f"ok · {took}" if took else "ok"
    return f"{line} · {took}" if took else line


def is_envelope(result: object) -> bool:
    """A spec 004 answer ``{ok: ..., ...}``: shown even when it says the call failed."""
    return isinstance(result, dict) and isinstance(result.get("ok"), bool)


def _said_more(result: JsonObject) -> bool:
    """An ``{ok: false}`` answer with more than its error (a command's output, a page)."""
    return bool(set(result) - {"ok", "error", "note", "guidance"})


def records_of(result: object) -> list[JsonObject] | None:
    """The list of records a result holds (itself, or its one list of dicts), else None."""
    if isinstance(result, list) and result and all(isinstance(r, dict) for r in result):
        return result
    if isinstance(result, dict):
        lists = [v for v in result.values()
                 if isinstance(v, list) and v and all(isinstance(r, dict) for r in v)]
        if len(lists) == 1:
            return lists[0]
    return None


def result_kind(tool: str, result: Any, success: bool | None) -> ResultKind | None:
    """``text``, ``page``, ``json``, ``table`` or ``error`` (None while running or no result).

    ``text`` is a string, or a command's ``{stdout, stderr, exit code, sandbox}`` whose
    streams are shown as monospace blocks; ``page`` is a fetched response (address,
    status, title, then its readable text or JSON); ``table`` is a result holding a list
    of records (see :func:`records_of`). A failed call is ``error``, unless it answered
    a spec 004 envelope that says more than its error (a command's output, a 404 page):
    that is drawn by its kind, under the error sentence.
    """
    if success is None:
        return None
    if success is False and not (is_envelope(result) and _said_more(result)):
        return "error"
    if result is None:
        return None
    if isinstance(result, dict) and tool in STREAM_TOOLS:
        return "text"
    if isinstance(result, dict) and tool in PAGE_TOOLS and "status" in result:
        return "page"
    if isinstance(result, str):
        return "text"
    if records_of(result) is not None:
        return "table"
    return "json"
