"""The Python API: ``Agent.run`` with and without a running loop, ``arun``, results, stop()."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from scripted_server import Call, Message, ScriptedServer

from agent_kernel import Agent, RunResult, Settings, Tool, ToolCallRecord
from agent_kernel.core.events import ModelCallStarted, RunError, RunFinished, ToolCallStarted

SCRIPT = textwrap.dedent("""
    import asyncio, json, sys
    from agent_kernel import Agent

    def summary(result):
        return {"status": result.status, "reply": result.reply, "run_id": result.run_id,
                "tools": [[c.tool_name, c.arguments, c.result] for c in result.tool_calls]}

    agent = Agent(model="demo", workspace=sys.argv[1])
    out = {"plain": summary(agent.run("echo from a script"))}

    async def main():
        loop = asyncio.get_running_loop()
        nested = agent.run("echo from inside a loop")  # a loop is running: nests
        awaited = await agent.arun("echo awaited")
        return loop, nested, awaited

    loop, nested, awaited = asyncio.run(main())
    out["nested"], out["awaited"] = summary(nested), summary(awaited)
    out["loop_closed"] = loop.is_closed()
    out["messages"] = [m["content"] for m in agent.messages if m["role"] == "user"]
    print(json.dumps(out))
""")


@pytest.mark.timeout(120)
def test_run_in_a_plain_script_and_inside_a_running_loop(tmp_path):
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True,
                          text=True, timeout=110)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["plain"]["status"] == "ok"
    assert out["plain"]["tools"] == [["echo", {"value": "from a script"},
                                      "from a script"]]
    assert out["nested"]["tools"] == [["echo", {"value": "from inside a loop"},
                                       "from inside a loop"]]
    assert out["awaited"]["reply"].endswith("The echo tool returned: awaited")
    assert len({out[k]["run_id"] for k in ("plain", "nested", "awaited")}) == 3
    # one conversation across all three runs
    assert out["messages"] == ["echo from a script", "echo from inside a loop", "echo awaited"]
    assert out["loop_closed"] is True


async def test_result_fields(tmp_path):
    agent = Agent(workspace=tmp_path)
    finished: list[Any] = []
    agent.bus.subscribe(lambda e: finished.append(e) if isinstance(e, RunFinished) else None)
    result = await agent.arun("echo fields")
    assert isinstance(result, RunResult) and result.ok and result.status == "ok"
    assert result.run_id.startswith("run_") and result.model == "demo"
    assert result.reply == "(offline demo model) The echo tool returned: fields"
    assert str(result) == result.reply and result.error is None
    [call] = result.tool_calls
    assert isinstance(call, ToolCallRecord)
    assert (call.tool_name, call.arguments, call.result, call.success, call.error) == (
        "echo", {"value": "fields"}, "fields", True, None)
    assert call.call_id and call.duration_ms >= 0
    assert set(result.usage) == {"prompt_tokens", "completion_tokens", "total_tokens"}
    assert result.usage["total_tokens"] == (result.usage["prompt_tokens"]
                                            + result.usage["completion_tokens"]) > 0
    assert result.duration_ms >= 0
    assert [e.result for e in finished] == [result]
    assert agent.running == []


async def test_given_run_id_is_used(tmp_path):
    result = await Agent(workspace=tmp_path).arun("echo x", run_id="run_custom_1")
    assert result.run_id == "run_custom_1"
    assert Agent(workspace=tmp_path).ledger.records()[0]["run_id"] == "run_custom_1"


async def test_conversation_continues_and_new_starts_fresh(tmp_path):
    agent = Agent(workspace=tmp_path)
    await agent.arun("echo one")
    await agent.arun("echo two")
    users = [m["content"] for m in agent.messages if m["role"] == "user"]
    assert users == ["echo one", "echo two"]
    assert sum(1 for m in agent.messages if m["role"] == "system") == 1
    await agent.arun("echo three", new=True)
    assert [m["content"] for m in agent.messages if m["role"] == "user"] == ["echo three"]
    isolated = await agent.arun("echo aside", isolated=True)
    assert isolated.ok
    assert [m["content"] for m in agent.messages if m["role"] == "user"] == ["echo three"]


async def test_model_override_per_run(tmp_path):
    with ScriptedServer() as server:
        agent = Agent(workspace=tmp_path,
                      settings=Settings(api_base=server.base_url, api_key="sk-x"))
        server.script(Message(text="from the scripted model"))
        result = await agent.arun("hello", model="openai/test-model")
    assert result.model == "openai/test-model" and result.reply == "from the scripted model"
    assert agent.model == "demo" and len(server.requests) == 1


async def _wait_for(events: list[Any], kind: type, timeout: float = 10.0) -> Any:
    for _ in range(int(timeout / 0.01)):
        for event in events:
            if isinstance(event, kind):
                return event
        await asyncio.sleep(0.01)
    raise AssertionError(f"no {kind.__name__} event within {timeout}s")


async def test_stop_cancels_a_slow_tool_and_the_conversation_goes_on(tmp_path):
    finished_sleeping: list[bool] = []

    async def slow_tool() -> str:
        """Take a long time."""
        await asyncio.sleep(30)
        finished_sleeping.append(True)
        return "slept"

    with ScriptedServer() as server:
        agent = Agent(model="openai/test-model", workspace=tmp_path, tools=[Tool(slow_tool)],
                      settings=Settings(api_base=server.base_url, api_key="sk-x"))
        events: list[Any] = []
        agent.bus.subscribe(events.append)
        server.script(Message(calls=[Call("slow_tool", "{}", id="call_slow")]),
                      Message(text="still here"))
        task = asyncio.ensure_future(agent.arun("be slow"))
        started = await _wait_for(events, ToolCallStarted)
        assert started.tool_name == "slow_tool"
        assert agent.running == [started.run_id]
        assert await asyncio.to_thread(agent.stop) == 1  # from another thread
        result = await asyncio.wait_for(task, 5)
        assert result.status == "cancelled" and result.error == "The run was stopped."
        assert not finished_sleeping and agent.running == []
        assert any(isinstance(e, RunError) and e.kind == "cancelled" for e in events)

        records = agent.ledger.records()
        [call] = [r for r in records if r.get("kind") == "tool_call"]
        assert (call["tool_name"], call["success"], call["error"]) == (
            "slow_tool", False, "cancelled by the user")
        [cancelled] = [r for r in records if r.get("kind") == "run_cancelled"]
        assert cancelled["run_id"] == result.run_id
        assert agent.ledger.verify().ok

        after = await agent.arun("are you there?")
        assert after.status == "ok" and after.reply == "still here"
        sent = server.requests[1]["messages"]
        assert server.tool_messages(1) == [{"role": "tool", "tool_call_id": "call_slow",
                                            "content": "Error: cancelled by the user"}]
        assert sent[-1] == {"role": "user", "content": "are you there?"}


async def test_stop_while_the_model_thinks(tmp_path):
    with ScriptedServer() as server:
        agent = Agent(model="openai/test-model", workspace=tmp_path,
                      settings=Settings(api_base=server.base_url, api_key="sk-x"))
        events: list[Any] = []
        agent.bus.subscribe(events.append)
        server.script(Message(text="too late", delay=3), Message(text="answered"))
        task = asyncio.ensure_future(agent.arun("think hard"))
        started = await _wait_for(events, ModelCallStarted)
        for _ in range(500):  # until the request has reached the server
            if server.requests:
                break
            await asyncio.sleep(0.01)
        assert agent.stop("run_not_mine") == 0
        assert agent.stop(started.run_id) == 1
        result = await asyncio.wait_for(task, 2)
        assert result.status == "cancelled" and result.reply == ""
        again = await agent.arun("and now?")
        assert again.ok and again.reply == "answered"
        users = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "user"]
        assert users == ["think hard", "and now?"]
