"""Spec 004's roles and artifacts: shapes, refusals, persistence and a team handing work on.

Tools are called the way the model calls them (``tool_calls.execute`` with JSON
arguments) by real agents of a real ``Team``, writing into a real workspace;
the last test runs a whole team over litellm's HTTP path against the local
scripted server: a Worker puts an artifact and the Teller reads it.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from scripted_server import Call, Message
from test_team import RoleModel, delegate, first_prompt, last, make_team

from agent_kernel import Agent
from agent_kernel.core.workspace import Workspace
from agent_kernel.engine import tool_calls
from agent_kernel.engine.models.llm import ToolCallRequest
from agent_kernel.team import Team
from agent_kernel.team.roles import PLANNER, TELLER, WORKER
from agent_kernel.team.society import ArtifactStore, RoleStore, SocietyError

ROLE_ID = re.compile(r"role-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
_calls = itertools.count()


async def call(agent: Agent, tool: str, /, **arguments: Any) -> tool_calls.ToolCallRecord:
    request = ToolCallRequest(id=f"call_{next(_calls)}", name=tool,
                              arguments=json.dumps(arguments))
    return await tool_calls.execute(agent, request, "run_society")


async def ok(agent: Agent, tool: str, /, **arguments: Any) -> Any:
    record = await call(agent, tool, **arguments)
    assert record.success, (record.error, record.guidance)
    return record.result


SHAPED = ("spawn_agent", "terminate_agent")


async def refused(agent: Agent, tool: str, /, **arguments: Any) -> str:
    """The refusal the tool gave, as the person is shown it (the model reads the same
    fact with the tool's name before it)."""
    record = await call(agent, tool, **arguments)
    assert not record.success
    prefix = f"Tool '{tool}' execution failed: "
    assert record.error is not None and record.error.startswith(prefix), record.error
    told = record.error[len(prefix):]
    # spec 004: spawn_agent and terminate_agent fail as {error}; the model reads that object
    assert record.result == ({"error": told} if tool in SHAPED else None), record.result
    if tool in SHAPED:
        assert json.loads(tool_calls.tool_message(record, 10_000)["content"].split(
            "\n\n", 1)[0]) == {"error": told}
    assert record.summary == told or record.summary and tool in record.summary
    assert record.guidance
    return told


@pytest.fixture
def team(tmp_path: Path) -> Team:
    return Team(workspace=tmp_path / "ws")


def planner(team: Team, number: int = 1) -> Agent:
    return team.supervisor.make_agent(PLANNER, f"planner-{number}")


def on_disk(team: Team, folder: str) -> list[Path]:
    where = team.workspace.root / "team" / folder
    return sorted(where.iterdir()) if where.is_dir() else []


# -- roles ----------------------------------------------------------------------------------


async def test_create_role_shape_created_by_and_same_name_returns_it(team: Team) -> None:
    first = planner(team, 1)
    made = await ok(first, "create_role", name="Programmer",
                    rolePrompt="You write code.", tools=["echo", "log_decision"])
    assert set(made) == {"id", "name", "rolePrompt", "createdBy", "createdAt", "tools",
                         "builtin"}
    assert ROLE_ID.fullmatch(made["id"]) and ISO.fullmatch(made["createdAt"])
    assert (made["name"], made["rolePrompt"], made["createdBy"], made["tools"],
            made["builtin"]) == ("Programmer", "You write code.", "planner-1",
                                 ["echo", "log_decision"], False)

    # Another agent, the same name spelled differently: the existing role, unchanged.
    again = await ok(planner(team, 2), "create_role", name="  programmer ",
                     rolePrompt="Something else.", tools=["echo"])
    assert again == made
    assert await ok(first, "find_role_by_name", name="PROGRAMMER") == made
    assert len(on_disk(team, "roles")) == 1

    missing = await call(first, "find_role_by_name", name="Tester")
    assert missing.success and missing.result is None
    assert tool_calls.tool_message(missing, 1000)["content"] == "null"


async def test_built_in_roles_are_found_and_never_made_again(team: Team) -> None:
    agent = planner(team)
    worker = await ok(agent, "find_role_by_name", name="Worker")
    assert (worker["id"], worker["name"], worker["createdBy"], worker["builtin"]) == (
        "role-builtin-worker", "Worker", "system", True)
    assert "write_file" in worker["tools"] and "reply" not in worker["tools"]
    assert await ok(agent, "create_role", name="teller", rolePrompt="x") == await ok(
        agent, "find_role_by_name", name="Teller")
    assert on_disk(team, "roles") == []


async def test_a_role_gets_only_tools_its_creator_may_use(team: Team) -> None:
    agent = planner(team)
    error = await refused(agent, "create_role", name="Coder", rolePrompt="Write code.",
                          tools=["echo", "write_file", "no_such_tool"])
    assert error == ("A role cannot have tools its creator may not use: 'no_such_tool', "
                     "'write_file'")
    record = await call(agent, "create_role", name="Coder", rolePrompt="Write code.",
                        tools=["bash"])
    assert record.guidance is not None and "delegate" in record.guidance
    assert on_disk(team, "roles") == []

    # Default: every tool the creator may use, no more.
    made = await ok(agent, "create_role", name="Helper", rolePrompt="Help.")
    planner_may = {s["function"]["name"] for s in agent.registry.schemas(PLANNER)}
    assert set(made["tools"]) == planner_may and "write_file" not in made["tools"]

    # The root agent (no role) may use every tool, so it may make a role that writes files.
    root = Agent(workspace=team.workspace, agent_id="root")
    coder = await ok(root, "create_role", name="Coder", rolePrompt="Write code.",
                     tools=["write_file", "read_file"])
    assert (coder["tools"], coder["createdBy"]) == (["read_file", "write_file"], "root")


@pytest.mark.parametrize(("arguments", "message"), [
    ({"name": "   ", "rolePrompt": "x"}, "name cannot be empty"),
    ({"name": "n" * 101, "rolePrompt": "x"}, "name exceeds 100 characters (got 101)"),
    ({"name": "bad\x00name", "rolePrompt": "x"},
     "name cannot contain control or invisible format characters"),
    ({"name": "Coder", "rolePrompt": " \n "}, "rolePrompt cannot be empty"),
    ({"name": "Coder", "rolePrompt": "p" * 20_001},
     "rolePrompt exceeds 20000 characters (got 20001)"),
])
async def test_create_role_refuses_bad_arguments_and_stores_nothing(
        team: Team, arguments: dict[str, Any], message: str) -> None:
    assert await refused(planner(team), "create_role", **arguments) == message
    assert on_disk(team, "roles") == []


async def test_missing_arguments_are_refused_by_the_schema(team: Team) -> None:
    agent = planner(team)
    for tool, arguments, field in [("create_role", {"name": "Coder"}, "rolePrompt"),
                                   ("find_role_by_name", {}, "name"),
                                   ("put_artifact", {"type": "code"}, "content"),
                                   ("get_artifact", {"ref": 7}, "ref")]:
        record = await call(agent, tool, **arguments)
        assert not record.success and field in str(record.error), record.error
    assert on_disk(team, "roles") == on_disk(team, "artifacts") == []


def test_two_agents_creating_one_name_at_once_get_one_role(tmp_path: Path) -> None:
    store = RoleStore(Workspace(tmp_path / "ws"))
    made: list[str] = []
    go = threading.Barrier(8)

    def create(number: int) -> None:
        go.wait()
        role, _ = store.create("Analyst", f"prompt {number}", f"agent-{number}", [])
        made.append(role.id)

    threads = [threading.Thread(target=create, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 8 and len(set(made)) == 1
    assert [r.name for r in store.all() if not r.builtin] == ["Analyst"]


# -- artifacts ------------------------------------------------------------------------------


async def test_put_and_get_artifact_shapes(team: Team) -> None:
    worker = team.supervisor.make_agent(WORKER, "worker-1")
    content = {"title": "Design", "body": "Details…", "steps": [1, 2.5, None, True]}
    ref = await ok(worker, "put_artifact", type="document", content=content,
                   meta={"author": "architect", "version": "1.0"})
    assert re.fullmatch(f"artifact:{UUID}", ref)
    got = await ok(worker, "get_artifact", ref=ref)
    assert set(got) == {"id", "type", "content", "meta", "createdAt"}
    assert (f"artifact:{got['id']}", got["type"], got["content"], got["meta"]) == (
        ref, "document", content, {"author": "architect", "version": "1.0"})
    assert ISO.fullmatch(got["createdAt"])

    code = await ok(worker, "put_artifact", type="code", content="def add(a, b): return a + b")
    assert (await ok(worker, "get_artifact", ref=code))["meta"] == {}
    [saved] = [p for p in on_disk(team, "artifacts") if p.name == f"{got['id']}.json"]
    assert json.loads(saved.read_text())["createdBy"] == "worker-1"
    assert not [p for p in on_disk(team, "artifacts") if p.name.endswith(".tmp")]


async def test_artifacts_and_roles_come_back_in_a_new_team(tmp_path: Path) -> None:
    first = Team(workspace=tmp_path / "ws")
    ref = await ok(first.supervisor.make_agent(WORKER, "worker-1"), "put_artifact",
                   type="data", content=[{"city": "Rome", "score": 8}], meta={"n": 1})
    role = await ok(planner(first), "create_role", name="Critic", rolePrompt="Review work.",
                    tools=["echo"])

    second = Team(workspace=tmp_path / "ws")
    teller = second.teller
    got = await ok(teller, "get_artifact", ref=ref)
    assert (got["type"], got["content"], got["meta"]) == ("data", [{"city": "Rome",
                                                                    "score": 8}], {"n": 1})
    assert await ok(planner(second, 7), "find_role_by_name", name="critic") == role
    assert [r.name for r in RoleStore(second.workspace).all()] == [
        "Teller", "Planner", "Worker", "Critic"]


async def test_secrets_never_reach_the_artifact_file(team: Team) -> None:
    worker = team.supervisor.make_agent(WORKER, "worker-1")
    ref = await ok(worker, "put_artifact", type="config",
                   content={"api_key": "pa55-w0rd-very-secret-1234"}, meta={"for": "db"})
    text = next(p for p in on_disk(team, "artifacts")
                if p.name == ref.split(":")[1] + ".json").read_text()
    assert "pa55-w0rd-very-secret-1234" not in text
    assert (await ok(worker, "get_artifact", ref=ref))["content"]["api_key"] != (
        "pa55-w0rd-very-secret-1234")


async def test_an_artifact_masking_makes_too_large_is_refused_and_one_that_fits_reads_back(
        team: Team) -> None:
    """Masking can make what is written larger than what was given (a number under a
    secret name becomes "[REDACTED]"): the limits hold for what is written, so no put makes
    a file larger than the limits, or one get_artifact refuses to read back."""
    worker = team.supervisor.make_agent(WORKER, "worker-1")
    grows = [{"token": 1}] * 71_000  # 994,000 bytes as JSON, 1,775,000 once masked
    assert len(json.dumps(grows)) < 1_000_000
    assert await refused(worker, "put_artifact", type="data", content=grows) == (
        "content is 1,775,000 bytes as JSON once what looks like a secret is masked (as it "
        "is saved); the limit is 1,000,000: split it or write a file instead")
    assert await refused(worker, "put_artifact", type="data", content="x",
                         meta={"m": [{"token": 1}] * 1000}) == (
        "meta is 25,007 bytes as JSON once what looks like a secret is masked (as it is "
        "saved); the limit is 16,384: split it or write a file instead")
    assert on_disk(team, "artifacts") == []
    fits = [{"token": 1}] * 40_000  # exactly 1,000,000 bytes once masked
    ref = await ok(worker, "put_artifact", type="data", content=fits)
    [path] = on_disk(team, "artifacts")
    assert path.stat().st_size <= 1_000_000 + 16 * 1024 + 64 * 1024
    got = await ok(worker, "get_artifact", ref=ref)
    assert got["content"] == [{"token": "[REDACTED]"}] * 40_000


@pytest.mark.parametrize(("arguments", "message"), [
    ({"type": "   ", "content": "x"}, "type cannot be empty"),
    ({"type": "../../etc", "content": "x"}, "type must be a word such as 'document', "
     "'code' or 'text/csv' (letters, digits, _ . + / -), got '../../etc'"),
    ({"type": "t" * 101, "content": "x"}, "type exceeds 100 characters (got 101)"),
    ({"type": "text", "content": None}, "content is required (text, a number, a list or an "
     "object)"),
    ({"type": "text", "content": "x" * 1_000_000},
     "content is 1,000,002 bytes as JSON; the limit is 1,000,000: split it or write a file "
     "instead"),
    ({"type": "text", "content": "x", "meta": {"m": "y" * 20_000}},
     "meta is 20,009 bytes as JSON; the limit is 16,384"),
])
async def test_put_artifact_refuses_bad_input_and_stores_nothing(
        team: Team, arguments: dict[str, Any], message: str) -> None:
    worker = team.supervisor.make_agent(WORKER, "worker-1")
    assert await refused(worker, "put_artifact", **arguments) == message
    assert on_disk(team, "artifacts") == []


@pytest.mark.parametrize("ref", [
    "artifact:../../../etc/passwd",
    "artifact:../roles/x",
    "artifact:/etc/passwd",
    "../artifacts/x.json",
    "3f2b8c1e-4d5a-4e6f-8a9b-0c1d2e3f4a5b",
    "artifact:3F2B8C1E-4D5A-4E6F-8A9B-0C1D2E3F4A5B",
    "artifact:3f2b8c1e-4d5a-4e6f-8a9b-0c1d2e3f4a5b/../../x",
    "artifact:3f2b8c1e-4d5a-4e6f-8a9b-0c1d2e3f4a5b\n",
    "artifact:" + "a" * 5000,
])
async def test_hostile_references_are_refused_before_they_near_a_path(
        team: Team, ref: str) -> None:
    error = await refused(team.teller, "get_artifact", ref=ref)
    assert error.startswith("ref ")
    assert "must look like 'artifact:<uuid>'" in error or "valid artifact id" in error
    assert len(error) < 400


async def test_unknown_linked_and_damaged_artifacts_are_refused(team: Team,
                                                                tmp_path: Path) -> None:
    worker = team.supervisor.make_agent(WORKER, "worker-1")
    unknown = "artifact:3f2b8c1e-4d5a-4e6f-8a9b-0c1d2e3f4a5b"
    assert await refused(worker, "get_artifact", ref=unknown) == (
        f"no artifact {unknown}: check the reference put_artifact returned")

    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"id": "3f2b8c1e-4d5a-4e6f-8a9b-0c1d2e3f4a5b", "type": "x",
                                   "content": "stolen", "meta": {}, "createdAt": "t"}))
    folder = team.workspace.root / "team" / "artifacts"
    folder.mkdir(parents=True)
    (folder / "3f2b8c1e-4d5a-4e6f-8a9b-0c1d2e3f4a5b.json").symlink_to(outside)
    error = await refused(worker, "get_artifact", ref=unknown)
    assert "not a small regular file" in error and "stolen" not in error

    ref = await ok(worker, "put_artifact", type="text", content="mine")
    path = folder / f"{ref.split(':')[1]}.json"
    path.write_text(json.dumps({"id": "another", "content": "x"}))
    assert await refused(worker, "get_artifact", ref=ref) == (
        f"artifact {ref} is damaged on disk and cannot be read")


# -- a team handing work on -----------------------------------------------------------------


def hand_over(role: str, body: dict[str, Any]) -> Message:
    """Teller delegates; the Planner makes one Worker task; the Worker puts an artifact and
    names it; the Teller reads the artifact and replies with what it holds."""
    said = last(body)
    if role == TELLER:
        if said["role"] == "user" and said["content"].startswith("The work you delegated"):
            ref = re.search(f"artifact:{UUID}", said["content"])
            assert ref, said["content"]
            return Message(calls=[Call("get_artifact", json.dumps({"ref": ref.group(0)}))])
        if said["role"] == "user":
            return Message(calls=[delegate("draft a packing list")])
        if said["role"] == "tool" and '"content"' in said["content"]:
            items = json.loads(said["content"])["content"]["items"]
            return Message(calls=[Call("reply", json.dumps({"text": "Pack: " + ", ".join(
                items)}))])
        return Message(text="Done.")
    if role == PLANNER:
        if said["role"] == "user":
            return Message(calls=[delegate("write the packing list", priority=6)])
        return Message(text="Plan: one Worker writes the list.")
    assert first_prompt(body) == "write the packing list"
    if said["role"] == "user":
        return Message(calls=[Call("put_artifact", json.dumps({
            "type": "document", "content": {"items": ["passport", "charger"]},
            "meta": {"title": "packing list"}}))])
    return Message(text=f"The list is in {said['content']}")


async def test_a_worker_puts_an_artifact_and_the_teller_reads_it(tmp_path: Path) -> None:
    with RoleModel(hand_over) as server:
        team = make_team(server, tmp_path / "ws", max_workers=1)
        result = await team.arun("what should I pack?")
        assert not server.hook_errors, server.hook_errors

    assert result.status == "ok", result.error
    assert result.reply == "Pack: passport, charger"
    [planner_task] = result.tree["children"]
    [worker_task] = planner_task["children"]
    assert worker_task["status"] == "ok" and "artifact:" in worker_task["result"]

    calls = [r for r in team.ledger.records() if r.get("kind") == "tool_call"]
    put = next(r for r in calls if r["tool_name"] == "put_artifact")
    get = next(r for r in calls if r["tool_name"] == "get_artifact")
    assert (put["agent_id"], put["role"], put["success"]) == (
        worker_task["agent_id"], WORKER, True)
    assert (get["agent_id"], get["role"], get["success"]) == ("teller", TELLER, True)
    assert get["arguments"]["ref"] in worker_task["result"]
    assert team.ledger.verify().ok


def test_python_callers_get_the_same_refusals(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "ws")
    with pytest.raises(SocietyError, match="content must be JSON data"):
        ArtifactStore(workspace).put("data", {"when": object()}, None, "root")
    with pytest.raises(SocietyError, match="ref must look like 'artifact:<uuid>'"):
        ArtifactStore(workspace).get("../../secrets.json")
    assert not (tmp_path / "ws" / "team" / "artifacts").exists()


def test_a_role_file_holding_another_name_is_reported_not_trusted(tmp_path: Path) -> None:
    store = RoleStore(Workspace(tmp_path / "ws"))
    made, _ = store.create("Writer", "Write.", "root", [])
    [path] = store.folder.glob("*.json")
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "name": "Admin"}))
    with pytest.raises(SocietyError, match="holds another role"):
        store.find("Writer")
    path.write_text("{torn")
    with pytest.raises(SocietyError, match="not readable JSON"):
        store.find("writer")
    assert [r.name for r in store.all()] == ["Teller", "Planner", "Worker"]
