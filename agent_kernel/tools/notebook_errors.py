"""``last_error``: the notebook's last exception, with its cell and a trimmed traceback.

"Fix the error above" needs the error the person saw, not one of the agent's own: the
kernel's error service (``notebook.errors``, set by ``%load_ext``) keeps the last
exception a cell of the person's raised and leaves out what the agent's tools raised.
Reading it runs nothing, so it needs no approval. Outside a kernel there is no notebook,
and the tool says so.
"""

from __future__ import annotations

from typing import Literal, TypedDict

from agent_kernel.engine.registry import Tool, ToolContext
from agent_kernel.engine.services import ErrorCell, ErrorDetails

NO_ERROR = "No error in this notebook yet."
NO_NOTEBOOK = ("last_error works only in a notebook's kernel (%load_ext agent_kernel); this "
               "agent runs outside one, so there is no notebook error to read.")


class FoundError(TypedDict):
    """``last_error``'s answer when a cell raised: the error and the cell it came from."""

    ok: Literal[True]
    error: ErrorDetails
    cell: ErrorCell


class NoError(TypedDict):
    """``last_error``'s answer when there is no error to read, and why."""

    ok: Literal[False]
    error: str


async def last_error(ctx: ToolContext) -> FoundError | NoError:
    """The notebook's last error, its traceback and its cell: for "the error above".

    Notes:
        The traceback is trimmed to the notebook's own cells; the cell comes with its
        execution_count and source, and error.line is the line of that cell it was raised
        at.
    """
    errors = ctx.agent.services.errors
    if errors is None:
        return {"ok": False, "error": NO_NOTEBOOK}
    found = errors.last()
    if found is None:
        return {"ok": False, "error": NO_ERROR}
    return {"ok": True, "error": found["error"], "cell": found["cell"]}


TOOLS = [Tool(last_error, source="builtin")]
