"""The CPU-bound tool of ``benchmarks/cluster.py``, in a module of its own so the Dask
workers can import it (a tool defined in ``__main__`` runs in the kernel)."""

from __future__ import annotations

import time

from agent_kernel import tool


@tool(register=False)
def burn(ms: int) -> int:
    """Spin the CPU for ``ms`` milliseconds of pure Python, as a heavy tool call does.

    Args:
        ms: How long to spin.
    """
    end, turns = time.thread_time() + ms / 1000, 0  # this thread's CPU: calls at once each
    while time.thread_time() < end:                 # spin their own ms

        turns += sum(range(200))
    return turns
