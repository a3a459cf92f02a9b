"""The extension's fixture run (``labextension/test/fixtures/run.json``) matches the kernel's.

The browser test draws that fixture; these checks keep it the same shape as
``Transcript.state()`` (schema v1) and covering every kind of entry, so the
renderer is tested on what the kernel really saves. The exact shape (types, literals,
which fields are optional) is the JSON Schema generated from the kernel's models:
``tests/views/test_run_schema.py`` validates this fixture against it and holds
``state.ts`` to it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_kernel.core.mime_types import RUN_MIME
from agent_kernel.views.mime import QuestionCard, ToolCard, Transcript

FIXTURE = Path(__file__).resolve().parents[2] / "labextension" / "test" / "fixtures" / "run.json"
STATE_TS = FIXTURE.parents[2] / "src" / "state.ts"


def fixture() -> dict[str, Any]:
    state: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return state


def test_the_mime_type_is_the_one_the_extension_renders() -> None:
    assert f"RUN_MIME = '{RUN_MIME}'" in STATE_TS.read_text(encoding="utf-8")


def test_top_level_keys_match_the_kernel() -> None:
    kernel = Transcript(run_id="run_1", prompt="hello", model="demo").state()
    assert set(fixture()) == set(kernel)
    assert fixture()["version"] == kernel["version"] == 1


def kernel_agent_entry() -> dict[str, Any]:
    """A team agent's nested run as the kernel saves it."""
    from agent_kernel.core.events import AgentActivity, RunStarted

    transcript = Transcript(run_id="run_1", prompt="hello", model="demo")
    transcript.feed(AgentActivity("run_1", agent_id="worker-1", role="worker",
                                  task_id="task_1", parent_task_id=None, prompt="research",
                                  inner=RunStarted("run_2", prompt="research", model="demo",
                                                   agent_id="worker-1")))
    entry: dict[str, Any] = transcript.state()["entries"][0]
    return entry


def test_tool_and_question_entries_match_the_kernel() -> None:
    question = QuestionCard("q_1", "Tea or coffee?", ["tea", "coffee"], "ask", 60.0, "tea")
    tool = ToolCard("call_1", "echo", {"text": "hi"}, result="hi", success=True,
                    duration_ms=1, approval=None)
    entries = fixture()["entries"]
    for entry in entries:
        if entry["kind"] == "tool":
            assert set(entry) == set(tool.state()), entry["call_id"]
            if entry["approval"] is not None:
                assert set(entry["approval"]) == set(question.state())
        elif entry["kind"] == "question":
            assert set(entry) == set(question.state()), entry["question_id"]
        elif entry["kind"] == "agent":
            assert set(entry) == set(kernel_agent_entry()), entry["agent_id"]
        else:
            expected = {"kind", "level", "text"} if entry["kind"] == "notice" else {"kind", "text"}
            assert set(entry) == expected, entry


def test_the_fixture_covers_every_kind() -> None:
    entries = fixture()["entries"]
    assert {e["kind"] for e in entries} == {"text", "tool", "question", "notice", "console",
                                            "error", "agent"}
    [planner] = [e for e in entries if e["kind"] == "agent"]
    assert any(e["kind"] == "agent" for e in planner["entries"])  # a Worker in its Planner
    tools = [e for e in entries if e["kind"] == "tool"]
    assert {t["result_kind"] for t in tools} == {"text", "page", "json", "table", "error"}
    # a failed call whose answer says more (a command's output) keeps it, under its error
    assert any(t["state"] == "failed" and t["result"] and t["error"] for t in tools)
    assert {t["state"] for t in tools} == {"ok", "failed"}  # running/waiting: the browser test
    questions = [e for e in entries if e["kind"] == "question"] + [
        t["approval"] for t in tools if t["approval"]]
    assert {q["source"] for q in questions} == {"user", "default", "timeout", "headless",
                                              "standing"}
    assert {q["approval"] for q in questions} == {True, False}
    assert {e["level"] for e in entries if e["kind"] == "notice"} == {"info", "warning", "error"}
