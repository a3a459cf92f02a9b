"""The trigger scheduler with a hand-driven clock: intervals, runAt, cron, conditions, cooldown,
limits, runs that are slow or fail, and restoring saved triggers without a burst.

Runs are real agent runs on the offline demo model; only time is controlled
(``ManualClock`` stands in for ``datetime.now`` inside the ``schedule`` library).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_kernel import Agent, Settings, state
from agent_kernel.core.events import Notice, RunStarted
from agent_kernel.triggers.clock import ManualClock
from agent_kernel.triggers.scheduler import TriggerScheduler


@pytest.fixture
def clock() -> Iterator[ManualClock]:
    made = ManualClock()
    with made.patch_schedule():
        yield made


def make_scheduler(tmp_path: Path, clock: ManualClock, **options: Any) -> TriggerScheduler:
    agent = Agent(workspace=tmp_path / "ws", settings=Settings(headless_approval="allow"))
    scheduler = TriggerScheduler(agent, clock=clock, **options)
    agent.services.triggers = scheduler
    scheduler.start(pump=False)
    return scheduler


def kinds(scheduler: TriggerScheduler, kind: str, trigger_id: str | None = None) -> list[dict]:
    return [r for r in scheduler.agent.ledger.records() if r["kind"] == kind
            and (trigger_id is None or r.get("trigger_id") == trigger_id)]


async def until(check: Any, timeout: float = 120.0) -> None:
    """Wait (on the loop, so runs go on) until ``check()`` is true."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "timed out waiting"
        await asyncio.sleep(0.02)


async def tick(scheduler: TriggerScheduler, clock: ManualClock, seconds: float) -> None:
    clock.advance(seconds)
    scheduler.run_due()
    await scheduler.drain(timeout=180)


async def test_interval_fires_when_due_and_not_before(tmp_path: Path, clock: ManualClock) -> None:
    scheduler = make_scheduler(tmp_path, clock)
    started: list[RunStarted] = []
    scheduler.agent.bus.subscribe(lambda e: started.append(e)
                                  if isinstance(e, RunStarted) else None)
    trigger = scheduler.every(10, "echo tick")
    await tick(scheduler, clock, 9.9)
    assert trigger.runs == 0
    await tick(scheduler, clock, 0.2)
    assert trigger.runs == 1 and trigger.last_status == "ok"
    context = started[0].trigger
    assert started[0].prompt == "echo tick" and context is not None
    assert context["trigger"] == "schedule" and context["trigger_id"] == trigger.id
    assert context["focus"] == "echo tick" and context["agent_id"] == "agent"
    assert context["due_at"] == "2026-01-05T09:00:10.000Z"
    assert "tick" in (trigger.last_result or "")
    await tick(scheduler, clock, 10)
    assert trigger.runs == 2
    fired = kinds(scheduler, "trigger_fired", trigger.id)
    runs = kinds(scheduler, "trigger_run", trigger.id)
    assert len(fired) == 2 and [r["run_id"] for r in fired] == [r["run_id"] for r in runs]
    tool_calls = [r for r in scheduler.agent.ledger.records()
                  if r["kind"] == "tool_call" and r["run_id"] == fired[0]["run_id"]]
    assert tool_calls and tool_calls[0]["tool_name"] == "echo"


async def test_missed_periods_fire_once_not_in_a_burst(tmp_path: Path, clock: ManualClock) -> None:
    scheduler = make_scheduler(tmp_path, clock)
    trigger = scheduler.every(5, "echo tick")
    await tick(scheduler, clock, 60)  # a blocked loop: 12 periods went by
    assert trigger.runs == 1


async def test_run_at_fires_once_and_is_forgotten(tmp_path: Path, clock: ManualClock) -> None:
    scheduler = make_scheduler(tmp_path, clock)
    trigger = scheduler.at(clock.now.replace(minute=5).isoformat(), "echo five past")
    saved = scheduler.store.folder / f"{trigger.id}.json"
    assert saved.exists()
    await tick(scheduler, clock, 299)
    assert trigger.runs == 0
    await tick(scheduler, clock, 2)
    assert trigger.runs == 1 and trigger.status == "done"
    assert not saved.exists()
    await tick(scheduler, clock, 3600)
    assert trigger.runs == 1
    with pytest.raises(ValueError, match="in the past"):
        scheduler.at("2020-01-01T00:00:00Z", "too late")
    with pytest.raises(ValueError, match="ISO 8601"):
        scheduler.at("tomorrow at five", "unclear")


async def test_schedule_once_delay(tmp_path: Path, clock: ManualClock) -> None:
    scheduler = make_scheduler(tmp_path, clock)
    trigger = scheduler.once(30, "echo later")
    await tick(scheduler, clock, 29.5)
    assert trigger.runs == 0
    await tick(scheduler, clock, 1)
    assert trigger.runs == 1
    context = kinds(scheduler, "trigger_fired", trigger.id)[0]
    assert context["delay_ms"] <= 1000
    with pytest.raises(ValueError, match="must be between 1 and 2592000, got 3000000"):
        scheduler.once(3000000, "too far")


async def test_cron_runs_on_its_times_with_a_one_minute_floor(
        tmp_path: Path, clock: ManualClock) -> None:
    scheduler = make_scheduler(tmp_path, clock)
    clock.advance(120)  # 09:02 UTC
    trigger = scheduler.cron("*/5 * * * *", "echo cron")
    first = trigger.next_run
    assert first is not None
    await tick(scheduler, clock, 179)  # 09:04:59
    assert trigger.runs == 0
    await tick(scheduler, clock, 2)  # past 09:05
    assert trigger.runs == 1
    assert trigger.next_run is not None and trigger.next_run > first
    await tick(scheduler, clock, 300)
    assert trigger.runs == 2
    for bad in ("61 * * * *", "* * *", "every minute", "* * * * * * * *"):
        with pytest.raises(ValueError, match="Invalid cron expression"):
            scheduler.cron(bad, "x")
    with pytest.raises(ValueError, match="minimum interval is 60 s"):
        scheduler.cron("* * * * * */10", "every ten seconds")


async def test_expression_condition_fires_on_its_edge_with_cooldown(
        tmp_path: Path, clock: ManualClock) -> None:
    namespace: dict[str, Any] = {"rows": []}
    scheduler = make_scheduler(tmp_path, clock)
    scheduler.namespace = namespace
    trigger = scheduler.when({"kind": "expression", "expression": "len(rows) > 3"},
                             "echo big", cooldown=30)
    await tick(scheduler, clock, 1)
    assert trigger.runs == 0
    namespace["rows"] = list(range(5))
    await tick(scheduler, clock, 1)
    assert trigger.runs == 1
    await tick(scheduler, clock, 1)  # still true: no new edge
    assert trigger.runs == 1
    namespace["rows"] = []
    await tick(scheduler, clock, 1)
    namespace["rows"] = list(range(9))
    await tick(scheduler, clock, 1)  # an edge inside the cooldown
    assert trigger.runs == 1 and trigger.skipped == 1
    assert kinds(scheduler, "trigger_skipped", trigger.id)[0]["reason"] == "cooldown"
    namespace["rows"] = []
    await tick(scheduler, clock, 30)
    namespace["rows"] = list(range(9))
    await tick(scheduler, clock, 1)
    assert trigger.runs == 2


async def test_condition_error_is_reported_and_the_trigger_lives(
        tmp_path: Path, clock: ManualClock) -> None:
    namespace: dict[str, Any] = {}
    scheduler = make_scheduler(tmp_path, clock)
    scheduler.namespace = namespace
    notices: list[str] = []
    scheduler.agent.bus.subscribe(lambda e: notices.append(e.text)
                                  if isinstance(e, Notice) else None)
    trigger = scheduler.when("len(df) > 1", "echo df ready")
    await tick(scheduler, clock, 1)
    await tick(scheduler, clock, 1)
    assert any("NameError" in n for n in notices)
    assert len(kinds(scheduler, "trigger_condition_error", trigger.id)) == 1  # shown once
    namespace["df"] = [1, 2, 3]
    await tick(scheduler, clock, 1)
    assert trigger.runs == 1
    with pytest.raises(ValueError, match="not valid Python"):
        scheduler.when("len(df) >", "broken")
    with pytest.raises(ValueError, match="condition kind"):
        scheduler.when({"kind": "weather"}, "rain")


async def test_file_and_variable_conditions(tmp_path: Path, clock: ManualClock) -> None:
    namespace: dict[str, Any] = {"x": 1}
    scheduler = make_scheduler(tmp_path, clock)
    scheduler.namespace = namespace
    target = tmp_path / "report.csv"
    on_file = scheduler.when({"kind": "file", "path": str(target)}, "echo file")
    on_var = scheduler.when({"kind": "variable", "name": "x"}, "echo var")
    await tick(scheduler, clock, 1)
    assert (on_file.runs, on_var.runs) == (0, 0)
    target.write_text("a,b\n")
    namespace["x"] = 2
    await tick(scheduler, clock, 1)
    assert (on_file.runs, on_var.runs) == (1, 1)
    await tick(scheduler, clock, 1)
    assert (on_file.runs, on_var.runs) == (1, 1)
    target.write_text("a,b\n1,2\n")
    await tick(scheduler, clock, 1)
    assert on_file.runs == 2


async def test_limit_of_active_schedules(tmp_path: Path, clock: ManualClock) -> None:
    scheduler = make_scheduler(tmp_path, clock)
    made = [scheduler.every(3600, f"echo {i}") for i in range(100)]
    with pytest.raises(ValueError, match="At most 100 active schedules per agent"):
        scheduler.once(60, "one too many")
    scheduler.cancel(made[0].id)
    scheduler.once(60, "room again")


GATES: dict[str, asyncio.Event] = {}


@state("trigger_test_gate")
async def _gate() -> str:
    await GATES["gate"].wait()
    return "opened"


def new_gate() -> asyncio.Event:
    GATES["gate"] = asyncio.Event()
    return GATES["gate"]


async def test_slow_run_queues_its_next_firing_and_never_delays_others(
        tmp_path: Path, clock: ManualClock) -> None:
    gate = new_gate()
    scheduler = make_scheduler(tmp_path, clock)
    slow = scheduler.every(10, "query_state trigger_test_gate")
    fast = scheduler.every(10, "echo fast")

    def fast_done(runs: int) -> bool:
        busy = any(f.trigger_id == fast.id for f in [*scheduler.running.values(),
                                                      *scheduler.queue])
        return fast.runs == runs and not busy

    clock.advance(10)
    scheduler.run_due()
    await until(lambda: fast_done(1))
    assert slow.runs == 0
    assert [f.trigger_id for f in scheduler.running.values()] == [slow.id]
    clock.advance(10)
    scheduler.run_due()  # the slow one is still going: its firing waits in the queue
    await until(lambda: fast_done(2))
    clock.advance(10)
    scheduler.run_due()  # and a third firing is skipped, not piled up
    await until(lambda: fast_done(3))
    assert [f.trigger_id for f in scheduler.queue] == [slow.id] and slow.skipped == 1
    gate.set()
    await scheduler.drain(timeout=180)
    assert slow.runs == 2 and slow.last_status == "ok" and "opened" in (slow.last_result or "")


async def test_timeout_and_errors_are_recorded_and_the_trigger_lives(
        tmp_path: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> None:
    gate = new_gate()
    scheduler = make_scheduler(tmp_path, clock)
    notices: list[str] = []
    scheduler.agent.bus.subscribe(lambda e: notices.append(e.text)
                                  if isinstance(e, Notice) and e.level == "error" else None)
    slow = scheduler.every(10, "query_state trigger_test_gate", timeout=0.2)
    await tick(scheduler, clock, 10)
    assert slow.last_status == "timeout" and slow.errors == 1
    assert any("timeout" in n for n in notices)
    original = scheduler.agent.arun

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("provider exploded")

    monkeypatch.setattr(scheduler.agent, "arun", broken)
    await tick(scheduler, clock, 10)
    assert slow.last_status == "error" and "provider exploded" in (slow.last_result or "")
    monkeypatch.setattr(scheduler.agent, "arun", original)
    gate.set()
    await tick(scheduler, clock, 10)
    assert slow.active and slow.runs == 3 and slow.last_status == "ok"
    statuses = [r["status"] for r in kinds(scheduler, "trigger_run", slow.id)]
    assert statuses == ["timeout", "error", "ok"]


async def test_restore_skips_missed_runs_and_reports_them(
        tmp_path: Path, clock: ManualClock) -> None:
    first = make_scheduler(tmp_path, clock)
    recurring = first.every(60, "echo minute")
    first.once(30, "echo soon")
    first.cron("0 * * * *", "echo hourly")
    conditional = first.when("False", "never")
    first.cancel(conditional.id)
    await first.close()
    clock.advance(200)  # no kernel for 200 s
    second = make_scheduler(tmp_path, clock)
    report = second.restore_report
    assert {t.kind for t in report.restored} == {"recurring", "cron"}
    assert report.missed[recurring.id] == 3  # due at 60, 120 and 180 s
    assert [t.kind for t in report.expired] == ["once"]
    said = report.text()  # in words: each trigger by what it asks and when, never its id
    assert "echo minute (every minute); 3 run(s) skipped" in said, said
    assert "echo soon (once at " in said and "): was due while no kernel was running" in said
    assert recurring.id not in said
    assert not second.running and not second.queue  # nothing replayed
    restored = second.triggers[recurring.id]
    await tick(second, clock, 39)  # 239 s: the next point on the old grid is 240 s
    assert restored.runs == 0
    await tick(second, clock, 2)
    assert restored.runs == 1
    assert kinds(second, "trigger_restored", recurring.id)[0]["missed"] == 3


async def test_restore_can_run_missed_triggers_once(tmp_path: Path, clock: ManualClock) -> None:
    first = make_scheduler(tmp_path, clock)
    recurring = first.every(60, "echo minute")
    await first.close()
    clock.advance(500)
    second = make_scheduler(tmp_path, clock, missed="run_once")
    await second.drain(timeout=180)
    assert second.triggers[recurring.id].runs == 1


async def test_one_runner_per_workspace_and_agent(tmp_path: Path, clock: ManualClock) -> None:
    first = make_scheduler(tmp_path, clock)
    first.every(60, "echo once only")
    second = make_scheduler(tmp_path, clock)
    assert second.restore_report.restored == []
    assert "already runs this workspace's triggers" in second.restore_report.text()
    await first.close()
    third = make_scheduler(tmp_path, clock)
    assert len(third.restore_report.restored) == 1
    await third.close()
