"""Making triggers from the specs' arguments: one place that checks them all.

The tools (``schedule``, ``schedule_once``, ``schedule_cron``) and the Python
API (:meth:`TriggerScheduler.every` and friends) both come through here, so
a limit or an error message has one meaning everywhere. Each function
validates, builds a :class:`~.model.Trigger` and hands it to the scheduler
(typed as a :class:`~.host.TriggerHost`, so this module never imports the
scheduler); nothing here evaluates a condition. A model's condition is
approved before, in the tool; a person's condition (:meth:`TriggerMaker.when`)
is their own code, and its approval is recorded with its digest so the next
kernel restores it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from agent_kernel.core.ledger import new_id
from agent_kernel.triggers.conditions import Condition
from agent_kernel.triggers.host import TriggerHost
from agent_kernel.triggers.model import (
    MAX_DELAY,
    Trigger,
    check_cron,
    check_interval,
    check_text,
    iso,
    parse_run_at,
)

TYPES = ("recurring", "scheduled", "conditional")
MAX_TRACE_ID = 200


def _base(scheduler: TriggerHost, kind: str, prompt: str, source: str,
          run_id: str | None, prefix: str) -> Trigger:
    scheduler.check_room()
    return Trigger(id=new_id(prefix), kind=kind, prompt=prompt,
                   agent_id=scheduler.agent.agent_id, created_at=iso(scheduler.clock()) or "",
                   source=source, scheduled_by_run_id=run_id,
                   model=getattr(scheduler.agent, "model", None))


def make_schedule(scheduler: TriggerHost, *, prompt: str, type: str,
                  interval: float | None = None, runAt: str | None = None,  # noqa: N803
                  condition: object = None, cooldown: float = 0, timeout: float | None = None,
                  source: str = "api", run_id: str | None = None,
                  trace_id: str | None = None) -> Trigger:
    """Spec 000's ``schedule``: validate every argument for its ``type`` and add the trigger
    (with spec 002's ``traceId`` as ``trace_id``)."""
    prompt = check_text("prompt", prompt)
    if trace_id is not None and not (isinstance(trace_id, str) and trace_id.strip()
                                     and len(trace_id) <= MAX_TRACE_ID):
        raise ValueError(f"traceId must be a non-empty string of at most {MAX_TRACE_ID} "
                         f"characters, got {trace_id!r:.80}")
    if type not in TYPES:
        raise ValueError(f"type must be one of {', '.join(TYPES)}, got {type!r}")
    if cooldown is None or cooldown < 0:
        raise ValueError(f"cooldown must be 0 or more seconds, got {cooldown}")
    # Spec 000 makes interval, runAt and condition required for their own type and forbids
    # none for another, and cooldown is "for conditional tasks": the ones another type does
    # not use are accepted and play no part (the trigger holds only its own type's fields).
    if timeout is not None and timeout <= 0:
        raise ValueError(f"timeout must be a positive number of seconds or null, got {timeout}")
    trigger = _base(scheduler, type, prompt, source, run_id, "trg")
    trigger.timeout = float(timeout) if timeout is not None else None
    trigger.trace_id = trace_id
    first_due: datetime | None = None
    if type == "recurring":
        trigger.interval = check_interval(interval)
    elif type == "scheduled":
        if not runAt:
            raise ValueError("runAt (ISO 8601) is required when type is 'scheduled'")
        first_due = parse_run_at(runAt, scheduler.clock())
        trigger.run_at = iso(first_due)
    else:
        if condition is None:
            raise ValueError("condition is required when type is 'conditional', e.g. "
                             "{\"kind\": \"expression\", \"expression\": \"len(df) > 1000\"}")
        trigger.condition = Condition.parse(condition).to_dict()
        trigger.cooldown = float(cooldown)
    return scheduler.add(trigger, first_due=first_due)


def make_once(scheduler: TriggerHost, *, delay_seconds: int, focus: str,
              source: str = "api", run_id: str | None = None) -> Trigger:
    """Spec 001's ``schedule_once``: one run after ``delay_seconds`` (1..2592000)."""
    focus = check_text("focus", focus)
    if not 1 <= delay_seconds <= MAX_DELAY:
        raise ValueError(f"delay_seconds must be between 1 and {MAX_DELAY}, got {delay_seconds}")
    trigger = _base(scheduler, "once", focus, source, run_id, "sch")
    due = scheduler.clock() + timedelta(seconds=delay_seconds)
    trigger.run_at = iso(due)
    return scheduler.add(trigger, first_due=due)


def make_cron(scheduler: TriggerHost, *, cron_expression: str, focus: str,
              source: str = "api", run_id: str | None = None) -> Trigger:
    """Spec 001's ``schedule_cron``: validated by croniter, at most once a minute."""
    focus = check_text("focus", focus)
    expression = check_cron(cron_expression, scheduler.clock())
    trigger = _base(scheduler, "cron", focus, source, run_id, "sch")
    trigger.cron = expression
    return scheduler.add(trigger)


class TriggerMaker:
    """The Python API of :class:`~.scheduler.TriggerScheduler`. Triggers a person makes need
    no question: a condition written in a cell is the person's own code, and is recorded as
    approved by them."""

    def every(self, seconds: float, prompt: str, *, timeout: float | None = None) -> Trigger:
        """Run ``prompt`` every ``seconds``."""
        return make_schedule(self._me(), prompt=prompt, type="recurring", interval=seconds,
                             timeout=timeout)

    def at(self, when: datetime | str, prompt: str, *, timeout: float | None = None) -> Trigger:
        """Run ``prompt`` once at ``when`` (an aware datetime or ISO 8601 text)."""
        run_at = when if isinstance(when, str) else iso(when)
        return make_schedule(self._me(), prompt=prompt, type="scheduled", runAt=run_at,
                             timeout=timeout)

    def once(self, delay_seconds: int, focus: str) -> Trigger:
        """Run ``focus`` once after ``delay_seconds``."""
        return make_once(self._me(), delay_seconds=delay_seconds, focus=focus)

    def cron(self, expression: str, focus: str) -> Trigger:
        """Run ``focus`` on a cron schedule (local time, at most once a minute)."""
        return make_cron(self._me(), cron_expression=expression, focus=focus)

    def when(self, condition: object, prompt: str, *, cooldown: float = 0,
             timeout: float | None = None) -> Trigger:
        """Run ``prompt`` each time ``condition`` fires (see :mod:`.conditions`)."""
        trigger = make_schedule(self._me(), prompt=prompt, type="conditional",
                                condition=condition, cooldown=cooldown, timeout=timeout)
        self._me().record_approval(trigger)
        return trigger

    def _me(self) -> TriggerHost:
        return self  # type: ignore[return-value]
