"""A Worker task's agent on a Dask worker: the wire, and the worker's side of it.

A team with a cluster (:mod:`agent_kernel.team.cluster`) runs each Worker task's
agent loop and its tools on a Dask worker, as one ``async def`` Dask task
(:func:`run_remote`) on the worker's event loop. Nothing live crosses: the agent is
rebuilt there from a plain :class:`RemoteSpec` (role, ids, prompt, workspace path,
settings without secrets, which tools run where), and everything that must stay in
the kernel is asked of the kernel over two Dask queues on the scheduler (one
inbox per team, one reply queue per run attempt on its worker), as JSON texts of
:class:`Message` dicts, each with the run's key and a per-run sequence number (a text
over ``Settings.cluster_message_cap`` is never sent, and the kernel never reads one):

- the model: :class:`KernelModel` sends the request; the kernel's real model makes
  the call (keys never leave the kernel; budgets count every call there);
- the ledger: :class:`KernelLedger` sends each record; the kernel appends it to the one
  chain before it serves the run's next request, emits its next event or takes its end,
  so a record is on disk before the model sees what follows it;
- approvals: :class:`KernelApprovals` asks the kernel, which asks the person through
  the Teller's channel and records (and signs) the approval there;
- the kernel's tools (artifacts, messages, the notebook's variables and cells):
  :class:`KernelTool` runs them in the kernel, on the kernel-side twin of the agent;
- events: every event of the run streams back and is emitted in the kernel.

The kernel sends back replies (by the request's sequence number) and a ``stop``.
This module imports ``distributed`` only inside :func:`run_remote`, on the worker.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypedDict

from agent_kernel.core import events
from agent_kernel.core.config import Settings
from agent_kernel.core.events import Event, Notice, RunFinished
from agent_kernel.core.ledger import Ledger, LedgerError, PendingAppend, new_id
from agent_kernel.engine.agent import Agent, RunResult
from agent_kernel.engine.approvals import Approvals, ApprovalTerms, Refusal
from agent_kernel.engine.models.base import (
    ChatMessage,
    Model,
    ModelTurn,
    OnRetry,
    OnText,
    ToolCallRequest,
    ToolSchema,
)
from agent_kernel.engine.models.provider_errors import ProviderError
from agent_kernel.engine.registry import SchemaKey, Tool, ToolContext, ToolError
from agent_kernel.engine.services import BudgetRefused
from agent_kernel.engine.tool_calls import ToolCallRecord

log = logging.getLogger(__name__)

MessageType = Literal["hello", "event", "record", "model", "ledger", "approval", "tool",
                      "done", "reply", "stop"]
"""What a message is: from the worker, ``hello`` (where it runs; it goes with the first
request, and the kernel may answer it with a refusal), ``event``, ``record`` (ledger
records that need no answer), the requests ``model`` (the kernel checks the budget with
it) / ``ledger`` (from a thread: answered once written) / ``approval`` / ``tool``, and
``done``; from the kernel, ``reply`` (to a request, by its ``seq``) and ``stop``."""


Free = dict[str, object]
"""Free JSON: a tool's arguments, a record, a dataclass's fields."""


class WireBody(TypedDict, total=False):
    """What a message carries; each type fills the keys it needs (docs/scale.md)."""

    to: int
    """A reply's request (its ``seq``)."""
    go: bool
    why: str
    worker: str
    pid: int
    reply_to: str
    """Where the kernel's messages to the run go (a queue of that attempt on that worker)."""
    event: str
    fields: Free
    messages: list[ChatMessage]
    tools: list[ToolSchema]
    role: str | None
    turn: Free
    error: str
    kind: str
    summary: str | None
    guidance: str | None
    records: list[Free]
    run_id: str
    what: str
    arguments: Free
    digest: str | None
    notes: Free | None
    terms: Free | None
    refusal: dict[str, str] | None
    """An approval's refusal (:class:`Refusal`'s fields), or None: approved."""
    limit: str | None
    """Why the budget refuses the next model call, or None."""
    name: str
    call_id: str | None
    result: object
    outcome: Free
    """The run's :class:`RunResult`, in ``done``."""


class Message(TypedDict):
    """One message on the wire: the run's key (task id and attempt), its sequence number
    (per run and direction, from 1), its type and a JSON-able body."""

    run: str
    seq: int
    type: MessageType
    body: WireBody


class RemoteSpec(TypedDict):
    """All a worker needs to rebuild a Worker task's agent: plain, picklable, no secret."""

    run: str
    """The run's key on the wire: ``<task id>#<attempt>``."""
    task_id: str
    run_id: str
    agent_id: str
    role: str
    prompt: str
    system_prompt: str | None
    workspace: str
    settings: Settings
    """The team's settings (a dataclass of plain values) without ``api_key`` and
    ``extra_completion_args``: those are the kernel's."""
    ledger_fields: dict[str, str | None]
    model: str
    window: int
    accepts_images: bool
    writes_summaries: bool
    kernel_tools: list[str]
    """Tools the kernel runs for this agent (:class:`KernelTool`)."""
    imported_tools: list[str]
    """The person's tools the worker can import (``module:name``), run on the worker."""
    left_out: list[str]
    """Tools a remote Worker is not offered (a wait for messages needs the kernel's board)."""
    inbox: str
    outbox: str
    """The stem of the run's reply queue (the worker adds its address: a rerun Dask makes
    elsewhere never reads what was meant for another)."""


LEFT_OUT = ("wait_for_message",)
"""Not offered on a worker: waiting for a message suspends the task on the kernel's board."""

HELLO_WAIT = 30.0
"""How long a run goes on without a word from the kernel after its ``hello`` (a reply, or
the kernel's answer to ``hello`` when its first model call takes a while): a run whose
kernel does not read its inbox stops then, it does not hang."""
EVENT_LINGER = 0.005
"""How long events and records alone wait to be sent, for the request behind them to go in
the same ``queue_put`` (a put of them ahead of a request delays it by a round trip)."""
NO_ANSWER = ("event", "record")
"""What the worker sends and waits for no answer to."""


SchemaCache = dict[SchemaKey, list[ToolSchema]]
SCHEMAS: dict[tuple[str, ...], SchemaCache] = {}
"""Per worker process: the tool schemas a Worker's registry built, by what it was built
from (role, tool names, the person's imported tools, the settings). Every Worker of a team
is offered the same ones; building them again took ~7 ms of each remote task's first model
call (the in-process supervisor's agents share their tools the same way)."""


def schemas_key(spec: RemoteSpec, agent: Agent) -> tuple[str, ...]:
    """What a Worker's tool schemas depend on."""
    return (spec["role"], *sorted(tool.name for tool in agent.registry),
            "|", *spec["imported_tools"], "|", repr(spec["settings"]))


def plain(value: object) -> Any:
    """``value`` as JSON-able data (what cannot be JSON becomes its ``str``)."""
    return json.loads(json.dumps(value, default=str))


def public_settings(settings: Settings) -> Settings:
    """The settings a worker may see: the secrets left out (and the model's address, which
    may carry one: the kernel makes every model call)."""
    return dataclasses.replace(settings, api_key=None, api_base=None,
                               extra_completion_args={})


def event_body(event: Event) -> WireBody:
    """An event as the wire carries it: its class name and its fields."""
    return {"event": type(event).__name__,
            "fields": plain({f.name: getattr(event, f.name) for f in dataclasses.fields(event)})}


def event_of(body: WireBody) -> Event | None:
    """The event a body names, or None when it names no event of ours."""
    cls = getattr(events, str(body.get("event")), None)
    if not (isinstance(cls, type) and issubclass(cls, Event)):
        return None
    try:
        fields: Any = body.get("fields") or {}
        made: Event = cls(**fields)
    except TypeError:
        return None
    return made


def result_body(result: RunResult) -> WireBody:
    """A run's result as the ``done`` message carries it."""
    return {"outcome": plain(dataclasses.asdict(result))}


def result_of(body: Mapping[str, Any], model: str) -> RunResult:
    """The :class:`RunResult` a ``done`` body describes."""
    calls = [ToolCallRecord(**c) for c in body.get("tool_calls") or []]
    return RunResult(run_id=str(body.get("run_id")), model=str(body.get("model") or model),
                     reply=str(body.get("reply") or ""), tool_calls=calls,
                     usage=dict(body.get("usage") or {}), cost=body.get("cost"),
                     status=body.get("status") or "error", error=body.get("error"),
                     duration_ms=int(body.get("duration_ms") or 0),
                     ended_by=body.get("ended_by"))


def turn_body(turn: ModelTurn) -> WireBody:
    """A model's turn as the kernel's reply carries it."""
    return {"turn": plain(dataclasses.asdict(turn))}


def turn_of(body: Mapping[str, Any]) -> ModelTurn:
    """The :class:`ModelTurn` a reply describes."""
    calls = [ToolCallRequest(**c) for c in body.get("tool_calls") or []]
    return ModelTurn(text=str(body.get("text") or ""), tool_calls=calls,
                     usage=dict(body.get("usage") or {}), cost=body.get("cost"),
                     finish_reason=body.get("finish_reason"),
                     attempts=int(body.get("attempts") or 1))


class RemoteError(RuntimeError):
    """The kernel answered a request with an error (words for the model or the person)."""


# -- the worker's side ---------------------------------------------------------------------


class WorkerChannel:
    """The worker's end of one run: an ordered sender, a reader of the kernel's replies."""

    def __init__(self, spec: RemoteSpec, scheduler: Any, reply_queue: str) -> None:
        self.spec = spec
        self.scheduler = scheduler
        """The worker's connection to the scheduler (its queue handlers live there)."""
        self.reply_queue = reply_queue
        self.cap = spec["settings"].cluster_message_cap
        self.refused: str | None = None
        """Why the kernel would not let this run start (a rerun of an ended attempt)."""
        self.greeted = asyncio.Event()
        """The kernel answered ``hello``."""
        self.loop = asyncio.get_running_loop()
        self.thread = threading.get_ident()
        self.seq = 0
        self.outgoing: asyncio.Queue[Message] = asyncio.Queue()
        self.waiting: dict[int, asyncio.Future[WireBody]] = {}
        self.stop_run: Any = None
        self.broken: BaseException | None = None
        self.why_broken = ""

    def send(self, kind: MessageType, body: WireBody) -> int:
        """Queue a message (in order, after every earlier one); its sequence number (-1:
        sent from a tool's thread, numbered on the loop)."""
        if threading.get_ident() != self.thread:
            self.loop.call_soon_threadsafe(self.send, kind, body)
            return -1
        self.seq += 1
        self.outgoing.put_nowait(Message(run=self.spec["run"], seq=self.seq, type=kind,
                                         body=body))
        return self.seq

    async def request(self, kind: MessageType, body: WireBody,
                      timeout: float | None = None) -> WireBody:
        """Send a request and wait for the kernel's reply."""
        if self.broken is not None:
            raise RemoteError(self.why_broken)
        future: asyncio.Future[WireBody] = self.loop.create_future()
        self.waiting[self.send(kind, body)] = future
        return await asyncio.wait_for(future, timeout)

    def request_from_thread(self, kind: MessageType, body: WireBody) -> WireBody:
        """:meth:`request` from a tool's thread (a sync ledger write)."""
        if threading.get_ident() == self.thread:
            raise LedgerError("a synchronous ledger write on the worker's loop would block it")
        return asyncio.run_coroutine_threadsafe(self.request(kind, body), self.loop).result()

    async def sender(self) -> None:
        """Put the messages on the team's inbox in order: those waiting together go as one
        JSON text in one ``queue_put`` (events and records wait up to :data:`EVENT_LINGER`
        for the request behind them, so they do not cost a round trip ahead of it)."""
        while True:
            batch = [await self.outgoing.get()]
            deadline = self.loop.time() + EVENT_LINGER
            while True:
                while not self.outgoing.empty():
                    batch.append(self.outgoing.get_nowait())
                left = deadline - self.loop.time()
                if left <= 0 or any(m["type"] not in NO_ANSWER for m in batch):
                    break
                try:
                    batch.append(await asyncio.wait_for(self.outgoing.get(), left))
                except asyncio.TimeoutError:
                    break
            try:
                for text in self.texts(batch):
                    await self.scheduler.queue_put(name=self.spec["inbox"], data=text)
            except Exception as exc:  # the scheduler is gone: every wait ends
                self._break(exc)
            finally:
                for _ in batch:
                    self.outgoing.task_done()

    def texts(self, batch: list[Message]) -> list[str]:
        """The batch as ``<run>\n<JSON list>`` texts, each within the cap (a message over
        it is replaced by the sentence that says so: :meth:`over_cap`)."""
        head = f"{self.spec['run']}\n"
        room = self.cap - len(head) - 2
        parts: list[str] = []
        for message in batch:
            part = json.dumps(message, default=str)  # ASCII: its length is its bytes
            if len(part) > room:
                part = json.dumps(self.over_cap(message, len(part)), default=str)
            parts.append(part)
        texts, group, size = [], list[str](), 0
        for part in parts:
            if group and size + len(part) + 1 > room:
                texts.append(head + "[" + ",".join(group) + "]")
                group, size = [], 0
            group.append(part)
            size += len(part) + 1
        texts.append(head + "[" + ",".join(group) + "]")
        return texts

    def over_cap(self, message: Message, size: int) -> Message:
        """What goes instead of a message too large to send: the sentence, as a notice (a
        request waiting for it fails with it; a run's end says it as its error)."""
        why = (f"A {message['type']} message of {size:,} bytes was not sent to the kernel: "
               f"it is over the cap of {self.cap:,} bytes (Settings.cluster_message_cap).")
        future = self.waiting.pop(message["seq"], None)
        if future is not None and not future.done():
            future.set_exception(RemoteError(why))
        if message["type"] == "done":
            return Message(run=message["run"], seq=message["seq"], type="done", body={
                "outcome": {"run_id": self.spec["run_id"], "status": "error", "error": why}})
        if message["type"] == "record":  # the kernel ends the run: a record is not dropped
            return Message(run=message["run"], seq=message["seq"], type="record",
                           body={"error": why})
        return Message(run=message["run"], seq=message["seq"], type="event",
                       body=event_body(Notice(self.spec["run_id"], why, level="error")))

    async def reader(self, made: asyncio.Future[Any]) -> None:
        """Take the kernel's messages, once their queue is made: replies wake their
        request; a stop stops the run."""
        try:
            await made
        except Exception as exc:
            self._break(exc)
            return
        while True:
            try:
                got = await self.scheduler.queue_get(name=self.reply_queue, timeout=None)
            except Exception as exc:
                self._break(exc)
                return
            message: Message = got["value"] if isinstance(got, dict) and "value" in got \
                else got
            if message["body"].get("go") is not False:
                self.greeted.set()  # any word from the kernel answers hello
            if message.get("type") == "stop":
                if self.stop_run is not None:
                    self.stop_run()
                continue
            if message["body"].get("go") is True:
                continue
            if message["body"].get("go") is False:  # a rerun of an ended attempt: no start
                self.refused = str(message["body"].get("why") or "the run has ended")
                self._break(RuntimeError(self.refused))
                if self.stop_run is not None:
                    self.stop_run()
                return
            future = self.waiting.pop(int(message["body"].get("to", -1)), None)
            if future is not None and not future.done():
                future.set_result(message["body"])

    async def watch_hello(self) -> None:
        """Stop the run when the kernel has not answered ``hello`` in :data:`HELLO_WAIT`."""
        try:
            await asyncio.wait_for(self.greeted.wait(), HELLO_WAIT)
        except asyncio.TimeoutError:
            self.refused = f"it did not answer in {HELLO_WAIT:g} s"
            self._break(RuntimeError(self.refused))
            if self.stop_run is not None:
                self.stop_run()

    def _break(self, exc: BaseException) -> None:
        self.broken = exc
        why = self.why_broken = f"the kernel did not let this run start: {self.refused}" \
            if self.refused else f"the kernel cannot be reached: {exc}"
        for future in self.waiting.values():
            if not future.done():
                future.set_exception(RemoteError(why))
        self.waiting.clear()


class KernelModel(Model):
    """The remote agent's model: every call is made by the kernel's model."""

    library = ""

    def __init__(self, channel: WorkerChannel, spec: RemoteSpec) -> None:
        self.channel = channel
        self.name = spec["model"]
        self._window = spec["window"]
        self._images = spec["accepts_images"]
        self.writes_summaries = spec["writes_summaries"]

    async def complete(self, messages: list[ChatMessage], tools: list[ToolSchema],
                       settings: Settings, *, role: str | None = None,
                       on_text: OnText = lambda _: None,
                       on_retry: OnRetry = lambda *_: None) -> ModelTurn:
        """Ask the kernel for the turn (its text streams there, to the transcript)."""
        reply = await self.channel.request("model", {"messages": plain(messages),
                                                     "tools": plain(tools), "role": role})
        if reply.get("limit"):  # the kernel's budget refused the call (KernelBudget)
            raise BudgetRefused(str(reply["limit"]))
        if "error" in reply:
            if reply.get("kind") == "provider":
                raise ProviderError(str(reply["error"]))
            raise RemoteError(str(reply["error"]))
        return turn_of(reply.get("turn") or {})

    def window(self, settings: Settings) -> int:
        """The kernel's model's window."""
        return self._window

    def accepts_images(self, settings: Settings) -> bool:
        """Whether the kernel's model reads images."""
        return self._images


class KernelLedger(Ledger):
    """The remote agent's ledger: each record goes to the kernel, which appends it to the
    one chain and acknowledges it once it is on disk."""

    def __init__(self, channel: WorkerChannel, path: str) -> None:
        super().__init__(path)
        self.channel = channel

    async def append_async(self, records: Sequence[Mapping[str, object]]
                           ) -> list[dict[str, object]]:
        """Send the records without waiting: the kernel writes them before it serves this
        run's next request or takes its next event or end (so before the model sees what
        follows them); a failed write ends the run there. The records as sent (the
        kernel's copies replace them by ``record_id`` in the events it lets through)."""
        if self.channel.broken is not None:
            raise LedgerError(f"the kernel cannot be reached: {self.channel.broken}")
        sent: list[dict[str, object]] = plain(
            [{**record, "record_id": record.get("record_id") or new_id("rec")}
             for record in records])
        self.channel.send("record", {"records": sent})
        return sent

    def append_many(self, records: Sequence[Mapping[str, object]]
                    ) -> list[dict[str, object]]:
        """Send the records from a thread and wait until the kernel has written them."""
        try:
            reply = self.channel.request_from_thread("ledger",
                                                     {"records": plain(list(records))})
        except RemoteError as exc:
            raise LedgerError(str(exc)) from exc
        if "error" in reply:
            raise LedgerError(str(reply["error"]))
        written: list[dict[str, object]] = reply.get("records") or []
        return written

    def queue(self, records: Sequence[Mapping[str, object]]) -> PendingAppend:
        """Not on a worker: a record there is always waited for."""
        raise LedgerError("a remote agent's records are appended by the kernel, one by one")


class KernelApprovals(Approvals):
    """The remote agent's approvals: asked and recorded by the kernel (the Teller's channel,
    the same card and the same signed record as an in-process Worker's)."""

    def __init__(self, agent: Agent, channel: WorkerChannel) -> None:
        super().__init__(agent)
        self.channel = channel

    async def request(self, run_id: str, what: str, arguments: Mapping[str, object], *,
                      digest: str | None = None, notes: Mapping[str, object] | None = None,
                      terms: ApprovalTerms | None = None) -> Refusal | None:
        """Ask the kernel; its answer (None: approved)."""
        reply = await self.channel.request("approval", {
            "run_id": run_id, "what": what, "arguments": plain(arguments), "digest": digest,
            "notes": plain(notes), "terms": plain(dataclasses.asdict(terms)) if terms else None})
        refusal = reply.get("refusal")
        return Refusal(**refusal) if refusal is not None else None


class KernelBudget:
    """The remote agent's budget: the kernel checks it when a model request arrives, right
    before it makes the call (a refusal comes back instead of the turn, and
    :class:`KernelModel` raises :class:`BudgetRefused`: the run ends ``limit`` as on a
    refused check), and counts what the call spent there. No round trip of its own."""

    def __init__(self, channel: WorkerChannel) -> None:
        self.channel = channel

    async def before_call(self, agent: Agent, run_id: str) -> str | None:
        """Nothing here: the kernel asks its budget with the model request."""
        return None

    def spent(self, agent: Agent, run_id: str, usage: dict[str, int],
              cost: float | None) -> None:
        """Nothing: the kernel counted it when it made the call."""


class KernelTool(Tool):
    """A tool that belongs to the kernel (artifacts, messages, the notebook's variables and
    cells), offered on the worker as itself and run in the kernel."""

    def __init__(self, original: Tool, channel: WorkerChannel) -> None:
        self.__dict__.update(original.__dict__)
        self.channel = channel

    async def invoke(self, arguments: Mapping[str, object], context: ToolContext | None
                     ) -> object:
        """Run in the kernel; its result, or its error as this tool's."""
        reply = await self.channel.request("tool", {
            "name": self.name, "arguments": plain(arguments),
            "run_id": context.run_id if context else "",
            "call_id": context.call_id if context else None})
        if "error" in reply:
            raise ToolError(str(reply["error"]), summary=reply.get("summary"),
                            guidance=reply.get("guidance"))
        return reply.get("result")


def build_agent(spec: RemoteSpec, channel: WorkerChannel) -> Agent:
    """The Worker's agent, rebuilt from its spec: the team's tools, the kernel's in the
    kernel, the model, ledger, approvals and budget through the channel."""
    from agent_kernel.engine.user_tools import UserTools
    from agent_kernel.team.roles import ROLE_PERMITS
    from agent_kernel.team.toolsets import default_toolsets

    agent = Agent(model=KernelModel(channel, spec), workspace=spec["workspace"],
                  agent_id=spec["agent_id"], role=spec["role"],
                  settings=spec["settings"], system_prompt=spec["system_prompt"],
                  toolsets=default_toolsets(), permission_hook=ROLE_PERMITS,
                  user_tools=UserTools())
    writer, agent.services.history_writer = agent.services.history_writer, None
    if writer is not None:  # a member's runs are not the person's history
        agent.bus.unsubscribe(writer)
    agent.ledger = KernelLedger(channel, str(agent.ledger.path))
    agent.approvals = KernelApprovals(agent, channel)
    agent.services.budget = KernelBudget(channel)
    agent.ledger_fields = dict(spec["ledger_fields"])
    for name in spec["left_out"]:
        agent.registry.remove(name)
    for path in spec["imported_tools"]:
        agent.registry.add(_imported(path))
    for name in spec["kernel_tools"]:
        original = agent.registry.get(name)
        if original is not None:
            agent.registry.add(KernelTool(original, channel))
    # Seeded with what this process built for the same Worker (after the adds above).
    agent.registry.reuse_schemas(SCHEMAS.get(schemas_key(spec, agent), {}))
    return agent


def _imported(path: str) -> Tool:
    """The person's tool at ``module:name``, imported on the worker."""
    import importlib

    module, _, name = path.partition(":")
    found: Any = importlib.import_module(module)
    for part in name.split("."):
        found = getattr(found, part)
    return found if isinstance(found, Tool) else Tool(found)


async def run_remote(spec: RemoteSpec) -> dict[str, str]:
    """The Dask task of one Worker run: rebuild the agent, say where it runs (with its first
    request: no round trip of its own), run it, stream everything back, say how it ended.

    The kernel's messages come on a queue of this attempt on this worker alone: a rerun Dask
    makes elsewhere after a worker died never reads what was meant for another. Such a rerun
    is refused with the answer to its ``hello``, before its first model call is answered: it
    runs no tool, so it changes nothing."""
    from distributed import get_worker

    worker = get_worker()
    reply_queue = f"{spec['outbox']}@{worker.address}"
    # Made while the agent is built and its first request goes: the kernel's answer waits
    # for the queue if it comes first (Cluster.put).
    made = asyncio.ensure_future(worker.scheduler.queue_create(name=reply_queue, maxsize=0))
    helpers: list[asyncio.Future[Any]] = [made]
    try:
        channel = WorkerChannel(spec, worker.scheduler, reply_queue)
        agent = build_agent(spec, channel)
        helpers += [asyncio.create_task(channel.sender()),
                    asyncio.create_task(channel.reader(made)),
                    asyncio.create_task(channel.watch_hello())]
        channel.send("hello", {"worker": worker.address, "pid": os.getpid(),
                               "reply_to": reply_queue})
        run_id = spec["run_id"]
        channel.stop_run = lambda: agent.stop(run_id)

        def stream(event: Event) -> None:
            if not isinstance(event, RunFinished):  # the kernel makes it from ``done``
                channel.send("event", event_body(event))

        agent.bus.subscribe(stream)
        result = await agent.arun(spec["prompt"], run_id=run_id)
        if channel.refused is not None:
            return {"status": "not started", "why": channel.refused}
        SCHEMAS.setdefault(schemas_key(spec, agent), agent.registry.built_schemas())
        channel.send("done", result_body(result))
        await channel.outgoing.join()
        return {"status": str(result.status)}
    finally:
        for helper in helpers:
            helper.cancel()


__all__ = ["LEFT_OUT", "KernelApprovals", "KernelBudget", "KernelLedger", "KernelModel",
           "KernelTool", "Message", "MessageType", "RemoteError", "RemoteSpec",
           "SCHEMAS", "WireBody", "WorkerChannel", "build_agent", "event_body", "event_of", "plain",
           "public_settings", "result_body", "result_of", "run_remote", "schemas_key", "turn_body",
           "turn_of"]
