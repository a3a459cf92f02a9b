"""What a saved notebook keeps of each run: one static MIME bundle, never a widget.

Real kernels through nbclient (headless: nobody can click, so no controls are
shown) run ``%agent`` on the demo model through an answer, a tool that works,
one that fails, an approval the headless policy denies, a question nobody
answers and a run stopped mid-command. Every saved output of those cells must
carry our run state, ``text/html`` and ``text/plain``, no widget view, and HTML
with no script and no web address; the status must say what happened.
"""

from __future__ import annotations

import re

import pytest

from agent_kernel.core.mime_types import RUN_MIME

pytestmark = pytest.mark.kernel

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

CELLS = {
    "answer": "%agent what can you do?",
    "tool_ok": "%agent run command printf 'one\\ntwo\\n'",
    "tool_failed": "%agent read file missing.txt",
    "denied": "%agent write file notes.txt with hello",
    "question": "%agent ask me to choose between tea or coffee",
    "stopped": "import asyncio, agent_kernel.notebook.magics as m\n"
               "asyncio.get_running_loop().call_later(2.0, m.current().agent.stop)\n"
               "%agent run command sleep 30",
}


def run_states(cell) -> list[dict]:
    """The run states of a cell's saved outputs, checking each output's form."""
    states = []
    for out in cell.outputs:
        if out.output_type == "stream":
            continue
        data = out.get("data", {})
        assert WIDGET_MIME not in data, out
        assert {RUN_MIME, "text/html", "text/plain"} <= set(data), out
        page = data["text/html"]
        assert "<script" not in page.lower() and not re.search(r"https?://", page), page
        states.append(data[RUN_MIME])
    return states


def test_saved_runs_are_static_bundles_whose_status_tells_the_truth(run_notebook, tmp_path):
    sources = ["%load_ext agent_kernel", "%agent echo warm up",
               "import agent_kernel.notebook.magics as m\n"
               "m.current().agent.settings.headless_approval = 'allow'",
               CELLS["tool_ok"], CELLS["stopped"],
               "m.current().agent.settings.headless_approval = 'deny'",
               *(CELLS[k] for k in ("answer", "tool_failed", "denied", "question"))]
    nb = run_notebook(sources, cwd=tmp_path, timeout=120)
    # A headless run makes no widget: nothing in the file needs a widget manager to read.
    assert "widgets" not in nb.metadata
    by_source = {cell.source: cell for cell in nb.cells}
    states = {}
    for key, source in CELLS.items():
        [state] = run_states(by_source[source])
        states[key] = state
    assert {k: s["status"] for k, s in states.items()} == {
        "answer": "done", "tool_ok": "done", "tool_failed": "done_with_failures",
        "denied": "denied", "question": "done", "stopped": "stopped"}
    for state in states.values():
        assert state["version"] == 1 and state["model"] == "demo" and state["offline"] is True
        assert isinstance(state["elapsed_ms"], int) and state["started_at"]
    [bash] = [e for e in states["tool_ok"]["entries"] if e["kind"] == "tool"]
    assert re.fullmatch(r"ran `printf 'one\\ntwo\\n'` · exit 0 · \d+ ms", bash["summary"])
    assert bash["result_kind"] == "text" and bash["result"]["stdout"] == "one\ntwo\n"
    assert bash["approval"]["source"] == "headless" and bash["approval"]["answer"] == "Approve"
    page = by_source[CELLS["tool_ok"]].outputs[0]["data"]["text/html"]
    assert "<pre>one\ntwo\n</pre>" in page  # real line breaks, not a literal \n
    assert "offline demo model" in page and "$0.0" not in page
    [denied] = [e for e in states["denied"]["entries"] if e["kind"] == "tool"]
    assert denied["state"] == "failed" and denied["approval"]["answer"] == "Deny"
    assert "not run: no one could approve it" in by_source[CELLS["denied"]].outputs[0][
        "data"]["text/html"]
    [failed] = [e for e in states["tool_failed"]["entries"] if e["kind"] == "tool"]
    assert failed["result_kind"] == "error" and "no such file" in failed["summary"]
    # ask_user's question sits in the card of its call (issue 25), once
    [asking] = [e for e in states["question"]["entries"] if e["kind"] == "tool"]
    assert asking["tool"] == "ask_user"
    assert not [e for e in states["question"]["entries"] if e["kind"] == "question"]
    question = asking["approval"]
    assert question["source"] == "timeout" and question["options"] == ["tea", "coffee"]
    assert not question["approval"]
    assert [e["kind"] for e in states["answer"]["entries"]] == ["text"]
    [sleep] = [e for e in states["stopped"]["entries"] if e["kind"] == "tool"]
    assert sleep["state"] == "failed" and sleep["tool"] == "bash"
