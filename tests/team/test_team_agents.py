"""Spec 004's agents and messages in the team: spawn_agent, terminate_agent, send_message,
wait_for_message.

Everything goes through a real ``Team`` with scripted answers per role, in-process
(:class:`SocietyModel`): the Planner makes a role and spawns an agent in it, the agent
reports to its parent and to the person, waiting agents are started again by messages, a parent
ends a child and its descendant, each of spec 004's constraints is refused with a
message the model can act on, and a new ``Team`` on the workspace reads the agents and
messages back.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from scripted_server import Call, Message
from test_team import RoleModel, delegate, last, make_team, until
from test_team_society import call, ok

from agent_kernel import Agent
from agent_kernel.core.events import Notice
from agent_kernel.engine import tool_calls
from agent_kernel.engine.models import ModelRequest
from agent_kernel.team import Team, TeamLimits
from agent_kernel.team.roles import PLANNER, TELLER
from agent_kernel.team.supervisor import Supervisor

BRIEF = {"objective": "review the plan", "constraints": ["be brief", "no files"],
         "inputs": "the plan in this message", "outputs": "a verdict",
         "completion_criteria": "a clear yes or no"}
AGENT_ID = re.compile(r"agent-[0-9a-f]{12}")


class SocietyModel(RoleModel):
    """A RoleModel that also answers the roles made at run time, by their names in lower
    case (the role "Reviewer" is ``reviewer``)."""

    def role(self, request: ModelRequest) -> str | None:
        return request.role.lower() if request.role else None

    def of(self, role: str) -> list[dict[str, Any]]:
        return [b for b in self.requests
                if b["messages"][0]["content"].startswith(f"You are the {role.capitalize()}")]


def tool_call(tool: str, /, **arguments: Any) -> Call:
    return Call(tool, json.dumps(arguments))


def result_of(body: dict[str, Any], name: str) -> Any:
    """The result of the last ``name`` call in the conversation ``body`` holds."""
    ids = [c["id"] for m in body["messages"] if m["role"] == "assistant"
           for c in m.get("tool_calls") or [] if c["function"]["name"] == name]
    said = [m["content"] for m in body["messages"]
            if m["role"] == "tool" and m["tool_call_id"] in ids]
    return json.loads(said[-1])


def brief_says(body: dict[str, Any], what: str) -> str:
    """A field of the spawned agent's first message ("spawned by planner-1 for task ...")."""
    first = next(m["content"] for m in body["messages"] if m["role"] == "user")
    found = re.search(rf"{what} (\S+?)[ .]", first)
    assert found, first
    return found.group(1)


def teller_and_planner(role: str, body: dict[str, Any], planner: Any) -> Message | None:
    """The Teller delegates one task and replies with what came back; the Planner's turns
    come from ``planner``."""
    said = last(body)
    if role == TELLER:
        if said["role"] == "user" and said["content"].startswith("The work you delegated"):
            return Message(calls=[tool_call("reply", text="Reviewed.")])
        if said["role"] == "user":
            return Message(calls=[delegate("get the plan reviewed")])
        return Message(text="Done.")
    if role == PLANNER:
        return planner(said, body)
    return None


# -- a Planner's agent reports, waits and is answered ---------------------------------------


def review(role: str, body: dict[str, Any]) -> Message:
    """The Planner makes a Reviewer role, spawns a Reviewer and waits. The Reviewer tells its
    parent and the person, and waits; the Planner, woken by the report, answers it; the
    Reviewer, woken by that, ends with its verdict."""

    def planner(said: dict[str, Any], body: dict[str, Any]) -> Message:
        if said["role"] == "user" and said["content"].startswith("Message(s) arrived"):
            [report] = envelopes(said["content"])
            assert AGENT_ID.fullmatch(report["from"]), said["content"]
            return Message(calls=[tool_call("send_message", to=report["from"],
                                            payload={"text": "approved, finish up"})])
        if said["role"] == "user":
            return Message(calls=[tool_call(
                "create_role", name="Reviewer",
                rolePrompt="You are the Reviewer. Review what you are given. {braces} stay.",
                tools=["send_message", "find_role_by_name"])])
        if said["role"] == "tool" and '"rolePrompt"' in said["content"]:
            role_id = json.loads(said["content"])["id"]
            return Message(calls=[tool_call("spawn_agent", roleId=role_id, taskBrief=BRIEF)])
        if said["role"] == "tool" and '"roleName"' in said["content"]:
            return Message(calls=[tool_call("wait_for_message")])
        if said["role"] == "tool" and '"delivered"' in said["content"]:
            return Message(text="Plan: the Reviewer approved it.")
        return Message(text=f"unexpected: {said['content'][:200]}")

    made = teller_and_planner(role, body, planner)
    if made is not None:
        return made
    assert role == "reviewer"
    if said_is_brief(body):
        parent = brief_says(body, "spawned by")
        return Message(calls=[
            tool_call("send_message", to=parent,
                      payload={"type": "task_result", "status": "success", "verdict": "yes"}),
            tool_call("send_message", to="user", payload={"text": "Review done: yes"}),
            tool_call("wait_for_message")])
    said = last(body)
    if said["role"] == "user" and said["content"].startswith("Message(s) arrived"):
        [answer] = envelopes(said["content"])
        return Message(text=f"Verdict: yes ({answer['payload']['text']})")
    return Message(text=f"unexpected: {said['content'][:200]}")


def envelopes(content: str) -> list[dict[str, Any]]:
    """The messages a woken agent reads: one JSON envelope a line after the heading."""
    return [json.loads(line) for line in content.splitlines()[1:]]


def said_is_brief(body: dict[str, Any]) -> bool:
    said = last(body)
    return said["role"] == "user" and said["content"].startswith("You are agent-")


async def test_a_planner_spawns_an_agent_that_reports_waits_and_is_answered(tmp_path: Path
                                                                            ) -> None:
    with SocietyModel(review) as server:
        team = make_team(server, tmp_path / "ws", max_workers=1)
        notices: list[str] = []
        team.bus.subscribe(lambda e: notices.append(e.text) if isinstance(e, Notice) else None)
        result = await asyncio.wait_for(team.arun("review my plan"), 60)
        assert not server.hook_errors, server.hook_errors

    assert result.status == "ok", result.error
    assert result.reply == "Reviewed."
    [planner_task] = result.tree["children"]
    assert (planner_task["status"], planner_task["result"]) == (
        "ok", "Plan: the Reviewer approved it.")
    [reviewer_task] = planner_task["children"]
    society = team.supervisor.society
    [record] = society.records.values()
    assert AGENT_ID.fullmatch(record.id)
    assert (reviewer_task["role"], reviewer_task["agent_id"], reviewer_task["status"],
            reviewer_task["parent_agent_id"], reviewer_task["trace_id"]) == (
        "Reviewer", record.id, "ok", planner_task["agent_id"], result.tree["trace_id"])
    assert reviewer_task["result"] == "Verdict: yes (approved, finish up)"

    # spawn_agent's result is spec 004's, parentAgentId and taskId filled in by the team
    spawned = result_of(server.of(PLANNER)[-1], "spawn_agent")
    assert spawned == {"id": record.id, "roleId": record.roleId, "roleName": "Reviewer"}
    assert (record.parentAgentId, record.taskId, record.status) == (
        planner_task["agent_id"], planner_task["id"], "ok")

    # the agent runs with the role's prompt (braces kept) and only the role's tools
    [first, second] = server.of("reviewer")
    assert first["messages"][0]["content"] == ("You are the Reviewer. Review what you are "
                                               "given. {braces} stay.")
    assert {t["function"]["name"] for t in first["tools"]} == {
        "send_message", "find_role_by_name", "wait_for_message"}
    assert "Objective: review the plan" in first["messages"][1]["content"]
    # the same conversation goes on after the wait, with the message as its input
    assert second["messages"][:2] == first["messages"][:2]
    assert second["messages"][-1]["content"].startswith("Message(s) arrived")

    # the Planner waited: its next run is the same conversation, started by the report
    planner_requests = server.of(PLANNER)
    woken = next(b for b in planner_requests if last(b)["content"].startswith("Message(s)"))
    assert '"verdict": "yes"' in last(woken)["content"]
    assert any(m["role"] == "tool" and '"roleName"' in (m["content"] or "")
               for m in woken["messages"])

    # the messages: from and taskId by the team, the person's shown as a notice
    log = [(m.sender, m.to, m.taskId, m.delivered) for m in society.messages]
    assert log == [(record.id, planner_task["agent_id"], planner_task["id"], True),
                   (record.id, "user", planner_task["id"], True),
                   (planner_task["agent_id"], record.id, planner_task["id"], True)]
    # spec 004's {text: ...} payload: the person reads the words, not the object
    assert f"Message from {record.id} (Reviewer): Review done: yes" in notices

    # the ledger: the agent's calls carry its role, task, parent and trace
    records = team.ledger.records()
    calls = [r for r in records if r.get("kind") == "tool_call" and r["agent_id"] == record.id]
    assert {r["tool_name"] for r in calls} == {"send_message", "wait_for_message"}
    assert all((r["role"], r["role_id"], r["task_id"], r["parent_agent_id"], r["trace_id"]) == (
        "Reviewer", record.roleId, reviewer_task["id"], planner_task["agent_id"],
        result.tree["trace_id"]) for r in calls)
    finished = [r for r in records if r.get("kind") == "task_finished"
                and r["task_id"] == reviewer_task["id"]]
    assert [r["status"] for r in finished] == ["ok"]
    assert sum(r.get("kind") == "message_sent" for r in records) == 3
    assert team.ledger.verify().ok

    # on disk: the agent and the three messages
    saved = json.loads((tmp_path / "ws" / "team" / "agents" / f"{record.id}.json").read_text())
    assert {k: saved[k] for k in ("id", "roleId", "parentAgentId", "taskId", "status")} == {
        "id": record.id, "roleId": record.roleId, "parentAgentId": planner_task["agent_id"],
        "taskId": planner_task["id"], "status": "ok"}
    assert len(list((tmp_path / "ws" / "team" / "messages").glob("*.json"))) == 3


# -- terminate_agent ends a child and its descendant ----------------------------------------


def chain(role: str, body: dict[str, Any]) -> Message:
    """Planner → Lead → Helper; the Lead says "ready" once its Helper exists; the Planner,
    woken by it, terminates the Lead (and so the Helper)."""

    def planner(said: dict[str, Any], body: dict[str, Any]) -> Message:
        if said["role"] == "user" and said["content"].startswith("Message(s) arrived"):
            [ready] = envelopes(said["content"])
            assert AGENT_ID.fullmatch(ready["from"]), said["content"]
            return Message(calls=[tool_call("terminate_agent", agentId=ready["from"],
                                            reason="enough")])
        if said["role"] == "user":
            return Message(calls=[tool_call(
                "create_role", name="Lead", rolePrompt="You are the Lead. Run a helper.",
                tools=["spawn_agent", "terminate_agent", "create_role", "send_message"])])
        if said["role"] == "tool" and '"rolePrompt"' in said["content"]:
            role_id = json.loads(said["content"])["id"]
            return Message(calls=[tool_call("spawn_agent", roleId=role_id, taskBrief=BRIEF)])
        if said["role"] == "tool" and '"roleName"' in said["content"]:
            return Message(calls=[tool_call("wait_for_message")])
        return Message(text="Plan: ended the Lead.")

    made = teller_and_planner(role, body, planner)
    if made is not None:
        return made
    said = last(body)
    if role == "lead":
        if said_is_brief(body):
            return Message(calls=[tool_call(
                "create_role", name="Helper", rolePrompt="You are the Helper. Wait.",
                tools=["send_message"])])
        if said["role"] == "tool" and '"rolePrompt"' in said["content"]:
            role_id = json.loads(said["content"])["id"]
            return Message(calls=[tool_call("spawn_agent", roleId=role_id, taskBrief=BRIEF)])
        if said["role"] == "tool" and '"roleName"' in said["content"]:
            return Message(calls=[tool_call("send_message", to=brief_says(body, "spawned by"),
                                            payload={"text": "ready"}),
                                  tool_call("wait_for_message")])
        return Message(text="lead: unexpected")
    assert role == "helper"
    return Message(calls=[tool_call("wait_for_message")])


async def test_terminate_ends_a_child_and_its_descendant_each_recorded(tmp_path: Path) -> None:
    with SocietyModel(chain) as server:
        team = make_team(server, tmp_path / "ws")
        result = await asyncio.wait_for(team.arun("run a chain"), 60)
        assert not server.hook_errors, server.hook_errors

    assert result.status == "ok", result.error
    society = team.supervisor.society
    lead = next(r for r in society.records.values() if r.roleName == "Lead")
    helper = next(r for r in society.records.values() if r.roleName == "Helper")
    [planner_task] = result.tree["children"]
    assert (lead.parentAgentId, helper.parentAgentId) == (planner_task["agent_id"], lead.id)
    assert (lead.depth, helper.depth) == (1, 2)
    assert helper.taskId == lead.taskId == planner_task["id"]  # taskId is inherited
    assert lead.status == helper.status == "terminated"
    assert lead.error == f"terminated by {planner_task['agent_id']}: enough"
    assert helper.error == f"its parent {lead.id} was ended"
    assert result_of(server.of(PLANNER)[-1], "terminate_agent") == {"ok": True}
    [lead_task] = planner_task["children"]
    [helper_task] = lead_task["children"]
    assert lead_task["status"] == helper_task["status"] == "cancelled"

    records = team.ledger.records()
    ended = [(r["agent_id"], r["by"]) for r in records if r.get("kind") == "agent_terminated"]
    assert sorted(ended) == sorted([(lead.id, planner_task["agent_id"]),
                                    (helper.id, planner_task["agent_id"])])
    finished = {r["agent_id"]: r["status"] for r in records if r.get("kind") == "task_finished"}
    assert finished[lead.id] == finished[helper.id] == "terminated"
    assert not society.members and team.ledger.verify().ok
    for record in (lead, helper):
        saved = json.loads((tmp_path / "ws" / "team" / "agents" / f"{record.id}.json")
                           .read_text())
        assert saved["status"] == "terminated"


# -- each of spec 004's constraints, refused with a message ----------------------------------


def waiting(role: str, body: dict[str, Any]) -> Message:
    """Spawned agents wait for messages; nobody else is asked anything here."""
    return Message(calls=[tool_call("wait_for_message")])


async def planner_on_task(sup: Supervisor, number: int) -> Agent:
    root = sup.root(f"prompt {number}", TELLER)
    task = sup.new_task(root, "teller", PLANNER, f"plan {number}", status="running")
    agent = sup.make_agent(PLANNER, f"planner-{number}")
    sup.label(agent, task)
    task.agent_id = agent.agent_id
    return agent


async def told(agent: Agent, tool: str, /, **arguments: Any) -> str:
    """The refusal, as the model reads it (the fact, then what to do)."""
    record = await call(agent, tool, **arguments)
    assert not record.success, record.result
    return f"{record.error} {record.guidance or ''}"


async def test_each_constraint_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    with SocietyModel(waiting) as server:
        team = make_team(server, tmp_path / "ws",
                         limits=TeamLimits(max_agents=2, max_agent_depth=2))
        sup, society = team.supervisor, team.supervisor.society
        first, second = await planner_on_task(sup, 1), await planner_on_task(sup, 2)
        mine = await ok(first, "create_role", name="Analyst",
                        rolePrompt="You are the Analyst. Analyse.",
                        tools=["spawn_agent", "create_role", "send_message"])
        theirs = await ok(second, "create_role", name="Checker",
                          rolePrompt="You are the Checker. Check.")

        # the task brief's required fields
        error = await told(first, "spawn_agent", roleId=mine["id"],
                           taskBrief={"objective": "x", "constraints": "not a list"})
        assert "taskBrief is missing inputs, outputs, completion_criteria" in error
        error = await told(first, "spawn_agent", roleId=mine["id"],
                           taskBrief={**BRIEF, "constraints": "one"})
        assert "taskBrief: constraints must be a list" in error
        # a role someone else made, a built-in role, no role at all
        error = await told(first, "spawn_agent", roleId=theirs["id"], taskBrief=BRIEF)
        assert ("Spawn refused: role 'Checker' was created by planner-2, and an agent is "
                "spawned only in a role its caller created (planner-1 did not create it)"
                ) in error and "create_role with a name of your own" in error
        error = await told(first, "spawn_agent", roleId="role-builtin-worker", taskBrief=BRIEF)
        assert "role 'Worker' is built in" in error
        error = await told(first, "spawn_agent", roleId="role-nope", taskBrief=BRIEF)
        assert "No role with id 'role-nope'" in error
        assert society.records == {}

        # one direct child of the root per task
        child = await ok(first, "spawn_agent", roleId=mine["id"], taskBrief=BRIEF)
        error = await told(first, "spawn_agent", roleId=mine["id"], taskBrief=BRIEF)
        assert (f"Spawn refused: you already spawned {child['id']} for task "
                f"{first.services.team_task.id}; the root agent has one direct child per "
                "task") in error and f"Send {child['id']} a message" in error

        # depth, then agents alive
        analyst = society.members[child["id"]].agent
        deeper = await ok(analyst, "create_role", name="Sub-analyst",
                          rolePrompt="You are the Sub-analyst.",
                          tools=["spawn_agent", "create_role"])
        grandchild = await ok(analyst, "spawn_agent", roleId=deeper["id"], taskBrief=BRIEF)
        bottom = society.members[grandchild["id"]].agent
        assert {s["function"]["name"] for s in bottom.registry.schemas(bottom.role)} == {
            "spawn_agent", "create_role", "send_message", "wait_for_message"}
        error = await told(bottom, "spawn_agent", roleId=deeper["id"], taskBrief=BRIEF)
        assert "only in a role its caller created" in error  # its parent made that role
        error = await told(second, "spawn_agent", roleId=theirs["id"], taskBrief=BRIEF)
        assert ("Spawn refused: 2 spawned agents are alive, the team's limit (max_agents); "
                "terminate_agent one you no longer need") in error
        team.limits.max_agents = 10
        sub = await ok(bottom, "create_role", name="Leaf", rolePrompt="You are the Leaf.",
                       tools=["spawn_agent"])
        error = await told(bottom, "spawn_agent", roleId=sub["id"], taskBrief=BRIEF)
        assert "Spawn refused: spawned agents are nested at most 2 deep" in error
        # a tool the role does not list is neither offered nor run
        error = await told(bottom, "find_role_by_name", name="X")
        assert "not permitted for role 'Sub-analyst'" in error
        assert "uses only the role's tools" in error

        # terminate: someone else's child, or nobody's
        error = await told(second, "terminate_agent", agentId=child["id"])
        assert (f"Terminate refused: {child['id']} is planner-1's, not your child; an agent "
                "terminates only the agents it spawned") in error
        assert "Your live children: none." in error
        error = await told(first, "terminate_agent", agentId=grandchild["id"])
        assert f"{grandchild['id']} is {child['id']}'s, not your child" in error
        error = await told(first, "terminate_agent", agentId="agent-000000000000")
        assert "Terminate refused: no agent, not your child" in error
        # spec 004's failure shape: {error}, what the model reads, recorded as a failure
        record = await call(first, "terminate_agent", agentId="agent-000000000000")
        assert not record.success and set(record.result) == {"error"}
        assert record.result["error"].startswith("Terminate refused: no agent, not your child")
        assert tool_calls.tool_message(record, 10_000)["content"].startswith('{"error": ')
        assert f"Your live children: {child['id']}." in error

        # messages: unknown, ended or unreachable recipients; from is never the model's
        error = await told(first, "send_message", to="agent-000000000000", payload={"text": "hi"})
        assert "No agent 'agent-000000000000' in this team can receive messages" in error
        assert "Send to 'user' (the person)" in error
        error = await told(first, "send_message", to="teller", payload={"text": "hi"})
        assert "send to 'user' to reach the person" in error
        error = await told(first, "send_message", to="user")
        assert "payload: required argument is missing" in error  # spec 004: required
        error = await told(first, "send_message", to="user", payload={"text": "a"}, **{"from": "x"})
        assert "from" in error and society.messages == []

        assert await ok(first, "terminate_agent", agentId=child["id"]) == {"ok": True}
        assert [society.records[a["id"]].status for a in (child, grandchild)] == [
            "terminated", "terminated"]
        error = await told(first, "send_message", to=child["id"], payload={"text": "still there?"})
        assert f"Agent {child['id']} has ended (terminated)" in error
        error = await told(first, "terminate_agent", agentId=child["id"])
        assert "has already ended (terminated)" in error
        assert not society.members
        assert not server.hook_errors, server.hook_errors


# -- a new Team reads the agents and the messages back ---------------------------------------


async def test_a_new_team_restores_agents_and_messages(tmp_path: Path) -> None:
    with SocietyModel(waiting) as server:
        team = make_team(server, tmp_path / "ws")
        sup, society = team.supervisor, team.supervisor.society
        planner = await planner_on_task(sup, 1)
        role = await ok(planner, "create_role", name="Scribe",
                        rolePrompt="You are the Scribe. Note things.")
        child = await ok(planner, "spawn_agent", roleId=role["id"], taskBrief=BRIEF)
        await until(lambda: society.members[child["id"]].waiting)
        assert society.records[child["id"]].status == "waiting"
        await ok(planner, "send_message", to="user",
                 payload={"text": "a note sk-abcdef0123456789abcd"})
        await ok(planner, "send_message", to=child["id"], payload={"do": "this"})

        # the kernel "dies" here: a second team on the same workspace
        later = Team(model=team.supervisor.model, workspace=tmp_path / "ws",
                     settings=team.supervisor.settings)
        again = later.supervisor.society
        restored = again.records[child["id"]]
        assert (restored.status, restored.roleId, restored.parentAgentId, restored.taskId) == (
            "interrupted", role["id"], "planner-1", planner.services.team_task.id)
        assert later.restore_report.agents == [child["id"]]
        assert (f"1 spawned agent(s) were alive when the kernel stopped and are now "
                f"interrupted: {child['id']}") in later.restore_report.text()
        assert [(m.sender, m.to) for m in again.messages] == [
            ("planner-1", "user"), ("planner-1", child["id"])]
        assert again.messages[1].content == {"do": "this"}
        note = again.messages[0].content["text"]
        assert note.startswith("a note ") and "sk-abcdef0123456789abcd" not in note  # redacted
        interrupted = [r for r in later.ledger.records() if r.get("kind") == "agent_interrupted"]
        assert [(r["agent_id"], r["role"]) for r in interrupted] == [(child["id"], "Scribe")]
        assert again.rows()[0]["status"] == "interrupted"
        # a torn file is reported, not trusted
        (tmp_path / "ws" / "team" / "agents" / "agent-torn.json").write_text("{torn")
        third = Team(model=team.supervisor.model, workspace=tmp_path / "ws",
                     settings=team.supervisor.settings)
        assert any("team/agents/agent-torn.json: not restored" in p
                   for p in third.restore_report.problems)
        assert third.restore_report.agents == []  # already reported interrupted

        await society.end_children("planner-1", "the test ends")
        assert not society.members


# -- a built-in Planner waits: its Workers start, and a Worker's message wakes it ------------


def planner_waits(role: str, body: dict[str, Any]) -> Message:
    def planner(said: dict[str, Any], body: dict[str, Any]) -> Message:
        if said["role"] == "user" and said["content"].startswith("Message(s) arrived"):
            [told] = envelopes(said["content"])
            said = told["payload"]["text"]
            return Message(text=f"Plan: the Worker said {said} (from {told['from']})")
        if said["role"] == "user":
            return Message(calls=[delegate("count the files", priority=4),
                                  tool_call("wait_for_message")])
        return Message(text="unexpected")

    made = teller_and_planner(role, body, planner)
    if made is not None:
        return made
    said = last(body)
    if said["role"] == "user":
        return Message(calls=[tool_call("send_message", to="planner-1",
                                        payload={"text": "3 files"})])
    return Message(text="counted")


async def test_a_waiting_planner_releases_its_workers_and_a_worker_wakes_it(tmp_path: Path
                                                                           ) -> None:
    with SocietyModel(planner_waits) as server:
        team = make_team(server, tmp_path / "ws", max_workers=1)
        result = await asyncio.wait_for(team.arun("count my files"), 60)
        assert not server.hook_errors, server.hook_errors

    assert result.status == "ok", result.error
    [planner_task] = result.tree["children"]
    [worker_task] = planner_task["children"]
    assert planner_task["agent_id"] == "planner-1"
    assert (planner_task["status"], planner_task["result"]) == (
        "ok", "Plan: the Worker said 3 files (from worker-2)")
    assert (worker_task["status"], worker_task["result"]) == ("ok", "counted")
    # the Worker ran while the Planner waited: its run had ended, so its delegation went on
    assert worker_task["started_at"] <= planner_task["ended_at"]
    [message] = team.supervisor.society.messages
    assert (message.sender, message.to, message.taskId, message.delivered) == (
        worker_task["agent_id"], "planner-1", worker_task["id"], True)
    ended = [r for r in team.ledger.records() if r.get("kind") == "tool_call"
             and r["tool_name"] == "wait_for_message"]
    assert [(r["agent_id"], r["success"]) for r in ended] == [("planner-1", True)]


async def test_a_new_kernels_planner_never_owns_an_earlier_planners_role(tmp_path: Path
                                                                        ) -> None:
    """Agent ids go on across kernels: the second team's first Planner is not
    ``planner-1`` again, so the role ``planner-1`` made is not its to spawn agents in."""
    phase = {"now": "make"}

    def script(role: str, body: dict[str, Any]) -> Message:
        said = last(body)
        if role == TELLER:
            if said["role"] == "user" and not said["content"].startswith("The work"):
                return Message(calls=[delegate("grow the team")])
            return Message(text="done")
        if role != PLANNER:
            return Message(text="ok")
        if said["role"] == "user" and phase["now"] == "make":
            return Message(calls=[tool_call("create_role", name="Critic",
                                            rolePrompt="You are the Critic. Criticise.")])
        if said["role"] == "user":
            return Message(calls=[tool_call("find_role_by_name", name="Critic")])
        asked = [c["function"]["name"] for m in body["messages"] if m["role"] == "assistant"
                 for c in m.get("tool_calls") or []]
        if phase["now"] == "take" and asked == ["find_role_by_name"]:
            found = result_of(body, "find_role_by_name")
            return Message(calls=[tool_call("spawn_agent", roleId=found["id"],
                                            taskBrief=BRIEF)])
        return Message(text="planned")

    with SocietyModel(script) as server:
        first = await make_team(server, tmp_path / "ws").arun("make a critic")
        assert first.status == "ok", first.error
        phase["now"] = "take"
        second_team = make_team(server, tmp_path / "ws")
        second = await second_team.arun("use the critic")
        assert second.status == "ok", second.error

    [made] = [r for r in second_team.ledger.records() if r.get("tool_name") == "create_role"]
    [spawn] = [r for r in second_team.ledger.records() if r.get("tool_name") == "spawn_agent"]
    assert made["agent_id"] == "planner-1" and made["success"]
    assert spawn["agent_id"] != "planner-1" and not spawn["success"]
    assert "was created by planner-1" in str(spawn.get("error"))
