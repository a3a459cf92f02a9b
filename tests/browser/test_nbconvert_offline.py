"""nbconvert's HTML of an executed notebook shows every run in Chromium with the network off.

A real kernel (nbclient, headless) runs ``%agent`` on the demo model through an
answer, a tool that works, a bash command whose stdout has line breaks, an
approval the headless policy denies and a question nobody answers. The notebook
is saved and turned into HTML by ``jupyter nbconvert --to html`` (the test
environment's own). ``offline_page.mjs`` opens that file in Debian's Chromium
with the context offline and every non-``file:`` request aborted, and reports
each run's texts, any text a reader cannot see, and the requests the page tried
(nbconvert's template points at require.js and MathJax on a CDN, and at the
widget manager on unpkg when the notebook holds widget state). The runs must
read in full regardless. Screenshots go to ``test-output/browser/nbconvert/``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from labserver import CHROMIUM, HERE, missing_requirements

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = ROOT / "test-output" / "browser" / "nbconvert"
RUN_MIME = "application/vnd.agent-kernel.run.v1+json"

pytestmark = [pytest.mark.browser, pytest.mark.kernel, pytest.mark.timeout(300)]

CELLS = {
    "answer": "%agent what can you do?",
    "tool_ok": "%agent echo hello",
    "bash": "%agent run command printf 'one\\ntwo\\n'",
    "denied": "%agent write file notes.txt with hello",
    "question": "%agent ask me to choose between tea or coffee",
}
SOURCES = ["%load_ext agent_kernel", CELLS["answer"], CELLS["tool_ok"],
           "import agent_kernel.notebook.magics as m\n"
           "m.current().agent.settings.headless_approval = 'allow'",
           CELLS["bash"],
           "m.current().agent.settings.headless_approval = 'deny'",
           CELLS["denied"], CELLS["question"]]


def flat(text: str) -> str:
    """Text as a reader sees it: Markdown's code marks gone, runs of white space as one."""
    return " ".join(text.replace("`", "").split())


def runs_by_cell(view: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The page's runs by the key of the cell that made them (they are in cell order)."""
    return dict(zip(CELLS, view["runs"], strict=True))


def open_offline(html: Path) -> dict[str, Any]:
    config = {"file": str(html), "shots": str(OUTPUT), "chromium": str(CHROMIUM),
              "name": html.stem}
    done = subprocess.run(["node", str(HERE / "offline_page.mjs"), json.dumps(config)],
                          capture_output=True, text=True, timeout=120, cwd=HERE)
    line = next((x for x in reversed(done.stdout.splitlines()) if x.startswith("REPORT ")), None)
    if line is None:
        raise RuntimeError(f"offline_page.mjs gave no report (exit {done.returncode}):\n"
                           f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    report: dict[str, Any] = json.loads(line[len("REPORT "):])
    assert not report["errors"], "\n".join(report["errors"])
    return report


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory,
             isolated_env: dict[str, str]) -> dict[str, Any]:
    """The executed notebook's run states and the offline page's report.

    Runs the notebook once for the module with what the ``run_notebook`` fixture hands out
    (``kernel_runs.execute_notebook``), in the session's private Jupyter folders.
    """
    from kernel_runs import execute_notebook

    problem = missing_requirements()
    if problem:
        pytest.fail(f"the browser test needs Chromium and playwright-core: {problem}",
                    pytrace=False)
    import nbformat

    work = tmp_path_factory.mktemp("nbconvert")
    nb = execute_notebook(SOURCES, cwd=work, timeout=120)
    path = work / "agent_runs.ipynb"
    nbformat.write(nb, str(path))
    jupyter = Path(sys.executable).with_name("jupyter")
    command = [str(jupyter)] if jupyter.exists() else [sys.executable, "-m", "jupyter"]
    converted = subprocess.run([*command, "nbconvert", "--to", "html", str(path)],
                               capture_output=True, text=True, timeout=120, cwd=work)
    assert converted.returncode == 0, converted.stderr
    html = path.with_suffix(".html")
    shutil.rmtree(OUTPUT, ignore_errors=True)
    OUTPUT.mkdir(parents=True)
    shutil.copy(html, OUTPUT / html.name)
    states = {key: [out.data[RUN_MIME] for out in cell.outputs if RUN_MIME in out.get("data", {})]
              for key, source in CELLS.items() for cell in nb.cells if cell.source == source}
    report = open_offline(html)
    (OUTPUT / "report.json").write_text(json.dumps(report, indent=2, ensure_ascii=False))
    return {"states": states, "report": report, "html": html.read_text(encoding="utf-8"),
            "widget_state": "widgets" in nb.metadata}


def test_every_run_is_in_the_page_in_order(exported: dict[str, Any]) -> None:
    states = exported["states"]
    assert all(len(runs) == 1 for runs in states.values()), states
    for view in ("as_opened", "cards_opened"):
        page = exported["report"][view]
        assert [run["prompt"] for run in page["runs"]] == [
            f"Prompt: {states[key][0]['prompt']}" for key in CELLS]
        assert page["widget_errors"] == 0 and not page["raw_run_json"]
        assert page["scripts_in_runs"] == 0


def test_status_words_and_tool_summaries_are_shown(exported: dict[str, Any]) -> None:
    runs = runs_by_cell(exported["report"]["as_opened"])
    assert {key: run["status"] for key, run in runs.items()} == {
        "answer": "done", "tool_ok": "done", "bash": "done", "denied": "denied",
        "question": "done"}
    for key, run in runs.items():
        tools = [e for e in exported["states"][key][0]["entries"] if e["kind"] == "tool"]
        assert [flat(s) for s in run["summaries"]] == [
            flat(f"{'✓' if t['state'] == 'ok' else '✗'} {t['tool']} · {t['summary']}")
            for t in tools]
        assert "offline demo model" in run["text"]
    assert runs["tool_ok"]["summaries"][0].startswith("✓ echo · ok ·")
    assert re.fullmatch(r"✓ bash · ran printf 'one\\ntwo\\n' · exit 0 · \d+ ms",
                        runs["bash"]["summaries"][0])
    assert runs["denied"]["summaries"][0].startswith("✗ write_file · write_file was not run")
    assert runs["question"]["summaries"][0].startswith("✓ ask_user · no answer in time")


def test_answers_and_outcomes_read_in_full(exported: dict[str, Any]) -> None:
    runs = runs_by_cell(exported["report"]["as_opened"])
    for key, run in runs.items():
        texts = [e["text"] for e in exported["states"][key][0]["entries"] if e["kind"] == "text"]
        assert texts and [flat(r) for r in run["replies"]] == [flat(t) for t in texts]
    assert "The echo tool returned: hello" in runs["tool_ok"]["text"]
    assert "I can use these tools:" in runs["answer"]["text"]
    question = runs["question"]
    [outcome] = question["answered"]
    assert re.fullmatch(r"No answer in time · \d\d:\d\d:\d\d", outcome), outcome
    assert "Which do you choose: tea, coffee? (tea / coffee)" in flat(question["text"])
    assert "will not assume one" in question["text"]
    assert "no one could approve it (headless policy: deny)" in runs["denied"]["replies"][0]


def test_cards_fold_only_their_details(exported: dict[str, Any]) -> None:
    closed, opened = (exported["report"][view] for view in ("as_opened", "cards_opened"))
    assert closed["hidden"] == [], json.dumps(closed["hidden"], ensure_ascii=False, indent=1)
    # every card is folded but ask_user's, whose question and answer stay in view (issue 25)
    folded = runs_by_cell(closed)
    assert all(not any(run["cards_open"]) for key, run in folded.items() if key != "question")
    assert folded["question"]["cards_open"] == [True]
    assert opened["hidden"] == [], json.dumps(opened["hidden"], ensure_ascii=False, indent=1)
    runs = runs_by_cell(opened)
    assert "one\ntwo" in runs["bash"]["blocks"], "stdout keeps its line breaks"
    assert runs["bash"]["answered"] == ["allowed by the headless policy"]
    assert runs["denied"]["answered"] == [
        "not run: no one could approve it"]
    assert "hello" in runs["tool_ok"]["blocks"]
    assert all("in ledger ✓" in run["text"] for key, run in runs.items() if key != "answer")


def test_the_page_reads_with_nothing_loaded(exported: dict[str, Any]) -> None:
    report, page = exported["report"], exported["html"]
    attempted = report["attempted"]
    # What nbconvert's template asks for: none of it is needed to read a run.
    assert all(re.match(r"https://(cdnjs\.cloudflare\.com|unpkg\.com)/", url)
               for url in attempted), attempted
    assert any("require.min.js" in url for url in attempted), attempted
    # Headless runs make no widget at all, so the notebook carries no widget state and the
    # page never asks for a widget manager.
    assert not exported["widget_state"]
    assert not any("unpkg.com" in url for url in attempted), attempted
    assert len(re.findall(r"class=[\"']agent-kernel-run[\"']", page)) == len(CELLS)
    assert len(report["shots"]) == 2 and all(Path(p).stat().st_size > 10_000
                                             for p in report["shots"])


def test_every_text_of_the_runs_is_aa_warnings_included(exported: dict[str, Any]) -> None:
    """WCAG AA (4.5:1) for each text against its background; the denied run's status is a
    warning word, drawn in the warning colour, so that colour is measured too."""
    measured = exported["report"]["contrast"]
    warnings = [m for m in measured if "ak-warn" in m["element"]]
    assert any(m["text"] == "denied" for m in warnings), json.dumps(measured, indent=1)
    low = [m for m in measured if m["ratio"] < 4.5]
    assert not low, json.dumps(low, indent=1, ensure_ascii=False)
