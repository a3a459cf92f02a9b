"""Which tools a request offers: a core, and groups ``find_tools`` brings in for one run.

Offering is about tokens, not permission: a registered tool the role may use that was
not offered still runs through its gate; a tool the role may not use is refused, and
``find_tools`` never brings one in. Checked over HTTP (the scripted server's recorded
request bodies), in process, and with the offline demo model playing the search.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from scripted_server import Call, Message, ScriptedServer

from agent_kernel import Agent, Settings, Tool
from agent_kernel.engine import ask_policy
from agent_kernel.engine.models import demo_find
from agent_kernel.team.roles import RoleTools
from agent_kernel.team.toolsets import default_tools
from agent_kernel.tools.find import find
from agent_kernel.tools.groups import CORE, GROUPS, ROLE_CORE

MODEL = "openai/test-model"


@pytest.fixture
def server():
    with ScriptedServer() as srv:
        yield srv
        assert not srv.hook_errors, srv.hook_errors


def http_agent(server: ScriptedServer, workspace: Path, **kwargs: Any) -> Agent:
    return Agent(model=MODEL, workspace=workspace,
                 settings=Settings(api_base=server.base_url, api_key="sk-test-0123456789abcdef",
                                   retry_base_delay=0.01), **kwargs)


def offered(request: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools") or []}


def shout(text: str) -> str:
    """Shout the text back.

    Args:
        text: What to shout.
    """
    return text.upper()


async def test_a_request_offers_the_core_and_find_tools(server, tmp_path):
    agent = http_agent(server, tmp_path, tools=[Tool(shout)])
    server.script(Message(text="hi"))
    assert (await agent.arun("hi")).ok
    sent = offered(server.requests[0])
    assert sent == CORE | {"find_tools", "shout"}  # a tool of the caller's is always offered
    assert len(json.dumps(server.requests[0]["tools"])) < 12_000  # all 50: over 30,000 bytes


async def test_find_tools_brings_a_group_in_for_the_rest_of_the_run(server, tmp_path):
    agent = http_agent(server, tmp_path)
    server.script(Message(calls=[Call("find_tools", '{"query": "remind me later"}')]),
                  Message(calls=[Call("list_tasks", '{}')]),
                  Message(text="nothing is scheduled"))
    result = await agent.arun("what is scheduled?")
    assert result.ok and [c.tool_name for c in result.tool_calls] == ["find_tools",
                                                                      "list_tasks"]
    said = server.tool_messages(1)[0]["content"]
    assert "schedule_once" in said and "(schedule)" in said
    schedule = set(GROUPS["schedule"][1])
    assert not schedule & offered(server.requests[0])
    assert schedule <= offered(server.requests[1]) and schedule <= offered(server.requests[2])
    # The conversation goes on: its next run starts with the groups it already called.
    server.script(Message(text="still nothing"))
    assert (await agent.arun("and now?")).ok
    assert schedule <= offered(server.requests[3])
    # A new conversation starts from the core again.
    server.script(Message(text="fresh"))
    assert (await agent.arun("hello", new=True)).ok
    assert offered(server.requests[4]) == CORE | {"find_tools"}
    assert agent.registry._found == {}  # nothing kept of ended runs


async def test_a_tool_not_offered_still_runs_through_its_gate(server, tmp_path):
    agent = http_agent(server, tmp_path)
    server.script(Message(calls=[Call("log_decision", '{"reasoning": "wait", '
                                                       '"decision_type": "other"}'),
                                 Call("run_command", '{"command": "ls"}')]),
                  Message(text="done"))
    result = await agent.arun("go")
    assert not {"log_decision", "run_command"} & offered(server.requests[0])
    logged, command = result.tool_calls
    assert logged.success  # it needs no approval: it runs
    assert not command.success and "no one could approve it" in str(command.error)  # asked


async def test_a_role_is_refused_what_it_may_not_use_and_cannot_find_it(server, tmp_path):
    agent = http_agent(server, tmp_path, role="planner")
    server.script(Message(calls=[Call("find_tools", '{"query": "bash run_javascript"}')]),
                  Message(calls=[Call("bash", '{"cmd": "ls"}')]), Message(text="ok"))
    result = await agent.arun("plan")
    assert "No tool you may use matches" in server.tool_messages(1)[0]["content"]
    assert "bash" not in offered(server.requests[1])
    assert not result.tool_calls[1].success
    assert "not permitted for role 'planner'" in str(result.tool_calls[1].error)


def test_each_role_is_offered_its_own_core(tmp_path):
    for role in ("teller", "planner", "worker"):
        agent = Agent(workspace=tmp_path, role=role)
        may = {s["function"]["name"] for s in agent.registry.schemas(role)}
        sent = {s["function"]["name"] for s in agent.registry.offered(role, "r1")}
        assert sent - {"find_tools"} == may & ROLE_CORE[role], role
        assert ("find_tools" in sent) == bool(may - {"find_tools"} - sent), role
        hidden = {t.name for t in agent.registry.hidden(role, "r1")}
        for group in GROUPS:
            find(agent, "r1", group)
        everything = {s["function"]["name"] for s in agent.registry.offered(role, "r1")}
        assert everything == may - {"find_tools"}  # nothing left to find: no finder
        assert hidden <= may
    planner = Agent(workspace=tmp_path, role="planner")
    assert "list_variables" in find(planner, "r2", "notebook")
    assert not {"run_python", "run_cell"} & {
        s["function"]["name"] for s in planner.registry.offered("planner", "r2")}
    teller = Agent(workspace=tmp_path, role="teller")
    assert "find_tools" not in {s["function"]["name"]
                                for s in teller.registry.offered("teller", "r")}


def test_a_role_made_at_run_time_is_offered_all_its_tools(tmp_path):
    agent = Agent(workspace=tmp_path, role="researcher")
    agent.registry.permission_hook = RoleTools("researcher", {"read_file", "log_decision"})
    # find_tools is not among its tools, so nothing could bring a hidden one back
    assert {s["function"]["name"] for s in agent.registry.offered("researcher", "r1")} == {
        "read_file", "log_decision"}


def test_an_agent_without_a_team_cannot_find_team_tools(tmp_path):
    agent = Agent(workspace=tmp_path)
    said = find(agent, "r1", "delegate spawn_agent")
    assert said.startswith("No tool you may use matches")
    assert not {"delegate", "spawn_agent"} & {
        s["function"]["name"] for s in agent.registry.offered(None, "r1")}


def test_schemas_are_built_once_and_rebuilt_when_tools_change(tmp_path, monkeypatch):
    agent = Agent(workspace=tmp_path)
    built: list[str] = []
    real = Tool.schema
    monkeypatch.setattr(Tool, "schema", lambda self: built.append(self.name) or real(self))
    first = agent.registry.offered(None, "r1")
    count = len(built)
    assert count == len(first)
    assert agent.registry.offered(None, "r1") == first and len(built) == count  # cached
    agent.registry.add(Tool(shout))
    assert "shout" in {s["function"]["name"] for s in agent.registry.offered(None, "r1")}
    assert len(built) > count  # rebuilt after the change
    agent.registry.remove("shout")
    assert "shout" not in {s["function"]["name"] for s in agent.registry.offered(None, "r1")}


def test_without_the_finder_every_tool_is_offered(tmp_path):
    agent = Agent(workspace=tmp_path)
    agent.registry.remove("find_tools")  # nothing could bring a hidden tool back
    assert agent.registry.offered(None, "r1") == agent.registry.schemas(None)


def test_every_built_in_tool_has_a_group_the_demo_knows():
    grouped = {name for _, names in GROUPS.values() for name in names}
    assert {t.name for t in default_tools()} - {"find_tools"} == grouped
    assert grouped == demo_find.KNOWN
    assert grouped >= CORE and all(core <= grouped for core in ROLE_CORE.values())


def test_find_tools_never_asks():
    [tool] = [t for t in default_tools() if t.name == "find_tools"]
    assert not ask_policy.asks(tool, {"query": "files"}, {})
    assert ask_policy.POLICY["find_tools"].asks is False


async def test_the_demo_searches_before_it_calls_a_tool_left_out(tmp_path):
    agent = Agent(workspace=tmp_path)
    result = await agent.arun("log decision: ship on Friday")
    assert [(c.tool_name, c.arguments) for c in result.tool_calls] == [
        ("find_tools", {"query": "log_decision"}),
        ("log_decision", {"reasoning": "ship on Friday", "decision_type": "other"})]
    assert result.tool_calls[1].success and "decision_id" in result.reply
    core = await agent.arun("echo hello", new=True)  # a core tool: no search
    assert [c.tool_name for c in core.tool_calls] == ["echo"]


async def test_the_demo_searches_once_and_falls_back_when_nothing_is_found(tmp_path):
    agent = Agent(workspace=tmp_path, role="worker")
    result = await agent.arun("remember that the demo works")  # the Teller's, not a Worker's
    assert [c.tool_name for c in result.tool_calls] == ["find_tools"]
    assert "No tool you may use matches" in str(result.tool_calls[0].result)
    assert result.ok and "offline demo model" in result.reply


def test_the_card_says_which_tools_a_search_brought_in_in_words(tmp_path: Path) -> None:
    from agent_kernel.views.summaries import summarise

    agent = Agent(workspace=tmp_path)
    result = agent.run("remind me in 10 minutes to stretch")
    call = next(c for c in result.tool_calls if c.tool_name == "find_tools")
    line = summarise("find_tools", call.arguments, call.result, success=True, duration_ms=None)
    assert line == "brought in the schedule tools"
    missed = find(agent, "run_x", "zzqx")
    assert summarise("find_tools", {"query": "zzqx"}, missed, success=True,
                     duration_ms=3) == "found no tools for “zzqx” · 3 ms"
