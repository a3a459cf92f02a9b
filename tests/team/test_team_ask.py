"""The Teller's ``ask_user`` in a team, as spec 000 has it, over litellm's real HTTP path.

The Teller's run ends when it asks (no model call follows the question in that
run); the team puts the question to the person; the answer starts the Teller
again with the ``ask_user`` result turned into ``{answer, source}`` and a
message saying what was answered. The question is kept in the workspace while
it waits, so a process killed meanwhile leaves it; a new ``Team`` takes it back
as data, and the person's answer (``Team.answer`` here; the question put to them
in a notebook, see ``test_team_trust.py``) wakes the Teller on the earlier request.
"""

from __future__ import annotations

import asyncio
import json
import signal
import threading
from typing import Any

import pytest
from scripted_server import Call, Message
from test_team import RoleModel, RoleServer, delegate, first_prompt, last, make_team
from test_team_restore import run_script

from agent_kernel.core.events import Notice, Question
from agent_kernel.core.ledger import Ledger
from agent_kernel.core.workspace import Workspace
from agent_kernel.team.asking import FILE, PendingQuestion, QuestionStore
from agent_kernel.team.roles import PLANNER, TELLER

OPTIONS = ["staging", "production"]


def ask(**more: Any) -> Call:
    return Call("ask_user", json.dumps({"question": "Which environment?", **more}))


def answered(body: dict[str, Any]) -> bool:
    return any(m["role"] == "user" and ("You asked the person" in m["content"]
                                        or "The person answered:" in m["content"])
               for m in body["messages"])


def teller_asks(role: str, body: dict[str, Any]) -> Message:
    """The Teller asks first; once answered it delegates; then it answers from the results."""
    said = last(body)
    if role == TELLER:
        if not answered(body):
            return Message(calls=[ask(options=OPTIONS, default="staging", timeout=600)])
        if said["role"] == "user" and "You asked the person" in said["content"]:
            return Message(calls=[delegate("deploy there")])
        if said["role"] == "user":
            return Message(text="Deployed as you chose.")
        return Message(text="(waiting)")
    if role == PLANNER:
        return Message(text="planned")
    return Message(text="done")


def tool_result_of(body: dict[str, Any], name: str) -> Any:
    calls = {c["id"]: c["function"]["name"] for m in body["messages"]
             if m["role"] == "assistant" for c in m.get("tool_calls") or []}
    return next(json.loads(m["content"]) for m in body["messages"]
                if m["role"] == "tool" and calls.get(m["tool_call_id"]) == name)


async def test_headless_the_run_ends_and_the_default_wakes_the_teller(tmp_path):
    with RoleModel(teller_asks) as server:
        team = make_team(server, tmp_path)
        result = await team.arun("deploy my app")
        tellers = server.by_role(TELLER)
    assert result.ok and result.reply == "Deployed as you chose.", result
    # the asking run made one model call: the next Teller request is the wake, a user message
    assert "You asked the person: Which environment? (options: staging, production)" in (
        last(tellers[1])["content"])
    assert "the default answer is used: staging (source: default)" in last(tellers[1])["content"]
    # the ask_user call's result is spec 000's {answer, source} once answered
    assert tool_result_of(tellers[1], "ask_user") == {"answer": "staging", "source": "default"}
    assert len(result.runs) == 3 and result.runs[0].ended_by == "ask_user"
    assert [t["role"] for t in result.tasks()] == [PLANNER]
    assert not (tmp_path / FILE).exists()
    records = Ledger(tmp_path / "ledger.jsonl").records()
    [record] = [r for r in records if r.get("kind") == "question_answered"]
    assert record["answer"] == "staging" and record["source"] == "default"
    assert record["trace_id"] == result.tree["trace_id"] and record["role"] == TELLER
    assert team.pending_question is None


async def test_a_person_answers_and_the_question_waits_in_the_workspace(tmp_path):
    with RoleModel(teller_asks) as server:
        team = make_team(server, tmp_path)
        seen: list[dict[str, Any]] = []

        def click(event: Any) -> None:
            if isinstance(event, Question):
                seen.append(json.loads((tmp_path / FILE).read_text()))
                asyncio.get_running_loop().call_soon(
                    team.teller.questions.answer, event.question_id, "production")

        team.teller.questions.attach_answerer()
        team.teller.bus.subscribe(click)
        result = await team.arun("deploy my app")
        tellers = server.by_role(TELLER)
    assert result.ok, result
    [saved] = seen
    assert saved["question"] == "Which environment?" and saved["options"] == OPTIONS
    assert saved["default"] == "staging" and saved["timeout"] == 600
    assert saved["prompt"] == "deploy my app" and saved["expiresAt"] > saved["createdAt"]
    assert "The person answered: production" in last(tellers[1])["content"]
    assert tool_result_of(tellers[1], "ask_user") == {"answer": "production", "source": "user"}
    assert not (tmp_path / FILE).exists()


async def test_no_default_ends_as_timeout_and_a_second_question_is_refused(tmp_path):
    def respond(role: str, body: dict[str, Any]) -> Message:
        if role == TELLER and not answered(body):
            return Message(calls=[ask(), ask(question="And the region?")])
        return Message(text="I will go without an answer.")

    with RoleModel(respond) as server:
        team = make_team(server, tmp_path)
        result = await team.arun("deploy")
        wake = server.by_role(TELLER)[1]
    assert result.ok and result.reply == "I will go without an answer."
    assert 'source: timeout, answer: ""' in last(wake)["content"]
    results = [m["content"] for m in wake["messages"] if m["role"] == "tool"]
    assert results[0] == json.dumps({"answer": "", "source": "timeout"})
    assert "A question is already waiting for the person: 'Which environment?'" in results[1]


async def test_stop_while_the_question_waits_forgets_it(tmp_path):
    with RoleModel(teller_asks) as server:
        team = make_team(server, tmp_path)
        team.teller.questions.attach_answerer()
        asked = asyncio.Event()
        team.teller.bus.subscribe(lambda e: asked.set() if isinstance(e, Question) else None)
        running = asyncio.ensure_future(team.arun("deploy my app"))
        await asyncio.wait_for(asked.wait(), 30)
        assert (tmp_path / FILE).exists() and team.pending_question is not None
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
    assert not (tmp_path / FILE).exists() and team.pending_question is None


FIRST = """
import sys
from agent_kernel import Settings
from agent_kernel.team import Team
settings = Settings(api_base=sys.argv[1], api_key="sk-test-0123456789abcdef",
                    retry_base_delay=0.01)
team = Team(model="openai/test-model", workspace=sys.argv[2], settings=settings)
team.teller.questions.attach_answerer()   # a person could answer: the question waits
team.run("deploy my app")
"""

SECOND = """
import json, sys
from agent_kernel import Settings
from agent_kernel.team import Team
settings = Settings(api_base=sys.argv[1], api_key="sk-test-0123456789abcdef",
                    retry_base_delay=0.01)
team = Team(model="openai/test-model", workspace=sys.argv[2], settings=settings)
seen = {"note": team.restore_report.text(), "pending": team.pending_question}
result = team.answer("production")
seen.update(status=result.status, reply=result.reply, pending_after=team.pending_question)
print(json.dumps(seen))
"""


def test_a_question_waiting_when_the_process_dies_is_answered_by_team_answer(tmp_path):
    workspace = tmp_path / "ws"
    question_file = workspace / FILE
    asked_twice = threading.Event()

    def respond(role: str, body: dict[str, Any]) -> Message:
        said = last(body)
        if role != TELLER:
            return Message(text="done")
        if not answered(body):
            return Message(calls=[ask(options=OPTIONS, timeout=3600)])
        asked_twice.set()
        return Message(text=f"Going with it: {said['content'][-80:]}")

    with RoleServer(respond) as server:
        first = run_script(FIRST, server.base_url, workspace)
        try:
            for _ in range(600):
                if question_file.exists() or first.poll() is not None:
                    break
                threading.Event().wait(0.1)
            assert question_file.exists(), first.poll()
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(30)
        second = run_script(SECOND, server.base_url, workspace)
        out, err = second.communicate(timeout=120)
        assert second.returncode == 0, err
        wake = server.by_role(TELLER)[-1]
    seen = json.loads(out.strip().splitlines()[-1])
    assert ("A question from an earlier session was saved in the workspace: “Which "
            "environment?”, asked while working on “deploy my app”") in seen["note"]
    assert seen["pending"]["question"] == "Which environment?"
    assert seen["pending"]["options"] == OPTIONS
    assert seen["pending"]["request"] == "deploy my app"
    assert seen["status"] == "ok" and seen["pending_after"] is None
    text = last(wake)["content"]
    assert "The kernel restarted since a question was asked" in text
    assert json.loads(text.splitlines()[1]) == {
        "earlierRequest": "deploy my app", "question": "Which environment?",
        "options": OPTIONS}
    assert "The person answered: production" in text
    assert not question_file.exists()
    records = Ledger(workspace / "ledger.jsonl").records()
    assert [(r["answer"], r["source"], r["decided_by"]) for r in records
            if r.get("kind") == "question_answered"] == [("production", "user", "team.answer")]


async def test_an_expired_restored_question_ends_by_its_default_and_the_prompt_goes_on(
        tmp_path):
    store = QuestionStore(Workspace(tmp_path))
    old = PendingQuestion.new("Which environment?", OPTIONS, 1, "staging", prompt="deploy")
    old.expiresAt = "2020-01-01T00:00:00Z"
    store.save(old)

    def respond(role: str, body: dict[str, Any]) -> Message:
        return Message(text="ok then")

    with RoleModel(respond) as server:
        team = make_team(server, tmp_path)
        notices: list[str] = []
        team.teller.bus.subscribe(
            lambda e: notices.append(e.text) if isinstance(e, Notice) else None)
        assert team.pending_question is not None
        result = await team.arun("also add a database")
        [request] = server.by_role(TELLER)
    # the Teller that asked is gone: the new one hears the prompt, not the earlier request
    assert first_prompt(request) == "also add a database"
    assert result.ok and team.pending_question is None
    assert ("The earlier session's question “Which environment?” had expired: it ended with "
            "its default answer “staging”.") in notices[-1]
    [record] = [r for r in Ledger(tmp_path / "ledger.jsonl").records()
                if r.get("kind") == "question_answered"]
    assert (record["answer"], record["source"], record["decided_by"]) == (
        "staging", "default", "expired")


async def test_a_damaged_question_file_is_reported_and_dropped(tmp_path):
    (tmp_path / "team").mkdir()
    (tmp_path / FILE).write_text('{"question": "", "timeout": 5}')
    with RoleModel(lambda role, body: Message(text="hi")) as server:
        team = make_team(server, tmp_path)
        assert team.pending_question is None
        assert "pending question could not be read and was dropped" in (
            team.restore_report.text())
        result = await team.arun("hello")
    assert result.ok and not (tmp_path / FILE).exists()


def worker_writes(role: str, body: dict[str, Any]) -> Message:
    said = last(body)
    if role == TELLER:
        if said["role"] == "user" and "has ended" not in said["content"]:
            return Message(calls=[delegate("write the notes")])
        return Message(text="The notes are written." if "has ended" in said["content"]
                       else "(waiting)")
    if role == PLANNER:
        if said["role"] == "user":
            return Message(calls=[delegate("write notes.md")])
        return Message(text="planned")
    if said["role"] == "user":
        return Message(calls=[Call("write_file", json.dumps(
            {"path": "notes.md", "content": "from the Worker"}))])
    return Message(text="written")


async def test_a_workers_approval_goes_to_the_person_naming_the_worker(tmp_path):
    from agent_kernel.team.relay import TellerRelay
    from agent_kernel.views.mime import mime_bundle, transcript_of

    with RoleModel(worker_writes) as server:
        team = make_team(server, tmp_path)
        team.supervisor.settings.headless_approval = "deny"  # only a person can allow it
        relay = TellerRelay(team, "run_shown")
        shown: list[Any] = []
        relay.bus.subscribe(shown.append)

        def click(event: Any) -> None:
            if isinstance(event, Question) and event.kind == "approval":
                asyncio.get_running_loop().call_soon(
                    relay.questions.answer, event.question_id, "Approve")

        relay.bus.subscribe(click)
        team.teller.questions.attach_answerer()
        result = await team.arun("notes please")
        relay.close(result)
    assert result.ok and result.reply == "The notes are written.", result
    assert (tmp_path / "files" / "notes.md").read_text() == "from the Worker"
    [asked] = [e for e in shown if isinstance(e, Question)]
    worker = next(t for t in result.tasks() if t["role"] == "worker")
    assert asked.details["asked_by"] == worker["agent_id"]
    assert asked.details["asked_by_role"] == "worker"
    assert asked.details["task_id"] == worker["id"] and asked.details["tool"] == "write_file"
    approvals = [r for r in Ledger(tmp_path / "ledger.jsonl").records()
                 if r.get("kind") == "approval"]
    assert [(r["source"], r["agent_id"], r["role"], r["task_id"]) for r in approvals] == [
        ("user", worker["agent_id"], "worker", worker["id"])]
    shown_run = transcript_of(shown)
    bundle = mime_bundle(shown_run)

    def walk(entries: list[Any]) -> list[Any]:
        return [x for e in entries for x in [e, *walk(e.get("entries") or [])]]

    everything = walk(shown_run.state()["entries"])
    assert not [e for e in everything if e["kind"] == "question"]  # none outside a card
    [card] = [e for e in everything if e["kind"] == "tool" and e["tool"] == "write_file"]
    assert card["approval"]["answer"] == "Approve" and card["approval"]["source"] == "user"
    [member] = [e for e in everything if e["kind"] == "agent" and e["role"] == "worker"]
    assert card in member["entries"]  # in the Worker's own run, as a single agent's is
    assert bundle["text/html"].count("agent-kernel-answered") == 1  # the answer, once


async def test_without_a_person_a_workers_approval_follows_the_headless_policy(tmp_path):
    with RoleModel(worker_writes) as server:
        team = make_team(server, tmp_path)
        team.supervisor.settings.headless_approval = "deny"
        result = await team.arun("notes please")
    assert result.ok
    assert not (tmp_path / "files" / "notes.md").exists()
    [approval] = [r for r in Ledger(tmp_path / "ledger.jsonl").records()
                  if r.get("kind") == "approval"]
    assert approval["source"] == "policy" and approval["role"] == "worker"


def slow_worker(timeout: float, hang: float) -> Any:
    """The Planner gives a Worker ``timeout`` seconds; the Worker's first model call takes
    ``hang`` seconds, then it writes notes.md (an approval)."""
    import time

    def respond(role: str, body: dict[str, Any]) -> Message:
        said = last(body)
        if role == PLANNER and said["role"] == "user":
            return Message(calls=[delegate("write notes.md", timeout=timeout)])
        if role not in (PLANNER, TELLER) and said["role"] == "user":
            time.sleep(hang)
        return worker_writes(role, body)

    return respond


async def test_a_workers_task_clock_stands_still_while_the_person_decides(tmp_path):
    """A Worker task may take 1.5 s; the person approves its write after 2.5 s: the task
    still ends ok, as a tool call's clock does, waiting for a person is not counted."""
    with RoleModel(slow_worker(timeout=1.5, hang=0.0)) as server:
        team = make_team(server, tmp_path)
        team.supervisor.settings.headless_approval = "deny"

        def click_later(event: Any) -> None:
            if isinstance(event, Question) and event.kind == "approval":
                asyncio.get_running_loop().call_later(
                    2.5, team.teller.questions.answer, event.question_id, "Approve")

        team.teller.bus.subscribe(click_later)
        team.teller.questions.attach_answerer()
        result = await team.arun("notes please")
    worker = next(t for t in result.tasks() if t["role"] == "worker")
    assert (worker["status"], worker["error"]) == ("ok", None), worker
    assert (tmp_path / "files" / "notes.md").read_text() == "from the Worker"


async def test_a_worker_past_its_time_ends_as_timeout(tmp_path):
    with RoleModel(slow_worker(timeout=1.0, hang=3.0)) as server:
        team = make_team(server, tmp_path)
        result = await team.arun("notes please")
    worker = next(t for t in result.tasks() if t["role"] == "worker")
    assert worker["status"] == "timeout", worker
    assert worker["error"].startswith("the task exceeded its 1 s limit")
    assert not (tmp_path / "files" / "notes.md").exists()
