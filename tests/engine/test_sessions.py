"""Two sessions, or two agents, in one process share nothing a tool or a service holds:
``@tool`` registers in the session's :class:`UserTools`, services are per agent and
typed (``AgentServices``), and a tool's back channels are its call's own fields."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

import agent_kernel
from agent_kernel import Agent
from agent_kernel.engine import tool_calls
from agent_kernel.engine.models.llm import ToolCallRequest
from agent_kernel.engine.registry import Tool, ToolContext, TurnState
from agent_kernel.engine.services import AgentServices
from agent_kernel.engine.user_tools import INTERPRETER_TOOLS, UserTools, session_tools
from agent_kernel.tools.core import query_state


def test_user_tools_belong_to_the_session_that_registered_them(tmp_path: Path) -> None:
    first, second = UserTools(), UserTools()
    with session_tools(first):
        @agent_kernel.tool
        def sessions_only_first(words: str) -> str:
            """Only the first session has it."""
            return words

        mine = Agent(workspace=tmp_path / "a")
    with session_tools(second):
        theirs = Agent(workspace=tmp_path / "b")
    plain = Agent(workspace=tmp_path / "c")
    given = Agent(workspace=tmp_path / "d", user_tools=first)
    assert "sessions_only_first" in mine.registry and "sessions_only_first" in given.registry
    assert "sessions_only_first" not in theirs.registry
    assert "sessions_only_first" not in plain.registry  # the interpreter's session
    assert "sessions_only_first" not in INTERPRETER_TOOLS and len(second) == 0
    assert [t.name for t in first.tools()] == ["sessions_only_first"]


def test_state_providers_belong_to_their_session(tmp_path: Path) -> None:
    first = UserTools()
    with session_tools(first):
        @agent_kernel.state("sessions_cash")
        def cash() -> int:
            return 42

    mine, theirs = (Agent(workspace=tmp_path / "a", user_tools=first),
                    Agent(workspace=tmp_path / "b"))

    async def ask(agent: Agent) -> object:
        ctx = ToolContext(agent=agent, run_id="run_q", agent_id=agent.agent_id,
                          workspace=agent.workspace)
        return await query_state("sessions_cash", ctx)

    assert asyncio.run(ask(mine)) == 42
    with pytest.raises(ValueError, match="No state provider registered for 'sessions_cash'"):
        asyncio.run(ask(theirs))
    assert "sessions_cash" not in INTERPRETER_TOOLS.state_names()


def test_every_agent_has_its_own_services(tmp_path: Path) -> None:
    one, two = Agent(workspace=tmp_path / "a"), Agent(workspace=tmp_path / "b")
    assert isinstance(one.services, AgentServices) and one.services is not two.services
    one.services.memory_notices.add("keyword search only")
    assert two.services.memory_notices == set()
    assert one.services.history_writer is not None  # the memory tool set's attach
    assert one.services.history_writer is not two.services.history_writer
    assert one.services.team is None and one.services.budget is None
    with pytest.raises(AttributeError):
        one.services.memroy = None  # type: ignore[attr-defined]  # a misspelt service


def test_the_back_channels_are_the_calls_own(tmp_path: Path) -> None:
    """end_run lands on the response's TurnState; each sync tool's thread on its own call."""
    started = threading.Event()

    def slow(ctx: ToolContext) -> str:
        """Waits longer than its timeout."""
        started.set()
        threading.Event().wait(1.0)
        return "late"

    def ends(ctx: ToolContext) -> str:
        """Ends the run."""
        ctx.end_run("ends")
        return "done"

    agent = Agent(workspace=tmp_path, tools=[Tool(slow, timeout=0.2), Tool(ends)],
                  builtin_tools=False)
    turn = TurnState(trigger={"trace_id": "t-1"})

    async def both() -> list[tool_calls.ToolCallRecord]:
        return list(await asyncio.gather(
            tool_calls.execute(agent, ToolCallRequest("c1", "slow", "{}"), "run_s", turn),
            tool_calls.execute(agent, ToolCallRequest("c2", "ends", "{}"), "run_s", turn)))

    slow_record, ends_record = asyncio.run(both())
    assert turn.ended_by == "ends" and ends_record.success
    assert started.is_set() and not slow_record.success
    assert "still running in the background" in (slow_record.error or "")
    alone = TurnState()
    asyncio.run(tool_calls.execute(agent, ToolCallRequest("c3", "slow", "{}"), "run_t", alone))
    assert alone.ended_by is None
