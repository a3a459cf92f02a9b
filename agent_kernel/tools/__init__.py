"""The built-in tool sets an agent is given by whoever builds it (``app.py``, the team).

Each module here exposes ``TOOLS``; :func:`tool_modules` lists them in catalogue
order. The team's own tool sets (``delegate``, spec 004's society) live in
:mod:`agent_kernel.team`. The specs' tool names and arguments are kept exactly.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from agent_kernel.engine.registry import (
    Field,
    Tool,
    ToolArgumentError,
    ToolContext,
    ToolError,
    ToolRegistry,
)
from agent_kernel.engine.user_tools import tool

# Each module lists its tools in ``TOOLS`` and may define ``attach(agent)``, called
# once per new Agent (to subscribe to its bus, register services, ...). Attach
# functions must stay cheap: heavy imports happen on first real use.
TOOL_MODULES = ("core", "human", "files", "commands", "triggers", "memory", "web", "javascript",
                "context", "variables", "notebook_errors", "python", "cells",
                "todos", "contacts", "plans", "messaging", "find")


def tool_modules() -> list[ModuleType]:
    """The built-in tool modules, in catalogue order."""
    return [importlib.import_module(f"{__name__}.{name}") for name in TOOL_MODULES]


__all__ = ["Field", "Tool", "ToolArgumentError", "ToolContext", "ToolError", "ToolRegistry",
           "tool"]
