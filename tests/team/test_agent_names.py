"""No two agents of one workspace share a name, whichever team or kernel made them.

Each team used to count ``worker-N`` from the workspace's files when it was made, so two
teams at once (two kernels on one workspace, or two teams in one) both made a
``worker-6``. Numbers now come from one counter file under a cross-process lock.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from agent_kernel import Team
from agent_kernel.team.agent_ids import COUNTER, reserve_agent_number


def test_two_teams_on_one_workspace_never_share_an_agent_name(tmp_path: Path) -> None:
    first, second = Team(workspace=tmp_path / "ws"), Team(workspace=tmp_path / "ws")
    names = []
    for _ in range(5):
        names.append(first.supervisor.next_agent_id("worker"))
        names.append(second.supervisor.next_agent_id("worker"))
        names.append(second.supervisor.next_agent_id("planner"))
    assert len(set(names)) == len(names), names
    # each team takes eight numbers at a time (TAKEN_AHEAD), and uses them in order
    assert names[:6] == ["worker-1", "worker-9", "planner-10", "worker-2", "worker-11",
                         "planner-12"]
    assert names[-3:] == ["worker-5", "worker-17", "planner-18"]
    # a team made later, after a restart, goes on after every number taken
    assert Team(workspace=tmp_path / "ws").supervisor.next_agent_id("worker") == "worker-25"


def test_a_team_takes_the_numbers_of_the_tasks_about_to_start_at_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fan-out's Workers take one lock for their numbers, not one each; another team on
    the workspace meanwhile gets numbers after them, and a later one after those."""
    from agent_kernel.team import supervisor

    taken: list[int] = []
    real = supervisor.reserve_agent_numbers

    def counted(root: Path, at_least: int, count: int = 1) -> tuple[int, int]:
        taken.append(count)
        return real(root, at_least, count)

    monkeypatch.setattr(supervisor, "reserve_agent_numbers", counted)
    first, second = Team(workspace=tmp_path / "ws"), Team(workspace=tmp_path / "ws")
    names = [first.supervisor.next_agent_id("worker", waiting=11)]
    names.append(second.supervisor.next_agent_id("worker"))
    names += [first.supervisor.next_agent_id("worker", waiting=10 - n) for n in range(11)]
    assert names == ["worker-1", "worker-13", *(f"worker-{n}" for n in range(2, 13))]
    assert taken == [12, 8]  # the twelve about to start; eight at least
    assert Team(workspace=tmp_path / "ws").supervisor.next_agent_id("planner") == "planner-21"


def test_a_team_that_cannot_use_the_counter_takes_no_numbers_ahead(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stuck lock or a read-only folder: one number at a time, each asked for again, so
    a team never hands out eight numbers no counter holds."""
    from agent_kernel.team import supervisor

    asked: list[int] = []

    def unusable(root: Path, at_least: int, count: int = 1) -> tuple[int, int]:
        asked.append(at_least)
        return at_least, 0  # what reserve_agent_numbers says when the counter fails

    monkeypatch.setattr(supervisor, "reserve_agent_numbers", unusable)
    team = Team(workspace=tmp_path / "ws")
    assert [team.supervisor.next_agent_id("worker") for _ in range(3)] == [
        "worker-1", "worker-2", "worker-3"]
    assert asked == [1, 2, 3]


def test_kernels_reserving_at_once_get_distinct_numbers(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    code = ("import sys; from pathlib import Path\n"
            "from agent_kernel.team.agent_ids import reserve_agent_number\n"
            "print(*[reserve_agent_number(Path(sys.argv[1]), 1) for _ in range(40)])")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(root)], stdout=subprocess.PIPE,
                              text=True) for _ in range(3)]
    numbers = [int(n) for p in procs for n in p.communicate(timeout=60)[0].split()]
    assert sorted(numbers) == list(range(1, 121))


def test_kernels_taking_several_numbers_at_once_get_distinct_numbers(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    code = ("import sys; from pathlib import Path\n"
            "from agent_kernel.team.agent_ids import reserve_agent_number\n"
            "print(*[n for k in (1, 3, 1, 5) for _ in range(5)\n"
            "        for first in [reserve_agent_number(Path(sys.argv[1]), 1, k)]\n"
            "        for n in range(first, first + k)])")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(root)], stdout=subprocess.PIPE,
                              text=True) for _ in range(3)]
    numbers = [int(n) for p in procs for n in p.communicate(timeout=60)[0].split()]
    assert sorted(numbers) == list(range(1, 151))  # 50 each, most taken several at once


def test_a_planted_counter_moves_nothing_past_what_a_workspace_may_name(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "team").mkdir(parents=True)
    (root / COUNTER).write_text("99999999999999999999\n")
    assert reserve_agent_number(root, 4) == 4
    (root / COUNTER).write_text("not a number")
    assert reserve_agent_number(root, 2) == 2
    assert reserve_agent_number(root, 1) == 3
    (root / COUNTER).unlink()
    (root / COUNTER).symlink_to(tmp_path / "elsewhere")  # never followed, never written
    assert reserve_agent_number(root, 7) == 7
    assert not (tmp_path / "elsewhere").exists()


def test_the_board_names_agents_by_their_work_and_folds_roles_and_artifacts() -> None:
    from html_payloads import board_state

    from agent_kernel.views.board import board_html, work_name

    state = board_state("x")
    state["running"][0].update(agent="worker-6", role="worker",
                               prompt="research Lisbon for a weekend trip", id="task_abc")
    state["agents"] = [
        {"id": "teller", "role": "teller", "task": "", "task_id": None},
        {"id": "worker-6", "role": "worker", "task": "research Lisbon for a weekend trip",
         "task_id": "task_abc"},
        {"id": "helper-2", "role": "Helper", "task": "spawned by planner-1, running",
         "task_id": "task_def"},
        {"id": "team-desk", "role": "trigger desk", "task": "holds 1 trigger(s)",
         "task_id": None}]
    html = board_html(state)
    agents = html.split(">Agents", 1)[1].split("</table>", 1)[0]
    names = re.findall(r"<td[^>]*title='([^']*)'>([^<]*)</td>", agents)
    # the role names the agent; its work stands once, in "Working on" beside it
    assert names == [("teller", "Teller"), ("worker-6", "Worker"),
                     ("helper-2", "Helper"), ("team-desk", "Trigger desk")], names
    assert ">research Lisbon for a weekend trip</td>" in agents
    visible = re.sub(r"<[^>]+>", " ", re.sub(r"title='[^']*'|data-[\w-]+='[^']*'", "", agents))
    assert "worker-6" not in visible and "team-desk" not in visible
    running = html.split(">Running", 1)[1].split("</table>", 1)[0]
    assert "title='worker-6'>Worker" in running
    for folded in ("Roles", "Artifacts"):
        assert re.search(rf"<details class='ak-fold'><summary class='ak-section'>{folded} · 1",
                         html), folded
    assert html.index(">Running") < html.index(">Planner queue") < html.index(">Roles")
    assert work_name("run command sleep 30", "worker") == "run command sleep 30 · Worker"
    assert work_name("", "teller") == "Teller"


def test_a_spawned_agents_task_is_its_objective_not_its_instructions() -> None:
    from agent_kernel.team.members import AgentRecord, brief_text
    from agent_kernel.views.summaries import task_words

    record = AgentRecord.__new__(AgentRecord)
    for name, value in {"id": "helper-2", "roleName": "Helper", "parentAgentId": "planner-1",
                        "taskId": "task_x"}.items():
        object.__setattr__(record, name, value)
    brief = {"objective": "Write Lisbon notes", "constraints": ["short"], "inputs": "none",
             "outputs": "notes.md", "completion_criteria": "saved"}
    prompt = brief_text(record, brief)
    assert prompt.startswith("You are helper-2") and "send_message" in prompt
    assert task_words(prompt) == "Write Lisbon notes"
    assert task_words("research Lisbon for a trip") == "research Lisbon for a trip"
    assert task_words("Objective: not a brief") == "Objective: not a brief"
