"""Call one tool the way the loop does (schema first, then the function), play the
person who answers its approvals, and load the magics in a shell, for tool tests."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_kernel import Agent
from agent_kernel.core.events import Event, Question
from agent_kernel.engine.approvals import APPROVE
from agent_kernel.engine.models.llm import ToolCallRequest
from agent_kernel.engine.registry import ToolContext
from agent_kernel.engine.tool_calls import ToolCallRecord, execute

if TYPE_CHECKING:
    from agent_kernel.notebook.magics import AgentMagics


async def call_tool(agent: Agent, name: str, **arguments: Any) -> Any:
    """Validate ``arguments`` against ``name``'s schema and run it for ``agent``."""
    tool = agent.registry.get(name)
    assert tool is not None, name
    ctx = ToolContext(agent=agent, run_id="run_t", agent_id=agent.agent_id,
                      workspace=agent.workspace)
    return await tool.invoke(tool.validate(arguments), ctx)


def person(agent: Agent, answer: str = APPROVE) -> list[Question]:
    """A person at the notebook who answers every question with ``answer`` (from another
    thread, as a click does); returns what they were asked."""
    agent.questions.attach_answerer()
    asked: list[Question] = []

    def on_event(event: Event) -> None:
        if isinstance(event, Question):
            asked.append(event)
            threading.Timer(0.02, agent.questions.answer,
                            args=(event.question_id, answer)).start()

    agent.bus.subscribe(on_event)
    return asked


def notebook_open(agent: Agent) -> list[Question]:
    """A notebook open on ``agent`` whose person answers nothing by themselves: returns
    what they are asked, for the test to answer (or not)."""
    agent.questions.attach_answerer()
    asked: list[Question] = []

    def on_event(event: Event) -> None:
        if isinstance(event, Question):
            asked.append(event)

    agent.bus.subscribe(on_event)
    return asked


async def through_the_loop(agent: Agent, name: str, **arguments: Any) -> ToolCallRecord:
    """One call as the model makes it: parsed, prechecked, approved, run and recorded."""
    request = ToolCallRequest(id="call_1", name=name, arguments=json.dumps(arguments))
    return await execute(agent, request, "run_t")


@contextmanager
def loaded_magics(workspace: Path) -> Iterator[AgentMagics]:
    """``%load_ext agent_kernel`` in a fresh IPython shell with its own session tools, the
    agent on ``workspace``; unloaded again afterwards, whatever the test did."""
    from IPython.core.interactiveshell import InteractiveShell

    from agent_kernel.engine.user_tools import UserTools, session_tools
    from agent_kernel.notebook import magics as m

    shell = InteractiveShell()
    with session_tools(UserTools()):
        m.load_ipython_extension(shell)
    try:
        magics = m.current(shell)
        magics.workspace = str(workspace)
        yield magics
    finally:
        m.unload_ipython_extension(shell)
