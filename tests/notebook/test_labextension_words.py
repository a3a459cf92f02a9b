"""The extension's words for a run's questions (``labextension/src/words.ts``), run in node.

A run stopped while a question or approval waits must read the same with the extension
as in the HTML fallback: "Not answered: the run was stopped", its card not run, both as
the kernel now saves it (``source: "stopped"``) and as a run saved before that was (its
wait ``source: null`` under an ended run). A team agent's question is named by its work,
as ``views/summaries.question_label`` names it. These checks compile ``words.ts`` with the
extension's own TypeScript and compare what node says with what the kernel's views say.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from extension_node import compiled, in_node

from agent_kernel.core.events import AgentActivity, Question, RunStarted, ToolCallStarted
from agent_kernel.views.mime import Transcript
from agent_kernel.views.run_html import outcome
from agent_kernel.views.run_record import STOPPED_OUTCOME, ended_waits
from agent_kernel.views.summaries import question_label

SCRIPT = r"""
const words = require(process.argv[1]);
const states = JSON.parse(process.argv[2]);
const questions = (entries) => entries.flatMap((e) =>
  e.kind === 'question' ? [e] : e.kind === 'tool' && e.approval ? [e.approval]
  : e.kind === 'agent' ? questions(e.entries) : []);
console.log(JSON.stringify(states.map((state) => {
  const ended = words.endedWaits(state);
  const running = ended.status === 'running';
  return { same: ended === state, entries: ended.entries,
           outcomes: questions(ended.entries).map((q) => words.outcome(q, running)),
           labels: questions(ended.entries).map((q) => words.questionLabel(q)) };
})));
"""


def said_in_node(states: list[dict[str, Any]], tmp_path: Path) -> list[dict[str, Any]]:
    """What ``words.ts`` makes of each saved run: its entries once ended, each question's
    outcome and label."""
    said: list[dict[str, Any]] = in_node(SCRIPT, str(compiled("words", tmp_path)),
                                         json.dumps(states))
    return said


def questions(entries: list[Any]) -> list[Any]:
    found: list[Any] = []
    for e in entries:
        if e["kind"] == "question":
            found.append(e)
        elif e["kind"] == "tool" and e["approval"]:
            found.append(e["approval"])
        elif e["kind"] == "agent":
            found += questions(e["entries"])
    return found


def waiting_run() -> Transcript:
    """A Teller's run: an approval in its card, and a Worker's question with no card."""
    t = Transcript(run_id="r", prompt="plan the trip", model="m")
    t.feed(RunStarted("r", prompt="plan the trip", model="m", agent_id="teller"))
    t.feed(ToolCallStarted("r", "c1", "bash", {"cmd": "sleep 30"}))
    t.feed(Question("r", "q_a", "Allow `bash` to run with these arguments?",
                    ["Approve", "Deny"], 60.0, "Deny", kind="approval",
                    details={"tool": "bash", "arguments": {"cmd": "sleep 30"}}))
    t.feed(AgentActivity("r", agent_id="worker-3", role="worker", task_id="t_1",
                         parent_task_id=None, prompt="find a hotel in Porto",
                         inner=RunStarted("r_w", prompt="find a hotel in Porto", model="m",
                                          agent_id="worker-3"), order=1))
    t.feed(Question("r", "q_w", "Which street?", None, 60.0, None,
                    details={"asked_by": "worker-3", "asked_by_role": "worker",
                             "task_id": "t_1"}))
    t.feed(ToolCallStarted("r", "c2", "echo", {"text": "hi"}))  # places the Worker's question
    return t


def test_a_stopped_runs_waits_read_as_in_the_fallback(tmp_path: Path) -> None:
    running = waiting_run()
    live = running.state()
    stopped = waiting_run()
    stopped.ended = "stopped"
    saved = stopped.state()  # as the kernel now saves it
    older = copy.deepcopy(saved)  # as a run stopped before ``stopped`` existed was saved
    for e in older["entries"]:
        if e["kind"] == "tool" and e["approval"]:
            e.update(state="waiting", summary="waiting for your approval", error=None)
        for q in questions([e]):
            q["source"] = None
    assert [q["source"] for q in questions(saved["entries"])] == ["stopped", "stopped"]
    said_live, said_saved, said_older = said_in_node([live, saved, older], tmp_path)

    assert said_live["same"] and said_saved["same"] is False
    assert said_live["outcomes"] == ["Waiting for your approval", "Waiting for your answer"]
    assert said_saved["outcomes"] == said_older["outcomes"] == [STOPPED_OUTCOME] * 2
    assert said_saved["outcomes"] == [outcome(q) for q in questions(saved["entries"])]
    # the extension ends an older run's waits as the kernel saves them now
    assert said_older["entries"] == said_saved["entries"] == ended_waits(older)["entries"]
    [card] = [e for e in said_older["entries"] if e["kind"] == "tool" and e["approval"]]
    assert card["state"] == "failed"
    assert card["summary"] == "not run: the run was stopped before you answered"
    # who asks: the Worker by its work, as the fallback names it; the card's by nothing
    assert said_saved["labels"] == [question_label(bool(q["approval"]), q["details"])
                                    for q in questions(saved["entries"])]
    assert said_saved["labels"] == ["Approval", "find a hotel in… · Worker asks"]
    assert not [w for w in said_saved["labels"] if "worker-3" in w]


def test_a_worker_asking_inside_its_planners_finished_run_still_waits_in_both(
        tmp_path: Path) -> None:
    """A Worker's run sits inside its Planner's, which has ended: both the extension and the
    kernel's views keep the Worker's approval waiting while the Teller's run goes on."""
    wait = {"kind": "question", "question_id": "q", "question": "Allow?", "options": None,
            "timeout": 60, "default": None, "approval": True, "details": None,
            "answer": None, "source": None, "asked_at": None, "answered_at": None}

    def asking(status: str) -> dict[str, Any]:
        return {"kind": "agent", "status": status, "entries": [dict(wait)]}

    state = {"status": "running", "entries": [
        {"kind": "agent", "status": "done", "entries": [asking("running"), asking("done")]}]}
    [said] = said_in_node([state], tmp_path)
    assert [q["source"] for q in questions(said["entries"])] == [None, "stopped"]
    assert said["entries"] == ended_waits(state)["entries"]  # type: ignore[arg-type]
