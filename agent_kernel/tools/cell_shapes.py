"""How a notebook's cells and their outputs are put for the model (``read_cells``, and
``run_cell``'s outputs): text, bounded.

Every string from a cell is data from the page: an output is its text, an image is a
placeholder (``[image: PNG]``), an error its type, message and a trimmed traceback without
colour codes, each cell and each answer bounded so a long notebook cannot flood the model.
A cell's id is given only when it has nbformat's shape (:data:`CELL_ID`): a notebook file
can carry any id.
"""

from __future__ import annotations

import re
from typing import TypedDict

from agent_kernel.core.mime_types import RUN_MIME
from agent_kernel.engine.services import CellOutput, NotebookCell

SOURCE_SHOWN = 3000
"""Characters of one cell's source ``read_cells`` gives the model."""
OUTPUT_SHOWN = 2000
"""Characters of one cell's outputs ``read_cells`` gives the model."""
ANSWER_BUDGET = 24_000
"""Characters of sources and outputs in one ``read_cells`` answer, all cells together."""
TRACEBACK_LINES = 12
CELL_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""A cell id's shape (nbformat 4.5's): JupyterLab's ids are UUIDs, but a notebook file can
carry any id, so one from the page is checked before it is used or shown."""
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class CellError(TypedDict):
    """An error a cell raised, for the model: type, message, trimmed traceback."""

    type: str
    message: str
    traceback: str


class WrittenBy(TypedDict):
    """How the agent changed a cell (its provenance, as the model reads it)."""

    action: str
    run_id: str


class ShownCell(TypedDict, total=False):
    """One cell as ``read_cells`` gives it to the model (from history: count and source)."""

    index: int
    id: str
    """The cell's id (``cell_id`` of edit_cell, run_cell and insert_cell); absent when the
    page gave none of a valid shape."""
    kind: str
    source: str
    execution_count: int | None
    outputs: str
    error: CellError
    runs_this_agent: bool
    written_by_agent: WrittenBy


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how many more there were."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n...[{len(text) - limit} more characters not shown]"


def error_of(output: CellOutput) -> CellError:
    """An error output as type, message and its last traceback lines, ANSI colours removed."""
    lines = _ANSI.sub("", "\n".join(output.get("traceback") or [])).splitlines()
    if len(lines) > TRACEBACK_LINES:
        lines = ["...", *lines[-TRACEBACK_LINES:]]
    return {"type": str(output.get("ename", "")), "message": str(output.get("evalue", "")),
            "traceback": "\n".join(lines)}


def output_text(output: CellOutput) -> str:
    """One output as the model reads it: text, or a placeholder for what is not text."""
    kind = output.get("output_type", "")
    if kind == "stream":
        return output.get("text", "")
    if kind == "error":
        error = error_of(output)
        return f"{error['type']}: {error['message']}\n{error['traceback']}".rstrip()
    mimes = output.get("mimes") or []
    if RUN_MIME in mimes:
        return "[an agent run's transcript]"
    images = [m.split("/", 1)[1].split("+", 1)[0].upper() for m in mimes if m.startswith("image/")]
    if images:
        return f"[image: {images[0]}]"
    if "text" in output:
        return output["text"]
    return f"[{mimes[0]} output]" if mimes else ""


def valid_id(value: object) -> str | None:
    """``value`` if it has a cell id's shape (:data:`CELL_ID`), else None."""
    return value if isinstance(value, str) and CELL_ID.fullmatch(value) else None


def shape_cell(cell: NotebookCell) -> ShownCell:
    """One cell for the model: source and outputs as text, each bounded."""
    outputs = [output_text(o) for o in cell.get("outputs") or []]
    shaped: ShownCell = {"index": cell.get("index", 0)}
    cell_id = valid_id(cell.get("id"))
    if cell_id is not None:
        shaped["id"] = cell_id
    shaped["kind"] = cell.get("kind", "code")
    shaped["source"] = clip(cell.get("source", ""), SOURCE_SHOWN)
    if shaped["kind"] == "code":
        shaped["execution_count"] = cell.get("execution_count")
        shaped["outputs"] = clip("\n".join(t for t in outputs if t), OUTPUT_SHOWN)
        errors = [error_of(o) for o in cell.get("outputs") or [] if
                  o.get("output_type") == "error"]
        if errors:
            shaped["error"] = errors[-1]
    if cell.get("runs_agent"):
        shaped["runs_this_agent"] = True
    provenance = cell.get("agent_kernel")
    if isinstance(provenance, dict) and provenance.get("action"):
        shaped["written_by_agent"] = {"action": str(provenance.get("action")),
                                      "run_id": str(provenance.get("run_id", ""))}
    return shaped


def fit(cells: list[ShownCell], budget: int = ANSWER_BUDGET) -> list[ShownCell]:
    """As many cells as fit the answer's budget (always at least one)."""
    kept: list[ShownCell] = []
    used = 0
    for cell in cells:
        size = len(cell.get("source", "")) + len(cell.get("outputs", "") or "")
        if kept and used + size > budget:
            break
        kept.append(cell)
        used += size
    return kept
