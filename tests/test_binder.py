"""The Binder environment, built from ``binder/`` the way repo2docker builds it.

repo2docker installs ``binder/requirements.txt`` with pip into its Python
environment, then runs ``binder/postBuild`` from the repository's root. This test
does the same in a fresh virtual environment: a copy of the checkout's files (what
``git ls-files`` lists, so nothing built: ``agent_kernel/labextension/`` is absent
and the extension really is built by npm), ``HOME`` and the Jupyter folders in a
temporary folder, the venv first on PATH. Then, as a Binder visitor would find it:
JupyterLab lists the extension enabled, the server's front page leads to the
quickstart with the extension loaded, and every notebook in ``notebooks/`` runs
in that environment's kernel without an error. The build takes a few minutes
(pip about 1.5, npm and the extension build about 1).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import venv
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = "notebooks/01-quickstart.ipynb"
RUN_MIME = "application/vnd.agent-kernel.run.v1+json"

pytestmark = [pytest.mark.binder, pytest.mark.timeout(600)]


@dataclass
class BinderEnv:
    """A built Binder environment: its venv, repository copy, home and environment."""

    prefix: Path
    repo: Path
    home: Path
    env: dict[str, str]
    build_seconds: float

    def bin(self, name: str) -> str:
        return str(self.prefix / "bin" / name)


def run(command: list[str], env: dict[str, str], cwd: Path | None = None,
        timeout: float = 300) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=cwd)
    assert done.returncode == 0, f"{command} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done


def copy_checkout(target: Path) -> None:
    """Copy the files git knows of (tracked, and new ones not ignored): no build output."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=ROOT, capture_output=True, check=True)
    for name in listed.stdout.decode().split("\0"):
        source = ROOT / name
        if name and source.is_file():  # a file deleted but not yet committed is skipped
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def binder_environment(base: Path) -> dict[str, str]:
    """The test's environment minus anything pointing at this checkout or its Jupyter."""
    home = base / "home"
    drop = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "JUPYTER_PATH", "AGENT_KERNEL_WORKSPACE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update({
        "HOME": str(home),
        "JUPYTER_CONFIG_DIR": str(home / ".jupyter"),
        "JUPYTER_DATA_DIR": str(home / ".local" / "share" / "jupyter"),
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        "IPYTHONDIR": str(home / ".ipython"),
        "PYTHONNOUSERSITE": "1",
        "PATH": f"{base / 'venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
    })
    # npm's download cache is the only thing kept from the real home: it saves time and
    # changes nothing in what is built (package-lock.json fixes every version).
    env.setdefault("npm_config_cache", str(Path.home() / ".npm"))
    home.mkdir(parents=True)
    return env


@pytest.fixture(scope="module")
def binder(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
           ) -> BinderEnv:
    """The Binder environment, built once for the module (only for tests marked binder)."""
    if request.node.get_closest_marker("binder") is None:
        pytest.fail("the Binder build is only for tests marked `binder`", pytrace=False)
    started = time.monotonic()
    base = tmp_path_factory.mktemp("binder")
    repo = base / "repo"
    copy_checkout(repo)
    assert not (repo / "agent_kernel" / "labextension").exists()
    assert (repo / "binder" / "postBuild").is_file()
    env = binder_environment(base)
    prefix = base / "venv"
    venv.EnvBuilder(with_pip=True).create(prefix)
    run([str(prefix / "bin" / "python"), "-m", "pip", "install", "--no-cache-dir",
         "-r", "binder/requirements.txt"], env=env, cwd=repo)
    built = run([str(repo / "binder" / "postBuild")], env=env, cwd=repo, timeout=420)
    assert "JupyterLab opens notebooks/01-quickstart.ipynb" in built.stdout
    seconds = time.monotonic() - started
    print(f"Binder environment built in {seconds:.0f} s")
    return BinderEnv(prefix, repo, base / "home", env, seconds)


def test_postbuild_without_npm_stops_with_a_clear_message(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path)}
    done = subprocess.run(["/bin/bash", str(ROOT / "binder" / "postBuild")], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 1
    assert "npm was not found on PATH" in done.stderr
    assert "nodejs" in done.stderr


def test_jupyterlab_lists_the_extension_enabled(binder: BinderEnv) -> None:
    listed = run([binder.bin("jupyter"), "labextension", "list"], env=binder.env)
    text = re.sub(r"\x1b\[[0-9;]*m", "", listed.stdout + listed.stderr)
    here = str(binder.prefix / "share" / "jupyter" / "labextensions")
    assert here in text, text
    ours = text.split(here, 1)[1]
    assert re.search(r"agent-kernel v0\.1\.0 enabled\s+OK \(python, agent-kernel\)", ours), text
    assert (binder.prefix / "share/jupyter/labextensions/agent-kernel/static/style.js").is_file()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def test_jupyterlab_opens_the_quickstart_with_the_extension(binder: BinderEnv) -> None:
    config_dir = run([binder.bin("jupyter"), "--config-dir"], env=binder.env).stdout.strip()
    assert Path(config_dir) == binder.home / ".jupyter"
    written = (Path(config_dir) / "jupyter_server_config.py").read_text()
    assert f'quickstart = "/lab/tree/{QUICKSTART}"' in written

    port, token = _free_port(), "binder-test"
    command = [binder.bin("jupyter"), "lab", "--no-browser", f"--port={port}",
               "--ServerApp.ip=127.0.0.1", f"--ServerApp.token={token}"]
    if os.geteuid() == 0:
        command.append("--allow-root")
    server = subprocess.Popen(command, cwd=binder.repo, env=binder.env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=5)
                break
            except (urllib.error.URLError, ConnectionError):
                assert server.poll() is None and time.monotonic() < deadline, "no server"
                time.sleep(0.5)
        opener = urllib.request.build_opener(_NoRedirect)
        with pytest.raises(urllib.error.HTTPError) as redirect:
            opener.open(f"{url}/?token={token}", timeout=10)
        assert redirect.value.code == 302
        assert redirect.value.headers["Location"].split("?")[0] == f"/lab/tree/{QUICKSTART}"

        page = urllib.request.urlopen(f"{url}/lab/tree/{QUICKSTART}?token={token}",
                                      timeout=10).read().decode()
        match = re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)'
                          r"</script>", page, re.S)
        assert match, page[:2000]
        config = json.loads(match.group(1))
        assert config["treePath"] == QUICKSTART
        names = [ext["name"] for ext in config["federated_extensions"]]
        assert "agent-kernel" in names, names
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _error_outputs(nb: nbformat.NotebookNode) -> list[str]:
    found = []
    for cell in nb.cells:
        if "raises-exception" in cell.get("metadata", {}).get("tags", []):
            continue  # a planted error the notebook explains (06-data's misspelt column)
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error" or (
                    out.get("output_type") == "stream" and out.get("name") == "stderr"
                    and "Traceback" in out.get("text", "")):
                found.append(f"{cell.source!r}: {json.dumps(out)[:2000]}")
    return found


@pytest.mark.kernel
def test_the_notebooks_run_in_the_binder_kernel(binder: BinderEnv, tmp_path: Path) -> None:
    notebooks = sorted((binder.repo / "notebooks").glob("*.ipynb"))
    assert [n.name for n in notebooks][:1] == ["01-quickstart.ipynb"] and len(notebooks) >= 3
    out = tmp_path / "executed"
    # As on Binder: one after another, in the notebooks' folder, sharing its `.agent/`.
    for notebook in notebooks:
        run([binder.bin("jupyter"), "nbconvert", "--to", "notebook", "--execute",
             "--ExecutePreprocessor.timeout=300", "--output-dir", str(out), str(notebook)],
            env=binder.env, cwd=binder.repo, timeout=420)
    for notebook in notebooks:
        executed = nbformat.read(out / notebook.name, as_version=4)
        assert _error_outputs(executed) == [], notebook.name
        assert executed.metadata["kernelspec"]["name"] == "python3"
    quickstart = nbformat.read(out / "01-quickstart.ipynb", as_version=4)
    runs = [o for c in quickstart.cells for o in c.get("outputs", [])
            if RUN_MIME in o.get("data", {})]
    assert runs, "the quickstart's %agent cells carry no run output"
    html = "".join(o["data"].get("text/html", "") for o in runs)
    assert "I am the offline demo model" in html
    assert (binder.repo / "notebooks" / ".agent" / "ledger.jsonl").is_file()
    # The kernel was the Binder venv's Python, with agent-kernel installed there.
    probe = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import sys, agent_kernel\nprint(sys.prefix)\nprint(agent_kernel.__file__)")])
    probe.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                    "language": "python"}
    nbformat.write(probe, tmp_path / "probe.ipynb")
    run([binder.bin("jupyter"), "nbconvert", "--to", "notebook", "--execute",
         "--output-dir", str(out), str(tmp_path / "probe.ipynb")], env=binder.env)
    printed = nbformat.read(out / "probe.ipynb", as_version=4).cells[0].outputs[0]["text"]
    prefix, module = printed.split()
    assert Path(prefix) == binder.prefix and Path(sys.prefix) != binder.prefix
    assert Path(module).is_relative_to(binder.prefix / "lib")
