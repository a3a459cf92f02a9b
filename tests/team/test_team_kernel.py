"""A team in a notebook shares the session agent's kernel services, and its roles keep to
the table: the Planner and Workers look (variables, cells, the last error), only a Worker
runs Python in the kernel, and only after the person approves that very call."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

from agent_kernel import Agent
from agent_kernel.core.events import Event, Question
from agent_kernel.core.json_types import JsonObject
from agent_kernel.engine import tool_calls
from agent_kernel.engine.approvals import DENY
from agent_kernel.engine.models.llm import ToolCallRequest
from agent_kernel.engine.services import KERNEL_SERVICES, AgentServices
from agent_kernel.notebook.errors import NotebookErrors
from agent_kernel.team.roles import PLANNER, TELLER, WORKER
from agent_kernel.team.team import Team
from agent_kernel.team.toolsets import default_tools
from tests.tool_helpers import call_tool


def offered(agent: Agent) -> set[str]:
    return {s["function"]["name"] for s in agent.registry.schemas(agent.role)}


def _kernel() -> tuple[InteractiveShell, AgentServices]:
    shell = InteractiveShell()
    errors = NotebookErrors(shell)
    errors.watch()
    shell.run_cell("sales = {'region': [1, 2]}\nsales['reigon']", store_history=True)
    return shell, AgentServices(errors=errors)


async def test_every_member_gets_the_kernel_services(tmp_path: Path) -> None:
    _shell, kernel = _kernel()
    team = Team(workspace=tmp_path / "ws", kernel=kernel)
    planner = team.supervisor.make_agent(PLANNER, "planner-1")
    worker = team.supervisor.make_agent(WORKER, "worker-1")
    for member in (team.teller, planner, worker):
        for name in KERNEL_SERVICES:
            assert getattr(member.services, name) is getattr(kernel, name), (member.role, name)
    for member in (planner, worker):  # the notebook's error, read by the Planner and a Worker
        assert "last_error" in offered(member)
        found = await call_tool(member, "last_error")
        assert found["ok"] is True and found["error"]["type"] == "KeyError"
    assert "last_error" not in offered(team.teller)


def test_a_team_outside_a_notebook_has_no_kernel(tmp_path: Path) -> None:
    team = Team(workspace=tmp_path / "ws")
    worker = team.supervisor.make_agent(WORKER, "worker-1")
    assert all(getattr(worker.services, name) is None for name in KERNEL_SERVICES)


class RecordingPython:
    """A PythonService that only notes what it was asked to run (nothing runs)."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    async def run(self, code: str, *, timeout: float, run_id: str) -> JsonObject:
        self.ran.append(code)
        return {"ok": True, "status": "done", "stdout": "", "stderr": "", "value": None,
                "outputs": [], "error": None,
                "names": {"created": [], "changed": [], "deleted": []}}


@pytest.mark.skipif("run_python" not in {t.name for t in default_tools()},
                    reason="needs run_python (agent_kernel/tools/python.py, the python part "
                           "of issue 24, merged by the lead)")
async def test_a_workers_run_python_asks_the_person_and_the_planner_is_not_offered_it(
        tmp_path: Path) -> None:
    session = Agent(workspace=tmp_path / "ws")
    python = RecordingPython()
    session.services.python = python
    session.approvals.grant("run_python")  # the person's "Always allow", for the session agent
    team = Team(workspace=session.workspace, kernel=session.services)
    planner = team.supervisor.make_agent(PLANNER, "planner-1")
    worker = team.supervisor.make_agent(WORKER, "worker-1")
    assert "run_python" in offered(worker)
    assert "run_python" not in offered(planner) | offered(team.teller)

    asked: list[Question] = []
    team.teller.questions.attach_answerer()

    def on_event(event: Event) -> None:
        if isinstance(event, Question):
            asked.append(event)
            threading.Timer(0.05, team.teller.questions.answer,
                            args=(event.question_id, DENY)).start()

    team.bus.subscribe(on_event)
    call = ToolCallRequest(id="call_py", name="run_python",
                           arguments=json.dumps({"code": "print('hi')"}))
    record = await asyncio.wait_for(tool_calls.execute(worker, call, "run_w"), 30)
    assert len(asked) == 1 and "run_python" in asked[0].question  # the person was asked
    assert not record.success and python.ran == []  # denied: nothing ran
    [approval] = [r for r in worker.ledger.records() if r.get("kind") == "approval"
                  and r.get("tool_name") == "run_python" and r.get("run_id") == "run_w"]
    assert approval["source"] == "user" and approval["decision"] == "denied"

    refused = await tool_calls.execute(planner, ToolCallRequest(
        id="call_pp", name="run_python", arguments=json.dumps({"code": "1"})), "run_p")
    assert not refused.success and "not permitted for role 'planner'" in str(refused.error)
    assert python.ran == []


def test_roles_of_the_team_tool_names(tmp_path: Path) -> None:
    """The Teller hands work on: none of the notebook's tools are offered to it."""
    team = Team(workspace=tmp_path / "ws")
    teller_tools = offered(team.teller)
    assert not teller_tools & {"last_error", "list_variables", "inspect_variable",
                               "read_cells", "run_python", "insert_cell", "edit_cell",
                               "run_cell"}
    assert team.teller.role == TELLER
