"""The extension's requests on the probe comm, as typed records validated on arrival.

A message from the frontend is data anyone with the page could have written, so each
action is a pydantic model (``action`` tells them apart) and a message that does not
fit is refused in the words its model carries (``refusal``), never handled half-read.
:class:`.frontend.FrontendProbe` reads ``answer``, ``stop``, ``exact`` and ``state``; the triggers
panel and the team board register ``trigger`` and ``team`` with theirs. Extra keys
(``request_id``, ``protocol``) are left to the channel. Imported only when a request
comes (pydantic is not loaded by ``%load_ext``).
"""

from __future__ import annotations

from typing import ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

NOT_LIVE = "This run is no longer live in the kernel."


class Request(BaseModel):
    """One request of the extension; ``refusal`` says in words what a bad one lacks."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    refusal: ClassVar[str] = "a request this kernel cannot read"


class RunRequest(Request):
    """A request about one live run: a ``run_id`` that is not text names no live run."""

    run_id: str
    refusal: ClassVar[str] = NOT_LIVE


class AnswerRequest(RunRequest):
    """A person's answer to a waiting question or approval."""

    action: Literal["answer"]
    question_id: str
    answer: str
    refusal: ClassVar[str] = "an answer needs question_id and answer as text"


class StopRequest(RunRequest):
    """Stop a run."""

    action: Literal["stop"]


class StateRequest(RunRequest):
    """A run's current state, asked by a page that lost its updates (a reload, a second tab)."""

    action: Literal["state"]


class ExactRequest(RunRequest):
    """A waiting approval's exact arguments (a ``question_id`` that is not text names none)."""

    action: Literal["exact"]
    question_id: str
    refusal: ClassVar[str] = "This approval is no longer waiting."


class TriggerRequest(Request):
    """Cancel or approve a trigger from a triggers panel's controls."""

    action: Literal["trigger"]
    op: Literal["cancel", "approve"]
    trigger_id: str
    refusal: ClassVar[str] = "a trigger action needs op (cancel or approve) and trigger_id"


class TeamRequest(Request):
    """Cancel a queued task or stop a running one from the team board's controls."""

    action: Literal["team"]
    op: Literal["cancel", "stop"]
    id: str
    refusal: ClassVar[str] = "a team action needs op (cancel or stop) and id"


R = TypeVar("R", bound=Request)


def read(kind: type[R], data: dict[str, object]) -> R | str:
    """``data`` as a ``kind`` request, or the words that refuse it."""
    try:
        return kind.model_validate(data)
    except ValidationError:
        return kind.refusal
