"""Call one tool the way the loop does (schema first, then the function), for tool tests."""

from __future__ import annotations

from typing import Any

from agent_kernel import Agent
from agent_kernel.engine.registry import ToolContext


async def call_tool(agent: Agent, name: str, **arguments: Any) -> Any:
    """Validate ``arguments`` against ``name``'s schema and run it for ``agent``."""
    tool = agent.registry.get(name)
    assert tool is not None, name
    ctx = ToolContext(agent=agent, run_id="run_t", agent_id=agent.agent_id,
                      workspace=agent.workspace)
    return await tool.invoke(tool.validate(arguments), ctx)
