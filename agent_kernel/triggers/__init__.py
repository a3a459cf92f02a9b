"""Triggers: work an agent does later, while the kernel lives, and again in the next kernel.

``scheduler_for(agent)`` gives the agent's :class:`TriggerScheduler` (one per
agent, kept in ``agent.services.triggers``). The model makes triggers with
the tools in :mod:`agent_kernel.tools.triggers`; people can use the Python API::

    triggers = scheduler_for(agent)
    triggers.every(3600, "check the build")
    triggers.when({"kind": "expression", "expression": "len(df) > 1000"}, "summarise df")

See ``docs/triggers.md`` for the kinds, the limits and how restoring works.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_kernel.engine.registry import ToolHost
    from agent_kernel.triggers.scheduler import TriggerScheduler

# Called with every new scheduler; the notebook extension adds one that hands the kernel's
# namespace and the panel display to schedulers made in this kernel. Process-wide: a kernel
# runs one notebook, and the last ``%load_ext`` wires (two shells in one process would
# share it; the notebook's magics do not yet own it).
WIRING: list[Callable[[Any], None]] = []


def existing_scheduler(agent: ToolHost) -> TriggerScheduler | None:
    """The agent's scheduler if one was made (``agent.services.triggers``), else None."""
    existing = agent.services.triggers
    if existing is None:
        return None
    from agent_kernel.triggers.scheduler import TriggerScheduler

    if not isinstance(existing, TriggerScheduler):
        raise TypeError(f"agent.services.triggers is a {type(existing).__name__}, "
                        "not a TriggerScheduler")
    return existing


def scheduler_for(agent: ToolHost, **options: Any) -> TriggerScheduler:
    """The agent's scheduler, made (not started) on first use; ``options`` go to a new one."""
    existing = existing_scheduler(agent)
    if existing is not None:
        for name, value in options.items():
            setattr(existing, name, value)
        return existing
    from agent_kernel.triggers.scheduler import TriggerScheduler

    made = TriggerScheduler(agent, **options)
    agent.services.triggers = made
    for wire in list(WIRING):
        wire(made)
    return made


__all__ = ["WIRING", "existing_scheduler", "scheduler_for"]
