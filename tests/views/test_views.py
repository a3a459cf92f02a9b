"""The views on real event streams: demo runs through litellm, as text, HTML and widgets."""

from __future__ import annotations

import asyncio
import io
import re
from html.parser import HTMLParser

import pytest

from agent_kernel import Agent
from agent_kernel.core.events import Event, TextDelta
from agent_kernel.core.mime_types import RUN_MIME
from agent_kernel.views.mime import mime_bundle, render_html, transcript_of
from agent_kernel.views.text import TextView


def run_collecting(agent: Agent, prompt: str, **kwargs) -> tuple[object, list[Event]]:
    events: list[Event] = []
    unsubscribe = agent.bus.subscribe(events.append)
    try:
        result = agent.run(prompt, **kwargs)
    finally:
        unsubscribe()
    return result, events


class _Checker(HTMLParser):
    """Collects tags, so tests can see no model text became markup."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)


@pytest.fixture
def agent(tmp_path) -> Agent:
    return Agent(workspace=tmp_path / "ws")


def test_text_view_streams_a_tool_call_with_its_ledger_record(agent):
    out = io.StringIO()
    view = TextView(agent.bus, stream=out)
    result = agent.run("echo hello views")
    view.close()
    text = out.getvalue()
    record_id = agent.ledger.records()[-1]["record_id"]
    assert result.ok
    assert text.splitlines()[0] == ">>> [demo] echo hello views"
    assert re.search(r"\[tool\] echo ok in \d+ ms · ledger " + record_id + " -> hello views", text)
    assert "(offline demo model) The echo tool returned: hello views" in text
    assert re.search(r"\[done · \d+ tokens \(\d+ in, \d+ out\) · \$[\d.]+ · [\d.]+ s · "
                     r"1 tool call]", text)


def test_text_view_shows_questions_and_errors(agent, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # fails before any request
    out = io.StringIO()
    view = TextView(agent.bus, stream=out)
    agent.run("ask me to choose between tea or coffee")  # headless: no answerer attached
    agent.run("hi", model="openai/model-x")
    view.close()
    text = out.getvalue()
    assert "[question] Which do you choose: tea, coffee? [tea / coffee]" in text
    assert "[answer] (no answer) (timeout)" in text
    assert "[provider] The model provider was not called: no API key for openai" in text
    assert "[error ·" in text


def test_mime_transcript_of_a_demo_run(agent):
    result, events = run_collecting(agent, "echo <b>bold</b> & more")
    t = transcript_of(events)
    assert t.run_id == result.run_id and t.prompt == "echo <b>bold</b> & more"
    assert t.status == "done"
    card = next(iter(t.tools.values()))
    assert card.tool_name == "echo" and card.success is True
    assert card.record_id == agent.ledger.records()[-1]["record_id"]
    bundle = mime_bundle(t)
    assert set(bundle) == {RUN_MIME, "text/html", "text/plain"}
    state = bundle[RUN_MIME]
    assert state["version"] == 1 and state["status"] == "done" and state["offline"] is True
    [tool] = [e for e in state["entries"] if e["kind"] == "tool"]
    assert tool["tool"] == "echo" and tool["state"] == "ok" and tool["result_kind"] == "text"
    assert tool["ledger"]["record_id"] == card.record_id and len(tool["ledger"]["hash"]) == 64
    html = bundle["text/html"]
    # model and tool text is escaped, never markup
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; more" in html
    checker = _Checker()
    checker.feed(html)
    assert "b" in checker.tags  # our own labels
    # the answer's Markdown is sanitised like JupyterLab's: an allowed <b> stays, only there
    assert html.count("<b>bold</b>") == 1
    assert "The echo tool returned: <b>bold</b> &amp; more</p>" in html.split(
        "<div class='agent-kernel-reply'>", 1)[1]
    assert "<details class='agent-kernel-tool' data-state='ok'>" in html
    assert card.record_id in html and "in ledger ✓" in html
    assert "<script" not in html and "http" not in html
    assert "offline demo model" in html
    assert "echo" in bundle["text/plain"] and card.record_id in bundle["text/plain"]


def test_mime_renders_markdown_and_sanitises_raw_html(agent):
    _result, events = run_collecting(agent, "what can you do?")
    events.append(TextDelta(events[0].run_id, "\n\n<script>alert(1)</script>\n\nsay **strong**"))
    html = render_html(transcript_of(events))
    assert "<code>echo</code>" in html  # Markdown backticks became code
    assert "<strong>strong</strong>" in html
    assert "<script" not in html and "alert(1)" not in html  # dropped, as JupyterLab does


def test_mime_shows_question_answer_and_error(agent, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # fails before any request
    _r, events = run_collecting(agent, "ask me to choose between tea or coffee")
    t = transcript_of(events)
    q = next(iter(t.questions.values()))
    assert q.options == ["tea", "coffee"] and q.source == "timeout"
    html = render_html(t)
    assert "Which do you choose: tea, coffee?" in html and "No answer in time" in html
    _r, events = run_collecting(agent, "hi", model="openai/model-x")
    t = transcript_of(events)
    assert t.status == "failed" and t.state()["status"] == "failed"
    assert "Error:" in render_html(t) and "openai/model-x" in render_html(t)


WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


class Handle:
    """Records what a display handle was updated with (the kernel's display path is
    exercised in the notebook tests; here only what the view sends)."""

    def __init__(self) -> None:
        self.updates: list[dict] = []

    def update(self, data: dict, raw: bool = False) -> None:
        self.updates.append(data)


def live_view(agent: Agent, run_id: str, stop=None):
    from agent_kernel.notebook.widgets import WidgetView

    view = WidgetView(agent, run_id, stop=stop)
    view.interactive = True
    view._handle = Handle()
    return view


def shown_controls(view) -> dict:
    """Give every question control a recording handle as it appears."""
    handles: dict = {}

    def on_event(event: Event) -> None:
        if type(event).__name__ == "Question" and event.question_id in view.questions:
            handles[event.question_id] = view.questions[event.question_id].handle = Handle()

    view.agent.bus.subscribe(on_event)
    return handles


async def test_widget_view_click_answers_and_the_control_becomes_text(agent):
    run_id = "run_widget_test"
    view = live_view(agent, run_id)
    handles = shown_controls(view)
    agent.questions.attach_answerer()
    loop = asyncio.get_running_loop()

    def click_tea(event: Event) -> None:
        if type(event).__name__ == "Question":
            control = view.questions[event.question_id]
            assert control.countdown.value.startswith("answer within ")  # from the start
            tea = next(b for b in control.buttons if b.description == "tea")
            loop.call_later(0.05, tea.click)

    agent.bus.subscribe(click_tea)
    result = await agent.arun("ask me to choose between tea or coffee", run_id=run_id)
    agent.questions.detach_answerer()
    view.finish()
    assert result.ok and "You answered **tea**" in result.reply
    [control] = view.questions.values()
    assert control.settled and all(b.disabled for b in control.buttons)
    [static] = handles[control.event.question_id].updates
    assert static["text/plain"].startswith("You chose tea · ") and WIDGET_MIME not in static
    assert "agent-kernel-answered" in static["text/html"]
    final = view._handle.updates[-1]
    assert set(final) == {RUN_MIME, "text/html", "text/plain"}
    assert final[RUN_MIME]["status"] == "done" and view.status == "done"
    # the question is drawn once, inside the card of the ask_user call that asked it
    assert not [e for e in final[RUN_MIME]["entries"] if e["kind"] == "question"]
    [card] = [e for e in final[RUN_MIME]["entries"] if e["kind"] == "tool"]
    question = card["approval"]
    assert card["tool"] == "ask_user" and question["approval"] is False
    assert question["answer"] == "tea" and question["source"] == "user"
    assert question["answered_at"] and question["options"] == ["tea", "coffee"]
    assert "You chose tea" in final["text/html"]


async def test_widget_view_enter_sends_free_text(agent):
    run_id = "run_widget_enter"
    view = live_view(agent, run_id)
    shown_controls(view)
    agent.questions.attach_answerer()
    loop = asyncio.get_running_loop()

    def type_and_enter(event: Event) -> None:
        if type(event).__name__ == "Question":
            entry = view.questions[event.question_id].entry
            assert entry is not None and "agent-kernel-answer-text" in entry._dom_classes
            entry.value = "Ada Lovelace"
            # What the frontend sends when Enter is pressed in the box:
            loop.call_later(0.05, entry._handle_string_msg, None, {"event": "submit"}, None)

    agent.bus.subscribe(type_and_enter)
    result = await agent.arun("ask me my name", run_id=run_id)
    agent.questions.detach_answerer()
    view.finish()
    assert result.ok and "Ada Lovelace" in result.reply
    assert view.answered_text()[0].startswith("You answered “Ada Lovelace” · ")


async def test_widget_view_stop_shows_stopped_and_leaves_text(agent):
    run_id = "run_widget_stop"
    view = live_view(agent, run_id, stop=lambda: agent.stop(run_id))
    view._stop_handle = stop_handle = Handle()
    moved: list[Handle] = []
    view._display_stop = lambda: moved.append(Handle()) or moved[-1]
    handles = shown_controls(view)
    agent.questions.attach_answerer()
    loop = asyncio.get_running_loop()

    def on_question(event: Event) -> None:
        if type(event).__name__ == "Question":
            loop.call_later(0.05, view.stop_button.click)

    agent.bus.subscribe(on_question)
    result = await agent.arun("ask me my name", run_id=run_id)
    agent.questions.detach_answerer()
    view.finish()
    assert result.status == "cancelled" and view.status == "stopped"
    # Stop moved below the question when it was asked: its first output emptied
    assert stop_handle.updates[-1]["text/plain"] == "" and len(moved) == 1
    assert moved[0].updates[-1]["text/plain"].startswith("Stopped · ")
    [static] = next(iter(handles.values())).updates
    assert WIDGET_MIME not in static and static["text/plain"]
    assert view._handle.updates[-1][RUN_MIME]["status"] == "stopped"
    # the person stopped it: it reads so, as no failure
    assert view._handle.updates[-1][RUN_MIME]["stopped_by_person"] is True
    assert ">stopped by you<" in view._handle.updates[-1]["text/html"]
    assert agent.ledger.records()[-1]["kind"] == "run_cancelled"


async def test_widget_outcomes_read_in_order_and_the_approval_shows_the_cards_arguments(
        agent, monkeypatch):
    """Approve, then Stop: the outputs read top to bottom in the order things happened, and
    the approval lists the arguments the card shows (not the tool's filled-in defaults)."""
    run_id = "run_widget_order"
    view = live_view(agent, run_id, stop=lambda: agent.stop(run_id))
    outputs: list[tuple[str, Handle]] = []
    view._stop_handle = Handle()
    outputs.append(("stop", view._stop_handle))

    def display_stop() -> Handle:
        outputs.append(("stop", Handle()))
        return outputs[-1][1]

    view._display_stop = display_stop

    def show(control) -> None:  # each output goes below the last, as in a cell
        control.handle = Handle()
        outputs.append(("question", control.handle))

    from agent_kernel.notebook.widgets import QuestionControl
    monkeypatch.setattr(QuestionControl, "show", show)
    agent.questions.attach_answerer()
    loop = asyncio.get_running_loop()
    seen: dict = {}

    def on_event(event: Event) -> None:
        if type(event).__name__ == "Question" and event.question_id in view.questions:
            control = view.questions[event.question_id]
            seen["control"] = control.text.value
            seen["card"] = render_html(view.transcript)
            loop.call_later(0.05, control.buttons[0].click)  # Approve
        elif type(event).__name__ == "QuestionAnswered":
            loop.call_later(0.5, view.stop_button.click)  # while `sleep 30` runs

    agent.bus.subscribe(on_event)
    result = await agent.arun("run command sleep 30", run_id=run_id)
    agent.questions.detach_answerer()
    view.finish()
    assert view.status == "stopped", result.status
    lines = [h.updates[-1]["text/plain"] for _, h in outputs if h.updates]
    shown = [line for line in lines if line]
    assert len(shown) == 2, lines
    assert shown[0].startswith("bash: Approved · "), shown
    assert shown[1].startswith("Stopped · "), shown
    assert [k for k, _ in outputs][-1] == "stop"
    # the approval's arguments are the card's: the same names, the same values
    control_names = re.findall(r"<th[^>]*>([^<]+)</th>", seen["control"])
    card_names = re.findall(r"<tr><th>([^<]+)</th>", seen["card"])
    assert control_names and control_names == card_names, (control_names, card_names)
    assert "sleep 30" in seen["control"]


async def test_widget_view_approval_sits_in_the_card_it_gates(agent):
    run_id = "run_widget_phase"
    view = live_view(agent, run_id)
    shown_controls(view)
    agent.questions.attach_answerer()
    loop = asyncio.get_running_loop()
    seen: list[dict] = []

    def on_question(event: Event) -> None:
        if type(event).__name__ == "Question":
            state = view.transcript.state()
            [card] = [e for e in state["entries"] if e["kind"] == "tool"]
            seen.append(card)
            control = view.questions[event.question_id]
            assert [b.description for b in control.buttons] == ["Approve", "Deny",
                                                                "Always allow this tool"]
            assert [b.button_style for b in control.buttons] == ["primary", "", ""]
            assert "sleep 1" in control.text.value  # exactly what will run
            loop.call_later(0.05, control.buttons[0].click)

    agent.bus.subscribe(on_question)
    result = await agent.arun("run command sleep 1", run_id=run_id)
    agent.questions.detach_answerer()
    view.finish()
    assert result.ok
    assert seen[0]["state"] == "waiting" and seen[0]["summary"] == "waiting for your approval"
    assert not [e for e in view.transcript.state()["entries"] if e["kind"] == "question"]
    [card] = [e for e in view.transcript.state()["entries"] if e["kind"] == "tool"]
    assert card["state"] == "ok" and card["approval"]["answer"] == "Approve"
    assert re.fullmatch(r"ran `sleep 1` · exit 0 · \d+ ms", card["summary"])
    assert view.status == "done"


def test_widget_view_countdown_from_the_start(agent):
    from agent_kernel.core.events import Question, QuestionAnswered

    view = live_view(agent, "run_countdown")
    view.on_event(Question("run_countdown", "q_1", "Tea or coffee?", ["tea", "coffee"], 30.0,
                           "tea"))
    control = view.questions["q_1"]
    control.handle = Handle()
    view.refresh()
    assert re.fullmatch(r"answer within 0:(29|30) · then: tea", control.countdown.value)
    assert not any(b.disabled for b in control.buttons)
    view.on_event(QuestionAnswered("run_countdown", "q_1", "tea", "default"))
    assert control.settled
    assert control.handle.updates[-1]["text/plain"].startswith("No answer: used the default, tea")
    view.finish()


def test_widget_view_throttles_updates_and_always_sends_the_last(agent):
    view = live_view(agent, "run_throttle")
    for i in range(200):
        view.on_event(TextDelta("run_throttle", f"word{i} "))
    assert len(view._handle.updates) <= 1
    view.finish()
    assert "word199" in view._handle.updates[-1]["text/plain"]
    assert len(view._handle.updates) <= 2


def test_widget_view_says_what_it_loads_then_how_long_it_took(agent):
    from agent_kernel.core.events import Loading

    view = live_view(agent, "run_loading")
    view.on_event(Loading("run_loading", "the model library (first run)"))
    state = view.transcript.state()
    assert state["loading"] == {"what": "the model library (first run)", "seconds": None}
    assert "running · loading the model library (first run)" in mime_bundle(
        view.transcript)["text/html"]
    view.on_event(Loading("run_loading", "the model library (first run)", seconds=1.23))
    text = mime_bundle(view.transcript)["text/plain"]
    assert "loaded the model library (first run) in 1.2 s" in text and "…" not in text
    view.finish()


def test_text_view_says_a_retry_once_and_only_over_text_it_showed() -> None:
    from agent_kernel.core.events import EventBus, Notice, StreamReset

    bus, out = EventBus(), io.StringIO()
    TextView(bus, stream=out)
    why = "server error (503): busy"
    bus.emit(StreamReset("r", reason=why))  # nothing was shown: the notice says it all
    bus.emit(Notice("r", f"Provider problem ({why}); retry 1 in 0.5 s", level="warning"))
    bus.emit(TextDelta("r", "Half an ans"))
    bus.emit(StreamReset("r", reason=why))
    bus.emit(Notice("r", f"Provider problem ({why}); retry 2 in 1.0 s", level="warning"))
    text = out.getvalue()
    assert text.count(why) == 2  # once per retry, in its notice
    assert text.count("[the answer above was cut off; the model is asked again]") == 1
    assert "stream reset" not in text


def test_text_view_holds_team_lines_until_the_answer_ends_its_line() -> None:
    from agent_kernel.core.events import AgentActivity, EventBus, Notice, RunStarted

    bus, out = EventBus(), io.StringIO()
    TextView(bus, stream=out)
    bus.emit(TextDelta("r", "I handed your ask to "))
    bus.emit(AgentActivity("r", agent_id="planner-1", role="planner", task_id="t1",
                           parent_task_id=None, prompt="plan it",
                           inner=RunStarted("p", prompt="plan it", model="demo",
                                            agent_id="planner-1")))
    bus.emit(TextDelta("r", "the Planner.\nWhen they are back I answer."))
    bus.emit(Notice("r", "next", level="info"))
    lines = out.getvalue().splitlines()
    assert lines[:4] == ["I handed your ask to the Planner.",  # each line of it stays whole
                         "When they are back I answer.",
                         "[plan it · Planner] starts: plan it", "[info] next"]


def test_list_tasks_reads_as_lines_and_no_json_is_cut(agent) -> None:
    from agent_kernel.core.events import EventBus, ToolCallFinished
    from agent_kernel.views.text import gist

    bus, out = EventBus(), io.StringIO()
    TextView(bus, stream=out)
    tasks = {"tasks": [{"id": "sch_1", "type": "once", "prompt": "remind me to stretch",
                        "priority": 5, "status": "trigger",
                        "createdAt": "2026-11-26T03:37:47.000Z"}]}
    bus.emit(ToolCallFinished("r", "c1", "list_tasks", {}, tasks, True, None, 4))
    big = {"id": "x" * 40, "content": {"notes": "y" * 400}}
    bus.emit(ToolCallFinished("r", "c2", "get_artifact", {}, big, True, None, 3))
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("[tool] list_tasks ok in 4 ms -> 1 task")
    assert re.fullmatch(r"  remind me to stretch · scheduled · once · since \d\d:\d\d \S+ "
                        r"\(sch_1\)", lines[1]), lines[1]
    assert lines[2].endswith("characters of result (in the ledger)") and "{" not in lines[2]
    said = gist("One whole sentence here. " * 20, 100)
    assert said.startswith("One whole sentence here. One whole sentence here.")
    assert said.split(" … ")[0].endswith(".") and said.endswith("more characters)")


def test_a_team_agents_approval_names_it_by_its_work_not_its_id(agent):
    """Without the extension, the approval's own output says who asks as its nested run
    does ("run command sleep 30 · Worker asks:"), never the agent's id (``worker-3``)."""
    from agent_kernel.core.events import AgentActivity, Question, RunStarted

    view = live_view(agent, "run_team")
    view.on_event(AgentActivity("run_team", agent_id="worker-3", role="worker", task_id="t_1",
                                parent_task_id=None, prompt="run command sleep 30",
                                inner=RunStarted("run_w", prompt="run command sleep 30",
                                                 model="m", agent_id="worker-3"), order=1))
    details = {"tool": "bash", "arguments": {"cmd": "sleep 30"}, "asked_by": "worker-3",
               "asked_by_role": "worker"}
    view.on_event(Question("run_team", "q_w", "Allow `bash`?", ["Approve", "Deny"], 60.0,
                           "Deny", kind="approval", details=details))
    view.on_event(Question("run_team", "q_x", "Which city?", ["Lisbon", "Porto"], 60.0, None,
                           details={"asked_by": "worker-9", "asked_by_role": "worker"}))
    named, unknown = (view.questions[q].text.value for q in ("q_w", "q_x"))
    assert "<b>run command sleep 30 · Worker asks:</b>" in named and "worker-3" not in named
    # not of this run: its work is not known here, so its role alone, never its id
    assert "<b>Worker asks:</b>" in unknown and "worker-9" not in unknown
    view.finish()
