"""The team tool: ``delegate``, as specs 000 and 002 define it.

``delegate`` hands a piece of work on: a Teller's goes to the planner queue,
a Planner's is held until its run ends and then goes on the worker queue
(see :mod:`agent_kernel.team.supervisor`). A response of delegations alone ends
the caller's run: nothing is left for another model call to do until the work
comes back. ``type``, ``condition`` and ``priority`` are the Planner's alone
(spec 000); a Teller passing them is refused, not silently ignored. A
conditional delegation is code the model wrote: the person approves the
condition first, exactly as for ``schedule``, and it becomes a trigger whose
firings are worker tasks. ``traceId`` is spec 002's: it ties the task and
everything under it to one piece of work in the records, and is inherited when
not given. It is a label only: the tree's budgets are kept under the prompt's
root task, so a new ``traceId`` never starts a new budget. The tool is offered
only inside a team.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

from agent_kernel.engine.agent import Agent
from agent_kernel.engine.registry import Field, Tool, ToolContext, ToolError
from agent_kernel.tools.triggers import ConditionArg, ConditionNotApproved

if TYPE_CHECKING:
    from agent_kernel.team.supervisor import Supervisor

PLANNER_ONLY = ("type", "condition", "priority")


def team_member(ctx: ToolContext, refusal: ToolError) -> tuple[Supervisor, Agent]:
    """The team of the calling agent and the agent, or ``refusal`` raised outside a team.

    Only a :class:`~agent_kernel.team.supervisor.Supervisor` puts itself in
    ``services.team`` (when it makes a member), so the cast is what the team put there;
    it is not imported at run time because the supervisor imports this module's tool set.
    """
    team = ctx.agent.services.team
    if team is None or not isinstance(ctx.agent, Agent):
        raise refusal
    return cast("Supervisor", team), ctx.agent


async def delegate(
    prompt: Annotated[str, Field(min_length=1, max_length=10000)],
    ctx: ToolContext,
    type: Literal["oneshot", "conditional"] | None = None,  # noqa: A002 - the spec's name
    condition: ConditionArg | None = None,
    priority: Annotated[int | None, Field(ge=0, le=10)] = None,
    timeout: Annotated[float | None, Field(gt=0)] = None,
    traceId: Annotated[str | None, Field(min_length=1, max_length=200)] = None,  # noqa: N803
) -> dict[str, str]:
    """Delegate a task: the Teller's go to the Planner, the Planner's to Workers.

    A response of delegations alone ends your run there (its text is what you say now):
    the Teller hears back when the work has ended; a Planner delegates every piece in one
    response, and its Workers start then.

    Args:
        prompt: The task, self-contained: the one who does it sees nothing else.
        type: oneshot (default) or conditional (runs each time condition fires). Planner only.
        condition: Required for conditional: {"kind": "expression", "expression":
            "len(df) > 1000"}, {"kind": "file", "path": "out.csv"} or {"kind": "variable",
            "name": "df"}. The person approves it first. Planner only.
        priority: 0 to 10, higher runs first (default 5). Planner only.
        timeout: Seconds the task may take; null for its role's default.
        traceId: Optional id tying this task and all work under it together.
    """
    from agent_kernel.team.roles import TELLER

    team, agent = team_member(
        ctx, ToolError("delegate works only inside a team (agent_kernel.Team)"))
    given = {"type": type, "condition": condition, "priority": priority}
    if ctx.agent.role == TELLER and any(v is not None for v in given.values()):
        named = ", ".join(n for n in PLANNER_ONLY if given[n] is not None)
        raise ToolError(
            f"Only the Planner may set {named}; the Teller delegates with prompt, timeout "
            "and traceId only",
            summary=f"the Teller cannot set {named}",
            guidance="Call delegate again with just the prompt: the Planner decides types, "
                     "conditions and priorities.")
    kind = type or "oneshot"
    if kind == "conditional" and condition is None:
        raise ToolError("condition is required when type is 'conditional', e.g. "
                        '{"kind": "expression", "expression": "len(df) > 1000"}')
    if kind == "oneshot" and condition is not None:
        raise ToolError("condition is only used with type 'conditional'")
    fields: dict[str, Any] = {"type": kind, "priority": 5 if priority is None else priority,
                              "timeout": timeout, "trace_id": traceId}
    if kind == "oneshot":
        task = team.delegate(agent, ctx.run_id, prompt, **fields)
        await team.board.store.written(task.id)  # its file is on disk before the answer
        # A response of delegations alone ends the run: the Teller hears back when the
        # work has ended, and a Planner's Workers start when its run ends.
        ctx.end_run_if_all("delegate")
        return {"taskId": task.id}
    assert condition is not None  # checked above: a conditional delegation names one
    return {"taskId": await _conditional(team, agent, ctx, prompt, condition, fields)}


async def _conditional(team: Supervisor, agent: Agent, ctx: ToolContext, prompt: str,
                       condition: ConditionArg, fields: dict[str, Any]) -> str:
    """Approve the condition, then make the trigger whose firings become worker tasks."""
    from agent_kernel.core.trust import condition_digest
    from agent_kernel.triggers import scheduler_for
    from agent_kernel.triggers.conditions import Condition
    from agent_kernel.triggers.make import make_schedule
    from agent_kernel.triggers.model import check_text

    shape = Condition.parse(condition.model_dump(exclude_none=True)).to_dict()
    parent = team.check_room(agent, ctx.run_id, prompt)
    if team.desk is None:
        raise ToolError("conditional delegation needs the team's desk agent, which this "
                        "team has not made")
    scheduler = scheduler_for(team.desk)
    scheduler.ensure_started()
    scheduler.check_room()
    # The trigger belongs to the team's desk agent: the digest names it, so a restart finds
    # the approval of exactly this condition and prompt.
    digest = condition_digest(team.desk.agent_id, shape, check_text("prompt", prompt))
    verdict = await ctx.agent.approvals.request(ctx.run_id, "condition", {
        "condition": shape, "prompt": prompt}, digest=digest)
    if verdict is not None:
        raise ConditionNotApproved(
            f"The condition was not approved, so no task was made. {verdict.error}",
            guidance=verdict.guidance,
            summary=f"No task was made: its condition was not approved ({verdict.reason})")
    task = team.new_task(parent, ctx.agent.agent_id, "worker", prompt, status="trigger",
                         condition=shape, **fields)
    trigger = make_schedule(scheduler, prompt=prompt, type="conditional", condition=shape,
                            source="delegate", run_id=ctx.run_id, trace_id=task.trace_id)
    task.trigger_id = trigger.id
    team.board.store.save(task)  # its priority and timeout outlive the kernel with the trigger
    team.noted(ctx.run_id, task)
    return task.id


TOOLS = [Tool(delegate, source="builtin")]
