"""The real-browser test: JupyterLab 4 in Debian's Chromium, real clicks on real buttons.

A private JupyterLab runs on 127.0.0.1; playwright-core (``drive.mjs``) opens
a notebook and runs ``%agent`` cells on the demo model: a question with
options answered by a click (non-blocking, then ``--wait``), a free-text
answer, an approval clicked Deny, a slow approved command stopped with Stop,
and a run after Stop; then it saves, shuts the kernel down and reloads, and
every run must read in full from the file. It runs twice: with our extension,
which draws the live controls inside each run output (an approval inside the
card it gates, Stop in the header), and with the extension disabled, where the
kernel falls back to ipywidgets controls in outputs of their own. Screenshots
of each step go to ``test-output/browser/<mode>/``. Missing Chromium or node modules FAIL the test:
CI installs them (``.ci/run``).
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
DONE = "done"

CELLS = [
    "%load_ext agent_kernel",
    "%agent ask me to choose between tea or coffee",
    "%%agent --wait\nask me to choose between tea or coffee",
    "%agent ask me my name",
    "%agent write file notes.txt with hello",
    "%agent run command sleep 30",
    "%agent echo still usable after stop",
    "import json, agent_kernel.notebook.magics as m\n"
    "agent = m.current().agent\n"
    "kinds = [r.get('kind') for r in agent.ledger.records()]\n"
    "print('LEDGER', json.dumps(kinds))\n"
    "print('VERIFIED', bool(agent.ledger.verify()))\n"
    "print('PENDING', (agent.workspace.root / 'pending_question.json').exists())\n"
    "print('NOTES', (agent.workspace.root / 'files' / 'notes.txt').exists())",
    "%agent remind me every 2 seconds to stretch",
    "%agent_triggers",
    "%agent remember that the standup is in the Oak room",
    "%agent_memory",
    "%agent remind me every 10 minutes to drink water",  # live when saved
    # without our extension, what the panel's controls tell a person to type to cancel
    "from agent_kernel.triggers import scheduler_for\n"
    "import agent_kernel.notebook.magics as m\n"
    "every_2s = [t.id for t in scheduler_for(m.current().agent).triggers.values()\n"
    "            if 'stretch' in t.prompt and t.active]\n"
    "%agent_triggers cancel {every_2s[0]}",
]


@pytest.fixture(scope="module", params=["extension", "widgets"])
def report(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    mode = request.param
    result = drive_notebook(tmp_path_factory.mktemp("lab"), "human_in_the_loop.ipynb", CELLS,
                            "test", OUTPUT / mode, controls=mode,
                            disabled=["agent-kernel"] if mode == "widgets" else [],
                            # the live controls are also seen (and measured) in the dark
                            theme="JupyterLab Dark" if mode == "extension" else None)
    result["mode"] = mode
    return result


pytestmark = [pytest.mark.browser, pytest.mark.kernel, pytest.mark.timeout(420)]


def _step(report: dict[str, Any], name: str) -> dict[str, Any]:
    assert not report["errors"], "\n".join(report["errors"]) + "\n" + report["stderr"]
    return report["steps"][name]


def test_click_an_option_and_the_reply_uses_it(report: dict[str, Any]) -> None:
    step = _step(report, "ask")
    assert step["status"] == DONE
    assert "You answered tea, so I will go with tea." in step["reply"]
    assert step["answered"].startswith("You chose tea · ")
    assert step["outcome"].startswith("You chose tea · ")  # the buttons, now text
    assert step["buttons_left"] == 0 and step["widget_outputs"] == 0


def test_click_reaches_a_blocking_wait_cell(report: dict[str, Any]) -> None:
    step = _step(report, "ask_wait")
    assert step["prompt_while_asking"] == "[*]:", "the --wait cell should be busy while asking"
    assert step["status"] == DONE
    assert "You answered coffee, so I will go with coffee." in step["reply"]
    assert step["answered"].startswith("You chose coffee · ")
    assert "clicks cannot reach" not in step["stderr"]


def test_free_text_answer_sent_with_enter(report: dict[str, Any]) -> None:
    step = _step(report, "text")
    assert step["status"] == DONE
    assert "You answered Ada Lovelace" in step["reply"]
    assert step["answered"].startswith("You answered “Ada Lovelace” · ")


def test_approval_denied_shows_arguments_and_the_model_goes_on(report: dict[str, Any]) -> None:
    step = _step(report, "deny")
    assert step["approval_buttons"] == ["Approve", "Deny", "Always allow this tool"]
    assert step["primary"] == ["Approve"]
    assert "write_file" in step["question"]
    assert "notes.txt" in step["question"] and "hello" in step["question"]
    assert "waiting for your approval" in step["card_while_asking"]
    assert re.search(r"answer within [0-9]+:[0-9]{2} · then: Deny", step["countdown"])
    assert step["status"] == "denied"
    assert "did not go through" in step["reply"] and "the user denied it" in step["reply"]
    assert "You denied write_file" in step["card"] and "Denied" in step["card"]
    assert step["widget_outputs"] == 0
    if report["mode"] == "extension":  # the approval sits inside the card it gates
        assert step["approval_in_card"] == 3
        assert step["outcome"].startswith("Denied · ")
        assert step["dark"], "the extension's live controls are checked in the dark theme"
        measured = step["contrast"] + report["text_contrast"]
        assert {"Approve", "Deny", "Always allow this tool", "Stop", "Send"} <= {
            m["text"] for m in measured}
        low = [m for m in measured if m["ratio"] < AA]
        assert not low, json.dumps(low, indent=1, ensure_ascii=False)
    else:
        assert step["approval_in_card"] == 0
        assert step["outcome"].startswith("write_file: Denied · ")
        # the HTML fallback's warning colour: the waiting mark, then the status "denied"
        measured = step["fallback_contrast"]
        warnings = {m["text"] for m in measured if "ak-warn" in m["element"]}
        assert {"?", "denied"} <= warnings, warnings
        low = [m for m in measured if m["ratio"] < AA]
        assert not low, json.dumps(low, indent=1, ensure_ascii=False)


def test_stop_cancels_and_the_conversation_goes_on(report: dict[str, Any]) -> None:
    step = _step(report, "stop")
    assert "bash" in step["running_tool"] and "running" in step["running_tool"]
    assert step["running_status"] == "running" and step["stop_buttons"] == 1
    assert step["status"] == "stopped"
    assert step["stop_to_stopped_ms"] < 10_000
    assert step["stop_buttons_after"] == 0
    if report["mode"] == "widgets":  # Stop had an output of its own: now text
        assert "Stopped · " in step["outcome"]
    assert step["widget_outputs"] == 0
    after = _step(report, "after_stop")
    assert after["status"] == DONE
    assert "still usable after stop" in after["reply"]
    ledger = report["steps"]["ledger"]
    kinds = json.loads(ledger.split("LEDGER ", 1)[1].splitlines()[0])
    assert "run_cancelled" in kinds
    assert kinds.count("approval") == 2  # Deny on write_file, Approve on bash
    assert "VERIFIED True" in ledger
    assert "PENDING False" in ledger and "NOTES False" in ledger


def test_trigger_panel_updates_in_place_and_cancel_turns_to_text(
        report: dict[str, Any]) -> None:
    step = _step(report, "triggers")
    assert step["status"] == DONE
    assert step["runs_live"] >= 2 and step["card_runs_live"] >= 2
    if report["mode"] == "extension":
        assert step["panel_widgets"] == 0 and step["cancel_buttons"] == 1
    else:  # no widget: the controls are words naming the magic, which cancels
        assert step["panel_widgets"] == 0 and step["cancel_buttons"] == 0
        assert "every 2 s · remind me to stretch — cancel with %agent_triggers cancel trg_" \
            in step["controls"]
        assert "Cancelled: " in step["cancel_cell"] and "trg_" not in step["cancel_cell"]
    assert "moved to a newer triggers panel" in step["card_controls"]
    assert step["outcome"].startswith("Cancelled: ") and "(every 2 s)" in step["outcome"]
    assert "trg_" not in step["outcome"], step["outcome"]
    assert "cancelled" in step["panel"] and "not run yet" not in step["panel"]
    assert step["widget_outputs"] == 0
    assert "standup is in the Oak room" in _step(report, "memory")["table"]


def test_reopened_without_a_kernel_every_run_reads_in_full(report: dict[str, Any]) -> None:
    """Saved, kernel shut down, page reloaded: no widget errors, every run still there."""
    reopened = _step(report, "reopened")
    assert reopened["kernels_shut_down"] >= 1
    assert reopened["widget_errors"] == 0 and reopened["widget_outputs"] == 0
    assert reopened["extension_runs"] + reopened["html_runs"] >= 6
    runs = reopened["runs"]
    assert runs["1"]["status"] == DONE and "You answered tea" in runs["1"]["text"]
    assert "You chose tea" in runs["1"]["outcome"]
    assert "You answered coffee" in runs["2"]["text"]
    assert "You answered “Ada Lovelace”" in runs["3"]["text"]
    assert runs["4"]["status"] == "denied" and "You denied write_file" in runs["4"]["text"]
    assert runs["5"]["status"] == "stopped"
    if report["mode"] == "widgets":
        assert "Stopped · " in runs["5"]["outcome"]
        assert reopened["html_runs"] >= 6 and reopened["extension_runs"] == 0
    else:
        assert "Approved · " in runs["5"]["outcome"]
        assert reopened["extension_runs"] >= 6
    assert runs["6"]["status"] == DONE and "still usable after stop" in runs["6"]["text"]
    assert "cancelled" in reopened["triggers"] and "stretch" in reopened["triggers"]
    stretch = [line for line in reopened["triggers"].splitlines() if "stretch" in line]
    assert stretch and not any("not run yet" in line for line in stretch)
    assert reopened["trigger_outcome"].startswith("Cancelled: ")
    assert "standup is in the Oak room" in reopened["memory"]
    # saved while its trigger was live: text, no button, no widget
    live = reopened["live_panel_controls"]
    assert "every 10 min · remind me to drink water" in live
    assert "%agent_triggers cancel trg_" in live
    assert reopened["live_panel_buttons"] == 0
    live_step = report["steps"]["live_trigger"]
    assert live_step["widget_outputs"] == 0
    # Cancel while it ran, with our extension; without it, the words that say how
    assert live_step["buttons"] == (1 if report["mode"] == "extension" else 0)
    assert "every 10 min · remind me to drink water" in live_step["controls"]
    if report["mode"] == "widgets":
        assert "%agent_triggers cancel trg_" in live_step["controls"]
    measured = live_step["contrast"]
    assert {"Status", "Schedule"} <= {m["text"] for m in measured}
    if report["mode"] == "extension":
        assert "Cancel" in {m["text"] for m in measured}
    assert any("standup is in the Oak room" in m["text"] for m in measured)
    low = [m for m in measured if m["ratio"] < AA]
    assert not low, json.dumps(low, indent=1, ensure_ascii=False)


def test_no_news_popup_and_screenshots_saved(report: dict[str, Any]) -> None:
    assert report["news_popup"] == 0
    names = [Path(p).name for p in report["shots"]]
    for key in ("ask-question", "ask-answered", "ask_wait-question", "ask_wait-answered",
                "approval-question", "approval-denied", "stop-running", "stop-stopped",
                "triggers-panel", "triggers-cancelled", "memory-table", "reopened-cell9",
                "reopened-cell11", "reopened-page"):
        assert any(key in name for name in names), f"no screenshot for {key}: {names}"
    assert all(Path(p).stat().st_size > 1000 for p in report["shots"])


def test_saved_notebook_keeps_the_answers(report: dict[str, Any]) -> None:
    """The saved file: every output static, the answers in the runs' HTML and state."""
    import nbformat

    nb = nbformat.reads(report["saved"], as_version=4)
    for cell in nb.cells[1:]:
        for out in cell.outputs:
            assert "application/vnd.jupyter.widget-view+json" not in out.get("data", {}), out

    def static_html(index: int) -> str:
        outputs = nb.cells[index].outputs
        return "".join(str(out.get("data", {}).get("text/html", "")) for out in outputs)

    assert "You chose tea · " in static_html(1)
    assert "You chose coffee · " in static_html(2)
    assert "Denied · " in static_html(4)
    run = nb.cells[1].outputs[0]["data"]["application/vnd.agent-kernel.run.v1+json"]
    assert run["status"] == "done" and run["version"] == 1
