"""agent-kernel: a working LLM agent inside a Jupyter kernel.

``%load_ext agent_kernel`` adds the ``%agent`` magics; ``Agent`` is the
Python API; ``@tool`` turns a typed function into a tool and ``@state``
registers a state provider for ``query_state``; ``sample_data("sales")`` is the small data set
shipped for the data notebook. Heavy libraries (litellm,
lancedb, ipywidgets) are imported only when first needed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from agent_kernel.app import Agent
    from agent_kernel.core.config import Settings
    from agent_kernel.core.ledger import Ledger
    from agent_kernel.core.sample_data import sample_data
    from agent_kernel.core.workspace import Workspace
    from agent_kernel.engine.agent import RunResult, ToolCallRecord
    from agent_kernel.engine.registry import Field, Tool, ToolContext, ToolError
    from agent_kernel.engine.user_tools import tool
    from agent_kernel.team import Team, TeamResult
    from agent_kernel.tools.core import state

__version__ = "0.1.0"

# Public names, imported on first access (PEP 562) so ``%load_ext`` does not pay for
# pydantic and the loop before the first run.
_LAZY = {"Agent": "app", "RunResult": "engine.agent", "ToolCallRecord": "engine.agent",
         "Settings": "core.config", "Ledger": "core.ledger", "Field": "engine.registry",
         "Tool": "engine.registry", "ToolContext": "engine.registry",
         "ToolError": "engine.registry", "tool": "engine.user_tools",
         "state": "tools.core", "Workspace": "core.workspace", "Team": "team.team",
         "TeamResult": "team.team", "sample_data": "core.sample_data"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agent_kernel' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def load_ipython_extension(ipython: InteractiveShell) -> None:
    """Called by ``%load_ext agent_kernel``."""
    from agent_kernel.notebook.magics import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: InteractiveShell) -> None:
    """Called by ``%unload_ext agent_kernel``."""
    from agent_kernel.notebook.magics import unload_ipython_extension as unload

    unload(ipython)


__all__ = ["Agent", "Field", "Ledger", "RunResult", "Settings", "Team", "TeamResult", "Tool",
           "ToolCallRecord", "ToolContext", "ToolError", "Workspace", "load_ipython_extension",
           "sample_data", "state", "tool", "unload_ipython_extension"]
