"""The composition root: the agent a person gets from ``agent_kernel.Agent``, ``%agent``
and ``python -m agent_kernel run``, assembled from the floors below.

The engine's :class:`~agent_kernel.engine.agent.Agent` knows no feature; here it is given
every built-in tool set (:func:`~agent_kernel.team.toolsets.default_toolsets`) and the
team's permission hook, which keeps the team's tools for agents inside a team and tells
the model so. A team builds its own agents the same way (:mod:`agent_kernel.team`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agent_kernel.channels.relay import PhoneRelay
from agent_kernel.core.config import DEMO_MODEL, Settings
from agent_kernel.core.workspace import Workspace
from agent_kernel.engine import agent as engine
from agent_kernel.engine.agent import SYSTEM_PROMPT
from agent_kernel.engine.models import Model
from agent_kernel.engine.registry import Tool
from agent_kernel.engine.user_tools import UserTools
from agent_kernel.team.roles import ROLE_PERMITS
from agent_kernel.team.toolsets import default_toolsets


class Agent(engine.Agent):
    """An agent with the built-in tools (``builtin_tools=False``: only ``tools``)."""

    def __init__(
        self,
        model: str | Model = DEMO_MODEL,
        workspace: str | Workspace | None = None,
        tools: Iterable[Tool | Any] | None = None,
        *,
        agent_id: str = "agent",
        role: str | None = None,
        settings: Settings | None = None,
        system_prompt: str | None = SYSTEM_PROMPT,
        builtin_tools: bool = True,
        user_tools: UserTools | None = None,
    ) -> None:
        super().__init__(model, workspace, tools, agent_id=agent_id, role=role,
                         settings=settings, system_prompt=system_prompt,
                         toolsets=default_toolsets() if builtin_tools else (),
                         permission_hook=ROLE_PERMITS, user_tools=user_tools)
        # Questions nobody answers here may reach the person's phone (inert until a
        # channel is configured: agent_kernel.channels.CONFIG).
        self.questions.remote = PhoneRelay(self.ledger, self.bus, agent_id)


__all__ = ["Agent"]
