"""Tasks, the priority queues they wait in, and the files that keep them across kernels.

A :class:`Task` is one piece of delegated work: its prompt, spec 000's
``type``, ``priority`` (0-10, higher first) and ``timeout``, spec 002's
``traceId``, and where it sits in the tree (parent task, depth). A
:class:`TaskQueue` hands out the highest priority first and, within one
priority, the oldest first (a heap ordered by ``(-priority, seq)``; a
cancelled task is dropped from the index at once and skipped when it reaches
the top). :class:`TaskStore` writes every waiting or running task to
``<workspace>/team/tasks/<id>.json`` (to a temporary file, then renamed, as
the trigger store does), so a later session can put the queued ones back and
name those that were running when the kernel died. A file is data a person or
a crash may have changed: :meth:`Task.from_record` checks every field it
relies on (a pydantic model, :class:`TaskRecord`), and a file it refuses costs
that one task, never the team. A task that was running when its kernel died
is moved to ``team/interrupted/`` with status ``interrupted``;
:class:`RestoreReport` says what came back.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import heapq
import itertools
import json
import logging
import os
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from agent_kernel.core.json_types import JsonObject
from agent_kernel.core.safe_open import (
    TooLarge,
    UnsafeWorkspacePath,
    folder_fd,
    names,
    read_capped,
    unlink_at,
    write_atomic,
    write_atomic_at,
)
from agent_kernel.core.statuses import TASK_STATUSES, TaskStatus
from agent_kernel.core.unseen import with_tokens
from agent_kernel.core.workspace import Workspace

if TYPE_CHECKING:
    from agent_kernel.engine.registry import ToolHost

DEFAULT_PRIORITY = 5
FOLDER = "team/tasks"
INTERRUPTED = "team/interrupted"
MAX_FILES = 10_000
MAX_FILE_BYTES = 256 * 1024
OPEN: tuple[TaskStatus, ...] = ("held", "queued", "running")
"""A task in one of these states has not ended."""
STATUSES = TASK_STATUSES
ROLES = ("planner", "worker")

_SEQ = itertools.count()
log = logging.getLogger(__name__)
_WRITER: ThreadPoolExecutor | None = None
"""The one thread that writes task files for every team of the process, in the order
asked (so a crash leaves a prefix of the writes a loop doing them itself would have made)."""


def _writer() -> ThreadPoolExecutor:
    global _WRITER
    if _WRITER is None:
        _WRITER = ThreadPoolExecutor(1, thread_name_prefix="team-task-files")
    return _WRITER


def _forget_writer() -> None:
    """A forked child has no writer thread: it makes its own (the parent's would never run
    what the child queues)."""
    global _WRITER
    _WRITER = None


os.register_at_fork(after_in_child=_forget_writer)


class TaskTree(TypedDict):
    """A task tree as the views draw it: the tasks under its top (none, before any)."""

    children: list[TaskNode]


class TaskNode(TaskTree):
    """One task of a tree (``Team.tree``): a :class:`Task`'s fields without its
    ``seq``, the tasks under it nested in ``children``."""

    id: str
    role: str
    prompt: str
    type: str
    priority: int
    timeout: float | None
    trace_id: str | None
    root_id: str | None
    parent_id: str | None
    parent_agent_id: str | None
    depth: int
    created_at: str
    status: TaskStatus
    agent_id: str | None
    run_id: str | None
    condition: dict[str, Any] | None
    trigger_id: str | None
    result: str
    error: str | None
    started_at: str | None
    ended_at: str | None


@dataclass
class Task:
    """One delegated piece of work and what became of it."""

    id: str
    role: str
    """The queue it waits in and the role that runs it: ``planner`` or ``worker``."""
    prompt: str
    type: str = "oneshot"
    priority: int = DEFAULT_PRIORITY
    timeout: float | None = None
    trace_id: str | None = None
    """Spec 002's ``traceId``: a label for the records, which the model may choose."""
    root_id: str | None = None
    """The task at the top of this task's tree (None for a root itself): the tree's budget
    is kept under it, never under a ``trace_id`` the model chose."""
    parent_id: str | None = None
    parent_agent_id: str | None = None
    depth: int = 1
    created_at: str = ""
    status: TaskStatus = "queued"
    """held (a Planner's, until its run ends), queued, running, trigger, then ok, error,
    cancelled, timeout, limit or interrupted."""
    agent_id: str | None = None
    run_id: str | None = None
    condition: dict[str, Any] | None = None
    trigger_id: str | None = None
    result: str = ""
    error: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    children: list[str] = field(default_factory=list)
    seq: int = field(default_factory=lambda: next(_SEQ))

    @property
    def tree_id(self) -> str:
        """The id its tree's budget is kept under: its root task's."""
        return self.root_id or self.id

    @property
    def open(self) -> bool:
        """True until the task has ended (a trigger counts as ended: it lives on by itself)."""
        return self.status in OPEN

    def to_record(self) -> dict[str, Any]:
        """The task as saved (JSON-ready), a copy of it as it is now: ``asdict``'s result
        without its recursive walk (every field is a str, a number or None but these two)."""
        record = {name: getattr(self, name) for name in _TASK_FIELDS}
        record["children"] = list(self.children)
        record["condition"] = copy.deepcopy(self.condition)
        return record

    def node(self, children: list[TaskNode]) -> TaskNode:
        """The task in a tree, with ``children`` the nodes of the tasks under it."""
        return TaskNode(
            id=self.id, role=self.role, prompt=self.prompt, type=self.type,
            priority=self.priority, timeout=self.timeout, trace_id=self.trace_id,
            root_id=self.root_id, parent_id=self.parent_id,
            parent_agent_id=self.parent_agent_id, depth=self.depth,
            created_at=self.created_at, status=self.status, agent_id=self.agent_id,
            run_id=self.run_id, condition=copy.deepcopy(self.condition),
            trigger_id=self.trigger_id, result=self.result, error=self.error,
            started_at=self.started_at, ended_at=self.ended_at, children=children)

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Task:
        """A task read back from its file; unknown keys are ignored, bad values refused
        (:class:`TaskRecord` checks them; the refusal names the first bad field)."""
        try:
            checked = TaskRecord.model_validate(record)
        except ValidationError as exc:
            raise ValueError(_refusal(exc)) from None
        return cls(**checked.model_dump(exclude_unset=True))


_NULLABLE_TEXT = ("trace_id", "root_id", "parent_id", "parent_agent_id", "agent_id", "run_id",
                  "trigger_id", "error", "started_at", "ended_at")


_TASK_FIELDS = tuple(f.name for f in fields(Task))


class TaskRecord(BaseModel):
    """A task file's record as :meth:`Task.from_record` accepts it: a file is data a
    person or a crash may have changed. Strict (no ``"5"`` for 5, no ``true`` for 1);
    fields in the order they are checked, so a refusal names the first bad one."""

    model_config = ConfigDict(strict=True, extra="ignore")

    id: str = Field(min_length=1)
    role: Literal["planner", "worker"]
    prompt: str = Field(min_length=1)
    priority: int = Field(default=DEFAULT_PRIORITY, ge=0, le=10)
    status: TaskStatus = "queued"
    type: Literal["oneshot", "conditional"] = "oneshot"
    timeout: int | float | None = Field(default=None, gt=0)
    depth: int = Field(default=1, ge=0, le=100)
    created_at: str = ""
    result: str = ""
    trace_id: str | None = None
    root_id: str | None = None
    parent_id: str | None = None
    parent_agent_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    trigger_id: str | None = None
    error: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    children: list[str] = Field(default_factory=list)
    condition: JsonObject | None = None


def _lacks(error: ErrorDetails) -> bool:
    """True when the error says the record has no id, role or prompt text at all."""
    name = error["loc"][0] if error["loc"] else ""
    if name in ("id", "prompt"):
        return True
    value = error["input"] if error["type"] != "missing" else None
    return name == "role" and not (isinstance(value, str) and value)


def _refusal(exc: ValidationError) -> str:
    """The first bad field of a task record in the words the restore report has always
    used (``priority must be between 0 and 10, got 99``)."""
    errors = exc.errors()
    lacking = [e for e in errors if _lacks(e)]  # a task without id, role or prompt first
    first = lacking[0] if lacking else errors[0]
    name = str(first["loc"][0]) if first["loc"] else ""
    value = first["input"] if first["type"] != "missing" else None
    if lacking:
        return f"a saved task needs a {name}"
    if name == "role":
        return f"role must be 'planner' or 'worker', got {value!r}"
    if name == "priority":
        return f"priority must be between 0 and 10, got {value!r}"
    if name == "status":
        return f"not a task status: {value!r}"
    if name == "type":
        return f"type must be 'oneshot' or 'conditional', got {value!r}"
    if name == "timeout":
        return f"timeout must be a positive number of seconds, got {value!r}"
    if name == "depth":
        return f"depth must be a small whole number, got {value!r}"
    if name in ("created_at", "result"):
        return f"{name} must be text"
    if name in _NULLABLE_TEXT:
        return f"{name} must be text or null"
    if name == "children":
        return "children must be a list of task ids"
    if name == "condition":
        return "condition must be an object or null"
    return f"{name}: {first['msg']}"


def task_of(agent: ToolHost) -> Task | None:
    """The team task ``agent`` works on (``agent.services.team_task``), or None."""
    task = agent.services.team_task
    if task is not None and not isinstance(task, Task):
        raise TypeError(f"agent.services.team_task is a {type(task).__name__}, not a Task")
    return task


class TaskQueue:
    """Tasks waiting for a role: highest priority first, first in first out within one."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, str]] = []
        self._tasks: dict[str, Task] = {}

    def push(self, task: Task) -> None:
        """Add ``task`` behind every task of its priority."""
        self._tasks[task.id] = task
        heapq.heappush(self._heap, (-task.priority, task.seq, task.id))

    def pop(self) -> Task | None:
        """The next task to run, or None when none waits."""
        while self._heap:
            _, _, task_id = heapq.heappop(self._heap)
            task = self._tasks.pop(task_id, None)
            if task is not None:
                return task
        return None

    def remove(self, task_id: str) -> Task | None:
        """Take a waiting task out (it is skipped when it reaches the top)."""
        task = self._tasks.pop(task_id, None)
        if not self._tasks:
            self._heap.clear()
        return task

    def waiting(self) -> list[Task]:
        """The waiting tasks in the order they will run."""
        return sorted(self._tasks.values(), key=lambda t: (-t.priority, t.seq))

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._tasks

    def __len__(self) -> int:
        return len(self._tasks)


_FileStep = tuple[str, bytes | None, Future[None]]
"""One step of the task-file writer: a task id, the bytes of its file (None: delete it),
and the future that says how it went."""


class TaskStore:
    """One JSON file per open task under ``<workspace>/team/tasks/``."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.folder: Path = workspace.root / FOLDER
        self.interrupted_folder: Path = workspace.root / INTERRUPTED
        self._pending: dict[str, Future[None]] = {}
        """The last write queued for each task and not yet done."""
        self._next: dict[str, tuple[bytes, Future[None]]] = {}
        """Files :meth:`save_next` writes on the loop once its current step yields."""
        self._failed: dict[str, Future[None]] = {}
        """A write made on the loop (:meth:`save_first`, :meth:`save_next`) that failed,
        until :meth:`written` raises it or a later write of the task is queued."""
        self._lock = threading.Lock()
        self._line: list[_FileStep] = []
        """Writes and deletions queued for the writer thread and not yet taken, in order."""
        self._draining = False
        """Whether the writer thread has this store's line in hand (it takes what is queued
        until the line is empty)."""

    def _path(self, task_id: str) -> Path:
        if not task_id or "/" in task_id or "\\" in task_id or task_id.startswith("."):
            raise ValueError(f"not a task id: {task_id!r}")
        return self.folder / f"{task_id}.json"

    def save(self, task: Task) -> None:
        """Write ``task`` atomically here, after every write queued before it (redacted: a
        secret in a prompt never reaches the disk)."""
        data = self._data(task)
        self.flush()
        self._write(task.id, data)

    def save_soon(self, task: Task) -> Future[None]:
        """Queue ``task``'s write (as it is now) on the writer thread, so the loop goes on
        while the file system works; awaited by :meth:`written` where the team must not go
        on before the file is on disk. Written here when no loop runs. (Redacted here, on
        the caller's thread: only the bytes go to the writer.)"""
        return self._queue(task.id, self._data(task))

    def save_first(self, task: Task) -> Future[None]:
        """Write ``task``'s file here and now when no write of it is queued, else queue it
        after them (:meth:`save_soon`); the future says how it went, and a failure is
        raised by :meth:`written` too. For a file the team waits for at once (a held
        delegation's; a starting task's, through :meth:`save_next`): the writer thread,
        handed one small file (no fsync) as the loop made the agent and sent its first
        request, started it 1-1.6 ms late and took 1.6 ms more (docs/performance.md, "The
        delegated task (ninth session)")."""
        if self.pending(task.id):
            return self.save_soon(task)
        done: Future[None] = Future()
        self._write_first(task.id, self._data(task), done)
        return done

    def save_next(self, task: Task) -> Future[None]:
        """:meth:`save_first` once the loop's current step yields: for a starting task's
        file, so the run spawned just before sends its first request first and the file
        is written while the model works on it. ``task`` is taken as it is now; a write,
        deletion or :meth:`written` of it asked for before then writes it first, in order.
        Call on the loop."""
        if self.pending(task.id):
            return self.save_soon(task)
        done: Future[None] = Future()
        self._next[task.id] = (self._data(task), done)
        asyncio.get_running_loop().call_soon(self._write_next, task.id)
        return done

    def _write_next(self, task_id: str) -> None:
        """Write the file :meth:`save_next` left, if it still waits."""
        step = self._next.pop(task_id, None)
        if step is not None:
            self._write_first(task_id, *step)

    def _write_first(self, task_id: str, data: bytes, done: Future[None]) -> None:
        """Write here and now; a failure is kept for whoever awaits it (:meth:`written`)."""
        self._steps([(task_id, data, done)])
        if done.exception() is not None:
            self._failed[task_id] = done
            log.warning("team task file %s: %s", task_id, done.exception())

    async def asave(self, task: Task) -> None:
        """Write ``task`` off the loop and return once it is on disk (raises as
        :meth:`save`)."""
        await asyncio.wrap_future(self.save_soon(task))

    def delete_soon(self, task_id: str) -> None:
        """Queue the deletion of an ended task's file after its earlier writes; a failure is
        logged (the file then says the task still runs: a restart names it interrupted)."""
        self._queue(task_id, None)

    async def written(self, task_id: str) -> None:
        """Wait until every write queued for ``task_id`` is done; raises as the last did."""
        step = self._next.get(task_id)
        if step is not None:  # written when the step that left it yields (now, here)
            with contextlib.suppress(Exception):  # raised below, once
                await asyncio.wrap_future(step[1])
        future = self._pending.get(task_id)
        if future is not None:
            await asyncio.wrap_future(future)
        elif (failed := self._failed.pop(task_id, None)) is not None:
            failed.result()

    def pending(self, task_id: str) -> bool:
        """Whether a write or deletion of ``task_id``'s file is queued and not yet done."""
        return task_id in self._pending or task_id in self._next

    def flush(self) -> None:
        """Wait until every queued write of this store is done (their errors were logged)."""
        for task_id in list(self._next):
            self._write_next(task_id)
        for future in list(self._pending.values()):
            with contextlib.suppress(Exception):
                future.result()

    def _queue(self, task_id: str, data: bytes | None) -> Future[None]:
        """Queue the write of ``data`` as ``task_id``'s file (None: its deletion)."""
        self._path(task_id)  # refuses an id that is not a file name, here and now
        self._write_next(task_id)  # a write left for after the step comes first
        future: Future[None] = Future()
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # plain code: here and now, in order
            self.flush()
            self._steps([(task_id, data, future)])
            future.result()  # raises as the step did
            return future
        self._failed.pop(task_id, None)  # this write comes after it
        with self._lock:
            self._pending[task_id] = future
            self._line.append((task_id, data, future))
            start, self._draining = not self._draining, True
        future.add_done_callback(lambda f: self._done(task_id, f))
        if start:
            _writer().submit(self._drain)
        return future

    def _drain(self) -> None:
        """The writer thread: take everything queued, in order, and do it in one pass (one
        walk to the folder for all of it), until nothing is left."""
        while True:
            with self._lock:
                steps, self._line = self._line, []
                if not steps:
                    self._draining = False
                    return
            self._steps(steps)

    def _steps(self, steps: list[_FileStep]) -> None:
        """Write or delete each task's file in order in the tasks folder, opened once (never
        through a link); each future says how its own step went. A step whose waiter gave
        up before it began is left out, as an executor leaves out a cancelled call."""
        try:
            with self._folder() as folder:
                for task_id, data, future in steps:
                    if not future.set_running_or_notify_cancel():
                        continue
                    try:
                        name = f"{task_id}.json"
                        if data is None:
                            unlink_at(folder, name)
                        else:
                            write_atomic_at(folder, name, data)
                    except BaseException as exc:
                        future.set_exception(exc)
                    else:
                        future.set_result(None)
        except BaseException as exc:  # the folder itself: every step not yet done fails
            for _, _, future in steps:
                if not future.done() and (future.running()
                                          or future.set_running_or_notify_cancel()):
                    future.set_exception(exc)

    @contextlib.contextmanager
    def _folder(self) -> Iterator[int]:
        """The tasks folder, open (walked without following a link); made when missing,
        which is seldom: a walk that makes nothing costs half the system calls."""
        with contextlib.ExitStack() as stack:
            try:
                folder = stack.enter_context(folder_fd(self.workspace.root, FOLDER))
            except FileNotFoundError:
                folder = stack.enter_context(
                    folder_fd(self.workspace.ensure(), FOLDER, create=True))
            yield folder

    def _done(self, task_id: str, future: Future[None]) -> None:
        with self._lock:
            if self._pending.get(task_id) is future:
                del self._pending[task_id]
        if not future.cancelled() and future.exception() is not None:
            log.warning("team task file %s: %s", task_id, future.exception())

    def _data(self, task: Task) -> bytes:
        """``task``'s file as it is now, redacted (a secret in a prompt never reaches the
        disk); refuses an id that is not a file name."""
        from agent_kernel.core.redaction import scrub

        self._path(task.id)
        return json.dumps(scrub(task.to_record()), ensure_ascii=False).encode("utf-8")

    def _write(self, task_id: str, data: bytes) -> None:
        done: Future[None] = Future()
        self._steps([(task_id, data, done)])
        done.result()

    def interrupted(self, task: Task) -> None:
        """Move an interrupted task's file to ``team/interrupted/`` with its new status."""
        data = self._data(task)
        self.flush()
        write_atomic(self.workspace.ensure(), f"{INTERRUPTED}/{task.id}.json", data)
        self.delete(task.id)

    def delete(self, task_id: str) -> None:
        """Forget a task that ended (after its queued writes); a missing file is fine."""
        self.flush()
        self._unlink(task_id)

    def _unlink(self, task_id: str) -> None:
        with contextlib.suppress(ValueError):
            self._path(task_id)
            if not (self.folder.is_dir() or self.folder.is_symlink()):
                return  # nothing saved yet: no folder to make for a deletion
            done: Future[None] = Future()
            self._steps([(task_id, None, done)])
            with contextlib.suppress(FileNotFoundError):
                done.result()

    def load_all(self) -> tuple[list[Task], list[str]]:
        """Every saved task, oldest first, and a line for each file that could not be read."""
        self.flush()
        tasks: list[Task] = []
        saved_seq: dict[str, int] = {}
        problems: list[str] = []
        try:
            found = names(self.workspace.root, FOLDER, ".json")
        except OSError as exc:  # a planted team/tasks link: say so, restore nothing
            return [], [f"{FOLDER}/: not read ({exc})"]
        for path in [self.folder / name for name in found[:MAX_FILES]]:
            try:  # never through a link, never a FIFO or device (safe_open)
                record = json.loads(read_capped(self.workspace.root, f"{FOLDER}/{path.name}",
                                                MAX_FILE_BYTES))
                if not isinstance(record, dict):
                    raise ValueError("not a JSON object")
                task = Task.from_record(record)
            except (TooLarge, UnsafeWorkspacePath):
                problems.append(f"{path.name}: not read (not a small regular file)")
                continue
            except (OSError, ValueError, TypeError, RecursionError) as exc:
                problems.append(f"{path.name}: not restored ({exc})")
                continue
            if f"{task.id}.json" != path.name:
                problems.append(f"{path.name}: not restored: its id is not its file name")
                continue
            seq = record.get("seq")
            saved_seq[task.id] = seq if type(seq) is int else 0
            tasks.append(task)
        # Creation time first; tasks made in the same millisecond keep their saved order.
        tasks.sort(key=lambda t: (t.created_at, saved_seq[t.id], t.id))
        for task in tasks:  # first in, first out again within a priority
            task.seq = next(_SEQ)
        problems += untangle(tasks)
        return tasks, problems


def untangle(tasks: list[Task]) -> list[str]:
    """Keep only the tree links the team itself makes between saved tasks (``tasks`` in
    their saved order): a parent comes before its child, the child names it back as its
    ``parent_id`` and sits one level deeper. Any other ``children`` entry (the task itself,
    one not saved, an earlier one: how a cycle must look; one that names another parent)
    and a ``parent_id`` naming the task itself or a later one are dropped, each with a
    line saying so. So the tasks read back form trees at most 101 deep (``depth`` is at
    most 100), which every walk of a tree can follow to its end."""
    problems: list[str] = []
    order = {task.id: index for index, task in enumerate(tasks)}
    by_id = {task.id: task for task in tasks}
    for index, task in enumerate(tasks):
        if task.parent_id is not None and order.get(task.parent_id, -1) >= index:
            problems.append(f"{task.id}.json: its parent link was dropped: it names "
                            + ("the task itself" if task.parent_id == task.id else
                               "a task saved after it"))
            task.parent_id = None
    for index, task in enumerate(tasks):
        kept: list[str] = []
        for child_id in task.children:
            child = by_id.get(child_id)
            why = ("the task itself" if child_id == task.id else
                   "a task that is not saved" if child is None else
                   "a task saved before it" if order[child_id] < index else
                   "a task listed twice" if child_id in kept else
                   "a task whose parent is another" if child.parent_id != task.id else
                   "a task not one level below it" if child.depth != task.depth + 1 else "")
            if why:
                problems.append(f"{task.id}.json: a child link was dropped: it names {why}")
            else:
                kept.append(child_id)
        task.children = kept
    return problems



@dataclass
class RestoreReport:
    """What a new team found of the tasks an earlier kernel left, as data and as a note."""

    queued: list[Task] = field(default_factory=list)
    interrupted: list[Task] = field(default_factory=list)
    cancelled: list[Task] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    question: str | None = None
    """The Teller's question an earlier session saved, if one was waiting (as shown)."""
    question_request: str = ""
    """The request that earlier session was working on when it asked (as shown)."""
    agents: list[str] = field(default_factory=list)
    """Spawned agents (spec 004) that were alive when the kernel stopped: now interrupted."""

    @property
    def has_news(self) -> bool:
        """True when there is anything to tell the person."""
        return bool(self.queued or self.interrupted or self.cancelled or self.problems
                    or self.question or self.agents)

    def text(self) -> str:
        """A short note for the person: what runs again, what was lost, what was unreadable."""
        if not self.has_news:
            return "No saved team tasks to restore."
        lines = []
        if self.question:
            request = (f", asked while working on “{self.question_request}”"
                       if self.question_request else "")
            lines.append(f"A question from an earlier session was saved in the workspace: "
                         f"“{self.question}”{request}. The team's next prompt asks you "
                         "whether your prompt answers it (with nobody to ask, the headless "
                         "policy decides: deny, the default, drops it).")
        if self.queued:
            lines.append(f"{len(self.queued)} queued team task(s) were waiting from an earlier "
                         "session; they run only if you say so (the team's next prompt asks).")
        elif self.interrupted or self.cancelled or self.problems:
            lines.append("Restored 0 queued team task(s) from the workspace.")
        lines += [f"  {t.role.capitalize()}, priority {t.priority}: {with_tokens(t.prompt[:60])}"
                  for t in self.queued]
        lines += [f"  interrupted: {t.id} ({t.role}, {t.agent_id or '?'}) was running when the "
                  f"kernel stopped; it did not finish: {with_tokens(t.prompt[:60])}"
                  for t in self.interrupted]
        lines += [f"  cancelled: {t.id} (worker) was held by a Planner whose run never ended: "
                  f"{with_tokens(t.prompt[:60])}" for t in self.cancelled]
        if self.agents:
            lines.append(f"{len(self.agents)} spawned agent(s) were alive when the kernel "
                         "stopped and are now interrupted: " + ", ".join(self.agents))
        lines += [f"  problem: {p}" for p in self.problems]
        return "\n".join(lines)
