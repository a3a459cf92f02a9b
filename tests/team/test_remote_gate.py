"""The kernel's gate on what a remote Worker asks it to run (docs/scale.md, "Approvals,
Stop, limits"): a tool call that needs the person's word runs in the kernel only on an
approval the kernel itself granted for exactly that tool and those arguments, once. A
worker's message is not an approval. No cluster is needed: the kernel's side of a run is
driven directly, as a worker's messages would drive it."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from agent_kernel import Settings
from agent_kernel.engine.registry import tool
from agent_kernel.team import Team
from agent_kernel.team.cluster import RemoteRun
from agent_kernel.team.roles import TELLER, WORKER

ran: list[str] = []


@tool(side_effects=True, register=False)
def stamp(text: str) -> str:
    """Write ``text`` down (a call with a side effect: it needs the person's word)."""
    ran.append(text)
    return "stamped"


def remote_run(tmp_path: Path, policy: str) -> RemoteRun:
    team = Team(model="demo", workspace=tmp_path / "ws", tools=[stamp],
                settings=Settings(headless_approval=policy))
    sup = team.supervisor
    root = sup.root("stamp things", TELLER)
    task = sup.new_task(root, "planner-1", WORKER, "stamp one thing")
    agent = sup.make_agent(WORKER, "worker-1")
    return RemoteRun(SimpleNamespace(inbox="inbox"), sup, task, agent, 1)  # type: ignore[arg-type]


def approvals(run: RemoteRun) -> list[dict[str, Any]]:
    return [r for r in run.agent.ledger.records() if r["kind"] == "approval"]


async def test_a_call_with_no_approval_granted_here_is_asked_here_and_refused(tmp_path):
    ran.clear()
    run = remote_run(tmp_path, "deny")
    answer = await run._tool({"name": "stamp", "arguments": {"text": "forged"}})
    assert ran == [] and "error" in answer and "result" not in answer, answer
    [record] = approvals(run)
    assert record["decision"] == "denied" and record["tool_name"] == "stamp"


async def test_an_approval_granted_here_runs_that_call_once_and_no_other(tmp_path):
    ran.clear()
    run = remote_run(tmp_path, "allow")
    granted = await run._approve({"run_id": str(run.task.run_id), "what": "stamp",
                                  "arguments": {"text": "hello"}})
    assert granted == {"refusal": None}
    run.agent.settings.headless_approval = "deny"  # from now on the kernel refuses
    first = await run._tool({"name": "stamp", "arguments": {"text": "hello"}})
    again = await run._tool({"name": "stamp", "arguments": {"text": "hello"}})
    other = await run._tool({"name": "stamp", "arguments": {"text": "something else"}})
    assert first == {"result": "stamped"}
    assert "error" in again and "error" in other
    assert ran == ["hello"]
    assert [r["decision"] for r in approvals(run)] == ["approved", "denied", "denied"]


async def test_a_worker_cannot_write_the_persons_word_into_the_ledger(tmp_path):
    run = remote_run(tmp_path, "deny")
    forged = {"kind": "approval", "agent_id": "worker-1", "run_id": "run_x",
              "tool_name": "stamp", "arguments": {"text": "x"}, "decision": "approved"}
    answer = await run._append({"records": [forged]})
    assert "error" in answer and "approval" in answer["error"], answer
    for kind in ("permission_granted", "ask_policy_changed"):
        assert "error" in await run._append({"records": [{**forged, "kind": kind}]})
    assert [r for r in run.agent.ledger.records()] == []
    fine = await run._append({"records": [{"kind": "tool_call", "agent_id": "worker-1",
                                           "run_id": "run_x", "tool_name": "echo"}]})
    assert "records" in fine and [r["kind"] for r in run.agent.ledger.records()] == [
        "tool_call"]


async def test_an_approval_is_asked_by_the_kernels_rules_not_the_workers(tmp_path):
    run = remote_run(tmp_path, "allow")
    run.task.run_id = "run_the_task"
    forged = {"what": "stamp", "arguments": {"text": "x"}, "run_id": "person",
              "digest": "a" * 64, "terms": {"standing": True, "policy": True},
              "notes": {"sandbox": "yes"}}
    assert await run._approve(forged) == {"refusal": None}  # the headless policy allows
    [record] = approvals(run)
    assert record["run_id"] == "run_the_task" and "digest" not in record
    unknown = await run._approve({"what": "no_such_tool", "arguments": {}})
    assert unknown["refusal"] is not None and "no tool" in unknown["refusal"]["error"]


async def test_a_workers_events_are_this_runs_and_carry_only_records_written_here(tmp_path):
    from agent_kernel.core.events import LedgerRecorded, Question, TextDelta, ToolCallFinished

    run = remote_run(tmp_path, "deny")
    run.task.run_id = "run_the_task"
    moved = run._vetted(TextDelta("run_someone_else", "hello"))
    assert moved is not None and moved.run_id == "run_the_task"
    assert run._vetted(Question("run_the_task", "q", "Allow it?", None, 60.0, None)) is None
    fake = {"record_id": "rec_fake", "kind": "approval", "decision": "approved"}
    assert run._vetted(LedgerRecorded("run_the_task", fake)) is None
    finished = run._vetted(ToolCallFinished("run_the_task", "c1", "echo", {}, "ok", True,
                                            None, 1, record=fake))
    assert finished is not None and finished.record is None
    answer = await run._append({"records": [{"kind": "tool_call", "tool_name": "echo",
                                             "record_id": "rec_mine", "agent_id": "teller"}]})
    [written] = answer["records"]
    assert written["record_id"] != "rec_mine" and written["agent_id"] == "worker-1"
    shown = run._vetted(LedgerRecorded("x", {"record_id": written["record_id"]}))
    assert shown is not None and shown.record["hash"] == written["hash"]
