"""The task board of one team: every task, where it waits, what runs, and one life cycle.

The supervisor (delegated tasks), the society (spawned agents' tasks) and the
budget share one :class:`TaskBoard`, passed in, and never reach into each other:
the board holds the tasks by id, the Planner and Worker queues, a Planner's
held delegations, the running set and each running task's agent, the futures
that resolve when a task *settles* (it and every one-shot task under it
ended), the listeners told of every change, and the ledger the team's task
records go to. A task's place in the tree (role, task id, parent task, parent
agent, trace id) is put into ledger records in one place, :func:`task_fields`.

:class:`TaskLife` is the one life cycle of a task's agent, whoever started it:
``task_started`` recorded, the task's wall-clock limit kept on a
:class:`~agent_kernel.engine.tool_clock.ToolClock` (time a person is asked not
counted), the run's status mapped (a spent clock is ``timeout``, a limit's
stop ``limit``, an ended agent ``terminated``), the board cleaned up,
``task_finished`` recorded, and the task settled. A kind of task says only
what differs: how its run goes, its limit's wording, what else ends with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from agent_kernel.core.events import EventBus, LedgerRecorded, Notice
from agent_kernel.core.ledger import Ledger, new_id, now_iso
from agent_kernel.core.statuses import RunOutcome, TaskEnding, TaskStatus
from agent_kernel.core.workspace import Workspace
from agent_kernel.engine.tool_clock import ToolClock
from agent_kernel.team.queue import Task, TaskQueue, TaskStore
from agent_kernel.team.roles import PLANNER, WORKER

if TYPE_CHECKING:
    from agent_kernel.engine.agent import Agent, RunResult

log = logging.getLogger(__name__)


def task_fields(task: Task) -> dict[str, str | None]:
    """``task``'s place in its tree, as every ledger record about it carries it."""
    return {"role": task.role, "task_id": task.id, "parent_task_id": task.parent_id,
            "parent_agent_id": task.parent_agent_id, "trace_id": task.trace_id}


def task_record(task: Task, **fields: object) -> dict[str, Any]:
    """The body of a ledger record about ``task``: who, where in the tree, and ``fields``."""
    return {"agent_id": task.agent_id or task.parent_agent_id, **task_fields(task),
            "priority": task.priority, "type": task.type, "run_id": task.run_id, **fields}


class TaskBoard:
    """The tasks of one team and their state, shared by supervisor, society and budget."""

    def __init__(self, workspace: Workspace, bus: EventBus) -> None:
        self.bus = bus
        self.store = TaskStore(workspace)
        """One JSON file per open task, so a later kernel can take them back."""
        self.ledger: Ledger | None = None
        """Where task records go (the desk's, set when the team has one); None: nowhere."""
        self.tasks: dict[str, Task] = {}
        self.queues = {PLANNER: TaskQueue(), WORKER: TaskQueue()}
        self.held: dict[str, list[Task]] = {}
        """A Planner's delegations by its task id, until its run ends."""
        self.running: dict[str, Task] = {}
        self.agents: dict[str, Agent] = {}
        """The agent of each running task, by task id."""
        self.started: list[str] = []
        """Delegated task ids in the order their runs started."""
        self.counts = {PLANNER: 0, WORKER: 0}
        """Delegated tasks running now, per queue (a spawned agent's task is on none)."""
        self.peak = {PLANNER: 0, WORKER: 0}
        self.stopping: set[str] = set()
        """Running tasks stopped before their agent's run began: they end as it begins."""
        self.finishing: set[str] = set()
        """Tasks that have ended whose ``task_finished`` is not on disk yet: the task they
        sit under does not settle before it is."""
        self.listeners: list[Callable[[Task], None]] = []
        """Called with a task whenever it is held, queued, started or ended (the team
        board listens here); a failing listener is logged and dropped."""
        self._settled: dict[str, asyncio.Future[Task]] = {}
        self._background: set[asyncio.Task[None]] = set()

    # -- tasks ------------------------------------------------------------------------
    def root(self, prompt: str, role: str) -> Task:
        """The task at the top of a tree: one prompt to the Teller, with a new trace id."""
        task = Task(id=new_id("task"), role=role, prompt=prompt, depth=0, status="running",
                    created_at=now_iso(), trace_id=new_id("trace"))
        self.tasks[task.id] = task
        self.expect(task)
        self.changed(task)
        return task

    def new_task(self, parent: Task, agent_id: str, role: str, prompt: str, **fields: Any
                 ) -> Task:
        """A task made by ``agent_id`` while it works on ``parent``."""
        task = Task(id=new_id("task"), role=role, prompt=prompt, parent_id=parent.id,
                    parent_agent_id=agent_id, depth=parent.depth + 1, created_at=now_iso(),
                    root_id=parent.tree_id, **fields)
        if task.trace_id is None:
            task.trace_id = parent.trace_id
        self.tasks[task.id] = task
        self.expect(task)
        parent.children.append(task.id)
        return task

    def expect(self, task: Task) -> None:
        """Make ``task``'s settle future on the running loop (again, for a restored task
        whose future belongs to a loop that is gone)."""
        loop = asyncio.get_running_loop()
        future = self._settled.get(task.id)
        if future is None or future.get_loop() is not loop:
            self._settled[task.id] = loop.create_future()

    def changed(self, task: Task) -> None:
        """Tell the listeners that ``task`` changed."""
        for listener in list(self.listeners):
            try:
                listener(task)
            except Exception:
                log.exception("a team listener failed; it is dropped")
                self.listeners.remove(listener)

    def settle(self, task: Task | None) -> None:
        """Resolve ``task`` once it and every one-shot task under it ended; then its parent."""
        while task is not None:  # a child whose file is still being deleted is not done
            if task.open or task.id in self.finishing or any(
                    self.tasks[c].open or self.store.pending(c) or c in self.finishing
                    for c in task.children):
                return
            future = self._settled.get(task.id)
            if future is None or future.done():
                return
            future.set_result(task)
            task = self.tasks.get(task.parent_id or "")

    async def settled(self, task: Task) -> Task:
        """Wait until ``task`` and everything it delegated have ended."""
        return await asyncio.shield(self._settled[task.id])

    def end(self, task: Task, status: TaskStatus, error: str | None = None) -> None:
        """End a task that never ran (cancelled, refused, released badly): its file goes."""
        task.status, task.error, task.ended_at = status, error, now_iso()
        self.store.delete(task.id)
        self.settle(task)
        self.changed(task)

    # -- running ----------------------------------------------------------------------
    def begin(self, task: Task, agent: Agent | None = None, *, queued: bool = True) -> None:
        """``task`` runs from now (its agent, when made already); a ``queued`` one takes
        its queue's room until it ends."""
        self.running[task.id] = task
        if agent is not None:
            self.agents[task.id] = agent
        if queued:
            self.counts[task.role] += 1
            self.peak[task.role] = max(self.peak[task.role], self.counts[task.role])
            self.started.append(task.id)

    def label(self, agent: Agent, task: Task) -> None:
        """``agent`` works on ``task``: its place in the tree goes on every ledger record
        the agent writes, and its tools find the task."""
        agent.services.team_task = task
        agent.ledger_fields = task_fields(task)

    def spawn(self, work: Coroutine[Any, Any, None], name: str | None = None
              ) -> asyncio.Task[None]:
        """Run ``work`` on the loop, kept until it ends (a fire-and-forget task is not
        collected halfway)."""
        made = asyncio.get_running_loop().create_task(work, name=name)
        self._background.add(made)
        made.add_done_callback(self._background.discard)
        return made

    # -- the ledger ---------------------------------------------------------------------
    async def record(self, kind: str, task: Task, **fields: object) -> None:
        """Write a task's record (its place in the tree included); a failure is a notice."""
        if self.ledger is None:
            return
        try:
            [made] = await self.ledger.append_async([self._body(kind, task, fields)])
        except Exception as exc:
            self._not_recorded(kind, task, exc)
            return
        self.bus.emit(LedgerRecorded(task.run_id or "team", made))

    def record_queued(self, kind: str, task: Task, **fields: object) -> None:
        """Queue a task's record in the ledger now and go on without waiting for the disk:
        every record written after this call (the task's run's) is chained after it, so it
        is on disk before any of them is. Its event, or a failure's notice, follows."""
        if self.ledger is None:
            return
        try:
            pending = self.ledger.queue([self._body(kind, task, fields)])
        except Exception as exc:
            self._not_recorded(kind, task, exc)
            return

        async def told() -> None:
            try:
                [made] = await pending.written()
            except Exception as exc:
                self._not_recorded(kind, task, exc)
                return
            self.bus.emit(LedgerRecorded(task.run_id or "team", made))

        self.spawn(told())

    @staticmethod
    def _body(kind: str, task: Task, fields: dict[str, object]) -> dict[str, object]:
        return {"kind": kind, "record_id": new_id("rec"), **task_record(task, **fields)}

    def _not_recorded(self, kind: str, task: Task, exc: Exception) -> None:
        self.bus.emit(Notice(task.run_id or "team", f"The ledger could not record "
                             f"{kind} of {task.id}: {exc}", level="error"))

    def record_now(self, kind: str, task: Task, **fields: object) -> None:
        """Write a task's record from plain code; a failure is logged and the caller goes on."""
        if self.ledger is None:
            return
        try:
            self.ledger.record_event(kind, **task_record(task, **fields))
        except Exception:
            log.exception("could not record %s of %s", kind, task.id)

    def record_soon(self, kind: str, task: Task, **fields: object) -> None:
        """Write a task's record on the loop, or here when called from plain code."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            self.record_now(kind, task, **fields)
            return
        self.spawn(self.record(kind, task, **fields))


class TaskLife:
    """The life of one task's agent on the board: start, clock, run, end, record, settle.

    The defaults are a delegated task's (a Planner's or a Worker's); a spawned agent's
    task (:mod:`agent_kernel.team.members`) changes the hooks below."""

    saved = True
    """The task's file is kept while it runs (a restart names it interrupted)."""
    queued = True
    """The task took its queue's room (:meth:`TaskBoard.begin`)."""
    over_time = "the task exceeded its {timeout:g} s limit (time waiting for you not counted)"
    cut_short = "stopped before its run began"
    """The error when the life is cancelled before its run ended."""

    def __init__(self, board: TaskBoard, task: Task, agent: Agent, timeout: float) -> None:
        self.board, self.task, self.agent, self.timeout = board, task, agent, timeout

    # -- what a kind of task says ---------------------------------------------------------
    async def run(self) -> RunResult:
        """The task's run (or runs) to its end."""
        return await self.agent.arun(self.task.prompt, run_id=self.task.run_id)

    async def before_run(self) -> None:
        """The task's file says ``running`` on disk before its run begins (written off the
        loop; the loop goes on meanwhile)."""
        await self.board.store.asave(self.task)

    def started_fields(self) -> dict[str, Any]:
        """What ``task_started`` says besides the task's place in the tree."""
        return {}

    def finished_fields(self) -> dict[str, Any]:
        """What ``task_finished`` says besides status, error and result."""
        return {}

    def ending(self) -> str | None:
        """Why the agent is being ended from outside (then its status is ``terminated``)."""
        return None

    def ended(self, status: TaskEnding, error: str | None) -> None:
        """The task has ended (the board already knows): what else ends with it."""

    async def after(self, status: TaskEnding) -> None:
        """After ``task_finished`` is written and before the task settles."""

    # -- the one life cycle -------------------------------------------------------------
    async def live(self) -> TaskEnding:
        """Run the task's agent under its wall-clock limit and end the task, whatever
        happens; returns the status ``task_finished`` recorded."""
        board, task, agent = self.board, self.task, self.agent
        clock = ToolClock(self.timeout)  # stands still while a person is asked
        timed_out: list[bool] = []
        end_clock = clock.keep_time(lambda: timed_out.append(agent.stop(task.run_id) >= 0))
        status: TaskEnding
        status, error = "error", None
        try:
            if self.saved:
                await self.before_run()
            # queued, not awaited: the run starts now, and every record it writes is
            # chained after this one (so on disk after it)
            board.record_queued("task_started", task, **self.started_fields())
            if task.id in board.stopping:  # stopped before its run began
                raise asyncio.CancelledError
            result = await self.run()
            task.result = result.reply
            status, error = self.outcome(result.status, result.error, bool(timed_out))
        except asyncio.CancelledError:
            ending = self.ending()
            status, error = ("terminated", ending) if ending else ("cancelled", self.cut_short)
        except Exception as exc:  # ours: the task still ends, the team goes on
            log.exception("team task %s (%s) failed", task.id, agent.agent_id)
            error = f"{type(exc).__name__}: {exc}"
        finally:
            end_clock()
            board.finishing.add(task.id)  # ended, but not settled before its record is down
            self._leave(status, error)
            self.ended(status, error)
            board.changed(task)
        try:
            if self.saved:  # its file is gone before task_finished is written, as before
                with contextlib.suppress(Exception):  # a failed delete is logged; it ends
                    await board.store.written(task.id)
            await board.record("task_finished", task, status=status, error=error,
                               result=task.result[:2000], **self.finished_fields())
            await self.after(status)
        finally:
            board.finishing.discard(task.id)
        board.settle(task)
        return status

    def outcome(self, status: RunOutcome, error: str | None, timed_out: bool
                ) -> tuple[TaskEnding, str | None]:
        """The task's status from its run's: why a stopped run was stopped."""
        ending = self.ending()
        if ending is not None:
            return "terminated", ending
        if status == "cancelled" and timed_out:
            return "timeout", self.over_time.format(timeout=self.timeout)
        if status == "cancelled" and self.task.error:  # stopped by a limit
            return "limit", self.task.error
        return status, error

    def _leave(self, status: TaskEnding, error: str | None) -> None:
        """Take the task off the running set and write its end on it."""
        board, task = self.board, self.task
        board.stopping.discard(task.id)
        if self.queued:
            board.counts[task.role] -= 1
        board.running.pop(task.id, None)
        board.agents.pop(task.id, None)
        if self.saved:  # off the loop, after the task's earlier writes
            board.store.delete_soon(task.id)
        task.status = "cancelled" if status == "terminated" else status
        task.error, task.ended_at = error, now_iso()


__all__ = ["TaskBoard", "TaskLife", "task_fields", "task_record"]
