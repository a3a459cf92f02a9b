"""One transcript per team prompt: the Planner's and the Workers' runs nested in the Teller's.

A real team on the scripted server (litellm's HTTP path) is shown through a
:class:`TellerRelay`: the Planner's run appears folded under the Teller's
delegate card, each Worker's run folded under its Planner's, with its own
tool cards, in the saved state, the HTML and the plain text.
"""

from __future__ import annotations

import io
import json
from typing import Any

from scripted_server import Call, Message
from test_team import RoleModel, delegate, first_prompt, last, make_team

from agent_kernel.core.events import AgentActivity, Notice
from agent_kernel.core.mime_types import RUN_MIME
from agent_kernel.team.relay import TellerRelay
from agent_kernel.team.roles import PLANNER, TELLER
from agent_kernel.views.mime import mime_bundle, transcript_of
from agent_kernel.views.text import TextView

CITIES = ("Paris", "Rome")


def respond(role: str, body: dict[str, Any]) -> Message:
    said, prompt = last(body), first_prompt(body)
    if role == TELLER:
        if said["role"] == "user" and said["content"].startswith("The work you delegated"):
            return Message(text="Paris and Rome, compared.")
        if said["role"] == "user":
            return Message(calls=[delegate("compare two cities")])
        return Message(text="Delegated.")
    if role == PLANNER:
        if said["role"] == "user":
            return Message(calls=[delegate(f"research {c}", priority=p)
                                  for c, p in zip(CITIES, (7, 3), strict=True)])
        return Message(text="One Worker per city.")
    city = prompt.split()[-1]
    if said["role"] == "user":
        return Message(calls=[Call("write_file", json.dumps(
            {"path": f"{city.lower()}.md", "content": f"{city} notes sk-live-{'x' * 24}"}))])
    return Message(text=f"{city}: notes written")


async def test_planner_and_worker_runs_are_nested_with_their_tool_cards(tmp_path):
    with RoleModel(respond) as server:
        team = make_team(server, tmp_path, max_workers=1)
        relay = TellerRelay(team, "run_prompt")
        events: list[Any] = []
        relay.bus.subscribe(events.append)
        text = io.StringIO()
        view = TextView(relay.bus, stream=text, run_id="run_prompt")
        result = await team.arun("compare Paris and Rome")
        relay.close(result)
        view.close()
    assert result.ok
    state = mime_bundle(transcript := transcript_of(events))[RUN_MIME]
    assert transcript.status == "done"
    kinds = [e["kind"] for e in state["entries"]]
    assert kinds.index("tool") < kinds.index("agent")  # the delegate card, then the Planner
    [planner] = [e for e in state["entries"] if e["kind"] == "agent"]
    assert planner["role"] == PLANNER and planner["status"] == "done"
    assert planner["prompt"] == "compare two cities"
    workers = [e for e in planner["entries"] if e["kind"] == "agent"]
    assert [w["prompt"] for w in workers] == ["research Paris", "research Rome"]  # priority
    for worker, city in zip(workers, CITIES, strict=True):
        assert worker["role"] == "worker" and worker["status"] == "done"
        [card] = [e for e in worker["entries"] if e["kind"] == "tool"]
        assert card["tool"] == "write_file" and card["arguments"]["path"] == f"{city.lower()}.md"
        assert card["ledger"]["record_id"]
        assert "sk-live-" not in json.dumps(card)  # nested cards are redacted too
        assert any(e["kind"] == "text" and e["text"] == f"{city}: notes written"
                   for e in worker["entries"])
    planner_tools = [e["tool"] for e in planner["entries"] if e["kind"] == "tool"]
    assert planner_tools == ["delegate", "delegate"]
    html = mime_bundle(transcript)["text/html"]
    assert html.count("<details class='agent-kernel-agent' data-agent-role='worker'") == 2
    assert html.index("data-agent-role='planner'") < html.index("data-agent-role='worker'")
    # named by their work; the id is only the tooltip (issue 25)
    assert f"<b title='{workers[0]['agent_id']}'>research Paris · Worker · done" in html
    plain = mime_bundle(transcript)["text/plain"]
    assert "> compare two cities · Planner · done" in plain
    assert "    > research Paris · Worker · done" in plain
    assert planner["agent_id"] not in plain and workers[0]["agent_id"] not in plain
    assert "        - write_file:" in plain
    said = text.getvalue()
    # the terminal names them by their work too, never by their ids
    assert "[research Rome · Worker] [tool] write_file ok" in said, said
    assert "[compare two cities · Planner] starts: compare two cities" in said, said
    assert "[research Paris · Worker] done: Paris: notes written" in said, said
    assert planner["agent_id"] not in said and workers[0]["agent_id"] not in said
    assert "Paris and Rome, compared." in said


async def test_another_prompts_agents_stay_out_of_this_transcript(tmp_path):
    with RoleModel(respond) as server:
        team = make_team(server, tmp_path)
        await team.arun("compare Paris and Rome")
        relay = TellerRelay(team, "run_second")
        events: list[Any] = []
        relay.bus.subscribe(events.append)
        earlier = [t.run_id for t in team.supervisor.tasks.values() if t.run_id and t.parent_id]
        assert len(earlier) == 3
        for run_id in earlier:  # an earlier prompt's agents say something late
            team.bus.emit(Notice(run_id, "late"))
        relay.close(None)
    assert events == []


def test_the_tellers_reply_reads_whole_before_the_work_it_handed_on() -> None:
    """A Planner starts, and a Worker asks, while the Teller still streams (or has not
    begun) its reply: the reply stays one paragraph before the Planner's run and the
    Worker's question; Workers begun together read in the order they were delegated; a
    stopped Worker makes the prompt's status say so."""
    from agent_kernel.core.events import (
        ModelCallStarted,
        Question,
        RunFinished,
        RunStarted,
        TextDelta,
        ToolCallStarted,
    )
    from agent_kernel.views.mime import Transcript

    def activity(task: str, parent: str | None, order: int, inner: Any) -> AgentActivity:
        return AgentActivity("run_t", agent_id=task, role="worker" if parent else "planner",
                             task_id=task, parent_task_id=parent, prompt=task, inner=inner,
                             order=order)

    t = Transcript()
    t.feed(RunStarted("run_t", prompt="go", model="m", agent_id="teller"))
    t.feed(ModelCallStarted("run_t"))
    t.feed(activity("plan", None, 0, RunStarted("run_p", prompt="go", model="m",
                                                 agent_id="p")))
    t.feed(TextDelta("run_t", "I handed your ask "))
    for task, order in (("w-B", 2), ("w-A", 1), ("w-C", 3)):  # begun out of order
        t.feed(activity(task, "plan", order, RunStarted(f"run_{task}", prompt=task, model="m",
                                                        agent_id=task)))
    t.feed(Question("run_t", "q_1", "Allow `bash`?", ["Approve", "Deny"], 60.0, "Deny",
                    kind="approval", details={"tool": "bash", "asked_by": "w-A",
                                              "asked_by_role": "worker"}))
    t.feed(TextDelta("run_t", "to the Planner."))
    kinds = [e["kind"] for e in t.state()["entries"]]
    assert kinds == ["text", "agent", "question"]
    assert t.state()["entries"][0]["text"] == "I handed your ask to the Planner."
    t.feed(ToolCallStarted("run_t", call_id="c1", tool_name="echo", arguments={}))
    t.feed(TextDelta("run_t", "After the call."))  # a new paragraph after the tool card
    state = t.state()
    assert [e["kind"] for e in state["entries"]] == ["text", "agent", "question", "tool",
                                                     "text"]
    assert [e["task_id"] for e in state["entries"][1]["entries"]] == ["w-A", "w-B", "w-C"]

    from agent_kernel.engine.agent import RunResult

    t.feed(activity("w-B", "plan", 2, RunFinished("run_w-B", result=RunResult(
        run_id="run_w-B", model="m", status="cancelled"))))
    t.feed(RunFinished("run_t", result=RunResult(run_id="run_t", model="m", status="ok")))
    assert t.status == "done"  # a Worker stopped (cancelled) is no failure (issue 25)
    t.agents["w-C"][1].ended = "failed"
    assert t.status == "done_with_failures"  # a Worker that failed is one
