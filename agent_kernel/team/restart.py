"""The tasks an earlier kernel left, taken back onto a new team's board.

A team's open tasks are files (``team/tasks/``), so a kernel that died leaves
them behind. :class:`Restart` reads them back once, when the team is made:
a queued task waits for the person's word (:attr:`Restart.undecided`: on no
queue, never started, its file kept) until they say Run or Drop
(:mod:`agent_kernel.team.restored` asks); a task that was running is
``interrupted``; a Planner's held delegation is cancelled (its Planner never
finished); a conditional delegation whose trigger still lives comes back so
its firings keep their priority and timeout. Each is recorded.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from agent_kernel.core.ledger import now_iso
from agent_kernel.core.safe_open import read_capped
from agent_kernel.core.workspace import Workspace
from agent_kernel.team.board import TaskBoard
from agent_kernel.team.queue import RestoreReport, Task


class Restart:
    """What an earlier kernel left on the board, and the person's word on it."""

    def __init__(self, board: TaskBoard, workspace: Workspace,
                 dispatch: Callable[[], None]) -> None:
        self.board = board
        self.workspace = workspace
        self.dispatch = dispatch
        """Starts queued tasks while their role has room (the supervisor's)."""
        self.restored: list[Task] = []
        """Queued tasks an earlier session left, read back by :meth:`restore`."""
        self.undecided: list[Task] = []
        """Restored tasks the person has not yet said to run or drop: on no queue, never
        started (their files stay)."""

    def restore(self, report: RestoreReport) -> None:
        """Take back the tasks an earlier kernel left (into ``report``): keep the queued
        ones (not started yet) for the person's word (:attr:`undecided`), mark the running
        ones interrupted, cancel held ones (their Planner never finished)."""
        board = self.board
        tasks, problems = board.store.load_all()
        report.problems += problems
        fresh = [t for t in tasks if t.id not in board.tasks and t.open]
        report.problems += [f"{t.id}.json: not restored: its status is {t.status!r}, not held, "
                            f"queued, running or trigger" for t in tasks
                            if not t.open and t.status != "trigger"]
        for task in tasks:  # a conditional delegation: its firings keep priority and timeout
            if task.status == "trigger" and task.id not in board.tasks:
                if self._trigger_lives(task.trigger_id):
                    task.children = []
                    board.tasks[task.id] = task
                else:
                    board.store.delete(task.id)
        for task in fresh:
            board.tasks[task.id] = task
        for task in fresh:  # only tasks this team knows, so settling never looks up a stranger
            task.children = [c for c in task.children if c in board.tasks]
            if task.status == "queued":  # run only when the person says so (Team asks)
                self.undecided.append(task)
                self.restored.append(task)
                report.queued.append(task)
            elif task.status == "running":
                task.status, task.ended_at = "interrupted", now_iso()
                task.error = "the kernel stopped while this task was running"
                board.record_now("task_interrupted", task, error=task.error)
                board.store.interrupted(task)
                report.interrupted.append(task)
            else:  # held by a Planner whose run never ended
                task.status, task.ended_at = "cancelled", now_iso()
                task.error = "its Planner's run never ended: the kernel stopped first"
                board.record_now("task_cancelled", task, error=task.error)
                board.store.delete(task.id)
                report.cancelled.append(task)

    def _trigger_lives(self, trigger_id: str | None) -> bool:
        """True when the desk's saved trigger ``trigger_id`` is still live."""
        from agent_kernel.triggers.model import LIVE
        from agent_kernel.triggers.store import TriggerStore

        if not trigger_id:
            return False
        try:
            path = TriggerStore(self.workspace).folder / f"{trigger_id}.json"
            if "/" in trigger_id or trigger_id.startswith("."):
                return False
            record = json.loads(read_capped(self.workspace.root,
                                            f"{path.parent.name}/{path.name}", 256 * 1024))
        except (OSError, ValueError):
            return False
        return isinstance(record, dict) and record.get("status") in LIVE

    def run(self, count: int | None = None) -> list[Task]:
        """The person said Run: the restored tasks (the first ``count``, those the person
        was shown) go back on their queues, in their order (:meth:`resume` starts them);
        the rest stay undecided."""
        count = len(self.undecided) if count is None else count
        released, self.undecided = self.undecided[:count], self.undecided[count:]
        for task in released:
            self.board.queues[task.role].push(task)
        return released

    def drop(self, why: str) -> list[Task]:
        """The person said Drop: each restored task ends as cancelled, its file goes, and a
        ``task_cancelled`` record says why."""
        board = self.board
        dropped, self.undecided = self.undecided, []
        for task in dropped:
            task.status, task.error, task.ended_at = "cancelled", why, now_iso()
            board.store.delete(task.id)
            board.record_now("task_cancelled", task, error=why)
            board.settle(task)
            board.changed(task)
        return dropped

    def resume(self) -> list[Task]:
        """Start the restored tasks the person let run (needs the running loop); returns
        those not ended yet."""
        waiting = [t for t in self.restored if t.open and t not in self.undecided]
        for task in waiting:
            self.board.expect(task)
        self.dispatch()
        return waiting


__all__ = ["Restart"]
