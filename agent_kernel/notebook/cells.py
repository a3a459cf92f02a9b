"""Which cell an output goes to, when the code sending it runs later than its cell.

A run, a question's controls or a triggers panel keep updating their outputs
after the cell that made them has finished, from the kernel's loop, while
other cells run. ipykernel sends a display to the cell of the message being
handled unless told otherwise: :func:`in_cell` says which cell's output it is,
with ipykernel's ``set_thread_parent``, and :func:`update_output` updates an
output in place both in its cell and in the running one (where nbclient reads).
:class:`LiveOutput` is one such output kept up to date in place (the triggers
panel, the team board);
:func:`outcome_bundle` is what their controls' output says in words. Imports
nothing heavy (no ipywidgets).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from agent_kernel.views.safe_html import esc

if TYPE_CHECKING:
    from IPython.display import DisplayHandle

Header = dict[str, Any]
"""A kernel message's header (``msg_id``, ``msg_type``...), as ipykernel keeps it: which
cell an output belongs to."""


def display_pub() -> Any:
    """The shell's display publisher (None outside IPython)."""
    from IPython import get_ipython

    return getattr(get_ipython(), "display_pub", None)


@contextlib.contextmanager
def in_cell(parent: Header | None) -> Iterator[None]:
    """Send displays made inside to the cell of ``parent`` (a message's header dict)."""
    pub = display_pub()
    token = None
    if parent and pub is not None and hasattr(pub, "set_thread_parent"):
        token = pub.set_thread_parent(parent)
    try:
        yield
    finally:
        if token is not None:
            pub.reset_thread_parent(token)


OUTCOME_STYLE = "font-size:13px;line-height:1.45;color:var(--jp-ui-font-color2,#4a4a4a)"


def outcome_bundle(lines: list[str]) -> dict[str, str]:
    """Lines said about live controls (what was done, how to do it by hand): one
    ``agent-kernel-outcome`` block each in ``text/html``, and ``text/plain``."""
    return {"text/plain": "\n".join(lines),
            "text/html": "".join(f"<div class='agent-kernel-outcome' style='{OUTCOME_STYLE}'>"
                                 f"{esc(line)}</div>" for line in lines)}


def _msg_id(header: Header | None) -> str | None:
    return ((header or {}).get("header") or header or {}).get("msg_id")


def update_output(handle: DisplayHandle, what: object, cell: Header | None,
                  raw: bool = True) -> None:
    """Update ``handle``'s output (shown in ``cell``) in place, and say so in the running
    cell too: JupyterLab updates every output of a display id whichever cell a message
    names, but nbclient and papermill apply an update only while they read the cell it
    names, so an update sent only to a cell that has ended is lost from the saved file."""
    with in_cell(cell):
        handle.update(what, raw=raw)
    current = getattr(display_pub(), "_parent_header_global", None)
    if current and _msg_id(current) != _msg_id(cell):
        with in_cell(current):
            handle.update(what, raw=raw)


class LiveOutput:
    """One output updated in place through its display id, in the cell that showed it,
    at most ``per_second`` times a second: a change inside the interval is drawn at its
    end, once. ``bundle`` makes what it shows."""

    def __init__(self, bundle: Callable[[], dict[str, Any]], per_second: float) -> None:
        self.bundle = bundle
        self.per_second = per_second
        self.handle: DisplayHandle | None = None
        """The display handle (None until :meth:`show`)."""
        self.cell: Header | None = None
        self.updates = 0
        self._last = 0.0
        self._later: asyncio.TimerHandle | None = None

    def show(self) -> None:
        """Display the bundle in the current cell."""
        from IPython.display import display

        self.cell = dict(getattr(display_pub(), "parent_header", None) or {}) or None
        self.handle = display(self.bundle(), raw=True, display_id=True)
        self._last = time.monotonic()

    def push(self, force: bool = False) -> None:
        """Update the output now (``force``) or as soon as the throttle allows."""
        if self.handle is None:
            return
        wait = 1 / self.per_second - (time.monotonic() - self._last)
        if not force and wait > 0:
            if self._later is None:
                with contextlib.suppress(RuntimeError):  # no loop: the next change draws it
                    self._later = asyncio.get_running_loop().call_later(wait, self._flush)
            return
        self.cancel()
        self._last = time.monotonic()
        self.updates += 1
        update_output(self.handle, self.bundle(), self.cell)

    def _flush(self) -> None:
        self._later = None
        self.push(force=True)

    def cancel(self) -> None:
        """Drop an update waiting for its slot."""
        if self._later is not None:
            self._later.cancel()
            self._later = None
