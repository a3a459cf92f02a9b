"""Which cell an output goes to, when the code sending it runs later than its cell.

A run, a question's controls or a triggers panel keep updating their outputs
after the cell that made them has finished, from the kernel's loop, while
other cells run. ipykernel sends a display to the cell of the message being
handled unless told otherwise: :func:`in_cell` says which cell's output it is,
with ipykernel's ``set_thread_parent``. Imports nothing heavy (no ipywidgets).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


def display_pub() -> Any:
    """The shell's display publisher (None outside IPython)."""
    from IPython import get_ipython

    return getattr(get_ipython(), "display_pub", None)


@contextlib.contextmanager
def in_cell(parent: dict[str, Any] | None) -> Iterator[None]:
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
