"""``read_cells``, ``insert_cell``, ``edit_cell``, ``run_cell``: the notebook around the agent.

The cells live in the frontend, so every tool here asks the notebook through the cell
service (``ctx.agent.services.cells``, :mod:`agent_kernel.notebook.cells_channel`: the
JupyterLab extension over the kernel's comm). A cell is addressed by its ``cell_id``
(JupyterLab's id for it, which nbformat 4.5 saves as the cell's ``id``): it stays with the
cell when the person or the agent inserts or deletes others, where a position would then
name another cell. Its 0-based position (``index``) works too. An id is data from the page:
it is used only when it has nbformat's shape (``cell_shapes.CELL_ID``), and an id no cell
has is an error, never a guess at a position. Ids are the model's handle only: what the
person sees (summaries, approvals) names a cell by its position.

What each may do, and why:

- ``read_cells`` only looks. Outputs come back as text, an image as ``[image: PNG]``, an
  error as its type, message and a trimmed traceback, each cell and the whole answer
  bounded so a long notebook cannot flood the model (:mod:`.cell_shapes`). With no
  notebook to ask it falls back to the kernel's input history and says so.
- ``insert_cell`` adds a cell (below the agent's own ``%agent`` cell unless told where):
  nothing runs and the person can delete it, so it is not approved.
- ``edit_cell`` changes what a cell would run: the person approves it seeing a unified
  diff of old -> new. ``run_cell`` executes a cell: the person approves it seeing the
  cell's source. In both the approval's arguments carry the very source that will be
  written or run, and the notebook refuses the change if the cell changed since it was
  read, so what the person approved is what happens.
- Cells the agent inserted or edited carry ``metadata["agent_kernel"] = {"run_id",
  "ledger_record", "action", "at"}``: the ``cell_change`` ledger record is written before
  the notebook is asked (the tool call's own record after it says how it ended), so the
  cell can name it. The extension marks such cells quietly ("written by the agent").

Every string from a cell is data: it reaches the model as text and the person as text.
"""

from __future__ import annotations

import asyncio
import difflib
import hashlib
import re
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Annotated, Literal, TypedDict

from agent_kernel.core.events import LedgerRecorded
from agent_kernel.engine.registry import Field, Tool, ToolContext, ToolError
from agent_kernel.engine.services import CellOutput, CellProvenance, CellReply, NotebookCell
from agent_kernel.tools.cell_shapes import (
    OUTPUT_SHOWN,
    SOURCE_SHOWN,
    CellError,
    ShownCell,
    clip,
    error_of,
    fit,
    output_text,
    shape_cell,
    valid_id,
)
from agent_kernel.tools.python import code_terms

if TYPE_CHECKING:
    from agent_kernel.engine.services import CellRequest, CellService

MAX_SOURCE = 100_000
REQUEST_TIMEOUT = 15.0
"""Seconds the notebook has to answer a read, an insert or an edit."""
MAX_RUN_SECONDS = 3600.0
HISTORY_NOTE = ("No notebook page can be asked here ({why}), so these are the kernel's input "
                "history instead: what was executed, in order, without outputs. Cell ids "
                "and positions are unknown, so insert_cell, edit_cell and run_cell cannot be "
                "used.")
NO_IDS = ("Cell ids come only from a notebook page with the agent-kernel extension; the "
          "kernel's input history has none.")
class ReadAnswer(TypedDict, total=False):
    """``read_cells``'s answer."""

    ok: bool
    error: str
    total: int
    start: int
    shown: int
    agent_cell: int | None
    cells: list[ShownCell]
    note: str
    read_from: str
    """``input history`` when there was no notebook to ask."""


class ChangeAnswer(TypedDict, total=False):
    """``insert_cell``'s and ``edit_cell``'s answer."""

    ok: bool
    index: int | None
    id: str
    kind: str
    changed: bool
    ledger_record: str
    note: str


class RunAnswer(TypedDict, total=False):
    """``run_cell``'s answer (the agreed keys, and a note when it timed out)."""

    ok: bool
    index: int | None
    status: str
    outputs: list[str]
    error: CellError | None
    execution_count: int | None
    note: str


def _service(ctx: ToolContext) -> CellService:
    """The cell service, or a ToolError saying in words why there is none."""
    service = ctx.agent.services.cells
    if service is None:
        raise ToolError("The agent is not running in a notebook kernel, so there are no "
                        "cells to see or change.",
                        summary="no notebook here",
                        guidance="Do not call the cell tools again in this run.")
    return service


async def read_cells(
    ctx: ToolContext,
    start: Annotated[int, Field(ge=0)] = 0,
    count: Annotated[int, Field(ge=1, le=50)] = 20,
) -> ReadAnswer:
    """Read the notebook's cells: ids, sources, outputs as text, errors, execution counts,
    and which cell is running this agent.

    Args:
        start: Position of the first cell to read (0 is the notebook's first cell).
        count: How many cells to read (at most 50).
    """
    service = _service(ctx)
    why = service.unavailable()
    if why is not None:
        return from_history(service, why, start, count)
    reply = await service.request("read", {"start": start, "count": count, "run_id": ctx.run_id},
                                  timeout=REQUEST_TIMEOUT)
    if not reply.get("ok"):
        return {"ok": False, "error": str(reply.get("message") or "The notebook did not say.")}
    raw: list[NotebookCell] = reply.get("cells") or []
    shown = fit([shape_cell(c) for c in raw])
    total = int(reply.get("total") or 0)
    answer: ReadAnswer = {"ok": True, "total": total, "start": start, "shown": len(shown),
                          "agent_cell": reply.get("agent_cell"), "cells": shown}
    end = start + len(shown)
    if end < total:
        answer["note"] = f"Cells {end} to {total - 1} are not shown: read_cells(start={end})."
    return answer


def from_history(service: CellService, why: str, start: int, count: int) -> ReadAnswer:
    """``read_cells`` with no notebook: the kernel's input history, said to be that."""
    history = service.history()
    chosen = history[start:start + count]
    cells = fit([{"execution_count": n, "source": clip(source, SOURCE_SHOWN)}
                 for n, source in chosen])
    return {"ok": True, "read_from": "input history",
            "note": HISTORY_NOTE.format(why=why.rstrip(".")), "total": len(history),
            "start": start, "shown": len(cells), "cells": cells}


def _available(service: CellService, by_id: bool = False) -> None:
    why = service.unavailable()
    if why is not None:
        raise ToolError(f"{why} {NO_IDS}" if by_id else why, summary=why.rstrip("."),
                        guidance="Do not call insert_cell, edit_cell or run_cell again in "
                                 "this run; say what you would have done instead.")


def _checked_id(tool: str, cell_id: str | None, index: int | None, name: str = "cell_id",
                *, required: bool = False) -> None:
    """A ToolError unless the call names its cell one way, and an id has an id's shape."""
    if required and cell_id is None and index is None:
        raise ToolError(f"{tool} needs to know which cell: give {name} (the cell's 'id' from "
                        "read_cells) or index (its position).", summary="no cell named")
    if cell_id is not None and index is not None:
        raise ToolError(f"{tool} takes {name} or index, not both: give only {name} (it stays "
                        "with the cell when cells are inserted or deleted).",
                        summary="both a cell id and a position given")
    if cell_id is not None and valid_id(cell_id) is None:
        raise ToolError(f"{name} {cell_id[:80]!r} is not a cell id: an id is 1 to 64 letters, "
                        "digits, '-' or '_', exactly as read_cells gives it as 'id'.",
                        summary="not a cell id")


async def _named_cell(tool: str, ctx: ToolContext, cell_id: str | None,
                      index: int | None) -> tuple[CellService, NotebookCell, int]:
    """The cell an edit or a run names (by id or position, exactly one), read whole from
    the page, with the service and its position; a ToolError in words otherwise."""
    _checked_id(tool, cell_id, index, required=True)
    service = _service(ctx)
    _available(service, by_id=cell_id is not None)
    cell = await _one_cell(service, ctx, index, cell_id)
    return service, cell, cell.get("index", index or 0)


async def _one_cell(service: CellService, ctx: ToolContext, index: int | None,
                    cell_id: str | None = None) -> NotebookCell:
    """The cell with ``cell_id`` (or at ``index``) with its whole source, or a ToolError
    saying there is none: an unknown id is never taken for a position."""
    where: CellRequest = {"cell_id": cell_id} if cell_id is not None else {"start": index or 0}
    reply = await service.request("read", {**where, "count": 1, "full": True,
                                           "run_id": ctx.run_id}, timeout=REQUEST_TIMEOUT)
    if not reply.get("ok"):
        raise ToolError(str(reply.get("message") or "The notebook did not answer."))
    cells: list[NotebookCell] = reply.get("cells") or []
    if cell_id is not None and (not cells or cells[0].get("id") != cell_id):
        raise ToolError(f"No cell in the notebook has the id {cell_id!r} (it was deleted, or "
                        "is not an id read_cells gave): call read_cells for the cells' "
                        "current ids.", summary="no such cell")
    if not cells:
        total = int(reply.get("total") or 0)
        raise ToolError(f"There is no cell at position {index}: the notebook has {total} "
                        f"cells (0 to {total - 1}).", summary=f"no cell {index}")
    return cells[0]


_REMOTE_IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?\s*(?:https?:)?//|<img\b|!\[[^\]]*\]\[",
                           re.IGNORECASE)
"""A Markdown or HTML image the notebook would fetch from the web when drawn (inline, or a
reference-style one, whose URL sits elsewhere in the cell)."""


async def _record(ctx: ToolContext, action: str, index: int | None, source: str
                  ) -> CellProvenance:
    """Write the ``cell_change`` ledger record; returns the provenance the cell will carry."""
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest()
    record = await asyncio.to_thread(
        ctx.agent.ledger.record_event, "cell_change", agent_id=ctx.agent_id,
        run_id=ctx.run_id, call_id=ctx.call_id, action=action, index=index,
        source_digest=digest)
    ctx.emit(LedgerRecorded(ctx.run_id, record))
    at = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    return {"run_id": ctx.run_id, "ledger_record": str(record.get("record_id")),
            "action": action, "at": at}


async def _approve(ctx: ToolContext, what: str, arguments: dict[str, object], source: str,
                   notes: dict[str, str] | None = None) -> None:
    """The person's approval of exactly ``arguments``; a ToolError when it is not given.
    ``source`` is approved on the terms of code for the kernel (:func:`code_terms`): an
    inserted cell followed by ``run_cell`` is ``run_python`` by another door."""
    refusal = await ctx.agent.approvals.request(ctx.run_id, what, arguments, notes=notes,
                                                terms=code_terms(ctx, source))
    if refusal is not None:
        raise ToolError(refusal.error, summary=refusal.summary, guidance=refusal.guidance)


def _failed(reply: CellReply) -> ToolError:
    return ToolError(str(reply.get("message") or "The notebook did not say why."))


async def insert_cell(
    source: Annotated[str, Field(max_length=MAX_SOURCE)],
    ctx: ToolContext,
    kind: Literal["code", "markdown"] = "code",
    index: Annotated[int | None, Field(ge=0)] = None,
    below_cell_id: str | None = None,
) -> ChangeAnswer:
    """Insert a new cell into the notebook (not run); returns its id. It goes below the
    cell running this agent unless index or below_cell_id says where.

    Args:
        source: The cell's text (Python code, or Markdown).
        kind: "code" or "markdown".
        index: Position the new cell takes (0 is the top).
        below_cell_id: Or the id of the cell to put it below.
    """
    _checked_id("insert_cell", below_cell_id, index, "below_cell_id")
    service = _service(ctx)
    _available(service, by_id=below_cell_id is not None)
    where = index
    if below_cell_id is not None:
        below = await _one_cell(service, ctx, None, below_cell_id)
        # below the agent's own cell is where it goes anyway; elsewhere, as an index
        where = None if below.get("runs_agent") else below.get("index", 0) + 1
    if where is not None or (kind == "markdown" and _REMOTE_IMAGE.search(source)):
        # Anywhere but below the agent's cell, a cell could be run by "Run All" before it is
        # read; a Markdown image from the web loads for everyone who opens the notebook.
        await _approve(ctx, "insert_cell", {"source": source, "kind": kind, "index": where},
                       source)
    provenance = await _record(ctx, "inserted", where, source)
    reply = await service.request("insert", {"index": index, "below_cell_id": below_cell_id,
                                             "kind": kind, "source": source,
                                             "run_id": ctx.run_id, "provenance": provenance},
                                  timeout=REQUEST_TIMEOUT)
    if not reply.get("ok"):
        raise _failed(reply)
    answer: ChangeAnswer = {"ok": True, "index": reply.get("index")}
    made = valid_id(reply.get("id"))
    if made is not None:
        answer["id"] = made
    answer["kind"] = kind
    answer["ledger_record"] = provenance["ledger_record"]
    return answer


def diff_of(index: int, old: str, new: str) -> str:
    """A unified diff of a cell's source, old -> new."""
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                 f"cell {index} (now)", f"cell {index} (edited)")
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


async def edit_cell(
    source: Annotated[str, Field(max_length=MAX_SOURCE)],
    ctx: ToolContext,
    cell_id: str | None = None,
    index: Annotated[int | None, Field(ge=0)] = None,
) -> ChangeAnswer:
    """Replace a cell's source (the person approves it, seeing the change as a diff). The
    cell is not run.

    Args:
        source: The cell's whole new text.
        cell_id: The cell's id from read_cells (it stays with the cell; positions move).
        index: Or the cell's position.
    """
    service, cell, at = await _named_cell("edit_cell", ctx, cell_id, index)
    old = cell.get("source", "")
    if old == source:
        return {"ok": True, "index": at, "changed": False,
                "note": "The cell already has exactly this source; nothing was changed."}
    if cell.get("runs_agent"):
        raise ToolError(f"Cell {at} is the cell running this agent: it is the person's "
                        "prompt, and editing it would change what runs when they run it "
                        "again.", summary=f"cell {at} is this run's own cell")
    # The person sees the cell's position and the diff, never its id.
    await _approve(ctx, "edit_cell", {"index": at, "source": source}, source,
                   notes={"diff": diff_of(at, old, source)})
    provenance = await _record(ctx, "edited", at, source)
    # The cell read (by its id when it has one, even if it was named by position), and
    # only while it still holds what was read.
    reply = await service.request("edit", {"index": at, "cell_id": valid_id(cell.get("id")),
                                           "source": source, "expected": old,
                                           "run_id": ctx.run_id, "provenance": provenance},
                                  timeout=REQUEST_TIMEOUT)
    if not reply.get("ok"):
        raise _failed(reply)
    return {"ok": True, "index": reply.get("index", at), "changed": True,
            "ledger_record": provenance["ledger_record"]}


async def run_cell(
    ctx: ToolContext,
    cell_id: str | None = None,
    index: Annotated[int | None, Field(ge=0)] = None,
    timeout_seconds: Annotated[float, Field(gt=0, le=MAX_RUN_SECONDS)] = 60.0,
) -> RunAnswer:
    """Run a code cell in the notebook (the person approves it, seeing its source) and wait
    until it has finished; returns its outputs.

    Args:
        cell_id: The cell's id from read_cells.
        index: Or the cell's position.
        timeout_seconds: How long to wait for the cell to finish (default 60).
    """
    service, cell, at = await _named_cell("run_cell", ctx, cell_id, index)
    if cell.get("kind", "code") != "code":
        raise ToolError(f"Cell {at} is a {cell.get('kind')} cell; only code cells run.",
                        summary=f"cell {at} is not code")
    if cell.get("runs_agent"):
        raise ToolError(f"Cell {at} is the cell running this agent: running it again would "
                        "clear this run's output and start another.",
                        summary=f"cell {at} is this run's own cell")
    source = cell.get("source", "")
    await _approve(ctx, "run_cell", {"index": at, "source": source,
                                     "timeout_seconds": timeout_seconds}, source)
    reply = await service.request("run", {"index": at, "cell_id": valid_id(cell.get("id")),
                                          "expected": source, "run_id": ctx.run_id},
                                  timeout=timeout_seconds)
    if reply.get("timed_out"):
        return {"ok": True, "index": at, "status": "timeout", "outputs": [], "error": None,
                "execution_count": None,
                "note": f"Cell {at} did not finish within {timeout_seconds:g} s; it may "
                        "still be running in the notebook."}
    if not reply.get("ok"):
        raise _failed(reply)
    outputs: list[CellOutput] = reply.get("outputs") or []
    errors = [error_of(o) for o in outputs if o.get("output_type") == "error"]
    texts = [clip(output_text(o), OUTPUT_SHOWN) for o in outputs]
    return {"ok": True, "index": reply.get("index", at),
            "status": "error" if errors else "done",
            "outputs": [t for t in texts if t], "error": errors[-1] if errors else None,
            "execution_count": reply.get("execution_count")}


TOOLS = [
    Tool(read_cells, source="builtin"),
    Tool(insert_cell, source="builtin"),
    # Both ask the person from inside the call (approvals.request), because what they show
    # (the diff, the cell's source) must first be read from the notebook.
    Tool(edit_cell, source="builtin"),
    Tool(run_cell, source="builtin", timeout=MAX_RUN_SECONDS + 60),
]
