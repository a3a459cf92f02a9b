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
"""

from __future__ import annotations

import asyncio
import json
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from agent_kernel.core.events import EventBus, Question, QuestionAnswered
from agent_kernel.core.redaction import scrub
from agent_kernel.core.safe_open import unlink, write_atomic
from agent_kernel.core.statuses import AnswerSource
from agent_kernel.core.workspace import Workspace
from agent_kernel.engine.tool_clock import paused_for_a_person

PENDING_FILE = "pending_question.json"


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


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
        source: AnswerSource
        if not can_answer:
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
        try:
            # The question's own timeout runs; the asking tool's clock waits with it.
            with paused_for_a_person():
                answer, source = await asyncio.wait_for(asyncio.shield(pending.future),
                                                        timeout)
        except asyncio.TimeoutError:
            answer, source = (default, "default") if default is not None else ("", "timeout")
        finally:
            self.pending.pop(question_id, None)
            self._write_pending()
        self.bus.emit(QuestionAnswered(run_id, question_id, answer, source))
        return {"answer": answer, "source": source}

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
