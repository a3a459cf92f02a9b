"""One Worker task's run on a Dask cluster, served by the kernel (:mod:`.cluster`).

:class:`RemoteRun` is one attempt: it makes the spec the worker rebuilds the agent
from (:mod:`.remote`), submits it, and serves what the run sends: its events emitted
on the task's kernel-side agent, its model calls made here (keys stay here; the
budget counts them), its ledger records appended here to the one chain in order (a
duplicate dropped, a gap ends the run), its approvals asked on the Teller's channel
by the kernel's own rules, and the kernel's tools run here with a grant used once.
It ends ``interrupted`` when its worker or the scheduler goes away.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from agent_kernel.core.events import (
    Event,
    LedgerRecorded,
    Notice,
    RunError,
    RunFinished,
    TextDelta,
    ToolCallFinished,
)
from agent_kernel.engine.agent import Agent, RunResult
from agent_kernel.engine.models.provider_errors import ProviderError
from agent_kernel.engine.registry import Tool, ToolContext, ToolError, TurnState
from agent_kernel.engine.tool_calls import tool_context
from agent_kernel.engine.tool_clock import ToolClock
from agent_kernel.team.queue import Task
from agent_kernel.team.remote import (
    LEFT_OUT,
    Message,
    MessageType,
    RemoteSpec,
    WireBody,
    event_of,
    plain,
    public_settings,
    result_of,
    run_remote,
    turn_body,
)

if TYPE_CHECKING:
    from agent_kernel.team.supervisor import Supervisor

log = logging.getLogger(__name__)
T = TypeVar("T")

STOP_GRACE = 3.0
"""How long a stopped remote run may take to end before its Dask task is cancelled."""
GREET_AFTER = 1.0
"""When the kernel answers a run's ``hello`` if nothing else went to the worker before (any
message from the kernel tells the worker it is heard)."""
KERNEL_TOOLS = ("put_artifact", "get_artifact", "send_message", "query_state",
                "list_variables", "inspect_variable", "read_cells", "last_error",
                "run_python", "insert_cell", "edit_cell", "run_cell")
"""Tools that belong to the kernel (the team's board and artifacts, the notebook's
variables, Python and cells): a remote Worker is offered them and the kernel runs them."""
READS_ONLY = frozenset({"get_artifact", "query_state", "list_variables", "inspect_variable",
                        "read_cells", "last_error"})
"""Kernel tools that change nothing: a run that used only these may run again."""
WORKER_RECORDS = frozenset({"tool_call", "decision", "run_cancelled", "run_error",
                            "context_compacted"})
"""The records a remote Worker's run makes; any other kind sent by a worker is refused
(the person's word, the team's task records and the like are written by the kernel)."""
SET_HERE = ("record_id", "timestamp", "prev_hash", "hash", "signature")
"""Fields of a worker's record the kernel sets itself (or the chain does)."""
WORKER_EVENTS = frozenset({"RunStarted", "ModelCallStarted", "TextDelta", "StreamReset",
                           "ToolCallStarted", "ToolCallFinished", "LedgerRecorded",
                           "ConsoleOutput", "Notice", "Loading", "RunError"})
"""Events a remote run may stream; questions, replies, a run's end and the team's own
are the kernel's. A record an event carries is the kernel's copy of it, or none."""


class ClusterHost(Protocol):
    """What a run uses of its cluster (:class:`~agent_kernel.team.cluster.Cluster`), so
    this module does not import the one that imports it."""

    client: Any
    inbox: str
    lost: str | None
    runs: dict[str, RemoteRun]
    where: dict[str, str]

    def call(self, make: Callable[[], Coroutine[Any, Any, T]]) -> asyncio.Future[T]: ...
    def scheduler_here(self) -> Any: ...
    async def refuse(self, message: Message, release: bool = True) -> None: ...
    async def put(self, queue: str, message: Message) -> None: ...
    def retire(self, queues: list[str], future: Any) -> None: ...
    def release_retired(self) -> None: ...


class ClusterLost(RuntimeError):
    """The scheduler cannot be reached."""


def where_words(address: str | None, *, said: str | None = None,
                checked: bool | None = None) -> str:
    """Where a run is, as the board says it: ``on the cluster, worker 127.0.0.1:40123``
    once the scheduler confirmed it; until then, or when it did not, whose word it is."""
    if not address:
        return "on the cluster, waiting for a worker"
    words = f"on the cluster, worker {address.split('://', 1)[-1]}"
    if checked:
        return words
    if checked is None:
        return f"{words} (as the worker says; not yet checked with the scheduler)"
    if said and said != address:
        return f"{words} (the scheduler's word; the worker said {said.split('://', 1)[-1]})"
    return f"{words} (as the worker says; the scheduler did not confirm it)"


class RemoteRun:
    """One attempt of a Worker task on the cluster: its spec, its channel, its end."""

    def __init__(self, cluster: ClusterHost, supervisor: Supervisor, task: Task, agent: Agent,
                 attempt: int) -> None:
        self.cluster, self.supervisor, self.task, self.agent = cluster, supervisor, task, agent
        self.key = f"{task.id}#{attempt}"
        self.outbox = f"{cluster.inbox}-{self.key}"
        """The stem of the run's reply queue; the worker makes ``<outbox>@<its address>``."""
        self.dask_key = f"agent-kernel-{task.agent_id}-{self.key}"
        self.loop = asyncio.get_running_loop()
        self.expected = 1
        self.sent = 0
        self.worker: str | None = None
        """The worker the run is on: the scheduler's word once asked (:meth:`_verify`),
        until then the one the worker named in its ``hello``."""
        self.said: str | None = None
        """The worker the run's ``hello`` named (a claim: any worker can say any address)."""
        self.checked: bool | None = None
        """Whether the scheduler confirmed it runs this task there (None: not asked yet)."""
        self.verified: asyncio.Task[None] | None = None
        self.pid: int | None = None
        """The worker's process id, as its ``hello`` says (what a person kills; tests do)."""
        self.reply_to: str | None = None
        """The worker's queue for this run's replies and stop (made by the worker)."""
        self.ledger_error: str | None = None
        """Why a record the run sent could not be written: its next request is refused."""
        self._behind = 0
        """Records being written and what waits for them (events, the end) in order."""
        self.ended: asyncio.Future[WireBody] = self.loop.create_future()
        self.interrupted: str | None = None
        self.lost_scheduler = False
        self.stopping = False
        """The kernel asked the run to stop (Stop, cancel_task, the task's clock)."""
        self.side_effects = False
        self.failed = False
        """The kernel ended the run (a message over the cap, a Dask task that failed)."""
        self.future: Any = None
        self.written: dict[str, dict[str, object]] = {}
        """The run's records as the kernel wrote them, by record id."""
        self.granted: list[tuple[str, str]] = []
        """Approvals the kernel granted this run and no kernel tool call has used yet:
        (tool, its arguments as canonical JSON)."""
        self._ledger = asyncio.Lock()
        self._work: set[asyncio.Task[None]] = set()

    def soon(self, fn: Callable[..., object], *args: object) -> None:
        """Call ``fn(*args)`` on the kernel's loop (from the client's)."""
        with contextlib.suppress(RuntimeError):  # the kernel's loop has closed
            self.loop.call_soon_threadsafe(fn, *args)

    def spec(self) -> RemoteSpec:
        """What the worker rebuilds the agent from."""
        sup, agent, task = self.supervisor, self.agent, self.task
        model = agent.chat_model
        imported, kernel_tools = [], list(KERNEL_TOOLS)
        for tool in [*sup.tools, *agent.user_tools.tools()]:
            path = importable(tool)
            if path is None:
                kernel_tools.append(tool.name)
            else:
                imported.append(path)
        return RemoteSpec(
            run=self.key, task_id=task.id, run_id=str(task.run_id), agent_id=agent.agent_id,
            role=str(agent.role), prompt=task.prompt, system_prompt=agent.system_prompt,
            workspace=str(agent.workspace.root), settings=public_settings(agent.settings),
            ledger_fields=dict(agent.ledger_fields), model=model.name,
            window=model.window(agent.settings),
            accepts_images=model.accepts_images(agent.settings),
            writes_summaries=model.writes_summaries, kernel_tools=kernel_tools,
            imported_tools=imported, left_out=list(LEFT_OUT), inbox=self.cluster.inbox,
            outbox=self.outbox)

    async def go(self) -> RunResult:
        """Submit the run and serve it until it ends (stopped: a stop, then a cancel)."""
        cluster, task = self.cluster, self.task
        cluster.runs[self.key] = self
        release = self.agent.counted_as_run(str(task.run_id))
        cluster.where[task.id] = where_words(None)
        try:
            try:
                cluster.release_retired()  # in the same batch as this submission
                self.future = cluster.client.submit(run_remote, self.spec(), pure=False,
                                                    retries=0, key=self.dask_key)
            except Exception as exc:  # nothing was submitted: the task may run here
                raise ClusterLost(f"{type(exc).__name__}: {exc}") from exc
            self.future.add_done_callback(lambda done: self.soon(self._task_ended, done))
            try:
                body = await asyncio.shield(self.ended)
            except asyncio.CancelledError:  # Stop, cancel_task or the task's clock
                body = await self._stop()
        finally:
            release()
            cluster.runs.pop(self.key, None)
            cluster.where.pop(task.id, None)
            self.supervisor.board.changed(task)
            if self.future is not None and not self.future.done() and (
                    self.interrupted is not None or self.failed):
                self.cancel_future()
            self._release_queues()
        result = result_of(body.get("outcome") or {}, self.agent.model)
        result.run_id = str(task.run_id)
        self.agent.bus.emit(RunFinished(result.run_id, result))
        return result

    async def _stop(self) -> WireBody:
        self.stopping = True
        if self.reply_to is None:  # not started: its hello will be refused
            self.cancel_future()
            why = "The run was stopped before it started on the cluster."
            self.agent.bus.emit(RunError(str(self.task.run_id), why, kind="cancelled"))
            return {"outcome": {"status": "cancelled", "error": why}}
        self.send("stop", {})
        try:
            return await asyncio.wait_for(asyncio.shield(self.ended), STOP_GRACE)
        except (asyncio.TimeoutError, asyncio.CancelledError):
            self.cancel_future()
            why = f"The run was stopped; the worker did not end it within {STOP_GRACE:g} s, " \
                  "so its Dask task was cancelled."
            self.agent.bus.emit(RunError(str(self.task.run_id), why, kind="cancelled"))
            return {"outcome": {"status": "cancelled", "error": why}}

    def cancel_future(self) -> None:
        """Cancel the run's Dask task (in a thread: the client's cancel waits for the
        scheduler)."""
        if self.future is not None and self.cluster.lost is None:
            self.loop.run_in_executor(None, self.future.cancel)

    def _release_queues(self) -> None:
        """The run's queues on the scheduler go (a late reply to them is dropped there),
        with its future, soon (:meth:`~agent_kernel.team.cluster.Cluster.retire`)."""
        self.cluster.retire([self.reply_to] if self.reply_to else [], self.future)

    def send(self, kind: MessageType, body: WireBody) -> None:
        """Put a message on the run's reply queue (a reply: matched by the request's
        ``seq``)."""
        self.sent += 1
        message = Message(run=self.key, seq=self.sent, type=kind, body=body)
        cluster, target = self.cluster, self.reply_to
        if cluster.lost is not None or target is None or self.ended.done():
            return  # (an ended run's worker is gone, or refused, or its Dask task cancelled)
        future = cluster.call(lambda: cluster.put(target, message))
        future.add_done_callback(lambda f: f.cancelled() or f.exception())

    def reply(self, message: Message, body: WireBody) -> None:
        """Answer the request ``message``."""
        body["to"] = message["seq"]
        self.send("reply", body)

    def _task_ended(self, future: Any) -> None:
        """The Dask task ended: a run that said nothing (it failed before or while it
        started) ends with its error in words, never waits."""
        if self.ended.done():
            return
        if future.status == "error":
            self.loop.run_in_executor(None, self._failed, future)
        elif future.status == "finished":  # its ``done`` is on its way; a moment for it
            self.loop.call_later(5.0, self.fail, "the Dask task ended without saying how "
                                 "the run went")

    def _failed(self, future: Any) -> None:
        try:
            exc = future.exception(timeout=5)
            why = f"{type(exc).__name__}: {exc}"
        except Exception as other:
            why = f"its error could not be read ({type(other).__name__})"
        self.soon(self.fail, f"the Dask task failed on the worker: {why}")

    def fail(self, why: str) -> None:
        """The run cannot go on, and not because a machine went away: it ends ``error``."""
        if self.ended.done():
            return
        message = f"The run on the cluster failed: {why}"
        self.failed = True
        self.agent.bus.emit(RunError(str(self.task.run_id), message, kind="internal"))
        self.ended.set_result({"outcome": {"status": "error", "error": message}})

    def lose(self, why: str, scheduler: bool = False) -> None:
        """The run's worker (or the scheduler) is gone: the run ends interrupted."""
        if self.ended.done():
            return
        self.interrupted, self.lost_scheduler = why, scheduler
        self.agent.bus.emit(RunError(str(self.task.run_id), f"Interrupted: {why}.",
                                     kind="error"))
        self.ended.set_result({"outcome": {"status": "error", "error": f"Interrupted: {why}."}})

    # -- what the worker sends ----------------------------------------------------------
    def receive(self, message: Message) -> None:
        """One message from the worker, in order: dropped when seen (or when the run has
        ended), an end when one is missing, else handled. A record is written before
        anything after it is served, emitted or taken as the end (:meth:`_in_turn`)."""
        seq = int(message.get("seq", 0))
        if message.get("type") == "hello" and self.said is not None:
            # Dask started the task again elsewhere: its first worker died. The rerun is told
            # not to start; this attempt has ended.
            self.cluster.call(lambda: self.cluster.refuse(message))
            self.lose(f"the Dask worker {self.worker} died mid-task")
            return
        if self.ended.done() and message.get("type") != "hello":
            return
        if seq < self.expected:
            return
        if seq > self.expected:
            self.lose(f"a message of the remote run was lost (expected {self.expected}, "
                      f"got {seq})")
            return
        self.expected += 1
        kind, body = message["type"], message["body"]
        if kind == "hello":
            self.said = self.worker = str(body.get("worker"))
            self.pid = body.get("pid") if isinstance(body.get("pid"), int) else None
            if body.get("reply_to") != f"{self.outbox}@{self.said}":
                self.fail("its hello named a reply queue that is not this run's")
                return
            self.reply_to = str(body.get("reply_to"))
            if self.ended.done() or self.stopping:  # stopped (or lost) before it started
                self.cluster.call(lambda: self.cluster.refuse(message, release=False))
                if not self.ended.done():
                    self.ended.set_result({"outcome": {
                        "status": "cancelled", "error": "The run was stopped."}})
                return
            self.loop.call_later(GREET_AFTER, self._greet, message)
            self.cluster.where[self.task.id] = where_words(self.worker, said=self.said)
            self.supervisor.board.changed(self.task)
            self.verified = self.loop.create_task(self._verify())
        elif kind == "event":
            made = event_of(body)
            if made is not None:  # vetted in its turn: the record it names is written
                self._in_turn(self._emit, made)
        elif kind == "record":
            self._behind += 1
            self._serve(self._record(body))
        elif kind == "done":
            self._in_turn(self._done, body)
        else:
            self._serve(self._answer(message))

    def _greet(self, hello: Message) -> None:
        """Answer ``hello`` when nothing else has gone to the worker since (its first model
        call is slow): a worker that hears nothing in ``remote.HELLO_WAIT`` stops."""
        if self.sent == 0 and not self.ended.done():
            self.reply(hello, {"go": True})

    def _emit(self, made: Event) -> None:
        event = self._vetted(made)
        if event is not None:
            self.agent.bus.emit(event)

    def _in_turn(self, act: Callable[..., object], *args: object) -> None:
        """``act(*args)`` now, or after the records sent before it are written (in order:
        the ledger's lock serves its waiters first come, first served)."""
        if not self._behind:
            act(*args)
            return
        self._behind += 1

        async def later() -> None:
            try:
                async with self._ledger:
                    act(*args)
            finally:
                self._behind -= 1

        self._serve(later())

    def _done(self, body: WireBody) -> None:
        outcome = body.get("outcome") or {}
        if self.ledger_error is not None:  # a record it sent was not written
            outcome = {**outcome, "status": "error", "error": self.ledger_error}
            body = {"outcome": outcome}
        if outcome.get("status") == "cancelled" and not self.stopping:
            self.interrupted = (f"the Dask worker {self.worker} ended the run itself (it "
                                "was shut down, or the task cancelled there)")
        if not self.ended.done():
            self.ended.set_result(body)

    async def _verify(self) -> None:
        """Ask the scheduler which worker runs this run's Dask task: what the board shows
        and the ledger says (``ran_on``) is the scheduler's word; the worker's own, when it
        differs or the scheduler does not confirm it, is kept beside it (``ran_on_said``)."""
        scheduler = self.cluster.scheduler_here()
        said = self.said

        async def ask() -> dict[str, list[str]]:
            try:
                found: dict[str, list[str]] = await scheduler.processing(workers=[said])
            except Exception:  # not a worker the scheduler has: ask about them all
                found = await scheduler.processing()
            return found

        try:
            found = await asyncio.wait_for(ask(), 10)
        except Exception as exc:
            log.debug("could not ask the scheduler where %s runs: %s", self.key, exc)
            self.checked = False
            return
        holders = [worker for worker, keys in found.items() if self.dask_key in keys]
        self.checked = holders == [said]
        if len(holders) == 1:
            self.worker = holders[0]
        if self.task.id in self.cluster.where and not self.ended.done():
            self.cluster.where[self.task.id] = where_words(self.worker, said=said,
                                                           checked=self.checked)
            self.supervisor.board.changed(self.task)

    def where_fields(self) -> dict[str, object]:
        """What a record of this run says of where it ran."""
        fields: dict[str, object] = {"ran_on": self.worker}
        if not self.checked:
            fields["ran_on_said"] = self.said
        return fields

    def _serve(self, work: Coroutine[Any, Any, None]) -> None:
        made = self.loop.create_task(work)
        self._work.add(made)
        made.add_done_callback(self._work.discard)

    async def _record(self, body: WireBody) -> None:
        """Records sent without waiting for an answer: written in their turn; a failure
        ends the run at its next request or its end."""
        try:
            if "error" in body:  # over the cap on the worker: never sent
                answer: WireBody = {"error": str(body["error"])}
            else:
                answer = await self._append(body)
        except Exception as exc:  # ours: the run ends readably
            log.exception("writing a remote run's records failed")
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        finally:
            self._behind -= 1
        if "error" in answer and self.ledger_error is None:
            self.ledger_error = (f"The ledger could not record this run's records "
                                 f"({answer['error']}), so it stopped.")
            self.agent.bus.emit(Notice(str(self.task.run_id), self.ledger_error,
                                       level="error"))

    async def _answer(self, message: Message) -> None:
        kind, body = message["type"], message["body"]
        if self._behind:  # the records sent before this request are written first
            async with self._ledger:
                pass
        if self.ledger_error is not None:
            self.reply(message, {"error": self.ledger_error})
            return
        try:
            if kind == "ledger":
                answer = await self._append(body)
            elif kind == "model":
                answer = await self._model(body)
            elif kind == "approval":
                answer = await self._approve(body)
            elif kind == "tool":
                answer = await self._tool(body)
            else:
                answer = WireBody(error=f"unknown request {kind!r}")
        except Exception as exc:  # ours: the worker is told, the run ends readably
            log.exception("serving a remote %s request failed", kind)
            answer = WireBody(error=f"{type(exc).__name__}: {exc}")
        self.reply(message, answer)

    async def _append(self, body: WireBody) -> WireBody:
        """The run's records, in the order sent, into the one chain (said where they ran)."""
        sent = [r for r in body.get("records") or [] if isinstance(r, dict)]
        if refused := sorted({str(r.get("kind")) for r in sent} - WORKER_RECORDS):
            return {"error": f"a remote run may not write {', '.join(refused)} records "
                             "(the kernel writes those)"}
        async with self._ledger:
            if self.verified is not None:  # where it runs, by the scheduler's word
                with contextlib.suppress(Exception):
                    await asyncio.shield(self.verified)
            records = [{**{k: v for k, v in r.items() if k not in SET_HERE},
                        "agent_id": self.agent.agent_id, "run_id": str(self.task.run_id),
                        **self.where_fields()} for r in sent]
            for record in records:
                if record.get("kind") == "tool_call" and self._changes(record):
                    self.side_effects = True
            try:
                written = await self.agent.ledger.append_async(records)
            except Exception as exc:
                return {"error": f"{type(exc).__name__}: {exc}"}
        for record, as_sent in zip(written, sent, strict=False):
            self.written[str(record.get("record_id"))] = dict(record)
            # the worker's events name a record by the id it sent (it did not wait)
            self.written[str(as_sent.get("record_id"))] = dict(record)
        return {"records": plain(written)}

    def _vetted(self, event: Event) -> Event | None:
        """A worker's event as the kernel lets it through: its kind allowed, this run's id,
        and any record it carries the one the kernel wrote (else none)."""
        if type(event).__name__ not in WORKER_EVENTS:
            return None
        event = dataclasses.replace(event, run_id=str(self.task.run_id))
        if isinstance(event, LedgerRecorded):
            kept = self.written.get(str(event.record.get("record_id")))
            return dataclasses.replace(event, record=kept) if kept is not None else None
        if isinstance(event, ToolCallFinished) and event.record is not None:
            return dataclasses.replace(
                event, record=self.written.get(str(event.record.get("record_id"))))
        return event

    def _changes(self, record: Mapping[str, object]) -> bool:
        """Whether a tool call on record may have changed something."""
        name = str(record.get("tool_name"))
        if name in READS_ONLY:
            return False
        if name in KERNEL_TOOLS:
            return True
        tool = self.agent.registry.get(name)
        arguments = record.get("arguments")
        return tool is None or tool.needs_approval(arguments if isinstance(arguments, dict)
                                                   else {})

    async def _model(self, body: WireBody) -> WireBody:
        """The call the worker asked for, made here by the team's model (streamed here),
        once the team's budget allows it (checked here, right before the call: the remote
        budget check rides on the request)."""
        agent, run_id = self.agent, str(self.task.run_id)
        limit = await self.supervisor.budget.before_call(agent, run_id)
        if limit:
            return {"limit": limit}
        try:
            turn = await agent.chat_model.complete(
                body.get("messages") or [], body.get("tools") or [], agent.settings,
                role=body.get("role"),
                on_text=lambda text: agent.bus.emit(TextDelta(run_id, text)))
        except ProviderError as exc:
            return {"error": str(exc), "kind": "provider"}
        self.supervisor.budget.spent(agent, run_id, turn.usage, turn.cost)
        return turn_body(turn)

    async def _approve(self, body: WireBody) -> WireBody:
        """The person's word on a call the worker is about to make, asked by the kernel's
        own rules for the tool named (its terms, digest and policy, as in-process) for this
        run; the worker's terms, digest and run are not taken. Recorded here."""
        name = str(body.get("what"))
        tool: Tool | None = self.agent.registry.get(name)
        if tool is None:
            why = f"the kernel has no tool {name!r} to approve"
            return {"refusal": {"error": f"Tool '{name}' was not run: {why}",
                                "summary": f"{name} was not run: {why}", "reason": why,
                                "guidance": "Do not retry it; carry on without it."}}
        arguments = dict(body.get("arguments") or {})
        notes = body.get("notes")  # what the worker's precheck found (a command's sandbox)
        ctx, _ = self._context(tool, name)
        refusal = await self.agent.approvals.check(
            ctx, tool, arguments,
            notes if isinstance(notes, dict) and name not in KERNEL_TOOLS else None)
        if refusal is None:
            self.side_effects = True  # an approved call may have changed something
            self.granted.append((name, canonical(arguments)))
            return {"refusal": None}
        return {"refusal": {"error": refusal.error, "summary": refusal.summary,
                            "reason": refusal.reason, "guidance": refusal.guidance}}

    def _context(self, tool: Tool, name: str, call_id: str = ""
                 ) -> tuple[ToolContext, ToolClock]:
        """A tool context of this run on the twin (what the kernel's gate and tools read)
        and the call's clock."""
        from agent_kernel.engine.models.base import ToolCallRequest

        call = ToolCallRequest(id=call_id, name=name, arguments="{}")
        clock = ToolClock(tool.timeout or self.agent.settings.tool_timeout)
        return tool_context(self.agent, call, str(self.task.run_id), TurnState(),
                            clock), clock

    async def _tool(self, body: WireBody) -> WireBody:
        """A kernel tool, run on the task's agent here."""
        name = str(body.get("name"))
        tool: Tool | None = self.agent.registry.get(name)
        if tool is None:
            return {"error": f"the kernel has no tool {name!r}"}
        arguments = dict(body.get("arguments") or {})
        ctx, clock = self._context(tool, name, str(body.get("call_id") or ""))
        # The gate holds here too: a call that needs the person's word runs only on an
        # approval this kernel granted for exactly this tool and these arguments (used
        # once), else the kernel asks itself. A worker's word is not an approval.
        granted = (name, canonical(arguments))
        if granted in self.granted:
            self.granted.remove(granted)
        elif (refusal := await self.agent.approvals.check(ctx, tool, arguments)) is not None:
            return {"error": refusal.error, "summary": refusal.summary,
                    "guidance": refusal.guidance}
        try:
            value = await clock.run(tool.invoke(arguments, ctx))
        except ToolError as exc:
            return {"error": str(exc), "summary": exc.summary, "guidance": exc.guidance}
        except Exception as exc:
            return {"error": f"{type(exc).__name__}: {exc}"}
        return {"result": plain(value)}


def canonical(arguments: object) -> str:
    """Arguments as one JSON text (keys sorted): what an approval and a call compare."""
    return json.dumps(plain(arguments or {}), sort_keys=True)


def importable(tool: Tool) -> str | None:
    """``module:name`` of a person's tool a worker can import, or None (a notebook's own,
    defined in ``__main__``: the kernel runs it)."""
    func = getattr(tool, "func", tool)
    module, name = getattr(func, "__module__", None), getattr(func, "__qualname__", "")
    if not module or module in ("__main__", "builtins") or "<" in name:
        return None
    return f"{module}:{name}"


__all__ = ["KERNEL_TOOLS", "ClusterHost", "ClusterLost", "RemoteRun", "canonical", "importable",
           "where_words"]
