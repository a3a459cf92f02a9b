"""The triggers panel as a saved notebook keeps it (nbclient, a real kernel, the demo model).

A trigger every 2 s fires while a later cell awaits; the panels shown in the
cell that made it and by ``%agent_triggers`` must be saved as their last real
state: static HTML and text, no widget, the runs counted, times with the zone.
"""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.kernel

WIDGET = "application/vnd.jupyter.widget-view+json"


def _html(cell) -> str:
    return "".join(str(out.get("data", {}).get("text/html", "")) for out in cell.outputs)


def test_saved_panels_show_the_runs_with_local_times(run_notebook, tmp_path) -> None:
    nb = run_notebook([
        "%load_ext agent_kernel",
        "%agent remind me every 2 seconds to stretch",
        "%agent_triggers",
        "import asyncio\nawait asyncio.sleep(8.5)  # the trigger fires meanwhile",
        "%agent remember that the standup is in the Oak room",
        "%agent_memory",
    ], cwd=tmp_path, timeout=180,
        env={"AGENT_KERNEL_WORKSPACE": str(tmp_path / "ws"), "TZ": "Europe/Paris"})
    for cell in nb.cells:
        for out in cell.outputs:
            assert WIDGET not in out.get("data", {}), out  # headless: no controls at all
    for index in (1, 2):  # the card in the run's cell, then %agent_triggers
        html = _html(nb.cells[index])
        assert "agent-kernel-triggers" in html, html
        runs = [int(n) for n in re.findall(r"agent-kernel-trigger-runs'>(\d+)", html)]
        assert runs and runs[0] >= 2, html
        assert "not run yet" not in html and "data-status='active'" in html
        assert "stretch" in html
        assert re.search(r"\d\d:\d\d:\d\d CES?T", html), html
        # local times with their zone; no "ago" or "in 4 s" to go stale once saved
        assert not re.search(r"\d+ (s|min) ago|just now|\bin \d+ (s|min)\b", html), html
        assert html.index("Last result") < html.index(">Id</th>")
        text = "".join(str(out.get("data", {}).get("text/plain", ""))
                       for out in nb.cells[index].outputs)
        assert "not run yet" not in text and "[recurring, active" in text
    memory = nb.cells[5].outputs
    assert [sorted(out["data"]) for out in memory] == [["text/html", "text/plain"]]
    table = memory[0]["data"]["text/html"]
    assert "standup is in the Oak room" in table and re.search(r"\d\d:\d\d CES?T", table)
    # a short list: the text, then its date; the id folded away
    shown, folded = table.split("<details", 1)
    assert "<ol" in shown and "mem_" not in shown and "mem_" in folded
