"""The first tools: echo, reply, log_decision, query_state, console_print.

Names, arguments and return shapes are the specs' own: ``echo`` from spec
003, ``reply`` from spec 000, ``log_decision`` and ``query_state`` from spec
001 (state providers registered with ``@agent_kernel.state``), and
``console_print`` from spec 004. ``log_decision`` checks ``reasoning`` itself,
so the model reads spec 001's words (``reasoning cannot be empty``,
``reasoning exceeds 1000 characters (got 1001)``) rather than pydantic's; its
schema shows the same bounds.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import weakref
from collections.abc import Callable
from typing import Annotated, Any, Literal

from agent_kernel.core.events import ConsoleOutput, LedgerRecorded
from agent_kernel.core.events import Reply as ReplyEvent
from agent_kernel.core.ledger import Ledger, decision_record, now_iso
from agent_kernel.engine.registry import Field, Tool, ToolContext
from agent_kernel.engine.user_tools import user_tools

_STATE_NAME = re.compile(r"^[A-Za-z0-9_]+$")
REASONING_CHARS = 1000


def state(name: str) -> Callable[[Callable[[], Any]], Callable[[], Any]]:
    """Register a function (sync or async, no arguments) as the state provider ``name`` of
    this session (see :class:`~agent_kernel.engine.user_tools.UserTools`)."""
    if not _STATE_NAME.match(name):
        raise ValueError(f"state name must be letters, digits and underscores, got {name!r}")

    def register(func: Callable[[], Any]) -> Callable[[], Any]:
        user_tools().add_state(name, func)
        return func

    return register


# Instant and never blocking, so it runs on the loop like the tools below it: a sync
# tool would run in a thread of its own (``Tool.invoke``) and pay the hand-off.
async def echo(value: str) -> str:
    """Echo a string back; useful for debugging.

    Args:
        value: The text to echo.
    """
    return value


async def reply(text: str, ctx: ToolContext) -> None:
    """Reply to the user with a message shown in the cell.

    Args:
        text: The reply's content.
    """
    ctx.emit(ReplyEvent(ctx.run_id, text))
    return None


class DecisionBatch:
    """Spec 001 writes its decision log to the ledger in batches: the decisions logged while
    a write is under way (the calls of one response, a team's agents at once) wait and go in
    the next write, all with one lock and one fsync (``Ledger.append_many``). Each call
    returns once its own record is on disk, as before."""

    _batches: weakref.WeakKeyDictionary[Ledger, DecisionBatch] = weakref.WeakKeyDictionary()

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.loop = asyncio.get_running_loop()
        self.waiting: list[tuple[dict[str, object], asyncio.Future[dict[str, object]]]] = []
        self.writer: asyncio.Task[None] | None = None
        self.writes = 0
        """How many ledger writes the batches took (the tests count them)."""

    @classmethod
    def of(cls, ledger: Ledger) -> DecisionBatch:
        """The batch of ``ledger`` on the running loop."""
        found = cls._batches.get(ledger)
        if found is None or found.loop is not asyncio.get_running_loop():
            found = cls._batches[ledger] = cls(ledger)
        return found

    async def write(self, record: dict[str, object]) -> dict[str, object]:
        """Queue ``record`` and return it as written (with its hash) once it is on disk."""
        done: asyncio.Future[dict[str, object]] = self.loop.create_future()
        self.waiting.append((record, done))
        if self.writer is None or self.writer.done():
            self.writer = self.loop.create_task(self._drain())
        return await asyncio.shield(done)  # a cancelled caller leaves the batch to be written

    async def _drain(self) -> None:
        await asyncio.sleep(0)  # the other calls of this response queue up first
        while self.waiting:
            batch, self.waiting = self.waiting, []
            try:
                written = await asyncio.to_thread(self.ledger.append_many,
                                                  [record for record, _ in batch])
            except Exception as exc:  # every caller of the batch hears why
                for _, done in batch:
                    if not done.done():
                        done.set_exception(exc)
                continue
            self.writes += 1
            for (_, done), body in zip(batch, written, strict=True):
                if not done.done():
                    done.set_result(body)


async def log_decision(
    reasoning: Annotated[str, Field(json_schema_extra={"minLength": 1,
                                                       "maxLength": REASONING_CHARS})],
    ctx: ToolContext,
    decision_type: Literal[
        "capability_selection", "schedule_decision", "no_action", "other"
    ] = "other",
) -> dict[str, str]:
    """Log your decision reasoning for audit and analysis.

    Args:
        reasoning: Explanation of your decision (at most 1000 characters).
        decision_type: Type of decision being logged.
    """
    if not reasoning.strip():
        raise ValueError("reasoning cannot be empty")
    if len(reasoning) > REASONING_CHARS:
        raise ValueError(f"reasoning exceeds {REASONING_CHARS} characters (got {len(reasoning)})")
    record = await DecisionBatch.of(ctx.agent.ledger).write(decision_record(
        agent_id=ctx.agent_id, run_id=ctx.run_id, reasoning=reasoning,
        decision_type=decision_type))
    ctx.emit(LedgerRecorded(ctx.run_id, record))
    return {"decision_id": str(record["decision_id"]), "timestamp": str(record["timestamp"])}


async def query_state(state_name: str, ctx: ToolContext) -> Any:
    """Query current state from a registered state provider.

    Args:
        state_name: Name of the state to query (letters, digits, underscores).
    """
    if not _STATE_NAME.match(state_name):
        raise ValueError(
            f"state_name may only contain letters, digits and underscores, got {state_name!r}"
        )
    provider = ctx.agent.user_tools.state(state_name)
    if provider is None:
        raise ValueError(f"No state provider registered for '{state_name}'")
    value = provider()
    if inspect.isawaitable(value):
        value = await value
    return value


async def console_print(text: str, ctx: ToolContext) -> dict[str, Any]:
    """Print text to the console (shown in the cell).

    Args:
        text: The text to print.
    """
    ctx.emit(ConsoleOutput(ctx.run_id, text))
    return {"printed": True, "timestamp": now_iso()}


TOOLS = [Tool(f, source="builtin") for f in (echo, reply, log_decision, query_state,
                                             console_print)]
