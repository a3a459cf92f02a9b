"""A wheel of agent-kernel carries the JupyterLab extension, and installing it needs no node.

The wheel is built from this checkout with the build hook (``pip wheel
--no-build-isolation``: hatchling and hatch-jupyter-builder come from the test
extras, so nothing is downloaded), then installed with ``--no-deps`` into a fresh
virtual environment whose PATH holds only that environment's ``bin``: no node,
no npm. JupyterLab itself is lent to that environment on ``PYTHONPATH`` (its data
folders stay the fresh environment's own), and ``jupyter labextension list``
must show ``agent-kernel`` enabled and OK in the fresh prefix.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARE = "share/jupyter/labextensions/agent-kernel"

pytestmark = pytest.mark.timeout(240)


def run(command: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, env=env)
    assert done.returncode == 0, f"{command} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
         "--no-index", "-w", str(dist)])
    (built,) = dist.glob("agent_kernel-*.whl")
    return built


def test_the_wheel_carries_the_built_extension(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    shared = [n for n in names if f".data/data/{SHARE}/" in n]
    tail = {n.split(f"{SHARE}/", 1)[1] for n in shared}
    assert {"package.json", "install.json", "static/style.js"} <= tail
    assert any(re.fullmatch(r"static/remoteEntry\.[0-9a-f]+\.js", t) for t in tail)
    assert not [n for n in names if "node_modules" in n or n.endswith(".ts")]
    assert "agent_kernel/data/sales.csv" in names  # the data notebook's set, offline


def test_pip_install_without_node_activates_the_extension(wheel: Path, tmp_path: Path) -> None:
    prefix = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(prefix)
    python = prefix / "bin" / "python"
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "JUPYTER_PATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = str(prefix / "bin")
    assert shutil.which("node", path=env["PATH"]) is None
    assert shutil.which("npm", path=env["PATH"]) is None
    run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", str(wheel)], env=env)
    assert (prefix / SHARE / "install.json").is_file()

    env["PYTHONPATH"] = sysconfig.get_paths()["purelib"]  # JupyterLab, lent
    listed = run([str(python), "-c", "import sys; from jupyterlab.labextensions import main; "
                  "sys.exit(main())", "list"], env=env)
    text = re.sub(r"\x1b\[[0-9;]*m", "", listed.stdout + listed.stderr)
    sections = re.split(r"^(\S.*labextensions)\s*$", text, flags=re.M)
    ours = dict(zip(sections[1::2], sections[2::2], strict=False))
    here = str(prefix / "share" / "jupyter" / "labextensions")
    assert here in ours, text
    line = r"agent-kernel v0\.1\.0 enabled\s+OK \(python, agent-kernel\)"
    assert re.search(line, ours[here]), text
