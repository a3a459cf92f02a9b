"""What the person reads is written for the person.

A failed tool call shows a short line in the person's words in the terminal
view and in a saved notebook's output, while the model alone is told how to
carry on. Notebooks and the CLI's help never name a spec.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from scripted_server import Call, Message, ScriptedServer

from agent_kernel import Agent, Settings, Tool
from agent_kernel.__main__ import build_parser
from agent_kernel.core.events import Question
from agent_kernel.engine.approvals import REFUSAL_GUIDANCE
from agent_kernel.views.mime import Transcript, mime_bundle
from agent_kernel.views.text import TextView

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def watch(agent: Agent) -> tuple[io.StringIO, Transcript]:
    """The terminal view's text and the transcript a saved notebook is made from."""
    stream, transcript = io.StringIO(), Transcript()
    TextView(agent.bus, stream=stream)
    agent.bus.subscribe(transcript.feed)
    return stream, transcript


def shown(stream: io.StringIO, transcript: Transcript) -> dict[str, str]:
    bundle = mime_bundle(transcript)
    return {"terminal": stream.getvalue(), "html": html.unescape(bundle["text/html"]),
            "plain": bundle["text/plain"]}


def tool_contents(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if m.get("role") == "tool"]


async def test_a_denied_call_says_so_to_the_person_and_guides_only_the_model(tmp_path):
    agent = Agent(workspace=tmp_path, settings=Settings(headless_approval="deny"))
    stream, transcript = watch(agent)
    result = await agent.arun("write file notes.txt with hello")
    assert [c.tool_name for c in result.tool_calls] == ["write_file"]
    assert not (tmp_path / "files" / "notes.txt").exists()
    summary = "write_file was not run: no one was there to approve it (headless policy: deny)"
    for where, text in shown(stream, transcript).items():
        assert summary in text, where
        assert REFUSAL_GUIDANCE not in text and "carry on" not in text, where
    assert REFUSAL_GUIDANCE not in result.reply and "did not go through" in result.reply
    [told] = tool_contents(agent.messages)
    # write_file answers in spec 004's {ok: false, error}, refusals before it ran included
    assert json.loads(told.split("\n\n", 1)[0]) == {
        "ok": False, "error": "no one could approve it (headless policy: deny)."}
    assert told.endswith(REFUSAL_GUIDANCE)
    # The ledger and the run result keep the fact, without the guidance.
    assert REFUSAL_GUIDANCE not in result.tool_calls[0].error
    assert result.tool_calls[0].summary == summary


async def test_a_person_who_clicks_deny_reads_you_denied_it(tmp_path):
    agent = Agent(workspace=tmp_path)
    agent.questions.attach_answerer()  # as a notebook's buttons do
    stream, transcript = watch(agent)

    def click_deny(event: Any) -> None:
        if isinstance(event, Question) and event.kind == "approval":
            asyncio.get_running_loop().call_soon(
                agent.questions.answer, event.question_id, "Deny")

    agent.bus.subscribe(click_deny)
    await agent.arun("write file notes.txt with hello")
    for where, text in shown(stream, transcript).items():
        assert "You denied write_file" in text, where
        assert REFUSAL_GUIDANCE not in text, where
    [told] = tool_contents(agent.messages)
    assert "the user denied it" in told and told.endswith(REFUSAL_GUIDANCE)


@pytest.fixture
def server():
    with ScriptedServer() as srv:
        yield srv
        assert not srv.hook_errors, srv.hook_errors


async def test_unknown_tools_and_timeouts_read_as_what_happened(server, tmp_path):
    async def slow() -> str:
        """Take far too long."""
        await asyncio.sleep(10)
        return "never"

    agent = Agent(model="openai/test-model", workspace=tmp_path, tools=[Tool(slow)],
                  settings=Settings(api_base=server.base_url, api_key="sk-test-0123456789abcdef",
                                    tool_timeout=0.2, retry_base_delay=0.01))
    stream, transcript = watch(agent)
    server.script(Message(calls=[Call("launch_rocket", '{"target": "moon"}', id="c1"),
                                 Call("slow", "{}", id="c2")]),
                  Message(text="Neither worked."))
    result = await agent.arun("launch and wait")
    assert result.status == "ok", result.error
    for where, text in shown(stream, transcript).items():
        assert "unknown tool 'launch_rocket'" in text, where
        assert "slow timed out after 0.2 s" in text, where
        assert "Available tools" not in text, where
    told = {m["tool_call_id"]: m["content"] for m in server.tool_messages(1)}
    assert told["c1"].startswith("Error: Unknown built-in tool: launch_rocket\n\n")
    assert "Available tools: " in told["c1"] and "slow" in told["c1"]
    assert told["c2"] == "Error: Tool 'slow' execution exceeded 0.2s timeout"


def help_texts(parser: argparse.ArgumentParser) -> list[str]:
    """The help of a parser and of every subcommand (and action) under it."""
    texts = [parser.format_help()]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                texts.extend(help_texts(sub))
    return texts


def test_no_notebook_and_no_cli_help_names_a_spec():
    notebooks = sorted(NOTEBOOKS.glob("*.ipynb"))
    assert len(notebooks) >= 3
    for path in notebooks:
        for cell in json.loads(path.read_text())["cells"]:
            text = json.dumps(cell, ensure_ascii=False).lower()  # source and outputs
            assert "spec 0" not in text and "spec's" not in text, (path.name, cell["source"])
    texts = help_texts(build_parser())
    assert len(texts) >= 5
    for text in texts:
        assert "spec 0" not in text.lower() and "spec's" not in text.lower(), text


def test_the_terminal_names_the_trigger_that_started_a_run() -> None:
    """A run a trigger started says which trigger, by the id the trigger's context carries."""
    from agent_kernel.core.events import EventBus, RunStarted

    bus, stream = EventBus(), io.StringIO()
    TextView(bus, stream=stream)
    bus.emit(RunStarted("run-1", prompt="check the inbox", model="demo", agent_id="agent",
                        trigger={"trigger_id": "morning-mail", "type": "cron"}))
    assert "(trigger morning-mail)" in stream.getvalue()


RAW_ID = re.compile(r"\b(?:task|trg|run|rec)_\w+|\b(?:worker|planner|helper)-\d+|team-desk")
TYPED = re.compile(r" — to (stop|cancel) it: %agent_team \1 (?:task|trg)_\w+$")


def test_the_team_board_reads_in_words_its_ids_only_in_the_magic_to_type() -> None:
    """Every line of the text board leads with the work and the role; a task's or trigger's id
    shows only at the end of a live row, in the ``%agent_team`` line a person types. The HTML
    says the same with the ids in tooltips and data attributes."""
    from agent_kernel.notebook.board import done_line, not_done_line
    from agent_kernel.views.board import board_html, board_text, someone

    when = "2026-11-26T09:00:00+00:00"
    task = {"id": "task_20261126_090000_aaaa", "role": "worker", "type": "oneshot",
            "priority": 5, "status": "queued", "prompt": "compare two cities",
            "created": when, "by": "planner-1", "agent": None, "started": None}
    state = {
        "as_of": when, "dashboard": None,
        "outcomes": [done_line("stop", "run command sleep 30 (a Worker)", "running")
                     + " · 09:00:01 UTC"],
        "running": [{**task, "id": "task_20261126_090000_bbbb", "status": "running",
                     "prompt": "run command sleep 30", "agent": "worker-6", "started": when,
                     "waiting": "waiting for your approval", "where": None}],
        "queues": {"planner": [], "worker": [task],
                   "held": [{**task, "id": "task_20261126_090000_cccc", "status": "held"}]},
        "triggers": [{"id": "trg_20261126_090000_dddd", "type": "recurring",
                      "schedule": "every 10 min", "prompt": "check the build",
                      "status": "active", "priority": 5, "task_id": None, "created": when}],
        "agents": [{"id": "teller", "role": "teller", "task": "", "task_id": None},
                   {"id": "worker-6", "role": "worker", "task": "run command sleep 30",
                    "task_id": "task_20261126_090000_bbbb"},
                   {"id": "helper-2", "role": "Helper", "task": "spawned by a Planner",
                    "task_id": "task_20261126_090000_eeee"},
                   {"id": "team-desk", "role": "trigger desk", "task": "holds 1 trigger(s)",
                    "task_id": None}],
        "roles": [{"name": "Worker", "builtin": True, "createdBy": "system", "createdAt": "",
                   "tools": ["bash"]},
                  {"name": "Fact checker", "builtin": False, "createdBy": "planner-1",
                   "createdAt": when, "tools": ["echo"]}],
        "messages": [{"from": "worker-6", "to": "teller", "text": "half done", "at": when}],
        "artifacts": [{"ref": "artifact:61c4aa75", "type": "document",
                       "createdBy": "worker-6", "createdAt": when}],
        "artifact_count": 1, "ended": {"ok": 2},
        "limits": {"max_workers": 4, "max_planners": 1}}
    text = board_text(state)
    typed = 0
    for line in text.splitlines():
        hint = TYPED.search(line)
        typed += hint is not None
        assert not RAW_ID.search(line[:hint.start()] if hint else line), line
    assert typed == 4  # the running task, the queued and the held one, the trigger
    assert "Stopped: run command sleep 30 (a Worker) · 09:00:01 UTC" in text
    assert re.search(r"\n  run command sleep 30 · Worker \(priority 5, started [^,]+, waiting "
                     r"for your approval\) — to stop it: %agent_team stop "
                     r"task_20261126_090000_bbbb\n", text), text
    assert "  compare two cities · Worker (priority 5, held, from a Planner)" in text
    assert ("Agents: Teller; run command sleep 30 · Worker; Helper (spawned by a Planner); "
            "Trigger desk (holds 1 trigger(s))") in text
    assert "Message from Worker to Teller: half done" in text
    assert "Fact checker (made by a Planner)" in text
    page = board_html(state)
    visible = html.unescape(re.sub(r"<[^>]+>", " ", re.sub(
        r"<style>.*?</style>|title='[^']*'|data-[\w-]+='[^']*'", "", page, flags=re.S)))
    assert not RAW_ID.search(visible), RAW_ID.findall(visible)
    assert "title='worker-6'>Worker</td>" in page and "title='planner-1'>Planner" in page
    agents_table = page[page.index("Agents · 4"):]
    assert ("title='worker-6'>Worker</td><td style='text-align:left' class='ak-prompt'>"
            "run command sleep 30</td>") in agents_table  # the role, then its work: once
    assert [someone(x) for x in ("worker-6", "teller", "team-desk", "Analyst", "?")] == [
        "a Worker", "the Teller", "the Trigger desk", "an Analyst", "someone"]
    assert not_done_line("cancel", "task_x", ("job A (a Worker)", "running")) == (
        "Nothing to cancel: job A (a Worker) is running; to stop it: %agent_team stop task_x")
    assert not_done_line("stop", "task_x", ("job A (a Worker)", "ok")) == (
        "Nothing to stop: job A (a Worker) has already ended")
