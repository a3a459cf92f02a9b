"""The trigger scheduler: the ``schedule`` library, pumped by one task on the kernel's loop.

``schedule`` knows nothing of asyncio, so one task (the *pump*) calls
``run_pending()``, checks conditions on a fixed cadence, then sleeps until
the next job is due or a trigger is added or cancelled: an idle kernel
spends its time asleep, not polling. One-shot and cron jobs return
``schedule.CancelJob`` after firing (a cron job then books its next
occurrence, computed by croniter). A job never runs an agent itself: it
starts the run as its own task, so a slow run never delays the others; a
trigger whose previous run is still going queues one firing and skips the
rest. Every firing, run outcome, skip and cancellation is a ledger record;
an error in a run is shown and recorded and the trigger lives on.

The scheduler starts only inside a running loop (the kernel's, or
``asyncio.run``'s); starting restores the triggers saved in the workspace
(see :mod:`.restore`). Every time-based trigger is signed when it is made
(its ``trigger_created`` record carries its digest and an HMAC under this
user's key); a restored trigger of any kind without a signed record of exactly
it waits as ``needs_approval``, and never runs, until :meth:`TriggerScheduler.approve`.

This is the one module that imports ``make``, ``runner`` and ``restore``;
they see it only as a :class:`~.host.TriggerHost`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from datetime import datetime, timedelta
from typing import Any

import schedule

from agent_kernel.core.events import LedgerRecorded, Notice, RunFinished, RunStarted
from agent_kernel.core.ledger import new_id
from agent_kernel.triggers.clock import Clock, from_local_naive, system_clock, to_local_naive
from agent_kernel.triggers.conditions import Condition, ConditionWatch
from agent_kernel.triggers.host import Firing, Listener
from agent_kernel.triggers.make import TriggerMaker
from agent_kernel.triggers.model import (
    LIVE,
    MAX_ACTIVE,
    ONE_SHOT,
    Trigger,
    cron_next,
    iso,
    parse_iso,
)
from agent_kernel.triggers.runner import check_condition
from agent_kernel.triggers.store import TriggerStore

log = logging.getLogger(__name__)
MAX_SLEEP = 30.0

__all__ = ["Firing", "Listener", "TriggerScheduler"]


class TriggerScheduler(TriggerMaker):
    """Runs one agent's triggers on the asyncio loop it is started on."""

    def __init__(self, agent: Any, *, namespace: dict[str, Any] | None = None,
                 clock: Clock = system_clock, condition_interval: float = 1.0,
                 max_active: int = MAX_ACTIVE, max_concurrent_runs: int = 8,
                 missed: str = "skip", fires: bool = True) -> None:
        if missed not in ("skip", "run_once"):
            raise ValueError(f"missed must be 'skip' or 'run_once', got {missed!r}")
        self.agent = agent
        self.namespace = namespace
        self.clock = clock
        self.condition_interval = condition_interval
        self.max_active = max_active
        self.max_concurrent_runs = max_concurrent_runs
        self.missed = missed
        self.fires = fires
        """False: triggers made here are saved, but none fires in this process and the
        saved ones are neither restored nor skipped (``python -m agent_kernel run``: a
        one-shot prompt must not run, skip or cancel the workspace's triggers)."""
        self.store = TriggerStore(agent.workspace)
        self.triggers: dict[str, Trigger] = {}
        self.queue: list[Firing] = []
        self.running: dict[str, Firing] = {}
        self.listeners: list[Listener] = []
        self.on_created: list[Listener] = []
        self.restore_report: Any = None
        self._sched = schedule.Scheduler()
        self._jobs: dict[str, schedule.Job] = {}
        self._watches: dict[str, ConditionWatch] = {}
        self._tasks: dict[str, asyncio.Task[Any]] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pump: asyncio.Task[None] | None = None
        self._wake: asyncio.Future[None] | None = None
        self._next_check = self.clock()
        self._runs_seen: dict[str, tuple[str, str, str]] = {}
        self._runner_lock: Any = None
        agent.bus.subscribe(self._watch_runs)

    # -- life cycle -----------------------------------------------------------
    @property
    def started(self) -> bool:
        """True once :meth:`start` ran on a loop."""
        return self._loop is not None

    def start(self, *, pump: bool = True) -> Any:
        """Restore saved triggers and start the pump; needs a running asyncio loop."""
        if self._loop is not None:
            return self.restore_report
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError("the trigger scheduler needs a running asyncio loop "
                               "(a kernel, or inside asyncio.run)") from None
        self._next_check = self.clock()
        from agent_kernel.triggers.restore import RestoreReport, restore

        if not self.fires:  # saves what is made here; leaves the saved ones as they are
            self.restore_report = RestoreReport()
            return self.restore_report
        if self.agent.chat_model.needs_loading():  # the first firing should not wait for it
            self.agent.chat_model.warm_up()

        try:
            claimed = self._claim_store()
        except OSError as exc:  # a planted triggers/ link or lock (safe_open): said, not run
            self.restore_report = RestoreReport(problems=[
                f"saved triggers are not restored: {exc}"])
        else:
            self.restore_report = restore(self) if claimed else RestoreReport(problems=[
                f"{self.store.holder(self.agent.agent_id)} already runs this workspace's "
                f"triggers for agent {self.agent.agent_id!r}; they are not restored here"])
        if self.restore_report.has_news:
            self.agent.bus.emit(Notice("triggers", self.restore_report.text()))
        if pump:
            self._pump = self._loop.create_task(self._pump_forever(), name="agent-triggers")
        return self.restore_report

    @property
    def runs_here(self) -> bool:
        """This scheduler holds the workspace's runner lock: its saved triggers fire here."""
        return self._runner_lock is not None

    def ensure_started(self) -> None:
        """Start if not started yet (called by the tools, which run on a loop)."""
        if self._loop is None:
            self.start()

    async def close(self) -> None:
        """Stop the pump and the runs in flight; saved triggers stay saved."""
        if self._pump is not None:
            self._pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pump
            self._pump = None
        for task in list(self._tasks.values()):
            task.cancel()
        await asyncio.gather(*self._tasks.values(), *self._background, return_exceptions=True)
        self._tasks.clear()
        self.running.clear()
        self.queue.clear()
        self._sched.clear()
        self._jobs.clear()
        if self._runner_lock is not None:
            self._runner_lock.release()
            self._runner_lock = None

    def _claim_store(self) -> bool:
        self._runner_lock = self.store.claim(self.agent.agent_id)
        return self._runner_lock is not None

    async def drain(self, timeout: float = 30.0) -> None:
        """Wait until no fired run is running or queued (tests and the CLI use this)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while self._tasks or self.queue or self._background:
            pending = list(self._tasks.values()) + list(self._background)
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                raise TimeoutError("fired runs still going after the drain timeout")
            if pending:
                await asyncio.wait(pending, timeout=left)
            else:
                await asyncio.sleep(0)

    # -- making and cancelling ------------------------------------------------
    def active(self) -> list[Trigger]:
        """Triggers that will still fire."""
        return [t for t in self.triggers.values() if t.active]

    def pending(self) -> list[Trigger]:
        """Restored conditions waiting for the person's approval (never evaluated)."""
        return [t for t in self.triggers.values() if t.needs_approval]

    def check_room(self) -> None:
        """Refuse a new trigger past the per-agent limit (triggers awaiting approval count)."""
        if len(self.active()) + len(self.pending()) >= self.max_active:
            raise ValueError(f"At most {self.max_active} active schedules per agent; cancel one "
                             "with cancel_task or cancel_schedule first (list_tasks shows them)")

    def add(self, trigger: Trigger, *, first_due: datetime | None = None) -> Trigger:
        """Register a validated trigger, save it and book its first run."""
        if self._loop is None:  # made in a cell or a run: the loop is there, so start
            with contextlib.suppress(RuntimeError):
                self.start()
        self.check_room()
        self.triggers[trigger.id] = trigger
        self.book(trigger, first_due)
        self.store.save(trigger.to_record())
        self.record("trigger_created", trigger_id=trigger.id, type=trigger.kind,
                     prompt=trigger.prompt, when=trigger.schedule_text(),
                     run_id=trigger.scheduled_by_run_id, **trigger.trace_fields(),
                     **self._signature(trigger))
        for hook in list(self.on_created):
            try:
                hook(trigger)
            except Exception:
                log.exception("trigger display hook failed")
        self.changed(trigger)
        return trigger

    def cancel(self, trigger_id: str) -> bool:
        """Cancel an active trigger (or one awaiting approval); False when there is none."""
        trigger = self.triggers.get(trigger_id)
        if trigger is None or trigger.status not in LIVE:
            return False
        trigger.status = "cancelled"
        trigger.next_run = None
        self._unbook(trigger_id)
        self.queue = [f for f in self.queue if f.trigger_id != trigger_id]
        self.store.delete(trigger_id)
        self.record("trigger_cancelled", trigger_id=trigger_id, type=trigger.kind)
        self.changed(trigger)
        return True

    def _signature(self, trigger: Trigger) -> dict[str, str]:
        """``digest`` and ``mac`` that let the next kernel restore a time-based trigger made
        here without asking (nothing for a condition: its approval is its signed record)."""
        from agent_kernel.core.trust import TrustError, sign

        if trigger.kind == "conditional":
            return {}
        value = trigger.approval_digest()
        try:
            return {"digest": value, "mac": sign(value, workspace=self.agent.ledger.path.parent)}
        except TrustError as exc:
            self.agent.bus.emit(Notice("triggers", f"Trigger {trigger.id} is made but could "
                                       f"not be signed ({exc}); the next kernel will ask you to "
                                       "approve it before it runs.", level="warning"))
            return {"digest": value}

    def approve(self, trigger_id: str) -> bool:
        """The person approves a restored trigger: record it (with its digest, signed) and
        arm it (an overdue one-shot then runs at once). False when no trigger by that id
        needs approval."""
        trigger = self.triggers.get(trigger_id)
        if trigger is None or not trigger.needs_approval:
            return False
        self.record_approval(trigger)
        trigger.approved = True
        trigger.status = "active"
        self.book(trigger, None)
        self.store.save(trigger.to_record())
        self.changed(trigger)
        return True

    def record_approval(self, trigger: Trigger, run_id: str | None = None) -> None:
        """Write the person's approval of ``trigger`` (its condition, or its schedule) to
        the ledger, now."""
        if trigger.kind == "conditional":
            self.agent.approvals.record_person(
                "condition", {"trigger_id": trigger.id, "condition": trigger.condition,
                              "prompt": trigger.prompt, "cooldown": trigger.cooldown},
                trigger.approval_digest(), run_id=run_id or "person")
            return
        self.agent.approvals.record_person(
            "trigger", {"trigger_id": trigger.id, "type": trigger.kind,
                        "when": trigger.schedule_text(), "prompt": trigger.prompt,
                        **trigger.definition()},
            trigger.approval_digest(), run_id=run_id or "person")

    def cancel_queued(self, run_id: str) -> bool:
        """Drop a queued firing before its run starts."""
        for firing in self.queue:
            if firing.run_id == run_id:
                self.queue.remove(firing)
                self.record("trigger_skipped", trigger_id=firing.trigger_id, run_id=run_id,
                             reason="queued run cancelled")
                return True
        return False

    def book(self, trigger: Trigger, first_due: datetime | None) -> None:
        """Give ``schedule`` a job for the trigger's next run (conditions get a watch)."""
        self._unbook(trigger.id)
        if not trigger.approved:
            raise ValueError(f"trigger {trigger.id} is not approved, so it is not booked")
        if not trigger.active:
            raise ValueError(f"trigger {trigger.id} is {trigger.status_text}, so it is not "
                             "booked")
        if trigger.kind == "conditional":
            self._watches[trigger.id] = ConditionWatch(Condition.parse(trigger.condition))
            trigger.next_run = None
        else:
            now = self.clock()
            if first_due is None:
                if trigger.kind == "recurring":
                    first_due = now + timedelta(seconds=float(trigger.interval or 0))
                elif trigger.kind == "cron":
                    first_due = cron_next(str(trigger.cron), now)
                else:
                    first_due = parse_iso(str(trigger.run_at))
                    if first_due is None:
                        raise ValueError(f"trigger {trigger.id} has no runAt")
            # schedule's own annotation says int; seconds as a float work and keep sub-second
            # intervals exact. One-shot and cron jobs get next_run set below.
            seconds: Any = float(trigger.interval or 1) if trigger.kind == "recurring" else 1
            job = self._sched.every(seconds).seconds.do(
                functools.partial(self._job_fired, trigger.id))
            job.next_run = to_local_naive(max(first_due, now))
            self._jobs[trigger.id] = job
            trigger.next_run = iso(first_due)
        self._poke()

    def _unbook(self, trigger_id: str) -> None:
        job = self._jobs.pop(trigger_id, None)
        if job is not None:
            self._sched.cancel_job(job)
        self._watches.pop(trigger_id, None)
        self._poke()

    # -- the pump ---------------------------------------------------------------
    async def _pump_forever(self) -> None:
        while True:
            try:
                self.run_due()
            except Exception as exc:  # a bug here must not stop every trigger
                log.exception("trigger pump pass failed")
                self.agent.bus.emit(Notice("triggers", f"Trigger scheduler error: {exc}",
                                           level="error"))
            # A plain future woken by a timer or by _poke: cheaper than wait_for, and
            # cancelling the pump cancels exactly one await.
            loop = asyncio.get_running_loop()
            self._wake = loop.create_future()
            timer = loop.call_later(self._sleep_for(), self._poke)
            try:
                await self._wake
            finally:
                timer.cancel()

    def _sleep_for(self) -> float:
        delays = [MAX_SLEEP]
        idle = self._sched.idle_seconds
        if idle is not None:
            delays.append(max(0.0, idle) + 0.001)
        if self._watches:
            delays.append(max(0.0, (self._next_check - self.clock()).total_seconds()))
        return min(delays)

    def _poke(self) -> None:
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    def run_due(self) -> None:
        """One pass: fire due jobs, then check conditions if their cadence is up."""
        self._sched.run_pending()
        now = self.clock()
        if self._watches and now >= self._next_check:
            self._next_check = now + timedelta(seconds=self.condition_interval)
            for trigger_id, watch in list(self._watches.items()):
                check_condition(self, trigger_id, watch, now)
        for trigger_id, job in self._jobs.items():
            if job.next_run is not None and trigger_id in self.triggers:
                self.triggers[trigger_id].next_run = iso(from_local_naive(job.next_run))

    def _job_fired(self, trigger_id: str) -> Any:
        # A job that raised would stay due and the pump would call it again at once, for
        # ever: a failing job is reported and dropped instead.
        try:
            return self._job_due(trigger_id)
        except Exception as exc:
            log.exception("trigger job failed")
            self._jobs.pop(trigger_id, None)
            trigger = self.triggers.get(trigger_id)
            if trigger is not None and trigger.active:
                trigger.status = "error"
                trigger.next_run = None
                self.changed(trigger)
            self.agent.bus.emit(Notice("triggers", f"Trigger {trigger_id} stopped: {exc}",
                                       level="error"))
            self.record("trigger_error", trigger_id=trigger_id, error=str(exc))
            return schedule.CancelJob

    def _job_due(self, trigger_id: str) -> Any:
        job = self._jobs.get(trigger_id)
        trigger = self.triggers.get(trigger_id)
        if job is None or trigger is None or not trigger.active:
            return schedule.CancelJob
        due = from_local_naive(job.next_run) if job.next_run else self.clock()
        if trigger.kind == "recurring":
            self.fire(trigger, due)
            return None
        if trigger.kind in ONE_SHOT:
            trigger.status = "done"
            trigger.next_run = None
            self._jobs.pop(trigger_id, None)
            self.store.delete(trigger_id)
            self.fire(trigger, due)
            return schedule.CancelJob
        self.fire(trigger, due)
        now = self.clock()
        self.book(trigger, cron_next(str(trigger.cron), max(now, due)))
        self.store.save(trigger.to_record())
        return schedule.CancelJob

    # -- firing and running ---------------------------------------------------
    def fire(self, trigger: Trigger, due: datetime) -> Firing | None:
        """Start a run for ``trigger`` now, or queue it behind its previous run (never one
        that is not approved: a restored trigger without a signed record of it)."""
        if not trigger.approved:
            self.record("trigger_skipped", trigger_id=trigger.id, due_at=iso(due),
                         reason="not approved")
            return None
        now = self.clock()
        firing = Firing(new_id("run"), trigger.id, due, now)
        trigger.last_fired_at = iso(now)
        busy = any(f.trigger_id == trigger.id for f in self.running.values())
        if busy or len(self.running) >= self.max_concurrent_runs:
            if any(f.trigger_id == trigger.id for f in self.queue):
                trigger.skipped += 1
                self.record("trigger_skipped", trigger_id=trigger.id, due_at=iso(due),
                             reason="previous run still going; one firing is already queued")
                self.changed(trigger)
                return None
            self.queue.append(firing)
            self.record("trigger_queued", trigger_id=trigger.id, run_id=firing.run_id,
                         due_at=iso(due))
            self.changed(trigger)
            return firing
        self._start_run(firing)
        return firing

    def _start_run(self, firing: Firing) -> None:
        loop = self._loop or asyncio.get_running_loop()
        self.running[firing.run_id] = firing
        self._tasks[firing.run_id] = loop.create_task(self._run(firing),
                                                      name=f"trigger-{firing.trigger_id}")
        trigger = self.triggers.get(firing.trigger_id)
        if trigger is not None:  # panels show it as running now
            self.changed(trigger)

    def _start_queued(self) -> None:
        for firing in list(self.queue):
            if len(self.running) >= self.max_concurrent_runs:
                return
            if any(f.trigger_id == firing.trigger_id for f in self.running.values()):
                continue
            self.queue.remove(firing)
            self._start_run(firing)

    async def _run(self, firing: Firing) -> None:
        from agent_kernel.triggers.runner import run_firing

        try:
            await run_firing(self, firing)
        finally:
            self.running.pop(firing.run_id, None)
            self._tasks.pop(firing.run_id, None)
            self._start_queued()

    # -- bookkeeping ----------------------------------------------------------
    def record(self, kind: str, **fields: Any) -> None:
        """Append a ledger record off the loop (or inline without one)."""
        fields.setdefault("agent_id", self.agent.agent_id)

        run_id = str(fields.get("run_id") or "triggers")

        async def write() -> None:
            record = await asyncio.to_thread(self.agent.ledger.record_event, kind, **fields)
            self.agent.bus.emit(LedgerRecorded(run_id, record))

        loop = self._loop
        if loop is None or loop.is_closed():
            self.agent.ledger.record_event(kind, **fields)
            return
        task = loop.create_task(write())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def changed(self, trigger: Trigger) -> None:
        """Tell the listeners (panels) that ``trigger`` changed."""
        for listener in list(self.listeners):
            try:
                listener(trigger)
            except Exception:
                log.exception("trigger listener failed; removed")
                self.listeners.remove(listener)

    def _watch_runs(self, event: object) -> None:
        if isinstance(event, RunStarted):
            self._runs_seen[event.run_id] = (event.prompt, "trigger" if event.trigger else "run",
                                             iso(datetime.fromtimestamp(event.at).astimezone())
                                             or "")
        elif isinstance(event, RunFinished):
            self._runs_seen.pop(event.run_id, None)

    def run_info(self, run_id: str) -> tuple[str, str, str] | None:
        """``(prompt, type, createdAt)`` of a run in progress, if this agent started it."""
        return self._runs_seen.get(run_id)
