"""The JupyterLab extension draws a saved run from its JSON, with no kernel, light and dark.

A private JupyterLab (``labserver.py``) opens a notebook whose outputs are run
bundles as the kernel saves them: our MIME type with the fixture
``labextension/test/fixtures/run.json`` (every kind of entry), plus the
``text/html`` and ``text/plain`` fallbacks. No kernel runs. ``render.mjs``
(playwright-core, Debian's Chromium) reports what the renderer drew and the
contrast of every piece of its text; screenshots go to
``test-output/browser/labextension/``. The extension must be installed in this
environment (``pip install -e .`` builds and installs it).
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from labserver import (
    THEMES,
    Lab,
    missing_requirements,
    render_in_themes,
    start_lab,
    write_saved_runs,
)

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "labextension" / "test" / "fixtures" / "run.json"
OUTPUT = ROOT / "test-output" / "browser" / "labextension"
RUN_MIME = "application/vnd.agent-kernel.run.v1+json"
AA = 4.5

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]


def running_variant(state: dict[str, Any]) -> dict[str, Any]:
    """The fixture as a first run on the demo model would show it while litellm loads."""
    live = copy.deepcopy(state)
    live.update(status="running", offline=True, model="demo", usage=None, cost=None,
                elapsed_ms=3400, loading={"what": "the model library", "seconds": None})
    waiting = copy.deepcopy(state["entries"][2])  # write_file, now waiting for approval
    waiting.update(state="waiting", summary="waiting for your approval", result=None,
                   result_kind=None, error=None, duration_ms=None, ledger=None)
    waiting["approval"].update(answer=None, source=None, answered_at=None)
    live["entries"] = [state["entries"][0], waiting]
    return live


def stopped_variant(state: dict[str, Any]) -> dict[str, Any]:
    """That run stopped while its approval waited, saved as before ``source: "stopped"``
    existed (the wait ``null`` under an ended run): it must read as what happened."""
    stopped = running_variant(state)
    stopped.update(status="stopped", stopped_by_person=True,
                   loading={"what": "the model library", "seconds": 3.1})
    return stopped


def bundle(state: dict[str, Any]) -> dict[str, Any]:
    """A run's output as the kernel saves it (the fallbacks from the kernel's own code)."""
    from agent_kernel.views.run_html import html_of, text_of

    return {RUN_MIME: state, "text/html": html_of(state), "text/plain": text_of(state)}


def write_saved_notebook(lab: Lab, name: str) -> None:
    state = json.loads(FIXTURE.read_text(encoding="utf-8"))
    write_saved_runs(lab, name, [(f"%agent {state['prompt']}", bundle(state)),
                                 ("%agent hello", bundle(running_variant(state))),
                                 ("%agent hello", bundle(stopped_variant(state)))])


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    problem = missing_requirements()
    if problem:
        pytest.fail(f"the browser test needs Chromium and playwright-core: {problem}",
                    pytrace=False)
    shutil.rmtree(OUTPUT, ignore_errors=True)
    OUTPUT.mkdir(parents=True)
    lab = start_lab(tmp_path_factory.mktemp("lab"))
    try:
        write_saved_notebook(lab, "saved_runs.ipynb")
        found = render_in_themes(lab, "saved_runs.ipynb", OUTPUT)
        (OUTPUT / "report.json").write_text(json.dumps(found, indent=2))
        return found
    finally:
        lab.stop()


@pytest.fixture(params=sorted(THEMES))
def report(request: pytest.FixtureRequest, reports: dict[str, dict[str, Any]]) -> dict[str, Any]:
    found = reports[request.param]
    assert not found["errors"], "\n".join(found["errors"])
    return found


def test_the_extension_draws_saved_runs_without_a_kernel(report: dict[str, Any]) -> None:
    assert report["kernels"] == [], "the notebook should be open with no kernel"
    assert report["roots"] == 3, "our renderer should draw the three saved runs"
    assert report["html_fallbacks"] == 0, "JupyterLab chose the HTML fallback over our renderer"
    assert report["widget_errors"] == 0


def test_the_theme_is_the_one_asked_for(report: dict[str, Any]) -> None:
    assert report["dark"] == (report["theme"] == "dark")


def test_header_tells_the_truth(report: dict[str, Any]) -> None:
    done, live, _stopped = report["runs"]
    assert done["status"] == "done with failures"
    assert "14.3 s" in done["header"]
    assert "openai/gpt-4o-mini · 1545 tokens (1200 in, 345 out) · $0.0004" in done["header"]
    assert live["status"] == "running · loading the model library… 3 s"
    assert "offline demo model" in live["header"] and "tokens" not in live["header"]


def test_tool_cards_summaries_results_and_ledger(report: dict[str, Any]) -> None:
    run = report["runs"][0]
    assert run["tools"][0] == "✓bash · ran ls -la · exit 0 · 5 ms"
    assert run["tool_states"] == ["ok", "failed", "failed", "ok", "ok", "ok", "ok", "ok",
                                  "failed", "ok", "ok", "ok"]  # the last two: Planner, Worker
    assert run["args"][0] == ["cmd"], "null arguments are hidden"
    assert sorted(run["args"][1]) == ["content", "path"]  # "mode": null hidden
    stdout = run["blocks"][0]
    assert "total 8\ndrwxr-xr-x" in stdout, "text results keep their line breaks"
    assert "first line\nsecond line" in run["blocks"]
    assert run["table_rows"] == 3, "a list of records is a table"
    # recall's memories: a short list (text, date, tags), ids and scores folded (issue 25)
    assert run["memories"] == ["Deploys go to staging first", "Production needs a ticket",
                               "Friday deploys are off"]
    assert re.fullmatch(r"2026-11-20 \d\d:\d\d \S+ · tags: deploy · long-term",
                        run["memory_lines"][0]), run["memory_lines"]
    shown = run["memory_shown"][0]
    for storage in ("mem_", "run_a1", "memory.md", "score", "0.016393", "memory_id"):
        assert storage not in shown, storage
    assert run["memory_ids"][0] == "mem_20261120_090000_aa11bb22 · match 0.02"
    assert report["json_block"] == {"max_height": report["json_block"]["max_height"],
                                    "scrolls": True}
    assert report["json_block"]["max_height"] != "none"
    assert "You denied write_file, so notes.txt was not written." in run["errors"]
    assert run["ledger"][0] == "ledger rec_0001 · 12:04:31 · in ledger ✓ · 3f9a1c0b7e2d"
    assert len(run["ledger"]) == 10
    fetched, failed = run["tools"][7], run["tools"][8]
    assert fetched.startswith("✓url_fetch · fetched http://127.0.0.1:8765/guide.html · 200")
    assert failed.startswith("✗run_command · ran python3 -c") and "exit 3" in failed
    assert "the command exited with code 3" in run["errors"]
    assert "Oak trees keep their leaves late." in "\n".join(run["blocks"])
    assert "checking" in run["blocks"], "a failed command still shows its output"


def test_a_team_agents_runs_are_nested_and_folded(report: dict[str, Any]) -> None:
    planner, worker = report["runs"][0]["agents"]
    assert planner == {"role": "planner", "inside": None,
                       # named by their work (the id is a tooltip)
                       "summary": "compare two cities for… · Planner · done · 2.1 s compare "
                                  "two cities for a trip",
                       "tools": ["✓delegate · research Paris · priority 7"]}
    assert worker == {"role": "worker", "inside": "planner",
                      # the whole task is its name: said once
                      "summary": "research Paris · Worker · done · 0.9 s",
                      "tools": ["✓write_file · wrote files/paris.md · 11 bytes · 1 ms"]}
    assert "notes.txt" in report["runs"][0]["markdown_strong"]
    assert "paris.md" in report["runs"][0]["markdown_strong"]  # a nested reply's Markdown


def test_questions_and_approvals_read_as_their_outcome(report: dict[str, Any]) -> None:
    done, live, _stopped = report["runs"]
    assert done["outcomes"] == [
        "Approved · 12:04:31", "Denied · 12:04:40", "No answer in time: not run · 12:09:41",
        "Allowed by your standing permission · 12:04:43",
        "You chose staging · 12:04:51", "You answered “Ada Lovelace” · 12:04:58",
        "No answer in time · 12:06:00",
        "Not run: no one could approve it",
        "No answer: used the default, no · 12:06:32"]
    assert live["outcomes"] == ["Waiting for your approval (no answer after 300 s ends it)"]
    assert "button" not in json.dumps(report["runs"]).lower()


def test_a_run_stopped_while_its_approval_waited_reads_not_answered(
        report: dict[str, Any]) -> None:
    """Nobody can answer a saved notebook: no "waiting", the card did not run."""
    stopped = report["runs"][2]
    assert stopped["status"] == "stopped by you"
    assert stopped["outcomes"] == ["Not answered: the run was stopped"]
    assert stopped["tool_states"] == ["failed"]
    assert stopped["tools"] == ["✗write_file · not run: the run was stopped before you answered"]
    assert "waiting" not in json.dumps(stopped).lower()


def test_model_text_is_data_only(report: dict[str, Any]) -> None:
    run = report["runs"][0]
    assert run["markdown_strong"] == ["step 1", "notes.txt", "paris.md"], "Markdown is rendered"
    assert report["unsafe"] == 0 and report["xss"] is None


def test_text_contrast_is_aa(report: dict[str, Any]) -> None:
    measured = report["contrast"]
    assert len(measured) > 60
    low = [m for m in measured if m["ratio"] < AA]
    assert not low, json.dumps(low, indent=1, ensure_ascii=False)


def test_screenshots_saved(report: dict[str, Any]) -> None:
    shots = [Path(p) for p in report["shots"]]
    assert len(shots) == 4 and all(p.stat().st_size > 10_000 for p in shots)  # a run each, the page
