"""The Teller's runs for one prompt, shown as one run.

``Team.arun`` runs the Teller once on the prompt and once more on each wave
of results, each time with a run id of its own. The run views
(:class:`~agent_kernel.notebook.widgets.WidgetView`, :class:`~agent_kernel.views.text.TextView`)
follow one run id, so a :class:`TellerRelay` listens to the Teller's bus and
re-emits its events on a bus of its own under one run id: the first
``RunStarted`` passes, a later one is dropped (the team's notice before it says
why the Teller runs again: results came back, or the person answered), and
only the last ``RunFinished`` is passed on, when :meth:`close`
is called after the prompt's work has ended. The events of the Planners and
Workers of the prompt's tree come along wrapped in
:class:`~agent_kernel.core.events.AgentActivity`, which the views show nested
under each agent. The relay has ``bus``,
``questions`` and ``stop``, which is all a view needs of an agent.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import TYPE_CHECKING, Any

from agent_kernel.core.events import (
    AgentActivity,
    Event,
    EventBus,
    Question,
    QuestionAnswered,
    RunError,
    RunFinished,
    RunStarted,
)

if TYPE_CHECKING:
    from agent_kernel.team.queue import Task, TaskTree
    from agent_kernel.team.team import Team, TeamResult


class TellerRelay:
    """Re-emits the Teller's events for one prompt under ``run_id``."""

    def __init__(self, team: Team, run_id: str) -> None:
        self.team = team
        self.run_id = run_id
        self.bus = EventBus()
        self.questions = team.teller.questions
        self.task: asyncio.Task[Any] | None = None
        """The task running the prompt (set by whoever starts it), cancelled by :meth:`stop`."""
        self._before = set(team.supervisor.board.tasks)
        self._started = False
        self._current: str | None = None
        self._held: RunFinished | None = None
        self._closed = False
        self._unsubscribe = team.teller.bus.subscribe(self._on_event)
        self._by_run: dict[str, Task] = {}
        self._elsewhere: set[str] = set()
        self._order: dict[str, int] = {}
        self._unsubscribe_team = team.bus.subscribe(self._on_team_event)

    @property
    def model(self) -> str:
        """The Teller's model."""
        return str(self.team.teller.model)

    def _on_event(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self._current = event.run_id
            self._held = None
            if self._started:  # the team said why it runs again (a notice)
                return
            self._started = True
        elif isinstance(event, RunFinished):
            self._held = dataclasses.replace(event, run_id=self.run_id)
            return
        self.bus.emit(dataclasses.replace(event, run_id=self.run_id))

    def _on_team_event(self, event: Event) -> None:
        """A Planner's or Worker's event of this prompt's tree: carried in, to be nested."""
        if isinstance(event, (AgentActivity, Question, QuestionAnswered)):
            return  # questions come to the top through the Teller's channel
        task = self._by_run.get(event.run_id)
        if task is None:
            if event.run_id in self._elsewhere:
                return
            made = self.new_tasks()
            self._order = {t.id: number for number, t in enumerate(made)}
            self._by_run = {t.run_id: t for t in made if t.run_id and t.parent_id is not None}
            task = self._by_run.get(event.run_id)
            if task is None:  # the Teller's, or another prompt's: a run id is set before
                self._elsewhere.add(event.run_id)  # its first event, so this is final
                return
        self.bus.emit(AgentActivity(self.run_id, agent_id=task.agent_id or task.role,
                                    role=task.role, task_id=task.id,
                                    parent_task_id=task.parent_id, prompt=task.prompt,
                                    inner=event, order=self._order.get(task.id, 0)))

    def new_tasks(self) -> list[Task]:
        """The tasks made since this prompt began (its tree), oldest first."""
        tasks = self.team.supervisor.board.tasks
        return [t for tid, t in tasks.items() if tid not in self._before]

    def tree(self, result: TeamResult | None = None) -> TaskTree:
        """The prompt's task tree: the result's, else built from the tasks made so far."""
        if result is not None:
            return result.tree
        roots = [t for t in self.new_tasks() if t.parent_id is None]
        if not roots:
            return {"children": []}
        return self.team.tree(roots[-1])

    def stop(self, run_id: str | None = None) -> int:
        """Stop the prompt's work: every open task of its tree, the Teller's run, the task."""
        stopped = 0
        for task in self.new_tasks():
            if task.open and task.parent_id is not None and self.team.supervisor.stop(task.id):
                stopped += 1
        if self._current is not None:
            stopped += self.team.teller.stop(self._current)
        if self.task is not None and not self.task.done():
            self.task.get_loop().call_soon_threadsafe(self.task.cancel)
            stopped += 1
        return stopped

    async def settle(self, timeout: float = 10.0) -> bool:
        """Wait (at most ``timeout`` seconds) until every task of the prompt has ended, as
        stopped tasks do shortly after :meth:`stop`; True when they all have."""
        waiting = [asyncio.ensure_future(self.team.supervisor.board.settled(t))
                   for t in self.new_tasks() if t.open and t.parent_id is not None]
        if not waiting:
            return True
        _done, pending = await asyncio.wait(waiting, timeout=timeout)
        for future in pending:
            future.cancel()
        return not pending

    def close(self, result: TeamResult | None = None) -> None:
        """The prompt's work has ended: say how, pass the last ``RunFinished`` on, stop
        listening."""
        if self._closed:
            return
        self._closed = True
        self._unsubscribe()
        self._unsubscribe_team()
        if result is not None and not result.ok and self._held is not None and (
                getattr(self._held.result, "ok", False)):
            kind = "limit" if result.status == "limit" else "error"
            self.bus.emit(RunError(self.run_id, result.error or result.status, kind=kind))
        if self._held is not None:
            held = self._held
            finished = held.result
            if result is not None and dataclasses.is_dataclass(finished) and not isinstance(
                    finished, type):
                # the prompt took as long as its whole tree did, not the Teller's last run
                held = dataclasses.replace(held, result=dataclasses.replace(
                    finished, duration_ms=result.duration_ms))
            self.bus.emit(held)
