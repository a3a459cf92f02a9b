"""Restoring saved triggers when a scheduler starts, without replaying the past in a burst.

While no kernel lived, recurring and cron triggers missed runs and one-shot
triggers may have passed their time. By default (``missed="skip"``) those
runs are skipped: each is counted, reported in the note the person sees and
written to the ledger, and the trigger resumes at its next time on its
original grid. With ``missed="run_once"`` a trigger that missed anything
fires once at start, never more. Conditions are re-armed against the
present (a change made while no kernel lived is not an event).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from .model import ONE_SHOT, Trigger, parse_iso

if TYPE_CHECKING:
    from .scheduler import TriggerScheduler

MAX_COUNTED = 100000


@dataclass
class RestoreReport:
    """What :func:`restore` did, as data and as the note shown to the person."""

    restored: list[Trigger] = field(default_factory=list)
    missed: dict[str, int] = field(default_factory=dict)
    expired: list[Trigger] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    policy: str = "skip"

    def text(self) -> str:
        """One short paragraph: what came back, what was skipped, what was wrong."""
        if not (self.restored or self.expired or self.problems):
            return "No saved triggers to restore."
        lines = [f"Restored {len(self.restored)} trigger(s) from the workspace:"]
        for trigger in self.restored:
            missed = self.missed.get(trigger.id, 0)
            note = ""
            if missed:
                verb = "skipped" if self.policy == "skip" else "missed (running once now)"
                note = f"; {missed} run(s) {verb} while no kernel was running"
            lines.append(f"  {trigger.id}: {trigger.schedule_text()}: {trigger.prompt[:60]}{note}")
        for trigger in self.expired:
            verb = "skipped" if self.policy == "skip" else "running it once now"
            lines.append(f"  {trigger.id}: was due at {trigger.run_at} while no kernel was "
                         f"running; {verb}")
        lines.extend(f"  problem: {p}" for p in self.problems)
        return "\n".join(lines)


def _missed_cron(expression: str, since: datetime, now: datetime) -> tuple[int, datetime]:
    from croniter import croniter

    runs = croniter(expression, (since - timedelta(microseconds=1)).astimezone())
    count = 0
    while True:
        moment = runs.get_next(datetime)
        if moment > now:
            return count, moment
        count += 1
        if count >= MAX_COUNTED:
            return count, croniter(expression, now.astimezone()).get_next(datetime)


def restore(scheduler: TriggerScheduler) -> RestoreReport:
    """Load this agent's saved triggers into ``scheduler`` and report what happened."""
    report = RestoreReport(policy=scheduler.missed)
    records, report.problems = scheduler.store.load_all()
    now = scheduler.clock()
    catch_up: list[Trigger] = []
    for record in records:
        if record.get("agent_id") != scheduler.agent.agent_id or record.get("id") in \
                scheduler.triggers:
            continue
        try:
            trigger = Trigger.from_record(record)
            if not trigger.active:
                continue
            due = parse_iso(trigger.next_run) if trigger.kind != "conditional" else None
            missed = 0
            first_due: datetime | None = None
            if trigger.kind in ONE_SHOT:
                first_due = parse_iso(trigger.run_at)
                if first_due is not None and first_due <= now:
                    trigger.status = "missed"
                    report.expired.append(trigger)
                    scheduler.store.delete(trigger.id)
                    scheduler._record("trigger_missed", trigger_id=trigger.id, type=trigger.kind,
                                      due_at=trigger.run_at, policy=scheduler.missed)
                    if scheduler.missed == "run_once":
                        scheduler.triggers[trigger.id] = trigger
                        scheduler.fire(trigger, first_due)
                    continue
            elif trigger.kind == "recurring" and due is not None and due <= now:
                interval = float(trigger.interval or 1)
                missed = 1 + math.floor((now - due).total_seconds() / interval)
                first_due = due + timedelta(seconds=missed * interval)
            elif trigger.kind == "cron" and due is not None and due <= now:
                missed, first_due = _missed_cron(str(trigger.cron), due, now)
            elif due is not None:
                first_due = due
            if scheduler.missed == "run_once" and missed:
                catch_up.append(trigger)
            scheduler.check_room()
            scheduler.triggers[trigger.id] = trigger
            scheduler._book(trigger, first_due)
            trigger.skipped += missed if scheduler.missed == "skip" else max(0, missed - 1)
            scheduler.store.save(trigger.to_record())
        except Exception as exc:
            report.problems.append(f"{record.get('id')}: not restored ({exc})")
            continue
        report.restored.append(trigger)
        if missed:
            report.missed[trigger.id] = missed
        scheduler._record("trigger_restored", trigger_id=trigger.id, type=trigger.kind,
                          missed=missed, next_run=trigger.next_run, policy=scheduler.missed)
    for trigger in catch_up:
        scheduler.fire(trigger, now)
    return report

