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
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_kernel.core.config import Settings
from agent_kernel.core.events import EventBus, LedgerRecorded, Notice
from agent_kernel.core.ledger import new_id, now_iso
from agent_kernel.core.safe_open import names as file_names
from agent_kernel.core.safe_open import read_capped
from agent_kernel.core.workspace import Workspace
from agent_kernel.engine.agent import Agent
from agent_kernel.engine.registry import Tool, ToolContext, ToolError
from agent_kernel.engine.tool_clock import ToolClock
from agent_kernel.team.asking import NamedQuestions, PendingQuestion, QuestionStore
from agent_kernel.team.budget import TeamBudget
from agent_kernel.team.members import AGENTS_FOLDER, Society
from agent_kernel.team.queue import (
    FOLDER,
    INTERRUPTED,
    RestoreReport,
    Task,
    TaskQueue,
    TaskStore,
    task_of,
)
from agent_kernel.team.roles import (
    MAX_AGENT_NUMBER,
    PLANNER,
    ROLE_PERMITS,
    ROLES,
    TELLER,
    WORKER,
    agent_number,
    looks_numbered,
)
from agent_kernel.team.society import ROLES_FOLDER
from agent_kernel.team.toolsets import default_toolsets
from agent_kernel.triggers import existing_scheduler

log = logging.getLogger(__name__)
PROMPT_LIMIT = 100


@dataclass
class TeamLimits:
    """What a team may do before the supervisor says no."""

    max_workers: int = 4
    max_planners: int = 1
    max_queued: int = 1000
    """Tasks waiting (queued or held) in the whole team."""
    max_delegations: int = 20
    """Delegations one run may make; past it the run is stopped."""
    max_depth: int = 2
    """Teller 0, Planner 1, Worker 2."""
    max_rounds: int = 5
    """Times the Teller may delegate again after results came back, per prompt."""
    max_agents: int = 16
    """Spawned agents (spec 004's ``spawn_agent``) alive at once in the whole team."""
    max_agent_depth: int = 3
    """How deep spawned agents nest: a built-in agent's child is 1, its child 2, ..."""
    timeouts: dict[str, float] = field(
        default_factory=lambda: {name: role.default_timeout for name, role in ROLES.items()})
    max_tree_tokens: int | None = 2_000_000
    """Tokens (prompt and completion) of every model call under one prompt to the Teller."""
    max_session_tokens: int | None = None
    """Tokens of the team's whole lifetime; None: no limit."""
    max_tree_cost: float | None = None
    """Dollars (as litellm prices the model) under one prompt; None: no limit."""
    max_session_cost: float | None = None
    """Dollars of the team's whole lifetime; None: no limit."""

    def __post_init__(self) -> None:
        for name in ("max_workers", "max_planners", "max_queued", "max_delegations",
                     "max_depth", "max_rounds", "max_agents", "max_agent_depth"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number of at least 1, got {value!r}")
        for name in ("max_tree_tokens", "max_session_tokens"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 1):
                raise ValueError(f"{name} must be a whole number of tokens of at least 1, or "
                                 f"None for no limit, got {value!r}")
        for name in ("max_tree_cost", "max_session_cost"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool)
                                      or not isinstance(value, (int, float))
                                      or not 0 < value < float("inf")):
                raise ValueError(f"{name} must be a number of dollars above 0, or None for no "
                                 f"limit, got {value!r}")


def cut(text: str) -> str:
    """A prompt as ``list_tasks`` shows it: at most 100 characters."""
    return text if len(text) <= PROMPT_LIMIT else text[: PROMPT_LIMIT - 1] + "…"


TRUSTED_AGENT_NUMBER = 100_000_000
"""The highest agent number a workspace file is believed about: a team starts its ids at
most here, so a planted ``worker-999999999`` cannot push the counter past the id grammar
(``roles.MAX_AGENT_NUMBER``) and 900 million ids stay free."""
ID_FIELDS = {ROLES_FOLDER: ("createdBy",), FOLDER: ("agent_id", "parent_agent_id"),
             INTERRUPTED: ("agent_id", "parent_agent_id"), AGENTS_FOLDER: ("parentAgentId",)}
"""The fields of each team folder's files that name a built-in agent."""
MAX_ID_FILES = 10_000
MAX_ID_FILE_BYTES = 1024 * 1024


def first_agent_number(root: Path) -> tuple[int, list[str]]:
    """One past the highest ``planner-N`` / ``worker-N`` the workspace's team files name
    (the roles' makers, saved and interrupted tasks, spawned agents' parents), and a line
    for each value that is not an agent id it can believe.

    Agent ids go on across kernels, so a role made by an earlier kernel's ``planner-1``
    (which only its maker may spawn agents in) is never a new kernel's ``planner-1``'s.
    Each file is read as JSON (an id spelt with escapes is still seen) and each field is
    parsed whole (:func:`~.roles.agent_number`): ``planner-1e9``, ``worker-007`` or a
    20-digit number is no id and moves nothing; a number above
    :data:`TRUSTED_AGENT_NUMBER` is reported and not believed."""
    highest, problems = 0, []
    for folder, names in ID_FIELDS.items():
        try:
            found = file_names(root, folder, ".json")
        except OSError:  # a planted link: its own reader reports it
            continue
        for file_name in found[:MAX_ID_FILES]:
            try:  # read as the stores read them: never through a link, never a FIFO
                record = json.loads(read_capped(root, f"{folder}/{file_name}",
                                                MAX_ID_FILE_BYTES))
            except (OSError, ValueError, RecursionError):
                continue  # unreadable: its own reader reports it, and it grants nothing
            if not isinstance(record, dict):
                continue
            for name in names:
                value = record.get(name)
                number = agent_number(value)
                if number is None:
                    if looks_numbered(value):
                        problems.append(f"{folder}/{file_name}: {name} {str(value)[:40]!r} "
                                        "is not an agent id (planner- or worker- and a "
                                        "number); it is ignored")
                elif number > TRUSTED_AGENT_NUMBER:
                    problems.append(f"{folder}/{file_name}: {name} {value!r} is beyond the "
                                    f"{TRUSTED_AGENT_NUMBER:,} agents a workspace may have "
                                    "named; it is ignored")
                else:
                    highest = max(highest, number)
    return highest + 1, problems


class Supervisor:
    """Queues, runs and tracks the delegated tasks of one team."""

    def __init__(self, *, model: str, workspace: Workspace, settings: Settings,
                 limits: TeamLimits, tools: Iterable[Tool | Any] = (),
                 bus: EventBus | None = None) -> None:
        self.model = model
        self.workspace = workspace
        self.settings = settings
        self.limits = limits
        self.tools = list(tools)
        self.bus = bus or EventBus()
        self.store = TaskStore(workspace)
        self.tasks: dict[str, Task] = {}
        self.queues = {PLANNER: TaskQueue(), WORKER: TaskQueue()}
        self.running: dict[str, Task] = {}
        self.agents: dict[str, Agent] = {}
        """The agent of each running task, by task id."""
        self.started: list[str] = []
        """Task ids in the order their runs started."""
        self.peak = {PLANNER: 0, WORKER: 0}
        self.desk: Agent | None = None
        """The agent that holds the team's triggers (set by the Team)."""
        self._counts = {PLANNER: 0, WORKER: 0}
        self._held: dict[str, list[Task]] = {}
        self._per_run: dict[str, list[str]] = {}
        self._settled: dict[str, asyncio.Future[Task]] = {}
        self._runs: dict[str, asyncio.Task[None]] = {}
        self._next_number, self._id_problems = first_agent_number(workspace.root)
        self._background: set[asyncio.Task[None]] = set()
        self._stopping: set[str] = set()
        self.restored: list[Task] = []
        """Queued tasks an earlier session left, read back by :meth:`restore`."""
        self.undecided: list[Task] = []
        """Restored tasks the person has not yet said to run or drop: on no queue, never
        started (their files stay)."""
        self.asker: Any = None
        """The Teller's question channel: every team agent's questions go there (set by the
        Team), so the view that answers the Teller answers a Worker's approval too."""
        self.question_store = QuestionStore(workspace)
        self.question: PendingQuestion | None = None
        """The Teller's question waiting for the person (spec 000's ``ask_user``)."""
        self.society = Society(self)
        """Spec 004's spawned agents and the team's messages."""
        self.listeners: list[Callable[[Task], None]] = []
        """Called with a task whenever it is held, queued, started or ended (the team
        board listens here); a failing listener is logged and dropped."""
        self.budget = TeamBudget(self)
        """Tokens and cost per task tree and per session (every agent's ``services.budget``)."""

    # -- agents -------------------------------------------------------------------
    def make_agent(self, role: str, agent_id: str, *, cls: Callable[..., Agent] = Agent,
                   instructions: str | None = None) -> Agent:
        """An agent of ``role`` in this team: the role's instructions and tools, this bus
        (``instructions`` for a role made at run time)."""
        agent = cls(model=self.model, workspace=self.workspace, tools=self.tools,
                    agent_id=agent_id, role=role, settings=self.settings,
                    system_prompt=instructions or ROLES[role].instructions,
                    toolsets=default_toolsets(), permission_hook=ROLE_PERMITS)
        agent.services.team = self
        agent.services.budget = self.budget
        if role != TELLER:  # history is the person's conversation with the Teller
            writer, agent.services.history_writer = agent.services.history_writer, None
            if writer is not None:
                agent.bus.unsubscribe(writer)
        if self.desk is not None and role != TELLER:  # one scheduler holds the team's triggers
            agent.services.triggers = self.desk.services.triggers
        if self.asker is not None and role != TELLER:  # the person sees who asks
            agent.questions = NamedQuestions(self.asker, agent)  # type: ignore[assignment]
        agent.bus.subscribe(self.bus.emit)
        return agent

    def next_agent_id(self, role: str) -> str:
        """A new ``planner-N`` / ``worker-N`` (:meth:`dispatch` checks there is one left)."""
        number, self._next_number = self._next_number, self._next_number + 1
        return f"{role}-{number}"

    @staticmethod
    def label(agent: Agent, task: Task) -> None:
        """Put ``task``'s place in the tree on every ledger record ``agent`` writes."""
        agent.services.team_task = task
        agent.ledger_fields = {"role": agent.role, "task_id": task.id,
                               "parent_task_id": task.parent_id,
                               "parent_agent_id": task.parent_agent_id,
                               "trace_id": task.trace_id}

    # -- delegating ---------------------------------------------------------------
    def root(self, prompt: str, role: str = TELLER) -> Task:
        """The task at the top of a tree: one prompt to the Teller, with a new trace id."""
        task = Task(id=new_id("task"), role=role, prompt=prompt, depth=0, status="running",
                    created_at=now_iso(), trace_id=new_id("trace"))
        self.tasks[task.id] = task
        self._settled[task.id] = asyncio.get_running_loop().create_future()
        self.changed(task)
        return task

    def new_task(self, parent: Task, agent_id: str, role: str, prompt: str, **fields: Any
                 ) -> Task:
        """A task delegated by ``agent_id`` while it works on ``parent``."""
        task = Task(id=new_id("task"), role=role, prompt=prompt, parent_id=parent.id,
                    parent_agent_id=agent_id, depth=parent.depth + 1, created_at=now_iso(),
                    root_id=parent.tree_id, **fields)
        if task.trace_id is None:
            task.trace_id = parent.trace_id
        self.tasks[task.id] = task
        self._settled[task.id] = asyncio.get_running_loop().create_future()
        parent.children.append(task.id)
        return task

    def delegate(self, agent: Agent, run_id: str, prompt: str, **fields: object) -> Task:
        """Spec 000's ``delegate`` for a one-shot task: route it, or raise :class:`ToolError`."""
        parent = self.check_room(agent, run_id, prompt)
        if agent.role == TELLER:
            task = self.new_task(parent, agent.agent_id, PLANNER, prompt, **fields)
            self._per_run[run_id].append(task.id)
            self.enqueue(task)
            return task
        task = self.new_task(parent, agent.agent_id, WORKER, prompt, status="held", **fields)
        self._per_run[run_id].append(task.id)
        self._held.setdefault(parent.id, []).append(task)
        self.store.save(task)
        self.changed(task)
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
        again = next((t for t in made if self.tasks[t].prompt == prompt), None)
        if again is not None:
            raise ToolError(f"Delegation refused: this run already delegated the same prompt "
                            f"as task {again}; do not delegate a task twice",
                            summary="the same task was delegated twice")
        waiting = sum(len(q) for q in self.queues.values()) + sum(
            len(h) for h in self._held.values())
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
            root = self.tasks.get(root.parent_id)
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
        return [self.tasks[t] for t in self._per_run.get(run_id, [])]

    # -- restarts -------------------------------------------------------------------
    def restore(self) -> RestoreReport:
        """Take back the tasks an earlier kernel left: keep the queued ones (not started yet)
        for the person's word (:attr:`undecided`), mark the running ones interrupted, cancel
        held ones (their Planner never finished)."""
        tasks, problems = self.store.load_all()
        report = RestoreReport(problems=[*self._id_problems, *problems])
        fresh = [t for t in tasks if t.id not in self.tasks and t.open]
        report.problems += [f"{t.id}.json: not restored: its status is {t.status!r}, not held, "
                            f"queued, running or trigger" for t in tasks
                            if not t.open and t.status != "trigger"]
        for task in tasks:  # a conditional delegation: its firings keep priority and timeout
            if task.status == "trigger" and task.id not in self.tasks:
                if self._trigger_lives(task.trigger_id):
                    task.children = []
                    self.tasks[task.id] = task
                else:
                    self.store.delete(task.id)
        for task in fresh:
            self.tasks[task.id] = task
        for task in fresh:  # only tasks this team knows, so settling never looks up a stranger
            task.children = [c for c in task.children if c in self.tasks]
            if task.status == "queued":  # run only when the person says so (Team asks)
                self.undecided.append(task)
                self.restored.append(task)
                report.queued.append(task)
            elif task.status == "running":
                task.status, task.ended_at = "interrupted", now_iso()
                task.error = "the kernel stopped while this task was running"
                self._record_now("task_interrupted", task, error=task.error)
                self.store.interrupted(task)
                report.interrupted.append(task)
            else:  # held by a Planner whose run never ended
                task.status, task.ended_at = "cancelled", now_iso()
                task.error = "its Planner's run never ended: the kernel stopped first"
                self._record_now("task_cancelled", task, error=task.error)
                self.store.delete(task.id)
                report.cancelled.append(task)
        self.society.restore(report)
        return report

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

    def run_restored(self, count: int | None = None) -> list[Task]:
        """The person said Run: the restored tasks (the first ``count``, those the person
        was shown) go back on their queues, in their order (:meth:`resume_restored` starts
        them); the rest stay undecided."""
        count = len(self.undecided) if count is None else count
        released, self.undecided = self.undecided[:count], self.undecided[count:]
        for task in released:
            self.queues[task.role].push(task)
        return released

    def drop_restored(self, why: str) -> list[Task]:
        """The person said Drop: each restored task ends as cancelled, its file goes, and a
        ``task_cancelled`` record says why."""
        dropped, self.undecided = self.undecided, []
        for task in dropped:
            task.status, task.error, task.ended_at = "cancelled", why, now_iso()
            self.store.delete(task.id)
            self._record_now("task_cancelled", task, error=why)
            self.settle(task)
            self.changed(task)
        return dropped

    def resume_restored(self) -> list[Task]:
        """Start the restored tasks the person let run (needs the running loop); returns
        those not ended yet."""
        loop = asyncio.get_running_loop()
        waiting = [t for t in self.restored if t.open and t not in self.undecided]
        for task in waiting:
            future = self._settled.get(task.id)
            if future is None or future.get_loop() is not loop:
                self._settled[task.id] = loop.create_future()
        self.dispatch()
        return waiting

    def _record_now(self, kind: str, task: Task, **fields: object) -> None:
        """Write a task's record from plain code; a failure is logged, the restore goes on."""
        if self.desk is None:
            return
        try:
            self.desk.ledger.record_event(
                kind, agent_id=task.agent_id or task.parent_agent_id, role=task.role,
                task_id=task.id, parent_task_id=task.parent_id,
                parent_agent_id=task.parent_agent_id, trace_id=task.trace_id,
                priority=task.priority, type=task.type, run_id=task.run_id, **fields)
        except Exception:
            log.exception("could not record %s of %s", kind, task.id)

    # -- queues and runs ------------------------------------------------------------
    def enqueue(self, task: Task) -> None:
        """Put ``task`` on its role's queue (saved) and start what may start."""
        task.status = "queued"
        self.queues[task.role].push(task)
        self.store.save(task)
        self.dispatch()
        self.changed(task)

    def changed(self, task: Task) -> None:
        """Tell the listeners that ``task`` changed."""
        for listener in list(self.listeners):
            try:
                listener(task)
            except Exception:
                log.exception("a team listener failed; it is dropped")
                self.listeners.remove(listener)

    def dispatch(self) -> None:
        """Start queued tasks while their role has room."""
        for role, queue in self.queues.items():
            limit = self.limits.max_workers if role == WORKER else self.limits.max_planners
            while self._counts[role] < limit:
                task = queue.pop()
                if task is None:
                    break
                spent = self.budget.refused(task.tree_id)
                if self._next_number > MAX_AGENT_NUMBER:  # never an id that reads back wrong
                    spent = (f"this workspace has used all {MAX_AGENT_NUMBER:,} agent numbers;"
                             " start the team on a new workspace")
                if spent is not None:  # its tree's budget is spent: it never starts
                    made = asyncio.get_running_loop().create_task(self._refuse(task, spent))
                    self._background.add(made)
                    made.add_done_callback(self._background.discard)
                    continue
                self._start(task)

    async def _refuse(self, task: Task, spent: str) -> None:
        """End a queued task whose tree's budget is spent (recorded before it settles)."""
        await self.record("task_finished", task, status="limit", error=spent)
        self._end(task, "limit", spent)

    def _start(self, task: Task) -> None:
        self._counts[task.role] += 1
        self.peak[task.role] = max(self.peak[task.role], self._counts[task.role])
        task.status, task.started_at = "running", now_iso()
        task.run_id = new_id("run")
        task.agent_id = self.next_agent_id(task.role)
        self.running[task.id] = task
        self.started.append(task.id)
        self._runs[task.id] = asyncio.get_running_loop().create_task(
            self._run(task), name=f"team-{task.agent_id}")
        self.changed(task)

    async def _run(self, task: Task) -> None:
        agent = self.agents[task.id] = self.make_agent(task.role, str(task.agent_id))
        self.label(agent, task)
        timeout = task.timeout or self.limits.timeouts[task.role]
        # the task's wall-clock limit, standing still while a person is asked (tool_clock)
        clock = ToolClock(timeout)
        timed_out: list[bool] = []
        end_clock = clock.keep_time(lambda: timed_out.append(agent.stop(task.run_id) >= 0))
        status, error = "error", None
        try:
            self.store.save(task)
            await self.record("task_started", task)
            if task.id in self._stopping:  # stopped before its run began
                raise asyncio.CancelledError
            result = await self.society.run_task(agent, task, task.prompt)  # resumes a wait
            status, error, task.result = result.status, result.error, result.reply
            if status == "cancelled" and timed_out:
                status, error = "timeout", (f"the task exceeded its {timeout:g} s limit "
                                            "(time waiting for you not counted)")
            elif status == "cancelled" and task.error:  # stopped by a limit
                status, error = "limit", task.error
        except asyncio.CancelledError:
            status, error = "cancelled", "stopped before its run began"
        except Exception as exc:  # ours: the task still ends, the team goes on
            log.exception("team task %s failed", task.id)
            error = f"{type(exc).__name__}: {exc}"
        finally:
            end_clock()
            self._stopping.discard(task.id)
            self._counts[task.role] -= 1
            self.running.pop(task.id, None)
            self.agents.pop(task.id, None)
            self._runs.pop(task.id, None)
            self.store.delete(task.id)
            task.status, task.error, task.ended_at = status, error, now_iso()
            self.release_held(task)
            self.dispatch()
            self.changed(task)
        await self.record("task_finished", task, status=status, error=error,
                          result=task.result[:2000])
        self.settle(task)

    def release_held(self, planner: Task, ended_well: bool | None = None) -> None:
        """A Planner's run ended (or it waits for a message): its held delegations go on
        the worker queue, or end when its run did not end well (``ended_well``, by default
        read from the Planner's status)."""
        held = self._held.pop(planner.id, [])
        if ended_well is None:
            ended_well = planner.status in ("ok", "limit")
        for task in held:
            if ended_well:
                task.status = "queued"
                self.queues[WORKER].push(task)
                self.store.save(task)
            else:
                self._end(task, "cancelled", f"its Planner's run ended: {planner.status}")

    def settle(self, task: Task) -> None:
        """Resolve ``task`` once it and every one-shot task under it ended; then its parent."""
        while task is not None:
            if task.open or any(self.tasks[c].open for c in task.children):
                return
            future = self._settled.get(task.id)
            if future is None or future.done():
                return
            future.set_result(task)
            task = self.tasks.get(task.parent_id or "")  # type: ignore[assignment]

    async def settled(self, task: Task) -> Task:
        """Wait until ``task`` and everything it delegated have ended."""
        return await asyncio.shield(self._settled[task.id])

    def _end(self, task: Task, status: str, error: str | None = None) -> None:
        task.status, task.error, task.ended_at = status, error, now_iso()
        self.store.delete(task.id)
        self.settle(task)
        self.changed(task)

    # -- cancelling and listing ---------------------------------------------------------
    def cancel(self, task_id: str) -> bool:
        """Spec 000's ``cancel_task``: a queued or held task, or a trigger; never a running one."""
        task = self.tasks.get(task_id)
        scheduler = existing_scheduler(self.desk) if self.desk is not None else None
        if task is not None and task.status == "trigger" and task.trigger_id:
            task_id = task.trigger_id
        if task is None or task.status == "trigger":
            if scheduler is not None and scheduler.cancel(task_id):
                for made in self.tasks.values():
                    if made.trigger_id == task_id:
                        made.status, made.ended_at = "cancelled", now_iso()
                        self.store.delete(made.id)
                return True
            return False
        removed = self.queues.get(task.role, TaskQueue()).remove(task_id) is not None
        held = self._held.get(task.parent_id or "", [])
        if task in held:
            held.remove(task)
            removed = True
        if not removed:
            return False
        self._end(task, "cancelled", "cancelled before it started")
        self._record_soon("task_cancelled", task)
        return True

    def stop(self, task_id: str) -> bool:
        """End a task whatever its state: cancel it when it waits, stop its run when it runs."""
        if self.cancel(task_id):
            return True
        task = self.running.get(task_id)
        if task is None:
            return False
        agent = self.agents.get(task_id)  # None: started, its coroutine not yet begun
        if agent is None or not agent.stop(task.run_id):  # its run has not begun: it will not
            self._stopping.add(task_id)
        return True

    def rows(self, scope: str = "all", role: str | None = None) -> list[dict[str, Any]]:
        """Spec 000's ``TaskSummary`` rows: queued (held too), running, and triggers."""
        roles = [role] if role else [PLANNER, WORKER]
        out: list[dict[str, Any]] = []
        if scope in ("queue", "all"):
            for name in roles:
                waiting = [*self.queues[name].waiting(),
                           *(t for h in self._held.values() for t in h if t.role == name)]
                out += [self._row(t, "queued") for t in waiting]
        if scope in ("running", "all"):
            out += [self._row(t, "running") for t in self.running.values() if t.role in roles]
        if scope in ("triggers", "all") and self.desk is not None:
            scheduler = existing_scheduler(self.desk)
            by_trigger = {t.trigger_id: t for t in self.tasks.values() if t.trigger_id}
            for trigger in [*scheduler.active(), *scheduler.pending()] if scheduler else []:
                made = by_trigger.get(trigger.id)
                out.append({"id": trigger.id, "type": trigger.kind, "prompt": cut(trigger.prompt),
                            "priority": made.priority if made else 5,
                            "status": "trigger" if trigger.active else trigger.status,
                            "createdAt": trigger.created_at})
        return out

    @staticmethod
    def _row(task: Task, status: str) -> dict[str, Any]:
        return {"id": task.id, "type": task.type, "prompt": cut(task.prompt),
                "priority": task.priority, "status": status, "createdAt": task.created_at}

    # -- the ledger -----------------------------------------------------------------
    async def record(self, kind: str, task: Task, **fields: object) -> None:
        """Write a task's record (its place in the tree included); a failure is a notice."""
        body = {"agent_id": task.agent_id or task.parent_agent_id, "role": task.role,
                "task_id": task.id, "parent_task_id": task.parent_id,
                "parent_agent_id": task.parent_agent_id, "trace_id": task.trace_id,
                "priority": task.priority, "type": task.type, "run_id": task.run_id, **fields}
        ledger = self.desk.ledger if self.desk is not None else None
        if ledger is None:
            return
        try:
            made = await asyncio.to_thread(ledger.record_event, kind, **body)
        except Exception as exc:
            self.bus.emit(Notice(task.run_id or "team", f"The ledger could not record "
                                 f"{kind} of {task.id}: {exc}", level="error"))
            return
        self.bus.emit(LedgerRecorded(task.run_id or "team", made))

    def _record_soon(self, kind: str, task: Task) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # called from plain code: write it here
            if self.desk is not None:
                self.desk.ledger.record_event(kind, task_id=task.id, role=task.role,
                                              agent_id=task.parent_agent_id)
            return
        made = loop.create_task(self.record(kind, task))
        self._background.add(made)
        made.add_done_callback(self._background.discard)
