"""The magics in a real kernel through nbclient: headless and live modes, options, config."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.kernel


def _html(cell) -> str:
    return "".join(o.get("data", {}).get("text/html", "") for o in cell.outputs)


def _no_traceback(nb) -> None:
    for cell in nb.cells:
        for out in cell.outputs:
            assert out.output_type != "error", out
            assert "Traceback" not in out.get("text", "")


def test_magics_headless_kernel(run_notebook, output_text, tmp_path):
    other = tmp_path / "other-ws"
    nb = run_notebook([
        "%load_ext agent_kernel",
        "x = 'banana'\n%agent echo {x} with {nope}",
        "%%agent --wait\nwhat can you do?",
        "%agent ask me to choose between tea or coffee",
        "%agent --new echo fresh start\n"
        "import agent_kernel.notebook.magics as m\n"
        "print('messages', len(m.current().agent.messages))",
        "%agent --model nonexistent/foo hi",
        "%agent",
        f"%agent_config --model openai/other-model\n%agent_config --workspace {other}",
        "print(m.current().agent.ledger.verify())",
    ], cwd=tmp_path, timeout=90)
    cells = nb.cells
    _no_traceback(nb)
    # headless: the run ends inside its cell, so the final static transcript is there
    echo = _html(cells[1])
    assert "The echo tool returned: banana with {nope}" in echo
    assert "<details class='agent-kernel-tool' data-state='ok'>" in echo and "rec_" in echo
    assert "data-status='done'>done<" in echo
    assert not any("application/vnd.jupyter.widget-view+json" in o.get("data", {})
                   for o in cells[1].outputs)
    assert "I am the offline demo model" in _html(cells[2])
    ask = _html(cells[3])
    assert "Which do you choose: tea, coffee?" in ask and "No answer in time" in ask
    assert "timed out with no answer" in ask
    assert "messages 5" in output_text(cells[4])  # --new: system, user, call, result, answer
    assert "agent-kernel: unknown provider 'nonexistent'" in output_text(cells[5])
    assert not _html(cells[5])  # refused before a run started
    assert "nothing to ask" in output_text(cells[6])
    config = output_text(cells[7])
    assert "model: openai/other-model" in config and f"workspace: {other}" in config
    assert "interactive: auto (no frontend answered)" in config
    assert "ledger ok:" in output_text(cells[8]) and "records verify" in output_text(cells[8])
    # saved without widget state (as JupyterLab does by default), nbconvert/nbviewer show the
    # static transcript
    from nbconvert import HTMLExporter

    nb.metadata.pop("widgets", None)
    body, _ = HTMLExporter().from_notebook_node(nb)
    assert "The echo tool returned: banana with {nope}" in body
    assert "No answer in time" in body


def test_magics_live_mode_and_traitlets(run_notebook, output_text, tmp_path):
    ipython_dir = tmp_path / "ipython"
    (ipython_dir / "profile_default").mkdir(parents=True)
    (ipython_dir / "profile_default" / "ipython_config.py").write_text(
        "c.AgentMagics.max_tool_calls = 7\n"
        "c.AgentMagics.tool_timeout = 12\n"
        "c.AgentMagics.interactive = True\n"
        "c.AgentMagics.headless_approval = 'allow'\n")
    nb = run_notebook([
        "%load_ext agent_kernel\n%agent_config",
        "import agent_kernel.notebook.magics as m\n%agent echo in the background\n"
        "print('returned', m.current().last_result is None, len(m.current().tasks))",
        "await m.wait_all()\nr = m.current().last_result\nprint(r.status, '|', r.reply)",
        "s = m.current().agent.settings\nprint(s.max_tool_calls, s.tool_timeout, "
        "s.headless_approval)",
        "%agent echo second run\n%agent_wait\nprint(m.current().last_result.reply)",
        # set after the agent was made: the agent follows at once
        "%config AgentMagics.headless_approval = 'deny'\n"
        "%config AgentMagics.tool_timeout = 45\n"
        "s = m.current().agent.settings\nprint('after', s.tool_timeout, s.headless_approval)",
    ], cwd=tmp_path, env={"IPYTHONDIR": str(ipython_dir)}, timeout=90)
    _no_traceback(nb)
    config = output_text(nb.cells[0])
    assert "max_tool_calls: 7" in config and "tool_timeout: 12 s" in config
    assert "interactive: True" in config
    assert "returned True 1" in output_text(nb.cells[1])  # the cell returned before the run ended
    assert "ok | (offline demo model) The echo tool returned: in the background" in output_text(
        nb.cells[2])
    assert "7 12.0 allow" in output_text(nb.cells[3])
    assert "The echo tool returned: second run" in output_text(nb.cells[4])
    assert "after 45.0 deny" in output_text(nb.cells[5])
