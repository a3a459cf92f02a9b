"""Questions stop the tool's clock: a person's answer may take longer than the tool may.

The issue's check is a tool whose timeout is 30 s asking for an approval answered after
40 s, and completing. These tests keep its shape with smaller numbers: the tool timeout is
1 s and the answer comes after 2.5 s. Each run goes through the real loop with the offline
demo model (a prompt naming a tool calls it), real tools and the real question channel;
answers come from another thread, as a widget's button callback does.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

from agent_kernel import Agent, Settings, ToolContext, tool
from agent_kernel.core.events import Question, QuestionAnswered
from agent_kernel.engine.approvals import APPROVAL_TIMEOUT, APPROVE
from agent_kernel.triggers import scheduler_for

LATE = 2.5
"""Seconds before a person answers: well past the 1 s tool timeout."""


def _agent(tmp_path: Path, *tools: Any) -> Agent:
    agent = Agent(workspace=str(tmp_path / "ws"), tools=tools,
                  settings=Settings(tool_timeout=1.0))
    agent.questions.attach_answerer()
    return agent


def _answer_late(agent: Agent, answer: str | None, delay: float = LATE) -> list[Any]:
    """Answer every question ``delay`` seconds after it appears (None: never answer).

    Returns the question events as they arrive, answers included.
    """
    seen: list[Any] = []

    def on_event(event: Any) -> None:
        if isinstance(event, (Question, QuestionAnswered)):
            seen.append(event)
        if isinstance(event, Question) and answer is not None:
            threading.Timer(delay, agent.questions.answer,
                            args=(event.question_id, answer)).start()

    agent.bus.subscribe(on_event)
    return seen


@tool(register=False)
async def consult(topic: str, ctx: ToolContext) -> str:
    """Ask the person about a topic.

    Args:
        topic: What to ask about.
    """
    reply = await ctx.ask(f"Is {topic} fine?", options=["yes", "no"], timeout=30)
    return f"{topic}: {reply['answer']} ({reply['source']})"


@tool(register=False)
async def survey(work: float, ctx: ToolContext) -> str:
    """Work, ask the person, then work again.

    Args:
        work: Seconds of work before and after the question.
    """
    await asyncio.sleep(work)
    reply = await ctx.ask("Carry on?", options=["yes", "no"], timeout=30)
    await asyncio.sleep(work)
    return reply["answer"]


@tool(register=False)
def crunch(seconds: float) -> str:
    """Busy work that takes a while and asks nobody.

    Args:
        seconds: How long to work.
    """
    time.sleep(seconds)
    return "done"


async def test_a_question_answered_after_the_tool_timeout_lets_the_tool_finish(
        tmp_path: Path) -> None:
    agent = _agent(tmp_path, consult)
    seen = _answer_late(agent, "yes")
    result = await agent.arun("consult 'the colour'")
    call = result.tool_calls[0]
    assert call.success, call.error
    assert call.result == "the colour: yes (user)"
    assert call.duration_ms >= LATE * 1000
    # The person is shown the question's own time to answer, not what is left of the tool's.
    assert seen[0].timeout == 30


async def test_an_approval_answered_after_the_tool_timeout_lets_the_tool_finish(
        tmp_path: Path) -> None:
    """A conditional trigger's condition is approved from inside the ``schedule`` tool."""
    agent = _agent(tmp_path)
    seen = _answer_late(agent, APPROVE)
    result = await agent.arun("when len(df) > 3, summarise df")
    try:
        call = next(c for c in result.tool_calls if c.tool_name != "find_tools")
        assert call.tool_name == "schedule"
        assert call.success, call.error
        assert call.result["taskId"] in scheduler_for(agent).triggers
        asked = seen[0]
        assert asked.kind == "approval" and asked.timeout == APPROVAL_TIMEOUT
        assert (seen[1].answer, seen[1].source) == (APPROVE, "user")
    finally:
        await scheduler_for(agent).close()


async def test_a_question_from_a_sync_tools_thread_stops_its_clock_too(tmp_path: Path) -> None:
    loop = asyncio.get_running_loop()

    @tool(register=False)
    def consult_in_thread(topic: str, ctx: ToolContext) -> str:
        """Ask the person from the tool's own thread.

        Args:
            topic: What to ask about.
        """
        asked = asyncio.run_coroutine_threadsafe(ctx.ask(f"Is {topic} fine?", timeout=30), loop)
        return asked.result()["answer"]

    agent = _agent(tmp_path, consult_in_thread)
    _answer_late(agent, "fine by me")
    result = await agent.arun("consult_in_thread 'the plan'")
    call = result.tool_calls[0]
    assert call.success, call.error
    assert call.result == "fine by me"


async def test_a_timed_out_approval_says_so(tmp_path: Path) -> None:
    """The approval's own timeout ends it, though it is longer than the tool's."""
    agent = _agent(tmp_path)
    agent.approvals.timeout = 1.5
    _answer_late(agent, None)
    result = await agent.arun("when len(df) > 3, summarise df")
    try:
        call = next(c for c in result.tool_calls if c.tool_name != "find_tools")
        assert not call.success
        assert call.summary is not None
        assert "no one answered the approval in time" in call.summary
        assert "the approval timed out" in (call.error or "")
        assert "exceeded" not in (call.error or "")
        assert not scheduler_for(agent).triggers
    finally:
        await scheduler_for(agent).close()


async def test_work_outside_a_question_still_times_out(tmp_path: Path) -> None:
    agent = _agent(tmp_path, crunch)
    result = await agent.arun("crunch 2.5")
    call = result.tool_calls[0]
    assert not call.success
    assert "exceeded 1s timeout" in (call.error or "")
    assert call.summary == "crunch timed out after 1 s"


async def test_work_before_and_after_a_question_both_count(tmp_path: Path) -> None:
    """0.6 s of work, a question answered quickly, 0.6 s more: 1.2 s counted of 1 s allowed."""
    agent = _agent(tmp_path, survey)
    seen = _answer_late(agent, "yes", delay=0.3)
    result = await agent.arun("survey 0.6")
    call = result.tool_calls[0]
    assert [type(e) for e in seen] == [Question, QuestionAnswered]
    assert seen[1].source == "user"  # the question ended well before the time ran out
    assert not call.success
    assert "exceeded 1s timeout" in (call.error or "")


async def test_work_around_a_long_wait_for_a_person_fits_in_the_timeout(
        tmp_path: Path) -> None:
    """0.25 s of work, a question answered after 2.5 s, 0.25 s more: 0.5 s counted."""
    agent = _agent(tmp_path, survey)
    _answer_late(agent, "yes")
    result = await agent.arun("survey 0.25")
    call = result.tool_calls[0]
    assert call.success, call.error
    assert call.result == "yes"
