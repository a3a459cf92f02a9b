"""Checking a saved trigger before it is booked: a file on disk is data, not our own output.

A trigger file may be old, hand-edited, copied or planted, so every field the
scheduler acts on meets the same limits a new trigger meets (:mod:`.model`):
a known kind, an interval of 1 s to a year, a valid cron of at least a minute,
readable times that are not absurd, a cooldown of 0 or more, a positive
timeout, a prompt of sane length, a condition that parses. An impossible
trigger is refused with an error naming the field and the value. Where the
fix is obvious it is fixed and a note says so: a ``next_run`` that is
unreadable, more than a year in the past or further ahead than its schedule
allows is booked again from now. Nothing here loops over a stored value, so
checking a file takes the same few microseconds whatever it says.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from agent_kernel.core.statuses import TriggerStatus
from agent_kernel.triggers.conditions import Condition
from agent_kernel.triggers.model import (
    CRON_FLOOR,
    KINDS,
    LIVE,
    MAX_INTERVAL,
    MIN_INTERVAL,
    ONE_SHOT,
    Trigger,
    check_cron,
    check_text,
    cron_next,
    iso,
    parse_iso,
)

STALE = timedelta(days=366)
MAX_AHEAD = timedelta(days=366 * 100)
EARLIEST = datetime(1970, 1, 1, tzinfo=timezone.utc)
MAX_ID = 200
MAX_CRON = 200
ENDED: tuple[TriggerStatus, ...] = ("cancelled", "done", "missed")
COUNTERS = ("runs", "errors", "skipped")
# The schedule field each kind uses; the others are cleared.
_KIND_FIELDS = {"interval": ("recurring",), "run_at": ONE_SHOT, "cron": ("cron",),
                "condition": ("conditional",)}
TEXTS = ("source", "scheduled_by_run_id", "model", "trace_id", "last_run_id", "last_status",
         "last_result")


class RecordError(ValueError):
    """A saved trigger that cannot be restored; the message names the field and the value."""


@dataclass
class Checked:
    """A record that passed: the trigger, and what was fixed on the way (``notes``)."""

    trigger: Trigger
    notes: list[str] = field(default_factory=list)
    stale_since: datetime | None = None


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_name(name: str, value: object) -> str:
    """An id or agent id: text that is safe inside a file name."""
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_ID \
            or value.startswith(".") or any(c in value for c in "/\\:\0") \
            or not value.isprintable():
        raise RecordError(f"{name} must be a short name without path characters, "
                          f"got {_show(value)}")
    return value


def _seconds(name: str, value: object, low: float, high: float, *, low_open: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RecordError(f"{name} must be a number of seconds, got {_show(value)}")
    number = float(value)
    too_low = number <= low if low_open else number < low
    if not math.isfinite(number) or too_low or number > high:
        bound = f"more than {low:.12g}" if low_open else f"at least {low:.12g}"
        raise RecordError(f"{name} must be {bound} and at most {high:.12g} seconds, "
                          f"got {_show(value)}")
    return number


def _time(name: str, value: object, now: datetime) -> datetime:
    if not isinstance(value, str):
        raise RecordError(f"{name} must be an ISO 8601 time, got {_show(value)}")
    try:
        moment = parse_iso(value)
    except (ValueError, OverflowError):
        moment = None
    if moment is None:
        raise RecordError(f"{name} must be an ISO 8601 time, got {_show(value)}")
    if not EARLIEST <= moment <= now + MAX_AHEAD:
        raise RecordError(f"{name} {_show(value)} is not a plausible time (before 1970 or "
                          "more than a century ahead)")
    return moment


def check_record(record: dict[str, Any], now: datetime) -> Checked | None:
    """The trigger ``record`` describes, checked; None for one that already ended.

    Raises :class:`RecordError` for a trigger that cannot be restored.
    """
    status = record.get("status", "active")
    if status in ENDED:
        return None
    if status not in LIVE:
        raise RecordError(f"status must be one of {', '.join(LIVE)}, got {_show(status)}")
    kind = record.get("kind")
    if kind not in KINDS:
        raise RecordError(f"kind must be one of {', '.join(KINDS)}, got {_show(kind)}")
    clean = dict(record)
    clean["id"] = check_name("id", record.get("id"))
    clean["agent_id"] = check_name("agent_id", record.get("agent_id"))
    try:
        clean["prompt"] = check_text("prompt", record.get("prompt", ""))
    except ValueError as exc:
        raise RecordError(str(exc)) from None
    notes: list[str] = []
    for name, kinds in _KIND_FIELDS.items():
        if kind not in kinds:
            clean[name] = None
    if kind == "recurring":
        clean["interval"] = _seconds("interval", record.get("interval"), MIN_INTERVAL,
                                     MAX_INTERVAL)
    elif kind in ONE_SHOT:
        clean["run_at"] = iso(_time("run_at", record.get("run_at"), now))
    elif kind == "cron":
        expression = record.get("cron")
        if not isinstance(expression, str) or len(expression) > MAX_CRON:
            raise RecordError(f"cron must be a cron expression, got {_show(expression)}")
        try:
            clean["cron"] = check_cron(expression, now)
        except ValueError as exc:
            raise RecordError(str(exc)) from None
    else:
        try:
            clean["condition"] = Condition.parse(record.get("condition")).to_dict()
        except ValueError as exc:
            raise RecordError(f"condition: {exc}") from None
    cooldown = record.get("cooldown") or 0
    clean["cooldown"] = _seconds("cooldown", cooldown, 0, MAX_INTERVAL)
    timeout = record.get("timeout")
    clean["timeout"] = None if timeout is None else _seconds("timeout", timeout, 0, MAX_INTERVAL,
                                                             low_open=True)
    clean["created_at"] = str(record.get("created_at") or "")
    for name in COUNTERS:
        value = record.get(name, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            notes.append(f"{name} {_show(value)} is not a count; set to 0")
            clean[name] = 0
    for name in TEXTS:
        value = record.get(name)
        if value is not None and not isinstance(value, str):
            notes.append(f"{name} {_show(value)} is not text; cleared")
            clean[name] = None
    value = record.get("last_fired_at")
    if value is not None:
        try:
            _time("last_fired_at", value, now)
        except RecordError as exc:
            notes.append(f"{exc}; cleared")
            clean["last_fired_at"] = None
    checked = Checked(Trigger.from_record(clean), notes)
    _check_next_run(checked, record.get("next_run"), now)
    return checked


def _check_next_run(checked: Checked, value: object, now: datetime) -> None:
    """Keep a plausible ``next_run``; book from now (with a note) one that is not."""
    trigger = checked.trigger
    trigger.next_run = None
    if trigger.kind not in ("recurring", "cron") or value is None:
        return
    try:
        due = parse_iso(value) if isinstance(value, str) else None
    except (ValueError, OverflowError):
        due = None
    if due is None:
        checked.notes.append(f"next_run {_show(value)} is not an ISO 8601 time; booked again "
                             "from now")
        return
    if due < now - STALE:
        checked.notes.append(f"next_run {value} is more than a year in the past; booked again "
                             "from now")
        checked.stale_since = due
        return
    if trigger.kind == "recurring":
        latest = now + timedelta(seconds=float(trigger.interval or MIN_INTERVAL) + 1)
    else:
        latest = cron_next(str(trigger.cron), now) + timedelta(seconds=CRON_FLOOR)
    if due > latest:
        checked.notes.append(f"next_run {value} is further ahead than its schedule allows; "
                             "booked again from now")
        return
    trigger.next_run = iso(due)


__all__ = ["Checked", "RecordError", "check_name", "check_record"]
