"""What a team may do before the supervisor says no: :class:`TeamLimits`.

One plain dataclass, checked when it is made, shared by the supervisor (queues, depth,
delegations, wall-clock per task), the society (spawned agents) and the budget (tokens
and cost): each reads the same object, so a limit changed between prompts holds for all.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agent_kernel.team.roles import ROLES


@dataclass
class TeamLimits:
    """What a team may do before the supervisor says no."""

    max_workers: int = 4
    max_planners: int = 1
    max_queued: int = 1000
    """Tasks waiting (queued or held) in the whole team."""
    max_delegations: int = 20
    """Delegations one run may make; past it the run is stopped."""
    max_depth: int = 2
    """Teller 0, Planner 1, Worker 2."""
    max_rounds: int = 5
    """Times the Teller may delegate again after results came back, per prompt."""
    max_agents: int = 16
    """Spawned agents (spec 004's ``spawn_agent``) alive at once in the whole team."""
    max_agent_depth: int = 3
    """How deep spawned agents nest: a built-in agent's child is 1, its child 2, ..."""
    timeouts: dict[str, float] = field(
        default_factory=lambda: {name: role.default_timeout for name, role in ROLES.items()})
    max_tree_tokens: int | None = 2_000_000
    """Tokens (prompt and completion) of every model call under one prompt to the Teller."""
    max_session_tokens: int | None = None
    """Tokens of the team's whole lifetime; None: no limit."""
    max_tree_cost: float | None = None
    """Dollars (as litellm prices the model) under one prompt; None: no limit."""
    max_session_cost: float | None = None
    """Dollars of the team's whole lifetime; None: no limit."""

    def __post_init__(self) -> None:
        for name in ("max_workers", "max_planners", "max_queued", "max_delegations",
                     "max_depth", "max_rounds", "max_agents", "max_agent_depth"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number of at least 1, got {value!r}")
        for name in ("max_tree_tokens", "max_session_tokens"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 1):
                raise ValueError(f"{name} must be a whole number of tokens of at least 1, or "
                                 f"None for no limit, got {value!r}")
        for name in ("max_tree_cost", "max_session_cost"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool)
                                      or not isinstance(value, (int, float))
                                      or not 0 < value < float("inf")):
                raise ValueError(f"{name} must be a number of dollars above 0, or None for no "
                                 f"limit, got {value!r}")


__all__ = ["TeamLimits"]
