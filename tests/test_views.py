"""The views on real event streams: demo runs through litellm, as text, HTML and widgets."""

from __future__ import annotations

import asyncio
import io
import re
from html.parser import HTMLParser

import pytest

from agent_kernel import Agent
from agent_kernel.events import Event, TextDelta
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
    assert "[provider] The model provider failed" in text
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
    assert set(bundle) == {"text/html", "text/plain"}
    html = bundle["text/html"]
    # model and tool text is escaped, never markup
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; more" in html
    checker = _Checker()
    checker.feed(html)
    assert "b" in checker.tags  # our own labels
    assert html.count("<b>bold</b>") == 0
    assert "<details class='ak-tool'>" in html and card.record_id in html
    assert "offline demo model" in html
    assert "echo" in bundle["text/plain"] and card.record_id in bundle["text/plain"]


def test_mime_renders_markdown_and_escapes_raw_html(agent):
    _result, events = run_collecting(agent, "what can you do?")
    events.append(TextDelta(events[0].run_id, "\n\n<script>alert(1)</script>\n\nsay **strong**"))
    html = render_html(transcript_of(events))
    assert "<code>echo</code>" in html  # Markdown backticks became code
    assert "<strong>strong</strong>" in html
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_mime_shows_question_answer_and_error(agent, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # fails before any request
    _r, events = run_collecting(agent, "ask me to choose between tea or coffee")
    t = transcript_of(events)
    q = next(iter(t.questions.values()))
    assert q.options == ["tea", "coffee"] and q.source == "timeout"
    html = render_html(t)
    assert "Which do you choose: tea, coffee?" in html and "No answer (timeout)" in html
    _r, events = run_collecting(agent, "hi", model="openai/model-x")
    t = transcript_of(events)
    assert t.status == "error"
    assert "Error:" in render_html(t) and "openai/model-x" in render_html(t)


async def test_widget_view_click_answers_the_waiting_run(agent):
    from agent_kernel.views.widgets import WidgetView

    run_id = "run_widget_test"
    view = WidgetView(agent, run_id, stop=lambda: agent.stop(run_id))
    view.interactive = True
    agent.questions.attach_answerer()
    loop = asyncio.get_running_loop()

    def click_tea(event: Event) -> None:
        if type(event).__name__ == "Question":
            box = view.questions[event.question_id]
            tea = next(b for b in box.buttons if b.description == "tea")
            loop.call_later(0.05, tea.click)

    agent.bus.subscribe(click_tea)
    result = await agent.arun("ask me to choose between tea or coffee", run_id=run_id)
    agent.questions.detach_answerer()
    view.finish()
    assert result.ok and "You answered **tea**" in result.reply
    box = next(iter(view.questions.values()))
    assert box.answered.value == "Answered: tea (user)"
    assert "agent-kernel-answered" in box.answered._dom_classes
    assert all(b.disabled for b in box.buttons)
    assert all("agent-kernel-option" in b._dom_classes for b in box.buttons)
    assert view.status.value == "done" and "agent-kernel-status" in view.status._dom_classes
    assert "You answered <strong>tea</strong>" in view.reply.value
    assert view.stop_button.disabled
    assert "Answered: tea (user)" in view.bundle()["text/html"]


async def test_widget_view_free_text_and_stop(agent):
    from agent_kernel.views.widgets import WidgetView

    run_id = "run_widget_text"
    view = WidgetView(agent, run_id, stop=lambda: agent.stop(run_id))
    view.interactive = True
    agent.questions.attach_answerer()
    loop = asyncio.get_running_loop()
    seen: list[str] = []

    def on_question(event: Event) -> None:
        if type(event).__name__ == "Question":
            box = view.questions[event.question_id]
            assert box.entry is not None and "agent-kernel-answer-text" in box.entry._dom_classes
            seen.append(box.buttons[0].description)
            loop.call_later(0.05, view.stop_button.click)

    agent.bus.subscribe(on_question)
    result = await agent.arun("ask me my name", run_id=run_id)
    agent.questions.detach_answerer()
    view.finish()
    assert seen == ["Send"]
    assert result.status == "cancelled"
    assert view.status.value == "stopped"
    assert agent.ledger.records()[-1]["kind"] == "run_cancelled"


async def test_widget_view_phase_follows_approval_then_tool(agent):
    from agent_kernel.views.widgets import WidgetView

    run_id = "run_widget_phase"
    view = WidgetView(agent, run_id)
    view.interactive = True
    agent.questions.attach_answerer()
    loop = asyncio.get_running_loop()
    phases: list[str] = []

    def on_question(event: Event) -> None:
        if type(event).__name__ == "Question":
            phases.append(view.current_phase())
            box = view.questions[event.question_id]
            assert [b.description for b in box.buttons] == ["Approve", "Deny",
                                                            "Always allow this tool"]
            assert all("agent-kernel-approval" in b._dom_classes for b in box.buttons)
            assert "sleep 1" in box.text.value  # the exact arguments are shown
            loop.call_later(0.05, box.buttons[0].click)
            loop.call_later(0.6, lambda: phases.append(view.current_phase()))

    agent.bus.subscribe(on_question)
    result = await agent.arun("run command sleep 1", run_id=run_id)
    agent.questions.detach_answerer()
    view.finish()
    assert result.ok
    assert phases == ["waiting for your answer", "running bash"]
    assert view.status.value == "done"


def test_widget_view_countdown_near_the_timeout(agent):
    from agent_kernel.events import Question, QuestionAnswered
    from agent_kernel.views.widgets import WidgetView

    view = WidgetView(agent, "run_countdown")
    view.interactive = True
    view.on_event(Question("run_countdown", "q_1", "Tea or coffee?", ["tea", "coffee"], 30.0,
                           "tea"))
    box = view.questions["q_1"]
    view.refresh()
    assert re.fullmatch(r"(29|30) s left to answer; then: tea", box.countdown.value)
    assert box.countdown.layout.display is None
    assert not any(b.disabled for b in box.buttons)
    view.on_event(QuestionAnswered("run_countdown", "q_1", "tea", "default"))
    assert box.countdown.value == "" and all(b.disabled for b in box.buttons)
    assert box.answered.value == "Answered: tea (default)"
    far = Question("run_countdown", "q_2", "Name?", None, 3600.0, None)
    view.on_event(far)
    view.refresh()
    assert view.questions["q_2"].countdown.value == ""  # no countdown an hour before
    view.finish()


def test_widget_view_says_what_it_loads_then_how_long_it_took(agent):
    from agent_kernel.events import Loading
    from agent_kernel.views.widgets import WidgetView

    view = WidgetView(agent, "run_loading")
    view.on_event(Loading("run_loading", "the model library (first run)"))
    assert view.status.value.endswith(" loading the model library (first run)…")
    lines = [c.value for c in view.activity.children]
    assert lines == ["<i>loading the model library (first run)…</i>"]
    view.on_event(Loading("run_loading", "the model library (first run)", seconds=1.23))
    lines = [c.value for c in view.activity.children]
    assert lines == ["<i>loaded the model library (first run) in 1.2 s</i>"]  # in its place
    text = mime_bundle(view.transcript)["text/plain"]
    assert "loaded the model library (first run) in 1.2 s" in text and "…" not in text
    view.finish()
