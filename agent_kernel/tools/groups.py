"""Every built-in tool's group, and the core a request offers before any is asked for.

Each tool's JSON schema costs tokens in every request (49 tools were 4,369 tokens of
gpt-4o-mini's counting, on 2026-11-26). So a request carries a core, and the model brings
the rest in by group with ``find_tools`` (:mod:`agent_kernel.tools.find`); the registry
does the offering (:class:`~agent_kernel.engine.registry.Offering`). Offering is about
tokens, not permission: a tool left out still runs when called, through its role's
permission and its approval.

The core is what a person in a notebook asks for most, so most runs never search:

- the notebook itself (looking at variables, the last error and cells, running Python,
  adding, editing and running cells): agent-kernel lives in a notebook, and "what's in
  df", "plot this", "fix the error above" are its first asks;
- reading, writing and listing files, and one shell command: the workspace is the
  agent's desk;
- a web search: the most common question a notebook cannot answer from itself;
- ``remember`` and ``recall``: the memory people try in their first session;
- ``ask_user`` (the only way to ask the person) and ``echo`` (the first thing anyone
  tries, and the offline demo's hello).

A team role has a core of its own (:data:`ROLE_CORE`): the Teller keeps every tool it may
use (18, it talks and hands on), the Planner its spec tools and the team's, a Worker the
team's and the tools that do the work. Tool names here are strings, as in
``team/roles.py``: the team's tools live on a floor above this one.
"""

from __future__ import annotations

from agent_kernel.engine.registry import Offering

FINDER = "find_tools"

GROUPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "basics": ("echo, reply in the cell, ask the person, log a decision, print, read a "
               "registered state",
               ("echo", "reply", "ask_user", "log_decision", "console_print", "query_state")),
    "notebook": ("the kernel's variables and last error, read/insert/edit/run cells, "
                 "run Python code",
                 ("list_variables", "inspect_variable", "last_error", "read_cells",
                  "run_python", "insert_cell", "edit_cell", "run_cell")),
    "files": ("read, write, append and list workspace files; workspace size",
              ("read_file", "write_file", "list_files", "get_workspace_info")),
    "commands": ("shell commands, programs, sandboxed JavaScript",
                 ("bash", "run_command", "run_javascript")),
    "web": ("search the web, fetch or download a page, HTTP requests (POST, PUT, ...)",
            ("web_search", "url_fetch", "http_request")),
    "memory": ("remember and recall facts; search memory; recent history and history "
               "by time",
               ("remember", "recall", "search_memory", "memory_recently",
                "get_recent_history", "get_history_by_time")),
    "schedule": ("run a prompt later, at a time, every N minutes or on a cron; list and "
                 "cancel scheduled tasks, reminders, triggers",
                 ("schedule", "schedule_once", "schedule_cron", "cancel_schedule",
                  "list_tasks", "cancel_task")),
    "organiser": ("todos, plans, contacts and sending a contact a message (Telegram, "
                  "e-mail)",
                  ("todo_update", "todo_list", "plan_create", "contacts_upsert",
                   "contacts_list", "contacts_candidate_rank", "contacts_send")),
    "context": ("the context window's size and compressing it",
                ("get_context_status", "compress_context")),
    "team": ("delegate work, messages between agents, artifacts, roles and agents made at "
             "run time",
             ("delegate", "send_message", "wait_for_message", "put_artifact",
              "get_artifact", "find_role_by_name", "create_role", "spawn_agent",
              "terminate_agent")),
}
"""Group -> (what it holds in a few words, its tools)."""

CORE = frozenset({
    "echo", "ask_user",
    "list_variables", "inspect_variable", "last_error", "read_cells", "run_python",
    "insert_cell", "edit_cell", "run_cell",
    "read_file", "write_file", "list_files", "bash",
    "web_search", "remember", "recall",
})
"""The single agent's core (see the module's docstring for why each is here)."""

_TEAM_TALK = frozenset({"delegate", "send_message", "wait_for_message", "put_artifact",
                        "get_artifact"})
ROLE_CORE: dict[str, frozenset[str]] = {
    # The Teller talks with the person and hands work on: its 18 tools are all its own.
    "teller": frozenset(name for _, names in GROUPS.values() for name in names),
    # The Planner splits work: spec 000's tools (delegate, memory, schedule, tasks) and the
    # team's; the organiser, the notebook and the other schedule tools come on demand.
    "planner": _TEAM_TALK | {"echo", "log_decision", "search_memory", "get_recent_history",
                             "get_history_by_time", "schedule", "list_tasks", "cancel_task",
                             "find_role_by_name", "create_role", "spawn_agent",
                             "terminate_agent"},
    # A Worker does one task: the team's tools, files, commands, the web and the notebook.
    "worker": _TEAM_TALK | {"echo", "log_decision", "read_file", "write_file", "list_files",
                            "bash", "run_command", "web_search", "url_fetch",
                            "list_variables", "inspect_variable", "last_error", "read_cells",
                            "run_python"},
}
"""A team role's core, in place of :data:`CORE` (the permission table still cuts it)."""


def group_of(name: str) -> str | None:
    """The group of the built-in tool ``name`` (None: not a built-in, always offered)."""
    return next((group for group, (_, names) in GROUPS.items() if name in names), None)


OFFERING = Offering(
    groups={name: group for group, (_, names) in GROUPS.items() for name in names},
    core=CORE, by_role=ROLE_CORE, about={group: about for group, (about, _) in GROUPS.items()},
    finder=FINDER)
"""What ``find_tools``' module gives every agent it is attached to."""
