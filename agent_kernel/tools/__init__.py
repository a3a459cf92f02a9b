"""The tool catalogue: the registry machinery and the built-in tool sets.

Each module here exposes ``TOOLS``; :func:`default_tools` gathers them for a
new agent. The specs' tool names and arguments are kept exactly.
"""

from __future__ import annotations

from .base import Field, Tool, ToolArgumentError, ToolContext, ToolError, ToolRegistry, tool


def default_tools() -> list[Tool]:
    """Every built-in tool, in catalogue order."""
    from . import core

    tools: list[Tool] = []
    for module in (core,):
        tools.extend(module.TOOLS)
    return tools


__all__ = ["Field", "Tool", "ToolArgumentError", "ToolContext", "ToolError", "ToolRegistry",
           "default_tools", "tool"]
