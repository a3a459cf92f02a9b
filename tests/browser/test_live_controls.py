"""A live run's controls in JupyterLab in Chromium (light and dark; issue 25, items 1, 2).

While an approval waits, the run output is patched in place: a handle on Approve is
the same node 5 s later and keeps the focus, a selection in the run survives, Tab
reaches Approve and Deny, and 100 clicks held 50 ms to 1.5 s on a card's summary all
arrive (each folds or unfolds the card). The marks have labels and the run's polite live
region says "waiting for your approval", then "done". Then a second run waits behind the
first and says so; the page is reloaded while the approval waits; the reloaded page
finds the run in the kernel, Enter on its Approve approves, the queued run asks and is
approved, and the next cell runs. A code block of an answer looks like the cards' blocks
and has Copy and "Insert as a cell below" (a new cell that does not run). Screenshots go
to ``test-output/browser/live/<mode>/``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from labserver import drive_notebook

OUTPUT = Path(__file__).resolve().parents[2] / "test-output" / "browser" / "live"
CELLS = ["%load_ext agent_kernel", "%agent run the command: echo one",
         "%agent run the command: echo two", "print('NEXT')",
         "import agent_kernel.notebook.magics as m\nm.current().agent.approvals.timeout = 20",
         "%agent run the command: echo late",
         # the usual 10 min again: the sleep below must not outlast the approval
         "m.current().agent.approvals.timeout = 600\n%agent run the command: echo stranded",
         "import time\ntime.sleep(25)",
         "%agent_stop"]
AA = 4.5

pytestmark = [pytest.mark.browser, pytest.mark.kernel, pytest.mark.timeout(600)]


@pytest.fixture(scope="module", params=["light", "dark"])
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
        ) -> tuple[str, dict[str, Any]]:
    mode = request.param
    result = drive_notebook(tmp_path_factory.mktemp(f"live-{mode}"), "live.ipynb", CELLS,
                            "live", OUTPUT / mode, script="live.mjs", timeout=500.0,
                            theme="JupyterLab Dark" if mode == "dark" else None)
    assert not result["errors"], "\n".join(result["errors"]) + "\n" + result["stderr"]
    return mode, result


def test_a_waiting_approval_holds_still(run: tuple[str, dict[str, Any]]) -> None:
    mode, result = run
    step = result["steps"]["hold"]
    assert step["dark"] == (mode == "dark")
    assert step["elapsed_moved"]  # updates did come meanwhile
    assert step["same_node"] and step["focus_kept"], json.dumps(step)
    assert step["selected"] and step["selection_after"] == step["selected"]
    assert step["tab_reached"][:2] == ["Approve", "Deny"]
    assert step["held_min_ms"] == 50 and step["held_max_ms"] == 1500
    assert step["clicks_arrived"] == step["clicks"] == 100
    assert step["flips"] == 100
    assert step["summary_same_node"] and step["approve_same_node_after_clicks"]
    assert "waiting for your approval" in step["marks"]
    assert step["region_waiting"] == "waiting for your approval"


def test_a_reloaded_page_finds_the_run_and_approves_it(run: tuple[str, dict[str, Any]]
                                                        ) -> None:
    _, result = run
    step = result["steps"]["reattach"]
    assert "waiting for the run above to finish" in step["queued_words"]
    assert "waiting for the run above to finish" in step["queued_after_reload"]
    assert step["controls_back_ms"] < 15_000
    assert step["first"] == "done" and step["first_outcome"].startswith("Approved")
    assert step["region_done"] == "done"
    assert step["second"] == "done"
    assert step["next"] == "NEXT"
    saved = result["saved"]
    assert '"status": "running"' not in saved  # the ended runs, not running ones, are kept


def test_an_answers_code_block_can_be_copied_and_inserted_below(
        run: tuple[str, dict[str, Any]]) -> None:
    _, result = run
    code = result["steps"]["code"]
    assert code["block"] == "one"
    look = code["look"]  # the tool cards' block: padded, framed
    assert look["padding"] == "4px 8px" and look["border"] == "1px solid", look
    assert code["buttons"] == ["Copy", "Insert as a cell below"]
    assert code["copy_said"] == "Copied" and code["clipboard"] == "one"
    assert code["cells_after"] == code["cells_before"] + 1
    assert code["inserted"] == "one"
    assert code["inserted_prompt"] == "[ ]:"  # inserted, not run


def test_the_time_left_changes_near_the_end_and_stays_readable(
        run: tuple[str, dict[str, Any]]) -> None:
    """A 20 s approval: "answer within …" plain at first; in its last 10 s bold behind a
    warning mark; its words at AA (4.5:1) and the mark too, light and dark."""
    _, result = run
    step = result["steps"]["countdown"]
    early, late = step["early"], step["late"]
    assert "answer within" in early["text"] and not early["late"], early
    assert early["mark"] in ("none", "normal", ""), early
    assert late["late"] and int(late["weight"]) >= 600 and "●" in late["mark"], late
    assert early["ratios"] and late["ratios"]
    assert min(early["ratios"] + late["ratios"]) >= AA, step
    assert late["mark_ratio"] >= AA, late
    assert step["status"] == "done"


def test_a_run_that_cannot_be_reached_says_how_to_stop_it_and_agent_stop_does(
        run: tuple[str, dict[str, Any]]) -> None:
    """Reloaded while the kernel sleeps in a cell: the run's controls cannot come back, so
    it says the kernel is busy and how to stop it (`%agent_stop`, a Stop that runs it);
    `%agent_stop` in the next cell stops it once the kernel is free."""
    _, result = run
    step = result["steps"]["stranded"]
    assert step["lost_after_ms"] < 15_000
    assert "The kernel is busy" in step["lost"] and "%agent_stop" in step["lost"], step
    assert step["lost_stop"] == 1 and step["buttons_while_lost"] == 0
    assert step["status"] == "stopped" and step["header"].startswith("stopped by you"), step
    assert step["lost_left"] == 0
