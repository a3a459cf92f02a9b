"""The team in a real JupyterLab: its nested transcript, a Worker's approval and the board.

A private JupyterLab (our extension on) runs a notebook on the offline demo
model, driven by playwright-core in Debian's Chromium (``drive.mjs``,
scenario ``team``): ``%agent --team research three cities ...`` must draw
each Planner's and Worker's run folded inside the Teller's; ``%agent --team
run command sleep 30`` must put the Worker's approval in the Teller's output,
naming the Worker; a trigger of the team's is made from Python; ``%agent_team``
then says the Worker waits for approval, and draws Stop IN the running Worker's
row and Cancel in the trigger's (inside the row's element and its box, labelled
by the work); Cancel is clicked (the board redraws, Stop stays the same node),
then Stop is pressed from the keyboard and stops that Worker; the notebook is
saved, its kernel shut down and the page reloaded, and everything must read
from the file, with no button and no widget error.
Runs in the light and the dark theme, text contrast measured. Screenshots go
to ``test-output/browser/team-<theme>/``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from labserver import drive_notebook

OUTPUT = Path(__file__).resolve().parents[2] / "test-output" / "browser"
AA = 4.5  # WCAG AA for text
CITIES = ("Lisbon", "Kyoto", "Montreal")

CELLS = [
    "%load_ext agent_kernel",
    "%agent --team research three cities for a trip and compare them",
    "%agent --team run command sleep 30",
    "import agent_kernel.notebook.magics as m\n"
    "team = m.current()._team.team\n"
    "watch = team.triggers.every(600, 'check the build')\n"
    "print('TRIGGER', watch.id)",
    "%agent_team",
    "print('VERIFIED', bool(team.ledger.verify()))\n"
    "print('KINDS', sorted({r.get('kind') for r in team.ledger.records()}))",
    # a board as saved while its Worker ran (its row live): reopened with no kernel it
    # must read, with no button
    "from IPython.display import display\n"
    "from agent_kernel.core.mime_types import BOARD_MIME\n"
    "from agent_kernel.views.board import board_bundle, snapshot\n"
    "state = snapshot(team)\n"
    "state['running'] = [{'id': 'task_saved_live', 'role': 'worker', 'type': 'task',\n"
    "    'priority': 5, 'status': 'running', 'prompt': 'summarise the saved notes',\n"
    "    'created': state['as_of'], 'by': 'teller', 'agent': 'worker-9',\n"
    "    'started': state['as_of'], 'waiting': None}]\n"
    "display({**board_bundle(state), BOARD_MIME: {'version': 1, 'state': state,\n"
    "    'controls': 'extension', 'rows': [{'id': 'task_saved_live', 'op': 'stop',\n"
    "    'label': 'Worker · running: summarise the saved notes'}]}}, raw=True)",
]


@pytest.fixture(scope="module", params=["light", "dark"])
def report(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    theme = request.param
    result = drive_notebook(tmp_path_factory.mktemp("lab"), "team.ipynb", CELLS, "team",
                            OUTPUT / f"team-{theme}",
                            theme="JupyterLab Dark" if theme == "dark" else "JupyterLab Light")
    result["theme"] = theme
    return result


pytestmark = [pytest.mark.browser, pytest.mark.kernel, pytest.mark.timeout(420)]


def _step(report: dict[str, Any], name: str) -> dict[str, Any]:
    assert not report["errors"], "\n".join(report["errors"]) + "\n" + report["stderr"]
    return report["steps"][name]


def _low(measured: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in measured if m["ratio"] < AA]


def test_each_agent_run_is_nested_in_the_tellers(report: dict[str, Any]) -> None:
    step = _step(report, "transcript")
    assert step["status"] == "done"
    assert step["dark"] is (report["theme"] == "dark")
    assert step["agents"] == 4, step["agent_titles"]  # one Planner, three Workers
    assert step["nested_workers"] == 3  # each Worker folded inside the Planner
    titles = step["agent_titles"]
    assert sum(" · Planner · " in t for t in titles) == 1  # named by their work
    assert sum(" · Worker · " in t for t in titles) == 3
    assert not any(re.search(r"(worker|planner)-\d", t) for t in titles), titles
    for city in CITIES:
        assert city in step["reply"], step["reply"]
    assert step["tables"] >= 1  # the Teller's comparison table, drawn as Markdown
    assert not _low(step["contrast"]), json.dumps(_low(step["contrast"]), indent=1)


def test_a_workers_approval_sits_in_its_calls_card_in_the_workers_run(
        report: dict[str, Any]) -> None:
    step = _step(report, "approval")
    assert step["label"] == "Approval:", step["label"]
    assert "sleep 30" in step["question"]
    assert step["top_level"] == 0 and step["in_agent"] == 1
    assert step["agent_name"].startswith("run command sleep 30 · Worker"), step["agent_name"]
    assert re.fullmatch(r"worker-\d+", step["agent_title"] or ""), step["agent_title"]
    assert step["outcome"].startswith("Approved · ")
    # the board, shown while the Worker waited, said so on its row, and stopped saying it
    assert step["board_waiting"] == "waiting for your approval"
    assert "sleep 30" in step["board_waiting_row"]
    assert step["board_waiting_after"] == 0
    warnings = [m for m in step["board_waiting_contrast"] if "ak-warn" in m["element"]]
    assert any(m["text"] == "waiting for your approval" for m in warnings), warnings
    assert not _low(step["board_waiting_contrast"]), json.dumps(
        _low(step["board_waiting_contrast"]), indent=1)
    assert not _low(step["contrast"]), json.dumps(_low(step["contrast"]), indent=1)


def test_the_board_shows_the_running_worker_and_stop_ends_it(report: dict[str, Any]) -> None:
    step = _step(report, "board")
    assert step["running_rows"] == 1 and step["stop_buttons"] == 1
    assert "sleep 30" in step["board"]
    # the agents alive now: the Teller, the Worker running the command, the trigger desk,
    # named by their role beside the work they are on, ids in tooltips
    assert step["agent_rows"] == 3 and re.search(
        r"\bWorker\s+run command sleep 30", step["board"]), step["board"]
    assert "sleep 30 · Worker" not in step["board"]  # the work stands once
    assert not re.search(r"worker-\d|task_", step["board"]), step["board"]
    assert step["artifact_rows"] == 3  # the three cities' notes, from the first prompt
    assert step["role_rows"] == 3  # the built-in roles
    # Stop on the running Worker's row, Cancel on the trigger's: in the row, in its box
    stop, cancel = step["placement"]["stop"], step["placement"]["cancel"]
    assert stop["in_row"] and stop["box_in_row"], stop
    assert stop["label"] == "Stop run command sleep 30", stop
    assert "sleep 30" in stop["row_text"]
    assert cancel["in_row"] and cancel["box_in_row"], cancel
    assert cancel["label"] == "Cancel check the build", cancel
    assert step["placement"]["outputs"] == 1, "one output: the board, its rows' buttons in it"
    assert not _low(step["contrast"]), json.dumps(_low(step["contrast"]), indent=1)
    trigger = report["steps"]["approval"]["trigger"].removeprefix("TRIGGER ").strip()
    assert step["cancel_buttons"] == 1 and step["cancels_left"] == 0  # the trigger's
    assert re.search(r"Cancelled: check the build \(a trigger, every 10 min", step["outcome"])
    assert trigger not in step["outcome"], step["outcome"]  # the id is the row's tooltip
    assert step["same_stop_node"], "the board redrew: Stop must stay the same node"
    assert step["stop_focused"]
    assert re.search(r"Stopped: run command sleep 30 \(a Worker\) · ", step["stopped"]), \
        step["stopped"]
    assert "task_" not in step["stopped"], step["stopped"]
    assert step["buttons_after"] == 0
    assert step["run_status"] in ("done", "done_with_failures", "stopped")
    assert "Nothing is running." in step["board_after"]
    # the run's time is the whole prompt's (the Worker ran a while), not the Teller's last run
    assert float(step["elapsed"].removesuffix(" s")) >= 1.0, step["elapsed"]
    ledger = report["steps"]["ledger"]
    assert "VERIFIED True" in ledger
    for kind in ("tool_call", "task_started", "task_finished", "approval",
                 "trigger_created", "trigger_cancelled"):
        assert f"'{kind}'" in ledger, ledger


def test_reopened_without_a_kernel_the_team_reads_in_full(report: dict[str, Any]) -> None:
    reopened = _step(report, "reopened")
    assert reopened["kernels_shut_down"] >= 1
    assert reopened["agents"] == 4
    for city in CITIES:
        assert city in reopened["transcript"]
    assert "run command sleep 30 · Worker" in reopened["approval"]
    assert "Approval for" not in reopened["approval"] and "Approved" in reopened["approval"]
    assert "Nothing is running." in reopened["board"]  # the last state, kept by the file
    assert "1 cancelled, 5 ok" in reopened["board"]
    assert re.search(r"Teller\s+idle", reopened["board"]), reopened["board"]
    assert "Stopped: run command sleep 30 (a Worker)" in reopened["controls"], \
        reopened["controls"]
    assert "Cancelled: check the build (a trigger, every 10 min)" in reopened["controls"], \
        reopened["controls"]
    assert not re.search(r"(?:Stopped|Cancelled):? (?:task|trg)_", reopened["controls"])
    assert reopened["buttons"] == 0 and reopened["widget_errors"] == 0
    # saved while its row was live: the row reads, says the magic, and has no button
    live_row = reopened["saved_live_row"]
    assert "summarise the saved notes" in live_row, live_row
    assert "while its kernel runs: %agent_team stop task_saved_live" in live_row, live_row
    assert reopened["saved_live_buttons"] == 0
    names = [Path(p).name for p in report["shots"]]
    for key in ("team-transcript", "team-approval", "team-board-waiting", "team-board",
                "team-stopped", "team-cancelled",
                "reopened-team-cell1", "reopened-team-cell4", "reopened-team-cell6"):
        assert any(key in name for name in names), f"no screenshot for {key}: {names}"
