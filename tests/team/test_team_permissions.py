"""The permission table: every built-in tool × every role, offered or not, run or refused.

Spec 000's table is copied here as the spec writes it, and checked against what
the registry offers each role and what a call by that role does: a tool the
role may not use is absent from the schemas sent to the model, and a call
to it is refused before anything runs, recorded in the ledger, with a
message that says whose tool it is.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_kernel import Agent
from agent_kernel.engine import tool_calls
from agent_kernel.engine.models.llm import ToolCallRequest
from agent_kernel.team.roles import ASSIGNED, PLANNER, ROLE_NAMES, TELLER, WORKER
from agent_kernel.team.toolsets import default_tools

# Spec 000, "工具权限": 可用 (may use) per role.
SPEC_000 = {
    "delegate": {TELLER, PLANNER},
    "reply": {TELLER},
    "remember": {TELLER},
    "get_recent_history": {PLANNER},
    "get_history_by_time": {PLANNER},
    "search_memory": {PLANNER},
    "ask_user": {TELLER},
    "schedule": {PLANNER},
    "list_tasks": {TELLER, PLANNER},
    "cancel_task": {TELLER, PLANNER},
}
DOERS = {"read_file", "write_file", "list_files", "get_workspace_info", "bash", "run_command",
         "url_fetch", "web_search", "http_request", "run_javascript", "run_python"}
# Spec 004's agents and messages, as docs/team.md assigns them.
SOCIETY = {
    "spawn_agent": {PLANNER},
    "terminate_agent": {PLANNER},
    "send_message": {TELLER, PLANNER, WORKER},
    "wait_for_message": {PLANNER, WORKER},
}
TEAM_ONLY = {"delegate", *SOCIETY}
# Issue 24's notebook tools, as docs/team.md assigns them: looking for Planner and Worker,
# running and changing the notebook for Workers only.
NOTEBOOK = {
    "list_variables": {PLANNER, WORKER}, "inspect_variable": {PLANNER, WORKER},
    "read_cells": {PLANNER, WORKER}, "last_error": {PLANNER, WORKER},
    "run_python": {WORKER}, "insert_cell": {WORKER}, "edit_cell": {WORKER}, "run_cell": {WORKER},
}

# Spec 003's organiser (issue 26), as docs/team.md assigns it.
ORGANISER = {
    "plan_create": {PLANNER}, "todo_update": {TELLER}, "todo_list": {TELLER, PLANNER},
    "contacts_upsert": {TELLER}, "contacts_list": {TELLER, PLANNER},
    "contacts_candidate_rank": {TELLER},
    "contacts_send": {WORKER},
}


def expected(name: str) -> set[str]:
    if name in SPEC_000:
        return SPEC_000[name]
    if name in SOCIETY:
        return SOCIETY[name]
    if name in DOERS:  # files, commands, the web and JavaScript: Workers only
        return {WORKER}
    if name in NOTEBOOK:
        return NOTEBOOK[name]
    if name in ORGANISER:
        return ORGANISER[name]
    return set(ASSIGNED[name])


def test_the_notebook_tools_have_their_places_in_the_table() -> None:
    from agent_kernel.team.roles import permission_table

    table = permission_table()
    for name, roles in NOTEBOOK.items():
        assert {r for r, may in table[name].items() if may} == roles, name


def offered(agent: Agent) -> set[str]:
    return {s["function"]["name"] for s in agent.registry.schemas(agent.role)}


def test_every_built_in_tool_has_a_role_assignment() -> None:
    names = {t.name for t in default_tools()}
    assert set(SPEC_000) <= names and names >= DOERS
    for name in names:
        assert expected(name), f"{name} is not assigned to any role"


@pytest.mark.parametrize("role", ROLE_NAMES)
async def test_each_role_is_offered_exactly_its_tools_and_refused_the_rest(
        role: str, tmp_path: Path) -> None:
    agent = Agent(workspace=tmp_path / "ws", role=role, agent_id=f"{role}-1")
    names = {t.name for t in default_tools()}
    allowed = {n for n in names if role in expected(n)}
    assert offered(agent) == allowed
    assert not allowed & {n for n in names if role not in expected(n)}

    refused = sorted(names - allowed)
    assert refused, f"the {role} is refused nothing"
    for name in refused:
        call = ToolCallRequest(id=f"call_{name}", name=name, arguments="{}")
        record = await tool_calls.execute(agent, call, "run_perm")
        assert not record.success
        assert record.error == f"Tool '{name}' is not permitted for role '{role}'"
        owners = " and ".join(r.capitalize() for r in ROLE_NAMES if r in expected(name))
        assert record.guidance is not None and f"it belongs to the {owners}" in record.guidance
        assert record.summary == f"{name} is not for the {role}"
    in_ledger = {r["tool_name"] for r in agent.ledger.records()
                 if r.get("kind") == "tool_call" and not r["success"]}
    assert in_ledger == set(refused)
    assert agent.ledger.verify().ok


def test_the_single_agent_keeps_every_tool_but_the_team_only_ones(tmp_path: Path) -> None:
    agent = Agent(workspace=tmp_path / "ws")
    assert offered(agent) == {t.name for t in default_tools()} - TEAM_ONLY


@pytest.mark.parametrize(("name", "arguments"), [
    ("delegate", {"prompt": "x"}),
    ("spawn_agent", {"roleId": "role-x", "taskBrief": {}}),
    ("terminate_agent", {"agentId": "agent-x"}),
    ("send_message", {"to": "user", "payload": {"text": "hi"}}),
    ("wait_for_message", {}),
])
async def test_team_tools_outside_a_team_are_refused_with_a_pointer(
        name: str, arguments: dict[str, object], tmp_path: Path) -> None:
    import json

    agent = Agent(workspace=tmp_path / "ws")
    call = ToolCallRequest(id=f"call_{name}", name=name, arguments=json.dumps(arguments))
    record = await tool_calls.execute(agent, call, "run_d")
    assert not record.success and "only inside a team" in str(record.guidance)


@pytest.mark.parametrize("name", sorted(TEAM_ONLY - {"delegate"}))
async def test_the_society_tools_themselves_say_they_need_a_team(name: str,
                                                                 tmp_path: Path) -> None:
    """Even with the permission hook out of the way, a single agent's call is refused."""
    from agent_kernel.engine.registry import ToolContext, ToolError

    agent = Agent(workspace=tmp_path / "ws")
    tool = agent.registry.get(name)
    assert tool is not None
    arguments = {"spawn_agent": {"roleId": "role-x", "taskBrief": {}},
                 "terminate_agent": {"agentId": "agent-x"},
                 "send_message": {"to": "user", "payload": {"text": "hi"}}}.get(name, {})
    ctx = ToolContext(agent=agent, run_id="run_x", agent_id=agent.agent_id,
                      workspace=agent.workspace)
    with pytest.raises(ToolError, match="works only inside a team"):
        await tool.invoke(tool.validate(arguments), ctx)
