"""Terminal IPython: one asyncio loop that runs between prompts, so triggers fire there.

A kernel's loop runs all the time; terminal IPython runs none between prompts, so a
scheduler started inside a run's ``asyncio.run`` died with that run and its triggers
never fired. IPython's own answer is ``%gui asyncio``: the prompt itself then runs on
IPython's asyncio loop (``IPython.core.async_helpers.get_asyncio_loop``) under
prompt_toolkit's ``patch_stdout``, so tasks on that loop run while the person types and
what they print appears above the prompt. Here every ``%agent`` run of a terminal
session and its trigger scheduler live on that one loop, and each fired run is printed
with the text view. A person's own GUI loop (``%gui qt``) is left alone, and so is a
``--simple-prompt`` session, which reads input with no loop at all.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


def is_terminal(shell: Any) -> bool:
    """Terminal IPython (prompt_toolkit), not a kernel and not a plain InteractiveShell."""
    return (shell is not None and getattr(shell, "kernel", None) is None
            and type(shell).__module__.startswith("IPython.terminal"))


def terminal_loop(shell: Any) -> asyncio.AbstractEventLoop | None:
    """IPython's asyncio loop, set to run while the prompt waits (``%gui asyncio``); None
    outside terminal IPython, with a simple prompt, or under a GUI loop of the person's."""
    if not is_terminal(shell) or getattr(shell, "simple_prompt", False):
        return None
    if getattr(shell, "active_eventloop", None) not in (None, "asyncio"):
        return None
    if not getattr(shell, "_use_asyncio_inputhook", False):
        shell.enable_gui("asyncio")
    from IPython.core.async_helpers import get_asyncio_loop

    loop: asyncio.AbstractEventLoop = get_asyncio_loop()
    return loop


def run_on(loop: asyncio.AbstractEventLoop, awaitable: Awaitable[T]) -> T:
    """Run ``awaitable`` to its end on ``loop`` (not running: a cell is executing); Ctrl-C
    cancels it and lets it record its cancellation, then raises ``KeyboardInterrupt``."""
    task = asyncio.ensure_future(awaitable, loop=loop)
    try:
        return loop.run_until_complete(task)
    except KeyboardInterrupt:
        task.cancel()
        with contextlib.suppress(BaseException):  # a second Ctrl-C: leave the rest to it
            loop.run_until_complete(asyncio.wait([task], timeout=10))
        raise


def start_on(loop: asyncio.AbstractEventLoop, start: Callable[[], T]) -> T:
    """Call ``start`` (which needs a running loop, as ``TriggerScheduler.start`` does) on
    ``loop``, and return what it returned."""
    async def started() -> T:
        return start()

    return loop.run_until_complete(started())


def print_fired_runs(bus: Any) -> Callable[[], None]:
    """Print each run a trigger starts on ``bus`` with the text view, from its first line
    to its last; returns the unsubscribe."""
    from agent_kernel.core.events import Event, RunFinished, RunStarted
    from agent_kernel.views.text import TextView

    views: dict[str, TextView] = {}

    def on_event(event: Event) -> None:
        if isinstance(event, RunStarted) and event.trigger and event.run_id not in views:
            view = views[event.run_id] = TextView(bus, run_id=event.run_id)
            view.on_event(event)  # it subscribed after this event went out
        elif isinstance(event, RunFinished) and event.run_id in views:
            # The view hears this event too (the bus hands it to a snapshot of its
            # subscribers), so it is closed only after.
            view = views.pop(event.run_id)
            try:
                asyncio.get_running_loop().call_soon(view.close)
            except RuntimeError:
                view.close()

    unsubscribe: Callable[[], None] = bus.subscribe(on_event)
    return unsubscribe
