"""``notebooks/04-tools.ipynb`` runs top to bottom in a real kernel and says real things.

The notebook serves its own pages on 127.0.0.1, so nothing here reaches the internet: the
page text, the search result and the command's output below can only come from the tools
really running, and the refusals from the real guard and the real sandbox.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path
from typing import Any

import nbformat
import pytest

from agent_kernel.core.mime_types import RUN_MIME
from agent_kernel.guards import sandbox

pytestmark = pytest.mark.kernel

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "04-tools.ipynb"


def _cells(nb: Any) -> dict[str, Any]:
    """Code cells by their first line (the %agent prompt for the tour's runs)."""
    return {c.source.splitlines()[0]: c for c in nb.cells if c.cell_type == "code"}


def _run_state(cell: Any) -> dict[str, Any]:
    [state] = [o["data"][RUN_MIME] for o in cell.outputs if RUN_MIME in o.get("data", {})]
    return state


def _reply(cell: Any) -> str:
    """The answer the person reads under the run's tool cards."""
    return "\n".join(e["text"] for e in _run_state(cell)["entries"] if e["kind"] == "text")


def _tool(cell: Any) -> dict[str, Any]:
    """The run's one tool card: its arguments, result, state and summary (the find_tools
    search that brought its group in aside)."""
    [entry] = [e for e in _run_state(cell)["entries"]
               if e["kind"] == "tool" and e["tool"] != "find_tools"]
    return entry


def _printed(cell: Any) -> str:
    return "".join(out.get("text", "") for out in cell.outputs)


def _no_errors(nb: Any) -> None:
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            assert out.output_type != "error", (cell.source, out)
            assert out.get("name") != "stderr", (cell.source, out)
            shown = out.get("text", "") + out.get("data", {}).get("text/html", "")
            assert "Traceback" not in shown, cell.source


def _run(run_notebook: Any, tmp_path: Path, **env: str) -> tuple[dict[str, Any], Path]:
    workspace = tmp_path / "ws"
    nb = run_notebook(NOTEBOOK, cwd=tmp_path, timeout=120,
                      env={"AGENT_KERNEL_WORKSPACE": str(workspace), **env})
    _no_errors(nb)
    return _cells(nb), workspace


def test_tools_notebook_is_committed_without_outputs() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source
    text = "\n".join(c.source for c in nb.cells)
    assert "headless_approval = 'allow'" in text and "you are still asked" in text


WRITE = "%agent write file notes.txt with High water at the harbour: 14:02, 6.1 m."
JAVASCRIPT = '%agent run javascript: return input.a + input.b with {"a": 123, "b": 456}'
LS = "%agent run command: ls -la; wc -w notes.txt"
LEDGER = "import agent_kernel.notebook.magics"


def _closed(cells: dict[str, Any]) -> Any:
    return next(c for first, c in cells.items() if "/dev/tcp/127.0.0.1/{port}" in first)


def test_tools_notebook_runs(run_notebook: Any, tmp_path: Path) -> None:
    if sandbox.find_bubblewrap() is None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must test the sandbox: {sandbox.unavailable_reason()}")
        pytest.skip(sandbox.unavailable_reason())
    cells, workspace = _run(run_notebook, tmp_path)
    note = "High water at the harbour: 14:02, 6.1 m."
    assert (workspace / "files" / "notes.txt").read_text() == note
    wrote = cells[WRITE]
    assert _tool(wrote)["approval"]["source"] == "headless"
    assert "I wrote the file `notes.txt` (40 bytes, saved as `files/notes.txt`)" in _reply(wrote)
    # the saved HTML, what a reader without a kernel sees, carries the same answer
    page = html.unescape(wrote.outputs[0]["data"]["text/html"])
    assert "I wrote the file" in page and "notes.txt" in page
    assert _reply(cells["%agent list files"]).endswith("`files` holds 1 entry: `notes.txt`.")
    assert f"```\n{note}\n```" in _reply(cells["%agent read file notes.txt"])
    assert "hold 1 file in 0 folders, 40 bytes in all" in _reply(cells["%agent workspace info"])
    forged = cells["%agent write file ../ledger.jsonl with nothing happened"]
    assert _tool(forged)["state"] == "failed"
    assert _tool(forged).get("approval") is None  # refused before anyone was asked
    assert ("'../ledger.jsonl' is a protected file (the ledger, the record of what the agent "
            "did); the agent may not read or write it. Nothing was written.") in _reply(forged)
    records = [json.loads(line) for line in (workspace / "ledger.jsonl").read_text().splitlines()]
    assert all(r.get("record_id") and r.get("hash") for r in records)  # nothing forged in it

    fetched = cells["%agent fetch http://127.0.0.1:{port}/page.html"]
    assert _tool(fetched)["result"]["status"] == 200
    assert "a page titled “Harbour notes”" in _reply(fetched)
    assert "The ferry leaves at **09:30**; high water is at 14:02." in _reply(fetched)
    found = _reply(cells["%agent search the web for bubblewrap"])
    assert found.endswith("I found 1 result for “bubblewrap”:\n\n1. [Bubblewrap: unprivileged "
                          "sandboxing](https://github.com/containers/bubblewrap): A result for "
                          "bubblewrap, served by this notebook.")
    metadata = cells["%agent fetch http://169.254.169.254/latest/meta-data/"]
    assert _tool(metadata)["state"] == "failed" and _tool(metadata)["result"] is None
    assert ("did not go through: network guard refused 169.254.169.254 port 80: it is a cloud "
            "metadata service address") in _reply(metadata)
    jupyter = _reply(cells["%agent fetch http://localhost:8888/api/contents"])
    assert "network guard refused localhost (127.0.0.1) port 8888: it is a loopback" in jupyter

    listing = cells[LS]
    assert _tool(listing)["result"]["sandbox"] == "bubblewrap, no network"
    assert _tool(listing)["result"]["stdout"].endswith("notes.txt\n8 notes.txt\n")
    assert "ran (bubblewrap, no network) and exited with code 0" in _reply(listing)
    assert "8 notes.txt" in _reply(listing)  # wc counted the note's eight words, in the sandbox
    sudo = cells["%agent run command: sudo reboot"]
    assert "approval" not in _tool(sudo) or not _tool(sudo)["approval"]
    assert "refused before anyone was asked to approve it" in _reply(sudo)
    closed = _tool(_closed(cells))["result"]
    assert closed["stdout"] == "no way through\n" and "Connection refused" in closed["stderr"]
    assert "It printed:\n\n```\nno way through\n```" in _reply(_closed(cells))

    assert _tool(cells[JAVASCRIPT])["result"] == 579  # spec 004: the value itself
    assert _reply(cells[JAVASCRIPT]).endswith("The JavaScript returned `579`.")
    assert _reply(cells["%agent run javascript: return typeof fetch + ' ' + typeof require"]
                  ).endswith("The JavaScript returned `undefined undefined`.")

    ledger = [line.split() for line in _printed(cells[LEDGER]).splitlines()]
    assert ["approval", "write_file", "approved"] in ledger
    assert ["tool_call", "write_file", "failed"] in ledger
    assert ledger.count(["tool_call", "url_fetch", "failed"]) == 2
    assert ["tool_call", "run_javascript", "ok"] in ledger
    assert ledger[-1][:2] == ["ledger", "ok:"]


def test_without_a_working_sandbox_the_command_cells_refuse_in_words(
        run_notebook: Any, tmp_path: Path) -> None:
    """A ``bwrap`` that cannot start (as where user namespaces are off): the notebook still
    runs clean, its command cells say why commands cannot run and how to fix it, and the
    rest of the tour is unchanged."""
    broken = tmp_path / "bin"
    broken.mkdir()
    (broken / "bwrap").write_text("#!/bin/sh\necho 'bwrap: No permissions to create a new "
                                  "namespace' >&2\nexit 1\n")
    (broken / "bwrap").chmod(0o755)
    cells, workspace = _run(run_notebook, tmp_path,
                            PATH=f"{broken}{os.pathsep}{os.environ['PATH']}")
    for cell in (cells[LS], _closed(cells)):
        assert _tool(cell)["state"] == "failed" and _tool(cell)["result"] is None
        said = _reply(cell)
        assert "The `bash` call did not go through: commands need bubblewrap" in said
        assert "cannot start a sandbox here (bwrap: No permissions" in said
        assert "apt-get install bubblewrap" in said
    assert "refused before anyone was asked" in _reply(cells["%agent run command: sudo reboot"])
    assert _tool(cells[JAVASCRIPT])["result"] == 579  # spec 004: the value itself
    assert (workspace / "files" / "notes.txt").is_file()
