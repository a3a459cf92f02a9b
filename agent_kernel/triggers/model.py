"""The trigger record and the rules every new trigger must pass.

One :class:`Trigger` describes any kind the tools can make: ``recurring``
(every ``interval`` seconds), ``scheduled`` (once at ``runAt``), ``once``
(spec 001's ``schedule_once``, after ``delay_seconds``), ``cron`` (spec 001's
``schedule_cron``) and ``conditional`` (a :class:`~.conditions.Condition`).
It is plain data: what the store saves, what ``list_tasks`` and the panel
show, and what a fired run receives as its ``trigger`` context. The limits
live here too, each with an error a model can act on.

A trigger's ``approved`` flag lives in memory only: it is never saved and
never read back, because a file can say anything. After a restore, only a
signed record in the ledger (see :mod:`agent_kernel.core.trust`) sets it: for a
condition, an approval of exactly it; for a time-based trigger, the record
that this user made exactly it (signed when it was made) or an approval of
it. Until then the trigger's status is ``needs_approval`` and it never runs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from datetime import datetime, timedelta, timezone
from typing import Any, Final

from agent_kernel.core.statuses import TriggerRunStatus, TriggerStatus, trigger_status_words
from agent_kernel.core.times import parse_iso

KINDS = ("recurring", "scheduled", "once", "cron", "conditional")
ONE_SHOT = ("scheduled", "once")
NEEDS_APPROVAL: Final = "needs_approval"
LIVE: tuple[TriggerStatus, ...] = ("active", NEEDS_APPROVAL)
MAX_ACTIVE = 100
MIN_INTERVAL = 1.0
MAX_INTERVAL = 366 * 86400.0
MAX_DELAY = 2592000
CRON_FLOOR = 60.0
MAX_PROMPT = 10000


def iso(moment: datetime | None) -> str | None:
    """An aware time as ISO 8601 in UTC with a ``Z`` (None stays None)."""
    if moment is None:
        return None
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


def parse_run_at(value: str, now: datetime) -> datetime:
    """Validate ``runAt``: ISO 8601, not in the past."""
    try:
        moment = parse_iso(value)
    except ValueError:
        raise ValueError(f"runAt must be an ISO 8601 time like 2026-03-01T17:00:00+01:00, "
                         f"got {value!r}") from None
    if moment is None:
        raise ValueError("runAt is required when type is 'scheduled'")
    if moment < now - timedelta(seconds=1):
        raise ValueError(f"runAt {value!r} is in the past (now is {iso(now)})")
    return moment


def check_interval(interval: float | None) -> float:
    """Validate a recurring interval (seconds)."""
    if interval is None:
        raise ValueError("interval (seconds) is required when type is 'recurring'")
    if not MIN_INTERVAL <= float(interval) <= MAX_INTERVAL:
        raise ValueError(f"interval must be between {MIN_INTERVAL:g} and {MAX_INTERVAL:g} "
                         f"seconds, got {interval:g}")
    return float(interval)


class CronError(ValueError):
    """Spec 001's ``Invalid cron expression: <expression>``, word for word; ``hint`` says
    what is wrong, for whoever can use more (the model's guidance)."""

    def __init__(self, expression: str, hint: str) -> None:
        super().__init__(f"Invalid cron expression: {expression}")
        self.hint = hint


CRON_FORMAT = "expected 'minute hour day month weekday', e.g. '0 9 * * 1-5'"


def check_cron(expression: str, now: datetime) -> str:
    """Validate a cron expression with croniter and refuse anything under one minute."""
    from croniter import croniter

    expression = " ".join(str(expression).split())
    if not expression or not croniter.is_valid(expression):
        raise CronError(expression, CRON_FORMAT)
    try:
        runs = croniter(expression, now.astimezone())
        times = [runs.get_next(datetime) for _ in range(30)]
    except Exception as exc:  # croniter raises several types for impossible dates
        raise CronError(expression, f"{exc}; {CRON_FORMAT}") from None
    gap = min((b - a).total_seconds() for a, b in zip(times, times[1:], strict=False))
    if gap < CRON_FLOOR:
        raise ValueError(f"cron expression {expression!r} runs every {gap:g} s; the minimum "
                         f"interval is {CRON_FLOOR:g} s (one minute)")
    return expression


def cron_next(expression: str, after: datetime) -> datetime:
    """The first time ``expression`` matches after ``after`` (cron runs in local time)."""
    from croniter import croniter

    return croniter(expression, after.astimezone()).get_next(datetime)


def check_text(name: str, value: str) -> str:
    """A prompt or focus: non-empty and of sane length."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string")
    if len(value) > MAX_PROMPT:
        raise ValueError(f"{name} must be at most {MAX_PROMPT} characters, got {len(value)}")
    return value.strip()


def _local(moment: str | None) -> str:
    """An ISO time as local ``2026-11-23 17:19 CET``; anything else as it is."""
    try:
        parsed = parse_iso(str(moment))
    except (ValueError, TypeError):
        parsed = None
    return parsed.astimezone().strftime("%Y-%m-%d %H:%M %Z") if parsed else str(moment)


def every(seconds: float | None) -> str:
    """An interval as people say it: ``every 2 s``, ``every 10 min``, ``every hour``."""
    if seconds is None:
        return "every ? s"
    for size, unit, one in ((86400, "days", "day"), (3600, "h", "hour"), (60, "min", "minute")):
        if seconds >= size and seconds % size == 0:
            n = int(seconds // size)
            return f"every {one}" if n == 1 else f"every {n} {unit}"
    return f"every {seconds:g} s"


@dataclass
class Trigger:
    """One trigger, as saved, listed and handed to the runs it fires."""

    id: str
    kind: str
    prompt: str
    agent_id: str
    created_at: str
    source: str = "api"
    interval: float | None = None
    run_at: str | None = None
    cron: str | None = None
    condition: dict[str, Any] | None = None
    cooldown: float = 0.0
    timeout: float | None = None
    scheduled_by_run_id: str | None = None
    model: str | None = None
    trace_id: str | None = None
    """Spec 002's ``traceId``: one piece of work across the trigger and its runs."""
    approved: bool = True
    status: TriggerStatus = "active"
    next_run: str | None = None
    last_fired_at: str | None = None
    last_run_id: str | None = None
    last_status: TriggerRunStatus | None = None
    last_result: str | None = None
    runs: int = 0
    errors: int = 0
    skipped: int = 0

    @property
    def active(self) -> bool:
        """True until it is cancelled, done or missed (False while it needs approval)."""
        return self.status == "active"

    @property
    def needs_approval(self) -> bool:
        """True for a restored trigger with no signed record of it: it never runs."""
        return self.status == NEEDS_APPROVAL

    @property
    def status_text(self) -> str:
        """The status in words: ``active``, ``needs approval``, ``cancelled``..."""
        return trigger_status_words(self.status)

    def approval_digest(self) -> str:
        """The digest its signed record carries: a condition's covers the condition and
        prompt; a time-based trigger's covers its kind, schedule, prompt, timeout, model and
        trace id (everything that decides when and what it runs)."""
        from agent_kernel.core.trust import condition_digest, trigger_digest

        if self.kind == "conditional":
            return condition_digest(self.agent_id, self.condition, self.prompt)
        return trigger_digest(self.agent_id, self.kind, self.prompt, self.definition())

    def definition(self) -> dict[str, Any]:
        """What, beside kind and prompt, defines a time-based trigger (signed with it)."""
        return {"interval": self.interval, "run_at": self.run_at, "cron": self.cron,
                "timeout": self.timeout, "model": self.model, "trace_id": self.trace_id}

    def to_record(self) -> dict[str, Any]:
        """The JSON the store writes (without ``approved``: the ledger holds approvals)."""
        record = asdict(self)
        record.pop("approved", None)
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Trigger:
        """Rebuild from a stored record, ignoring fields this version does not know.

        A saved ``approved`` is ignored: a trigger read from disk is unapproved until the
        ledger says otherwise.
        """
        known = {f.name for f in fields(cls)} - {"approved"}
        made = cls(**{k: v for k, v in record.items() if k in known})
        made.approved = False
        return made

    def schedule_text(self) -> str:
        """When it runs, in a few words."""
        if self.kind == "recurring":
            return every(self.interval)
        if self.kind in ONE_SHOT:
            return f"once at {_local(self.run_at)}"
        if self.kind == "cron":
            return f"cron {self.cron}"
        from agent_kernel.triggers.conditions import Condition, ConditionError

        try:
            text = Condition.parse(self.condition).describe() if self.condition else "when ?"
        except ConditionError:  # a saved condition that no longer reads: it never runs
            text = "when ? (its condition cannot be read)"
        return text + (f" (cooldown {self.cooldown:g} s)" if self.cooldown else "")

    def run_context(self, due_at: str | None, fired_at: str | None) -> dict[str, Any]:
        """The ``trigger`` field of a fired run's context (spec 001's 工具调用上下文)."""
        name = {"once": "schedule_once", "cron": "schedule_cron"}.get(self.kind, "schedule")
        return {"agent_id": self.agent_id, "trigger": name, "type": self.kind,
                "trigger_id": self.id, "focus": self.prompt,
                "scheduled_by_run_id": self.scheduled_by_run_id, "due_at": due_at,
                "fired_at": fired_at, **self.trace_fields()}

    def trace_fields(self) -> dict[str, str]:
        """``{"trace_id": ...}`` for its ledger records and runs, or nothing without one."""
        return {"trace_id": self.trace_id} if self.trace_id else {}
