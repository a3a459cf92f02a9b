"""``ToolContext.end_run_if_all``: a response whose calls all ask it, and succeed, ends the
run without another model call (a Planner's delegations alone); any other call in the
response, or a failed one, and the run goes on."""

from __future__ import annotations

from pathlib import Path

from scripted_model import ScriptedModel
from scripted_server import Call, Message

from agent_kernel.core.config import Settings
from agent_kernel.engine.agent import Agent
from agent_kernel.engine.registry import Tool, ToolContext, ToolError


def hand_on(job: str, ctx: ToolContext) -> str:
    """Hands a job on; refuses the job "bad".

    Args:
        job: The job.
    """
    if job == "bad":
        raise ToolError("refused")
    ctx.end_run_if_all("hand_on")
    return f"handed {job}"


def look(ctx: ToolContext) -> str:
    """Looks around."""
    return "seen"


def agent_for(model: ScriptedModel, workspace: Path) -> Agent:
    return Agent(model=model, workspace=workspace, tools=[Tool(hand_on), Tool(look)],
                 settings=Settings(api_key="sk-x"))


async def test_calls_that_all_close_end_the_run_with_that_responses_text(tmp_path):
    with ScriptedModel() as model:
        model.script(Message(text="two jobs out", calls=[
            Call("hand_on", '{"job": "a"}'), Call("hand_on", '{"job": "b"}')]),
            Message(text="a second call"))
        result = await agent_for(model, tmp_path).arun("go")
    assert (result.status, result.reply, result.ended_by) == ("ok", "two jobs out", "hand_on")
    assert len(model.requests) == 1
    assert [r.result for r in result.tool_calls] == ["handed a", "handed b"]


async def test_a_mixed_or_failed_response_goes_on(tmp_path):
    for calls in ([Call("hand_on", '{"job": "a"}'), Call("look", "{}")],
                  [Call("hand_on", '{"job": "a"}'), Call("hand_on", '{"job": "bad"}')]):
        with ScriptedModel() as model:
            model.script(Message(text="first", calls=calls), Message(text="closed"))
            result = await agent_for(model, tmp_path).arun("go")
        assert (result.status, result.reply, result.ended_by) == ("ok", "closed", None)
        assert len(model.requests) == 2
