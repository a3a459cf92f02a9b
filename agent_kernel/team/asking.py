"""The Teller's question to the person, as spec 000 has it: the run ends, the answer wakes it.

In a team, ``ask_user`` does not wait inside the Teller's run. The question is
written to ``<workspace>/team/pending_question.json`` (spec 000's fields, with
``expiresAt`` computed) and the run ends after that response's tool calls; the
:class:`~agent_kernel.team.Team` then puts the question to the person, and
the answer starts the Teller again with it in its context: the ``ask_user``
call's result becomes ``{answer, source}`` and the Teller's next message says
what was answered. The file outlives the kernel, but a new ``Team`` on the same
workspace takes it back as data, not as the Teller's question: the person
decides whether their next prompt answers it (:mod:`agent_kernel.team.earlier`).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from agent_kernel.core.safe_open import unlink
from agent_kernel.core.statuses import AnswerSource
from agent_kernel.core.workspace import Workspace
from agent_kernel.team.society import SocietyError, _read_json, _write_json

if TYPE_CHECKING:
    from agent_kernel.engine.agent import Agent
    from agent_kernel.engine.questions import QuestionChannel

FILE = "team/pending_question.json"
MAX_BYTES = 64 * 1024


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def _parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclass
class PendingQuestion:
    """A question the Teller asked and the person has not answered yet."""

    question: str
    options: list[str] | None
    timeout: float
    default: str | None
    createdAt: str  # noqa: N815  (spec 000's field names)
    expiresAt: str  # noqa: N815
    prompt: str = ""
    """The person's prompt the Teller was working on when it asked."""
    call_id: str | None = None
    trace_id: str | None = None
    task_id: str | None = None

    @classmethod
    def new(cls, question: str, options: list[str] | None, timeout: float,
            default: str | None, **fields: Any) -> PendingQuestion:
        """A question asked now; ``expiresAt`` is ``timeout`` seconds from now."""
        now = datetime.now(timezone.utc)
        return cls(question=question, options=options, timeout=float(timeout), default=default,
                   createdAt=_iso(now), expiresAt=_iso(now + timedelta(seconds=timeout)),
                   **fields)

    def seconds_left(self) -> float:
        """Seconds until the question expires (0 once it has)."""
        left = (_parse(self.expiresAt) - datetime.now(timezone.utc)).total_seconds()
        return max(0.0, left)

    def expired_answer(self) -> dict[str, str]:
        """Spec 000's answer for a question nobody answered in time."""
        if self.default is not None:
            return {"answer": self.default, "source": "default"}
        return {"answer": "", "source": "timeout"}

    def to_result(self) -> dict[str, Any]:
        """Spec 000's ``pending_question.json`` fields."""
        return {"question": self.question, "options": self.options, "timeout": self.timeout,
                "default": self.default, "createdAt": self.createdAt,
                "expiresAt": self.expiresAt}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> PendingQuestion:
        """Check a file's fields; raises SocietyError naming the first bad one."""
        question = record.get("question")
        if not isinstance(question, str) or not question.strip():
            raise SocietyError("pending_question.json has no question")
        options = record.get("options")
        if options is not None and not (isinstance(options, list) and all(
                isinstance(o, str) for o in options)):
            raise SocietyError("pending_question.json: options must be a list of text")
        timeout = record.get("timeout")
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
            raise SocietyError("pending_question.json: timeout must be a positive number")
        default = record.get("default")
        if default is not None and not isinstance(default, str):
            raise SocietyError("pending_question.json: default must be text")
        texts = {}
        for name in ("createdAt", "expiresAt"):
            value = record.get(name)
            try:
                _parse(str(value))
            except ValueError:
                raise SocietyError(f"pending_question.json: {name} is not a time") from None
            texts[name] = str(value)
        extra = {name: record[name] for name in ("prompt", "call_id", "trace_id", "task_id")
                 if isinstance(record.get(name), str)}
        return cls(question=question, options=options, timeout=float(timeout), default=default,
                   **texts, **extra)


class QuestionStore:
    """The one pending question of a team's workspace."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.path = workspace.path(FILE)

    def save(self, pending: PendingQuestion) -> None:
        """Write it (redacted, atomically)."""
        _write_json(self.path, asdict(pending))

    def load(self) -> PendingQuestion | None:
        """The saved question, None when there is none; SocietyError for a damaged file."""
        try:
            record = _read_json(self.path, MAX_BYTES)
        except FileNotFoundError:
            return None
        return PendingQuestion.from_record(record)

    def clear(self) -> None:
        """The question was answered (or given up): forget it."""
        with contextlib.suppress(FileNotFoundError):
            unlink(self.workspace.root, FILE)  # the name, walked without following a link


def answered_message(pending: PendingQuestion, reply: dict[str, str]) -> str:
    """What the Teller reads when it is woken with the answer."""
    options = f" (options: {', '.join(pending.options)})" if pending.options else ""
    if reply["source"] == "user":
        said = f"The person answered: {reply['answer']}"
    elif reply["source"] == "default":
        said = (f"Nobody answered in time, so the default answer is used: {reply['answer']} "
                f"(source: default)")
    else:
        said = "Nobody answered in time and there is no default (source: timeout, answer: \"\")"
    return f"You asked the person: {pending.question}{options}\n{said}\nGo on from there."


def tool_result(reply: dict[str, str]) -> str:
    """The ``ask_user`` call's result once answered: spec 000's ``{answer, source}``."""
    return json.dumps({"answer": reply["answer"], "source": reply["source"]},
                      ensure_ascii=False)


class NamedQuestions:
    """A team agent's questions (a Worker's approvals), put to the person through the
    Teller's channel, the one the notebook's run view answers, with the agent named in
    the question's ``details`` (``asked_by``, ``asked_by_role``, ``task_id``)."""

    def __init__(self, channel: QuestionChannel, agent: Agent) -> None:
        self.channel = channel
        self.agent = agent

    @property
    def interactive(self) -> bool:
        """True while the Teller's view (or a terminal) can answer."""
        return bool(self.channel.interactive)

    @property
    def reachable(self) -> bool:
        """True while someone can answer: the Teller's view, or the person's phone."""
        return bool(self.channel.reachable)

    @property
    def pending(self) -> dict[str, Any]:
        """The questions waiting in the shared channel."""
        return dict(self.channel.pending)

    def answer(self, question_id: str, answer: str, source: AnswerSource = "user") -> bool:
        """Answer a waiting question (from any thread)."""
        return bool(self.channel.answer(question_id, answer, source))

    def attach_answerer(self) -> None:
        """A view that can answer arrived (counted on the shared channel)."""
        self.channel.attach_answerer()

    def detach_answerer(self) -> None:
        """A view that could answer went away."""
        self.channel.detach_answerer()

    async def ask(self, *, details: dict[str, Any] | None = None,
                  **question: Any) -> dict[str, str]:
        """Ask through the shared channel, saying who asks."""
        task = self.agent.services.team_task
        named = {**(details or {}), "asked_by": self.agent.agent_id,
                 "asked_by_role": self.agent.role}
        if task is not None:
            named["task_id"] = task.id
        reply: dict[str, str] = await self.channel.ask(details=named, **question)
        return reply
