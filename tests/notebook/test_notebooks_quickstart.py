"""``notebooks/01-quickstart.ipynb`` runs top to bottom in a real kernel and says real things."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.kernel

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "01-quickstart.ipynb"


def _html(cell) -> str:
    return "".join(o.get("data", {}).get("text/html", "") for o in cell.outputs)


def test_quickstart_is_committed_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source


def test_quickstart_runs(run_notebook, output_text, tmp_path):
    nb = run_notebook(NOTEBOOK, cwd=tmp_path, timeout=120)
    code = [c for c in nb.cells if c.cell_type == "code"]
    for cell in code:
        for out in cell.outputs:
            assert out.output_type != "error", (cell.source, out)
    by_source = {c.source.splitlines()[-1] if c.source else "": c for c in code}
    first_help = code[1]
    assert first_help.source == "%agent what can you do?"
    assert "I am the offline demo model" in _html(first_help)
    echo = _html(code[2])
    assert "The echo tool returned: hello from the quickstart" in echo
    assert "<details class='agent-kernel-tool' data-state='ok'>" in echo and "rec_" in echo
    assert "The echo tool returned: the city is Lisbon" in _html(code[3])
    tools_cell = code[4]
    assert "3" in output_text(tools_cell).split()
    assert '"text"' in output_text(tools_cell) or "'text'" in output_text(tools_cell)
    state = _html(by_source["%agent query the inventory state"])
    assert "apples" in state and "pears" in state
    assert "`word_count`" in output_text(code[6]) or "<code>word_count</code>" in _html(code[6])
    ledger = output_text(code[7])
    assert "tool_call echo True hello from the quickstart" in ledger
    assert "tool_call query_state True" in ledger
    assert "ledger ok:" in ledger and "records verify" in ledger
    assert "model: demo" in output_text(code[8])
