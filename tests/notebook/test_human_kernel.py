"""ask_user, approvals and the blocking wait in real kernels.

nbclient runs notebooks with nobody to click, so questions must end at once
by spec 000's rules and approvals follow the headless policy; a blocking cell
must say that clicks cannot reach it. With jupyter_client a test plays
JupyterLab >= 4.4.4: it sends a button's click over a kernel subshell while a
cell blocks, and the click must get through.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from kernel_runs import cell_text

# -- real kernels, nobody to click -----------------------------------------------

@pytest.mark.kernel
def test_headless_kernel_ends_questions_at_once(run_notebook: Any, output_text: Any) -> None:
    """Under nbclient nobody can click: the %agent magics find no frontend."""
    nb = run_notebook([
        "%load_ext agent_kernel",
        "%agent --wait ask me to choose between tea or coffee",
        "%agent --wait write file notes.txt with hi",
        "import json, agent_kernel.notebook.magics as m\n"
        "r = m.current().last_result\n"
        "print('CALL', json.dumps([c.error for c in r.tool_calls]))\n"
        "ws = m.current().agent.workspace.root\n"
        "print('PENDING', (ws / 'pending_question.json').exists())",
    ], timeout=120)
    asked = output_text(nb.cells[1])
    assert "ask_user: no answer in time" in asked and "-> No answer in time" in asked
    assert "question timed out with no answer" in asked
    text = output_text(nb.cells[3])
    assert "headless policy: deny" in text and "PENDING False" in text


@pytest.mark.kernel
def test_headless_kernel_default_and_allow_policy(run_notebook: Any, output_text: Any,
                                                  tmp_path: Path) -> None:
    """A default answers at once; ``headless_approval = "allow"`` lets %agent write."""
    cell = """
import json
from agent_kernel import Agent
from agent_kernel.engine.registry import ToolContext
agent = Agent(workspace={ws!r})
tool = agent.registry.get("ask_user")
ctx = ToolContext(agent=agent, run_id="r", agent_id="agent", workspace=agent.workspace)
reply = await tool.invoke(tool.validate({{"question": "Deploy?", "options": ["a", "b"],
                                          "default": "b"}}), ctx)
print("ASK", json.dumps(reply))
""".format(ws=str(tmp_path / "ws"))
    nb = run_notebook([
        cell,
        "%load_ext agent_kernel",
        "%config AgentMagics.headless_approval = 'allow'",
        "%agent --wait write file notes.txt with hi",
        "import agent_kernel.notebook.magics as m\n"
        "print('WROTE', (m.current().agent.workspace.root / 'files' / 'notes.txt').read_text())",
    ], timeout=120)
    assert 'ASK {"answer": "b", "source": "default"}' in output_text(nb.cells[0])
    assert "approval: allowed by the headless policy" in output_text(nb.cells[3])
    assert "WROTE hi" in output_text(nb.cells[4])


@pytest.mark.kernel
def test_kernel_reports_a_click_route_for_blocking_cells(run_notebook: Any,
                                                         output_text: Any) -> None:
    """nbclient sends no comms over subshells, so a blocking cell cannot take clicks: said so."""
    nb = run_notebook(["from agent_kernel.notebook.blocking import click_route\n"
                       "print(click_route())",
                       "%load_ext agent_kernel",
                       "from agent_kernel.notebook.magics import current\n"
                       "current().interactive = True  # as if a person were there\n",
                       "%agent --wait ask me to choose between tea or coffee"], timeout=120)
    assert "(False, 'the frontend does not send widget messages over kernel subshells" in (
        output_text(nb.cells[0]))
    blocked = output_text(nb.cells[3])
    assert "clicks cannot reach this blocking cell" in blocked
    assert "ask_user: no answer in time" in blocked
    # the question's buttons were shown, then replaced by how it ended: no widget is saved
    assert "\nNo answer in time · " in blocked
    assert not any("application/vnd.jupyter.widget-view+json" in o.get("data", {})
                   for o in nb.cells[3].outputs)


SUBSHELL_SETUP = """
import threading, ipywidgets as w
button, hits = w.Button(description="tea"), []
button.on_click(lambda _b: hits.append(threading.current_thread().name))
print(button.model_id)
"""
SUBSHELL_WAIT = """
import asyncio, time
from agent_kernel.notebook.blocking import wait_blocking, click_route
async def until_clicked():
    started = time.monotonic()
    while not hits and time.monotonic() - started < 20:
        await asyncio.sleep(0.02)
    return hits
print("ROUTE", click_route()[0])
print("HITS", wait_blocking(until_clicked()))
"""


@pytest.mark.kernel
def test_a_click_over_a_subshell_reaches_a_blocking_cell(isolated_env: dict[str, str]) -> None:
    """What JupyterLab >= 4.4.4 does: the click's comm_msg names a subshell; the cell blocks."""
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3")
    try:
        def run(code: str) -> tuple[str, str]:
            msg_id = client.execute(code)
            return msg_id, cell_text(client, msg_id)

        _, out = run(SUBSHELL_SETUP)
        model_id = out.strip()
        client.control_channel.send(client.session.msg("create_subshell_request", {}))
        subshell = client.control_channel.get_msg(timeout=10)["content"]["subshell_id"]
        msg_id = client.execute(SUBSHELL_WAIT)
        time.sleep(1.0)  # the cell is blocking now
        click = client.session.msg("comm_msg", {
            "comm_id": model_id, "data": {"method": "custom", "content": {"event": "click"}}})
        click["header"]["subshell_id"] = subshell
        client.shell_channel.send(click)
        out = cell_text(client, msg_id)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert "ROUTE True" in out
    assert f"HITS ['subshell-{subshell}']" in out



WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
RUN_MIME = "application/vnd.agent-kernel.run.v1+json"


WAIT_FOR_QUESTION = ("import asyncio, agent_kernel.notebook.magics as m\n"
                     "view = m.current().views[-1]\n"
                     "for _ in range(100):\n"
                     "    if view.questions:\n"
                     "        break\n"
                     "    await asyncio.sleep(0.1)\n")
STOP_AND_WAIT = ("print('LIVE', not view.done, bool(view.questions))\n"
                 "view._on_stop(None)  # as a click on Stop\n"
                 "await m.wait_all(60)\n"
                 "print('ENDED', view.status)")


@pytest.mark.kernel
@pytest.mark.timeout(240)
def test_a_run_stopped_from_a_later_cell_saves_its_end_in_its_own_cell(
        run_notebook: Any, output_text: Any, tmp_path: Path) -> None:
    """Someone can click, our extension is absent (ipywidgets' Stop), and the run ends while
    a later cell runs. JupyterLab updates the run's outputs by display id whatever cell a
    message names; nbclient applies an update only while it reads the cell the message
    names, so the end (the run output's last state, the approval and Stop become text)
    must go to the running cell too, or the executed notebook keeps live widgets.
    First the approval comes while the run's cell runs (its controls and Stop drawn again
    below it are in the file), then while no cell runs (drawn where nbclient cannot see)."""
    nb = run_notebook([
        "%load_ext agent_kernel\n%config AgentMagics.interactive = True",
        "%agent run command sleep 30\n" + WAIT_FOR_QUESTION,  # asks for its approval
        STOP_AND_WAIT,
        "%agent run command sleep 30",  # the cell returns at once; the approval comes later
        WAIT_FOR_QUESTION + STOP_AND_WAIT,
    ], cwd=tmp_path, timeout=120,
        env={"AGENT_KERNEL_WORKSPACE": str(tmp_path / "ws")})
    for cell in nb.cells:
        assert not [o for o in cell.outputs if o.output_type == "error"], cell.outputs
    for run_cell, later in ((nb.cells[1], nb.cells[2]), (nb.cells[3], nb.cells[4])):
        said = output_text(later)
        assert "LIVE True True" in said and "ENDED stopped" in said, said
        outputs = [o for o in run_cell.outputs if o.output_type == "display_data"]
        assert not [o for o in outputs if WIDGET_VIEW in o["data"]], outputs  # nothing live
        [run] = [o["data"] for o in outputs if RUN_MIME in o["data"]]
        assert run[RUN_MIME]["status"] == "stopped", run[RUN_MIME]["status"]
        assert "controls" not in run[RUN_MIME] and "The run was stopped." in run["text/plain"]
        # nobody can answer the saved notebook: its approval reads as what happened
        [card] = [e for e in run[RUN_MIME]["entries"] if e["kind"] == "tool"]
        assert card["state"] == "failed" and card["approval"]["source"] == "stopped", card
        for mime in ("text/html", "text/plain"):
            assert "Not answered: the run was stopped" in run[mime], run[mime]
            assert "waiting for your approval" not in run[mime], run[mime]
    outputs = [o["data"] for o in nb.cells[1].outputs if o.output_type == "display_data"]
    # the run, Stop emptied when the approval came, the approval's end, Stop's end
    assert len(outputs) == 4, outputs
    assert outputs[1]["text/plain"] == "" and "agent-kernel-answered" in outputs[2]["text/html"]
    assert outputs[2]["text/plain"].endswith("Not answered: the run was stopped"), outputs[2]
    assert outputs[3]["text/plain"].startswith("Stopped · "), outputs[3]
    assert "agent-kernel-stopped" in outputs[3]["text/html"]
