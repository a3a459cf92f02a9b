"""The cell tools in a real kernel with no notebook page (nbclient), the model on HTTP.

nbclient never answers the frontend probe, so there are no cells to reach: the model's
``insert_cell``, ``edit_cell`` and ``run_cell`` come back saying why, in words (a cell named
by its id: that the history has no ids), and ``read_cells`` falls back to the kernel's
input history, saying so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from scripted_server import Call, Message, ScriptedServer

from agent_kernel.notebook.cells_channel import HEADLESS
from agent_kernel.tools.cells import NO_IDS

MODEL = "openai/test-model"
KEY = {"OPENAI_API_KEY": "sk-test-0123456789abcdef"}


@pytest.mark.kernel
@pytest.mark.timeout(180)
def test_without_a_notebook_page_the_cell_tools_say_why_and_reading_uses_history(
        run_notebook: Any, output_text: Any, tmp_path: Path) -> None:
    script = [
        Message(calls=[Call("read_cells", "{}"),
                       Call("insert_cell", json.dumps({"source": "x + 1"})),
                       Call("edit_cell", json.dumps({"index": 0, "source": "x = 2"})),
                       Call("run_cell", json.dumps({"index": 1})),
                       Call("run_cell", json.dumps({"cell_id": "4f2c9a"}))]),
        Message(text="I could only read the history."),
    ]
    with ScriptedServer(script) as server:
        nb = run_notebook([
            "%load_ext agent_kernel\nimport agent_kernel.notebook.magics as m\n"
            f"m.current().api_base = {server.base_url!r}\n"
            f"%agent_config --model {MODEL} --workspace {tmp_path / 'ws'}",
            "x = 41",
            "%agent --wait look at the notebook",
            "import json\n"
            "calls = m.current().last_result.tool_calls\n"
            "print('CALLS', json.dumps([[c.tool_name, c.success, c.result, c.error]"
            " for c in calls]))",
        ], env=KEY, timeout=120)
    line = next(x for x in output_text(nb.cells[3]).splitlines() if x.startswith("CALLS "))
    read, insert, edit, run, by_id = json.loads(line.removeprefix("CALLS "))
    assert read[:2] == ["read_cells", True]
    answer = read[2]
    assert answer["read_from"] == "input history"
    sources = [c["source"] for c in answer["cells"]]
    assert "x = 41" in sources and "%agent --wait look at the notebook" in sources
    assert HEADLESS.rstrip(".") in answer["note"]
    for name, call in (("insert_cell", insert), ("edit_cell", edit), ("run_cell", run)):
        assert call[0] == name and call[1] is False
        assert HEADLESS in call[3], call
    assert by_id[:2] == ["run_cell", False] and by_id[3].endswith(NO_IDS), by_id
    assert "ids and positions are unknown" in answer["note"]
    shown = output_text(nb.cells[2])
    assert "Traceback" not in shown
    assert f"insert_cell: {HEADLESS.rstrip('.')}" in shown
