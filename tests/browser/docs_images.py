"""Draw the pictures of a run in ``docs/images/`` with the JupyterLab extension, light and dark.

Run by hand after the run view changes (``python tests/browser/docs_images.py``);
not a test. It starts a private JupyterLab like ``test_labextension.py``, opens a
notebook holding one saved run (a part of that test's fixture: a Markdown answer,
a ``bash`` call with its approval and stdout, a denied ``write_file``, a ``recall``
with its memories as a short list, and a question, with fixed times and no machine
paths), opens the ``bash`` and ``recall`` cards the way a reader would, and saves the
cell as PNG with ``docs_shot.mjs``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from labserver import CHROMIUM, Lab, missing_requirements, set_theme, start_lab  # noqa: E402
from test_labextension import FIXTURE, THEMES, bundle  # noqa: E402

ROOT = HERE.parents[1]
IMAGES = ROOT / "docs" / "images"


def docs_run() -> dict[str, Any]:
    """A short run from the fixture: every kind of card a reader meets first, nothing else."""
    state = json.loads(FIXTURE.read_text(encoding="utf-8"))
    entries = state["entries"]
    first = dict(entries[0], text=entries[0]["text"].split("\n\n<img")[0])
    tools: dict[str, dict[str, Any]] = {}
    for entry in entries:  # the first call of each tool (the first write_file is denied)
        if entry["kind"] == "tool":
            tools.setdefault(entry["tool"], entry)
    [question] = [e for e in entries if e["kind"] == "question" and e.get("answer") == "staging"]
    [last] = [e for e in entries if e["kind"] == "text"][-1:]
    # One denied call and no other failure: the header says "denied".
    state.update(status="denied", entries=[first, tools["bash"], tools["write_file"],
                                           tools["recall"], question, last])
    return state


def write_notebook(lab: Lab, name: str) -> None:
    import nbformat

    state = docs_run()
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "agent-kernel-none", "display_name": "None",
                                 "language": "python"}
    cell = nbformat.v4.new_code_cell(f"%agent {state['prompt']}", execution_count=1)
    cell.outputs = [nbformat.v4.new_output("display_data", data=bundle(state))]
    nb.cells.append(cell)
    nbformat.validate(nb)
    nbformat.write(nb, str(lab.root / name))


def main() -> None:
    problem = missing_requirements()
    if problem:
        sys.exit(problem)
    IMAGES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as base:
        lab = start_lab(Path(base))
        try:
            write_notebook(lab, "run.ipynb")
            for key, theme in THEMES.items():
                set_theme(lab, theme)
                target = IMAGES / f"run-{key}.png"
                config = {"url": lab.notebook_url("run.ipynb"), "file": str(target),
                          "chromium": str(CHROMIUM), "profile": str(Path(base) / f"c-{key}"),
                          "dark": key == "dark"}
                done = subprocess.run(["node", str(HERE / "docs_shot.mjs"), json.dumps(config)],
                                      capture_output=True, text=True, timeout=180, cwd=HERE)
                if done.returncode != 0:
                    sys.exit(f"docs_shot.mjs failed:\n{done.stdout}\n{done.stderr}\n{lab.log()}")
                print(f"{target.relative_to(ROOT)}: {target.stat().st_size // 1024} KB")
        finally:
            lab.stop()


if __name__ == "__main__":
    main()
