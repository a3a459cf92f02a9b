"""The offline ``demo`` model: served in-process, no litellm, the same turns as any model."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

import agent_kernel
from agent_kernel import Agent, Settings, llm
from agent_kernel.events import ModelCallStarted, TextDelta
from agent_kernel.tools.core import STATE_PROVIDERS


def calls(result: Any) -> list[tuple[str, Any]]:
    return [(c.tool_name, c.arguments) for c in result.tool_calls]


def model_calls(agent: Agent) -> list[Any]:
    seen: list[Any] = []
    agent.bus.subscribe(lambda e: seen.append(e) if isinstance(e, ModelCallStarted) else None)
    return seen


def test_a_demo_run_never_imports_litellm(tmp_path):
    """The demo answers in-process: a fresh process runs a tool call and an answer
    without litellm (seconds and ~190 MiB) ever being imported."""
    code = ("import json, sys\nfrom agent_kernel import Agent\n"
            "result = Agent(workspace=sys.argv[1]).run('echo hello')\n"
            "print(json.dumps({'reply': result.reply, 'heavy': [m for m in "
            "('litellm', 'ipywidgets') if m in sys.modules]}))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                         text=True, timeout=120, check=True)
    seen = json.loads(out.stdout.splitlines()[-1])
    assert seen == {"reply": "(offline demo model) The echo tool returned: hello", "heavy": []}


async def test_demo_turn_has_ids_usage_and_no_cost():
    messages = [{"role": "user", "content": "echo one and echo two"}]
    tools = [{"type": "function", "function": {"name": "echo", "parameters": {}}}]
    streamed: list[str] = []
    turn = await llm.complete("demo", messages, tools, Settings(), on_text=streamed.append,
                              on_retry=lambda *_: None)
    assert [(c.name, json.loads(c.arguments)) for c in turn.tool_calls] == [
        ("echo", {"value": "one"}), ("echo", {"value": "two"})]
    ids = [c.id for c in turn.tool_calls]
    assert len(set(ids)) == 2 and all(i.startswith("call_demo_") for i in ids)
    assert turn.finish_reason == "tool_calls" and turn.cost == 0.0
    assert turn.usage == {"prompt_tokens": 5, "completion_tokens": 0, "total_tokens": 5}
    results = [{"role": "tool", "tool_call_id": i, "content": v}
               for i, v in zip(ids, ("one", "two"), strict=True)]
    answer = await llm.complete("demo", [*messages, turn.as_message(), *results], tools,
                                Settings(), on_text=streamed.append, on_retry=lambda *_: None)
    assert answer.finish_reason == "stop" and not answer.tool_calls
    assert len(streamed) > 3 and "".join(streamed) == answer.text  # word by word
    assert "one" in answer.text and "two" in answer.text
    assert answer.usage["completion_tokens"] == len(answer.text.split())


async def test_says_it_is_the_offline_demo_model(tmp_path):
    agent = Agent(workspace=tmp_path)
    deltas: list[str] = []
    agent.bus.subscribe(lambda e: deltas.append(e.text) if isinstance(e, TextDelta) else None)
    result = await agent.arun("what can you do?")
    assert result.ok and result.model == "demo" and result.tool_calls == []
    assert result.reply.startswith("(offline demo model) I am the offline demo model")
    for name in ("`echo`", "`log_decision`", "`query_state`"):
        assert name in result.reply
    assert len(deltas) > 3 and "".join(deltas) == result.reply  # it streamed
    assert result.usage["completion_tokens"] > 0 and result.cost == 0.0


async def test_unmatched_prompt_is_answered_plainly(tmp_path):
    result = await Agent(workspace=tmp_path).arun("compose a sonnet about tides")
    assert result.ok and result.tool_calls == []
    assert "offline demo model" in result.reply
    assert "compose a sonnet about tides" in result.reply


async def test_echo(tmp_path):
    agent = Agent(workspace=tmp_path)
    result = await agent.arun("echo hello world")
    assert calls(result) == [("echo", {"value": "hello world"})]
    assert result.tool_calls[0].result == "hello world"
    assert result.reply == "(offline demo model) The echo tool returned: hello world"


async def test_two_echos_in_one_response(tmp_path):
    agent = Agent(workspace=tmp_path)
    seen = model_calls(agent)
    result = await agent.arun("echo first and echo second")
    assert calls(result) == [("echo", {"value": "first"}), ("echo", {"value": "second"})]
    assert len(seen) == 2  # one response with both calls, one answer
    assert "first" in result.reply and "second" in result.reply


async def test_log_decision(tmp_path):
    agent = Agent(workspace=tmp_path)
    result = await agent.arun("log decision: wait for the report")
    assert calls(result) == [("log_decision", {"reasoning": "wait for the report",
                                               "decision_type": "other"})]
    assert result.tool_calls[0].success
    assert "decision_id" in result.reply


@pytest.fixture
def weather_state():
    agent_kernel.state("weather")(lambda: {"sky": "clear"})
    yield
    STATE_PROVIDERS.pop("weather", None)


async def test_query_state(tmp_path, weather_state):
    agent = Agent(workspace=tmp_path)
    result = await agent.arun("check the weather state")
    assert calls(result) == [("query_state", {"state_name": "weather"})]
    assert result.tool_calls[0].result == {"sky": "clear"}
    assert '"sky": "clear"' in result.reply
    missing = await agent.arun("query_state tides")
    assert missing.tool_calls[0].error == ("Tool 'query_state' execution failed: "
                                           "No state provider registered for 'tides'")
    assert "did not go through" in missing.reply


async def test_only_offered_tools_are_called(tmp_path):
    agent = Agent(workspace=tmp_path)
    agent.registry.remove("echo")
    result = await agent.arun("echo hello")
    assert result.tool_calls == [] and "offline demo model" in result.reply


async def test_non_streaming_path(tmp_path):
    agent = Agent(workspace=tmp_path, settings=Settings(stream=False))
    result = await agent.arun("echo steady")
    assert calls(result) == [("echo", {"value": "steady"})] and "steady" in result.reply


async def test_deterministic(tmp_path):
    prompts = ["what can you do?", "echo a and echo b", "log decision: hold",
               "something else entirely"]

    async def transcript(folder: str) -> list[tuple[str, list[tuple[str, Any]]]]:
        agent = Agent(workspace=tmp_path / folder)
        out = []
        for prompt in prompts:
            result = await agent.arun(prompt)
            reply = result.reply
            for call in result.tool_calls:  # ids and timestamps differ by design
                if isinstance(call.result, dict):
                    for value in call.result.values():
                        reply = reply.replace(str(value), "<id>")
            out.append((reply, calls(result)))
        return out

    assert await transcript("one") == await transcript("two")


def test_the_demo_model_calls_the_persons_own_tools(tmp_path):
    from agent_kernel import Agent, tool

    @tool(register=False)
    def add(a: int, b: int) -> int:
        """Add two numbers.

        Args:
            a: The first number.
            b: The second number.
        """
        return a + b

    @tool(register=False)
    def greet(name: str, shout: bool = False) -> str:
        """Greet someone.

        Args:
            name: Who.
            shout: Loudly.
        """
        return f"Hello, {name}!".upper() if shout else f"Hello, {name}!"

    agent = Agent(model="demo", workspace=tmp_path, tools=[add, greet])
    result = agent.run("add 2 and 3")
    assert [(c.tool_name, c.arguments, c.result) for c in result.tool_calls] == [
        ("add", {"a": 2, "b": 3}, 5)]
    assert "`add` returned 5" in result.reply
    result = agent.run("please use greet for 'Ada Lovelace'")
    assert result.tool_calls[0].arguments == {"name": "Ada Lovelace"}
    assert "Hello, Ada Lovelace!" in result.reply
    assert agent.run("add 2").tool_calls == []  # b cannot be read: no call, the help instead
    assert "add 2 and 3" in agent.run("what can you do?").reply


def test_a_fired_reminder_says_what_to_do() -> None:
    """A saved reminder's prompt, when it fires, gets the reminder back, not a shrug."""
    from agent_kernel import demo

    schedule = [{"type": "function", "function": {"name": "schedule", "parameters": {}}}]
    fired = demo.respond([{"role": "user", "content": "remind me to stretch"}], schedule)
    assert fired.text.endswith("Reminder: stretch.") and not fired.tool_calls
    made = demo.respond([{"role": "user", "content": "remind me every 2 minutes to stretch"}],
                        schedule)
    assert [name for name, _ in made.tool_calls] == ["schedule"]
