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

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_kernel.engine.registry import ToolHost
    from agent_kernel.triggers.scheduler import TriggerScheduler


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
    """The agent's scheduler, made (not started) on first use; ``options`` go to a new one.

    A new scheduler is handed to the agent's session (``agent.user_tools.wire_scheduler``):
    in a notebook that gives it the shell's namespace and panel display, so two shells in
    one process wire their own agents' schedulers; outside a notebook there is none."""
    existing = existing_scheduler(agent)
    if existing is not None:
        for name, value in options.items():
            setattr(existing, name, value)
        return existing
    from agent_kernel.triggers.scheduler import TriggerScheduler

    made = TriggerScheduler(agent, **options)
    agent.services.triggers = made
    wire = agent.user_tools.wire_scheduler  # the agent's session's (a notebook's), if any
    if wire is not None:
        wire(made)
    return made


__all__ = ["existing_scheduler", "scheduler_for"]
