"""Block a cell until an awaitable ends, on the kernel's own loop, and still take clicks.

``%%agent --wait`` blocks the cell while the run goes on as a task on the
kernel loop (the same loop the widgets, triggers and other runs use). In a
cell that loop is already running, so the wait nests into it with
``nest_asyncio2`` (ipykernel 7's own dependency; the archived nest-asyncio
1.6 is not used), exactly as ``Agent.run`` does. Outside a running loop
(scripts, terminal IPython) it simply runs the awaitable to completion.

Clicks reach a blocking cell by two routes in ipykernel 7, and a nested loop
keeps both open:

- ipykernel 7.4 (the version this project is tested with) dispatches
  ``comm_msg`` concurrently while a cell holds the main shell's lock
  (``Kernel.dispatch_shell(..., concurrent=True)``), but only while the main
  thread's loop turns: the nested ``run_until_complete`` turns it.
- with kernel subshells, JupyterLab >= 4.4.4 sends widget comms to a subshell
  thread (setting ``commsOverSubshells``), so the button callback runs on
  another thread. :meth:`QuestionChannel.answer` hands the answer to the
  loop with ``call_soon_threadsafe``.

Where neither route exists (ipykernel 6, other kernels) a click cannot reach
the cell until it ends. :func:`click_route` detects that; the wait then says
so in the cell and marks the question channel as unable to take clicks, so
questions end at once by spec 000's rules (default, else timeout) instead of
hanging. Interrupting the kernel during the wait stops the run cleanly.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
from collections.abc import Awaitable
from typing import Any, TypeVar

from .questions import QuestionChannel

T = TypeVar("T")

NO_CLICKS = ("agent-kernel: this kernel cannot deliver button clicks to a blocking cell "
             "({why}); questions in this --wait run end at once with their default (or as "
             "timed out) and approvals follow the headless policy. Run without --wait to "
             "answer with buttons.")


def click_route() -> tuple[bool, str]:
    """Whether widget clicks can reach a cell that blocks on the kernel's loop, and how."""
    kernel_module = sys.modules.get("ipykernel.kernelbase")
    if kernel_module is None or not kernel_module.Kernel.initialized():
        return True, "not in a kernel: nothing to click"
    kernel = kernel_module.Kernel.instance()
    try:
        concurrent = "concurrent" in inspect.signature(kernel.dispatch_shell).parameters
    except (TypeError, ValueError):
        concurrent = False
    if concurrent:
        return True, "ipykernel dispatches comm messages while a cell runs"
    if getattr(kernel, "_supports_kernel_subshells", False):
        return True, "comm messages arrive on kernel subshells"
    version = getattr(sys.modules.get("ipykernel"), "__version__", "unknown")
    return False, f"ipykernel {version} handles comm messages only between cells"


def wait_blocking(awaitable: Awaitable[T]) -> T:
    """Run the loop until ``awaitable`` (a coroutine, task or future) is done; return its result.

    A kernel interrupt (the stop button of the notebook) cancels the awaited
    task and waits for it to wind down, then raises ``KeyboardInterrupt``.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is None:
        if asyncio.isfuture(awaitable):
            return awaitable.get_loop().run_until_complete(awaitable)
        return asyncio.run(_as_coroutine(awaitable))
    import nest_asyncio2

    nest_asyncio2.apply(loop)
    future = asyncio.ensure_future(awaitable, loop=loop)
    can_click, why = click_route()
    previous = QuestionChannel.clicks_blocked
    if not can_click:
        print(NO_CLICKS.format(why=why), file=sys.stderr)
        QuestionChannel.clicks_blocked = why
    try:
        return loop.run_until_complete(future)
    except KeyboardInterrupt:
        _wind_down(loop, future)
        raise
    finally:
        QuestionChannel.clicks_blocked = previous


def _wind_down(loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any]) -> None:
    """Cancel ``future`` after an interrupt and let it record its cancellation."""
    if future.done():
        return
    future.cancel()
    try:
        loop.run_until_complete(asyncio.wait([future], timeout=10))
    except BaseException:  # a second interrupt: leave the rest to the loop
        return


async def _as_coroutine(awaitable: Awaitable[T]) -> Any:
    return await awaitable
