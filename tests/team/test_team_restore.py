"""A team's work survives its kernel: a new process restores queued tasks and names lost ones.

The first process runs a real team against the scripted server and is killed
(SIGKILL, as a dying kernel) while a Worker and a Planner are inside model
calls: a second Planner task waits on the planner queue, four Worker tasks on
the worker queue, and the running Planner holds two delegations. A second
process makes a new ``Team`` on the same workspace: the queued tasks run in
priority order (first in, first out within one), the two running tasks are
reported ``interrupted`` (moved to ``team/interrupted/``, a ``task_interrupted``
record, a line in the note), the held ones cancelled and recorded. Broken or
tampered task files are each reported and skipped; the team still works.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from scripted_server import Call, Message
from test_team import RoleModel, RoleServer, delegate, first_prompt, last, make_team

from agent_kernel.core.ledger import Ledger
from agent_kernel.engine.agent import LEDGER_FILE
from agent_kernel.team.roles import PLANNER, TELLER

WORKER_JOBS = [("job one", 3), ("job two", 7), ("job three", 7), ("job five", 7),
               ("job four", 0)]

FIRST = """
import sys
from agent_kernel import Settings
from agent_kernel.team import Team
settings = Settings(api_base=sys.argv[1], api_key="sk-test-0123456789abcdef",
                    retry_base_delay=0.01, headless_approval="allow")
Team(model="openai/test-model", workspace=sys.argv[2], settings=settings,
     max_workers=1).run("plan the trip")
"""

SECOND = """
import json, sys
from agent_kernel import Settings
from agent_kernel.team import Team
settings = Settings(api_base=sys.argv[1], api_key="sk-test-0123456789abcdef",
                    retry_base_delay=0.01, headless_approval="allow")
team = Team(model="openai/test-model", workspace=sys.argv[2], settings=settings,
            max_workers=1)
report = team.restore_report
lines = {"note": report.text(),
         "queued": [t.prompt for t in report.queued],
         "interrupted": [t.prompt for t in report.interrupted],
         "cancelled": [t.prompt for t in report.cancelled],
         "listed": [r["prompt"] for r in team.list_tasks("queue")]}
tasks = team.resume()
lines["started"] = [team.supervisor.tasks[t].prompt for t in team.supervisor.started]
lines["ended"] = {t.prompt: [t.status, t.result] for t in tasks}
print(json.dumps(lines))
"""


class Killing:
    """Answers for both processes; the first one hangs where it should die."""

    def __init__(self) -> None:
        self.second = False
        self.worker_inside = threading.Event()
        self.planner_inside = threading.Event()
        self.release = threading.Event()

    def respond(self, role: str, body: dict[str, Any]) -> Message:
        said, prompt = last(body), first_prompt(body)
        if self.second:
            return Message(text=f"{prompt}: done")
        if role == TELLER:
            if said["role"] == "user":
                return Message(calls=[delegate("plan A"), delegate("plan B"),
                                      delegate("plan C")])
            return Message(text="working")
        if role == PLANNER and prompt == "plan A":
            if said["role"] == "user":
                return Message(calls=[delegate(j, priority=p) for j, p in WORKER_JOBS])
            return Message(text="A planned")
        if role == PLANNER and said["role"] == "user":  # not delegations alone: it goes on
            return Message(calls=[*(delegate(f"held {n}", priority=9) for n in (1, 2)),
                                  Call("list_tasks", "{}")])
        inside = self.planner_inside if role == PLANNER else self.worker_inside
        inside.set()
        self.release.wait(60)
        return Message(text="too late")


def run_script(code: str, base_url: str, workspace: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    return subprocess.Popen([sys.executable, "-c", code, base_url, str(workspace)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_a_new_process_restores_queued_tasks_in_order_and_reports_interrupted(tmp_path):
    workspace = tmp_path / "ws"
    script = Killing()
    with RoleServer(script.respond) as server:
        first = run_script(FIRST, server.base_url, workspace)
        try:
            assert script.worker_inside.wait(90) and script.planner_inside.wait(30), (
                first.poll(), first.stderr and first.stderr.read())
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(30)
            script.release.set()
        assert len(list((workspace / "team" / "tasks").glob("*.json"))) == 9

        script.second = True
        second = run_script(SECOND, server.base_url, workspace)
        out, err = second.communicate(timeout=120)
        assert second.returncode == 0, err
        assert not server.hook_errors, server.hook_errors

    seen = json.loads(out.strip().splitlines()[-1])
    # Waiting before the restart, in the order they were made: "plan C" on the planner queue,
    # the rest of plan A's jobs on the Workers' ("job two", first of priority 7, was running).
    assert seen["queued"] == ["plan C", "job one", "job three", "job five", "job four"]
    assert seen["listed"] == []  # on no queue until the person (here the policy) says Run
    workers = [p for p in seen["started"] if p.startswith("job")]
    assert workers == ["job three", "job five", "job one", "job four"], (
        "not highest priority first, first in first out within one")
    assert "plan C" in seen["started"]
    assert all(status == "ok" and result == f"{prompt}: done"
               for prompt, (status, result) in seen["ended"].items()), seen["ended"]
    assert sorted(seen["interrupted"]) == ["job two", "plan B"]
    assert sorted(seen["cancelled"]) == ["held 1", "held 2"]
    assert "interrupted: " in seen["note"] and "job two" in seen["note"]

    assert not list((workspace / "team" / "tasks").glob("*.json")), "an ended task was kept"
    kept = [json.loads(p.read_text()) for p in (workspace / "team" / "interrupted").glob("*")]
    assert sorted((k["prompt"], k["status"]) for k in kept) == [
        ("job two", "interrupted"), ("plan B", "interrupted")]
    ledger = Ledger(workspace / LEDGER_FILE)
    records = ledger.records()
    interrupted = [r for r in records if r.get("kind") == "task_interrupted"]
    assert {r["task_id"] for r in interrupted} == {k["id"] for k in kept}
    assert {r["role"] for r in interrupted} == {"planner", "worker"}
    cancelled = [r for r in records if r.get("kind") == "task_cancelled"]
    assert len(cancelled) == 2 and all("never ended" in r["error"] for r in cancelled)
    assert ledger.verify().ok


def save(folder: Path, name: str, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")


def task_record(task_id: str, **more: Any) -> dict[str, Any]:
    return {"id": task_id, "role": "worker", "prompt": f"{task_id} work", "priority": 5,
            "status": "queued", "created_at": "2026-01-01T00:00:00.000Z", "seq": 1, **more}


@pytest.mark.parametrize(("more", "why"), [
    ({"priority": True}, "priority must be between 0 and 10, got True"),
    ({"priority": "5"}, "priority must be between 0 and 10, got '5'"),
    ({"timeout": float("nan")}, "timeout must be a positive number of seconds, got nan"),
    ({"timeout": 0}, "timeout must be a positive number of seconds, got 0"),
    ({"status": "done"}, "not a task status: 'done'"),
    ({"depth": 101}, "depth must be a small whole number, got 101"),
    ({"run_id": 7}, "run_id must be text or null"),
    ({"condition": [1]}, "condition must be an object or null"),
    ({"role": "teller", "prompt": ""}, "a saved task needs a prompt"),
])
def test_a_task_record_is_checked_strictly_and_refused_in_words(more, why) -> None:
    from agent_kernel.team.queue import Task

    with pytest.raises(ValueError) as refused:
        Task.from_record(task_record("task_bad", **more))
    assert str(refused.value) == why


def test_a_task_record_keeps_its_values_and_ignores_unknown_keys() -> None:
    from agent_kernel.team.queue import Task

    task = Task.from_record(task_record("task_ok", timeout=30, children=["task_c"],
                                        condition={"kind": "file", "path": "x"}, later="?"))
    assert (task.timeout, type(task.timeout), task.children, task.condition) == (
        30, int, ["task_c"], {"kind": "file", "path": "x"})
    assert task.type == "oneshot" and task.depth == 1 and task.trace_id is None


async def test_torn_and_tampered_files_are_reported_and_skipped(tmp_path):
    folder = tmp_path / "ws" / "team" / "tasks"
    save(folder, "task_good.json", json.dumps(task_record("task_good")))
    save(folder, "task_torn.json", json.dumps(task_record("task_torn"))[:40])
    save(folder, "task_prio.json", json.dumps(task_record("task_prio", priority=99)))
    save(folder, "task_role.json", json.dumps(task_record("task_role", role="teller")))
    save(folder, "task_name.json", json.dumps(task_record("task_other")))
    save(folder, "task_kids.json", json.dumps(task_record("task_kids", children=[1, 2])))
    save(folder, "task_list.json", "[1, 2, 3]")

    def answer(role: str, body: dict[str, Any]) -> Message:
        if role == TELLER:
            return Message(text="hello")
        return Message(text=f"{first_prompt(body)}: done")

    with RoleModel(answer) as server:
        team = make_team(server, tmp_path / "ws")
        result = await team.arun("hi")

    report = team.restore_report
    assert [t.id for t in report.queued] == ["task_good"]
    problems = "\n".join(report.problems)
    for name, why in [("task_torn", "not restored"), ("task_prio", "priority must be between"),
                      ("task_role", "role must be 'planner' or 'worker'"),
                      ("task_name", "its id is not its file name"),
                      ("task_kids", "children must be a list"), ("task_list", "not a JSON object")]:
        assert f"{name}.json" in problems and why in problems, (name, problems)
    assert result.status == "ok" and result.reply == "hello"
    assert [(t["id"], t["status"], t["result"]) for t in result.restored] == [
        ("task_good", "ok", "task_good work: done")]
    assert len(result.notes) == 1 and "problem: task_torn.json" in result.notes[0]
    assert (folder / "task_torn.json").exists(), "a broken file is left for the person"
    assert not (folder / "task_good.json").exists()

    again = await team.arun("hi again")
    assert again.restored == [] and again.notes == []


async def test_a_conditional_delegation_keeps_its_priority_across_a_restart(tmp_path):
    from test_team import until

    from agent_kernel.team.roles import WORKER

    workspace, flag = tmp_path / "ws", tmp_path / "flag.txt"

    def script(role: str, body: dict[str, Any]) -> Message:
        said = last(body)
        if role == TELLER:
            if said["role"] == "user" and not said["content"].startswith("The work"):
                return Message(calls=[delegate("watch for the flag")])
            return Message(text="watching")
        if role == PLANNER:
            if said["role"] == "user":
                return Message(calls=[delegate(
                    "report the flag", type="conditional", priority=8, timeout=30,
                    traceId="trace-flag", condition={"kind": "file", "path": str(flag)})])
            return Message(text="a watch is set")
        return Message(text="flag reported")

    with RoleModel(script) as server:
        first = make_team(server, workspace)
        result = await first.arun("tell me when the flag appears")
        [watch] = result.tree["children"][0]["children"]
        await first.triggers.close()  # the kernel ends with the watch set

        second = make_team(server, workspace)
        assert not second.restore_report.problems, second.restore_report.text()
        await second.aresume()
        [row] = second.list_tasks("triggers")
        assert (row["id"], row["priority"]) == (watch["trigger_id"], 8)
        second.triggers.namespace = {}
        seen = second.triggers._watches[watch["trigger_id"]]  # the file's edge needs a baseline
        await until(lambda: seen._previous is None, 10)
        flag.write_text("up")
        sup = second.supervisor
        fired = await until(lambda: next((t for t in sup.tasks.values() if t.role == WORKER
                                          and t.parent_id == watch["id"]
                                          and t.status == "ok"), None), 15)
        assert second.cancel(watch["id"]) is True
        await second.triggers.close()
    assert (fired.priority, fired.timeout, fired.trace_id) == (8, 30, "trace-flag")
    assert not list((workspace / "team" / "tasks").glob("*.json")), "a cancelled watch stayed"
    approvals = [r for r in second.ledger.records() if r.get("kind") == "approval"]
    assert len(approvals) == 1, "the restored watch asked for its approval again"


async def test_a_planners_schedule_keeps_its_approval_across_a_restart(tmp_path):
    from scripted_server import Call

    workspace = tmp_path / "ws"

    def script(role: str, body: dict[str, Any]) -> Message:
        said = last(body)
        if role == TELLER:
            if said["role"] == "user" and not said["content"].startswith("The work"):
                return Message(calls=[delegate("set up a watch")])
            return Message(text="set")
        if role == PLANNER and said["role"] == "user":
            return Message(calls=[Call("schedule", json.dumps({
                "prompt": "report the flag", "type": "conditional",
                "condition": {"kind": "file", "path": str(tmp_path / "flag.txt")}}))])
        return Message(text="scheduled")

    with RoleModel(script) as server:
        first = make_team(server, workspace)
        assert (await first.arun("watch the flag")).ok
        [made] = first.triggers.active()
        await first.triggers.close()
        second = make_team(server, workspace)
        await second.aresume()
        [back] = second.triggers.active()
        await second.triggers.close()
    assert back.id == made.id and back.approved and back.agent_id == "team-desk"
    records = second.ledger.records()
    [approval] = [r for r in records if r.get("kind") == "approval"]
    assert approval["role"] == PLANNER and approval["decision"] == "approved"
    assert not [r for r in records if r.get("kind") == "trigger_restored"
                and r.get("needs_approval")], records[-1]
