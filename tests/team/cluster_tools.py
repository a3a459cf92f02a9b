"""A person's tool for the cluster tests, importable on the Dask workers (the module's
fixture puts this folder on their ``PYTHONPATH``): it waits, as a long job does, in the
worker process that runs it."""

from __future__ import annotations

import asyncio
import os

from agent_kernel import tool


@tool(side_effects=True, register=False, timeout=120)
async def wait_here(seconds: float) -> dict[str, int]:
    """Wait ``seconds`` where the tool runs, then say which process it was.

    Args:
        seconds: How long to wait.
    """
    await asyncio.sleep(seconds)
    return {"pid": os.getpid()}


@tool(register=False)
def shout(kb: int) -> str:
    """Say ``kb`` kilobytes of text (a result too large for a small message cap).

    Args:
        kb: How many kilobytes.
    """
    return "a" * (kb * 1024)
