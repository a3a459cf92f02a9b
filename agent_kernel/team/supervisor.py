"""The supervisor: routes delegated work through priority queues to agents of each role.

Spec 000's routing, on the kernel's asyncio loop: a Teller's ``delegate`` puts
a task on the planner queue at once; a Planner's delegations are *held* and go
on the worker queue together when the Planner's run ends (so they are
ordered by priority, never by who asked first). Each queue hands out the
highest priority first, oldest first within one, to at most ``max_planners``
/ ``max_workers`` agents at a time. Every task runs in an agent of its own
(``planner-3``, ``worker-12``: an ``Agent`` costs a fifth of a millisecond)
whose ledger records carry the task's id, role, parent and ``traceId``, and
under its role's wall-clock limit. A task *settles* when its run and the
runs of every one-shot task it delegated have ended: that is when its result
reaches whoever waits for it (a Planner's, with its Workers' results, goes
back to the Teller). Limits end runaways with a message the model can read:
queued tasks, depth, delegations per run (a Planner delegating in a loop is
stopped), wall-clock per task, and tokens and cost per task tree and per
session (``budget.py``).

The tasks themselves, their queues and their life cycle are the team's
:class:`~agent_kernel.team.board.TaskBoard`'s, which the supervisor shares with the
society (spawned agents) and the budget; the supervisor decides what goes where.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any, Protocol

from agent_kernel.core.config import Settings
from agent_kernel.core.events import EventBus
from agent_kernel.core.ledger import new_id, now_iso
from agent_kernel.core.statuses import TaskEnding
from agent_kernel.core.workspace import Workspace
from agent_kernel.engine.agent import Agent, RunResult
from agent_kernel.engine.models import Model
from agent_kernel.engine.models.base import ToolSchema
from agent_kernel.engine.registry import SchemaKey, Tool, ToolContext, ToolError, Toolset
from agent_kernel.engine.services import (
    AgentServices,
    HistoryService,
    TaskSummary,
    share_kernel,
)
from agent_kernel.team.agent_ids import (
    TRUSTED_AGENT_NUMBER,
    first_agent_number,
    reserve_agent_numbers,
)
from agent_kernel.team.asking import NamedQuestions, PendingQuestion, QuestionStore
from agent_kernel.team.board import TaskBoard, TaskLife
from agent_kernel.team.budget import TeamBudget
from agent_kernel.team.limits import TeamLimits
from agent_kernel.team.members import Society
from agent_kernel.team.queue import RestoreReport, Task, TaskQueue, task_of
from agent_kernel.team.restart import Restart
from agent_kernel.team.roles import MAX_AGENT_NUMBER, PLANNER, ROLE_PERMITS, ROLES, TELLER, WORKER
from agent_kernel.triggers import existing_scheduler

TELLER_ID = TELLER
"""The Teller's agent id: whose memories and conversation a team's members share."""

log = logging.getLogger(__name__)
PROMPT_LIMIT = 100


def cut(text: str) -> str:
    """A prompt as ``list_tasks`` shows it: at most 100 characters."""
    return text if len(text) <= PROMPT_LIMIT else text[: PROMPT_LIMIT - 1] + "…"


class RemotePlace(Protocol):
    """Where Worker tasks run when not in this kernel: a Dask cluster (``cluster.py``)."""

    lost: str | None
    """Why it cannot be used any more, or None."""

    def life(self, supervisor: Supervisor, task: Task, agent: Agent) -> TaskLife:
        """The life of a Worker task whose run goes there."""
        ...


class DelegatedLife(TaskLife):
    """A Planner's or a Worker's task: its run may wait for messages (the society's), and
    its end hands a Planner's held delegations on and frees its queue's room."""

    def __init__(self, supervisor: Supervisor, task: Task, agent: Agent) -> None:
        super().__init__(supervisor.board, task, agent,
                         task.timeout or supervisor.limits.timeouts[task.role])
        self.supervisor = supervisor

    async def run(self) -> RunResult:
        """The task's run, resumed in the same conversation after each wait for a message."""
        sup, task = self.supervisor, self.task
        return await sup.society.run_task(
            self.agent, task, task.prompt,
            on_wait=(lambda: sup.release_held(task, ended_well=True))
            if task.role == PLANNER else None)

    async def before_run(self) -> None:
        """A run in this kernel sends its first model call, then its ``running`` file is
        written while the model works (:meth:`Supervisor._start`), and its tool
        calls (its first effects) wait for the file (docs/team.md, "Persistence"); a run
        elsewhere (a subclass's own ``run``) waits for it first."""
        written = self.supervisor.start_writes.pop(self.task.id)  # every life is _start's
        if type(self).run is not DelegatedLife.run:
            await asyncio.wrap_future(written)
            return

        async def on_disk() -> None:  # raises as the write did, however long ago it ended
            if not written.done():
                await asyncio.wrap_future(written)
            written.result()

        self.agent.services.before_tools = on_disk

    def ended(self, status: TaskEnding, error: str | None) -> None:
        """Its held delegations go on (or end with it), and what waits may start."""
        self.supervisor.release_held(self.task)


MAX_TAKEN = 64
"""Agent numbers a team takes from the workspace's counter at most at once."""

TAKEN_AHEAD = 8
"""Agent numbers a team takes from the counter at least at once: the lock and the counter's
file cost 0.25-0.3 ms on the way to a task's first model call, twice a delegated task
(docs/performance.md); a kernel that ends leaves at most seven of its numbers unused."""

MAX_SCHEMA_SETS = 32
"""Distinct tool sets whose schemas a team keeps (a role each, and the tool sets the session's
``@tool`` functions made as they changed)."""


def _ids(objects: tuple[object, ...]) -> tuple[int, ...]:
    return tuple(map(id, objects))


class Supervisor:
    """Routes the delegated tasks of one team: queues them, starts them, stops them."""

    def __init__(self, *, model: str | Model, workspace: Workspace, settings: Settings,
                 limits: TeamLimits, tools: Iterable[Tool | Any] = (),
                 toolsets: Iterable[Toolset] = (), bus: EventBus | None = None,
                 kernel: AgentServices | None = None) -> None:
        self.model = model
        self.kernel = kernel
        """The services that reach the notebook's kernel (its variables, Python, cells, last
        error), shared with every agent of the team: the session agent's, given by the
        notebook floor; None outside a notebook (the tools then say there is no kernel)."""
        self.toolsets = list(toolsets)
        """The tool sets every agent of the team is built with (the Team gives
        :func:`~agent_kernel.team.toolsets.default_toolsets`: the team's own tools among
        them, which is why this module does not import them)."""
        self.workspace = workspace
        self.settings = settings
        self.limits = limits
        self.tools = list(tools)
        self.bus = bus or EventBus()
        self.board = TaskBoard(workspace, self.bus)
        """The team's tasks, queues, running set and life cycle (shared, see board.py)."""
        self._desk: Agent | None = None
        self._per_run: dict[str, list[str]] = {}
        self.start_writes: dict[str, Future[None]] = {}
        """The write of each started task's ``running`` file, queued by :meth:`_start`, until
        its life takes it (:meth:`DelegatedLife.before_run`)."""
        self._next_number, self._id_problems = first_agent_number(workspace.root)
        self._taken: list[int] = []
        """Agent numbers this team took from the workspace's counter and has not used yet,
        in order (:meth:`next_agent_id`)."""
        self.restart = Restart(self.board, workspace, self.dispatch)
        """The tasks an earlier kernel left, and the person's word on them."""
        self.asker: Any = None
        """The Teller's question channel: every team agent's questions go there (set by the
        Team), so the view that answers the Teller answers a Worker's approval too."""
        self.conversation: HistoryService | None = None
        """The Teller's history writer: the person's conversation every member reads."""
        self.question_store = QuestionStore(workspace)
        self.question: PendingQuestion | None = None
        """The Teller's question waiting for the person (spec 000's ``ask_user``)."""
        self.society = Society(self.board, limits=limits, workspace=workspace,
                               make_agent=self.make_agent)
        """Spec 004's spawned agents and the team's messages."""
        self.budget = TeamBudget(self.board, limits)
        """Tokens and cost per task tree and per session (every agent's ``services.budget``)."""
        self._schemas: dict[tuple[int, ...], tuple[tuple[object, ...],
                                                    dict[SchemaKey, list[ToolSchema]]]] = {}
        """Tool schema lists the team's agents built, by their registry's fingerprint (as
        ids; the objects are kept beside them, so no id is reused): an agent made per task
        starts from them instead of building its role's schemas again, and a model call
        that gets the same schema objects as the last skips measuring their JSON."""
        self.cluster: RemotePlace | None = None
        """The Dask cluster Worker tasks run on (set by the Team), or None: in this kernel."""

    # -- what the board holds, for readers of the team (views, tests) ------------------
    @property
    def tasks(self) -> dict[str, Task]:
        """Every task of the team, by id."""
        return self.board.tasks

    @property
    def queues(self) -> dict[str, TaskQueue]:
        """The Planner and Worker queues."""
        return self.board.queues

    @property
    def running(self) -> dict[str, Task]:
        """The tasks running now, by id."""
        return self.board.running

    @property
    def agents(self) -> dict[str, Agent]:
        """The agent of each running task, by task id."""
        return self.board.agents

    @property
    def started(self) -> list[str]:
        """Delegated task ids in the order their runs started."""
        return self.board.started

    @property
    def peak(self) -> dict[str, int]:
        """The most Planner and Worker tasks that ran at once."""
        return self.board.peak

    @property
    def listeners(self) -> list[Callable[[Task], None]]:
        """Called with a task whenever it changes (:meth:`TaskBoard.changed`)."""
        return self.board.listeners

    @property
    def desk(self) -> Agent | None:
        """The agent that holds the team's triggers (set by the Team); its ledger is the
        board's."""
        return self._desk

    @desk.setter
    def desk(self, agent: Agent | None) -> None:
        self._desk = agent
        self.board.ledger = agent.ledger if agent is not None else None

    # -- agents -------------------------------------------------------------------
    def make_agent(self, role: str, agent_id: str, *, cls: Callable[..., Agent] = Agent,
                   instructions: str | None = None) -> Agent:
        """An agent of ``role`` in this team: the role's instructions and tools, this bus
        (``instructions`` for a role made at run time)."""
        agent = cls(model=self.model, workspace=self.workspace, tools=self.tools,
                    agent_id=agent_id, role=role, settings=self.settings,
                    system_prompt=instructions or ROLES[role].instructions,
                    toolsets=self.toolsets, permission_hook=ROLE_PERMITS)
        agent.services.team = self
        agent.services.budget = self.budget
        if self.kernel is not None:
            share_kernel(self.kernel, agent.services)
        # Memory and history are the person's conversation with the Teller (spec 000): every
        # member reads (and the Teller alone, by the matrix, writes) under the Teller's id, in
        # this team's workspace; a member's own runs are not history.
        agent.services.memory_owner = TELLER_ID
        if role == TELLER:
            self.conversation = agent.services.history_writer
        else:
            writer, agent.services.history_writer = (agent.services.history_writer,
                                                     self.conversation)
            if writer is not None:
                agent.bus.unsubscribe(writer)
        if self.desk is not None and role != TELLER:  # one scheduler holds the team's triggers
            agent.services.triggers = self.desk.services.triggers
        if self.asker is not None and role != TELLER:  # the person sees who asks
            agent.questions = NamedQuestions(self.asker, agent)  # type: ignore[assignment]
        if role != TELLER:  # lives one task: "Always allow" would end with it, unseen
            agent.approvals.offers_standing = False
        agent.bus.subscribe(self.bus.emit)
        kept = self._schemas.get(_ids(agent.registry.fingerprint()))
        if kept is not None:
            agent.registry.reuse_schemas(kept[1])
        return agent

    def keep_schemas(self, agent: Agent) -> None:
        """Keep the schema lists ``agent`` built for the next agent with the same tools (the
        lists already kept stay: the same objects, call after call)."""
        fingerprint = agent.registry.fingerprint()
        kept = self._schemas.get(_ids(fingerprint))
        if kept is None:
            if len(self._schemas) >= MAX_SCHEMA_SETS:  # tools changed often: start over
                self._schemas.clear()
            kept = self._schemas[_ids(fingerprint)] = (fingerprint, {})
        for key, schemas in agent.registry.built_schemas().items():
            kept[1].setdefault(key, schemas)

    def next_agent_id(self, role: str, waiting: int = 0) -> str:
        """A new ``planner-N`` / ``worker-N`` (:meth:`dispatch` checks there is one left),
        unique on the workspace: another team there (another kernel's) takes numbers too.
        Numbers are taken :data:`TAKEN_AHEAD` at a time, or with ``waiting`` more tasks
        about to start, theirs with this one (one lock for a fan-out, not one per task);
        the team hands them out in order to whichever agents it makes next, and a number
        taken and never used is skipped, never given twice."""
        if self._taken:
            number = self._taken.pop(0)
        else:
            count = max(1, min(max(waiting + 1, TAKEN_AHEAD), MAX_TAKEN,
                               MAX_AGENT_NUMBER - self._next_number + 1))
            number, count = reserve_agent_numbers(self.workspace.root, self._next_number, count)
            self._taken = list(range(number + 1, min(number + count, MAX_AGENT_NUMBER + 1)))
        self._next_number = number + 1
        return f"{role}-{number}"

    def label(self, agent: Agent, task: Task) -> None:
        """Put ``task``'s place in the tree on every ledger record ``agent`` writes."""
        self.board.label(agent, task)

    # -- delegating ---------------------------------------------------------------
    def root(self, prompt: str, role: str = TELLER) -> Task:
        """The task at the top of a tree: one prompt to the Teller, with a new trace id."""
        return self.board.root(prompt, role)

    def new_task(self, parent: Task, agent_id: str, role: str, prompt: str, **fields: Any
                 ) -> Task:
        """A task delegated by ``agent_id`` while it works on ``parent``."""
        return self.board.new_task(parent, agent_id, role, prompt, **fields)

    def delegate(self, agent: Agent, run_id: str, prompt: str, **fields: object) -> Task:
        """Spec 000's ``delegate`` for a one-shot task: route it, or raise :class:`ToolError`."""
        parent = self.check_room(agent, run_id, prompt)
        board = self.board
        if agent.role == TELLER:
            task = board.new_task(parent, agent.agent_id, PLANNER, prompt, **fields)
            self._per_run[run_id].append(task.id)
            self.enqueue(task, soon=True)
            return task
        task = board.new_task(parent, agent.agent_id, WORKER, prompt, status="held", **fields)
        self._per_run[run_id].append(task.id)
        board.held.setdefault(parent.id, []).append(task)
        board.store.save_first(task)  # the tool awaits it (store.written) before it answers
        board.changed(task)
        return task

    def check_room(self, agent: Agent, run_id: str, prompt: str) -> Task:
        """The task ``agent`` works on, if it may delegate ``prompt`` now; else ToolError."""
        parent = task_of(agent)
        if parent is None or agent.role not in (TELLER, PLANNER):
            raise ToolError(f"delegate is for the Teller and the Planner, not {agent.role!r}")
        if parent.depth + 1 > self.limits.max_depth:
            raise ToolError(f"Delegation refused: the task tree is at most "
                            f"{self.limits.max_depth} levels deep")
        made = self._per_run.setdefault(run_id, [])
        if len(made) >= self.limits.max_delegations:
            message = (f"Delegation refused: this run already delegated {len(made)} tasks, the "
                       f"limit per run; the run is stopped so a delegation loop cannot go on")
            parent.error = message
            agent.stop(run_id)
            raise ToolError(message, summary=f"{agent.agent_id} stopped: too many delegations")
        again = next((t for t in made if self.board.tasks[t].prompt == prompt), None)
        if again is not None:
            raise ToolError(f"Delegation refused: this run already delegated the same prompt "
                            f"as task {again}; do not delegate a task twice",
                            summary="the same task was delegated twice")
        waiting = sum(len(q) for q in self.board.queues.values()) + sum(
            len(h) for h in self.board.held.values())
        if waiting >= self.limits.max_queued:
            raise ToolError(f"Delegation refused: {waiting} tasks are waiting, the team's "
                            f"limit; wait for results or cancel_task some first")
        return parent

    def hold_question(self, ctx: ToolContext, question: str, *, options: list[str] | None,
                      timeout: float, default: str | None) -> dict[str, str]:
        """Spec 000's ``ask_user`` for the Teller: keep the question (in the workspace) and
        end the run; the team asks the person and wakes the Teller with the answer."""
        if self.question is not None:
            raise ToolError(f"A question is already waiting for the person: "
                            f"{self.question.question[:200]!r}; wait for its answer")
        task = task_of(ctx.agent)
        root = task
        while root is not None and root.parent_id is not None:
            root = self.board.tasks.get(root.parent_id)
        pending = PendingQuestion.new(
            question, options, timeout, default, prompt=root.prompt if root else "",
            call_id=ctx.call_id, trace_id=task.trace_id if task else None,
            task_id=task.id if task else None)
        self.question_store.save(pending)
        self.question = pending
        ctx.end_run("ask_user")
        return {"status": "asked",
                "note": "The question is with the person. Your run ends now; their answer "
                        "comes as your next message."}

    def noted(self, run_id: str, task: Task) -> None:
        """Count ``task`` among the delegations of ``run_id`` (a conditional one)."""
        self._per_run.setdefault(run_id, []).append(task.id)

    def delegated_by(self, run_id: str) -> list[Task]:
        """The tasks a run delegated, in order."""
        return [self.board.tasks[t] for t in self._per_run.get(run_id, [])]

    # -- restarts -------------------------------------------------------------------
    def restore(self) -> RestoreReport:
        """Take back what an earlier kernel left: its tasks (:attr:`restart`), then its
        spawned agents and messages (the society's)."""
        report = RestoreReport(problems=list(self._id_problems))
        self.restart.restore(report)
        self.society.restore(report)
        return report

    # -- queues and runs ------------------------------------------------------------
    def enqueue(self, task: Task, soon: bool = False) -> None:
        """Put ``task`` on its role's queue and start what may start; saved as it then is
        (``soon``: written off the loop, for a caller that awaits ``store.written``). A
        task that started at once is written once, as running (:meth:`_start`)."""
        task.status = "queued"
        self.board.queues[task.role].push(task)
        self.dispatch()
        if task.status == "queued":
            if soon:
                self.board.store.save_soon(task)
            else:
                self.board.store.save(task)
        self.board.changed(task)

    def dispatch(self) -> None:
        """Start queued tasks while their role has room."""
        board = self.board
        for role, queue in board.queues.items():
            limit = self.limits.max_workers if role == WORKER else self.limits.max_planners
            while board.counts[role] < limit:
                task = queue.pop()
                if task is None:
                    break
                spent = self.budget.refused(task.tree_id)
                if self._next_number > MAX_AGENT_NUMBER:  # never an id that reads back wrong
                    spent = (f"this workspace has used all {MAX_AGENT_NUMBER:,} agent numbers;"
                             " start the team on a new workspace")
                if spent is not None:  # its tree's budget is spent: it never starts
                    board.spawn(self._refuse(task, spent))
                    continue
                self._start(task)

    async def _refuse(self, task: Task, spent: str) -> None:
        """End a queued task whose tree's budget is spent (recorded before it settles)."""
        await self.board.record("task_finished", task, status="limit", error=spent)
        self.board.end(task, "limit", spent)

    def _start(self, task: Task) -> None:
        task.status, task.started_at = "running", now_iso()
        task.run_id = new_id("run")
        task.agent_id = self.next_agent_id(task.role, len(self.board.queues[task.role]))
        self.board.begin(task)
        self.board.spawn(self._run(task), name=f"team-{task.agent_id}")
        # its file says running from now on (after its earlier writes), written on the loop
        # once the run's first step has sent its request; its life waits for the write
        # where it must (DelegatedLife.before_run)
        self.start_writes[task.id] = self.board.store.save_next(task)
        self.board.changed(task)

    async def _run(self, task: Task) -> None:
        try:
            agent = self.make_agent(task.role, str(task.agent_id))
            self.board.agents[task.id] = agent
            self.board.label(agent, task)
            cluster = self.cluster
            if cluster is not None and task.role == WORKER and cluster.lost is None:
                await cluster.life(self, task, agent).live()
                return
            await DelegatedLife(self, task, agent).live()
            self.keep_schemas(agent)
        finally:
            self.start_writes.pop(task.id, None)  # a life that never began

    def release_held(self, planner: Task, ended_well: bool | None = None) -> None:
        """A Planner's run ended (or it waits for a message): its held delegations go on
        the worker queue, or end when its run did not end well (``ended_well``, by default
        read from the Planner's status); then what may start starts."""
        held = self.board.held.pop(planner.id, [])
        if ended_well is None:
            ended_well = planner.status in ("ok", "limit")
        for task in held:
            if ended_well:
                task.status = "queued"
                self.board.queues[WORKER].push(task)
            else:
                self.board.end(task, "cancelled", f"its Planner's run ended: {planner.status}")
        self.dispatch()
        # A task that started at once was saved as running (_start); only one that waits
        # for a Worker is saved as queued (docs/team.md, "What a restart reads").
        for task in held:  # off the loop, in order: after the Planner's own file went
            if task.status == "queued":
                self.board.store.save_soon(task)

    # -- cancelling and listing ---------------------------------------------------------
    def cancel(self, task_id: str) -> bool:
        """Spec 000's ``cancel_task``: a queued or held task, or a trigger; never a running one."""
        board = self.board
        task = board.tasks.get(task_id)
        scheduler = existing_scheduler(self.desk) if self.desk is not None else None
        if task is not None and task.status == "trigger" and task.trigger_id:
            task_id = task.trigger_id
        if task is None or task.status == "trigger":
            if scheduler is not None and scheduler.cancel(task_id):
                for made in board.tasks.values():
                    if made.trigger_id == task_id:
                        made.status, made.ended_at = "cancelled", now_iso()
                        board.store.delete(made.id)
                return True
            return False
        removed = board.queues.get(task.role, TaskQueue()).remove(task_id) is not None
        held = board.held.get(task.parent_id or "", [])
        if task in held:
            held.remove(task)
            removed = True
        if not removed:
            return False
        board.end(task, "cancelled", "cancelled before it started")
        board.record_soon("task_cancelled", task)
        return True

    def stop(self, task_id: str) -> bool:
        """End a task whatever its state: cancel it when it waits, stop its run when it runs."""
        if self.cancel(task_id):
            return True
        task = self.board.running.get(task_id)
        if task is None:
            return False
        agent = self.board.agents.get(task_id)  # None: started, its coroutine not yet begun
        if agent is None or not agent.stop(task.run_id):  # its run has not begun: it will not
            self.board.stopping.add(task_id)
        return True

    def rows(self, scope: str = "all", role: str | None = None) -> list[TaskSummary]:
        """Spec 000's ``TaskSummary`` rows: queued (held too), running, and triggers."""
        board = self.board
        roles = [role] if role else [PLANNER, WORKER]
        out: list[TaskSummary] = []
        if scope in ("queue", "all"):
            for name in roles:
                waiting = [*board.queues[name].waiting(),
                           *(t for h in board.held.values() for t in h if t.role == name)]
                out += [self._row(t, "queued") for t in waiting]
        if scope in ("running", "all"):
            out += [self._row(t, "running") for t in board.running.values() if t.role in roles]
        if scope in ("triggers", "all") and self.desk is not None:
            scheduler = existing_scheduler(self.desk)
            by_trigger = {t.trigger_id: t for t in board.tasks.values() if t.trigger_id}
            for trigger in [*scheduler.active(), *scheduler.pending()] if scheduler else []:
                made = by_trigger.get(trigger.id)
                out.append({"id": trigger.id, "type": trigger.kind, "prompt": cut(trigger.prompt),
                            "priority": made.priority if made else 5,
                            "status": "trigger" if trigger.active else trigger.status,
                            "createdAt": trigger.created_at})
        return out

    @staticmethod
    def _row(task: Task, status: str) -> TaskSummary:
        return {"id": task.id, "type": task.type, "prompt": cut(task.prompt),
                "priority": task.priority, "status": status, "createdAt": task.created_at}

    async def record(self, kind: str, task: Task, **fields: object) -> None:
        """Write a task's record (its place in the tree included); a failure is a notice."""
        await self.board.record(kind, task, **fields)


__all__ = ["TRUSTED_AGENT_NUMBER", "DelegatedLife", "Supervisor", "TeamLimits",
           "first_agent_number"]
