"""Shared test setup: every test runs with private Jupyter/IPython folders and workspace.

The session-wide autouse fixture points ``IPYTHONDIR``, ``JUPYTER_CONFIG_DIR``,
``JUPYTER_DATA_DIR``, ``JUPYTER_RUNTIME_DIR`` and ``AGENT_KERNEL_WORKSPACE`` at
temporary folders, so no test reads or writes the user's real configuration,
and kernels started by the tests inherit the same environment.

``run_notebook`` executes cells (or a whole notebook) in a real ``python3``
kernel through nbclient and returns the executed notebook; ``output_text``
flattens a cell's outputs to text for assertions.

The markers are kept true (README: "the in-process suite" is
``-m "not kernel and not browser and not binder and not cluster"``): every kernel a test starts
reports the test's id (``KERNEL_REPORT``, an ``ipython_kernel_config.py`` in the
session's IPython folder, which every kernel started with it runs), and a test
without the ``kernel`` marker that started one fails; ``run_notebook`` refuses
such a test at once. ``tests/browser/conftest.py`` and the Binder fixture do the
same for ``browser`` and ``binder``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kernel_runs import execute_notebook

KERNEL_LOG = "AGENT_KERNEL_TEST_KERNEL_LOG"
"""The file every kernel started during the session appends its test's id to."""
TEST_NODE = "AGENT_KERNEL_TEST_NODE"
"""The id of the running test, inherited by the kernels (and servers) it starts."""
KERNEL_REPORT = f"""\
# Written by agent-kernel's tests/conftest.py: a kernel says which test started it, so
# a test that starts one without the ``kernel`` marker fails.
import os
_log = os.environ.get({KERNEL_LOG!r})
if _log:
    with open(_log, "a", encoding="utf-8") as _file:
        _file.write(os.environ.get({TEST_NODE!r}, "(no test)") + "\\n")
"""
_kernel_log: Path | None = None


def report_kernels(ipython_dir: str | os.PathLike[str]) -> None:
    """Make every kernel started with this IPython folder report itself (see KERNEL_REPORT)."""
    profile = Path(ipython_dir) / "profile_default"
    profile.mkdir(parents=True, exist_ok=True)
    (profile / "ipython_kernel_config.py").write_text(KERNEL_REPORT, encoding="utf-8")


def kernels_started_by(nodeid: str) -> int:
    """How many kernels reported the test ``nodeid`` as theirs."""
    if _kernel_log is None or not _kernel_log.exists():
        return 0
    return _kernel_log.read_text(encoding="utf-8").splitlines().count(nodeid)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Kernels and servers started from here on (fixtures included) belong to ``item``."""
    os.environ[TEST_NODE] = item.nodeid


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Iterator[None]:
    """A test that started a kernel without the ``kernel`` marker fails at its teardown."""
    outcome = yield
    if call.when != "teardown" or item.get_closest_marker("kernel") is not None:
        return
    started = kernels_started_by(item.nodeid)
    report = outcome.get_result()
    if started and report.passed:
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid} started {started} kernel(s) but is not marked "
                           "`kernel`: mark it (@pytest.mark.kernel), so that "
                           '-m "not kernel" starts no kernel')


ENV_DIRS = {
    "IPYTHONDIR": "ipython",
    "JUPYTER_CONFIG_DIR": "jupyter-config",
    "JUPYTER_DATA_DIR": "jupyter-data",
    "JUPYTER_RUNTIME_DIR": "jupyter-runtime",
    "AGENT_KERNEL_WORKSPACE": "workspace",
}


@pytest.fixture(scope="session", autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Point IPython, Jupyter and the agent workspace at temporary folders for the session.

    Yields the mapping of variable -> folder. Kernels and subprocesses started by the
    tests inherit these variables. ``LITELLM_LOCAL_MODEL_COST_MAP`` keeps litellm offline.
    """
    base = tmp_path_factory.mktemp("env")
    values = {name: str(base / sub) for name, sub in ENV_DIRS.items()}
    for folder in values.values():
        Path(folder).mkdir(parents=True, exist_ok=True)
    values["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    global _kernel_log
    _kernel_log = base / "kernels.log"
    report_kernels(values["IPYTHONDIR"])
    saved = {name: os.environ.get(name) for name in [*values, KERNEL_LOG]}
    os.environ.update(values)
    os.environ[KERNEL_LOG] = str(_kernel_log)
    try:
        yield values
    finally:
        # litellm may still be importing in a background thread: it must stay offline.
        saved.pop("LITELLM_LOCAL_MODEL_COST_MAP", None)
        for name, old in saved.items():
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old


@pytest.fixture(autouse=True)
def forget_test_keys() -> Iterator[None]:
    """Each test's approval key (its own JUPYTER_DATA_DIR) is masked while it runs, then
    forgotten: a real process holds one or two keys, and redaction tries every form of
    each, so the hundreds a session makes would slow every later test's redaction."""
    from agent_kernel.core import redaction

    held, values = redaction._secrets, set(redaction._secret_values)
    yield
    with redaction._lock:
        redaction._secrets = held
        redaction._secret_values.clear()
        redaction._secret_values.update(values)


@pytest.fixture
def run_notebook(isolated_env: dict[str, str], request: pytest.FixtureRequest
                 ) -> Callable[..., Any]:
    """``run_notebook(cells_or_nb, timeout=120, cwd=None, env=None, allow_errors=False)``.

    Runs the cells in a real ``python3`` kernel via nbclient with the isolated environment
    and returns the executed ``nbformat.NotebookNode`` (see ``execute_notebook``). Only a
    test marked ``kernel`` may use it.
    """
    if request.node.get_closest_marker("kernel") is None:
        pytest.fail(f"{request.node.nodeid} uses run_notebook, which starts a kernel, but "
                    "is not marked `kernel` (@pytest.mark.kernel)", pytrace=False)
    return execute_notebook


def cell_output_text(cell: Any, mime: str = "text/plain") -> str:
    """All text a cell produced: streams, errors, and ``mime`` from displays and results."""
    parts: list[str] = []
    for out in cell.get("outputs", []):
        kind = out.get("output_type")
        if kind == "stream":
            parts.append(out.get("text", ""))
        elif kind == "error":
            parts.append(f"{out.get('ename')}: {out.get('evalue')}\n")
            parts.extend(line + "\n" for line in out.get("traceback", []))
        elif kind in ("display_data", "execute_result", "update_display_data"):
            value = out.get("data", {}).get(mime, "")
            parts.append(value if isinstance(value, str) else "".join(value))
            parts.append("\n")
    return "".join(parts)


@pytest.fixture
def output_text() -> Callable[..., str]:
    """``output_text(cell, mime="text/plain")``: a cell's outputs flattened to text."""
    return cell_output_text


def notebook_text(cells: Iterable[Any], mime: str = "text/plain") -> str:
    """Every cell's output text, joined (see ``cell_output_text``)."""
    return "".join(cell_output_text(c, mime) for c in cells)
