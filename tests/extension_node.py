"""One of the JupyterLab extension's sources, compiled by its own tsc and run in node.

Tests of the page's logic that needs no browser (the code colouring, the cell requests,
the words of a saved run) compile ``labextension/src/<name>.ts`` alone and hand node a
short script; what the script prints is JSON.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

EXTENSION = Path(__file__).resolve().parents[1] / "labextension"


def compiled(name: str, out: Path) -> Path:
    """``labextension/src/<name>.ts`` compiled to CommonJS in ``out``: the ``.js`` file."""
    tsc = EXTENSION / "node_modules" / ".bin" / "tsc"
    if shutil.which("node") is None or not tsc.exists():
        pytest.fail("this test needs node and the extension's node_modules (npm ci in "
                    "labextension/)", pytrace=False)
    subprocess.run([str(tsc), str(EXTENSION / "src" / f"{name}.ts"), "--outDir", str(out),
                    "--target", "ES2020", "--module", "commonjs", "--moduleResolution", "node",
                    "--lib", "DOM,ES2020", "--strict", "--skipLibCheck"],
                   check=True, capture_output=True, timeout=180, cwd=EXTENSION)
    return out / f"{name}.js"


def in_node(script: str, *args: str) -> Any:
    """What ``node -e script args...`` prints, read as JSON."""
    node = shutil.which("node")
    assert node is not None
    done = subprocess.run([node, "-e", script, *args], capture_output=True, text=True,
                          timeout=60, check=True)
    return json.loads(done.stdout)
