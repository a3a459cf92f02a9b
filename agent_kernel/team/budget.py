"""Token and cost budgets of a team: per task tree (one prompt to the Teller) and per session.

Every model response of a team agent (Teller, Planner, Workers, spawned agents)
is added, as it comes, to its tree's totals and to the session's (the
:class:`~agent_kernel.team.Team`'s lifetime). A tree is kept under its *root
task* (``Task.tree_id``: one prompt to the Teller, inherited by every task
made under it), never under spec 002's ``traceId``: that is a label the
model may choose, and a fresh one must not start a fresh budget. Before each
model call the loop asks :meth:`TeamBudget.before_call`: once a budget is
spent the call is not made and the run ends with status ``limit`` and a
message naming the budget and the numbers. The first stop of
each budget in a tree is recorded in the ledger as ``budget_spent``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

from agent_kernel.team.queue import task_of

if TYPE_CHECKING:
    from agent_kernel.engine.agent import Agent
    from agent_kernel.team.board import TaskBoard
    from agent_kernel.team.limits import TeamLimits

SESSION = "session"



class TeamUsage(TypedDict, total=False):
    """What a team used (a prompt's tree, or the session): tokens, model calls, dollars
    (``cost`` None when litellm knows no price). Empty before anything was counted."""

    tokens: int
    prompt_tokens: int
    completion_tokens: int
    cost: float | None
    calls: int

@dataclass
class Spent:
    """Tokens and cost one tree (or the session) used so far."""

    usage: dict[str, int] = field(default_factory=dict)
    cost: float | None = None
    """None while no response had a known price."""
    calls: int = 0

    @property
    def tokens(self) -> int:
        """Prompt and completion tokens together (``add`` fills in a missing total)."""
        return self.usage.get("total_tokens", 0)

    def add(self, usage: dict[str, int], cost: float | None) -> None:
        """Count one model response."""
        self.calls += 1
        for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
            value = int(usage.get(key, 0) or 0)
            if key == "total_tokens" and not value:  # some providers leave it out
                value = int(usage.get("prompt_tokens", 0) or 0) + int(
                    usage.get("completion_tokens", 0) or 0)
            self.usage[key] = self.usage.get(key, 0) + value
        if cost is not None:
            self.cost = (self.cost or 0.0) + cost

    def summary(self) -> TeamUsage:
        """``{tokens, prompt_tokens, completion_tokens, cost, calls}``."""
        return {"tokens": self.tokens, "prompt_tokens": self.usage.get("prompt_tokens", 0),
                "completion_tokens": self.usage.get("completion_tokens", 0),
                "cost": self.cost, "calls": self.calls}


class TeamBudget:
    """The ``services.budget`` of every agent of one team."""

    def __init__(self, board: TaskBoard, limits: TeamLimits) -> None:
        self.board = board
        self.limits = limits
        """The team's limits (the one object, so a change between prompts holds here)."""
        self.trees: dict[str, Spent] = {}
        """What each task tree used, by its root task's id."""
        self.session = Spent()
        self._recorded: set[tuple[str, str]] = set()

    def tree(self, tree_id: str | None) -> Spent:
        """What the tree under root task ``tree_id`` used so far (empty for an unknown one)."""
        return self.trees.get(tree_id or "", Spent())

    def refusal(self, tree_id: str | None) -> tuple[str, str, float, float] | None:
        """``(budget, message, used, limit)`` of the first spent budget of a tree, or None."""
        limits, tree = self.limits, self.tree(tree_id)
        checks = [("max_tree_tokens", "this task tree", tree.tokens, limits.max_tree_tokens),
                  ("max_session_tokens", "this session", self.session.tokens,
                   limits.max_session_tokens),
                  ("max_tree_cost", "this task tree", tree.cost, limits.max_tree_cost),
                  ("max_session_cost", "this session", self.session.cost,
                   limits.max_session_cost)]
        for name, who, used, limit in checks:
            if limit is None or used is None or used < limit:
                continue
            if name.endswith("tokens"):
                message = (f"Token budget spent: {who} used {used:,} tokens of its "
                           f"{limit:,}; the run stops (TeamLimits.{name})")
            else:
                message = (f"Cost budget spent: {who} cost ${used:,.4f} of its "
                           f"${limit:,.4f}; the run stops (TeamLimits.{name})")
            return name, message, float(used), float(limit)
        return None

    def refused(self, tree_id: str | None) -> str | None:
        """The message when a budget of the tree ``tree_id`` (or the session) is spent."""
        found = self.refusal(tree_id)
        return found[1] if found else None

    async def before_call(self, agent: Agent, run_id: str) -> str | None:
        """None when ``agent`` may call its model; else why not (recorded once per tree)."""
        task = task_of(agent)
        tree_id = task.tree_id if task is not None else None
        found = self.refusal(tree_id)
        if found is None:
            return None
        name, message, used, limit = found
        if task is not None and (tree_id or "", name) not in self._recorded:
            self._recorded.add((tree_id or "", name))
            await self.board.record("budget_spent", task, agent_id=agent.agent_id,
                                    root_task_id=tree_id, budget=name, used=used,
                                    limit=limit, message=message)
        return message

    def spent(self, agent: Agent, run_id: str, usage: dict[str, int],
              cost: float | None) -> None:
        """Add one model response of ``agent`` to its tree's and the session's totals."""
        task = task_of(agent)
        tree_id = task.tree_id if task is not None else None
        if tree_id:
            self.trees.setdefault(tree_id, Spent()).add(usage, cost)
        self.session.add(usage, cost)
