"""Questions to the person: the only channel that flows back into a run.

A tool asks through :meth:`QuestionChannel.ask`; the channel emits a
:class:`~agent_kernel.core.events.Question` and awaits a future. Whoever can
answer (a button in the cell, a text box, the CLI's stdin) calls
:meth:`QuestionChannel.answer` from any thread; the answer is handed to the
run's loop thread-safely. With nobody to answer (papermill, nbclient, a CLI
with no terminal) the question ends at once by spec 000's rules: the
default if there is one (``source: "default"``), else ``source: "timeout"``.
The pending question is mirrored to ``pending_question.json`` in the
workspace while it waits. While it waits, the asking tool call's clock stands
still (:mod:`agent_kernel.engine.tool_clock`): only the question's own timeout runs.

A question can also reach the person away from the notebook: :attr:`QuestionChannel.remote`
is a :class:`RemoteAsker` (wired by ``app.py`` to :mod:`agent_kernel.channels`, which this
floor may not import). When one is ready, a question nobody can click goes to it at once,
and one the notebook leaves unanswered for :attr:`RemoteAsker.after` seconds goes to it
then; the first answer from either place settles the question and ``source`` says where
it came from (``user``: the notebook; ``telegram``, ``email``).
"""

from __future__ import annotations

import asyncio
import json
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Protocol

from agent_kernel.core.events import EventBus, Notice, Question, QuestionAnswered
from agent_kernel.core.redaction import scrub
from agent_kernel.core.safe_open import unlink, write_atomic
from agent_kernel.core.statuses import AnswerSource
from agent_kernel.core.workspace import Workspace
from agent_kernel.engine.tool_clock import paused_for_a_person

PENDING_FILE = "pending_question.json"


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


Answerer = Callable[[str, AnswerSource], bool]
"""``answer(text, source)``: settle the question; False when it was already settled."""


class RemoteAsker(Protocol):
    """A channel that carries a question to the person's phone and brings the answer back."""

    def ready(self) -> bool:
        """Whether a channel is configured to carry questions now."""
        ...

    @property
    def after(self) -> float:
        """Seconds a question the notebook could answer waits before it goes out too."""
        ...

    async def put(self, question: Question, answer: Answerer) -> str:
        """Send ``question``; an answer that comes back calls ``answer``. Returns the
        channel's name (``telegram``); raises when the question could not be sent."""
        ...

    def settled(self, question_id: str, answer: str, source: AnswerSource) -> None:
        """The question ended (from anywhere): stop listening for it, say so there."""
        ...


@dataclass
class Pending:
    """A question waiting for its answer."""

    event: Question
    future: asyncio.Future[tuple[str, AnswerSource]]
    loop: asyncio.AbstractEventLoop
    created: datetime
    limited: bool = False
    """Whether its options limit the reply (``ask_user``'s, spec 000)."""


class AnswerRefused(ValueError):
    """An answer a question does not take: ``ask_user``'s ``options`` limit the reply (spec
    000: "限制用户回复范围"), so any other text is refused and the question goes on waiting.
    The message says what to answer instead, in the person's words."""


def chosen_option(options: list[str], answer: str) -> str:
    """The option ``answer`` names (trimmed, any case), or :class:`AnswerRefused`."""
    said = answer.strip().casefold()
    for option in options:
        if option.casefold() == said:
            return option
    raise AnswerRefused("Answer with one of the choices: " + ", ".join(options) + ".")


class QuestionChannel:
    """Asks, waits, and takes answers from any thread."""

    def __init__(self, bus: EventBus, workspace: Workspace) -> None:
        self.bus = bus
        self.workspace = workspace
        self.pending: dict[str, Pending] = {}
        self._answerers = 0
        self._lock = threading.Lock()
        self.remote: RemoteAsker | None = None
        """Where a question goes when no notebook answers (set by ``app.py``)."""

    # Set by agent_kernel.notebook.blocking while a cell blocks: returns why no click can reach
    # the kernel right now, or None (process-wide: a blocked kernel thread is blocked
    # for every view in it).
    click_gate: Callable[[], str | None] | None = None

    @property
    def interactive(self) -> bool:
        """True while some view or terminal can answer questions."""
        if self._answerers <= 0:
            return False
        gate = QuestionChannel.click_gate
        return gate is None or gate() is None

    @property
    def reachable(self) -> bool:
        """True when someone can answer: a view here, or a channel to the person's phone."""
        return self.interactive or self._remote() is not None

    def _remote(self) -> RemoteAsker | None:
        remote = self.remote
        try:
            return remote if remote is not None and remote.ready() else None
        except Exception:  # a broken configuration must not break asking
            return None

    def attach_answerer(self) -> None:
        """A view that can answer questions arrived."""
        with self._lock:
            self._answerers += 1

    def detach_answerer(self) -> None:
        """A view that could answer questions went away."""
        with self._lock:
            self._answerers = max(0, self._answerers - 1)

    async def ask(
        self,
        *,
        run_id: str,
        question: str,
        options: list[str] | None = None,
        timeout: float = 3600.0,
        default: str | None = None,
        kind: str = "ask",
        details: dict[str, Any] | None = None,
        interactive: bool | None = None,
        limited: bool = False,
    ) -> dict[str, str]:
        """Ask and wait; returns ``{"answer": ..., "source": "user"|"default"|"timeout"}``.

        ``limited``: the options limit the reply (``ask_user``'s): a person's answer outside
        them is refused (:meth:`answer`). Other questions with options (a team's restored
        tasks) read any other answer as choosing none of them."""
        question_id = f"q_{secrets.token_hex(6)}"
        event = Question(run_id, question_id, question, options or None, float(timeout),
                         default, kind=kind, details=details)
        can_answer = self.interactive if interactive is None else interactive
        remote = self._remote()
        source: AnswerSource
        if not can_answer and remote is None:
            answer, source = (default, "default") if default is not None else ("", "timeout")
            self.bus.emit(event)
            self.bus.emit(QuestionAnswered(run_id, question_id, answer, source))
            return {"answer": answer, "source": source}
        loop = asyncio.get_running_loop()
        created = datetime.now(timezone.utc)
        pending = Pending(event, loop.create_future(), loop, created,
                          limited=limited and bool(options))
        self.pending[question_id] = pending
        self._write_pending()
        self.bus.emit(event)
        relay = None if remote is None else loop.create_task(
            self._relay(remote, event, 0.0 if not can_answer else remote.after, can_answer))
        try:
            # The question's own timeout runs; the asking tool's clock waits with it.
            with paused_for_a_person():
                answer, source = await asyncio.wait_for(asyncio.shield(pending.future),
                                                        timeout)
        except asyncio.TimeoutError:
            answer, source = (default, "default") if default is not None else ("", "timeout")
        finally:
            if relay is not None:
                relay.cancel()
            self.pending.pop(question_id, None)
            self._write_pending()
        if remote is not None:
            try:
                remote.settled(question_id, answer, source)
            except Exception as exc:  # the answer stands whatever the channel says
                self.bus.emit(Notice(run_id, f"Could not tell the channel the question "
                                     f"ended: {exc}", level="warning"))
        self.bus.emit(QuestionAnswered(run_id, question_id, answer, source))
        return {"answer": answer, "source": source}

    async def _relay(self, remote: RemoteAsker, event: Question, delay: float,
                     can_answer: bool) -> None:
        """After ``delay`` seconds still unanswered: send the question to the channel."""
        if delay > 0:
            await asyncio.sleep(delay)
        pending = self.pending.get(event.question_id)
        if pending is None or pending.future.done():
            return
        # Once sending has begun it finishes even if the question is answered meanwhile, so
        # the channel learns the message's id and can say how the question ended.
        sending = asyncio.ensure_future(remote.put(
            event, lambda answer, source: self.answer(event.question_id, answer, source)))
        try:
            where = await asyncio.shield(sending)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.bus.emit(Notice(event.run_id, f"Could not send the question to your phone: "
                                 f"{exc}", level="warning"))
            if not can_answer:  # nobody else can answer: end it now by the usual rules
                default = event.default
                self.answer(event.question_id, default if default is not None else "",
                            "default" if default is not None else "timeout")
            return
        self.bus.emit(Notice(event.run_id, f"Sent the question to you on {where.title()}; "
                             "the first answer, there or here, counts.", level="info"))

    def answer(self, question_id: str, answer: str, source: AnswerSource = "user") -> bool:
        """Answer a pending question from any thread; False if it is gone.

        A question whose options limit the reply (``ask_user``'s) takes only one of them:
        :class:`AnswerRefused` for anything else, and the question goes on waiting."""
        pending = self.pending.get(question_id)
        if pending is None or pending.future.done():
            return False
        event = pending.event
        if source == "user" and pending.limited and event.options \
                and answer != event.default:  # taking the question's own default is a choice
            answer = chosen_option(event.options, answer)

        def settle() -> None:
            if not pending.future.done():
                pending.future.set_result((answer, source))

        if _on_loop(pending.loop):
            settle()
        else:
            pending.loop.call_soon_threadsafe(settle)
        return True

    def _write_pending(self) -> None:
        root = self.workspace.ensure()
        if not self.pending:
            unlink(root, PENDING_FILE)  # the name itself, never what a link points at
            return
        latest = list(self.pending.values())[-1]
        q = latest.event
        body = {
            "id": q.question_id,
            "run_id": q.run_id,
            "kind": q.kind,
            "question": q.question,
            "options": q.options,
            "timeout": q.timeout,
            "default": q.default,
            "createdAt": _iso(latest.created),
            "expiresAt": _iso(latest.created + timedelta(seconds=q.timeout)),
            "pending": len(self.pending),
        }
        write_atomic(root, PENDING_FILE, json.dumps(scrub(body), ensure_ascii=False,
                                                   indent=2).encode("utf-8"))


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
