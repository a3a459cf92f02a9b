"""One line a person reads for each tool call, and what kind of result it carries.

A run's tool card shows ``ran `ls -la` · exit 0 · 5 ms`` rather than the raw
result: each tool that has something better to say than "ok" gets a small
summariser here (a table keyed by tool name), every other tool falls back to
``ok · 12 ms``, and a failed call says its person-facing summary or its error.
``result_kind`` tells a renderer how to draw the result (text, JSON, a table of
records or an error), so the HTML fallback and the JupyterLab extension agree.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Summariser = Callable[[dict[str, Any], Any], str | None]

CMD_CHARS = 60


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _short(text: str, limit: int = CMD_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _bash(arguments: dict[str, Any], result: Any) -> str | None:
    if not isinstance(result, dict):
        return None
    ran = f"ran `{_short(arguments.get('cmd', ''))}`"
    if result.get("timed_out"):
        return f"{ran} · timed out"
    return f"{ran} · exit {result.get('exit_code')}"


def _write_file(arguments: dict[str, Any], result: Any) -> str | None:
    if not isinstance(result, dict):
        return None
    verb = "appended to" if result.get("mode") == "append" else "wrote"
    path = result.get("path", arguments.get("path"))
    return f"{verb} {path} · {_count(result.get('bytes', 0), 'byte')}"


def _read_file(arguments: dict[str, Any], result: Any) -> str | None:
    if not isinstance(result, str):
        return None
    return f"read {arguments.get('path')} · {_count(len(result.encode()), 'byte')}"


def _listing(key: str, one: str, many: str | None = None) -> Summariser:
    def summarise(_arguments: dict[str, Any], result: Any) -> str | None:
        if isinstance(result, dict) and isinstance(result.get(key), list):
            return _count(len(result[key]), one, many)
        return None
    return summarise


def _ask_user(_arguments: dict[str, Any], result: Any) -> str | None:
    if not isinstance(result, dict):
        return None
    if result.get("source") == "timeout":
        return "no answer (timed out)"
    return f"answer: {_short(result.get('answer', ''))} ({result.get('source')})"


def _scheduled(_arguments: dict[str, Any], result: Any) -> str | None:
    if isinstance(result, dict):
        made = result.get("schedule_id") or result.get("taskId")
        return f"scheduled {made}" if made else None
    return None


SUMMARISERS: dict[str, Summariser] = {
    "bash": _bash,
    "write_file": _write_file,
    "read_file": _read_file,
    "recall": _listing("memories", "memory", "memories"),
    "search_memory": _listing("hits", "hit"),
    "memory_recently": _listing("items", "memory", "memories"),
    "history": _listing("messages", "message"),
    "list_tasks": _listing("tasks", "task"),
    "ask_user": _ask_user,
    "schedule": _scheduled,
    "schedule_once": _scheduled,
    "schedule_cron": _scheduled,
}


def summarise(tool: str, arguments: Any, result: Any, *, success: bool | None,
              duration_ms: int | None, failure: str | None = None,
              waiting: bool = False) -> str:
    """The card's one line: what the call did, in a person's words."""
    if success is None:
        return "waiting for your approval" if waiting else "running…"
    if not success:
        return (failure or "failed").strip().splitlines()[0] if failure else "failed"
    took = f"{duration_ms} ms" if duration_ms is not None else ""
    line = None
    if (summariser := SUMMARISERS.get(tool)) is not None:
        try:
            line = summariser(arguments if isinstance(arguments, dict) else {}, result)
        except (TypeError, ValueError, AttributeError):  # an odd result: say "ok"
            line = None
    if line is None:
        return f"ok · {took}" if took else "ok"
    return f"{line} · {took}" if took else line


def records_of(result: Any) -> list[dict[str, Any]] | None:
    """The list of records a result holds (itself, or its one list of dicts), else None."""
    if isinstance(result, list) and result and all(isinstance(r, dict) for r in result):
        return result
    if isinstance(result, dict):
        lists = [v for v in result.values()
                 if isinstance(v, list) and v and all(isinstance(r, dict) for r in v)]
        if len(lists) == 1:
            return lists[0]
    return None


def result_kind(tool: str, result: Any, success: bool | None) -> str | None:
    """``text``, ``json``, ``table`` or ``error`` (None while running or for no result).

    ``text`` is a string, or ``bash``'s ``{stdout, stderr, exit_code, ...}`` whose
    streams are shown as monospace blocks; ``table`` is a result holding a list of
    records (see :func:`records_of`).
    """
    if success is None:
        return None
    if success is False:
        return "error"
    if result is None:
        return None
    if isinstance(result, str) or (tool == "bash" and isinstance(result, dict)):
        return "text"
    if records_of(result) is not None:
        return "table"
    return "json"
