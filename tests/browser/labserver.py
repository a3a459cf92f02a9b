"""Start a private JupyterLab on 127.0.0.1 and drive it with playwright-core in Chromium.

Shared by the browser test and ``benchmarks/click_latency.py``. The server
gets temporary ``JUPYTER_*``, ``IPYTHONDIR``, JupyterLab settings and
workspace folders, a random token, a free port, ``--allow-root`` when run as
root, and a settings override that turns off the "Jupyter news" popup.
``drive()`` runs ``drive.mjs`` (node + playwright-core, Debian's Chromium)
and returns its JSON report.
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CHROMIUM = Path("/usr/bin/chromium")
THEMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}
"""The themes a saved run is drawn in, by the key its report goes under."""
PLAYWRIGHT = HERE / "node_modules" / "playwright-core"
SETTINGS_OVERRIDES = {
    "@jupyterlab/apputils-extension:notification": {
        "fetchNews": "false", "checkForUpdates": False},
    # Every cell stays in the page, so the driver can reach any of them.
    "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
}


def missing_requirements() -> str | None:
    """Why the browser test cannot run here, or None; CI installs all of these."""
    problems = []
    if not CHROMIUM.exists():
        problems.append(f"{CHROMIUM} is missing (apt-get install -y chromium)")
    if not PLAYWRIGHT.exists():
        problems.append(f"{PLAYWRIGHT} is missing (npm ci --prefix {HERE})")
    if shutil.which("node") is None:
        problems.append("node is not on PATH")
    return "; ".join(problems) or None


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Lab:
    """A running JupyterLab server."""

    base: Path
    root: Path
    port: int
    token: str
    process: subprocess.Popen[bytes]
    env: dict[str, str]
    log_path: Path
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def url(self) -> str:
        """The server's base URL."""
        return f"http://127.0.0.1:{self.port}"

    def notebook_url(self, name: str) -> str:
        """The URL that opens ``name`` (in the server root) in JupyterLab."""
        return f"{self.url}/lab/tree/{name}?token={self.token}"

    def log(self) -> str:
        """The server's output so far (for failure messages)."""
        return self.log_path.read_text(encoding="utf-8", errors="replace")[-4000:]

    def stop(self) -> None:
        """Shut the server (and its kernels) down."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


def start_lab(base: Path, ready_timeout: float = 60.0, disabled: list[str] | None = None) -> Lab:
    """Start JupyterLab with everything private under ``base``; wait until it answers.

    ``disabled`` names labextensions to turn off (as ``jupyter labextension disable``).
    """
    dirs = {name: base / sub for name, sub in (
        ("JUPYTER_CONFIG_DIR", "jupyter-config"), ("JUPYTER_DATA_DIR", "jupyter-data"),
        ("JUPYTER_RUNTIME_DIR", "jupyter-runtime"), ("IPYTHONDIR", "ipython"),
        ("JUPYTERLAB_SETTINGS_DIR", "lab-user-settings"),
        ("JUPYTERLAB_WORKSPACES_DIR", "lab-workspaces"),
        ("AGENT_KERNEL_WORKSPACE", "agent-workspace"))}
    for folder in dirs.values():
        folder.mkdir(parents=True, exist_ok=True)
    if os.environ.get("AGENT_KERNEL_TEST_KERNEL_LOG"):  # under pytest (tests/conftest.py):
        # the lab's kernels report the test that started them, as the session's do
        report = Path(os.environ["IPYTHONDIR"]) / "profile_default" / "ipython_kernel_config.py"
        (dirs["IPYTHONDIR"] / "profile_default").mkdir(exist_ok=True)
        shutil.copy(report, dirs["IPYTHONDIR"] / "profile_default" / report.name)
    # The extension of the code under test (the one PYTHONPATH imports) ahead of any
    # installed copy: JupyterLab looks in JUPYTER_PATH first.
    built = Path(str(importlib.util.find_spec("agent_kernel").origin)).parent / "labextension"
    own = base / "jupyter-path"
    if (built / "package.json").exists() and not (own / "labextensions").exists():
        (own / "labextensions").mkdir(parents=True)
        (own / "labextensions" / "agent-kernel").symlink_to(built)
    if disabled:
        labconfig = dirs["JUPYTER_CONFIG_DIR"] / "labconfig"
        labconfig.mkdir(parents=True, exist_ok=True)
        (labconfig / "page_config.json").write_text(json.dumps(
            {"disabledExtensions": {name: True for name in disabled}}))
    app_settings = base / "lab-app-settings"
    app_settings.mkdir(parents=True, exist_ok=True)
    (app_settings / "overrides.json").write_text(json.dumps(SETTINGS_OVERRIDES, indent=2))
    root = base / "notebooks"
    root.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.update({k: str(v) for k, v in dirs.items()})
    if (own / "labextensions").exists():
        env["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(own), env.get("JUPYTER_PATH")]))
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    env.pop("JUPYTER_TOKEN", None)
    port, token = free_port(), secrets.token_hex(16)
    command = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
               f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
               f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
               f"--LabApp.app_settings_dir={app_settings}",
               f"--LabApp.user_settings_dir={dirs['JUPYTERLAB_SETTINGS_DIR']}",
               f"--LabApp.workspaces_dir={dirs['JUPYTERLAB_WORKSPACES_DIR']}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")
    log_path = base / "jupyterlab.log"
    handle = log_path.open("wb")
    process = subprocess.Popen(command, env=env, stdout=handle, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, cwd=root)
    lab = Lab(base, root, port, token, process, env, log_path)
    deadline = time.monotonic() + ready_timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with {process.returncode}:\n{lab.log()}")
        try:
            with urllib.request.urlopen(f"{lab.url}/api/status?token={token}", timeout=2):
                lab.extra["ready_seconds"] = ready_timeout - (deadline - time.monotonic())
                return lab
        except OSError:
            time.sleep(0.25)
    lab.stop()
    raise RuntimeError(f"JupyterLab did not answer within {ready_timeout:g} s:\n{lab.log()}")


def set_theme(lab: Lab, theme: str) -> None:
    """JupyterLab's theme for the next page load ("JupyterLab Light" / "JupyterLab Dark")."""
    folder = Path(lab.env["JUPYTERLAB_SETTINGS_DIR"]) / "@jupyterlab" / "apputils-extension"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "themes.jupyterlab-settings").write_text(json.dumps({"theme": theme}))


def write_notebook(lab: Lab, name: str, cells: list[str]) -> Path:
    """Write a notebook of code cells into the server root."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    path = lab.root / name
    nbformat.write(nb, str(path))
    return path


def write_saved_runs(lab: Lab, name: str, cells: list[tuple[str, dict[str, Any]]]) -> None:
    """A notebook of saved ``%agent`` cells, each (source, output bundle), with a kernel that
    does not exist: JupyterLab asks, and render.mjs picks "No Kernel"."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "agent-kernel-none", "display_name": "None",
                                 "language": "python"}
    for source, data in cells:
        cell = nbformat.v4.new_code_cell(source, execution_count=1)
        cell.outputs = [nbformat.v4.new_output("display_data", data=data)]
        nb.cells.append(cell)
    nbformat.validate(nb)
    nbformat.write(nb, str(lab.root / name))


def render(lab: Lab, notebook: str, theme: str, shots: Path) -> dict[str, Any]:
    """render.mjs's report on ``notebook`` as it is drawn (``theme`` names its shots), with
    the kernels the server runs afterwards (a saved run must start none)."""
    config = {"url": lab.notebook_url(notebook), "shots": str(shots), "theme": theme,
              "chromium": str(CHROMIUM), "profile": str(lab.base / f"chromium-{theme}")}
    done = subprocess.run(["node", str(HERE / "render.mjs"), json.dumps(config)],
                          capture_output=True, text=True, timeout=180, cwd=HERE)
    line = next((x for x in reversed(done.stdout.splitlines()) if x.startswith("REPORT ")), None)
    if line is None:
        raise RuntimeError(f"render.mjs gave no report (exit {done.returncode}):\n"
                           f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}\n{lab.log()}")
    report: dict[str, Any] = json.loads(line[len("REPORT "):])
    with urllib.request.urlopen(f"{lab.url}/api/kernels?token={lab.token}", timeout=10) as r:
        report["kernels"] = json.load(r)
    return report


def render_in_themes(lab: Lab, notebook: str, shots: Path) -> dict[str, dict[str, Any]]:
    """:func:`render`'s report in each of :data:`THEMES`, by its key."""
    found: dict[str, dict[str, Any]] = {}
    for key, theme in THEMES.items():
        set_theme(lab, theme)
        found[key] = render(lab, notebook, key, shots)
    return found

def drive(lab: Lab, notebook: str, scenario: str, shots: Path, timeout: float = 300.0,
          script: str = "drive.mjs", **options: Any) -> dict[str, Any]:
    """Run ``script`` (drive.mjs) for ``scenario`` against ``notebook``; its JSON report."""
    shots.mkdir(parents=True, exist_ok=True)
    config = {"url": lab.notebook_url(notebook), "scenario": scenario, "shots": str(shots),
              "chromium": str(CHROMIUM), "profile": str(lab.base / "chromium-profile"),
              **options}
    done = subprocess.run(["node", str(HERE / script), json.dumps(config)],
                          capture_output=True, text=True, timeout=timeout, cwd=HERE)
    report_line = next((line for line in reversed(done.stdout.splitlines())
                        if line.startswith("REPORT ")), None)
    if report_line is None:
        raise RuntimeError(f"{script} gave no report (exit {done.returncode}).\nstdout:\n"
                           f"{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}\n"
                           f"server log:\n{lab.log()}")
    report: dict[str, Any] = json.loads(report_line[len("REPORT "):])
    report["exit_code"] = done.returncode
    report["stderr"] = done.stderr[-3000:]
    return report


def drive_notebook(base: Path, name: str, cells: list[str], scenario: str, shots: Path, *,
                   theme: str | None = None, disabled: list[str] | None = None,
                   **options: Any) -> dict[str, Any]:
    """A private JupyterLab with ``cells`` as notebook ``name``, driven through ``scenario``:
    its report (kept as ``shots/report.json``) with the server's log and the saved file.
    Missing Chromium or node modules fail the calling test (CI installs them)."""
    import pytest

    problem = missing_requirements()
    if problem:
        pytest.fail(f"the browser test needs Chromium and playwright-core: {problem}",
                    pytrace=False)
    shutil.rmtree(shots, ignore_errors=True)
    lab = start_lab(base, disabled=disabled)
    if theme:
        set_theme(lab, theme)
    try:
        write_notebook(lab, name, cells)
        result = drive(lab, name, scenario, shots, **options)
        (shots / "report.json").write_text(json.dumps(result, indent=2))
        result["server_log"] = lab.log()
        result["saved"] = (lab.root / name).read_text(encoding="utf-8")
        return result
    finally:
        lab.stop()
