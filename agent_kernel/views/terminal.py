"""Answers typed at a terminal, for ``python -m agent_kernel run`` and terminal IPython.

Under the text view's ``[question]`` line the person sees the options
numbered, the default and how long the question waits, then a ``>`` prompt:
a number or the option's text answers, Enter on an empty line takes the
default. Approvals take ``y`` / ``n`` / ``a`` (always), and Enter denies.
The timeout and default rules are not here: the question's own timeout runs
in :class:`~agent_kernel.engine.questions.QuestionChannel`, as it does for the
buttons in a notebook; this module only hands the channel answers.

An approval is shown *exactly* as the tool will receive it (the text view's
line above is redacted, like everything saved): every argument in full, what
looks like a secret highlighted, invisible and control characters as visible
``U+…`` tokens (see :mod:`.exact`). Those lines go only to a terminal (stdout, or
stderr when stdout is a file or a pipe), never into a log.

The idea that governs it: a reader never outlives its question. A thread
blocked in ``readline()`` would stay blocked after its question timed out
and take the next line the person types at the IPython prompt. So a reader
waits with ``select()`` on the terminal's file descriptor in short polls,
reads only when the terminal has a line for it (a terminal in canonical mode
hands over one line per read, never more), and stops as soon as its question
is no longer pending. :meth:`TerminalAnswerer.close` ends and joins them all.
"""

from __future__ import annotations

import os
import select
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TextIO

from agent_kernel.core.events import Event, Question
from agent_kernel.engine.approvals import ALWAYS, APPROVE, DENY
from agent_kernel.views.text import TextView

if TYPE_CHECKING:
    from agent_kernel.core.events import EventBus
    from agent_kernel.engine.questions import QuestionChannel


class Asked(Protocol):
    """Whose questions a terminal answers: an agent, or a team's relay of its Teller."""

    @property
    def questions(self) -> QuestionChannel: ...

    @property
    def bus(self) -> EventBus: ...

POLL_SECONDS = 0.05
# The letter that answers each approval button, and how the terminal names it.
APPROVAL_KEYS = {APPROVE: ("y", "approve"), DENY: ("n", "deny"),
                 ALWAYS: ("a", "always allow this tool")}
APPROVAL_WORDS = {APPROVE: {"y", "yes", "approve"}, DENY: {"n", "no", "deny"},
                  ALWAYS: {"a", "always"}}


def can_answer_on(stream: TextIO | None) -> bool:
    """True when ``stream`` is a terminal that answers can be read from."""
    if stream is None or os.name == "nt":  # select() cannot wait on a Windows console
        return False
    try:
        return bool(stream.isatty()) and stream.fileno() >= 0
    except (AttributeError, OSError, ValueError):
        return False


def writes_to_terminal(stream: TextIO | None) -> bool:
    """True when ``stream`` writes to a terminal (what is written there is not kept)."""
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, OSError, ValueError):
        return False


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.3g} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f}".rstrip("0").rstrip(".") + " h"


def hint(event: Question, restate: bool = False) -> str:
    """The line under a question: its choices, its default and how long it waits
    (after the question itself when ``restate``: other lines came in between)."""
    if event.kind == "approval" and event.options:
        choices = "  ".join(f"[{APPROVAL_KEYS[o][0]}] {APPROVAL_KEYS[o][1]}"
                            for o in event.options if o in APPROVAL_KEYS)
        default = APPROVAL_KEYS.get(event.default or "", (None, event.default))[1]
    elif event.options:
        choices = "  ".join(f"[{i}] {option}" for i, option in enumerate(event.options, 1))
        default = event.default
    else:
        choices, default = "type your answer", event.default
    shown = f" (default: {default})" if default is not None else ""
    question = f"{event.question} " if restate else ""
    return f"  {question}{choices}{shown} · answer within {_duration(event.timeout)}"


def interpret(event: Question, typed: str) -> str:
    """The answer the line ``typed`` gives ``event``; ValueError says what to type instead."""
    text = typed.strip()
    if not text:
        if event.default is not None:
            return event.default
        raise ValueError("type an answer" if not event.options else
                         "type the number of an option")
    if event.kind == "approval" and event.options:
        word = text.lower()
        for option in event.options:
            if word == option.lower() or word in APPROVAL_WORDS.get(option, ()):
                return option
        letters = " / ".join(APPROVAL_KEYS[o][0] for o in event.options if o in APPROVAL_KEYS)
        raise ValueError(f"type {letters}")
    if event.options:
        if text.isdigit() and 1 <= int(text) <= len(event.options):
            return event.options[int(text) - 1]
        for option in event.options:
            if option.casefold() == text.casefold():
                return option
        raise ValueError(f"type a number from 1 to {len(event.options)} or one of the options")
    return text


class TerminalAnswerer:
    """Asks a run's pending questions on a terminal, one at a time, each read in a thread.

    Make it with the run's :class:`TextView` (it writes through it, so the
    transcript's lines and the prompt do not run together), then :meth:`attach`;
    :meth:`close` when the run ends.
    """

    def __init__(self, agent: Asked, view: TextView, stdin: TextIO | None = None,
                 screen: TextIO | None = None) -> None:
        """``screen``: where an approval's exact arguments are written (by default the view's
        stream if it is a terminal, else stderr if that is one, else nowhere)."""
        self.agent = agent
        self.view = view
        self.stdin = stdin if stdin is not None else sys.stdin
        self.screen = screen
        self._turn = threading.Lock()  # one question on the terminal at a time
        self._asking: Question | None = None  # the question that has the turn
        self._readers: dict[str, threading.Thread] = {}
        self._closed = threading.Event()
        self._unsubscribe: Callable[[], None] | None = None

    def attach(self) -> TerminalAnswerer:
        """Tell the question channel someone can answer, and start listening."""
        self.agent.questions.attach_answerer()
        self._unsubscribe = self.agent.bus.subscribe(self.on_event)
        return self

    def close(self) -> None:
        """Stop listening and end every reader (waits for them; each polls briefly)."""
        self._closed.set()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
            self.agent.questions.detach_answerer()
        for reader in list(self._readers.values()):
            reader.join(timeout=2.0)

    def on_event(self, event: Event) -> None:
        """Start a reader for a question of this run that waits for an answer."""
        if not isinstance(event, Question) or self._closed.is_set():
            return
        if self.view.run_id is not None and event.run_id != self.view.run_id:
            return
        if event.question_id not in self.agent.questions.pending:  # ended at once
            return
        asking = self._asking
        interrupted = asking is not None and not self._gone(asking)
        if interrupted and asking is not None:  # this question's line cut into its prompt
            self.view.prompt(f"  {asking.question} > ")
        reader = threading.Thread(target=self._ask, args=(event, interrupted), daemon=True,
                                  name=f"agent-kernel-answer-{event.question_id}")
        self._readers[event.question_id] = reader
        reader.start()

    def _gone(self, event: Question) -> bool:
        return self._closed.is_set() or event.question_id not in self.agent.questions.pending

    def _ask(self, event: Question, restate: bool) -> None:
        try:
            while not self._turn.acquire(timeout=POLL_SECONDS):
                if self._gone(event):
                    return
            try:
                if self._gone(event):
                    return
                self._asking = event
                if event.kind == "approval":
                    self._show_exact(event)
                self.view.line(hint(event, restate=restate))
                while True:
                    self.view.prompt("  > ")
                    typed = self._read_line(event)
                    if typed is None:
                        return
                    self.view.typed(typed)
                    try:
                        answer = interpret(event, typed)
                    except ValueError as exc:
                        self.view.line(f"  {exc}")
                        continue
                    self.agent.questions.answer(event.question_id, answer)
                    return
            finally:
                self._asking = None
                self._turn.release()
        finally:
            self._readers.pop(event.question_id, None)

    def _show_exact(self, event: Question) -> None:
        """The approval's arguments exactly as the tool gets them, on the terminal only."""
        from agent_kernel.views.exact import exact_text

        screen = self.screen
        if screen is None:
            screen = next((s for s in (self.view.stream, sys.stderr) if writes_to_terminal(s)),
                          None)
        if screen is None:
            self.view.line("  (the exact arguments are shown only on a terminal, and neither "
                           "stdout nor stderr is one: deny unless the line above is enough)")
            return
        color = writes_to_terminal(screen)
        lines = ["  It will run with exactly:",
                 *exact_text((event.details or {}).get("arguments"), color=color)]
        if screen is self.view.stream:
            for line in lines:
                self.view.line(line)
            return
        try:
            screen.write("\n".join(lines) + "\n")
            screen.flush()
        except (OSError, ValueError):
            pass

    def _read_line(self, event: Question) -> str | None:
        """One line from the terminal, or None once the question ended or input did."""
        fd = self.stdin.fileno()
        encoding = getattr(self.stdin, "encoding", None) or "utf-8"
        data = b""
        while not self._gone(event):
            ready, _, _ = select.select([fd], [], [], POLL_SECONDS)
            if not ready:
                continue
            chunk = os.read(fd, 4096)
            if not chunk:  # end of input: the question waits for its timeout
                return None
            data += chunk
            if data.endswith(b"\n"):
                return data.decode(encoding, "replace").rstrip("\r\n")
        return None
