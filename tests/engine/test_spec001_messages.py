"""The model reads spec 001's own words for the bounds of remember, recall, log_decision and
schedule_once, and schedule's traceId (spec 002) follows a trigger into the runs it starts.

Every model turn is scripted in-process (a ScriptedModel: what the model reads is what
the loop gives it); trigger time is a hand-driven clock, the runs it starts are real runs
on that model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scripted_model import ScriptedModel
from scripted_server import Call, Message

from agent_kernel import Agent, Settings, ToolContext
from agent_kernel.core.events import RunStarted, ToolCallFinished
from agent_kernel.engine.registry import ToolArgumentError
from agent_kernel.triggers import scheduler_for
from agent_kernel.triggers.clock import ManualClock
from agent_kernel.triggers.make import make_schedule
from agent_kernel.triggers.scheduler import TriggerScheduler

# (tool, arguments, spec 001's message for them)
REFUSED = [
    ("remember", {"content": "x" * 2001}, "content exceeds 2000 characters (got 2001)"),
    ("remember", {"content": ""}, "content cannot be empty"),
    ("recall", {"query": "lessons", "limit": 21}, "limit must be between 1 and 20, got 21"),
    ("recall", {"query": "lessons", "limit": 0}, "limit must be between 1 and 20, got 0"),
    ("log_decision", {"reasoning": ""}, "reasoning cannot be empty"),
    ("log_decision", {"reasoning": "y" * 1001}, "reasoning exceeds 1000 characters (got 1001)"),
    ("schedule_once", {"delay_seconds": 3000000, "focus": "check the build"},
     "delay_seconds must be between 1 and 2592000, got 3000000"),
    ("schedule_once", {"delay_seconds": 0, "focus": "check the build"},
     "delay_seconds must be between 1 and 2592000, got 0"),
]


@pytest.fixture
def server() -> Iterator[ScriptedModel]:
    with ScriptedModel() as model:
        yield model


@pytest.fixture
def clock() -> Iterator[ManualClock]:
    made = ManualClock()
    with made.patch_schedule():
        yield made


def make_agent(server: ScriptedModel, workspace: Path) -> Agent:
    return Agent(model=server, workspace=workspace, settings=Settings(
        api_key="sk-test-0123456789abcdef", retry_base_delay=0.01, headless_approval="allow"))


def records(agent: Agent, kind: str) -> list[dict[str, Any]]:
    return [r for r in agent.ledger.records() if r.get("kind") == kind]


async def test_the_model_reads_spec_001s_words_and_nothing_is_kept(
        server: ScriptedModel, tmp_path: Path) -> None:
    agent = make_agent(server, tmp_path / "ws")
    finished: list[ToolCallFinished] = []
    agent.bus.subscribe(lambda e: finished.append(e) if isinstance(e, ToolCallFinished) else None)
    server.script(
        Message(calls=[Call(name, json.dumps(arguments), id=f"call_{n}")
                       for n, (name, arguments, _) in enumerate(REFUSED)]),
        Message(text="Nothing was saved; I will shorten it."),
    )
    result = await agent.arun("remember this, recall that, log why, and check later")
    assert result.status == "ok", result.error

    told = {m["tool_call_id"]: m["content"] for m in server.tool_messages(1)}
    for n, (name, _, words) in enumerate(REFUSED):
        assert told[f"call_{n}"] == f"Error: Tool '{name}' execution failed: {words}"
    # The person's line is the same plain sentence, not a validator's report.
    summaries = {e.call_id: e.summary for e in finished}
    assert [summaries[f"call_{n}"] for n in range(len(REFUSED))] == [w for _, _, w in REFUSED]
    # The calls ran concurrently: the ledger holds each refusal once, in any order.
    calls = records(agent, "tool_call")
    assert sorted((r["tool_name"], r["success"], r["error"]) for r in calls) == sorted(
        (name, False, f"Tool '{name}' execution failed: {words}") for name, _, words in REFUSED)

    # Refused before anything was written or opened.
    assert records(agent, "decision") == []
    assert agent.services.memory.tables._db is None
    assert scheduler_for(agent).active() == []
    await scheduler_for(agent).close()

    # The schema the provider received still states the bounds (the core's as sent; the
    # tools a run finds with find_tools as the registry builds them for every request).
    tools = {t["function"]["name"]: t["function"]["parameters"]["properties"]
             for t in [*agent.registry.schemas(), *server.requests[0]["tools"]]}
    assert {"remember", "recall"} <= {t["function"]["name"] for t in server.requests[0]["tools"]}
    assert tools["remember"]["content"]["maxLength"] == 2000
    assert tools["remember"]["content"]["minLength"] == 1
    assert (tools["recall"]["limit"]["minimum"], tools["recall"]["limit"]["maximum"]) == (1, 20)
    assert tools["log_decision"]["reasoning"]["maxLength"] == 1000
    assert tools["log_decision"]["reasoning"]["minLength"] == 1
    assert tools["schedule_once"]["delay_seconds"]["maximum"] == 2592000


async def test_the_bounds_themselves_are_accepted(tmp_path: Path) -> None:
    agent = Agent(workspace=tmp_path / "ws")
    ctx = ToolContext(agent=agent, run_id="run_bounds", agent_id=agent.agent_id,
                      workspace=agent.workspace)

    async def call(name: str, **arguments: Any) -> Any:
        tool = agent.registry.get(name)
        assert tool is not None
        return await tool.invoke(tool.validate(arguments), ctx)

    saved = await call("remember", content="z" * 2000)
    assert saved["memory_id"].startswith("mem_")
    recalled = await call("recall", query="z", limit=20)
    assert recalled["count"] == 1 and len(recalled["memories"][0]["content"]) == 2000
    logged = await call("log_decision", reasoning="w" * 1000)
    assert records(agent, "decision")[0]["decision_id"] == logged["decision_id"]
    with pytest.raises(ValueError, match=re.escape("content cannot be empty")):
        await call("remember", content="   ")  # blank is empty too
    with pytest.raises(ValueError, match=re.escape("reasoning cannot be empty")):
        await call("log_decision", reasoning=" \n")
    # What 001 does not word keeps its checks: types and enums are still refused up front.
    with pytest.raises(ToolArgumentError, match="limit"):
        agent.registry.get("recall").validate({"query": "z", "limit": "many"})
    with pytest.raises(ToolArgumentError, match="decision_type"):
        agent.registry.get("log_decision").validate({"reasoning": "r", "decision_type": "whim"})


async def test_trace_id_is_saved_recorded_and_carried_into_the_runs(
        server: ScriptedModel, tmp_path: Path, clock: ManualClock) -> None:
    workspace = tmp_path / "ws"
    agent = make_agent(server, workspace)
    scheduler = TriggerScheduler(agent, clock=clock)
    agent.services.triggers = scheduler
    scheduler.start(pump=False)
    started: list[RunStarted] = []
    agent.bus.subscribe(lambda e: started.append(e) if isinstance(e, RunStarted) else None)
    schema = agent.registry.get("schedule").parameters["properties"]["traceId"]
    assert schema["type"] == "string" and "traceId" not in agent.registry.get(
        "schedule").parameters["required"]

    server.script(
        Message(calls=[Call("schedule", json.dumps({
            "prompt": "check the build", "type": "recurring", "interval": 60,
            "traceId": "trace-build-7"}))]),
        Message(text="I will check the build every minute."),
        # The fired run books a follow-up without naming a traceId.
        Message(calls=[Call("schedule", json.dumps({
            "prompt": "report on the build", "type": "recurring", "interval": 3600}))]),
        Message(text="The build is green; a report follows hourly."),
    )
    result = await agent.arun("check the build every minute")
    assert result.status == "ok", result.error
    trigger_id = result.tool_calls[0].result["taskId"]
    saved = json.loads((workspace / "triggers" / f"{trigger_id}.json").read_text())
    assert saved["trace_id"] == "trace-build-7"
    await scheduler.drain()  # trigger_created is written off the loop, in the background
    created = [r for r in records(agent, "trigger_created") if r["trigger_id"] == trigger_id]
    assert created[0]["trace_id"] == "trace-build-7"

    clock.advance(60)
    scheduler.run_due()
    await scheduler.drain(timeout=120)
    fired_run = [e for e in started if e.trigger is not None]
    assert len(fired_run) == 1 and fired_run[0].trigger is not None
    assert fired_run[0].trigger["trace_id"] == "trace-build-7"
    run_id = fired_run[0].run_id
    for kind in ("trigger_fired", "trigger_run"):
        (record,) = [r for r in records(agent, kind) if r["run_id"] == run_id]
        assert record["trace_id"] == "trace-build-7", kind
    follow_up = [t for t in scheduler.active() if t.id != trigger_id]
    assert [t.trace_id for t in follow_up] == ["trace-build-7"]
    # A trigger made without a traceId, outside any traced run, records none.
    plain = scheduler.every(120, "echo untraced")
    assert plain.trace_id is None and "trace_id" not in plain.run_context(None, None)
    await scheduler.close()  # the ledger records written in the background are in
    created_by_id = {r["trigger_id"]: r for r in records(agent, "trigger_created")}
    assert created_by_id[follow_up[0].id]["trace_id"] == "trace-build-7"
    assert "trace_id" not in created_by_id[plain.id]

    # A new kernel restores it with the trigger.
    again = Agent(model=server, workspace=workspace)
    restored = TriggerScheduler(again, clock=clock)
    again.services.triggers = restored
    restored.start(pump=False)
    assert restored.triggers[trigger_id].trace_id == "trace-build-7"
    assert restored.triggers[plain.id].trace_id is None
    await restored.close()


@pytest.mark.parametrize("bad", ["", "x" * 201])
def test_a_bad_trace_id_is_refused_clearly(tmp_path: Path, bad: str) -> None:
    agent = Agent(workspace=tmp_path / "ws")
    with pytest.raises(ToolArgumentError, match="traceId"):
        agent.registry.get("schedule").validate(
            {"prompt": "p", "type": "recurring", "interval": 60, "traceId": bad})
    scheduler = scheduler_for(agent)
    with pytest.raises(ValueError, match="traceId must be a non-empty string"):
        make_schedule(scheduler, prompt="p", type="recurring", interval=60, trace_id=bad)
    assert scheduler.active() == []


async def test_log_decision_is_written_in_batches(server: ScriptedModel, tmp_path: Path) -> None:
    """Spec 001: the decision log goes to the ledger in batches. Three decisions of one
    response are one ledger write (one lock, one fsync); each call still answers with its
    own decision_id once it is on disk, and the chain holds."""
    from agent_kernel.tools.core import DecisionBatch

    agent = make_agent(server, tmp_path / "ws")
    kinds = ["capability_selection", "no_action", "other"]
    server.script(Message(calls=[Call("log_decision", json.dumps(
        {"reasoning": f"reason {i}", "decision_type": kind})) for i, kind in enumerate(kinds)]),
        Message(text="logged"))
    result = await agent.arun("decide")
    assert result.ok, result.error
    decisions = [r for r in agent.ledger.records() if r.get("kind") == "decision"]
    assert [(d["reasoning"], d["decision_type"]) for d in decisions] == [
        (f"reason {i}", kind) for i, kind in enumerate(kinds)]
    answered = [json.loads(m["content"]) for m in server.tool_messages(1)]
    assert [a["decision_id"] for a in answered] == [d["decision_id"] for d in decisions]
    assert DecisionBatch.of(agent.ledger).writes == 1
    assert agent.ledger.verify().ok
    # a later single decision is a write of its own
    server.script(Message(calls=[Call("log_decision", '{"reasoning": "one more"}')]),
                  Message(text="ok"))
    await agent.arun("again")
    assert DecisionBatch.of(agent.ledger).writes == 2 and agent.ledger.verify().ok
