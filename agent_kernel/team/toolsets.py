"""The tool sets every agent of a team is built with: the built-in sets of
:mod:`agent_kernel.tools` and the team's own (``delegate`` and spec 004's society),
each role cut down by :data:`~agent_kernel.team.roles.ROLE_PERMITS`. ``app.py`` gives a
single agent the same sets, so an agent outside a team is told what it is missing."""

from __future__ import annotations

from agent_kernel.engine.registry import Tool, Toolset


def default_toolsets() -> list[Toolset]:
    """Every built-in tool set, in catalogue order."""
    from agent_kernel.team import society_tools, tools
    from agent_kernel.tools import tool_modules

    return [*tool_modules(), tools, society_tools]


def default_tools() -> list[Tool]:
    """Every built-in tool, in catalogue order."""
    return [t for toolset in default_toolsets() for t in toolset.TOOLS]
