"""The offline ``demo`` model plays every role of a team, and ``notebooks/05-team.ipynb``.

The team is the real one (supervisor, queues, tools, artifacts on disk, the ledger);
only the model is the demo's rules. The Teller's answer must be built from what the
Workers really saved: the tests compare it with the artifacts on disk, and a Worker
that has nothing to report changes the answer.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import nbformat
import pytest

from agent_kernel import Agent, Settings
from agent_kernel.core.mime_types import RUN_MIME
from agent_kernel.engine.models.demo_team import SAMPLE_NOTES, items_of
from agent_kernel.team import Team
from agent_kernel.team.society import ArtifactStore

CITIES = "research three cities for a trip and compare them"
NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "05-team.ipynb"


def _tool_calls(team: Team) -> list[dict[str, Any]]:
    return [r for r in team.ledger.records() if r["kind"] == "tool_call"]


def test_the_demo_team_answers_the_cities_prompt_from_what_its_workers_saved(
        tmp_path: Path) -> None:
    team = Team(model="demo", workspace=tmp_path, max_workers=1)
    result = team.run(CITIES)
    assert result.ok, result.error

    [planner] = result.tree["children"]
    assert result.tree["role"] == "teller" and planner["role"] == "planner"
    assert planner["prompt"] == CITIES  # the Teller handed on the whole ask
    workers = planner["children"]
    assert [w["role"] for w in workers] == ["worker"] * 3
    assert all(w["status"] == "ok" for w in [planner, *workers])
    priorities = [w["priority"] for w in workers]
    assert len(set(priorities)) == 3 and priorities == sorted(priorities, reverse=True)
    started = [team.supervisor.tasks[t].priority for t in team.supervisor.started
               if team.supervisor.tasks[t].role == "worker"]
    assert started == sorted(priorities, reverse=True)  # one at a time, highest first
    assert [t["id"] for t in result.tasks()] == [planner["id"], *(w["id"] for w in workers)]

    calls = _tool_calls(team)
    assert [c["arguments"] for c in calls if c["tool_name"] == "delegate"
            and c["role"] == "teller"] == [{"prompt": CITIES}]
    planned = [c["arguments"] for c in calls if c["role"] == "planner"]
    assert {a["prompt"]: a["priority"] for a in planned} == {
        w["prompt"]: w["priority"] for w in workers}
    store = ArtifactStore(team.workspace)
    saved = {}
    for worker in workers:
        [put] = [c for c in calls if c["task_id"] == worker["id"]]
        assert put["tool_name"] == "put_artifact" and put["success"]
        assert put["agent_id"] == worker["agent_id"]
        ref = re.search(r"artifact:[0-9a-f-]{36}", worker["result"]).group()  # type: ignore
        artifact = store.get(ref)
        on_disk = json.loads((store.folder / f"{ref.split(':')[1]}.json").read_text())
        assert on_disk["createdBy"] == worker["agent_id"]
        assert "not researched" in artifact["content"]["source"]
        saved[artifact["content"]["subject"]] = artifact["content"]["facts"]
    read = [c for c in calls if c["tool_name"] == "get_artifact"]
    assert {c["role"] for c in read} == {"teller"} and len(read) == 3

    reply = result.reply
    assert reply.startswith("(offline demo model)") and "not researched" in reply
    header = next(line for line in reply.splitlines() if line.startswith("| |"))
    assert header == "| | " + " | ".join(saved) + " |"
    for facts in saved.values():
        assert facts["known for"] in reply
        assert f"about €{facts['daily budget']} a day" in reply
    cheapest = min(saved, key=lambda s: saved[s]["daily budget"])
    assert f"Cheapest: **{cheapest}**" in reply
    assert not [r for r in team.ledger.records() if r["kind"] == "approval"]  # none needed
    assert team.ledger.verify().ok


def test_a_worker_with_nothing_to_report_changes_the_answer(tmp_path: Path) -> None:
    """Named items: one per Worker, the first named highest; the Teller's table holds only
    what was saved, and the Worker that found nothing is quoted, not invented."""
    team = Team(model="demo", workspace=tmp_path)
    result = team.run("compare Atlantis, Kyoto and Lisbon for a weekend away")
    assert result.ok, result.error
    workers = result.tree["children"][0]["children"]
    assert [re.match(r"Research (.+?) for a weekend away:", w["prompt"]).group(1)  # type: ignore
            for w in workers] == ["Atlantis", "Kyoto", "Lisbon"]
    assert workers[0]["priority"] > workers[1]["priority"] > workers[2]["priority"]
    puts = [c for c in _tool_calls(team) if c["tool_name"] == "put_artifact"]
    assert {c["task_id"] for c in puts} == {workers[1]["id"], workers[2]["id"]}
    assert "| | Kyoto | Lisbon |" in result.reply
    assert "Atlantis" not in result.reply.split("| | Kyoto")[1].split("\n\n")[0]
    assert "I have no notes on Atlantis" in result.reply
    assert "Cheapest: **Lisbon**" in result.reply


def test_other_work_goes_to_one_worker_and_follows_the_demo_rules(tmp_path: Path) -> None:
    """A prompt that is no research list: the Planner gives it whole to one Worker, whose
    write is refused by the headless policy; the Teller passes on exactly that."""
    team = Team(model="demo", workspace=tmp_path, settings=Settings(headless_approval="deny"))
    result = team.run("write file plan.txt with three cities")
    [worker] = result.tree["children"][0]["children"]
    assert worker["prompt"] == "write file plan.txt with three cities"
    assert "no one could approve it" in worker["result"]
    assert "no one could approve it" in result.reply
    assert not (team.workspace.root / "files" / "plan.txt").exists()


def test_the_single_demo_agent_is_not_a_team_role(tmp_path: Path) -> None:
    agent = Agent(workspace=tmp_path)
    assert agent.role is None  # the demo model is told no team role
    result = agent.run(CITIES)
    assert result.tool_calls == [] and "only follow simple patterns" in result.reply
    assert items_of(CITIES) == list(SAMPLE_NOTES)[:3]
    assert items_of("research two laptops") is None


# -- the notebook ------------------------------------------------------------------------

def test_team_notebook_is_committed_without_outputs() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source
    text = "\n".join(c.source for c in nb.cells)
    assert "%agent --team research three cities" in text and "docs/team.md" in text


@pytest.mark.kernel
def test_team_notebook_runs(run_notebook: Any, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    nb = run_notebook(NOTEBOOK, cwd=tmp_path, timeout=120,
                      env={"AGENT_KERNEL_WORKSPACE": str(workspace)})
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            assert out.output_type != "error", (cell.source, out)
            assert out.get("name") != "stderr", (cell.source, out)
            shown = out.get("text", "") + out.get("data", {}).get("text/html", "")
            assert "Traceback" not in shown, cell.source
    cells = {c.source.splitlines()[0]: c for c in nb.cells if c.cell_type == "code"}

    team_cell = cells[f"%agent --team {CITIES}"]
    [state] = [o["data"][RUN_MIME] for o in team_cell.outputs if RUN_MIME in o.get("data", {})]
    said = "\n".join(e["text"] for e in state["entries"] if e["kind"] == "text")
    assert "| | Lisbon | Kyoto | Montreal |" in said and "Cheapest: **Lisbon**" in said
    agents = [e for e in state["entries"] if e["kind"] == "agent"]
    assert [a["role"] for a in agents] == ["planner"]
    summary = "".join(o.get("data", {}).get("text/plain", "") for o in team_cell.outputs)
    for priority in (9, 8, 7):
        assert f"worker · ok · priority {priority}" in summary

    python = cells["from agent_kernel.team import Team"]
    printed = "".join(o.get("text", "") for o in python.outputs)
    assert printed.startswith("ok in ") and "| | Mexico City | Cape Town | Reykjavik |" in printed
    tree = "".join(o.get("text", "") for o in cells["for task in result.tasks():"].outputs)
    assert re.findall(r"worker\s+priority\s+(\d+)", tree) == ["9", "8", "7"]
    assert "[]" in cells["team.list_tasks()"].outputs[0]["data"]["text/plain"]
    peeked_cell = cells["from agent_kernel.core.events import LedgerRecorded"]
    peeked = "".join(o.get("text", "") for o in peeked_cell.outputs).splitlines()
    assert [line.split()[:3] for line in peeked] == [
        ["queued", "priority", "8"], ["queued", "priority", "7"], ["running", "priority", "9"]]
    assert len(list((workspace / "team" / "artifacts").glob("*.json"))) == 9
