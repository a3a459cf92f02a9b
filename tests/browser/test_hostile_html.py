"""Script in the page, in Chromium: hostile strings in every view run nothing and load nothing.

One notebook holds the saved outputs of every view drawn with every payload of
tests/html_payloads.py in every field: a run (its MIME bundle: the extension's JSON
and the HTML fallback), the triggers panel, the team board and task tree, the memory
table, notices and control outcomes. It is signed as trusted, as a live kernel's
outputs are, so JupyterLab renders its HTML without its own sanitizer: our escaping is
the only guard. One JupyterLab serves it, light and dark, (a) with agent-kernel's
extension and (b) with the extension disabled, where the notebook's last cell is run in
a real kernel to show the live ipywidgets (a question's and an approval's controls)
with the payloads in every field; the team board is also saved as its JSON, drawn by
the extension (board.ts); (c)
``jupyter nbconvert --to html`` of the same notebook is opened as a file.
``hostile.mjs`` aborts and counts every request to a host other than this machine.
Each page must hold no element or attribute that runs or loads, no payload may run
(``window.akPwned`` stays unset, no dialog opens), and no remote request is made until
"show" is pressed on a held image in the extension's view: then exactly that image is
fetched.
Screenshots go to ``test-output/browser/hostile/``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from labserver import CHROMIUM, HERE, missing_requirements, start_lab

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = ROOT / "test-output" / "browser" / "hostile"
sys.path.insert(0, str(ROOT / "tests"))

pytestmark = [pytest.mark.browser, pytest.mark.kernel, pytest.mark.timeout(420)]
WIDGET_HTML_COUNT = 2
"""HTML widgets the last cell shows: a question and an approval (the triggers panel's
and the team board's controls are words, no widget)."""


def _notebook(data_dir: Path) -> Any:
    import nbformat
    from html_payloads import HOSTILE, board_state, run_state, views
    from nbformat.sign import NotebookNotary

    from agent_kernel.core.mime_types import BOARD_MIME, RUN_MIME
    from agent_kernel.views.board import board_bundle
    from agent_kernel.views.run_html import html_of, text_of

    state = run_state(HOSTILE)
    outputs = [{RUN_MIME: state, "text/html": html_of(state), "text/plain": text_of(state)}]
    outputs += [{"text/html": page, "text/plain": name}
                for name, page in views(HOSTILE).items() if name != "run"]
    board = board_state(HOSTILE)  # the board as our extension draws it (board.ts)
    outputs.append({**board_bundle(board), BOARD_MIME: {
        "version": 1, "state": board, "controls": "extension",
        "rows": [{"id": HOSTILE, "op": "stop", "label": HOSTILE}]}})
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    for n, data in enumerate(outputs):
        cell = nbformat.v4.new_code_cell(f"# view {n + 1}")
        cell.outputs = [nbformat.v4.new_output("display_data", data=data)]
        nb.cells.append(cell)
    nb.cells.append(nbformat.v4.new_code_cell(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'tests')!r})\n"
        "from html_payloads import HOSTILE, show_live_widgets\nshow_live_widgets(HOSTILE)"))
    NotebookNotary(data_dir=str(data_dir)).sign(nb)  # trusted, as a live run's outputs are
    return nb


def test_hostile_strings_run_and_load_nothing(tmp_path: Path) -> None:
    import nbformat

    problem = missing_requirements()
    if problem:
        pytest.fail(f"the browser test needs Chromium and playwright-core: {problem}",
                    pytrace=False)
    OUTPUT.mkdir(parents=True, exist_ok=True)
    lab = start_lab(tmp_path / "lab")
    try:
        notebook = lab.root / "hostile.ipynb"
        nbformat.write(_notebook(Path(lab.env["JUPYTER_DATA_DIR"])), str(notebook))
        converted = subprocess.run(
            [sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", str(notebook),
             "--output-dir", str(tmp_path / "html")], capture_output=True, text=True,
            env=lab.env, timeout=120)
        assert converted.returncode == 0, converted.stderr[-2000:]
        page_config = str(Path(lab.env["JUPYTER_CONFIG_DIR"]) / "labconfig" / "page_config.json")
        disable = {"write": page_config, "text": json.dumps(
            {"disabledExtensions": {"agent-kernel": True}})}
        themes = str(Path(lab.env["JUPYTERLAB_SETTINGS_DIR"]) / "@jupyterlab" /
                     "apputils-extension" / "themes.jupyterlab-settings")
        dark = {"write": themes, "text": json.dumps({"theme": "JupyterLab Dark"})}
        light = {"write": themes, "text": json.dumps({"theme": "JupyterLab Light"})}
        url = lab.notebook_url("hostile.ipynb")
        config = {
            "pages": [
                {"name": "with-extension", "kind": "lab", "extension": True, "url": url},
                {"name": "with-extension-dark", "kind": "lab", "extension": True, "url": url,
                 "before": [dark]},
                {"name": "without-extension-dark", "kind": "lab", "extension": False,
                 "url": url, "before": [disable]},
                {"name": "without-extension", "kind": "lab", "extension": False, "url": url,
                 "before": [light], "runLast": True},
                {"name": "nbconvert", "kind": "file", "extension": False,
                 "url": (tmp_path / "html" / "hostile.html").as_uri()},
            ],
            "restore": {"write": page_config, "text": "{}"},
            "widgets": WIDGET_HTML_COUNT, "shots": str(OUTPUT),
            "chromium": str(CHROMIUM), "profile": str(tmp_path / "chromium-profile"),
        }
        done = subprocess.run(["node", str(HERE / "hostile.mjs"), json.dumps(config)],
                              capture_output=True, text=True, timeout=360, cwd=HERE)
    finally:
        lab.stop()
    line = next((x for x in reversed(done.stdout.splitlines()) if x.startswith("REPORT ")),
                None)
    assert line, f"no report (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr}"
    report = json.loads(line[len("REPORT "):])
    (OUTPUT / "report.json").write_text(json.dumps(report, indent=2))
    assert not report["errors"], report["errors"]
    pages = report["pages"]
    assert set(pages) == {"with-extension", "with-extension-dark", "without-extension",
                          "without-extension-dark", "nbconvert"}
    for name, page in pages.items():
        assert page["bad"] == [], (name, page["bad"])
        assert page["pwned"] is None, name
        assert page["payload_text"] >= 20, (name, page["payload_text"])  # shown as text
        assert page["held_images"] >= 2, name
    assert report["dialogs"] == []
    # (a) drew the run with the extension, (b) and (c) the HTML fallback and the widgets
    assert pages["with-extension"]["extension_runs"] == 1
    assert pages["with-extension"]["boards"] == 1  # the board from its JSON (board.ts)
    assert pages["without-extension"]["boards"] == 0
    assert pages["without-extension"]["extension_runs"] == 0
    assert pages["without-extension"]["fallback_runs"] == 1
    assert pages["without-extension"]["widgets"] == WIDGET_HTML_COUNT
    assert pages["with-extension-dark"]["dark"] and pages["without-extension-dark"]["dark"]
    assert not pages["with-extension"]["dark"]
    assert pages["nbconvert"]["fallback_runs"] == 1
    evil = [url for url in report["remote"][:report["before_click"]] if "evil.example" in url]
    assert evil == []
    click = report["click"]
    assert click["url"].startswith("https://evil.example/")
    assert click["url"] in click["requests"] and click["images"] == 1
