"""Spec 003's ``plan_create``: a plan for a task, as checked JSON the run view draws.

The run's own model writes it (or the model named by ``model``), through the same door
as the run's turns, with a strict JSON contract (:mod:`agent_kernel.organiser.asking`);
:func:`agent_kernel.organiser.plans.check_plan` makes what comes back a valid plan or
refuses it (``invalid plan_create response``). The result is spec 003's
``{"plan": {thought, summary, steps: [{step, status}], risks, questions, completion}}``;
the run view shows the steps as a checklist. It reads and writes nothing.
``LIMITS.enabled = False`` turns it off (``plan_create tool is disabled``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from agent_kernel.engine.registry import Field, Tool, ToolContext, ToolError
from agent_kernel.organiser import asking
from agent_kernel.organiser.asking import OrganiserError
from agent_kernel.organiser.plans import PlanResult, check_plan
from agent_kernel.tools.todos import door_for


@dataclass
class PlanLimits:
    """Spec 003's plan settings; change ``LIMITS`` for a session."""

    enabled: bool = True
    max_steps: int = 6
    """Steps when the call gives none (spec 003: "usually 6")."""
    most_steps: int = 20


LIMITS = PlanLimits()


async def plan_create(
    task: Annotated[str, Field(min_length=1, max_length=20000)],
    ctx: ToolContext,
    max_steps: int | None = None,
    style: str = "",
    model: str | None = None,
) -> PlanResult:
    """Write an execution plan for a task as JSON (summary, ordered steps with a status,
    risks, questions, what done means). Use it before a task of several steps.

    Args:
        task: The task to plan.
        max_steps: The most steps the plan may have (default 6).
        style: A style hint such as terse or detailed.
        model: Another model to write the plan (default: the run's own).
    """
    if not LIMITS.enabled:
        raise ToolError("plan_create tool is disabled",
                        guidance="The person turned plan_create off "
                                 "(agent_kernel.tools.plans.LIMITS.enabled).")
    if not task.strip():
        raise ValueError("task is required")
    steps = LIMITS.max_steps if max_steps is None or max_steps <= 0 else max_steps
    steps = min(steps, LIMITS.most_steps)
    writer = ctx.run_model()
    if model and model.strip() and (writer is None or model.strip() != writer.name):
        from agent_kernel.engine.models import resolve

        writer = resolve(model.strip())
    if writer is None:
        raise ValueError("plan_create unavailable (missing llm client)")
    tools = [s["function"]["name"] for s in ctx.agent.registry.schemas(ctx.agent.role)]
    try:
        answer = await asking.write_plan(door_for(ctx, writer), task.strip(), steps,
                                         style.strip(), tools)
        return check_plan(answer, steps)
    except OrganiserError as exc:
        raise ValueError(str(exc)) from None


TOOLS = [Tool(plan_create, source="builtin", timeout=180.0)]
