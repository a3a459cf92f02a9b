"""The built-in roles of a team and which tools each may use: one table, enforced in code.

Spec 000 gives a permission matrix for its ten tools (``delegate``, ``reply``,
``remember``, ...). Every other tool of the catalogue is assigned here too,
by what the role is for: the Teller talks with the person and hands work on,
the Planner splits it and reads what is remembered, Workers do it (files,
commands, the web, JavaScript). :func:`role_permits` is the registry's
permission hook: a tool a role may not use is neither offered to the model
nor run when asked for, and :func:`refusal` says why, in words the model can
act on. An agent without a role (the single agent of ``%agent``) keeps every
tool, and so does a role this table does not know. This module imports
nothing of ours, so the agent can install the hook cheaply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TELLER, PLANNER, WORKER = "teller", "planner", "worker"
ROLE_NAMES = (TELLER, PLANNER, WORKER)

_T, _P, _W = frozenset({TELLER}), frozenset({PLANNER}), frozenset({WORKER})
_ALL = frozenset(ROLE_NAMES)
_PW = frozenset({PLANNER, WORKER})

SPEC_MATRIX: dict[str, frozenset[str]] = {
    "delegate": frozenset({TELLER, PLANNER}),
    "reply": _T,
    "remember": _T,
    "get_recent_history": _P,
    "get_history_by_time": _P,
    "search_memory": _P,
    "ask_user": _T,
    "schedule": _P,
    "list_tasks": frozenset({TELLER, PLANNER}),
    "cancel_task": frozenset({TELLER, PLANNER}),
}
"""Spec 000's table "工具权限", as written."""

ASSIGNED: dict[str, frozenset[str]] = {
    # Bookkeeping every agent needs: an audit trail and care of its own context window.
    "echo": _ALL, "log_decision": _ALL,
    # Bringing a group of tools into a run (ours): every role, and it finds only the role's.
    "find_tools": _ALL, "get_context_status": _ALL, "compress_context": _ALL,
    # Artifacts are how agents hand work to each other (spec 004): every role reads and writes.
    "put_artifact": _ALL, "get_artifact": _ALL,
    # Growing the team with roles made at run time is planning (spec 004's organisation tools).
    "find_role_by_name": _P, "create_role": _P,
    # Spec 004's agents: the Planner spawns agents in roles it made and ends them; an agent of
    # such a role may too when its role lists the tool (see RoleTools).
    "spawn_agent": _P, "terminate_agent": _P,
    # Spec 004's messages: every team agent speaks; Planners and Workers wait for an answer.
    # The Teller's run ending is already its wait: its next message is the person's prompt.
    "send_message": _ALL, "wait_for_message": frozenset({PLANNER, WORKER}),
    # Reading what is remembered is the Planner's, as search_memory is.
    "recall": _P, "memory_recently": _P,
    # Timed work is planned work, as schedule is.
    "schedule_once": _P, "schedule_cron": _P, "cancel_schedule": _P,
    # Looking at the notebook's state informs a plan and a piece of work.
    "query_state": frozenset({PLANNER, WORKER}),
    # Doing the work: files, commands, the web, JavaScript, printing to the cell.
    "read_file": _W, "write_file": _W, "list_files": _W, "get_workspace_info": _W,
    "bash": _W, "run_command": _W,
    "url_fetch": _W, "web_search": _W, "http_request": _W,
    "run_javascript": _W, "console_print": _W,
    # The notebook (issue 24): looking at its variables, cells and last error runs nothing and
    # informs a plan as much as a piece of work.
    "list_variables": _PW, "inspect_variable": _PW, "read_cells": _PW, "last_error": _PW,
    # Running code in the person's kernel and changing their cells is doing the work: Workers
    # only, each call through the person's approval (a Worker holds no standing permission).
    "run_python": _W, "insert_cell": _W, "edit_cell": _W, "run_cell": _W,
    # Spec 003's organiser (issue 26): a plan is the Planner's; the person's todos and
    # contacts are kept by the Teller, who talks with the person, and read by the Planner.
    "plan_create": _P, "todo_update": _T, "todo_list": frozenset({TELLER, PLANNER}),
    "contacts_upsert": _T, "contacts_list": frozenset({TELLER, PLANNER}),
    "contacts_candidate_rank": _T,
    # Sending a contact a message is doing the work, as a request that sends is: Workers,
    # each send through the person's approval.
    "contacts_send": _W,
}
"""The tools spec 000's table does not name; see docs/team.md for why each group goes where."""

TEAM_ONLY = frozenset({"delegate", "spawn_agent", "terminate_agent", "send_message",
                       "wait_for_message"})
"""Tools that only mean something inside a team: an agent without a role is not offered them."""

OTHER_TOOLS = _W
"""A tool in neither table (the person's own ``@tool`` functions) is a Worker's."""

PURPOSE = {
    TELLER: "talks with the person and hands work to the Planner",
    PLANNER: "splits work into tasks for Workers",
    WORKER: "does one task with files, commands, the web and JavaScript",
}


@dataclass(frozen=True)
class Role:
    """A built-in role: its name, default wall-clock limit per task, and its instructions."""

    name: str
    default_timeout: float
    instructions: str


_NOW = " The current time is {now}."
ROLES = {
    TELLER: Role(TELLER, 300.0, (
        "You are the Teller of a team of agents run from a Jupyter notebook. You talk with the "
        "person. Answer small questions yourself; for work that needs tools, call delegate "
        "with a clear, self-contained prompt: the Planner takes it. A response of delegations "
        "alone ends your run (its text is what you tell the person meanwhile); the results "
        "come back as your next message: then answer the person concisely in Markdown."
        + _NOW)),
    PLANNER: Role(PLANNER, 600.0, (
        "You are the Planner of a team of agents. Split the task you are given into "
        "independent pieces of work and call delegate once for each, all in one response, "
        "with a self-contained prompt and a priority from 0 to 10 (higher runs first); say "
        "the plan in one line in that response's text. A response of delegations alone ends "
        "your run: the Workers start then, and their results go back with that line." + _NOW)),
    WORKER: Role(WORKER, 900.0, (
        "You are a Worker in a team of agents. Do the one task you are given with your tools, "
        "then end with its result as your final answer: it goes back to whoever asked."
        + _NOW)),
}
"""The built-in roles; a task's ``timeout`` of null means its role's ``default_timeout``."""


class RoleTools:
    """The permission hook of an agent spawned in a role made at run time: exactly the
    role's tools (spec 004). ``refusal`` says what the model is told for any other."""

    def __init__(self, role: str, tools: set[str] | frozenset[str]) -> None:
        self.role = role
        self.tools = frozenset(tools)

    def __call__(self, role: str | None, tool: object) -> bool:
        return getattr(tool, "name", None) in self.tools

    def refusal(self, role: str | None, name: str) -> str:
        """Why the role's agent may not use ``name``, and what it may use."""
        return (f"An agent in the role {self.role!r} uses only the role's tools, and "
                f"'{name}' is not one of them: " + ", ".join(sorted(self.tools)) + ".")


AGENT_NUMBER_DIGITS = 9
MAX_AGENT_NUMBER = 10**AGENT_NUMBER_DIGITS - 1
"""The largest number a built-in agent id may carry: ``planner-999999999``."""
_NUMBERED_ID = re.compile(rf"(planner|worker)-([1-9][0-9]{{0,{AGENT_NUMBER_DIGITS - 1}}})")


def agent_number(agent_id: object) -> int | None:
    """The number of a built-in agent id, parsed whole: ``planner-<n>`` or ``worker-<n>``
    with ``n`` a plain decimal of 1 to 9 ASCII digits and no leading zero; None for
    anything else (``planner-1e9``, ``worker-007``, ``planner-12x``, a 20-digit number)."""
    if not isinstance(agent_id, str):
        return None
    found = _NUMBERED_ID.fullmatch(agent_id)
    return int(found.group(2)) if found else None


def looks_numbered(agent_id: object) -> bool:
    """True for text that starts like a built-in agent id (whether or not it is one)."""
    return isinstance(agent_id, str) and agent_id.startswith((f"{PLANNER}-", f"{WORKER}-"))


def roles_for(name: str | None) -> frozenset[str] | None:
    """The roles that may use tool ``name`` (None: any role, for an unlisted tool)."""
    if name is None:
        return None
    return SPEC_MATRIX.get(name) or ASSIGNED.get(name) or OTHER_TOOLS


def role_permits(role: str | None, tool: object) -> bool:
    """The registry's permission hook: may an agent of ``role`` use ``tool``?"""
    if role is None or role not in ROLE_NAMES:
        return getattr(tool, "name", None) not in TEAM_ONLY
    allowed = roles_for(getattr(tool, "name", None))
    return allowed is None or role in allowed


def refusal(role: str | None, name: str) -> str | None:
    """What the model is told when ``role`` asks for tool ``name`` it may not use (None when
    another permission hook refused it: this table has nothing to add)."""
    if role not in ROLE_NAMES and name not in TEAM_ONLY:
        return None
    if role not in ROLE_NAMES:
        return (f"'{name}' works only inside a team (Teller, Planner, Workers): "
                "agent_kernel.Team runs one.")
    allowed = roles_for(name) or _ALL
    who = " and ".join(r.capitalize() for r in ROLE_NAMES if r in allowed)
    return (f"As the {str(role).capitalize()} (who {PURPOSE.get(str(role), 'has its own tools')})"
            f" you cannot use '{name}'; it belongs to the {who}. Use the tools you are offered.")


def permission_table() -> dict[str, dict[str, bool]]:
    """Every tool of the built-in catalogue and whether each role may use it."""
    names = sorted({*SPEC_MATRIX, *ASSIGNED})
    return {name: {role: role in (roles_for(name) or _ALL) for role in ROLE_NAMES}
            for name in names}


class TeamPermissions:
    """The permission hook of every agent outside a spawned role: :func:`role_permits`,
    with :func:`refusal` for the words the model is told."""

    def __call__(self, role: str | None, tool: object) -> bool:
        return role_permits(role, tool)

    def refusal(self, role: str | None, name: str) -> str | None:
        """What the model is told when ``role`` may not call ``name``."""
        return refusal(role, name)


ROLE_PERMITS = TeamPermissions()
"""The hook ``app.Agent`` and the team give their agents."""
