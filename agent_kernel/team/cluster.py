"""The kernel's side of a team on a Dask cluster: submit Worker runs, serve what they ask.

``Team(..., cluster=...)`` gives the supervisor a :class:`Cluster`. Each Worker task
then lives through :class:`RemoteLife`: the same life cycle as in-process (task
records, clock, statuses, settling), but its run is one Dask task
(:func:`~agent_kernel.team.remote.run_remote`) on a Dask worker, and this module
serves it through :class:`~agent_kernel.team.remote_run.RemoteRun`: the run's events
are emitted on the task's kernel-side agent (its twin, made as an in-process Worker's
agent is, so views, relay and board see the same stream), its model calls are made by
the team's model here (keys stay here; the budget counts every call here), its ledger
records are appended here to the one chain in their order (per-run sequence numbers: a
duplicate is dropped, a gap ends the run), each on disk before anything of the run
after it is served, its approvals go to the Teller's channel, and the kernel's tools
run on the twin.

The channel's queue calls go on the kernel's loop, over that loop's own connection to
the scheduler (:meth:`Cluster.scheduler_here`, with the client's security): no hop to
the client's thread and back for each message, and the kernel's loop never blocks on
the network (every call is awaited). Submissions, cancels and queue releases go through
the client. Faults: a worker that dies mid-run ends the run
``interrupted`` (and it runs once more when the ledger holds no side effect of it);
the scheduler going away ends every remote run ``interrupted``, says so on the
team's bus, and later Worker tasks run in this kernel. ``distributed`` is imported
only when a cluster is given.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import uuid
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar, cast

from agent_kernel.core.config import Settings
from agent_kernel.core.events import (
    Notice,
)
from agent_kernel.core.statuses import RunOutcome, TaskEnding
from agent_kernel.engine.agent import Agent, RunResult
from agent_kernel.team.queue import Task
from agent_kernel.team.remote import (
    Message,
)
from agent_kernel.team.remote_run import ClusterLost, RemoteRun
from agent_kernel.team.supervisor import DelegatedLife

if TYPE_CHECKING:
    from agent_kernel.team.supervisor import Supervisor


log = logging.getLogger(__name__)
T = TypeVar("T")
CHECK_EVERY = 1.0
"""How often the scheduler is asked which workers are alive while remote runs are out."""
PUT_PATIENCE = 5.0
"""How long a message to a worker waits for its reply queue to be made."""
HEAD_MAX = 512
"""Where a worker's text must name its run by (the run's key, then a newline)."""
RELEASE_AFTER = 0.5
"""How long an ended run's queues and Dask future may wait to be released with the next
submission (one batch on the client's stream, not two: docs/performance.md)."""


class Cluster:
    """A team's Dask cluster: its client, the team's inbox, and the remote runs in flight."""

    def __init__(self, cluster: Any) -> None:
        from distributed import Client

        self.client: Any = cluster if isinstance(cluster, Client) else Client(
            str(cluster), set_as_default=False, timeout="10s")
        self.owned = not isinstance(cluster, Client)
        """Whether the team made the client (and closes it)."""
        self.given = None if isinstance(cluster, Client) else str(cluster)
        """The address the team was given (``%agent_config --cluster``), or None."""
        self.address = str(self.client.scheduler.address)
        self.message_cap = Settings().cluster_message_cap
        """The largest text a worker may send (the team's ``Settings.cluster_message_cap``)."""
        self.inbox = f"agent-kernel-{uuid.uuid4().hex[:12]}-inbox"
        self.runs: dict[str, RemoteRun] = {}
        self.where: dict[str, str] = {}
        """Where each running remote task runs, in words (the board reads it), by task id."""
        self.lost: str | None = None
        """Why the cluster cannot be used any more (the scheduler went away), or None."""
        self.bus_notice: Callable[[str], None] | None = None
        """Told, on the kernel's loop, when the scheduler went away (the team says so)."""
        self.loop: asyncio.AbstractEventLoop | None = None
        self._pump: asyncio.Task[None] | None = None
        """The inbox's reader, on the kernel's loop (a new loop reads a new inbox)."""
        self._rpc: Any = None
        self._rpc_loop: asyncio.AbstractEventLoop | None = None
        self._starting: asyncio.Task[None] | None = None
        self._retired: list[tuple[list[str], Any]] = []
        """Ended runs' queue names and Dask futures, released together (:meth:`retire`)."""
        self._flush_due = False
        self._retiring = threading.Lock()
        """The kernel's loop retires, the client's loop may release: both touch the list."""

    # -- Dask, from the kernel's loop -------------------------------------------------
    def call(self, make: Callable[[], Coroutine[Any, Any, T]]) -> asyncio.Future[T]:
        """Run ``make()`` on the running loop (the kernel's), as a task of its own."""
        return asyncio.ensure_future(make())

    def scheduler_here(self) -> Any:
        """The running loop's own connection to the scheduler (distributed's ``rpc``, with
        the client's security): the channel's queue calls go on the kernel's loop, with no
        hop to the client's thread and back for each message."""
        loop = asyncio.get_running_loop()
        if self._rpc is None or self._rpc_loop is not loop:
            from distributed.core import rpc

            self._rpc, self._rpc_loop = rpc(self.address,
                                            connection_args=self.client.connection_args), loop
        return self._rpc

    @property
    def dashboard(self) -> str | None:
        """The Dask dashboard's link when there is one (http or https only)."""
        try:
            link = str(self.client.dashboard_link or "")
        except Exception:
            return None
        return link if link.startswith(("http://", "https://")) else None

    async def start(self) -> None:
        """Make the inbox and start reading it, once however many runs begin together;
        raises :class:`ClusterLost`."""
        if self.lost is not None:
            raise ClusterLost(self.lost)
        self.loop = asyncio.get_running_loop()
        if self._starting is None or self._starting.get_loop() is not self.loop:
            self._starting = self.loop.create_task(self._start())
        await asyncio.shield(self._starting)

    async def _start(self) -> None:
        loop = asyncio.get_running_loop()
        if self._pump is not None and self._pump.get_loop() is loop and not self._pump.done():
            return
        # A new loop (a CLI's or a test's next ``asyncio.run``) reads an inbox of its own:
        # the last loop's reader may still wait on the scheduler for the old one.
        old = self.inbox if self._pump is not None else None
        inbox = f"agent-kernel-{uuid.uuid4().hex[:12]}-inbox" if old else self.inbox
        try:
            await asyncio.wait_for(self.scheduler_here().queue_create(name=inbox,
                                                                      maxsize=0), 10)
        except Exception as exc:
            self.lost = f"the Dask scheduler at {self.address} cannot be reached ({exc})"
            raise ClusterLost(self.lost) from exc
        if old is not None:
            self.client.loop.add_callback(self._send_releases, [old])
        self.inbox = inbox
        self._pump = loop.create_task(self._read_inbox(inbox))

    async def _read_inbox(self, inbox: str) -> None:
        """On the kernel's loop: hand each message to its run (a scheduler that went away
        ends every run); dead workers are watched beside it."""
        scheduler = self.scheduler_here()
        watch = asyncio.ensure_future(self._watch_workers())
        try:
            while self.lost is None:  # one text at a time: at most the cap in memory
                self._take(await scheduler.queue_get(name=inbox, timeout=None))
        except Exception as exc:  # the scheduler is gone (or broken): say so once
            self._lose_all(exc)
        finally:
            watch.cancel()
            with contextlib.suppress(Exception):  # this loop's connections go with it
                await scheduler.close_rpc()

    async def _watch_workers(self) -> None:
        """Each second, end the runs whose worker the scheduler no longer has."""
        while self.lost is None:
            await asyncio.sleep(CHECK_EVERY)
            if not self.runs:
                continue
            try:
                known = await asyncio.wait_for(
                    self.scheduler_here().identity(n_workers=-1), 10)
            except Exception as exc:
                self._lose_all(exc)
                return
            alive = set(known.get("workers", {}))
            for run in list(self.runs.values()):
                if run.worker is not None and run.worker not in alive:
                    run.soon(run.lose, f"the Dask worker {run.worker} died mid-task")

    def _take(self, record: Any) -> None:
        """One item of the inbox: a worker's text ``<run>\n<JSON list of messages>``. A text
        over the cap is not parsed: its run (named before the newline) ends with a
        sentence that says so. Anything else a worker puts there is dropped."""
        text = record.get("value") if isinstance(record, dict) else record
        if not isinstance(text, str):
            log.warning("dropped an item of the inbox that is not a worker's text")
            return
        key, newline, _ = text[:HEAD_MAX].partition("\n")
        if len(text) > self.message_cap:
            run = self.runs.get(key) if newline else None
            why = (f"a message from its worker was {len(text):,} bytes, over the cap of "
                   f"{self.message_cap:,} bytes (Settings.cluster_message_cap), so it was "
                   "not read")
            log.warning("refused %s: %s", key[:80] if newline else "an item", why)
            if run is not None:
                run.soon(run.fail, why)
            return
        try:
            messages = json.loads(text[len(key) + 1:]) if newline else None
        except ValueError:
            messages = None
        if not isinstance(messages, list):
            log.warning("dropped an item of the inbox that is not a list of messages")
            return
        for message in messages:
            if isinstance(message, dict) and isinstance(message.get("body"), dict) \
                    and message.get("run") == key:
                self._hand_on(cast(Message, message))

    def _hand_on(self, message: Message) -> None:
        run = self.runs.get(str(message.get("run")))
        if run is not None:
            run.receive(message)  # on its loop: the inbox is read there
        elif message.get("type") == "hello":  # a rerun Dask made of an ended run
            target = str(message["body"].get("reply_to"))
            if target.startswith(f"{self.inbox}-{message.get('run')}@"):  # its own queue
                _ = asyncio.ensure_future(self.refuse(message))

    def _lose_all(self, exc: BaseException) -> None:
        if self.lost is not None:
            return
        self.lost = f"the Dask scheduler at {self.address} went away ({type(exc).__name__})"
        for run in list(self.runs.values()):
            run.soon(run.lose, self.lost, True)
        if self.bus_notice is not None and self.loop is not None:
            with contextlib.suppress(RuntimeError):  # the kernel's loop has closed
                self.loop.call_soon_threadsafe(self.bus_notice, self.lost)

    async def refuse(self, message: Message, release: bool = True) -> None:
        """Tell a run that says ``hello`` for an attempt that has ended (a rerun Dask made
        after a worker died, a run stopped before it started) not to start; its reply queue
        goes then (the refusal is read before that)."""
        target = message["body"].get("reply_to")
        reply: Message = {"run": message["run"], "seq": 0, "type": "reply",
                          "body": {"to": message["seq"], "go": False,
                                   "why": "this run has ended"}}
        try:
            await self.put(str(target), reply)
        except Exception:
            log.debug("could not refuse a rerun of %s", message["run"])
            return
        if release and isinstance(target, str):  # through the client, on its loop
            self.client.loop.add_callback(self._send_releases, [target])

    async def put(self, queue: str, message: Message) -> None:
        """Put a message on a run's reply queue, from the kernel's loop. The worker makes
        that queue while its first request travels, so the queue may not be there yet
        for a moment: then it is tried again, for up to :data:`PUT_PATIENCE`."""
        deadline, pause = asyncio.get_running_loop().time() + PUT_PATIENCE, 0.002
        while True:
            try:
                await self.scheduler_here().queue_put(name=queue, data=message)
                return
            except KeyError:
                if asyncio.get_running_loop().time() > deadline:
                    raise
                await asyncio.sleep(pause)
                pause = min(2 * pause, 0.5)

    # -- releasing ended runs -------------------------------------------------------------
    def retire(self, queues: list[str], future: Any) -> None:
        """An ended run's queues and Dask future go with the next submission, or after
        :data:`RELEASE_AFTER`. The client sends both on its batched stream, which waits
        10 ms after a send before the next: a release sent alone would hold back the next
        Worker's submission by that much (and the scheduler's word to the worker by 5)."""
        with self._retiring:
            self._retired.append((queues, future))
            due, self._flush_due = self._flush_due, True
        if not due:  # the timer lives on the client's loop: the kernel's may end first
            self.client.loop.add_callback(self._release_later)

    def _release_later(self) -> None:
        asyncio.get_running_loop().call_later(RELEASE_AFTER, self.release_retired)

    def release_retired(self) -> None:
        """Release the ended runs' queues on the scheduler and let go of their futures."""
        with self._retiring:
            retired, self._retired, self._flush_due = self._retired, [], False
        client = self.client
        if self.lost is None:
            names = [name for queues, _ in retired for name in queues]
            if names:
                client.loop.add_callback(self._send_releases, names)
        retired.clear()  # the futures go now: Dask releases their keys

    def _send_releases(self, names: list[str]) -> None:
        for name in names:  # on the client's loop: Queue.close()'s message
            self.client._send_to_scheduler({"op": "queue_release", "name": name})

    def close(self) -> None:
        """Stop reading; close the client when the team made it (the team moved on)."""
        self.release_retired()  # while the scheduler is still ours to tell
        self.lost = self.lost or "the team no longer uses this cluster"
        for run in list(self.runs.values()):  # none is left waiting for a word
            run.soon(run.lose, self.lost)
        if self._pump is not None:
            with contextlib.suppress(RuntimeError):  # its loop has closed
                self._pump.cancel()
        if self.owned:
            self.client.close()

    # -- one Worker task ----------------------------------------------------------------
    def life(self, supervisor: Supervisor, task: Task, agent: Agent) -> RemoteLife:
        """The life of a Worker task whose run goes to this cluster."""
        return RemoteLife(supervisor, task, agent, self)

    async def run(self, supervisor: Supervisor, task: Task, agent: Agent,
                  life: RemoteLife) -> RunResult:
        """Run ``task``'s agent on the cluster (once more after a worker died, when it left
        no side effect on record); its result, as an in-process run's."""
        await self.start()
        attempt = 1
        while True:
            run = RemoteRun(self, supervisor, task, agent, attempt)
            result = await run.go()
            life.worker = run.worker
            if run.interrupted is None:
                return result
            life.interrupted = run.interrupted
            if attempt > 1 or run.side_effects or run.lost_scheduler:
                return result
            agent.bus.emit(Notice(str(task.run_id), f"{run.interrupted}; it changed "
                                  "nothing on record, so it runs once more", level="warning"))
            attempt += 1
            life.interrupted = None


class RemoteLife(DelegatedLife):
    """A Worker task whose run is on the cluster: the same life, another place."""

    def __init__(self, supervisor: Supervisor, task: Task, agent: Agent, cluster: Cluster
                 ) -> None:
        super().__init__(supervisor, task, agent)
        self.cluster = cluster
        self.interrupted: str | None = None
        self.worker: str | None = None

    async def run(self) -> RunResult:
        """On the cluster; in this kernel when the cluster is gone before it starts."""
        try:
            return await self.cluster.run(self.supervisor, self.task, self.agent, self)
        except ClusterLost:
            return await super().run()

    def started_fields(self) -> dict[str, str]:
        """``task_started`` says the cluster it goes to."""
        return {"cluster": self.cluster.address}

    def finished_fields(self) -> dict[str, str]:
        """``task_finished`` says the worker its (last) run was on."""
        return {"ran_on": self.worker} if self.worker else {}

    def outcome(self, status: RunOutcome, error: str | None, timed_out: bool
                ) -> tuple[TaskEnding, str | None]:
        """``interrupted`` when its worker (or the scheduler) went away."""
        if self.interrupted is not None:
            return "interrupted", self.interrupted
        return super().outcome(status, error, timed_out)


__all__ = ["Cluster", "ClusterLost", "RemoteLife", "RemoteRun"]
