"""Looking at the person's objects without letting them hang or flood the agent.

A preview, a length or a shape may run the person's code: a ``__repr__``, a ``__len__``,
a ``shape`` property. Such code may sleep for a minute, raise, or return ten megabytes.
:class:`Looker` runs each look in a worker thread and stops waiting after ``per_look``
seconds, within a total budget per tool call; a look that fails or overruns becomes words
("its repr took too long") and the call goes on. A thread stuck in the person's code
cannot be killed: it is left to finish and never given another look, and while
``MAX_STUCK`` of them are still running no new look starts at all.

:func:`short_repr` is reprlib with limits that hold for huge containers too (reprlib
sorts a dict's or a set's keys first, which is ``O(n log n)`` and calls the person's
``__lt__``), and :func:`clip` bounds any text. Nothing here imports a library to look.
"""

from __future__ import annotations

import queue
import reprlib
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import islice
from typing import Generic, TypeVar

T = TypeVar("T")

MAX_STUCK = 8
"""Looks stuck in the person's code, still running, past which no new look starts."""
PREVIEW_CHARS = 200
SLOW_REMEMBERED = 256

_stuck = 0
_stuck_lock = threading.Lock()
SLOW_FOR = 300.0
"""Seconds a look that overran is not tried again on the same object."""
_slow: dict[tuple[int, str], tuple[Callable[[], object], float, float]] = {}
"""Looks that overran, by (id of the object, the look), with a reference that gives the
object back (weak where the object allows it), the wait and when: not tried again on that
same object for ``SLOW_FOR`` seconds."""


def _reference(about: object) -> Callable[[], object]:
    try:
        return weakref.ref(about)
    except TypeError:  # no weak references to it: hold it (at most SLOW_REMEMBERED such)
        return lambda: about


def stuck_looks() -> int:
    """How many abandoned looks are still running the person's code."""
    return _stuck


def _stuck_add(delta: int) -> None:
    global _stuck
    with _stuck_lock:
        _stuck += delta


@dataclass(frozen=True, slots=True)
class Failed:
    """A look that did not give a value, as words for the person and the model."""

    words: str


def _exception_words(exc: BaseException) -> str:
    """``ValueError: its message`` (the message is the person's code too: bounded)."""
    name = type(exc).__name__
    try:
        message = " ".join(str(exc).split())
    except BaseException:  # its __str__ is the person's too, and may raise even SystemExit
        message = ""
    return f"{name}: {clip(message, 80)}" if message else name


@dataclass(slots=True)
class _Job(Generic[T]):
    fn: Callable[[], T]
    done: threading.Event = field(default_factory=threading.Event)
    value: T | None = None
    error: str | None = None


class _Worker:
    """One thread that runs looks in turn until it is stopped or abandoned."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[_Job[object] | None] = queue.SimpleQueue()
        self.abandoned = False
        self.thread = threading.Thread(target=self._loop, name="agent-kernel-look",
                                       daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None:
                return
            try:
                job.value = job.fn()
            except BaseException as exc:  # the person's code may raise anything, even exit
                try:
                    job.error = _exception_words(exc)
                except BaseException:
                    job.error = "it raised an error that cannot be described"
            finally:  # whatever happened, the look is over and an overrun is counted back
                job.done.set()
                if self.abandoned:
                    _stuck_add(-1)
            if self.abandoned:
                return

    def abandon(self) -> None:
        """Its look overran: leave the thread to finish it, give it no more."""
        self.abandoned = True
        _stuck_add(1)

    def stop(self) -> None:
        self.jobs.put(None)


class Looker:
    """Runs looks at the person's objects, each bounded in time, within one budget."""

    def __init__(self, per_look: float = 0.3, total: float = 1.5) -> None:
        self.per_look = per_look
        self.deadline = time.monotonic() + total
        self._worker: _Worker | None = None
        self.failures = 0

    def look(self, what: str, fn: Callable[[], T], *, about: object = None) -> T | Failed:
        """``fn()``, or why not in words (``what`` names the look: "its repr"). A look
        ``about`` an object that overran before is not tried again."""
        key = (id(about), what)
        earlier = _slow.get(key) if about is not None else None
        if (earlier is not None and earlier[0]() is about
                and time.monotonic() - earlier[2] < SLOW_FOR):
            self.failures += 1
            return Failed(f"{what} took too long when last tried (over {earlier[1]:.1f} s); "
                          "not tried again")
        left = self.deadline - time.monotonic()
        if left <= 0:
            self.failures += 1
            return Failed(f"{what} was not looked at (this call's time for looking ran out)")
        if stuck_looks() >= MAX_STUCK:
            self.failures += 1
            return Failed(f"{what} was not looked at (earlier looks at slow objects are "
                          "still running)")
        if self._worker is None:
            self._worker = _Worker()
        job: _Job[T] = _Job(fn)
        self._worker.jobs.put(job)  # type: ignore[arg-type]
        wait = min(self.per_look, left)
        if not job.done.wait(wait):
            self._worker.abandon()
            self._worker = None
            self.failures += 1
            if about is not None:
                if len(_slow) >= SLOW_REMEMBERED:
                    _slow.pop(next(iter(_slow)))
                _slow[key] = (_reference(about), wait, time.monotonic())
            return Failed(f"{what} took too long (over {wait:.1f} s)")
        if job.error is not None:
            self.failures += 1
            return Failed(f"{what} raised {job.error}")
        return job.value  # type: ignore[return-value]

    def close(self) -> None:
        """Let the idle worker end."""
        if self._worker is not None:
            self._worker.stop()
            self._worker = None

    def __enter__(self) -> Looker:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def clip(text: str, limit: int = PREVIEW_CHARS) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis saying it was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _BoundedRepr(reprlib.Repr):
    """reprlib that never sorts nor walks a whole container."""

    def __init__(self, chars: int) -> None:
        super().__init__()
        self.maxlevel = 2
        self.maxlist = self.maxtuple = self.maxset = self.maxfrozenset = self.maxdeque = 6
        self.maxarray = 6
        self.maxdict = 4
        self.maxstring = min(chars, 80)
        self.maxlong = 40
        self.maxother = chars

    def repr_dict(self, x: dict[object, object], level: int) -> str:
        n = len(x)
        if n == 0:
            return "{}"
        if level <= 0:
            return "{...}"
        pieces = [f"{self.repr1(key, level - 1)}: {self.repr1(x[key], level - 1)}"
                  for key in islice(x, self.maxdict)]
        if n > self.maxdict:
            pieces.append("...")
        return "{" + ", ".join(pieces) + "}"

    def _unsorted(self, x: set[object] | frozenset[object], level: int, left: str,
                  right: str, most: int) -> str:
        if not x:
            return f"{type(x).__name__}()"
        if level <= 0:
            return left + "..." + right
        pieces = [self.repr1(item, level - 1) for item in islice(x, most)]
        if len(x) > most:
            pieces.append("...")
        return left + ", ".join(pieces) + right

    def repr_set(self, x: set[object], level: int) -> str:
        return self._unsorted(x, level, "{", "}", self.maxset)

    def repr_frozenset(self, x: frozenset[object], level: int) -> str:
        return self._unsorted(x, level, "frozenset({", "})", self.maxfrozenset)

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 128:  # str() of a huge int is slow, then refused past 4300 digits
            return f"<an integer of {x.bit_length()} bits>"
        return super().repr_int(x, level)

    def repr_instance(self, x: object, level: int) -> str:
        return clip(" ".join(repr(x)[: self.maxother * 2].split()), self.maxother)


def short_repr(value: object, chars: int = PREVIEW_CHARS) -> str:
    """A repr of ``value`` at most ``chars`` long; may run the person's ``__repr__`` (call
    it through a :class:`Looker`)."""
    return clip(" ".join(_BoundedRepr(chars).repr(value)[: chars * 2].split()), chars)
