"""The organiser's model-assisted steps through real model doors: a whole run over
litellm's HTTP path to the scripted server, the offline demo model, and plan_create."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from scripted_server import Call, Message, ScriptedServer

from agent_kernel import Agent, Settings
from agent_kernel.engine.context import ContextWindow
from agent_kernel.engine.models import DemoModel, FunctionModel, ModelRequest, ModelTurn
from agent_kernel.engine.models.demo_organiser import answer
from agent_kernel.engine.registry import ToolContext
from agent_kernel.organiser.contacts import ContactStore
from agent_kernel.tools import plans

MODEL = "openai/test-model"


@pytest.fixture(autouse=True)
def limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plans, "LIMITS", plans.PlanLimits())


def _args(**values: Any) -> str:
    return json.dumps(values)


async def test_a_run_over_litellm_adds_a_todo_and_plans(tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.script(
            Message(calls=[Call("todo_update", _args(action="add", people=["Alice"],
                                                     content="Send Alice the report"))]),
            Message(text='{"status": "ok", "rewritten_content": '
                         '"Send Alice (tg:@alice) the report"}'),
            Message(calls=[Call("plan_create", _args(task="Write and send the report",
                                                     max_steps=2))]),
            Message(text=json.dumps({"plan": {
                "summary": "Write it, then send it.",
                "steps": [{"step": "Write the report", "status": "in_progress"},
                          {"step": "Send it to Alice", "status": "pending"},
                          {"step": "A third step beyond max_steps"}]}})),
            Message(text="Noted and planned."))
        agent = Agent(model=MODEL, workspace=tmp_path / "ws",
                      settings=Settings(api_base=server.base_url, api_key="sk-test-0123456789",
                                        retry_base_delay=0.01))
        ContactStore(agent.workspace).upsert({"contact_id": "tg:@alice",
                                              "contact_nickname": "Alice"})
        result = await agent.arun("Remind me to send Alice the report, and plan it")
        assert result.ok, result.error
        added, planned = result.tool_calls
        assert added.success and added.result["entry"]["content"] == \
            "Send Alice (tg:@alice) the report"
        assert planned.success
        assert [s["step"] for s in planned.result["plan"]["steps"]] == [
            "Write the report", "Send it to Alice"]
        asked = server.requests[1]
        assert asked["messages"][0]["content"].startswith("Contract: reference_resolve\n")
        assert asked.get("temperature") == 0
        payload = json.loads(asked["messages"][1]["content"])
        assert payload["allowed_ids"] == ["tg:@alice"]
        assert payload["input_raw"] == "Remind me to send Alice the report, and plan it"
        assert "tools" not in asked  # the organiser's question offers no tools
        assert server.requests[3]["messages"][0]["content"].startswith("Contract: plan_create")


async def test_broken_json_over_litellm_is_the_specs_error(tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.script(
            Message(calls=[Call("todo_update", _args(action="add", people=["Alice"],
                                                     content="Call Alice"))]),
            Message(text="Sure! Here is the rewritten text: Call Alice (tg:@alice)"),
            Message(text="It failed."))
        agent = Agent(model=MODEL, workspace=tmp_path / "ws",
                      settings=Settings(api_base=server.base_url, api_key="sk-test-0123456789",
                                        retry_base_delay=0.01))
        result = await agent.arun("Remind me to call Alice")
        (failed,) = result.tool_calls
        assert not failed.success
        assert failed.error is not None and failed.error.startswith(
            "Tool 'todo_update' execution failed: invalid reference_resolve response: ")
        assert not (agent.workspace.root / "state" / "TODO.WIP.md").exists()


def _ctx(agent: Agent, model: Any, prompt: str = "note it") -> ToolContext:
    agent.windows["run_t"] = ContextWindow(model, [{"role": "user", "content": prompt}],
                                           agent.settings)
    return ToolContext(agent=agent, run_id="run_t", agent_id=agent.agent_id,
                       workspace=agent.workspace)


async def _call(agent: Agent, ctx: ToolContext, name: str, **arguments: Any) -> Any:
    tool = agent.registry.get(name)
    assert tool is not None
    return await tool.invoke(tool.validate(arguments), ctx)


async def test_the_demo_model_does_the_steps_offline(tmp_path: Path) -> None:
    agent = Agent(workspace=tmp_path / "ws")  # the demo model
    ContactStore(agent.workspace).upsert({"contact_id": "tg:@alice",
                                          "contact_nickname": "Alice"})
    ctx = _ctx(agent, DemoModel())
    added = await _call(agent, ctx, "todo_update", action="add",
                        content="Send Alice the sales report", people=["Alice"])
    assert added["entry"]["content"] == "Send Alice (tg:@alice) the sales report"
    unknown = await _call(agent, ctx, "todo_update", action="add",
                          content="Ask Carol for the keys", people=["Carol"])
    assert unknown["warnings"] == ["reference_unresolved_write_raw"]
    again = await _call(agent, ctx, "todo_update", action="add",
                        content="Ask Carol for the keys!", people=["Carol"])
    assert again["updated_counts"]["open_count"] == 2  # the demo's dedup dropped the repeat
    done = await _call(agent, ctx, "todo_update", action="complete",
                       content="the sales report")
    assert done["entry"]["content"] == "Send Alice (tg:@alice) the sales report"
    with pytest.raises(ValueError, match="^no matching todo item in TODO.WIP.md$"):
        await _call(agent, ctx, "todo_update", action="complete", content="walk the dog")
    plan = await _call(agent, ctx, "plan_create",
                       task="Load the sales data; chart it by month; write a summary")
    assert [s["step"] for s in plan["plan"]["steps"]] == [
        "Load the sales data", "Chart it by month", "Write a summary"]
    assert [s["status"] for s in plan["plan"]["steps"]] == ["in_progress", "pending", "pending"]


def test_the_demo_answers_only_its_contracts() -> None:
    assert answer([{"role": "user", "content": "hello"}]) is None
    assert answer([{"role": "system", "content": "Contract: something_else"},
                   {"role": "user", "content": "{}"}]) is None
    said = answer([{"role": "system", "content": "Contract: semantic_match\nrules"},
                   {"role": "user", "content": json.dumps({"query": "report", "items": [
                       {"index": 0, "content": "Write the report"},
                       {"index": 1, "content": "Send the report"}]})}])
    assert json.loads(said or "") == {"status": "ambiguous", "candidate_indices": [0, 1]}
    broken = answer([{"role": "system", "content": "Contract: plan_create"},
                     {"role": "user", "content": '{"max_steps": "many"}'}])
    assert "error" in json.loads(broken or "")


async def test_plan_create_checks_what_the_model_wrote(tmp_path: Path) -> None:
    said: list[str] = []

    def model(request: ModelRequest) -> ModelTurn:
        return ModelTurn(text=said.pop(0))

    agent = Agent(workspace=tmp_path / "ws")
    ctx = _ctx(agent, FunctionModel(model, name="openai/test-model"))
    said.append(json.dumps({"summary": "legacy shape", "steps": [
        "first", {"step": "", "status": "done"}, {"step": "third", "status": "completed"}],
        "risks": ["rain", 3], "questions": "none"}))
    plan = (await _call(agent, ctx, "plan_create", task="x", style="terse"))["plan"]
    assert plan["steps"] == [{"step": "first", "status": "in_progress"},
                             {"step": "step 2", "status": "pending"},
                             {"step": "third", "status": "completed"}]
    assert plan["risks"] == ["rain"] and plan["questions"] == [] and plan["thought"] == ""
    said.append('{"plan": {"thought": "nothing useful"}}')
    with pytest.raises(ValueError, match="^invalid plan_create response: no summary"):
        await _call(agent, ctx, "plan_create", task="x")
    said.append("not json at all")
    with pytest.raises(ValueError, match="^invalid plan_create response: "):
        await _call(agent, ctx, "plan_create", task="x")
    plans.LIMITS.enabled = False
    with pytest.raises(Exception, match="^plan_create tool is disabled$"):
        await _call(agent, ctx, "plan_create", task="x")
    plans.LIMITS.enabled = True
    agent.windows.clear()
    outside = ToolContext(agent=agent, run_id="run_none", agent_id=agent.agent_id,
                          workspace=agent.workspace)
    with pytest.raises(ValueError, match=r"^plan_create unavailable \(missing llm client\)$"):
        await _call(agent, outside, "plan_create", task="x")
    schema = agent.registry.get("plan_create").parameters
    assert set(schema["properties"]) == {"task", "max_steps", "style", "model"}
    assert schema["required"] == ["task"]


def test_the_demo_model_uses_the_organiser_tools_from_plain_words(tmp_path: Path) -> None:
    agent = Agent(workspace=tmp_path / "ws")
    said = {}
    for prompt, tool in [("add contact Alice tg:@alice", "contacts_upsert"),
                         ("add a todo: send Alice the sales report", "todo_update"),
                         ("show my todos", "todo_list"),
                         ("done: the sales report", "todo_update"),
                         ("show my todos, done ones too", "todo_list"),
                         ("plan: load the sales data; chart it by month", "plan_create"),
                         ("list contacts", "contacts_list")]:
        result = agent.run(prompt)
        made = [c for c in result.tool_calls if c.tool_name != "find_tools"]
        assert [c.tool_name for c in made] == [tool], prompt
        assert made[0].success, made[0].error
        said[prompt] = result.reply
    assert "Added “send Alice (tg:@alice) the sales report” to your todo list" in \
        said["add a todo: send Alice the sales report"]
    assert "Ticked off" in said["done: the sales report"]
    assert said["show my todos, done ones too"].endswith(  # its own paragraph, not in a list
        "1 done.\n\nDone:\n- send Alice (tg:@alice) the sales report")
    assert "1. Load the sales data\n2. Chart it by month" in \
        said["plan: load the sales data; chart it by month"]
    assert "{" not in "".join(said.values())  # words, not JSON


def test_the_demo_model_sends_a_message_from_plain_words(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """``send Ana a message: ...``: the demo looks Ana up, asks to send to her contact, and
    says what happened; approved, the mail arrives; denied, nothing goes."""
    import uuid

    from mail_server import PASSWORD, USER, MailServer
    from tool_helpers import person

    from agent_kernel.channels import CONFIG, EmailConfig
    from agent_kernel.engine.approvals import DENY
    from agent_kernel.guards.web.auth import AuthProfile

    agent = Agent(workspace=tmp_path / "ws")
    ContactStore(agent.workspace).upsert({"contact_id": "email:ana@example.org",
                                          "contact_nickname": "Ana"})
    with MailServer(tmp_path) as mail:
        monkeypatch.setattr(CONFIG, "email", EmailConfig(
            host="127.0.0.1", port=mail.port, to="me@example.org", sender="agent@example.org",
            username=USER, verify=mail.ca))
        monkeypatch.setattr(CONFIG, "profiles", {"smtp": AuthProfile(
            hosts=["127.0.0.1"], token=PASSWORD)})
        person(agent, DENY)
        refused = agent.run("send Ana a message: the slides are ready")
        made = [c for c in refused.tool_calls if c.tool_name != "find_tools"]  # searched first
        assert [c.tool_name for c in made] == ["contacts_list", "contacts_send"]
        assert not made[1].success and mail.messages == []
        assert refused.reply.startswith("(offline demo model) The message to Ana was not sent:")
        agent = Agent(workspace=tmp_path / "ws")
        asked = person(agent)
        sent = agent.run("send Ana a message: the slides are ready")
        assert len(asked) == 1
        call = [c for c in sent.tool_calls if c.tool_name != "find_tools"][1]
        assert call.success and call.arguments["contact_id"] == "email:ana@example.org"
        assert uuid.UUID(str(call.arguments["session_id"])).version == 7
        [message] = mail.messages
        assert message["To"] == "ana@example.org"
        assert message.get_payload(decode=True).decode().strip() == "the slides are ready"
        assert sent.reply == "(offline demo model) I sent your message to Ana by e-mail."
        nobody = agent.run("send Bo a message: hello")
        assert nobody.reply.endswith("I found no contact called Bo, so I sent nothing.")
        assert len(mail.messages) == 1
