"""The agent loop: messages → model → tool calls → results → model, until an answer.

One :class:`Agent` holds a conversation, a tool registry, a ledger and an
event bus. :meth:`Agent.arun` is the loop; it runs on whatever asyncio loop
calls it (in a kernel, the kernel's own), runs the tool calls of one response
concurrently, and turns every failure a model can cause (bad JSON, unknown
tool, invalid arguments, a timeout, a refused approval) into a tool result the
model can read, recorded in the ledger before the model sees it. Provider
failures end the run with a :class:`~agent_kernel.core.events.RunError`. The loop
imports no IPython and draws nothing: views listen to the bus.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from agent_kernel.core.config import DEMO_MODEL, Settings
from agent_kernel.core.events import (
    EventBus,
    LedgerRecorded,
    Loading,
    ModelCallStarted,
    Notice,
    RunError,
    RunFinished,
    RunStarted,
    StreamReset,
    TextDelta,
)
from agent_kernel.core.ledger import LEDGER_FILE, Ledger, LedgerError, new_id
from agent_kernel.core.redaction import fix_text, redact_text
from agent_kernel.core.statuses import RunOutcome
from agent_kernel.core.trust import remember_key
from agent_kernel.core.workspace import Workspace
from agent_kernel.engine import tool_calls
from agent_kernel.engine.approvals import Approvals
from agent_kernel.engine.context import ContextWindow
from agent_kernel.engine.models import Model, resolve
from agent_kernel.engine.models.base import ChatMessage
from agent_kernel.engine.models.litellm_loader import LIBRARY
from agent_kernel.engine.models.names import missing_key
from agent_kernel.engine.models.provider_errors import ProviderError
from agent_kernel.engine.questions import QuestionChannel
from agent_kernel.engine.registry import PermissionHook, Tool, ToolRegistry, Toolset, TurnState
from agent_kernel.engine.services import AgentServices, Budget, BudgetRefused
from agent_kernel.engine.tool_calls import LedgerUnavailable, ToolCallRecord
from agent_kernel.engine.user_tools import UserTools
from agent_kernel.engine.user_tools import user_tools as current_user_tools

log = logging.getLogger(__name__)

SYSTEM_PROMPT = (
    "You are agent-kernel, an agent run from a Jupyter notebook or the command line. Use the tools "
    "when they help, ask the user with ask_user when you need a decision, and answer "
    "concisely in Markdown. The current time is {now}."
)


@dataclass
class RunResult:
    """What a run produced: the reply, its tool calls, usage and how it ended."""

    run_id: str
    model: str
    reply: str = ""
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    cost: float | None = None
    status: RunOutcome = "running"
    error: str | None = None
    duration_ms: int = 0
    ended_by: str | None = None
    """The tool that ended the run to wait for someone (``ask_user`` in a team,
    ``wait_for_message``); None when the model answered."""

    @property
    def ok(self) -> bool:
        """True when the run ended with an answer."""
        return self.status == "ok"

    def __str__(self) -> str:
        return self.reply if self.ok else f"[{self.status}] {self.error or self.reply}"

    def __repr__(self) -> str:
        # What a notebook shows (and saves) for a result left as a cell's last value.
        text = redact_text(self.reply if self.ok else (self.error or self.reply))
        shown = text if len(text) <= 200 else text[:197] + "..."
        return (f"RunResult(run_id={self.run_id!r}, status={self.status!r}, "
                f"tool_calls={len(self.tool_calls)}, reply={shown!r})")


def _say_retry(emit: Callable[[Any], None], run_id: str, attempt: int, delay: float,
               why: str) -> None:
    """Tell the views a provider call failed and is retried (the partial text is void)."""
    emit(StreamReset(run_id, reason=why))
    emit(Notice(run_id, f"Provider problem ({why}); retry {attempt} in {delay:.1f} s",
                level="warning"))


def _all_closing(turn: TurnState, records: list[ToolCallRecord], calls: int) -> str | None:
    """Why the run ends after this response, when every one of its ``calls`` asked it to
    (:meth:`ToolContext.end_run_if_all`) and succeeded; else None."""
    if not turn.closing or len(records) != calls:
        return None
    if all(r.success and r.call_id in turn.closing for r in records):
        return turn.closing[records[0].call_id]
    return None


def _add_usage(total: dict[str, int], usage: dict[str, int]) -> None:
    for key, value in usage.items():
        total[key] = total.get(key, 0) + int(value)


def _difference(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {key: value - before.get(key, 0) for key, value in after.items()}


class Agent:
    """An LLM agent with tools, a ledger and a conversation that goes on across runs."""

    chat_model: Model
    """The model itself, behind the seam (``models.resolve`` made it from a name)."""

    def __init__(
        self,
        model: str | Model = DEMO_MODEL,
        workspace: str | Workspace | None = None,
        tools: Iterable[Tool | Any] | None = None,
        *,
        agent_id: str = "agent",
        role: str | None = None,
        settings: Settings | None = None,
        system_prompt: str | None = SYSTEM_PROMPT,
        toolsets: Iterable[Toolset] = (),
        permission_hook: PermissionHook | None = None,
        user_tools: UserTools | None = None,
    ) -> None:
        self.model = model
        self.workspace = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
        self.agent_id = agent_id
        self.role = role
        self.settings = settings or Settings()
        self.system_prompt = system_prompt
        self.bus = EventBus()
        self.ledger = Ledger(self.workspace.root / LEDGER_FILE)
        remember_key()  # this user's approval key is masked in everything this agent writes
        self.questions = QuestionChannel(self.bus, self.workspace)
        self.approvals = Approvals(self)
        self.registry = ToolRegistry(permission_hook=permission_hook)
        self.services = AgentServices()
        """Per-agent services of the features built on the engine (memory, triggers, team)."""
        self.ledger_fields: dict[str, str | None] = {}
        """Added to every ledger record of this agent's runs (a team task's place in its tree)."""
        modules = list(toolsets)
        for module in modules:
            for builtin in module.TOOLS:
                self.registry.add(builtin)
        self.user_tools = user_tools if user_tools is not None else current_user_tools()
        """The session's ``@tool`` functions (offered now; ``%agent`` adds later ones)."""
        for user_tool in self.user_tools.tools():
            self.registry.add(user_tool)
        for extra in tools or ():
            self.registry.add(extra)
        self.messages: list[ChatMessage] = []
        self._runs: dict[str, asyncio.Task[Any]] = {}
        self._conversation_lock: asyncio.Lock | None = None
        self.windows: dict[str, ContextWindow] = {}
        """The conversation of each run in progress, by run id (context tools read it)."""
        for module in modules:
            attach = getattr(module, "attach", None)
            if attach is not None:
                attach(self)

    @property
    def model(self) -> str:
        """The name of the model runs use unless they name one (what the ledger and the
        views show); set it to a name (checked, see ``models.names``) or a :class:`Model`."""
        return self.chat_model.name

    @model.setter
    def model(self, value: str | Model) -> None:
        self.chat_model = resolve(value)

    # -- conversation -------------------------------------------------------
    def new_conversation(self) -> None:
        """Forget the conversation (memory and ledger stay)."""
        self.messages = []

    def _system_message(self) -> ChatMessage | None:
        if not self.system_prompt:
            return None
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        return {"role": "system", "content": self.system_prompt.format(now=now)}

    # -- running ------------------------------------------------------------
    def run(self, prompt: str, **kwargs: Any) -> RunResult:
        """Run to the end and return the result; works with or without a running loop."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.arun(prompt, **kwargs))
        import nest_asyncio2

        nest_asyncio2.apply(loop)
        return loop.run_until_complete(self.arun(prompt, **kwargs))

    async def arun(
        self,
        prompt: str,
        *,
        new: bool = False,
        model: str | Model | None = None,
        trigger: dict[str, Any] | None = None,
        isolated: bool = False,
        run_id: str | None = None,
    ) -> RunResult:
        """Run the loop for ``prompt``; ``isolated`` keeps it out of the conversation.

        Raises ValueError for a ``model`` litellm cannot route (nothing is run).
        """
        chosen = self.chat_model if model is None else resolve(model)
        if self._conversation_lock is None:
            self._conversation_lock = asyncio.Lock()
        run_id = run_id or new_id("run")
        task = asyncio.current_task()
        if task is not None:
            self._runs[run_id] = task
        try:
            if isolated:
                return await self._run(prompt, run_id, chosen, trigger, [])
            async with self._conversation_lock:
                if new:
                    self.new_conversation()
                return await self._run(prompt, run_id, chosen, trigger, self.messages)
        finally:
            self._runs.pop(run_id, None)
            self.windows.pop(run_id, None)
            self.registry.forget(run_id)

    def counted_as_run(self, run_id: str) -> Callable[[], None]:
        """Count the current asyncio task as run ``run_id`` (so :meth:`stop` cancels it)
        until the returned function is called; for a wait that stands in for a run."""
        task = asyncio.current_task()
        if task is not None:
            self._runs[run_id] = task

        def done() -> None:
            self._runs.pop(run_id, None)

        return done

    def stop(self, run_id: str | None = None) -> int:
        """Cancel one run (or all); safe from any thread. Returns how many were asked."""
        targets = [t for r, t in self._runs.items() if run_id is None or r == run_id]
        if targets and self.services.python is not None:  # code it runs now holds the loop
            self.services.python.interrupt(run_id)
        for task in targets:
            task.get_loop().call_soon_threadsafe(task.cancel)
        return len(targets)

    @property
    def running(self) -> list[str]:
        """Ids of runs in progress."""
        return list(self._runs)

    async def _run(
        self,
        prompt: str,
        run_id: str,
        model: Model,
        trigger: dict[str, Any] | None,
        messages: list[ChatMessage],
    ) -> RunResult:
        emit = self.bus.emit
        started = time.perf_counter()
        result = RunResult(run_id=run_id, model=model.name)
        emit(RunStarted(run_id, prompt=prompt, model=model.name, agent_id=self.agent_id,
                        trigger=trigger))
        if not messages and (system := self._system_message()):
            messages.append(system)
        messages.append({"role": "user", "content": fix_text(prompt)})
        window = self.windows[run_id] = ContextWindow(model, messages, self.settings)
        calls_made = 0
        pending_ids: list[str] = []
        budget: Budget | None = self.services.budget
        try:
            if model.library == LIBRARY and (missing := missing_key(
                    model.name, self.settings.api_key, self.settings.api_base)):
                raise ProviderError(f"The model provider was not called: {missing}")
            if model.needs_loading():  # say so at once: the import takes seconds
                emit(Loading(run_id, model.library))
                emit(Loading(run_id, model.library, seconds=await model.load()))
            while True:
                refusal = await budget.before_call(self, run_id) if budget else None
                if refusal:
                    result.status, result.error = "limit", refusal
                    emit(RunError(run_id, refusal, kind="limit"))
                    break
                schemas = self.registry.offered(self.role, run_id, messages)  # cached
                before = (dict(result.usage), result.cost) if budget is not None else None
                await window.fit(self, run_id, schemas, result)
                if budget is not None and before is not None and result.usage != before[0]:
                    budget.spent(self, run_id, _difference(result.usage, before[0]),  # a summary
                                 None if result.cost is None
                                 else result.cost - (before[1] or 0.0))
                emit(ModelCallStarted(run_id))
                turn = await model.complete(
                    messages, schemas, self.settings, role=self.role,
                    on_text=lambda text: emit(TextDelta(run_id, text)),
                    on_retry=lambda n, delay, why: _say_retry(emit, run_id, n, delay, why),
                )
                _add_usage(result.usage, turn.usage)
                if turn.cost is not None:
                    result.cost = (result.cost or 0.0) + turn.cost
                if budget is not None:
                    budget.spent(self, run_id, turn.usage, turn.cost)
                messages.append(turn.as_message())
                if not turn.tool_calls:
                    result.reply = turn.text
                    result.status = "ok"
                    break
                turn_state = TurnState(trigger=trigger)
                pending_ids = [c.id for c in turn.tool_calls]
                room = self.settings.max_tool_calls - calls_made
                allowed, refused = turn.tool_calls[:room], turn.tool_calls[room:]
                if self.services.before_tools is not None:
                    await self.services.before_tools()
                outcomes = await asyncio.gather(
                    *(tool_calls.execute(self, call, run_id, turn_state) for call in allowed),
                    return_exceptions=True,
                )
                calls_made += len(allowed)
                records = [o for o in outcomes if isinstance(o, ToolCallRecord)]
                for call in refused:
                    records.append(await tool_calls.refuse(self, call, run_id, (
                        f"Tool call limit reached: at most {self.settings.max_tool_calls} "
                        "tool calls per run")))
                limit = self.settings.max_tool_result_chars
                for record in records:
                    result.tool_calls.append(record)
                    messages.append(tool_calls.tool_message(record, limit))
                    if record.call_id in pending_ids:
                        pending_ids.remove(record.call_id)
                if not pending_ids and model.accepts_images(self.settings):
                    shown = tool_calls.images_message(records)
                    if shown is not None:  # after every tool result, as providers require
                        messages.append(shown)
                failure = next((o for o in outcomes if isinstance(o, BaseException)), None)
                if failure is not None:
                    raise failure
                ended_by = turn_state.ended_by or _all_closing(turn_state, records,
                                                               len(turn.tool_calls))
                if ended_by and not refused:
                    result.reply, result.status = turn.text, "ok"
                    result.ended_by = ended_by
                    break
                if refused:
                    result.status = "limit"
                    result.error = (f"Stopped after {calls_made} tool calls: the limit is "
                                    f"{self.settings.max_tool_calls} per run.")
                    emit(RunError(run_id, result.error, kind="limit"))
                    break
        except asyncio.CancelledError:
            tool_calls.answer_pending(messages, pending_ids, "cancelled by the user")
            result.status = "cancelled"
            result.error = "The run was stopped."
            try:
                cancelled = await asyncio.to_thread(
                    self.ledger.record_event, "run_cancelled", agent_id=self.agent_id,
                    run_id=run_id, tool_calls=len(result.tool_calls), **self.ledger_fields)
                emit(LedgerRecorded(run_id, cancelled))
            except (LedgerError, OSError) as exc:
                emit(Notice(run_id, f"The ledger could not record the stop: {exc}",
                            level="error"))
            emit(RunError(run_id, result.error, kind="cancelled"))
        except BudgetRefused as exc:  # the budget's word came with the model's answer
            result.status, result.error = "limit", str(exc)
            emit(RunError(run_id, result.error, kind="limit"))
        except ProviderError as exc:
            result.status = "error"
            result.error = str(exc)
            await self._record_error(run_id, "provider", result.error, status=exc.status)
            emit(RunError(run_id, result.error, kind="provider"))
        except (LedgerUnavailable, LedgerError) as exc:
            tool_calls.answer_pending(messages, pending_ids,
                                      "not run: the ledger could not record it")
            result.status = "error"
            result.error = str(exc) if isinstance(exc, LedgerUnavailable) else (
                f"The ledger could not record this run ({exc}), so it stopped.")
            emit(RunError(run_id, result.error, kind="ledger"))
        except Exception as exc:  # a bug of ours: the run still returns, the chat stays valid
            log.exception("run %s failed", run_id)
            tool_calls.answer_pending(messages, pending_ids, "not run: the run failed")
            result.status = "error"
            result.error = f"The run failed inside agent-kernel: {type(exc).__name__}: {exc}"
            await self._record_error(run_id, "internal", result.error)
            emit(RunError(run_id, result.error, kind="internal"))
        result.duration_ms = int((time.perf_counter() - started) * 1000)
        emit(RunFinished(run_id, result))
        return result

    async def _record_error(self, run_id: str, kind: str, error: str, **fields: object) -> None:
        """Keep a failure no tool call records (a provider's, or ours) as a ``run_error``."""
        try:
            record = await asyncio.to_thread(
                self.ledger.record_event, "run_error", agent_id=self.agent_id, run_id=run_id,
                error_kind=kind, error=error, **fields, **self.ledger_fields)
        except (LedgerError, OSError) as exc:
            self.bus.emit(Notice(run_id, f"The ledger could not record the error: {exc}",
                                 level="error"))
            return
        self.bus.emit(LedgerRecorded(run_id, record))
