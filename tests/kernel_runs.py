"""Running a notebook in a real ``python3`` kernel through nbclient, for the tests.

The ``run_notebook`` fixture (tests/conftest.py) hands :func:`execute_notebook` to tests
marked ``kernel``; a module-scoped fixture that needs one notebook for a whole module
(tests/browser/test_nbconvert_offline.py) imports it from here. :class:`IdleKernel` runs
cells one at a time in one kernel that sits idle in between (triggers fire, phones answer),
and :func:`ledger_records` with :func:`eventually` reads what it wrote off the loop.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _as_notebook(cells_or_nb: Any) -> Any:
    """Accept a NotebookNode, a path to an .ipynb, or an iterable of code-cell sources."""
    import nbformat

    if isinstance(cells_or_nb, nbformat.NotebookNode):
        return cells_or_nb
    if isinstance(cells_or_nb, (str, os.PathLike)) and str(cells_or_nb).endswith(".ipynb"):
        return nbformat.read(str(cells_or_nb), as_version=4)
    if isinstance(cells_or_nb, str):
        cells_or_nb = [cells_or_nb]
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(src) for src in cells_or_nb]
    return nb


def execute_notebook(cells_or_nb: Any, timeout: int = 120, cwd: str | os.PathLike | None = None,
                     env: dict[str, str] | None = None, allow_errors: bool = False) -> Any:
    """Execute a notebook in a real ``python3`` kernel and return the executed NotebookNode.

    ``cells_or_nb``: a NotebookNode, a path to an ``.ipynb`` file, one source string or an
    iterable of code-cell sources. ``timeout`` is per cell (seconds). ``cwd`` is the kernel's
    working folder (default: the current folder). ``env`` adds or overrides environment
    variables for the kernel on top of the session's isolated environment. With
    ``allow_errors=False`` a cell that raises fails the call with ``CellExecutionError``.
    """
    from nbclient import NotebookClient

    nb = _as_notebook(cells_or_nb)
    kernel_env = dict(os.environ)
    kernel_env.update(env or {})
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            allow_errors=allow_errors,
                            resources={"metadata": {"path": str(cwd or os.getcwd())}})
    client.execute(env=kernel_env)
    return nb


def cell_text(client: Any, msg_id: str, timeout: float = 120) -> str:
    """What one execution printed (its streams, and ``ERROR <value>`` for an error), read
    from a jupyter_client kernel client's iopub channel until the kernel is idle again."""
    text = ""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msg = client.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            text += msg["content"]["text"]
        elif msg["msg_type"] == "error":
            text += "ERROR " + msg["content"]["evalue"]
        elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return text
    raise AssertionError(f"the cell did not finish in {timeout} s: {text}")


def outputs_text(cell: Any) -> str:
    """A cell's outputs as text: streams, ``ename: evalue`` for an error, else text/plain."""
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            parts.append(out.get("text", ""))
        elif out.get("output_type") == "error":
            parts.append(f"{out.get('ename')}: {out.get('evalue')}")
        else:
            parts.append(str(out.get("data", {}).get("text/plain", "")))
    return "\n".join(parts)


def code_cells(nb: Any) -> dict[str, Any]:
    """A run notebook's code cells by their first line (how a test names a cell)."""
    return {c.source.splitlines()[0]: c for c in nb.cells if c.cell_type == "code"}


def run_state(cell: Any) -> dict[str, Any]:
    """The JSON state of the one run a cell drew."""
    from agent_kernel.core.mime_types import RUN_MIME

    [state] = [o["data"][RUN_MIME] for o in cell.outputs if RUN_MIME in o.get("data", {})]
    return state


def run_reply(cell: Any) -> str:
    """What the agent said in a cell's run (its text entries)."""
    return "\n".join(e["text"] for e in run_state(cell)["entries"] if e["kind"] == "text")


class IdleKernel:
    """One kernel whose cells we run one at a time, leaving it idle in between; ``env`` adds
    to its environment (start it with ``client.setup_kernel(env=kernel.env)``)."""

    def __init__(self, workspace: Path, cwd: Path, env: dict[str, str] | None = None) -> None:
        import nbformat
        from nbclient import NotebookClient

        self.nb = nbformat.v4.new_notebook()
        self.nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                          "language": "python"}
        self.client = NotebookClient(self.nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(cwd)}})
        self.env = {**os.environ, "AGENT_KERNEL_WORKSPACE": str(workspace), **(env or {})}

    def run(self, source: str) -> str:
        """Run ``source`` as the next cell and return its outputs as text."""
        import nbformat

        cell = nbformat.v4.new_code_cell(source)
        self.nb.cells.append(cell)
        self.client.execute_cell(cell, len(self.nb.cells) - 1)
        return outputs_text(cell)


def ledger_records(workspace: Path, kind: str) -> list[dict[str, Any]]:
    """The records of ``kind`` in the workspace's ledger, as a kernel wrote them."""
    from agent_kernel.core.ledger import Ledger

    return [r for r in Ledger(workspace / "ledger.jsonl").records() if r["kind"] == kind]


def eventually(read: Callable[[], list[dict[str, Any]]], seconds: float = 10.0
               ) -> list[dict[str, Any]]:
    """What ``read`` finds once it finds something, or its last empty answer after
    ``seconds``: the kernel writes its records off the loop, so wait for them to land."""
    deadline = time.monotonic() + seconds
    while not (found := read()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return found
