"""``notebooks/06-data.ipynb`` runs top to bottom in a real kernel and its answers mean what
they say: the DataFrame's real columns are named, the monthly totals are drawn (a PNG in
the run), the planted bug is explained with the right column. And ``%agent_fix`` in a real
kernel hands the agent the cell that raised, escaped in every HTML the run saves."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from kernel_runs import code_cells, run_reply, run_state

from agent_kernel.team.toolsets import default_tools

pytestmark = pytest.mark.kernel

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "06-data.ipynb"
NEEDED = {"list_variables", "inspect_variable", "run_python", "insert_cell", "run_cell",
          "last_error"}
MISSING = NEEDED - {t.name for t in default_tools()}
COLUMNS = ("date", "region", "product", "units", "price")
RUN_IT_HERE = "import agent_kernel.notebook.magics"
LEDGER = "await agent_kernel.notebook.magics.wait_all()"


def _tools(cell: Any) -> list[str]:
    return [e["tool"] for e in run_state(cell)["entries"] if e["kind"] == "tool"]


def _no_errors_but_the_planted_one(nb: Any) -> None:
    for cell in nb.cells:
        planted = "raises-exception" in cell.get("metadata", {}).get("tags", [])
        for out in cell.get("outputs", []):
            assert planted or out.output_type != "error", (cell.source, out)
            assert out.get("name") != "stderr", (cell.source, out)
            if not planted:
                shown = out.get("text", "") + out.get("data", {}).get("text/html", "")
                assert "Traceback" not in shown, cell.source


def test_data_notebook_is_committed_without_outputs_and_says_how_it_approves() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source
    cells = code_cells(nb)
    assert cells['by_region = df.groupby("reigon")["units"].sum()'].metadata["tags"] == [
        "raises-exception"]
    sources = [c.source for c in nb.cells]
    plot = sources.index("%agent plot the monthly totals")
    assert sources[plot + 2].startswith(RUN_IT_HERE)  # the refused code, run in the open
    text = "\n".join(sources)
    assert "never approved by a policy" in text and "offline demo model" in text
    assert "headless_approval" not in text and "--allow" not in text

@pytest.mark.skipif(bool(MISSING), reason=f"needs {', '.join(sorted(MISSING))} (the variables, "
                    "python and cells parts of issue 24, merged by the lead)")
def test_data_notebook_runs_and_its_answers_come_from_the_data(run_notebook: Any,
                                                               tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    nb = run_notebook(NOTEBOOK, cwd=tmp_path, timeout=180,
                      env={"AGENT_KERNEL_WORKSPACE": str(workspace)})
    _no_errors_but_the_planted_one(nb)
    cells = code_cells(nb)

    looked = cells["%agent what's in df?"]
    assert _tools(looked) == ["list_variables", "inspect_variable"]
    answer = run_reply(looked)
    for column in COLUMNS:
        assert f"`{column}`" in answer
    assert "181 rows and 5 columns" in answer and "`units` has 3" in answer

    plotted = cells["%agent plot the monthly totals"]
    assert _tools(plotted) == ["list_variables", "insert_cell", "run_python"]
    entries = {e.get("tool"): e for e in run_state(plotted)["entries"] if e["kind"] == "tool"}
    assert entries["insert_cell"]["state"] == "failed"  # no notebook page in nbclient
    assert entries["run_python"]["state"] != "ok"  # nobody to click: refused, never by policy
    assert "could not put the code in a new cell" in run_reply(plotted)
    assert "The plotting code was not run" in run_reply(plotted)
    ran_here = cells[RUN_IT_HERE]
    printed = "".join(o.get("text", "") for o in ran_here.outputs)
    assert "pd.to_datetime(df['date']).dt.to_period('M')" in printed
    assert "df['units'] * df['price']" in printed
    saved = json.dumps(ran_here.outputs)
    assert "image/png" in saved and "iVBORw0KGgo" in saved  # the chart, a real PNG
    assert "2025-06" in saved  # the last month's total, the code's value

    planted = cells['by_region = df.groupby("reigon")["units"].sum()']
    assert [o["ename"] for o in planted.outputs if o.output_type == "error"] == ["KeyError"]
    for first in ("%agent fix the error above", "%agent_fix"):
        fixed = run_reply(cells[first])
        assert "**KeyError**" in fixed and "line 1" in fixed, first
        assert "the closest name is `region` (a column of `df`)" in fixed, first
        assert 'by_region = df.groupby("region")["units"].sum()' in fixed, first

    printed = "".join(o.get("text", "") for o in cells[LEDGER].outputs)
    assert "approval           run_python       denied" in printed
    assert "tool_call          last_error       ok" in printed
    assert "ledger verified: True" in printed

def test_agent_fix_in_a_kernel_sends_the_cell_escaped(run_notebook: Any,
                                                      tmp_path: Path) -> None:
    """A real kernel, no other tool needed: the bug, ``%agent_fix``, and what is saved."""
    bug = nbformat.v4.new_code_cell('label = "<script>alert(1)</script>"\n{"a": 1}["b"]')
    bug.metadata["tags"] = ["raises-exception"]
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("%load_ext agent_kernel"),
        nbformat.v4.new_code_cell("%agent_fix"),
        bug,
        nbformat.v4.new_code_cell("%agent_fix and keep it short"),
    ])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    out = run_notebook(nb, cwd=tmp_path, env={"AGENT_KERNEL_WORKSPACE": str(tmp_path / "ws")})
    _no_errors_but_the_planted_one(out)
    nothing = "".join(o.get("text", "") for o in out.cells[1].outputs)
    assert nothing == "No error to fix yet.\n"
    fixed = out.cells[3]
    state = run_state(fixed)
    assert state["prompt"].startswith("Explain and fix the last error in this notebook. "
                                      "and keep it short")
    assert "from this notebook's cell In[3], line 2" in state["prompt"]
    assert _tools(fixed)[0] == "last_error"
    assert "**KeyError**" in run_reply(fixed) and "line 2 of cell In[3]" in run_reply(fixed)
    page = "".join(o["data"].get("text/html", "") for o in fixed.outputs if "data" in o)
    assert "<script>alert(1)</script>" not in page
    assert "<script>alert(1)</script>" in html.unescape(page)  # there, as text
