"""The demo model plays ``find_tools``: it asks for a tool before calling one it lacks.

A request offers a core of tools and ``find_tools`` (``agent_kernel.tools.find``). The
demo rules read the tools offered, so alone they would never call a tool left out. Here
the demo first plays its rules as if it knew every built-in tool (as a real model knows
the names it was trained on: :data:`KNOWN`); when they want one that is not offered, it
calls ``find_tools`` with that name, and once the answer is back it plays the turn again
with what is offered now, as if the search had not happened. A tool the search did not
bring in (its role may not use it) is not searched for twice: the rules fall back on
what is offered, as they do without ``find_tools``.
"""

from __future__ import annotations

import json

from agent_kernel.engine.models import demo_team
from agent_kernel.engine.models.base import ChatMessage, ToolSchema
from agent_kernel.engine.models.demo import DemoTurn

FINDER = "find_tools"

KNOWN = frozenset({
    "echo", "reply", "ask_user", "log_decision", "console_print", "query_state",
    "list_variables", "inspect_variable", "last_error", "read_cells", "run_python",
    "insert_cell", "edit_cell", "run_cell",
    "read_file", "write_file", "list_files", "get_workspace_info",
    "bash", "run_command", "run_javascript", "web_search", "url_fetch", "http_request",
    "remember", "recall", "search_memory", "memory_recently", "get_recent_history",
    "get_history_by_time",
    "schedule", "schedule_once", "schedule_cron", "cancel_schedule", "list_tasks",
    "cancel_task",
    "todo_update", "todo_list", "plan_create", "contacts_upsert", "contacts_list",
    "contacts_candidate_rank", "contacts_send",
    "get_context_status", "compress_context",
    "delegate", "send_message", "wait_for_message", "put_artifact", "get_artifact",
    "find_role_by_name", "create_role", "spawn_agent", "terminate_agent",
})
"""The built-in tools the demo knows by name (``tools/groups.py`` lists the same)."""


def _names(tools: list[ToolSchema]) -> set[str]:
    return {str(t.get("function", {}).get("name")) for t in tools or []} - {"None"}


def _without_searches(messages: list[ChatMessage]) -> tuple[list[ChatMessage], set[str]]:
    """The conversation without ``find_tools`` exchanges, and the tool names searched for
    since the last prompt."""
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    kept: list[ChatMessage] = []
    dropped: set[str] = set()
    searched: set[str] = set()
    for i, message in enumerate(messages):
        calls = message.get("tool_calls") or [] if message.get("role") == "assistant" else []
        if calls and all(c.get("function", {}).get("name") == FINDER for c in calls):
            dropped.update(str(c.get("id")) for c in calls)
            if i > last_user:
                for call in calls:
                    try:
                        asked = json.loads(call.get("function", {}).get("arguments") or "{}")
                    except ValueError:
                        asked = {}
                    searched.update(str(asked.get("query", "")).split())
            continue
        if message.get("role") == "tool" and message.get("tool_call_id") in dropped:
            continue
        kept.append(message)
    return kept, searched


def respond(messages: list[ChatMessage], tools: list[ToolSchema],
            role: str | None = None) -> DemoTurn:
    """The demo's next response as ``role``, searching first for a tool it lacks."""
    offered = _names(tools)
    if FINDER not in offered:
        return demo_team.respond(messages, tools, role)
    seen, searched = _without_searches(messages)
    known: list[ToolSchema] = [
        {"type": "function", "function": {"name": name, "description": "", "parameters": {}}}
        for name in sorted(KNOWN - offered - searched)]
    if known:
        wished = demo_team.respond(seen, [*tools, *known], role)
        missing = list(dict.fromkeys(n for n, _ in wished.tool_calls if n not in offered))
        if missing:
            return DemoTurn(tool_calls=[(FINDER, {"query": " ".join(missing)})])
    return demo_team.respond(seen, tools, role)
