"""A tool call's clock: only the time no person is being asked counts.

Every tool call has a timeout (``Settings.tool_timeout``, or the tool's own). A
question or an approval asked from inside the call (``ToolContext.ask``,
``ask_user``, a trigger's condition approval) waits for a person, and that wait
has its own timeout, shown with the question. The tool's timeout must not end it
while the buttons still look live. So a call runs under a :class:`ToolClock`
rather than ``asyncio.wait_for``: the question channel stops the clock while a
person is asked and starts it again when the answer comes, and the call times
out only when the time it spent *not* waiting for a person passes its limit.

The channel finds the clock through a context variable, not an argument: an
approval knows only its run id, and the context travels with the call (asyncio
copies it into every task the call starts, ``Tool.invoke`` into a sync tool's
thread, and ``asyncio.run_coroutine_threadsafe`` back from that thread), so a
question asked from anywhere inside the call stops the right clock. A clock
run inside another (a tool call inside a team task, whose wall-clock limit runs
on a clock of its own) stops its parent too.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

current_clock: contextvars.ContextVar[ToolClock | None] = contextvars.ContextVar(
    "agent_kernel_tool_clock", default=None)
"""The clock of the tool call this code runs in, or None outside a tool call."""


class ToolClock:
    """A pausable deadline for one tool call: ``limit`` seconds of time not spent asking."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.waited = 0.0
        """Seconds this call spent waiting for a person (not counted)."""
        self._spent = 0.0
        self._since: float | None = None  # when counting last started; None while stopped
        self._pauses = 0
        self._paused_at = 0.0
        self._running = False
        self._lock = threading.Lock()
        self._wake: Callable[[], None] | None = None
        self.parent: ToolClock | None = None
        """The clock current where this one runs (a team task's, around its tool calls):
        a person being asked stops it too."""

    @property
    def paused(self) -> bool:
        """True while a person is being asked."""
        return self._pauses > 0

    def elapsed(self) -> float:
        """Seconds counted so far."""
        with self._lock:
            counting = time.monotonic() - self._since if self._since is not None else 0.0
            return self._spent + counting

    def remaining(self) -> float:
        """Seconds the call may still take, not counting waits for a person."""
        return max(0.0, self.limit - self.elapsed())

    def pause(self) -> None:
        """Stop counting: a person is being asked. Pauses nest; safe from any thread."""
        now = time.monotonic()
        with self._lock:
            self._pauses += 1
            if self._pauses == 1:
                self._paused_at = now
                if self._since is not None:
                    self._spent += now - self._since
                    self._since = None
        self._notify()
        if self.parent is not None:
            self.parent.pause()

    def resume(self) -> None:
        """Count again once the last pause has ended (the answer came)."""
        now = time.monotonic()
        with self._lock:
            if self._pauses == 0:
                return
            self._pauses -= 1
            if self._pauses == 0:
                self.waited += now - self._paused_at
                if self._running:
                    self._since = now
        self._notify()
        if self.parent is not None:
            self.parent.resume()

    def keep_time(self, on_spent: Callable[[], None]) -> Callable[[], None]:
        """Count from now in the code that runs next in this asyncio task (no task of its
        own, unlike :meth:`run`) and call ``on_spent`` on the loop once the limit is spent,
        time asking a person not counted. The clock becomes current here, so a tool
        call's clock made inside stops it too. Returns the function that ends the watch."""
        loop = asyncio.get_running_loop()
        token = current_clock.set(self)
        timer: asyncio.TimerHandle | None = None
        ended = False

        def check() -> None:
            nonlocal timer
            if timer is not None:
                timer.cancel()
                timer = None
            if ended or self.paused:  # resume() checks again
                return
            left = self.remaining()
            if left > 0:
                timer = loop.call_later(left, check)
            else:
                end()
                on_spent()

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(check)

        def end() -> None:
            nonlocal ended
            if ended:
                return
            ended = True
            if timer is not None:
                timer.cancel()
            self._wake = None
            with self._lock:
                self._running = False
                if self._since is not None:
                    self._spent += time.monotonic() - self._since
                    self._since = None
            with contextlib.suppress(ValueError):  # ended from another context
                current_clock.reset(token)

        with self._lock:
            self._running = True
            if self._pauses == 0:
                self._since = time.monotonic()
        self._wake = wake
        check()
        return end

    @contextlib.contextmanager
    def stopped(self) -> Iterator[None]:
        """The clock stands still inside this block."""
        self.pause()
        try:
            yield
        finally:
            self.resume()

    def _notify(self) -> None:
        wake = self._wake
        if wake is not None:
            wake()

    async def run(self, call: Coroutine[Any, Any, T]) -> T:
        """Await ``call`` with this clock current; ``asyncio.TimeoutError`` once its time is up.

        As with ``asyncio.wait_for``, the call is cancelled (and awaited) when the time
        runs out or when the caller itself is cancelled.
        """
        loop = asyncio.get_running_loop()
        changed = asyncio.Event()

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(changed.set)

        def start() -> asyncio.Task[T]:
            outer = current_clock.get()
            self.parent = outer if outer is not self else None
            current_clock.set(self)  # in a copy of the caller's context, for the task alone
            return asyncio.create_task(call)

        task = contextvars.copy_context().run(start)
        with self._lock:
            self._running = True
            if self._pauses == 0:
                self._since = time.monotonic()
        self._wake = wake
        try:
            while not task.done():
                changed.clear()  # before reading the state, so no change is missed
                left = None if self.paused else self.remaining()
                if left == 0.0:
                    task.cancel()
                    await asyncio.wait({task})
                    if task.cancelled():
                        raise asyncio.TimeoutError
                    break
                waiter = loop.create_task(changed.wait())
                try:
                    await asyncio.wait({task, waiter}, timeout=left,
                                       return_when=asyncio.FIRST_COMPLETED)
                finally:
                    waiter.cancel()
        except asyncio.CancelledError:
            task.cancel()
            await asyncio.wait({task})
            raise
        finally:
            self._wake = None
            with self._lock:
                self._running = False
                if self._since is not None:
                    self._spent += time.monotonic() - self._since
                    self._since = None
        return task.result()


@contextlib.contextmanager
def paused_for_a_person() -> Iterator[None]:
    """Stop the current tool call's clock, if there is one, while a person is asked."""
    clock = current_clock.get()
    if clock is None:
        yield
        return
    with clock.stopped():
        yield
