"""Trigger tools: ``schedule``, ``schedule_once``, ``schedule_cron``, ``cancel_schedule``,
``list_tasks``, ``cancel_task``.

Names, arguments and return shapes are the specs' own: ``schedule``,
``list_tasks`` and ``cancel_task`` from spec 000 (``cancel_task`` also takes
spec 002's ``id``), the other three from spec 001 with its limits (100
active schedules per agent, a cron floor of one minute, ``delay_seconds``
1..2592000 with spec 001's error text). A condition the model writes is code:
it is shown to the person and approved before the trigger exists, and the
approval is recorded with a digest of exactly that condition and prompt (see
:mod:`agent_kernel.core.trust`), so the next kernel can check it before it
evaluates anything. A time-based trigger needs no approval to be made; it is
signed when made (see :mod:`agent_kernel.triggers.scheduler`), so the next
kernel runs it only if this user's agent made exactly it. ``list_tasks`` also
lists restored triggers that still need the person's approval, with the
status ``needs_approval``.

The work happens in :mod:`agent_kernel.triggers`; ``attach`` only makes the
agent's (unstarted) scheduler, so creating an Agent stays cheap. The
scheduler starts on the first trigger made from a run, or when the notebook
extension loads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict

from agent_kernel.engine.registry import Field, Tool, ToolContext, ToolError
from agent_kernel.engine.services import TaskSummary

if TYPE_CHECKING:
    from datetime import datetime

    from agent_kernel.engine.registry import ToolHost
    from agent_kernel.triggers.scheduler import TriggerScheduler

PROMPT_LIMIT = 100
DEFAULT_PRIORITY = 5


class ConditionArg(BaseModel):
    """A condition: ``{"kind": "expression", "expression": "len(df) > 1000"}``,
    ``{"kind": "file", "path": "out.csv"}`` or ``{"kind": "variable", "name": "df"}``."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["expression", "file", "variable"]
    expression: str | None = None
    path: str | None = None
    name: str | None = None


def _scheduler(ctx: ToolContext) -> TriggerScheduler:
    from agent_kernel.triggers import scheduler_for

    scheduler = scheduler_for(ctx.agent)
    scheduler.ensure_started()
    return scheduler


class ConditionNotApproved(ToolError, ValueError):
    """A trigger's condition was not approved (a ValueError, as the spec's tools raise)."""


async def schedule(
    prompt: Annotated[str, Field(min_length=1, max_length=10000)],
    type: Literal["recurring", "scheduled", "conditional"],  # noqa: A002 - the spec's name
    ctx: ToolContext,
    interval: float | None = None,
    runAt: str | None = None,  # noqa: N803 - the spec's name
    condition: ConditionArg | None = None,
    cooldown: float = 0,
    timeout: float | None = None,
    traceId: Annotated[str | None, Field(min_length=1, max_length=200)] = None,  # noqa: N803
) -> dict[str, str]:
    """Create a persistent trigger that starts an agent run later, while the kernel lives.

    Args:
        prompt: What the triggered run should do.
        type: recurring (every interval seconds), scheduled (once at runAt) or
            conditional (each time the condition fires).
        interval: Seconds between runs; required for recurring (at least 1).
        runAt: ISO 8601 time of the run; required for scheduled.
        condition: Required for conditional: {"kind": "expression", "expression":
            "len(df) > 1000"} (a Python expression over the notebook's variables),
            {"kind": "file", "path": "out.csv"} (appears or changes) or
            {"kind": "variable", "name": "df"} (changes). The person approves it first.
        cooldown: Conditional only: minimum seconds between two runs (default 0).
        timeout: Seconds a triggered run may take; null for no limit.
        traceId: Optional id tying the trigger and every run it starts to one piece of
            work; a run started by a trigger passes its own on by default.
    """
    from agent_kernel.core.trust import condition_digest
    from agent_kernel.triggers.conditions import Condition
    from agent_kernel.triggers.make import make_schedule
    from agent_kernel.triggers.model import check_text

    # Spec 002's traceId: saved with the trigger, in its ledger records and in the
    # trigger context of the runs it starts, whose own triggers inherit it.
    trace_id = traceId or (ctx.trigger or {}).get("trace_id")
    scheduler = _scheduler(ctx)
    shape: dict[str, Any] | None = None
    if condition is not None and type == "conditional":  # another type does not use it
        shape = Condition.parse(condition.model_dump(exclude_none=True)).to_dict()
    if type == "conditional" and shape is not None:
        scheduler.check_room()
        # The digest covers exactly what the trigger will hold (and the store will save),
        # under the agent that holds it: in a team, the desk, whichever member asked.
        digest = condition_digest(scheduler.agent.agent_id, shape, check_text("prompt", prompt))
        verdict = await ctx.agent.approvals.request(ctx.run_id, "condition", {
            "condition": shape, "prompt": prompt, "cooldown": cooldown}, digest=digest)
        if verdict is not None:
            raise ConditionNotApproved(
                f"The condition was not approved, so no trigger was made. {verdict.error}",
                guidance=verdict.guidance,
                summary=f"No trigger was made: its condition was not approved ({verdict.reason})")
    trigger = make_schedule(scheduler, prompt=prompt, type=type, interval=interval, runAt=runAt,
                            condition=shape, cooldown=cooldown, timeout=timeout,
                            source="schedule", run_id=ctx.run_id, trace_id=trace_id)
    return {"taskId": trigger.id}


async def schedule_once(
    delay_seconds: Annotated[int, Field(json_schema_extra={"minimum": 1, "maximum": 2592000})],
    focus: Annotated[str, Field(min_length=1, max_length=1000)],
    ctx: ToolContext,
) -> dict[str, str]:
    """Schedule a one-time delayed Agent run. Use this when you need to check something later.

    Args:
        delay_seconds: Delay in seconds before the next Agent run (minimum: 1, maximum: 2592000).
        focus: What to focus on in the next run (e.g. 'check the build').
    """
    from agent_kernel.triggers.make import make_once

    trigger = make_once(_scheduler(ctx), delay_seconds=delay_seconds, focus=focus,
                        source="schedule_once", run_id=ctx.run_id)
    return {"schedule_id": trigger.id, "scheduled_at": f"in {delay_seconds} seconds",
            "focus": trigger.prompt}


async def schedule_cron(
    cron_expression: str,
    focus: Annotated[str, Field(min_length=1, max_length=1000)],
    ctx: ToolContext,
) -> dict[str, str]:
    """Schedule a recurring Agent run using a cron expression (at most once a minute).

    Args:
        cron_expression: Cron expression (format: 'minute hour day month weekday',
            e.g. '0 9 * * 1-5' for 9am on weekdays), in the kernel's local time.
        focus: What to focus on in each run (e.g. 'hourly build check').
    """
    from agent_kernel.triggers.make import make_cron
    from agent_kernel.triggers.model import CronError

    try:
        trigger = make_cron(_scheduler(ctx), cron_expression=cron_expression, focus=focus,
                            source="schedule_cron", run_id=ctx.run_id)
    except CronError as exc:  # spec 001's words; what is wrong goes to the model besides
        raise ToolError(str(exc), guidance=exc.hint.capitalize() + ".") from None
    return {"schedule_id": trigger.id, "cron_expression": str(trigger.cron),
            "focus": trigger.prompt}


async def cancel_schedule(schedule_id: str, ctx: ToolContext) -> dict[str, Any]:
    """Cancel a previously scheduled Agent run. Use this when it is no longer needed.

    Args:
        schedule_id: The ID returned by schedule_once or schedule_cron (or schedule's taskId).
    """
    if _scheduler(ctx).cancel(schedule_id):
        return {"success": True, "message": f"Schedule {schedule_id} cancelled successfully"}
    return {"success": False, "message": f"Schedule {schedule_id} not found or already completed"}


def _cut(text: str) -> str:
    return text if len(text) <= PROMPT_LIMIT else text[: PROMPT_LIMIT - 1] + "…"


def task_list(scheduler: TriggerScheduler, scope: str = "all",
              role: str | None = None) -> list[TaskSummary]:
    """The ``list_tasks`` rows (spec 000's TaskSummary) for ``scope``."""
    agent = scheduler.agent
    role_ok = role is None or getattr(agent, "role", None) == role
    rows: list[TaskSummary] = []
    if scope in ("queue", "all") and role_ok:
        for firing in scheduler.queue:
            trigger = scheduler.triggers[firing.trigger_id]
            rows.append({"id": firing.run_id, "type": trigger.kind, "prompt": _cut(trigger.prompt),
                         "priority": DEFAULT_PRIORITY, "status": "queued",
                         "createdAt": _iso(firing.fired_at)})
    if scope in ("running", "all") and role_ok:
        for run_id in agent.running:
            running = scheduler.running.get(run_id)
            info = scheduler.run_info(run_id)
            if running is not None:
                trigger = scheduler.triggers[running.trigger_id]
                kind, prompt, created = trigger.kind, trigger.prompt, _iso(running.fired_at)
            elif info is not None:
                prompt, kind, created = info
            else:
                continue
            rows.append({"id": run_id, "type": kind, "prompt": _cut(prompt),
                         "priority": DEFAULT_PRIORITY, "status": "running", "createdAt": created})
    if scope in ("triggers", "all"):
        for trigger in [*scheduler.active(), *scheduler.pending()]:
            rows.append({"id": trigger.id, "type": trigger.kind, "prompt": _cut(trigger.prompt),
                         "priority": DEFAULT_PRIORITY,
                         "status": "trigger" if trigger.active else trigger.status,
                         "createdAt": trigger.created_at})
    return rows


def _iso(moment: datetime | None) -> str:
    from agent_kernel.triggers.model import iso

    return iso(moment) or ""


async def list_tasks(
    ctx: ToolContext,
    scope: Literal["queue", "running", "triggers", "all"] = "all",
    role: Literal["planner", "worker"] | None = None,
) -> dict[str, list[TaskSummary]]:
    """List queued runs, running runs and triggers.

    Notes:
        A restored trigger with no signed record that the person made or approved it is
        listed with the status needs_approval: it does not run until the person approves
        it in the notebook.

    Args:
        scope: Which to list: queue, running, triggers or all (default).
        role: Only tasks of this role (applies to queue and running).
    """
    team = ctx.agent.services.team
    if team is not None:  # in a team: its queues, with their true priorities and types
        return {"tasks": team.rows(scope, role)}
    return {"tasks": task_list(_scheduler(ctx), scope, role)}


class Cancelled(TypedDict, total=False):
    """What ``cancel_task`` answers (spec 000's ``{success}``; ``reason`` for an unknown id)."""

    success: bool
    reason: str


async def cancel_task(ctx: ToolContext, taskId: str | None = None,  # noqa: N803
                      id: str | None = None) -> Cancelled:  # noqa: A002
    """Cancel a queued task or remove a trigger. A running task cannot be cancelled.

    Args:
        taskId: The task or trigger id.
        id: The same id under another name; give one of the two.
    """
    # taskId is spec 000's name for the argument, id spec 002's; the schema requires one
    # (minProperties: 1, below). 002: queued or trigger true, running false; an id that is
    # none of them is false too, with the reason.
    if taskId and id and taskId != id:
        raise ValueError(f"give taskId or id, not two different ids ({taskId!r}, {id!r})")
    target = taskId or id
    if not target:
        raise ValueError("taskId (or id) is required: the id list_tasks shows")
    team = ctx.agent.services.team
    if team is not None:
        if team.cancel(target):
            return {"success": True}
        running = any(row["id"] == target for row in team.rows("running"))
    else:
        scheduler = _scheduler(ctx)
        if scheduler.cancel(target) or scheduler.cancel_queued(target):
            return {"success": True}
        running = target in ctx.agent.running
    if running:
        return {"success": False}
    return {"success": False, "reason": f"No queued task, running task or trigger has id "
                                        f"{target[:80]!r}; list_tasks shows the ids"}


CANCEL_TASK_SCHEMA: dict[str, int] = {"minProperties": 1}
"""One of ``taskId`` / ``id`` is required. Said with ``minProperties`` (the two are its only
properties) rather than ``anyOf`` of two ``required`` lists: providers refuse a combinator at
the top of a tool's parameters (Anthropic's ``input_schema`` does)."""


TOOLS = [
    Tool(schedule, source="builtin"),
    Tool(schedule_once, source="builtin"),
    Tool(schedule_cron, source="builtin"),
    Tool(cancel_schedule, source="builtin"),
    Tool(list_tasks, source="builtin"),
    Tool(cancel_task, source="builtin", schema_extra=CANCEL_TASK_SCHEMA),
]


def attach(agent: ToolHost) -> None:
    """Give the agent its scheduler (made, not started: cheap)."""
    from agent_kernel.triggers import scheduler_for

    scheduler_for(agent)
