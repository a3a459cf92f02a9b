"""Restoring saved triggers when a scheduler starts: checked, bounded, and never replaying the
past in a burst.

A trigger file is checked before anything is booked (:mod:`.checks`): an
impossible one is refused with a ``problem:`` line, an obvious slip is fixed
with a ``note:``. At most the per-agent limit of triggers comes back, and
nothing loops on a stored value. Every trigger runs the model, and a file
in ``triggers/`` can be written by anyone who can write the workspace, so a
trigger of any kind comes back armed only when the ledger holds a record of
exactly it signed with this user's key (:mod:`agent_kernel.core.trust`): for a
condition (which is code), an approval of that condition and prompt; for a
time-based trigger, the signed ``trigger_created`` record written when this
user's agent or notebook made it, or the person's approval of it. Otherwise
it comes back as ``needs_approval``, is shown to the person and never runs
(nor is its condition evaluated) until they approve it. Triggers saved before
time-based triggers were signed come back this way once.

While no kernel lived, recurring and cron triggers missed runs and one-shot
triggers may have passed their time. By default (``missed="skip"``) those
runs are skipped: each is counted (up to a cap), reported in the note the
person sees and written to the ledger, and the trigger resumes at its next
time on its original grid. With ``missed="run_once"`` a trigger that missed
anything fires once at start, never more. Conditions are re-armed against the
present (a change made while no kernel lived is not an event).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from agent_kernel.core.trust import MISSING_CONDITION, MISSING_TRIGGER, ApprovalBook
from agent_kernel.triggers.checks import STALE, check_record
from agent_kernel.triggers.host import TriggerHost
from agent_kernel.triggers.model import NEEDS_APPROVAL, ONE_SHOT, Trigger, cron_next, parse_iso

MAX_COUNTED = 100000
MAX_CRON_STEPS = 500
APPROVE_HOW = ("read what it asks the model to do (and its condition), then approve it in a "
               "notebook with `%agent_triggers approve ID` or the triggers panel's Approve (or "
               "`scheduler_for(agent).approve(ID)`); `%agent_triggers cancel ID` deletes it")


@dataclass
class RestoreReport:
    """What :func:`restore` did, as data and as the note shown to the person."""

    restored: list[Trigger] = field(default_factory=list)
    missed: dict[str, int] = field(default_factory=dict)
    capped: set[str] = field(default_factory=set)
    expired: list[Trigger] = field(default_factory=list)
    needs_approval: dict[str, str] = field(default_factory=dict)
    waiting: list[Trigger] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    policy: str = "skip"

    @property
    def has_news(self) -> bool:
        """True when there is anything to tell the person."""
        return bool(self.restored or self.expired or self.waiting or self.notes
                    or self.problems)

    def text(self) -> str:
        """One short paragraph: what came back, what waits for approval, what was wrong."""
        if not self.has_news:
            return "No saved triggers to restore."
        lines = [f"Restored {len(self.restored)} trigger(s) from the workspace"
                 + (":" if self.restored or self.expired else ".")]
        for trigger in self.restored:
            missed = self.missed.get(trigger.id, 0)
            note = ""
            if missed:
                verb = "skipped" if self.policy == "skip" else "missed (running once now)"
                more = "+" if trigger.id in self.capped else ""
                note = f"; {missed}{more} run(s) {verb} while no kernel was running"
            lines.append(f"  {_named(trigger, 60)}{note}")
        for trigger in self.expired:
            verb = "skipped" if self.policy == "skip" else "running it once now"
            lines.append(f"  {_named(trigger, 60)}: was due while no kernel was running; "
                         f"{verb}")
        if self.waiting:
            lines.append(f"{len(self.waiting)} trigger(s) need approval: none runs the model "
                         "(nor is its condition evaluated) until you approve it. Triggers saved "
                         "by an earlier version ask once, since they were not signed:")
            for trigger in self.waiting:
                # what it asks in full (up to 200 characters): the person approves what they read
                lines.append(f"  {_named(trigger, 200)}: needs approval")
                lines.append(f"      why: {self.needs_approval.get(trigger.id, '?')}")
                lines.append(f"      approve: %agent_triggers approve {trigger.id}"
                             f" · delete: %agent_triggers cancel {trigger.id}")
            lines.append(f"  To run one: {APPROVE_HOW}.")
        lines.extend(f"  note: {n}" for n in self.notes)
        lines.extend(f"  problem: {p}" for p in self.problems)
        return "\n".join(lines)


def _named(trigger: Trigger, limit: int) -> str:
    """A trigger as a person knows it, by what it asks and when (``check the build (every
    2 s)``, as the triggers panel names it); its id is only in a magic to type."""
    prompt = " ".join(trigger.prompt.split())
    shown = prompt if len(prompt) <= limit else prompt[: limit - 1] + "…"
    return f"{shown} ({trigger.schedule_text()})"


def _missed_cron(expression: str, since: datetime, now: datetime) -> tuple[int, datetime, bool]:
    """Runs of ``expression`` from ``since`` to ``now``, the next one, and whether the count
    stopped at its cap (then the next run is simply the next one after now)."""
    from croniter import croniter

    runs = croniter(expression, (since - timedelta(microseconds=1)).astimezone())
    for count in range(MAX_CRON_STEPS):
        moment = runs.get_next(datetime)
        if moment > now:
            return count, moment, False
    return MAX_CRON_STEPS, cron_next(expression, now), True


def _missed(trigger: Trigger, due: datetime, now: datetime) -> tuple[int, datetime, bool]:
    """How many runs of a recurring or cron trigger fell due between ``due`` and ``now``."""
    if trigger.kind == "cron":
        return _missed_cron(str(trigger.cron), due, now)
    interval = float(trigger.interval or 1)
    count = 1 + math.floor((now - due).total_seconds() / interval)
    return min(count, MAX_COUNTED), due + timedelta(seconds=count * interval), count > MAX_COUNTED


def restore(host: TriggerHost) -> RestoreReport:
    """Load this agent's saved triggers into ``host`` and report what happened."""
    report = RestoreReport(policy=host.missed)
    records, report.problems = host.store.load_all()
    now = host.clock()
    approvals = ApprovalBook(host.agent.ledger)
    catch_up: list[Trigger] = []
    mine = [r for r in records if r.get("agent_id") == host.agent.agent_id]
    for record in mine:
        if record.get("id") in host.triggers:
            continue
        try:
            checked = check_record(record, now)
        except ValueError as exc:
            report.problems.append(f"{record.get('id')}: not restored: {exc}")
            host.record("trigger_refused", trigger_id=str(record.get("id")), reason=str(exc))
            continue
        if checked is None:
            continue
        trigger = checked.trigger
        report.notes.extend(f"{trigger.id}: {note}" for note in checked.notes)
        try:
            host.check_room()
        except ValueError as exc:
            report.problems.append(f"{trigger.id}: not restored: {exc}")
            continue
        why = approvals.reason(trigger.approval_digest(), MISSING_CONDITION
                               if trigger.kind == "conditional" else MISSING_TRIGGER)
        if why is not None:
            trigger.status, trigger.approved = NEEDS_APPROVAL, False
            host.triggers[trigger.id] = trigger
            report.waiting.append(trigger)
            report.needs_approval[trigger.id] = why
            host.record("trigger_needs_approval", trigger_id=trigger.id, type=trigger.kind,
                        reason=why)
            continue
        trigger.approved = True
        trigger.status = "active"
        missed, capped = 0, False
        first_due: datetime | None = None
        due = parse_iso(trigger.next_run)
        if trigger.kind in ONE_SHOT:
            first_due = parse_iso(trigger.run_at)
            if first_due is not None and first_due <= now:
                trigger.status = "missed"
                report.expired.append(trigger)
                host.store.delete(trigger.id)
                host.record("trigger_missed", trigger_id=trigger.id, type=trigger.kind,
                            due_at=trigger.run_at, policy=host.missed)
                if host.missed == "run_once":
                    host.triggers[trigger.id] = trigger
                    host.fire(trigger, first_due)
                continue
        elif checked.stale_since is not None:
            missed, _, capped = _missed(trigger, max(checked.stale_since, now - STALE), now)
            capped = True
        elif due is not None and due <= now:
            missed, first_due, capped = _missed(trigger, due, now)
        elif due is not None:
            first_due = due
        try:
            host.triggers[trigger.id] = trigger
            host.book(trigger, first_due)
            trigger.skipped += missed if host.missed == "skip" else max(0, missed - 1)
            host.store.save(trigger.to_record())
        except Exception as exc:
            host.triggers.pop(trigger.id, None)
            report.problems.append(f"{trigger.id}: not restored ({exc})")
            continue
        if host.missed == "run_once" and missed:
            catch_up.append(trigger)
        report.restored.append(trigger)
        if missed:
            report.missed[trigger.id] = missed
        if capped:
            report.capped.add(trigger.id)
        host.record("trigger_restored", trigger_id=trigger.id, type=trigger.kind,
                    missed=missed, next_run=trigger.next_run, policy=host.missed)
    for trigger in catch_up:
        host.fire(trigger, now)
    return report
