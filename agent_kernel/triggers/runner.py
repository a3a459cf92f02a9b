"""One firing: a condition checked on its edge, then the run: record the firing, run the
agent as its own task, record the outcome.

Kept apart from the scheduler so the path of a single firing reads top to
bottom: the ``trigger_fired`` ledger record (due time, fire time, delay),
``agent.arun(prompt, trigger=..., isolated=True)`` with the trigger's
``timeout`` enforced by stopping the run, then a ``trigger_run`` record with
the status and the reply. Nothing raised here reaches the scheduler: an
error becomes a notice on the bus, a ledger record and the trigger's last
result, and the trigger lives on.
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime

from agent_kernel.core.events import LedgerRecorded, Notice
from agent_kernel.triggers.conditions import ConditionWatch
from agent_kernel.triggers.host import Firing, TriggerHost
from agent_kernel.triggers.model import iso, parse_iso

MAX_RESULT = 2000


async def _ledger(scheduler: TriggerHost, run_id: str, kind: str, **fields: object) -> None:
    agent = scheduler.agent
    try:
        record = await asyncio.to_thread(agent.ledger.record_event, kind,
                                         agent_id=agent.agent_id, run_id=run_id, **fields)
    except Exception as exc:
        agent.bus.emit(Notice(run_id, f"Could not write the ledger record: {exc}", level="error"))
        return
    agent.bus.emit(LedgerRecorded(run_id, record))


async def run_firing(scheduler: TriggerHost, firing: Firing) -> None:
    """Run the agent for one firing and record what happened."""
    agent = scheduler.agent
    trigger = scheduler.triggers[firing.trigger_id]
    run_id = firing.run_id
    started_at = scheduler.clock()
    delay_ms = int((started_at - firing.due_at).total_seconds() * 1000)
    await _ledger(scheduler, run_id, "trigger_fired", trigger_id=trigger.id, type=trigger.kind,
                  due_at=iso(firing.due_at), fired_at=iso(firing.fired_at),
                  started_at=iso(started_at), delay_ms=delay_ms,
                  fire_delay_ms=int((firing.fired_at - firing.due_at).total_seconds() * 1000),
                  **trigger.trace_fields())
    context = trigger.run_context(iso(firing.due_at), iso(firing.fired_at))
    loop = asyncio.get_running_loop()
    timed_out = False

    def stop_for_timeout() -> None:
        nonlocal timed_out
        timed_out = True
        agent.stop(run_id)

    timer = loop.call_later(trigger.timeout, stop_for_timeout) if trigger.timeout else None
    clock = time.perf_counter()
    reply, error = "", None
    try:
        result = await agent.arun(trigger.prompt, trigger=context, isolated=True, run_id=run_id)
        status, reply, error = result.status, result.reply, result.error
        if timed_out and status == "cancelled":
            status = "timeout"
            error = f"the run exceeded the trigger's {trigger.timeout:g}s timeout"
    except asyncio.CancelledError:
        status, error = "cancelled", "the scheduler stopped"
        raise
    except Exception as exc:  # anything the loop did not turn into a result
        status, error = "error", f"{type(exc).__name__}: {exc}"
    finally:
        if timer is not None:
            timer.cancel()
        duration_ms = int((time.perf_counter() - clock) * 1000)
        trigger.runs += 1
        trigger.last_run_id = run_id
        trigger.last_status = status
        trigger.last_result = (reply if status == "ok" else (error or status))[:MAX_RESULT]
        if status != "ok":
            trigger.errors += 1
            agent.bus.emit(Notice(run_id, f"Trigger {trigger.id} ({trigger.schedule_text()}): "
                                  f"run {status}: {error}", level="error"))
        if trigger.active:
            scheduler.store.save(trigger.to_record())
        scheduler.changed(trigger)
    await _ledger(scheduler, run_id, "trigger_run", trigger_id=trigger.id, status=status,
                  error=error, reply=reply[:MAX_RESULT], duration_ms=duration_ms,
                  **trigger.trace_fields())


def check_condition(scheduler: TriggerHost, trigger_id: str, watch: ConditionWatch,
                    now: datetime) -> None:
    """Check one condition; fire it on its edge unless the cooldown says wait.

    Only an active, approved trigger's condition is ever evaluated.
    """
    trigger = scheduler.triggers.get(trigger_id)
    if trigger is None or not trigger.active or not trigger.approved:
        return
    fired = watch.check(scheduler.namespace)
    if watch.last_error and watch.last_error != getattr(watch, "shown_error", None):
        watch.shown_error = watch.last_error  # type: ignore[attr-defined]
        scheduler.agent.bus.emit(Notice("triggers", f"Condition of trigger {trigger_id} "
                                        f"could not be checked: {watch.last_error}",
                                        level="warning"))
        scheduler.record("trigger_condition_error", trigger_id=trigger_id,
                          error=watch.last_error)
    if not fired:
        return
    last = parse_iso(trigger.last_fired_at)
    if trigger.cooldown and last:
        since = (now - last).total_seconds()
        if since < trigger.cooldown:
            trigger.skipped += 1
            scheduler.record("trigger_skipped", trigger_id=trigger_id, reason="cooldown",
                              seconds_left=round(trigger.cooldown - since, 3))
            return
    scheduler.fire(trigger, now)
