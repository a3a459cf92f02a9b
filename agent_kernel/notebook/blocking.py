"""Block a cell until an awaitable ends, on the kernel's own loop, and still take clicks.

``%%agent --wait`` blocks the cell while the run goes on as a task on the
kernel loop (the same loop the widgets, triggers and other runs use). In a
cell that loop is already running, so the wait nests into it with
``nest_asyncio2`` (ipykernel 7's own dependency; the archived nest-asyncio
1.6 is not used), exactly as ``Agent.run`` does. Outside a running loop
(scripts, terminal IPython) it simply runs the awaitable to completion.

Why clicks need care here: ipykernel 7 runs every cell in one shared
``contextvars.Context``, and nest_asyncio2 cannot run a handle whose Context
is already entered further up the stack, so it defers them until the nested
run exits. Comm messages the main thread would handle (button clicks
included) therefore wait for the cell to end. The supported route is kernel
subshells: JupyterLab >= 4.4.4 sends widget comm messages to a subshell
thread (setting ``commsOverSubshells``, default "perCommTarget"), whose loop
is not blocked; the callback runs there, and
:meth:`QuestionChannel.answer` hands the answer to the run's loop with
``call_soon_threadsafe``. One more thing stands in the way: ipykernel 7.4
routes a comm's incoming messages to the thread that last *sent* on that comm
(``BaseComm._reply_subshell_for``), which for widgets drawn by the cell is
the blocked main thread. While a cell blocks, :func:`wait_blocking` makes a
message that names a subshell go to that subshell.

Where clicks cannot arrive (a kernel without subshells, a frontend that does
not send comms over subshells: no subshell exists), :func:`click_route` says
so; a question asked during the wait then prints that in the cell and ends at
once by spec 000's rules (default, else timeout), and approvals follow the
headless policy, instead of hanging. Interrupting the kernel during the wait
stops the run cleanly.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable
from typing import Any, TypeVar

from agent_kernel.engine.questions import QuestionChannel

T = TypeVar("T")

NO_CLICKS = ("agent-kernel: clicks cannot reach this blocking cell ({why}). Questions in "
             "this --wait run end at once with their default (or as timed out) and approvals "
             "follow the headless policy. Run without --wait to answer with buttons.")


def click_route() -> tuple[bool, str]:
    """Whether widget clicks can reach a cell that blocks on the kernel's loop, and why."""
    kernel_module = sys.modules.get("ipykernel.kernelbase")
    if kernel_module is None or not kernel_module.Kernel.initialized():
        return True, "not in a kernel: nothing to click"
    kernel = kernel_module.Kernel.instance()
    if not getattr(kernel, "_supports_kernel_subshells", False):
        version = getattr(sys.modules.get("ipykernel"), "__version__", "unknown")
        return False, f"ipykernel {version} has no kernel subshells"
    try:
        subshells = kernel.shell_channel_thread.manager.list_subshell()
    except Exception:  # an ipykernel whose internals moved: assume the worst, say so
        subshells = []
    if not subshells:
        return False, ("the frontend does not send widget messages over kernel subshells; "
                       "JupyterLab >= 4.4.4 does (Settings > Kernels > commsOverSubshells)")
    return True, "widget messages arrive on kernel subshells"


class _Gate:
    """Asked by the question channel during a wait: None, or why nobody can click."""

    def __init__(self) -> None:
        self.told = False

    def __call__(self) -> str | None:
        can_click, why = click_route()
        if can_click:
            return None
        if not self.told:
            self.told = True
            print(NO_CLICKS.format(why=why), file=sys.stderr)
        return why


def route_to_named_subshells() -> Any:
    """Let comm messages that name a subshell go there (see the module docstring); returns
    what undoes it, or None. Also used while ``run_python``'s code holds the main thread,
    so the run's Stop reaches it."""
    comm_module = sys.modules.get("ipykernel.comm.comm")
    base = getattr(comm_module, "BaseComm", None)
    original = getattr(base, "_reply_subshell_for", None)
    if base is None or original is None:
        return None

    def route(self: Any, data: object, default: str | None) -> str | None:
        chosen: str | None = original(self, data, default)
        return default if default is not None else chosen

    base._reply_subshell_for = route
    return lambda: setattr(base, "_reply_subshell_for", original)


def wait_blocking(awaitable: Awaitable[T]) -> T:
    """Run the loop until ``awaitable`` (a coroutine, task or future) is done; return its result.

    A kernel interrupt (the notebook's stop button) cancels the awaited task
    and lets it record its cancellation, then raises ``KeyboardInterrupt``.
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
    previous = QuestionChannel.click_gate
    QuestionChannel.click_gate = _Gate()
    restore = route_to_named_subshells()
    try:
        return loop.run_until_complete(future)
    except KeyboardInterrupt:
        _wind_down(loop, future)
        raise
    finally:
        QuestionChannel.click_gate = previous
        if restore is not None:
            restore()


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
