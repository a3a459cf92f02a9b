"""Task files written off the loop, with the same rule as before: on disk before the team goes on.

A fan-out of 50 wrote ~150 task files and deleted 50 on the loop, each a rename or an
unlink that waits on the file system; they now go through one writer thread, in the
order asked, and the team awaits a file where it must exist before it goes on: a
delegation's before ``delegate`` answers, a task's ``running`` file before its first tool
call runs (its first model call goes out beside the write), its deletion before
``task_finished`` (docs/team.md, "Persistence").
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from scripted_server import Call, Message
from test_team import RoleModel, delegate, first_prompt, last, make_team

from agent_kernel.core.workspace import Workspace
from agent_kernel.team import queue
from agent_kernel.team.queue import Task, TaskStore
from agent_kernel.team.roles import PLANNER, TELLER, WORKER


def saved(workspace: Path) -> dict[str, dict[str, Any]]:
    """The task files of ``workspace`` by prompt."""
    files = (workspace / "team" / "tasks").glob("*.json")
    return {r["prompt"]: r for r in (json.loads(p.read_text()) for p in files)}


def test_each_step_is_on_disk_before_the_team_goes_on(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    workspace = tmp_path / "ws"
    real_write, real_unlink = queue.write_atomic_at, queue.unlink_at

    writes: list[tuple[str, str]] = []

    def slow_write(folder: int, name: str, data: bytes) -> None:
        time.sleep(0.05)  # a loaded file system: whoever does not wait reads the old state
        real_write(folder, name, data)
        record = json.loads(data)
        writes.append((record["prompt"], record["status"]))

    def slow_unlink(folder: int, name: str) -> bool:
        time.sleep(0.05)
        return real_unlink(folder, name)

    monkeypatch.setattr(queue, "write_atomic_at", slow_write)
    monkeypatch.setattr(queue, "unlink_at", slow_unlink)
    seen: dict[str, dict[str, dict[str, Any]]] = {}

    def respond(role: str, body: dict[str, Any]) -> Message:
        said, prompt = last(body), first_prompt(body)
        if role == TELLER:
            if not any(m["role"] == "tool" for m in body["messages"]):  # not delegations
                return Message(calls=[delegate("plan it"), Call("list_tasks", "{}")])  # alone
            seen.setdefault("teller after delegate", saved(workspace))
            return Message(text="all done")
        if role == PLANNER:
            if said["role"] == "user":  # not delegations alone: its run goes on
                return Message(calls=[delegate("job one"), delegate("job two"),
                                      Call("list_tasks", "{}")])
            seen["planner after delegate"] = saved(workspace)
            return Message(text="planned")
        if said["role"] == "user":  # its first model call goes out beside the write
            return Message(calls=[Call("peek", json.dumps({"job": prompt}))])
        return Message(text=f"{prompt}: done")

    def peek(job: str) -> str:
        """What the task files say as this tool runs."""
        seen[f"{job} runs a tool"] = saved(workspace)
        return "seen"

    async def run() -> None:
        model = RoleModel(respond)
        team = make_team(model, workspace, tools=[peek])
        result = await team.arun("get it done")
        assert result.ok, result.error
        assert not model.hook_errors, model.hook_errors

    asyncio.run(run())
    # the Teller's delegation was on disk (queued, or running already) when delegate answered
    assert seen["teller after delegate"]["plan it"]["status"] in ("queued", "running")
    # a Planner's delegations are held, and on disk, when delegate answers
    planner = seen["planner after delegate"]
    assert {planner[j]["status"] for j in ("job one", "job two")} == {"held"}
    assert planner["plan it"]["status"] == "running"
    # a Worker's file says running before its first tool call does anything
    for job in ("job one", "job two"):
        assert seen[f"{job} runs a tool"][job]["status"] == "running", seen[f"{job} runs a tool"]
    assert saved(workspace) == {}, {k: v["status"] for k, v in saved(workspace).items()}
    # a task that starts at once is written once, as running; a held one, held then running
    assert [status for prompt, status in writes if prompt == "plan it"] == ["running"]
    for job in ("job one", "job two"):
        assert [status for prompt, status in writes if prompt == job] == ["held", "running"]


def writing_threads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of the thread each task file is written in, in order, from now on."""
    threads: list[str] = []
    real = queue.write_atomic_at

    def write_atomic_at(folder: int, name: str, data: bytes) -> None:
        threads.append(threading.current_thread().name)
        real(folder, name, data)

    monkeypatch.setattr(queue, "write_atomic_at", write_atomic_at)
    return threads


async def test_writes_leave_the_loop_and_keep_their_order(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    threads = writing_threads(monkeypatch)
    store = TaskStore(Workspace(tmp_path / "ws"))
    task = Task(id="task_one", role=WORKER, prompt="first", status="held")
    store.save_soon(task)
    task.prompt, task.status = "second", "queued"  # the first write keeps what it was given
    store.save_soon(task)
    await store.written(task.id)
    assert saved(tmp_path / "ws")["second"]["status"] == "queued"
    assert threads and all(name.startswith("team-task-files") for name in threads), threads
    assert threading.current_thread().name not in threads

    task.status = "running"
    await store.asave(task)
    store.delete_soon(task.id)
    await store.written(task.id)
    assert saved(tmp_path / "ws") == {}

    store.save_soon(task)
    store.delete(task.id)  # plain calls wait for what was queued before them
    assert saved(tmp_path / "ws") == {}


async def test_a_starting_tasks_file_is_written_at_once_unless_a_write_of_it_waits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    threads = writing_threads(monkeypatch)
    write_atomic_at = queue.write_atomic_at
    store = TaskStore(Workspace(tmp_path / "ws"))
    task = Task(id="task_one", role=WORKER, prompt="first", status="running")
    written = store.save_first(task)
    assert written.done() and written.exception() is None  # here, on the caller's thread
    assert threads == [threading.current_thread().name]
    assert saved(tmp_path / "ws")["first"]["status"] == "running"

    held = Task(id="task_two", role=WORKER, prompt="second", status="held")
    gate = threading.Event()
    monkeypatch.setattr(queue, "write_atomic_at",
                        lambda *args: (gate.wait(10), write_atomic_at(*args)))
    store.save_soon(held)  # still on the writer thread when the task starts
    held.status = "running"
    later = store.save_first(held)
    assert not later.done()  # queued after the write before it, never beside it
    gate.set()
    await asyncio.wrap_future(later)
    assert saved(tmp_path / "ws")["second"]["status"] == "running"
    assert len(threads) == 3 and all(  # both on the writer thread, in order
        name.startswith("team-task-files") for name in threads[1:]), threads


async def test_a_starting_tasks_file_is_written_once_the_run_spawned_before_it_has_stepped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``save_next``: the run sends its first request, then the file is written on the loop
    (while the model works); a write or deletion asked for before then writes it first."""
    threads = writing_threads(monkeypatch)
    root = tmp_path / "ws"
    store = TaskStore(Workspace(root))
    task = Task(id="task_one", role=WORKER, prompt="first", status="running")
    seen: list[dict[str, dict[str, Any]]] = []

    async def first_step() -> None:  # what the run does before it yields: no file yet
        seen.append(saved(root))

    run = asyncio.get_running_loop().create_task(first_step())
    written = store.save_next(task)
    task.status = "ok"  # taken as it was when asked
    assert not written.done() and store.pending(task.id) and saved(root) == {}
    await store.written(task.id)
    assert seen == [{}] and run.done()
    assert saved(root)["first"]["status"] == "running"
    assert threads == [threading.current_thread().name] and not store.pending(task.id)

    second = Task(id="task_two", role=WORKER, prompt="second", status="running")
    store.save_next(second)
    store.delete_soon(second.id)  # after the write left for later, never before it
    await store.written(second.id)
    assert "second" not in saved(root)  # deleted on the thread after it was written here
    assert threads[1:] == [threading.current_thread().name]


async def test_a_failed_write_reaches_whoever_waits_for_it(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "team").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (root / "team" / "tasks").symlink_to(tmp_path / "elsewhere")  # refused, never followed
    store = TaskStore(Workspace(root))
    task = Task(id="task_one", role=WORKER, prompt="first", status="running")
    with pytest.raises(OSError):
        await store.asave(task)
    with pytest.raises(OSError):  # written at once: the future holds the refusal
        store.save_first(task).result()
    with pytest.raises(OSError):  # and whoever awaits the file hears of it
        await store.written(task.id)
    store.save_soon(task)
    with pytest.raises(OSError):
        await store.written(task.id)
    assert not list((tmp_path / "elsewhere").iterdir())


def test_a_task_record_is_a_copy_as_asdict_makes_it() -> None:
    from dataclasses import asdict

    task = Task(id="task_one", role=WORKER, prompt="first", status="running",
                condition={"kind": "expression", "nested": [{"a": 1}]}, children=["task_two"])
    record = task.to_record()
    assert record == asdict(task) and list(record) == list(asdict(task))
    record["condition"]["nested"][0]["a"] = 2
    record["children"].append("task_three")
    assert task.condition == {"kind": "expression", "nested": [{"a": 1}]}
    assert task.children == ["task_two"]


def test_a_forked_child_writes_its_task_files_itself(tmp_path: Path) -> None:
    import os

    async def one(name: str) -> None:
        store = TaskStore(Workspace(tmp_path / name))
        await store.asave(Task(id="task_one", role=WORKER, prompt=name, status="running"))

    asyncio.run(one("parent"))  # the parent's writer thread is running now
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's outcome is its exit status
        try:
            asyncio.run(asyncio.wait_for(one("child"), 10))
        except BaseException:
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert saved(tmp_path / "child")["child"]["status"] == "running"


def test_a_file_that_cannot_be_deleted_still_lets_the_task_end(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def refused(folder: int, name: str) -> bool:
        raise PermissionError(f"{name}: read-only")

    monkeypatch.setattr(queue, "unlink_at", refused)

    def respond(role: str, body: dict[str, Any]) -> Message:
        if role == TELLER and not any(m["role"] == "tool" for m in body["messages"]):
            return Message(calls=[delegate("plan it")])
        if role == PLANNER and last(body)["role"] == "user":
            return Message(calls=[delegate("job one")])
        return Message(text=f"{first_prompt(body)}: done")

    async def run() -> None:
        team = make_team(RoleModel(respond), tmp_path / "ws")
        result = await asyncio.wait_for(team.arun("get it done"), 60)
        assert result.ok, result.error
        worker = next(t for t in team.supervisor.tasks.values() if t.role == WORKER)
        assert worker.status == "ok"

    asyncio.run(run())
    assert "read-only" in caplog.text  # logged, and the file says running: a restart
    assert {r["status"] for r in saved(tmp_path / "ws").values()} == {"running"}


def test_a_running_file_that_cannot_be_written_stops_the_task_before_its_tools(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first model call went out beside the write; the write failed, so no tool call
    of the task runs, the task ends with the error, and the team's run still returns."""
    real = queue.write_atomic_at

    def write_atomic_at(folder: int, name: str, data: bytes) -> None:
        record = json.loads(data)
        if record["prompt"] == "job one" and record["status"] == "running":
            raise PermissionError("team/tasks: read-only")
        real(folder, name, data)

    monkeypatch.setattr(queue, "write_atomic_at", write_atomic_at)
    ran: list[str] = []

    def peek(job: str) -> str:
        """Runs only when the task's file is on disk."""
        ran.append(job)
        return "seen"

    def respond(role: str, body: dict[str, Any]) -> Message:
        said = last(body)
        if role == TELLER:
            if not any(m["role"] == "tool" for m in body["messages"]):  # not delegations
                return Message(calls=[delegate("plan it"), Call("list_tasks", "{}")])  # alone
            return Message(text="told")
        if role == PLANNER and said["role"] == "user":
            return Message(calls=[delegate("job one")])
        if role == WORKER and said["role"] == "user":
            return Message(calls=[Call("peek", json.dumps({"job": first_prompt(body)}))])
        return Message(text=f"{first_prompt(body)}: done")

    async def run() -> None:
        team = make_team(RoleModel(respond), tmp_path / "ws", tools=[peek])
        result = await asyncio.wait_for(team.arun("get it done"), 60)
        assert result.status == "ok", result.error
        worker = next(t for t in team.supervisor.tasks.values() if t.role == WORKER)
        assert worker.status == "error" and "read-only" in (worker.error or ""), worker.error
        finished = [r for r in team.ledger.records() if r.get("kind") == "task_finished"
                    and r.get("task_id") == worker.id]
        assert [r["status"] for r in finished] == ["error"]

    asyncio.run(run())
    assert ran == []


async def test_what_waits_is_written_in_one_pass_in_order(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """A Planner's delegations come in a burst: the writer takes every file queued while it
    worked and writes them in one pass (one walk to the folder), in the order asked; a step
    that fails fails for its own waiter only."""
    walks: list[str] = []
    order: list[str] = []
    real_walk, real_write = queue.folder_fd, queue.write_atomic_at
    gate = threading.Event()

    def folder_fd(root: Path, folder: str, create: bool = False) -> Any:
        walks.append(folder)
        return real_walk(root, folder, create)

    def write_atomic_at(folder: int, name: str, data: bytes) -> None:
        gate.wait(10)  # the first write is slow: the rest queue up behind it
        if name == "task_7.json":
            raise PermissionError("task_7.json: read-only")
        order.append(name)
        real_write(folder, name, data)

    store = TaskStore(Workspace(tmp_path / "ws"))
    # the folder is there already: a first pass that makes it walks twice (the walk that
    # finds it missing, the one that makes it), and how many steps that first pass takes
    # depends on when the writer thread starts
    with store._folder():
        pass
    monkeypatch.setattr(queue, "folder_fd", folder_fd)
    monkeypatch.setattr(queue, "write_atomic_at", write_atomic_at)
    tasks = [Task(id=f"task_{n}", role=WORKER, prompt=f"job {n}", status="held")
             for n in range(20)]
    futures = [store.save_soon(task) for task in tasks]
    store.delete_soon("task_3")
    gate.set()
    results = await asyncio.gather(*(asyncio.wrap_future(f) for f in futures),
                                   return_exceptions=True)
    await store.written("task_3")
    failed = [t.id for t, r in zip(tasks, results, strict=True) if isinstance(r, BaseException)]
    assert failed == ["task_7"]
    assert order == [f"task_{n}.json" for n in range(20) if n != 7]
    assert len(walks) <= 2, walks  # the first step alone, then all that queued behind it
    assert set(saved(tmp_path / "ws")) == {f"job {n}" for n in range(20) if n not in (3, 7)}
    assert not any(store.pending(t.id) for t in tasks)
