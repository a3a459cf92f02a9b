"""The extension draws the organiser's cards: a plan as a checklist, todos and contacts in
words, light and dark at AA, the model's words as text.

A saved notebook (no kernel) holds one demo run that adds a contact and a todo and writes
a plan whose steps carry markup; ``render.mjs`` reports what the renderer drew.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from labserver import THEMES, missing_requirements, render_in_themes, start_lab, write_saved_runs

from agent_kernel.views.mime import mime_bundle, transcript_of

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = ROOT / "test-output" / "browser" / "organiser"
AA = 4.5
STEP = "load the <img src=x onerror=\"window.__akl_xss=1\"> data"

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]


def organiser_run(tmp: Path) -> dict[str, Any]:
    """A demo run's saved bundle: a contact, a todo, a plan."""
    from agent_kernel import Agent

    agent = Agent(workspace=tmp / "ws")
    events: list[Any] = []
    agent.bus.subscribe(events.append)
    agent.run("add contact Alice tg:@alice")
    agent.run("add a todo: send Alice the sales report")
    events.clear()  # the saved cell holds the plan's run
    agent.run(f"plan: {STEP}; chart it by month")
    return mime_bundle(transcript_of(events))


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    problem = missing_requirements()
    if problem:
        pytest.fail(f"the browser test needs Chromium and playwright-core: {problem}",
                    pytrace=False)
    OUTPUT.mkdir(parents=True, exist_ok=True)
    bundle = organiser_run(tmp_path_factory.mktemp("agent"))
    lab = start_lab(tmp_path_factory.mktemp("lab"))
    try:
        write_saved_runs(lab, "organiser.ipynb", [("%agent plan: ...", bundle)])
        return render_in_themes(lab, "organiser.ipynb", OUTPUT)
    finally:
        lab.stop()


@pytest.fixture(params=sorted(THEMES))
def report(request: pytest.FixtureRequest, reports: dict[str, dict[str, Any]]) -> dict[str, Any]:
    found = reports[request.param]
    assert not found["errors"], "\n".join(found["errors"])
    return found


def test_a_plan_is_drawn_as_a_checklist(report: dict[str, Any]) -> None:
    assert report["roots"] == 1 and report["html_fallbacks"] == 0
    (run,) = report["runs"]
    (card,) = run["tools"]
    assert card.startswith("✓plan_create · a plan of 2 steps, starting with “Load the "
                           "<img src=x onerror=\"window.__akl_xss=1\"> data” · ")
    text = run["text"]
    assert "◐ Load the <img src=x onerror=\"window.__akl_xss=1\"> data (in progress)" in text
    assert "☐ Chart it by month (to do)" in text
    assert "{" not in text, "no raw JSON in the default view"
    assert report["unsafe"] == 0 and report["xss"] is None


def test_the_checklist_reads_at_aa(report: dict[str, Any]) -> None:
    low = [m for m in report["contrast"] if m["ratio"] < AA]
    assert not low, json.dumps(low, indent=1, ensure_ascii=False)
    assert any("Chart it by month" in m.get("text", "") for m in report["contrast"])
