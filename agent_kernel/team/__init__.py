"""A team of agents in the kernel: a Teller, Planners and Workers under one supervisor.

``Team(model=..., workspace=..., max_workers=4).run(prompt)`` answers a
prompt the way spec 000's system does: the Teller talks with the person and
delegates, the Planner splits the work with priorities, Workers do it, and
the results flow back to the Teller. :mod:`.roles` holds the permission
table, :mod:`.queue` the tasks and priority queues, :mod:`.supervisor` the
routing and limits, :mod:`.team` the entry point. See ``docs/team.md``.

Only :mod:`.roles` is imported by the agent itself; ``Team`` is imported on
first use, so ``%load_ext agent_kernel`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_kernel.team.supervisor import Supervisor, TeamLimits
    from agent_kernel.team.team import Team, TeamResult

__all__ = ["Supervisor", "Team", "TeamLimits", "TeamResult"]


def __getattr__(name: str) -> Any:
    if name in ("Team", "TeamResult"):
        from agent_kernel.team import team

        return getattr(team, name)
    if name in ("Supervisor", "TeamLimits"):
        from agent_kernel.team import supervisor

        return getattr(supervisor, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
