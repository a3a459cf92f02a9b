"""The markers stay true: a test that starts a kernel without the ``kernel`` marker fails
(tests/conftest.py), so ``-m "not kernel"`` starts no kernel and cannot drift."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

PROBE = '''
import nbformat
import pytest
from nbclient import NotebookClient


def start_a_kernel():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
    NotebookClient(nb, kernel_name="python3", timeout=60).execute()
    assert nb.cells[0].outputs[0]["text"] == "42\\n"


def test_unmarked_starts_a_kernel():
    start_a_kernel()


@pytest.mark.kernel
def test_marked_starts_a_kernel():
    start_a_kernel()


def test_unmarked_asks_for_run_notebook(run_notebook):
    pass


def test_unmarked_starts_none():
    pass
'''


@pytest.mark.kernel
def test_a_kernel_started_without_the_marker_fails_the_test(tmp_path: Path) -> None:
    for helper in ("conftest.py", "kernel_runs.py"):  # the fixtures and what they import
        shutil.copy(HERE / helper, tmp_path / helper)
    (tmp_path / "test_probe.py").write_text(PROBE)
    (tmp_path / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n"
                                         "markers =\n    kernel: starts kernels\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA",
                           "-q", str(tmp_path)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=240)
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "PASSED test_probe.py::test_marked_starts_a_kernel" in out, out
    assert "PASSED test_probe.py::test_unmarked_starts_none" in out, out
    assert ("test_probe.py::test_unmarked_starts_a_kernel started 1 kernel(s) but is not "
            "marked `kernel`") in out, out
    assert ("test_probe.py::test_unmarked_asks_for_run_notebook uses run_notebook, which "
            "starts a kernel, but is not marked `kernel`") in out, out
    assert "3 passed" in out and "2 errors" in out, out
