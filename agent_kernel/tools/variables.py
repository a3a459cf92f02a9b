"""The kernel's variables: ``list_variables`` and ``inspect_variable`` (issue 24).

The agent lives in the person's kernel; these two read-only tools let it see what the
person has made there: names, types, sizes, a DataFrame's columns, an array's shape. They
look, they never execute: no code of the model's runs, and the person's own code (a
``__repr__``, a ``__len__``, a property) runs only where a preview needs it, each call
bounded in time by :class:`~agent_kernel.tools.looking.Looker` and in size by
:func:`~agent_kernel.tools.looking.short_repr`; a failure is a word in the preview.

Libraries are recognised through ``sys.modules`` only: if pandas is not imported, nothing
in the namespace is a pandas object, and nothing here imports it to find out (``%load_ext``
stays fast). What comes back is bounded for the model: previews of at most 200
characters, at most ``MAX_LIMIT`` variables and ``RESULT_CHARS`` characters in all, with a
``note`` saying what was left out. Everything read is data, whatever it says.
"""

from __future__ import annotations

import json
from typing import TypedDict

from agent_kernel.engine.registry import Tool, ToolContext
from agent_kernel.engine.services import NamespaceService
from agent_kernel.tools.looking import Looker
from agent_kernel.tools.variable_details import Inspection, inspect_value
from agent_kernel.tools.variable_rows import COLUMNS, RESULT_CHARS, VariableSummary, summarise

MAX_LIMIT = 100
"""``list_variables``' limit is clamped to 1..MAX_LIMIT."""
PER_LOOK = 0.3
"""Seconds ``list_variables`` waits for one look at a variable (a repr, a length)."""
LOOK_BUDGET = 1.5
"""Seconds one ``list_variables`` call may spend waiting on looks in all."""


class _List(TypedDict):
    ok: bool
    variables: list[VariableSummary]
    total: int
    shown: int


class VariableList(_List, total=False):
    """What ``list_variables`` returns; ``note`` says what was left out, if anything."""

    note: str


class Unavailable(TypedDict):
    """A tool's ``{"ok": false, "error": ...}``: why it could not look, in words."""

    ok: bool
    error: str


def _size_of(part: object) -> int:
    return len(json.dumps(part, ensure_ascii=False, default=str))


def list_variables(ctx: ToolContext, limit: int = 40) -> VariableList | Unavailable:
    """List the kernel's variables, newest first, with type, size and a preview.

    Args:
        limit: How many variables to show (1 to 100).

    Notes:
        Tables come with their columns and dtypes, arrays with shape and dtype. Nothing is
        run; IPython's names, private names and modules are left out.
    """
    service = ctx.agent.services.namespace
    if service is None:
        return _not_in_a_kernel()
    limit = max(1, min(int(limit), MAX_LIMIT))
    everything = service.user_variables()
    rows: list[VariableSummary] = []
    used = 100
    cut = False
    with Looker(PER_LOOK, LOOK_BUDGET) as looker:
        for name, value in everything[:limit]:
            row = summarise(name, value, looker)
            used += _size_of(row) + 2
            if used > RESULT_CHARS and rows:
                cut = True
                break
            rows.append(row)
    result: VariableList = {"ok": True, "variables": rows, "total": len(everything),
                            "shown": len(rows)}
    notes = []
    if len(rows) < len(everything):
        why = " (the rest would pass the result's size bound)" if cut else ""
        notes.append(f"showing the {len(rows)} newest of {len(everything)} variables{why}")
    if any(len(row.get("columns", ())) == COLUMNS and row.get("shape", [0, 0])[-1] > COLUMNS
           for row in rows):
        notes.append(f"tables list their first {COLUMNS} columns (inspect_variable shows more)")
    if notes:
        said = "; ".join(notes)
        result["note"] = said[0].upper() + said[1:] + "."
    return result


def _not_in_a_kernel() -> Unavailable:
    return {"ok": False, "error": "There is no kernel namespace here: the variable tools "
            "work when the agent runs in a Jupyter kernel or IPython (%load_ext agent_kernel)."}


def namespace_of(ctx: ToolContext) -> NamespaceService | None:
    """The kernel's namespace this agent was given, or None outside a kernel."""
    return ctx.agent.services.namespace


def inspect_variable(ctx: ToolContext, name: str, rows: int = 5) -> Inspection | Unavailable:
    """Look closely at one variable (a table's head, dtypes and stats; a figure as an image).

    Args:
        name: The variable's name, as list_variables shows it.
        rows: How many rows of a table (or items of a list) to show (1 to 20).

    Notes:
        A DataFrame gives its head, dtypes, null counts and describe; an array its stats;
        an object its attributes, signature and docstring. Nothing is run beyond what
        reading it needs, and that is bounded in time.
    """
    service = namespace_of(ctx)
    if service is None:
        return _not_in_a_kernel()
    try:
        value = service.value_of(name)
    except LookupError as exc:
        return {"ok": False, "error": str(exc.args[0]) if exc.args else "No such variable."}
    return inspect_value(name, value, max(1, min(int(rows), 20)))


PNG_URL = "data:image/png;base64,"


def figure_for_model(result: object) -> object:
    """What the model reads of an inspection: a figure's PNG as a line of words (the image
    itself reaches a model that reads images through :func:`figure_images`)."""
    image = result.get("image") if isinstance(result, dict) else None
    if not isinstance(result, dict) or not isinstance(image, dict) or "data_url" not in image:
        return result
    said = {k: v for k, v in image.items() if k != "data_url"}
    said["image"] = (f"[image: {image.get('width', 0)}×{image.get('height', 0)} PNG of the "
                     f"figure]")
    return {**result, "image": said}


def figure_images(result: object) -> list[str]:
    """A figure's PNG as base64, for a model that reads images."""
    image = result.get("image") if isinstance(result, dict) else None
    url = image.get("data_url") if isinstance(image, dict) else None
    return [url[len(PNG_URL):]] if isinstance(url, str) and url.startswith(PNG_URL) else []


TOOLS = [Tool(list_variables, source="builtin"),
         Tool(inspect_variable, source="builtin", for_model=figure_for_model,
              images=figure_images)]
