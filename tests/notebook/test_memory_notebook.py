"""Memory in real kernels: the teaching notebook, a restarted kernel, and ``%agent_memory``."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.kernel

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "02-memory.ipynb"


def _text(cell, output_text) -> str:
    return output_text(cell) + output_text(cell, "text/html")


def _no_errors(nb) -> None:
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            assert out.output_type != "error", out
            assert "Traceback" not in out.get("text", "")


def test_memory_notebook_runs_and_memory_survives_a_restart(run_notebook, output_text,
                                                            tmp_path):
    import nbformat

    source = nbformat.read(str(NOTEBOOK), as_version=4)
    code = [c for c in source.cells if c.cell_type == "code"]
    assert all(not c.get("outputs") for c in code), "commit the notebook without outputs"
    workspace = tmp_path / "ws"
    env = {"AGENT_KERNEL_WORKSPACE": str(workspace)}
    nb = run_notebook(source, cwd=tmp_path, env=env, timeout=180)
    _no_errors(nb)
    cells = [c for c in nb.cells if c.cell_type == "code"]
    by_source = {c.source.splitlines()[0]: _text(c, output_text) for c in cells}
    recalled = by_source["%agent what do you remember about the morning meeting?"]
    assert "Here is what I remember" in recalled
    first = recalled.split("Here is what I remember", 1)[1]
    assert first.index("standup happens in the Oak room") < first.index("deploy to production")
    table = next(c for c in cells if c.source == "%agent_memory")
    html = output_text(table, "text/html")
    assert "<ol" in html and "standup happens in the Oak room" in html
    assert "<summary>ids and scores</summary>" in html and "mem_" in html  # folded
    search = _text(next(c for c in cells if c.source.startswith("%agent_memory search")),
                   output_text)
    assert search.index("deploy to production") < search.index("standup")
    python_api = _text(next(c for c in cells if "embedding model:" in c.source), output_text)
    assert "embedding model: all-MiniLM-L6-v2-int8" in python_api
    assert "refused: after must be an ISO 8601 time" in python_api
    assert "we always deploy to production on Tuesdays" in _text(
        next(c for c in cells if "memory.md" in c.source), output_text)
    history = _text(next(c for c in cells if "history_writer" in c.source), output_text)
    assert "user | what do you remember about the morning meeting?" in history
    assert "Forgot mem_" in _text(next(c for c in cells if "forget" in c.source), output_text)
    status = _text(cells[-1], output_text)
    assert "embedding: all-MiniLM-L6-v2-int8" in status and "memories: 1 for 'agent'" in status

    # A new kernel on the same workspace remembers; the forgotten memory stays gone.
    again = run_notebook([
        "%load_ext agent_kernel",
        "%agent what do you remember about shipping days?",
        "%agent_memory search standup",
        "%agent_memory search",
        "%agent_memory forget not-an-id",
        "%agent_memory search deploy --after yesterday",
    ], cwd=tmp_path, env=env, timeout=180)
    _no_errors(again)
    assert "we always deploy to production on Tuesdays" in _text(again.cells[1], output_text)
    assert "standup" not in output_text(again.cells[2], "text/html").split("</strong>", 1)[1]
    assert "usage: %agent_memory" in output_text(again.cells[3])
    assert "not a memory id" in output_text(again.cells[4])
    assert "after must be an ISO 8601 time" in output_text(again.cells[5])
