"""The model seam: one ``complete`` for litellm, the demo and a function, and what the
agent, the context window and the team make of a model they are given."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import pytest

from agent_kernel import Agent, Settings
from agent_kernel.core.events import RunStarted, TextDelta
from agent_kernel.engine.context import SUMMARY_REQUEST
from agent_kernel.engine.models import (
    DemoModel,
    FunctionModel,
    LitellmModel,
    Model,
    ModelRequest,
    ModelTurn,
    call,
    resolve,
)
from agent_kernel.team import Team
from agent_kernel.team.roles import PLANNER, TELLER, WORKER


def test_a_name_is_resolved_once_and_a_model_is_kept() -> None:
    assert isinstance(resolve("demo"), DemoModel)
    litellm_model = resolve("openai/gpt-4o-mini")
    assert isinstance(litellm_model, LitellmModel) and litellm_model.name == "openai/gpt-4o-mini"
    mine = FunctionModel(lambda request: "hi", name="mine")
    assert resolve(mine) is mine
    with pytest.raises(ValueError, match="unknown provider 'opnai'"):
        resolve("opnai/gpt-4o")


async def test_a_function_model_answers_a_run_and_is_told_the_role(tmp_path) -> None:
    """A plain function from the request to a turn: tool calls get ids, usage is
    estimated, the text streams, and the agent's role and tools come with the request."""
    seen: list[ModelRequest] = []

    def answer(request: ModelRequest) -> ModelTurn | str:
        seen.append(request)
        if request.last["role"] == "user":
            return ModelTurn(tool_calls=[call("echo", value="one"), call("echo", {"value": "2"})])
        return "echoed " + " and ".join(m["content"] for m in request.messages
                                        if m["role"] == "tool")

    model = FunctionModel(answer, name="scripted")
    agent = Agent(model=model, workspace=tmp_path, role="reviewer")
    events: list[Any] = []
    agent.bus.subscribe(events.append)
    result = await agent.arun("echo twice")

    assert result.ok and result.reply == "echoed one and 2"
    assert agent.model == "scripted" and agent.chat_model is model and result.model == "scripted"
    assert [e.model for e in events if isinstance(e, RunStarted)] == ["scripted"]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["echoed one and 2"]
    assert [request.role for request in seen] == ["reviewer", "reviewer"]
    assert "echo" in seen[0].tool_names and seen[0].system.startswith("You are agent-kernel")
    ids = [c.call_id for c in result.tool_calls]
    assert len(set(ids)) == 2 and all(i.startswith("call_") for i in ids)
    assert result.usage["prompt_tokens"] > 0 and result.usage["completion_tokens"] > 0


async def test_an_async_function_model_may_wait(tmp_path) -> None:
    async def answer(request: ModelRequest) -> str:
        await asyncio.sleep(0.01)
        return f"asked by {request.role}"

    result = await Agent(model=FunctionModel(answer), workspace=tmp_path).arun("hello")
    assert result.ok and result.reply == "asked by None"


async def test_a_function_model_must_answer_a_turn(tmp_path) -> None:
    model = FunctionModel(lambda request: 42)  # type: ignore[arg-type,return-value]
    result = await Agent(model=model, workspace=tmp_path).arun("hello")
    assert result.status == "error"
    assert "a model function returns a ModelTurn or a str, got int" in str(result.error)


async def test_a_run_may_name_another_model(tmp_path) -> None:
    agent = Agent(workspace=tmp_path)
    result = await agent.arun("hello", model=FunctionModel(lambda r: "from the function"))
    assert (result.model, result.reply) == ("function", "from the function")
    assert agent.model == "demo"


def test_the_demo_model_plays_a_team_role_it_is_told(tmp_path) -> None:
    """The role comes through the seam, not from the instructions: a Planner with no
    system prompt at all still splits the research into one delegation per city."""
    messages = [{"role": "user", "content": "research Lisbon, Kyoto and Montreal"}]
    tools = [{"type": "function", "function": {"name": "delegate", "parameters": {}}}]
    planner = asyncio.run(DemoModel().complete(messages, tools, Settings(), role=PLANNER))
    prompts = [json.loads(c.arguments)["prompt"] for c in planner.tool_calls]
    assert [p.split(":")[0] for p in prompts] == [
        "Research Lisbon", "Research Kyoto", "Research Montreal"]
    alone = asyncio.run(DemoModel().complete(messages, tools, Settings(), role=None))
    assert alone.tool_calls == []  # the single demo model's rules: no delegation


async def test_a_team_runs_on_a_function_model_that_tells_roles_apart(tmp_path) -> None:
    """The model a Team is given reaches every member, each asking as its role."""
    asked: list[str | None] = []

    def answer(request: ModelRequest) -> ModelTurn | str:
        asked.append(request.role)
        said = request.last
        if request.role == TELLER and said["role"] == "user" \
                and not said["content"].startswith("The work you delegated"):
            return ModelTurn(tool_calls=[call("delegate", prompt="look it up")])
        if request.role == PLANNER and said["role"] == "user":
            return ModelTurn(tool_calls=[call("delegate", prompt="find it")])
        return f"{request.role} done"

    team = Team(model=FunctionModel(answer, name="roles"), workspace=tmp_path,
                settings=Settings(headless_approval="allow"))
    result = await team.arun("find something")
    assert result.status == "ok", result.error
    assert result.reply == "teller done"
    assert {TELLER, PLANNER, WORKER} <= set(asked)
    [planner] = result.tree["children"]
    assert planner["children"][0]["result"] == "worker done"
    assert team.teller.model == "roles"


async def test_compaction_asks_the_runs_model_through_the_seam(tmp_path) -> None:
    """A window that fills is summarised by the same model, asked without a role."""
    summaries: list[ModelRequest] = []

    def answer(request: ModelRequest) -> str:
        if request.system == SUMMARY_REQUEST:
            summaries.append(request)
            return "The person told stories."
        return "ok " + "word " * 200

    agent = Agent(model=FunctionModel(answer), workspace=tmp_path, builtin_tools=False,
                  role="teller", settings=Settings(context_window=3000))
    for k in range(8):
        assert (await agent.arun(f"story {k}: " + "tale " * 300)).ok
    compactions = [r for r in agent.ledger.records() if r.get("kind") == "context_compacted"]
    assert compactions and all(r["summary_by"] == "model" for r in compactions)
    assert summaries and all(s.role is None and s.tools == [] for s in summaries)
    assert compactions[0]["summary"] == "The person told stories."


def test_a_litellm_model_imports_litellm_only_when_it_completes(tmp_path) -> None:
    """Building agents on a litellm model (and the whole seam) imports no litellm."""
    code = ("import sys\nfrom agent_kernel import Agent\nimport agent_kernel.engine.models\n"
            "agent = Agent(model='openai/gpt-4o-mini', workspace=sys.argv[1])\n"
            "print(agent.model, agent.chat_model.needs_loading(), 'litellm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                         text=True, timeout=120, check=True)
    assert out.stdout.split() == ["openai/gpt-4o-mini", "True", "False"]


def test_every_model_is_a_model() -> None:
    for model in (DemoModel(), LitellmModel("openai/gpt-4o"), FunctionModel(lambda r: "")):
        assert isinstance(model, Model) and str(model) == model.name
