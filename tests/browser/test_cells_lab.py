"""The agent inserts, runs and edits a cell in a real JupyterLab, light and dark.

A private JupyterLab (``labserver.py``, our extension on) runs a notebook whose model is
the scripted server on 127.0.0.1 (litellm's real HTTP path). ``%agent`` inserts a cell
below its own (no approval), then a Markdown cell below its own too, which moves the
first from position 2 to 3. It runs the first by the id its insert returned (Approve
clicked on a card showing its source and "cell 3", never the id: the cell's output, a
plot, appears in the notebook, executed by the frontend with its count), edits it by
that id (Approve clicked; the approval carries the unified diff) and reads the cells
back. The notebook is saved, its kernel shut down and the page reloaded: the cell's
provenance metadata is in the file and the "written by the agent" marker is drawn again.
``cells.mjs`` drives Chromium; screenshots go to ``test-output/browser/cells-<theme>/``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from labserver import CHROMIUM, HERE, missing_requirements, set_theme, start_lab, write_notebook
from scripted_server import Call, Message, ScriptedServer

OUTPUT = Path(__file__).resolve().parents[2] / "test-output" / "browser"
MODEL = "openai/test-model"
AA = 4.5
PLOT = ("import matplotlib.pyplot as plt\n"
        "from IPython.display import HTML, display\n"
        "print('SQUARES', [n * n for n in range(1, 5)])\n"
        "display(HTML('<b>squares</b><script>window.aklScriptRan = true</script>'))\n"
        "plt.plot([1, 4, 9, 16])\n"
        "plt.title('squares')\n"
        "plt.show()")
EDITED = PLOT.replace("'squares')", "'squares, by the agent')")
NOTE = "## Squares\nThe first four squares, drawn below."
PLOT_ID = "the-plot-cells-id"
"""Stands for the id the first insert_cell returns until the model's next request."""
RUN_MIME = "application/vnd.agent-kernel.run.v1+json"

pytestmark = [pytest.mark.browser, pytest.mark.kernel, pytest.mark.timeout(420)]


def script() -> list[Message]:
    return [Message(calls=[Call("insert_cell", json.dumps({"source": PLOT}))]),
            Message(calls=[Call("insert_cell", json.dumps({"source": NOTE,
                                                           "kind": "markdown"}))]),
            Message(calls=[Call("run_cell", json.dumps({"cell_id": PLOT_ID}))]),
            Message(calls=[Call("edit_cell", json.dumps({"cell_id": PLOT_ID,
                                                         "source": EDITED}))]),
            Message(calls=[Call("read_cells", json.dumps({"start": 1, "count": 4}))]),
            Message(text="The plot of squares is in the cell below.")]


def use_the_inserted_id(messages: list[Message], found: dict[str, Any]
                        ) -> Callable[[int, dict[str, Any]], None]:
    """The scripted model's memory: once the first insert_cell's result is in a request,
    its calls name that cell by the id the page returned (kept in ``found``)."""
    def fill(_number: int, body: dict[str, Any]) -> None:
        tools = [m for m in body["messages"] if m["role"] == "tool"]
        if "plot_id" in found or not tools:
            return
        found["plot_id"] = json.loads(tools[0]["content"]).get("id")
        for message in messages:
            for call in message.calls:
                call.arguments = call.arguments.replace(PLOT_ID, str(found["plot_id"]))
    return fill


@pytest.fixture(scope="module", params=["light", "dark"])
def report(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    problem = missing_requirements()
    if problem:
        pytest.fail(f"the browser test needs Chromium and playwright-core: {problem}",
                    pytrace=False)
    theme = request.param
    shots = OUTPUT / f"cells-{theme}"
    shutil.rmtree(shots, ignore_errors=True)
    shots.mkdir(parents=True)
    base = tmp_path_factory.mktemp(f"cells-{theme}")
    lab = start_lab(base)
    set_theme(lab, "JupyterLab Dark" if theme == "dark" else "JupyterLab Light")
    messages = script()
    ids: dict[str, Any] = {}
    with ScriptedServer(messages) as server:
        server.on_request = use_the_inserted_id(messages, ids)
        try:
            write_notebook(lab, "cells.ipynb", [
                "%load_ext agent_kernel\nimport os, agent_kernel.notebook.magics as m\n"
                "os.environ['OPENAI_API_KEY'] = 'sk-test-0123456789abcdef'\n"
                f"m.current().api_base = {server.base_url!r}\n"
                f"%agent_config --model {MODEL} --workspace {base / 'ws'}",
                "%agent make a plot of the first four squares",
                "led = m.current().agent.ledger\n"
                "print('VERIFIED', bool(led.verify()))\n"
                "print('CHANGES', [r['record_id'] for r in led.records()"
                " if r['kind'] == 'cell_change'])",
            ])
            config = {"url": lab.notebook_url("cells.ipynb"), "shots": str(shots),
                      "chromium": str(CHROMIUM), "profile": str(base / "chromium")}
            done = subprocess.run(["node", str(HERE / "cells.mjs"), json.dumps(config)],
                                  capture_output=True, text=True, timeout=360, cwd=HERE)
            line = next((x for x in reversed(done.stdout.splitlines())
                         if x.startswith("REPORT ")), None)
            if line is None:
                raise RuntimeError(f"cells.mjs gave no report (exit {done.returncode}):\n"
                                   f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}\n{lab.log()}")
            found: dict[str, Any] = json.loads(line.removeprefix("REPORT "))
            (shots / "report.json").write_text(json.dumps(found, indent=2))
            found["saved"] = json.loads((lab.root / "cells.ipynb").read_text(encoding="utf-8"))
            found["theme"] = theme
            found["requests"] = server.requests
            found["plot_id"] = ids.get("plot_id")
            found["log"] = lab.log() + "\n" + done.stderr[-3000:]
            return found
        finally:
            lab.stop()


def _ok(report: dict[str, Any]) -> dict[str, Any]:
    assert not report["errors"], "\n".join(report["errors"]) + "\n" + report["log"]
    steps: dict[str, Any] = report["steps"]
    return steps


def _last_tool_message(report: dict[str, Any], request: int) -> dict[str, Any]:
    """The tool result the model read in its ``request``-th call (0 is the first)."""
    said: dict[str, Any] = [m for m in report["requests"][request]["messages"]
                            if m["role"] == "tool"][-1]
    return said


def _low(measured: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in measured if m["ratio"] < AA]


def test_the_agent_inserts_a_cell_below_its_own_marked_and_unapproved(
        report: dict[str, Any]) -> None:
    steps = _ok(report)
    assert report["dark"] is (report["theme"] == "dark")
    inserted = steps["inserted"]
    assert report["cells_before"] == 3 and inserted["cells"] == 5
    assert "plt.title('squares')" in inserted["source"]  # moved to 3 by the second insert
    assert "first four squares" in inserted["note"]  # the Markdown cell, at 2
    assert inserted["mark"] == "written by the agent" and inserted["marked_cells"] == 2
    made = json.loads(_last_tool_message(report, 1)["content"])
    assert made["index"] == 2 and made["id"] == report["plot_id"]
    assert re.fullmatch(r"[0-9a-f-]{36}", report["plot_id"]), report["plot_id"]  # a UUID
    assert inserted["contrast"] and not _low(inserted["contrast"]), inserted["contrast"]


def test_run_cell_is_approved_from_its_source_and_the_plot_appears(
        report: dict[str, Any]) -> None:
    steps = _ok(report)
    card = steps["run"]["card"]
    assert "plt.plot([1, 4, 9, 16])" in card and report["plot_id"] not in card
    assert re.search(r"index\s*3", card), card  # the cell by its position now
    assert not _low(steps["run"]["contrast"]), _low(steps["run"]["contrast"])
    ran = steps["ran"]
    assert ran["images"] == 1, ran
    assert "SQUARES [1, 4, 9, 16]" in ran["output"]
    assert ran["prompt"].startswith("[") and ran["prompt"] != "[*]:"
    # what the agent's code displays is not trusted: its HTML is drawn, its script never runs
    assert ran["bold"] == 1 and ran["script_ran"] is False
    # the model read the outputs back: the text, and the plot as a placeholder
    run_result = _last_tool_message(report, 3)
    assert "SQUARES [1, 4, 9, 16]" in run_result["content"]
    assert "[image: PNG]" in run_result["content"]
    assert '"status": "done"' in run_result["content"]
    assert json.loads(run_result["content"])["index"] == 3


def test_edit_cell_is_approved_from_its_diff(report: dict[str, Any]) -> None:
    steps = _ok(report)
    assert "squares, by the agent" in steps["edit"]["card"]
    edited = steps["edited"]
    assert "plt.title('squares, by the agent')" in edited["source"]
    assert steps["run_status"] == "done"
    for said in ("insert_cell · inserted cell 2", "run_cell · ran cell 3", "edit_cell · edited "
                 "cell 3", "read_cells · read 4 cells"):
        assert said in edited["tools"], edited["tools"]
    saved_run = next(o["data"][RUN_MIME] for o in report["saved"]["cells"][1]["outputs"]
                     if RUN_MIME in o.get("data", {}))
    cards = [e for e in saved_run["entries"] if e.get("kind") == "tool"]
    assert [c["tool"] for c in cards] == ["insert_cell", "insert_cell", "run_cell", "edit_cell",
                                          "read_cells"]
    assert all(c["state"] == "ok" for c in cards), [c.get("summary") for c in cards]
    diff = cards[3]["approval"]["details"]["diff"]
    assert diff.startswith("--- cell 3 (now)\n")
    assert "-plt.title('squares')\n+plt.title('squares, by the agent')\n" in diff
    assert cards[3]["approval"]["details"]["arguments"] == {"index": 3, "source": EDITED}
    assert cards[3]["arguments"]["cell_id"] == report["plot_id"]  # the model's call
    read = json.loads(_last_tool_message(report, 5)["content"])
    assert read["agent_cell"] == 1 and read["cells"][0]["runs_this_agent"] is True
    assert read["cells"][1]["kind"] == "markdown"
    assert read["cells"][2]["id"] == report["plot_id"]
    assert read["cells"][2]["written_by_agent"]["action"] == "edited"
    # ids are the model's handle: the run as the person sees it names none; they are folded
    assert report["plot_id"] not in edited["visible"]
    assert report["plot_id"] in edited["folded_ids"]


def test_the_saved_notebook_keeps_the_provenance_and_the_marker_comes_back(
        report: dict[str, Any]) -> None:
    steps = _ok(report)
    cell = report["saved"]["cells"][3]
    assert cell["id"] == report["plot_id"]  # nbformat 4.5 saves the id the agent used
    provenance = cell["metadata"]["agent_kernel"]
    assert provenance["action"] == "edited" and provenance["run_id"].startswith("run_")
    assert provenance["at"].endswith("Z")
    assert "VERIFIED True" in steps["ledger"]
    assert provenance["ledger_record"] in steps["ledger"]  # the edit's cell_change record
    reopened = steps["reopened"]
    assert report["kernels_shut_down"] >= 1
    assert reopened["cells"] == 5 and reopened["marked_cells"] == 2
    assert reopened["mark"] == "written by the agent" and reopened["images"] == 1
    assert not _low(reopened["contrast"]), reopened["contrast"]


def test_screenshots_saved(report: dict[str, Any]) -> None:
    _ok(report)
    names = [Path(p).name for p in report["shots"]]
    for key in ("run-approval", "ran-cell", "edit-approval", "run-transcript", "edited-cell",
                "reopened-cell"):
        assert any(key in name for name in names), f"no screenshot for {key}: {names}"
    assert all(Path(p).stat().st_size > 5_000 for p in report["shots"])
