"""The trigger tools as a model meets them: spec argument names and return shapes, clear
errors, approval of conditions, listing and cancelling queued, running and trigger tasks,
the demo model making triggers from plain words, and the ``triggers`` CLI command.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tool_helpers import call_tool, through_the_loop

from agent_kernel import Agent, Settings, state
from agent_kernel.triggers import scheduler_for
from agent_kernel.triggers.clock import ManualClock
from agent_kernel.triggers.scheduler import TriggerScheduler


@pytest.fixture
def clock() -> Iterator[ManualClock]:
    made = ManualClock()
    with made.patch_schedule():
        yield made


def make_agent(tmp_path: Path, approval: str = "allow") -> Agent:
    return Agent(workspace=tmp_path / "ws", settings=Settings(headless_approval=approval))


call = call_tool  # validate, then invoke, as the loop does


async def test_tools_return_the_specs_shapes(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    made = await call(agent, "schedule", prompt="check the build", type="recurring", interval=3600)
    assert set(made) == {"taskId"}
    once = await call(agent, "schedule_once", delay_seconds=300, focus="check entry")
    assert once["scheduled_at"] == "in 300 seconds" and once["focus"] == "check entry"
    assert set(once) == {"schedule_id", "scheduled_at", "focus"}
    cron = await call(agent, "schedule_cron", cron_expression="0 9 * * 1-5", focus="morning")
    assert set(cron) == {"schedule_id", "cron_expression", "focus"}
    listed = await call(agent, "list_tasks", scope="triggers")
    rows = listed["tasks"]
    assert [r["id"] for r in rows] == [made["taskId"], once["schedule_id"], cron["schedule_id"]]
    assert set(rows[0]) == {"id", "type", "prompt", "priority", "status", "createdAt"}
    assert {r["status"] for r in rows} == {"trigger"}
    assert await call(agent, "cancel_schedule", schedule_id=cron["schedule_id"]) == {
        "success": True, "message": f"Schedule {cron['schedule_id']} cancelled successfully"}
    again = await call(agent, "cancel_schedule", schedule_id=cron["schedule_id"])
    assert again["success"] is False and "not found or already completed" in again["message"]
    assert await call(agent, "cancel_task", taskId=made["taskId"]) == {"success": True}
    assert await call(agent, "cancel_task", id=once["schedule_id"]) == {"success": True}
    assert (await call(agent, "list_tasks", scope="triggers"))["tasks"] == []
    assert not list((tmp_path / "ws" / "triggers").glob("*.json"))
    await scheduler_for(agent).close()


async def test_prompts_are_cut_at_100_characters(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    await call(agent, "schedule", prompt="x" * 250, type="recurring", interval=60)
    row = (await call(agent, "list_tasks"))["tasks"][0]
    assert len(row["prompt"]) == 100
    await scheduler_for(agent).close()


@pytest.mark.parametrize(("arguments", "message"), [
    ({"prompt": "p", "type": "recurring"}, "interval (seconds) is required"),
    ({"prompt": "p", "type": "recurring", "interval": 0.5}, "interval must be between 1"),
    ({"prompt": "p", "type": "scheduled"}, "runAt (ISO 8601) is required"),
    ({"prompt": "p", "type": "scheduled", "runAt": "next tuesday"}, "ISO 8601"),
    ({"prompt": "p", "type": "conditional"}, "condition is required"),
    ({"prompt": "p", "type": "recurring", "interval": 60, "timeout": 0}, "timeout must be"),
    ({"prompt": "p", "type": "conditional",
      "condition": {"kind": "expression", "expression": "len(df) >"}}, "not valid Python"),
    ({"prompt": "p", "type": "conditional", "condition": {"kind": "variable", "name": "a b"}},
     "variable condition needs"),
])
async def test_schedule_refuses_bad_arguments_clearly(
        tmp_path: Path, arguments: dict[str, Any], message: str) -> None:
    agent = make_agent(tmp_path)
    with pytest.raises(ValueError, match=re.escape(message)):
        await call(agent, "schedule", **arguments)
    assert scheduler_for(agent).active() == []


async def test_schedule_accepts_what_spec_000_allows(tmp_path: Path) -> None:
    """000 makes interval, runAt and condition required for their own type and forbids none
    of them for another; cooldown is for conditional tasks. Another type's fields are
    accepted and play no part."""
    agent = make_agent(tmp_path)
    made = await call(agent, "schedule", prompt="p", type="recurring", interval=60,
                      runAt="2030-01-01T00:00:00Z", cooldown=5,
                      condition={"kind": "file", "path": "x.csv"})
    trigger = scheduler_for(agent).triggers[made["taskId"]]
    assert (trigger.kind, trigger.interval, trigger.run_at, trigger.condition,
            trigger.cooldown) == ("recurring", 60, None, None, 0)
    at = await call(agent, "schedule", prompt="p", type="scheduled", interval=5,
                    runAt="2030-01-01T00:00:00Z", timeout=None)
    trigger = scheduler_for(agent).triggers[at["taskId"]]
    assert (trigger.kind, trigger.interval, trigger.run_at) == (
        "scheduled", None, "2030-01-01T00:00:00.000Z")
    assert [r["kind"] for r in agent.ledger.records() if r["kind"] == "approval"] == []
    await scheduler_for(agent).close()


async def test_errors_reach_the_model_as_readable_tool_results(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    result = await agent.arun("in 3000000 seconds check the build")
    record = result.tool_calls[-1]  # after the find_tools that brought the schedule tools in
    assert record.tool_name == "schedule_once" and not record.success
    assert record.error == ("Tool 'schedule_once' execution failed: delay_seconds must be "
                            "between 1 and 2592000, got 3000000")
    for bad in ("0 9 * *", "61 9 * * *"):  # spec 001's words, exactly; the format besides
        record = await through_the_loop(agent, "schedule_cron", cron_expression=bad, focus="x")
        assert record.error == ("Tool 'schedule_cron' execution failed: "
                                f"Invalid cron expression: {bad}")
        assert "minute hour day month weekday" in (record.guidance or "")
    with pytest.raises(ValueError, match="the minimum interval is 60 s"):
        await call(agent, "schedule_cron", cron_expression="* * * * * */5", focus="x")
    with pytest.raises(ValueError, match="taskId .or id. is required"):
        await call(agent, "cancel_task")
    # spec 002: an id that is no queued task nor trigger is success false, with the reason
    assert await call(agent, "cancel_task", taskId="trg_nope") == {
        "success": False, "reason": "No queued task, running task or trigger has id "
                                    "'trg_nope'; list_tasks shows the ids"}
    # one of taskId / id is required by the schema the model reads
    schema = agent.registry.get("cancel_task").parameters
    assert schema["minProperties"] == 1 and set(schema["properties"]) == {"taskId", "id"}
    assert "anyOf" not in schema and schema["required"] == []
    await scheduler_for(agent).close()


async def test_a_model_written_condition_is_approved_before_it_is_evaluated(
        tmp_path: Path) -> None:
    denied = make_agent(tmp_path / "a", approval="deny")
    namespace: dict[str, Any] = {"calls": []}
    scheduler_for(denied).namespace = namespace
    condition = {"kind": "expression", "expression": "calls.append(1) or True"}
    with pytest.raises(ValueError, match="not approved"):
        await call(denied, "schedule", prompt="p", type="conditional", condition=condition)
    assert scheduler_for(denied).active() == []
    scheduler_for(denied).run_due()
    assert namespace["calls"] == []
    approvals = [r for r in denied.ledger.records() if r["kind"] == "approval"]
    assert approvals[-1]["tool_name"] == "condition" and approvals[-1]["decision"] == "denied"
    assert approvals[-1]["arguments"]["condition"] == condition

    allowed = make_agent(tmp_path / "b", approval="allow")
    scheduler_for(allowed).namespace = namespace
    made = await call(allowed, "schedule", prompt="echo yes", type="conditional",
                      condition=condition, cooldown=60)
    scheduler_for(allowed).run_due()
    assert namespace["calls"] == [1]
    assert scheduler_for(allowed).triggers[made["taskId"]].cooldown == 60
    await scheduler_for(allowed).close()
    await scheduler_for(denied).close()


GATES: dict[str, asyncio.Event] = {}


@state("trigger_tools_gate")
async def _gate() -> str:
    await GATES["gate"].wait()
    return "opened"


async def test_cancel_task_queued_trigger_and_running(tmp_path: Path, clock: ManualClock) -> None:
    gate = GATES["gate"] = asyncio.Event()
    agent = make_agent(tmp_path)
    scheduler = TriggerScheduler(agent, clock=clock)
    agent.services.triggers = scheduler
    scheduler.start(pump=False)
    made = await call(agent, "schedule", prompt="query_state trigger_tools_gate",
                      type="recurring", interval=10)
    trigger_id = made["taskId"]
    for _ in range(2):
        clock.advance(10)
        scheduler.run_due()
    await asyncio.sleep(0.2)
    tasks = (await call(agent, "list_tasks"))["tasks"]
    by_status = {r["status"]: r for r in tasks}
    assert set(by_status) == {"queued", "running", "trigger"}
    assert by_status["running"]["prompt"] == "query_state trigger_tools_gate"
    assert (await call(agent, "list_tasks", scope="queue"))["tasks"] == [by_status["queued"]]
    assert await call(agent, "cancel_task", taskId=by_status["running"]["id"]) == {
        "success": False}
    assert await call(agent, "cancel_task", id=by_status["queued"]["id"]) == {"success": True}
    assert await call(agent, "cancel_task", taskId=trigger_id) == {"success": True}
    gate.set()
    await scheduler.drain(timeout=180)
    assert scheduler.triggers[trigger_id].runs == 1  # the queued firing never ran
    assert (await call(agent, "list_tasks"))["tasks"] == []


async def test_demo_model_makes_triggers_from_plain_words(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    for prompt in ("every 2 seconds check the build", "in 5 seconds remind me to stretch",
                   "when len(df) > 3, summarise df"):
        result = await agent.arun(prompt)
        assert result.tool_calls and result.tool_calls[0].success, result
    kinds = sorted(t.kind for t in scheduler_for(agent).active())
    assert kinds == ["conditional", "once", "recurring"]
    conditional = next(t for t in scheduler_for(agent).active() if t.kind == "conditional")
    assert conditional.condition == {"kind": "expression", "expression": "len(df) > 3"}
    await scheduler_for(agent).close()


def test_cli_runs_saved_triggers_in_the_foreground(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"

    async def save() -> None:
        agent = Agent(workspace=workspace)
        scheduler = scheduler_for(agent)
        scheduler.start(pump=False)
        scheduler.every(1, "echo from the cli")
        await scheduler.close()

    asyncio.run(save())
    done = subprocess.run(
        [sys.executable, "-m", "agent_kernel", "triggers", "--workspace", str(workspace),
         "--duration", "5"], capture_output=True, text=True, timeout=120,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    assert done.returncode == 0, done.stderr
    assert "Restored 1 trigger" in done.stdout
    assert "echo from the cli" in done.stdout and "ok" in done.stdout
    agent = Agent(workspace=workspace)
    fired = [r for r in agent.ledger.records() if r["kind"] == "trigger_fired"]
    assert len(fired) >= 2
    empty = subprocess.run(
        [sys.executable, "-m", "agent_kernel", "triggers", "--workspace", str(tmp_path / "none"),
         "--duration", "0.1"], capture_output=True, text=True, timeout=60)
    assert empty.returncode == 0 and "No saved triggers" in empty.stdout


async def test_panel_is_a_static_table_and_its_controls_are_words(tmp_path: Path) -> None:
    """Without our extension the controls are text naming the magic: no widget to save."""
    from agent_kernel.notebook.trigger_panel import TextControls, TriggersPanel

    agent = make_agent(tmp_path)
    scheduler = scheduler_for(agent)
    scheduler.start(pump=False)
    trigger = scheduler.every(3600, "echo from the panel")
    panel = TriggersPanel(scheduler)
    bundle = panel.bundle()
    assert set(bundle) == {"text/html", "text/plain"}  # never a widget
    html = bundle["text/html"]
    assert "every hour" in html and "not run yet" in html and "data-status='active'" in html
    # the next run in an hour: a time today, or with its date after 23:00
    assert re.search(r"class='ak-time' title='[^']+'>(?:\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d \S+</td>",
                     html)
    assert " min" not in html and " ago" not in html  # saved, relative words go stale
    shown_id = trigger.id.replace("_", "_<wbr>")  # wraps at its underscores in a narrow cell
    assert html.index("echo from the panel") < html.index(f"class='ak-id'>{shown_id}")
    assert trigger.id in bundle["text/plain"] and "[recurring, active]" in bundle["text/plain"]
    scheduler.fire(trigger, scheduler.clock())
    await scheduler.drain(timeout=180)
    html = panel.bundle()["text/html"]
    assert "The echo tool returned: from the panel" in html and "not run yet" not in html
    assert "agent-kernel-trigger-runs'>1<" in html and not re.search(r"\d+ s ago|just now", html)
    controls = TextControls(panel)
    panel.controls = controls
    words = controls.bundle()
    assert set(words) == {"text/html", "text/plain"}  # never a widget
    assert words["text/plain"] == (f"every hour · echo from the panel — cancel with "
                                   f"%agent_triggers cancel {trigger.id}")
    newer = TriggersPanel(scheduler)  # a newer panel takes the trigger's controls
    newer.controls = TextControls(newer)
    assert controls.settled and "moved to a newer triggers panel" in controls.outcomes[0]
    assert "moved to a newer triggers panel" in controls.bundle()["text/plain"]
    scheduler.cancel(trigger.id)  # as `%agent_triggers cancel ID` does
    assert not trigger.active and newer.controls.settled
    assert newer.controls.outcomes == [newer.controls.outcomes[0]]
    assert newer.controls.outcomes[0].startswith("Cancelled: echo from the panel (every hour) · ")
    assert trigger.id not in newer.controls.outcomes[0]
    assert "%agent_triggers" not in newer.controls.bundle()["text/plain"]
    assert "data-status='cancelled'" in panel.bundle()["text/html"]
    await scheduler.close()


async def test_extension_draws_the_panel_controls_and_its_clicks_come_over_the_comm(
        tmp_path: Path) -> None:
    """With our extension: no widget; the bundle carries the live rows, then becomes text."""
    from agent_kernel.core.mime_types import CONTROLS_MIME
    from agent_kernel.notebook.frontend import FrontendProbe
    from agent_kernel.notebook.trigger_panel import ExtensionControls, TriggersPanel

    class Handle:
        def __init__(self) -> None:
            self.bundles: list[dict[str, Any]] = []

        def update(self, bundle: dict[str, Any], raw: bool = False) -> None:
            self.bundles.append(bundle)

    agent = make_agent(tmp_path)
    scheduler = scheduler_for(agent)
    scheduler.start(pump=False)
    trigger = scheduler.every(3600, "echo from the extension")
    other = scheduler.every(7200, "echo the other one")
    probe = FrontendProbe()
    panel = TriggersPanel(scheduler)
    controls = ExtensionControls(panel, probe)
    panel.controls = controls
    controls.handle = Handle()
    bundle = controls.bundle()
    state = bundle[CONTROLS_MIME]
    assert [r["trigger_id"] for r in state["rows"]] == [trigger.id, other.id]
    assert state["rows"][0]["label"].startswith("every hour · echo from the extension")
    assert f"%agent_triggers cancel {trigger.id}" in bundle["text/plain"]
    assert "<script" not in bundle["text/html"]
    assert probe.handle({"action": "trigger", "op": "cancel", "trigger_id": "trg_nope"}) == (
        False, "trg_nope has no live controls in this kernel.")
    assert probe.handle({"action": "trigger", "op": "rm", "trigger_id": trigger.id})[0] is False
    assert probe.handle({"action": "trigger", "op": "cancel", "trigger_id": trigger.id}) == (
        True, "")
    assert not trigger.active and other.active
    live = controls.handle.bundles[-1]
    assert [r["trigger_id"] for r in live[CONTROLS_MIME]["rows"]] == [other.id]
    assert live[CONTROLS_MIME]["outcomes"][0].startswith(
        "Cancelled: echo from the extension (every hour) · ")
    scheduler.cancel(other.id)  # cancelled elsewhere (the magic): the controls settle to text
    final = controls.handle.bundles[-1]
    assert controls.settled and set(final) == {"text/plain", "text/html"}
    assert final["text/plain"].startswith("Cancelled: echo from the extension (every hour)")
    assert trigger.id not in final["text/plain"] and other.id not in final["text/plain"]
    await scheduler.close()
