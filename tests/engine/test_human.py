"""ask_user, spec 000's timeout table, pending_question.json, approvals and Stop.

The runtime part runs in-process (the demo model through litellm's real path);
the headless rows also run in real kernels through nbclient, where nobody can
click, so questions must end at once by the table's rules.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from agent_kernel import Agent
from agent_kernel.core.events import Question, QuestionAnswered
from agent_kernel.engine.approvals import ALWAYS, APPROVE, DENY
from agent_kernel.engine.questions import PENDING_FILE


def _agent(tmp_path: Path, **settings: Any) -> Agent:
    agent = Agent(workspace=tmp_path / "ws")
    for key, value in settings.items():
        setattr(agent.settings, key, value)
    return agent


def _answer_from_thread(agent: Agent, pick: Any, delay: float = 0.05) -> list[Question]:
    """Answer every question from another thread (as a widget callback on a subshell does)."""
    seen: list[Question] = []

    def on_event(event: Any) -> None:
        if isinstance(event, Question):
            seen.append(event)
            answer = pick(event)
            if answer is not None:
                threading.Timer(delay, agent.questions.answer,
                                args=(event.question_id, answer)).start()

    agent.bus.subscribe(on_event)
    return seen


def _ask_call(result: Any) -> Any:
    return next(c for c in result.tool_calls if c.tool_name == "ask_user")


async def _ask(agent: Agent, **arguments: Any) -> dict[str, str]:
    """Call the ask_user tool the way the loop does (validation included)."""
    from agent_kernel.engine.registry import ToolContext

    tool = agent.registry.get("ask_user")
    values = tool.validate(arguments)
    ctx = ToolContext(agent=agent, run_id="run_test", agent_id="agent",
                      workspace=agent.workspace)
    return await tool.invoke(values, ctx)


# -- spec 000's timeout table -------------------------------------------------

async def test_user_answer_reaches_the_agent_from_another_thread(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    agent.questions.attach_answerer()
    seen = _answer_from_thread(agent, lambda q: q.options[1])
    result = await agent.arun("ask me to choose between tea or coffee")
    assert seen[0].options == ["tea", "coffee"]
    assert _ask_call(result).result == {"answer": "coffee", "source": "user"}
    assert "You answered **coffee**" in result.reply


async def test_timeout_with_default_uses_the_default(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    agent.questions.attach_answerer()
    started = time.perf_counter()
    reply = await _ask(agent, question="Deploy where?", options=["staging", "production"],
                       timeout=0.3, default="staging")
    assert reply == {"answer": "staging", "source": "default"}
    assert time.perf_counter() - started >= 0.3


async def test_timeout_without_default_ends_as_timeout(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    agent.questions.attach_answerer()
    reply = await _ask(agent, question="Your name?", timeout=0.2)
    assert reply == {"answer": "", "source": "timeout"}


async def test_headless_with_default_answers_at_once(tmp_path: Path) -> None:
    agent = _agent(tmp_path)  # no view attached: nobody can answer
    started = time.perf_counter()
    reply = await _ask(agent, question="Deploy where?", options=["staging", "production"],
                       default="production")
    assert reply == {"answer": "production", "source": "default"}
    assert time.perf_counter() - started < 1.0
    assert not (agent.workspace.root / PENDING_FILE).exists()


async def test_headless_without_default_times_out_at_once(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    started = time.perf_counter()
    reply = await _ask(agent, question="Your name?")
    assert reply == {"answer": "", "source": "timeout"}
    assert time.perf_counter() - started < 1.0


def test_blocking_without_a_click_route_ends_questions_at_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from agent_kernel.notebook import blocking

    monkeypatch.setattr(blocking, "click_route", lambda: (False, "ipykernel 6.29"))
    agent = _agent(tmp_path)
    agent.questions.attach_answerer()

    async def cell() -> Any:  # a cell blocking on the running loop, as %%agent --wait does
        started = time.perf_counter()
        reply = blocking.wait_blocking(
            _ask(agent, question="Pick", options=["a", "b"], default="b", timeout=60))
        return reply, time.perf_counter() - started

    reply, elapsed = asyncio.run(cell())
    assert reply == {"answer": "b", "source": "default"} and elapsed < 5
    assert "clicks cannot reach this blocking cell (ipykernel 6.29)" in capsys.readouterr().err
    assert agent.questions.interactive  # only for the length of the wait


def test_blocking_wait_takes_answers_from_other_threads(tmp_path: Path) -> None:
    from agent_kernel.notebook import blocking

    agent = _agent(tmp_path)
    agent.questions.attach_answerer()
    _answer_from_thread(agent, lambda q: "tea")

    async def cell() -> Any:
        return blocking.wait_blocking(agent.arun("ask me to choose between tea or coffee"))

    result = asyncio.run(cell())
    assert _ask_call(result).result == {"answer": "tea", "source": "user"}


async def test_pending_question_file_has_expiry_and_is_removed(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    agent.questions.attach_answerer()
    snapshot: dict[str, Any] = {}

    def on_event(event: Any) -> None:
        if isinstance(event, Question):
            path = agent.workspace.root / PENDING_FILE
            snapshot.update(json.loads(path.read_text(encoding="utf-8")))
            threading.Timer(0.05, agent.questions.answer,
                            args=(event.question_id, "staging")).start()

    agent.bus.subscribe(on_event)
    reply = await _ask(agent, question="Choose the deploy environment",
                       options=["staging", "production"], timeout=1800, default="staging")
    assert reply == {"answer": "staging", "source": "user"}
    assert snapshot["question"] == "Choose the deploy environment"
    assert snapshot["options"] == ["staging", "production"]
    assert snapshot["timeout"] == 1800 and snapshot["default"] == "staging"
    created = datetime.fromisoformat(snapshot["createdAt"].replace("Z", "+00:00"))
    expires = datetime.fromisoformat(snapshot["expiresAt"].replace("Z", "+00:00"))
    assert (expires - created).total_seconds() == 1800
    assert not (agent.workspace.root / PENDING_FILE).exists()


async def test_pending_file_removed_after_expiry(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    agent.questions.attach_answerer()
    task = asyncio.ensure_future(_ask(agent, question="Still there?", timeout=0.3))
    await asyncio.sleep(0.1)
    assert (agent.workspace.root / PENDING_FILE).exists()
    assert await task == {"answer": "", "source": "timeout"}
    assert not (agent.workspace.root / PENDING_FILE).exists()


async def test_late_or_unknown_answers_are_refused(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    agent.questions.attach_answerer()
    assert agent.questions.answer("q_missing", "x") is False
    events: list[Any] = []
    agent.bus.subscribe(events.append)
    await _ask(agent, question="Quick?", timeout=0.1, default="no")
    asked = next(e for e in events if isinstance(e, Question))
    assert agent.questions.answer(asked.question_id, "yes") is False
    answered = [e for e in events if isinstance(e, QuestionAnswered)]
    assert [(a.answer, a.source) for a in answered] == [("no", "default")]


@pytest.mark.parametrize("arguments, message", [
    ({"question": "   "}, "question must not be blank"),
    ({"question": "Pick", "options": ["a", "a"]}, "options must be distinct"),
    ({"question": "Pick", "options": ["a", ""]}, "options must be non-empty"),
    ({"question": "Pick", "timeout": 0}, "timeout"),
    ({"question": "Pick", "timeout": -5}, "timeout"),
])
async def test_bad_arguments_give_a_clear_error(tmp_path: Path, arguments: dict[str, Any],
                                                message: str) -> None:
    agent = _agent(tmp_path)
    from agent_kernel.engine.registry import ToolArgumentError

    with pytest.raises((ValueError, ToolArgumentError), match=message):
        await _ask(agent, **arguments)


# -- approvals ----------------------------------------------------------------

def _approval_records(agent: Agent) -> list[dict[str, Any]]:
    return [r for r in agent.ledger.records() if r.get("kind") == "approval"]


async def test_approve_runs_the_tool_with_the_exact_arguments_shown(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    agent.questions.attach_answerer()
    seen = _answer_from_thread(agent, lambda q: APPROVE)
    result = await agent.arun("write file notes.txt with hello")
    assert seen[0].kind == "approval"
    assert seen[0].options == [APPROVE, DENY, ALWAYS]
    assert seen[0].details == {"tool": "write_file",
                               "arguments": {"path": "notes.txt", "content": "hello",
                                             "mode": "overwrite"}}
    assert (agent.workspace.root / "files" / "notes.txt").read_text() == "hello"
    assert "I wrote the file `notes.txt`" in result.reply
    [record] = _approval_records(agent)
    assert (record["decision"], record["source"], record["tool_name"]) == (
        "approved", "user", "write_file")


async def test_deny_returns_a_clear_result_and_the_model_goes_on(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    agent.questions.attach_answerer()
    _answer_from_thread(agent, lambda q: DENY)
    result = await agent.arun("write file notes.txt with hello")
    assert result.ok
    [call] = result.tool_calls
    assert not call.success and "the user denied it" in call.error
    assert "did not go through" in result.reply
    assert not (agent.workspace.root / "files" / "notes.txt").exists()
    assert _approval_records(agent)[0]["decision"] == "denied"
    follow_up = await agent.arun("echo still here")
    assert follow_up.ok and "still here" in follow_up.reply


async def test_always_allow_asks_once_per_tool(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    agent.questions.attach_answerer()
    seen = _answer_from_thread(agent, lambda q: ALWAYS)
    await agent.arun("write file a.txt with one")
    await agent.arun("write file b.txt with two")
    assert len([q for q in seen if q.kind == "approval"]) == 1
    records = _approval_records(agent)
    assert [(r["decision"], r["source"]) for r in records] == [
        ("approved", "user"), ("approved", "always")]
    assert (agent.workspace.root / "files" / "b.txt").read_text() == "two"
    await agent.arun("run command echo hi")  # another tool still asks
    assert [q.details["tool"] for q in seen] == ["write_file", "bash"]


@pytest.mark.parametrize("policy, approved", [("deny", False), ("allow", True)])
async def test_headless_policy(tmp_path: Path, policy: str, approved: bool) -> None:
    agent = _agent(tmp_path, headless_approval=policy)
    result = await agent.arun("write file notes.txt with hello")
    [record] = _approval_records(agent)
    assert record["decision"] == ("approved" if approved else "denied")
    assert record["source"] == "policy"
    assert (agent.workspace.root / "files" / "notes.txt").exists() is approved
    if not approved:
        assert "headless policy: deny" in result.tool_calls[0].error


async def test_approval_timeout_denies(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    agent.questions.attach_answerer()
    agent.approvals.timeout = 0.2
    result = await agent.arun("run command echo hi")
    assert "the approval timed out" in result.tool_calls[0].error
    assert _approval_records(agent)[0]["source"] == "default"


# -- Stop ---------------------------------------------------------------------

async def test_stop_cancels_a_running_command_and_the_conversation_goes_on(
        tmp_path: Path) -> None:
    agent = _agent(tmp_path, headless_approval="allow")
    marker = agent.workspace.root / "files" / "finished"
    task = asyncio.ensure_future(agent.arun("run command sleep 3 && touch finished"))
    for _ in range(100):
        await asyncio.sleep(0.05)
        if any(r.get("kind") == "approval" for r in agent.ledger.records()):
            break
    await asyncio.sleep(0.3)
    assert agent.stop() == 1
    result = await task
    assert result.status == "cancelled"
    kinds = [r.get("kind") for r in agent.ledger.records()]
    assert "run_cancelled" in kinds
    bash_record = [r for r in agent.ledger.records() if r.get("tool_name") == "bash"
                   and r.get("kind") != "approval"][-1]
    assert bash_record["success"] is False and "cancelled" in bash_record["error"]
    await asyncio.sleep(3.2)
    assert not marker.exists(), "the command outlived Stop"
    again = await agent.arun("echo after stop")
    assert again.ok and "after stop" in again.reply


async def test_stop_while_a_question_waits_removes_it(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    agent.questions.attach_answerer()
    task = asyncio.ensure_future(agent.arun("ask me my name"))
    for _ in range(100):
        await asyncio.sleep(0.02)
        if agent.questions.pending:
            break
    assert (agent.workspace.root / PENDING_FILE).exists()
    agent.stop()
    result = await task
    assert result.status == "cancelled"
    assert not agent.questions.pending
    assert not (agent.workspace.root / PENDING_FILE).exists()


def test_interrupting_a_blocking_wait_stops_the_run(tmp_path: Path) -> None:
    """The notebook's interrupt button during --wait: the run winds down and says so."""
    from agent_kernel.notebook import blocking

    agent = _agent(tmp_path, headless_approval="allow")
    marker = agent.workspace.root / "files" / "finished"

    async def cell() -> Any:
        loop = asyncio.get_running_loop()
        task = loop.create_task(agent.arun("run command sleep 2 && touch finished"))

        def interrupt() -> None:
            raise KeyboardInterrupt

        loop.call_later(0.8, interrupt)
        with pytest.raises(KeyboardInterrupt):
            blocking.wait_blocking(task)
        return task

    task = asyncio.run(cell())
    assert task.done() and task.result().status == "cancelled"
    assert "run_cancelled" in [r.get("kind") for r in agent.ledger.records()]
    time.sleep(2.0)
    assert not marker.exists()


# -- options limit the reply (spec 000) ---------------------------------------

async def test_an_answer_outside_the_options_is_refused_and_the_question_waits(
        tmp_path: Path) -> None:
    from agent_kernel.engine.questions import AnswerRefused
    from agent_kernel.notebook.frontend import FrontendProbe

    agent = _agent(tmp_path)
    agent.questions.attach_answerer()
    events: list[Any] = []
    agent.bus.subscribe(events.append)
    asking = asyncio.ensure_future(_ask(agent, question="Which environment?",
                                        options=["staging", "production"], timeout=30))
    for _ in range(200):
        if any(isinstance(e, Question) for e in events):
            break
        await asyncio.sleep(0.01)
    asked = next(e for e in events if isinstance(e, Question))
    with pytest.raises(AnswerRefused, match="^Answer with one of the choices: staging, "
                                            "production.$"):
        agent.questions.answer(asked.question_id, "both")

    class Run:  # what the extension's answer reaches (a run's view)
        run_id = asked.run_id

        def answer(self, question_id: str, text: str) -> bool:
            return agent.questions.answer(question_id, text)

    probe = FrontendProbe()
    probe.add_run(Run())  # type: ignore[arg-type]
    refused = probe.handle({"action": "answer", "run_id": asked.run_id,
                            "question_id": asked.question_id, "answer": "dev"})
    assert refused == (False, "Answer with one of the choices: staging, production.")
    assert not asking.done() and asked.question_id in agent.questions.pending
    # an option, in any case and with spaces, is that option
    assert probe.handle({"action": "answer", "run_id": asked.run_id,
                         "question_id": asked.question_id, "answer": " Production "}) == (
        True, "")
    assert await asking == {"answer": "production", "source": "user"}
    # a question without options takes any text
    free = asyncio.ensure_future(_ask(agent, question="Name?", timeout=30))
    for _ in range(200):
        if agent.questions.pending:
            break
        await asyncio.sleep(0.01)
    [waiting] = list(agent.questions.pending)
    assert agent.questions.answer(waiting, "anything at all") is True
    assert await free == {"answer": "anything at all", "source": "user"}
