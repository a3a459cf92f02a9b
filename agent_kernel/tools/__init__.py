"""The tool catalogue: the registry machinery and the built-in tool sets.

Each module here exposes ``TOOLS``; :func:`default_tools` gathers them for a
new agent. The specs' tool names and arguments are kept exactly.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from .base import Field, Tool, ToolArgumentError, ToolContext, ToolError, ToolRegistry, tool

# Each module lists its tools in ``TOOLS`` and may define ``attach(agent)``, called
# once per new Agent (to subscribe to its bus, register services, ...). Attach
# functions must stay cheap: heavy imports happen on first real use.
TOOL_MODULES = ("core", "human", "files", "commands", "triggers", "memory", "web", "javascript",
                "context", "team", "society")


def tool_modules() -> list[ModuleType]:
    """The built-in tool modules, in catalogue order."""
    return [importlib.import_module(f"{__name__}.{name}") for name in TOOL_MODULES]


def default_tools() -> list[Tool]:
    """Every built-in tool, in catalogue order."""
    return [t for module in tool_modules() for t in module.TOOLS]


__all__ = ["Field", "Tool", "ToolArgumentError", "ToolContext", "ToolError", "ToolRegistry",
           "default_tools", "tool"]
