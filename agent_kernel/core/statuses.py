"""Every status vocabulary of the kernel as one type, and the one place they become words.

A status is never a free string: a run's outcome, what the saved run shows, a tool
call's state, a delegated task's, a trigger's, a question's answer source and a
notice's level are each a ``Literal`` here, so mypy sees a misspelt value. The values
are the ones saved notebooks, ledgers and task and trigger files already hold; they
never change (a new value is added, an old one never renamed).

The words a person reads for them live here too (:data:`RUN_STATUS_WORDS`,
:data:`OUTCOME_WORDS`, :data:`TRIGGER_STATUS_WORDS`), once: the HTML and text
fallbacks, the terminal, the trigger panel and board use them, and
``labextension/src/words.ts`` is checked against them by a test
(``tests/views/test_run_schema.py``), so the extension says the same.
"""

from __future__ import annotations

from typing import Literal, cast, get_args

RunOutcome = Literal["running", "ok", "error", "cancelled", "limit", "timeout"]
"""How one agent run ended (``RunResult.status``); ``running`` until it does. ``timeout``
comes only from a team: a trigger's run handed to a Worker task that ran out of time."""

RunStatus = Literal["running", "done", "done_with_failures", "denied", "stopped", "failed",
                    "limit"]
"""What a run's saved form shows (``status`` of the run MIME JSON and of its nested runs)."""

ToolState = Literal["running", "waiting", "ok", "failed"]
"""A tool call's card: running, waiting for its approval, then ok or failed."""

TaskStatus = Literal["held", "queued", "running", "trigger", "ok", "error", "cancelled",
                     "timeout", "limit", "interrupted"]
"""A delegated task's (``team/queue.py``): held, queued, running or a trigger, then how it
ended."""

MemberStatus = Literal["running", "waiting", "ok", "error", "cancelled", "limit", "timeout",
                       "terminated", "interrupted"]
"""A spawned team agent's (spec 004, ``team/members.py``): running or waiting for a
message, then how it ended (``terminated``: ended by another agent)."""

TaskEnding = Literal["running", "ok", "error", "cancelled", "limit", "timeout", "terminated",
                     "interrupted"]
"""How a task's run ended, as its ``task_finished`` record says: a run's outcome, or
``terminated`` (a spawned agent ended by another; the task itself is then ``cancelled``)."""

TriggerStatus = Literal["active", "needs_approval", "cancelled", "done", "missed", "error"]
"""A trigger's (``triggers/model.py``)."""

TriggerRunStatus = Literal["ok", "error", "cancelled", "limit", "timeout", "running"]
"""How a trigger's last run ended (``Trigger.last_status``, the ``trigger_run`` record)."""

AnswerSource = Literal["user", "default", "timeout", "headless", "standing", "telegram", "email"]
"""Who answered a question or approval, as the saved run says it: ``user`` is the person in
the notebook or terminal; ``telegram`` and ``email`` the person through a channel that
reaches their phone (:mod:`agent_kernel.channels`)."""

SavedAnswerSource = Literal[AnswerSource, "stopped"]
"""How a saved question or approval ended: who answered it, or ``stopped``: no one did,
the run was stopped (or failed) while it waited (``views.run_record.ended_waits``)."""

REMOTE_SOURCES: frozenset[str] = frozenset({"telegram", "email"})
"""Answers the person gave through a channel rather than the notebook."""

NoticeLevel = Literal["info", "warning", "error"]
"""A notice's level."""

RUN_OUTCOMES: tuple[RunOutcome, ...] = get_args(RunOutcome)
RUN_STATUSES: tuple[RunStatus, ...] = get_args(RunStatus)
TASK_STATUSES: tuple[TaskStatus, ...] = get_args(TaskStatus)
TRIGGER_STATUSES: tuple[TriggerStatus, ...] = get_args(TriggerStatus)

RUN_STATUS_WORDS: dict[RunStatus, str] = {
    "running": "running", "done": "done", "done_with_failures": "done with failures",
    "denied": "denied", "stopped": "stopped", "failed": "failed",
    "limit": "stopped at the limit"}
"""A saved run's status in words (``labextension/src/words.ts`` STATUS_TEXT is the same)."""

OUTCOME_WORDS: dict[RunOutcome, str] = {
    "running": "running", "ok": "done", "cancelled": "stopped", "error": "error",
    "limit": "limit", "timeout": "timeout"}
"""A run's outcome as the terminal's usage line says it (``done · 89 tokens ...``)."""

OUTCOME_SHOWN: dict[RunOutcome, RunStatus] = {
    "running": "running", "ok": "done", "cancelled": "stopped", "error": "failed",
    "limit": "limit", "timeout": "failed"}
"""The status a finished run's saved form shows for its outcome (before its tool calls and
team agents are looked at: ``done`` may become ``done_with_failures`` or ``denied``)."""

TRIGGER_STATUS_WORDS: dict[TriggerStatus, str] = {
    "active": "active", "needs_approval": "needs approval", "cancelled": "cancelled",
    "done": "done", "missed": "missed", "error": "error"}
"""A trigger's status in words (the panel, the board, the scheduler's refusals)."""


def task_outcome(status: TaskStatus) -> RunOutcome:
    """A settled task's status as the outcome of the run that waited for it (a task that
    has not ended, which a settled one never is, counts as an error)."""
    match status:
        case "ok" | "error" | "cancelled" | "limit" | "timeout" | "running":
            return status
        case _:
            return "error"


def run_status_words(status: str) -> str:
    """A saved run's status in words; a value this version does not know, as it is."""
    return RUN_STATUS_WORDS.get(cast(RunStatus, status), status)


def outcome_words(outcome: str) -> str:
    """A run's outcome as the usage line says it; a value this version does not know, as it
    is."""
    return OUTCOME_WORDS.get(cast(RunOutcome, outcome), outcome)


def shown_status(outcome: str) -> RunStatus:
    """The status a finished run's saved form shows for its outcome (an unknown one:
    ``failed``)."""
    return OUTCOME_SHOWN.get(cast(RunOutcome, outcome), "failed")


def trigger_status_words(status: str) -> str:
    """A trigger's status in words; a value this version does not know, as it is."""
    return TRIGGER_STATUS_WORDS.get(cast(TriggerStatus, status), status.replace("_", " "))
