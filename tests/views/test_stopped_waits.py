"""A run stopped while a question or approval waits reads, once saved, as what happened.

Nobody can answer a saved notebook: its card must not read "waiting for your approval".
The saved form marks such a wait ``source: "stopped"`` and the card it gated as not run;
the HTML and text fallbacks say "Not answered: the run was stopped", and a run saved before
``stopped`` existed (its wait ``source: null`` under an ended run) reads the same. A team
agent's question without a card is named by the agent's work, its id only a tooltip.
"""

from __future__ import annotations

import asyncio
import copy
import io
from typing import Any

import pytest

from agent_kernel import Agent
from agent_kernel.core.events import AgentActivity, Event, Question, RunStarted
from agent_kernel.core.mime_types import RUN_MIME
from agent_kernel.views.mime import Transcript, mime_bundle
from agent_kernel.views.run_html import html_of, text_of
from agent_kernel.views.run_record import STOPPED_OUTCOME, ended_waits, read_run
from agent_kernel.views.text import TextView

WAITING = ("waiting for your approval", "waiting for your answer", "waiting for an answer")


@pytest.fixture
def agent(tmp_path) -> Agent:
    return Agent(workspace=tmp_path / "ws")


async def stopped_while_asking(agent: Agent, prompt: str) -> tuple[dict[str, Any], str]:
    """Run ``prompt`` with someone to ask, and stop it as soon as it asks."""
    events: list[Event] = []
    out = io.StringIO()
    view = TextView(agent.bus, stream=out)
    agent.bus.subscribe(events.append)
    agent.questions.attach_answerer()
    loop = asyncio.get_running_loop()

    def stop_on_question(event: Event) -> None:
        if isinstance(event, Question):
            loop.call_later(0.05, agent.stop, "r_stop")

    agent.bus.subscribe(stop_on_question)
    result = await agent.arun(prompt, run_id="r_stop")
    agent.questions.detach_answerer()
    view.close()
    assert result.status == "cancelled", result.status
    transcript = Transcript()
    for event in events:
        transcript.feed(event)
    return mime_bundle(transcript), out.getvalue()


def no_live_look(bundle: dict[str, Any]) -> None:
    for mime in ("text/html", "text/plain"):
        assert not [w for w in WAITING if w in bundle[mime].lower()], bundle[mime]
        assert STOPPED_OUTCOME in bundle[mime], bundle[mime]
    read_run(bundle[RUN_MIME])  # the saved form, as its schema says


async def test_an_approval_waiting_when_the_run_is_stopped_reads_not_answered(agent):
    bundle, said = await stopped_while_asking(agent, "run command sleep 30")
    [card] = [e for e in bundle[RUN_MIME]["entries"] if e["kind"] == "tool"]
    assert card["state"] == "failed", card
    assert card["summary"] == "not run: the run was stopped before you answered"
    assert card["approval"]["source"] == "stopped" and card["approval"]["answer"] is None
    assert bundle[RUN_MIME]["status"] == "stopped"
    no_live_look(bundle)
    assert "- bash: not run: the run was stopped before you answered" in bundle["text/plain"]
    # the terminal's log says so too, after the run's own "stopped" line
    assert "[answer] not answered: the run was stopped (approval)" in said, said


async def test_a_question_waiting_when_the_run_is_stopped_reads_not_answered(agent):
    bundle, said = await stopped_while_asking(agent, "ask me my name")
    [card] = [e for e in bundle[RUN_MIME]["entries"] if e["kind"] == "tool"]
    assert card["tool"] == "ask_user" and card["state"] == "failed", card
    assert "waiting" not in card["summary"], card  # the call ended as the engine says
    assert card["approval"]["source"] == "stopped"
    no_live_look(bundle)
    assert "[answer] not answered: the run was stopped (question)" in said, said


async def test_a_run_saved_before_stopped_existed_reads_the_same(agent):
    """An older saved run keeps ``source: null`` under an ended run: its views say what
    happened, and a running run's wait still reads as waiting."""
    bundle, _ = await stopped_while_asking(agent, "run command sleep 30")
    older = copy.deepcopy(bundle[RUN_MIME])
    [card] = [e for e in older["entries"] if e["kind"] == "tool"]
    card.update(state="waiting", summary="waiting for your approval", error=None)
    card["approval"]["source"] = None
    read_run(older)
    no_live_look({RUN_MIME: older, "text/html": html_of(older), "text/plain": text_of(older)})
    assert ended_waits(older)["entries"][0] == bundle[RUN_MIME]["entries"][0]
    running = {**older, "status": "running"}
    assert ended_waits(running) is running
    assert "waiting for your approval" in html_of(running)
    assert STOPPED_OUTCOME not in html_of(running) + text_of(running)


def team_run() -> Transcript:
    """A Teller's run with a Worker nested, and a question of that Worker's with no card."""
    t = Transcript(run_id="r_team", prompt="plan the trip", model="m")
    t.feed(RunStarted("r_team", prompt="plan the trip", model="m", agent_id="teller"))
    t.feed(AgentActivity("r_team", agent_id="worker-3", role="worker", task_id="t_1",
                         parent_task_id=None, prompt="run command sleep 30",
                         inner=RunStarted("r_w", prompt="run command sleep 30", model="m",
                                          agent_id="worker-3"), order=1))
    t.feed(Question("r_team", "q_w", "Which city?", ["Lisbon", "Porto"], 60.0, None,
                    details={"asked_by": "worker-3", "asked_by_role": "worker",
                             "task_id": "t_1"}))
    return t


def test_a_team_agents_question_without_a_card_is_named_by_its_work():
    t = team_run()
    state = t.state()
    [question] = [e for e in state["entries"] if e["kind"] == "question"]
    assert question["details"]["asked_by_work"] == "run command sleep 30"
    html, text = html_of(state), text_of(state)
    assert "<b title='worker-3'>run command sleep 30 · Worker asks:</b>" in html
    assert "worker-3" not in html.replace("title='worker-3'", "").replace(
        "data-agent='worker-3'", ""), html
    assert "? run command sleep 30 · Worker asks: Which city? -> waiting" in text, text
    assert "worker-3" not in text and "Question from" not in html + text


def test_a_stopped_team_agents_question_reads_not_answered():
    """The Teller's run ended while a Worker's question waited: nobody can answer it."""
    t = team_run()
    from agent_kernel.core.events import RunError

    t.feed(RunError("r_team", "The run was stopped.", kind="cancelled"))
    t.ended = "stopped"
    state = t.state()
    [question] = [e for e in state["entries"] if e["kind"] == "question"]
    assert question["source"] == "stopped"
    assert f"run command sleep 30 · Worker asks: Which city? -> {STOPPED_OUTCOME}" in \
        text_of(state)


def test_the_terminal_names_a_team_agent_that_asks_by_its_work():
    from agent_kernel.core.events import EventBus

    bus, out = EventBus(), io.StringIO()
    TextView(bus, stream=out)
    bus.emit(AgentActivity("r_team", agent_id="worker-3", role="worker", task_id="t_1",
                           parent_task_id=None, prompt="find a hotel in Porto",
                           inner=RunStarted("r_w", prompt="find a hotel in Porto", model="m",
                                            agent_id="worker-3"), order=1))
    bus.emit(Question("r_team", "q_w", "Which street?", None, 60.0, None,
                      details={"asked_by": "worker-3", "asked_by_role": "worker"}))
    bus.emit(Question("r_team", "q_x", "Which city?", None, 60.0, None,
                      details={"asked_by": "worker-9", "asked_by_role": "worker"}))
    lines = out.getvalue().splitlines()
    assert "[question] find a hotel in… · Worker asks: Which street?" in lines, lines
    assert "[question] Worker asks: Which city?" in lines, lines  # its work unknown here


def test_a_worker_still_asking_inside_its_planners_finished_run_still_waits():
    """The Worker's run sits inside its Planner's, which has ended: the Worker's approval
    waits while the Teller's run goes on, and ends only with the Worker's or the whole run."""
    def asking(status: str) -> dict[str, Any]:
        wait = {"kind": "question", "source": None, "approval": True, "seconds_left": 60}
        card = {"kind": "tool", "state": "waiting", "approval": dict(wait)}
        return {"kind": "agent", "status": status, "entries": [card, dict(wait)]}

    def waits(state: dict[str, Any]) -> list[object]:
        planner = state["entries"][0]
        return [e["source"] if e["kind"] == "question" else e["approval"]["source"]
                for worker in planner["entries"] for e in worker["entries"]]

    planner = {"kind": "agent", "status": "done",
               "entries": [asking("running"), asking("done")]}
    state: Any = {"status": "running", "entries": [planner]}
    assert waits(ended_waits(state)) == [None, None, "stopped", "stopped"]
    assert waits(ended_waits({**state, "status": "cancelled"})) == ["stopped"] * 4
