"""A run always returns: hostile arguments and results, a broken ledger, a stuck sync tool.

Each test drives a real run with scripted model answers (a ScriptedModel, in-process;
the last one in a child process of its own) and checks three things a person would
notice: the run returns (no exception), the model is told what happened in a tool
result, and the conversation stays one a provider accepts (every tool call of the
assistant has its answer in the next request).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from scripted_model import ScriptedModel
from scripted_server import Call, Message

from agent_kernel import Agent, Settings, Tool
from agent_kernel.core.ledger import LEDGER_FILE, LIMITS


@pytest.fixture
def scripted():
    """The model: a script of answers, in-process."""
    with ScriptedModel() as model:
        yield model


def make_agent(scripted: ScriptedModel, workspace: Path, tools: list[Any] | None = None,
               **settings: Any) -> Agent:
    settings.setdefault("retry_base_delay", 0.01)
    return Agent(model=scripted, workspace=workspace, tools=[Tool(t) for t in tools or []],
                 settings=Settings(api_key="sk-x", **settings))


def assert_every_call_answered(request: dict[str, Any]) -> None:
    """What an OpenAI-style provider insists on: each tool_call id has a tool message."""
    asked, answered = [], []
    for message in request["messages"]:
        for call in message.get("tool_calls") or []:
            asked.append(call["id"])
        if message.get("role") == "tool":
            answered.append(message["tool_call_id"])
            json.dumps(message["content"], ensure_ascii=False).encode("utf-8")
    assert sorted(asked) == sorted(answered)


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def keep(data: Any) -> str:
    """Take any JSON value and say how long its text is.

    Args:
        data: Anything.
    """
    return str(len(repr(data)))


@pytest.mark.parametrize("arguments", [
    '{"data": ' + nested(900) + "}",
    '{"data": ' + nested(1000) + "}",
    '{"data": ' + nested(5000) + "}",
    '{"data": "\\ud800 lone surrogate"}',
    '{"data": ' + "9" * 5000 + "}",
    '{"data": {"\\udfff": [1, 2, {"k": "\\ud83d"}]}}',
], ids=["900-deep", "1000-deep", "5000-deep", "lone-surrogate", "5000-digit-int", "surrogate-keys"])
async def test_hostile_arguments_end_as_a_result(scripted, tmp_path, arguments):
    scripted.script(Message(calls=[Call("keep", arguments)]), Message(text="carried on"))
    agent = make_agent(scripted, tmp_path, [keep])
    result = await agent.arun("go")
    assert result.ok and result.reply == "carried on"
    assert len(result.tool_calls) == 1
    assert_every_call_answered(scripted.requests[1])
    assert agent.ledger.verify().ok
    kinds = [r["kind"] for r in agent.ledger.records()]
    assert kinds.count("tool_call") == 1


class Loop:
    def __init__(self) -> None:
        self.me = self

    def __repr__(self) -> str:
        return "Loop(...)"


def odd_results() -> dict[str, Any]:
    circular: dict[str, Any] = {"name": "circle"}
    circular["self"] = circular
    return {
        "circular": circular,
        "tuple_keys": {("a", 1): "x", (2, 3): {4, 5}},
        "set": {"b", "a"},
        "bytes": b"\xff\xfe raw bytes",
        "object": Loop(),
        "huge": 10 ** 5000,
        "surrogate": "bad \ud800 text",
        "nan": float("nan"),
    }


@pytest.mark.parametrize("name", list(odd_results()))
async def test_odd_results_reach_the_model_and_the_ledger(scripted, tmp_path, name):
    def odd() -> Any:
        """Return something awkward."""
        return odd_results()[name]

    scripted.script(Message(calls=[Call("odd", "{}")]), Message(text="fine"))
    agent = make_agent(scripted, tmp_path, [odd])
    result = await agent.arun("go")
    assert result.ok, result.error
    assert result.tool_calls[0].success
    assert_every_call_answered(scripted.requests[1])
    content = scripted.tool_messages(1)[0]["content"]
    assert content and "\ud800" not in content
    record = next(r for r in agent.ledger.records() if r["kind"] == "tool_call")
    assert record["success"] is True
    assert agent.ledger.verify().ok


async def test_a_ledger_that_cannot_write_ends_the_run_cleanly(scripted, tmp_path):
    scripted.script(Message(calls=[Call("echo", '{"value": "a"}'), Call("echo", '{"value": "b"}')]),
                  Message(text="never reached"))
    agent = make_agent(scripted, tmp_path)
    (tmp_path / LEDGER_FILE).mkdir()  # every append now fails with an OSError
    result = await agent.arun("go")
    assert result.status == "error"
    assert "ledger could not record" in (result.error or "")
    # The conversation is still valid: the next run's request answers both calls.
    (tmp_path / LEDGER_FILE).rmdir()
    scripted.script(Message(text="back"))
    again = await agent.arun("and now?")
    assert again.ok and again.reply == "back"
    assert_every_call_answered(scripted.requests[-1])


async def test_a_huge_result_is_cut_for_the_model_and_bounded_in_the_ledger(scripted, tmp_path):
    big = "x" * (10 * 1024 * 1024)

    def huge() -> str:
        """Return ten megabytes."""
        return big

    scripted.script(Message(calls=[Call("huge", "{}")]), Message(text="ok"))
    agent = make_agent(scripted, tmp_path, [huge])
    result = await agent.arun("p" * (1024 * 1024))
    assert result.ok
    content = scripted.tool_messages(1)[0]["content"]
    assert len(content) < 101_000 and "truncated" in content
    record = next(r for r in agent.ledger.records() if r["kind"] == "tool_call")
    whole = json.dumps(big).encode()  # the whole result's length and hash are on record
    assert record["blobs"]["result"]["bytes"] == len(whole)
    assert record["blobs"]["result"]["sha256"] == hashlib.sha256(whole).hexdigest()
    assert record["blobs"]["result"]["blob_bytes"] == LIMITS.blob_bytes  # the copy is cut
    assert agent.ledger.path.stat().st_size < LIMITS.line_bytes * 4 and agent.ledger.verify()


def test_a_sync_tool_that_ignores_its_timeout_does_not_hold_the_run(scripted, tmp_path):
    def stuck() -> str:
        """Sleep far past the timeout."""
        time.sleep(60)
        return "too late"

    scripted.script(Message(calls=[Call("stuck", "{}")]), Message(text="moved on"))
    agent = make_agent(scripted, tmp_path, [stuck], tool_timeout=1.0)
    started = time.monotonic()
    result = agent.run("go")  # asyncio.run: its shutdown must not wait for the thread
    assert time.monotonic() - started < 30
    assert result.ok and result.reply == "moved on"
    error = result.tool_calls[0].error or ""
    assert "exceeded 1s timeout" in error and "still running" in error


def test_a_process_exits_while_a_stuck_tool_thread_sleeps(scripted, tmp_path):
    script = textwrap.dedent(f"""
        import time
        from agent_kernel import Agent, Settings, Tool
        from agent_kernel.engine.models import FunctionModel, ModelTurn, call

        def stuck() -> str:
            \"\"\"Sleep.\"\"\"
            time.sleep(120)
            return "late"

        answers = [ModelTurn(tool_calls=[call("stuck")]), ModelTurn(text="finished")]
        model = FunctionModel(lambda request: answers.pop(0))
        agent = Agent(model=model, workspace={str(tmp_path)!r}, tools=[Tool(stuck)],
                      settings=Settings(tool_timeout=1.0))
        print(agent.run("go").reply, flush=True)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=90, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert "finished" in done.stdout
