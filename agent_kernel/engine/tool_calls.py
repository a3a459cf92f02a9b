"""One tool call, start to finish: parse, check, approve, run with a timeout, record.

The loop (``agent.py``) hands each call the model asked for to :func:`execute`.
Every failure a model can cause (bad JSON, an unknown tool, invalid arguments,
a refused role or approval, a timeout, the tool raising) becomes a
:class:`ToolCallRecord` rather than an exception, and every outcome is written
to the ledger before the views hear of it and before the model reads it. A
record says what happened three ways: ``error`` for the ledger, ``summary`` for
the person, ``guidance`` for the model alone (:func:`tool_message`). The
timeout is a :class:`~agent_kernel.engine.tool_clock.ToolClock`: time the call spends
waiting for a person's answer does not count. This module types against
:class:`CallHost`, not the agent, so imports go one way.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any, Protocol

from agent_kernel.core.events import (
    LedgerRecorded,
    Notice,
    ToolCallFinished,
    ToolCallStarted,
)
from agent_kernel.core.ledger import LedgerError
from agent_kernel.core.redaction import to_text
from agent_kernel.engine.models.llm import ToolCallRequest
from agent_kernel.engine.registry import (
    ToolArgumentError,
    ToolContext,
    ToolError,
    ToolHost,
    TurnState,
)
from agent_kernel.engine.tool_clock import ToolClock


class CallHost(ToolHost, Protocol):
    """What a tool call needs of the agent that runs it: what its tool may use."""


def monotonic_ms(start: float) -> int:
    """Milliseconds since ``start`` (a ``time.perf_counter`` reading)."""
    return int((time.perf_counter() - start) * 1000)


@dataclass
class ToolCallRecord:
    """One tool call of a run, as the result reports it."""

    call_id: str
    tool_name: str
    arguments: Any
    result: Any
    success: bool
    error: str | None
    duration_ms: int
    summary: str | None = None
    """What the person is shown for a failed call (None: the error itself)."""
    guidance: str | None = None
    """Said to the model after the error, never shown to the person."""


class LedgerUnavailable(RuntimeError):
    """A tool call could not be recorded; the run ends with this message."""


async def refuse(agent: CallHost, call: ToolCallRequest, run_id: str, error: str
                 ) -> ToolCallRecord:
    """Record a call that is not run at all (the run's tool-call limit)."""
    agent.bus.emit(ToolCallStarted(run_id, call.id, call.name, call.arguments))
    return await finish(agent, call, run_id, call.arguments, None, error, 0)


async def execute(
    agent: CallHost, call: ToolCallRequest, run_id: str, turn: TurnState | None = None
) -> ToolCallRecord:
    """Validate, approve, run with a timeout, and record one tool call."""
    emit = agent.bus.emit
    try:
        arguments: Any = json.loads(call.arguments) if call.arguments.strip() else {}
    except (ValueError, RecursionError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        emit(ToolCallStarted(run_id, call.id, call.name, call.arguments))
        return await finish(agent, call, run_id, call.arguments, None,
                                  f"Invalid JSON arguments for tool '{call.name}': {why}", 0)
    emit(ToolCallStarted(run_id, call.id, call.name, arguments))
    tool_obj = agent.registry.get(call.name)
    if tool_obj is None:
        known = ", ".join(agent.registry.names())
        return await finish(agent, call, run_id, arguments, None, f"Unknown tool: {call.name}.",
                                  0, summary=f"unknown tool '{call.name}'",
                                  guidance=f"Available tools: {known}")
    if not agent.registry.allowed(agent.role, tool_obj):
        explain = getattr(agent.registry.permission_hook, "refusal", None)
        return await finish(agent, call, run_id, arguments, None,
                            f"Tool '{call.name}' is not permitted for role '{agent.role}'", 0,
                            summary=f"{call.name} is not for the {agent.role}",
                            guidance=explain(agent.role, call.name) if explain is not None
                            else None)
    try:
        values = tool_obj.validate(arguments)
    except ToolArgumentError as exc:
        return await finish(agent, call, run_id, arguments, None, str(exc), 0)
    except Exception as exc:  # pydantic's own limits (deep nesting and the like)
        return await finish(agent, call, run_id, arguments, None,
                                  f"Invalid arguments for tool '{call.name}': they could "
                                  f"not be checked ({type(exc).__name__})", 0)
    timeout = tool_obj.timeout or agent.settings.tool_timeout
    clock = ToolClock(timeout)
    turn = turn if turn is not None else TurnState()
    ctx = ToolContext(agent=agent, run_id=run_id, agent_id=agent.agent_id,
                      workspace=agent.workspace, trigger=turn.trigger,
                      call_id=call.id, clock=clock, turn=turn)
    try:
        notes = tool_obj.precheck(values) if tool_obj.precheck is not None else None
    except ToolError as exc:  # refused before anyone is asked to approve it
        return await finish(agent, call, run_id, arguments, None,
                            f"Tool '{call.name}' was not run: {exc}", 0,
                            summary=exc.summary, guidance=exc.guidance)
    except Exception as exc:  # a precheck that breaks refuses too: it cannot vouch
        return await finish(agent, call, run_id, arguments, None,
                            f"Tool '{call.name}' was not run: its arguments could not be "
                            f"checked ({type(exc).__name__}: {exc})", 0)
    verdict = await agent.approvals.check(ctx, tool_obj, values, notes)
    if verdict is not None:
        return await finish(agent, call, run_id, arguments, None, verdict.error, 0,
                                  summary=verdict.summary, guidance=verdict.guidance)
    started = time.perf_counter()
    try:
        value = await clock.run(tool_obj.invoke(values, ctx))
    except asyncio.TimeoutError:
        error = f"Tool '{call.name}' execution exceeded {timeout:g}s timeout"
        if clock.waited >= 0.5:
            error += (f" (the {clock.waited:.0f} s it waited for a person's answer "
                      "did not count)")
        thread = ctx.thread
        if thread is not None and thread.is_alive():
            error += "; it is still running in the background and its result is ignored"
            emit(Notice(run_id, f"Tool '{call.name}' outlived its {timeout:g} s timeout; "
                        "it was left running in a background thread", level="warning"))
        return await finish(agent, call, run_id, arguments, None, error,
                                  monotonic_ms(started),
                                  summary=f"{call.name} timed out after {timeout:g} s")
    except asyncio.CancelledError:
        await finish(agent, call, run_id, arguments, None, "cancelled by the user",
                           monotonic_ms(started))
        raise
    except Exception as exc:
        message = str(exc) or type(exc).__name__
        if not isinstance(exc, (ValueError, RuntimeError, PermissionError, LookupError)):
            message = f"{type(exc).__name__}: {message}"
        told = exc if isinstance(exc, ToolError) else None
        return await finish(agent, call, run_id, arguments, None,
                                  f"Tool '{call.name}' execution failed: {message}",
                                  monotonic_ms(started),
                                  summary=(told.summary if told else None) or message,
                                  guidance=told.guidance if told else None)
    if isinstance(value, dict) and value.get("ok") is False:
        # A spec 004 envelope ({ok: false, error}): a failed call; the model reads the envelope.
        said = str(value.get("error") or "") or "no reason given"
        return await finish(agent, call, run_id, arguments, value,
                            f"Tool '{call.name}' failed: {said}", monotonic_ms(started),
                            summary=said)
    return await finish(agent, call, run_id, arguments, value, None, monotonic_ms(started))


async def finish(
    agent: CallHost,
    call: ToolCallRequest,
    run_id: str,
    arguments: object,
    result: object,
    error: str | None,
    duration_ms: int,
    *,
    summary: str | None = None,
    guidance: str | None = None,
) -> ToolCallRecord:
    """Write the ledger record (to disk first), then tell the views.

    ``error`` is what the ledger and the run result keep; the person is shown
    ``summary`` (when given) and only the model is told ``guidance``.

    Raises :class:`LedgerUnavailable` when the record cannot be written: a call the
    ledger cannot hold must not reach the model as if it had been recorded.
    """
    try:
        record = await asyncio.to_thread(
            agent.ledger.record_tool_call, agent_id=agent.agent_id, run_id=run_id,
            tool_name=call.name, arguments=arguments, result=result,
            success=error is None, error=error, duration_ms=duration_ms,
            **getattr(agent, "ledger_fields", {}),
        )
    except (LedgerError, OSError) as exc:
        raise LedgerUnavailable(
            f"The ledger could not record tool '{call.name}' ({exc}), so the run "
            "stopped. Check the disk and `python -m agent_kernel verify --repair`.") from exc
    agent.bus.emit(LedgerRecorded(run_id, record))
    agent.bus.emit(ToolCallFinished(run_id, call.id, call.name, arguments, result,
                                   error is None, error, duration_ms, record=record,
                                   summary=summary))
    return ToolCallRecord(call.id, call.name, arguments, result, error is None, error,
                          duration_ms, summary, guidance)


def answer_pending(messages: list[dict[str, Any]], call_ids: list[str], why: str) -> None:
    """Answer every unanswered tool call, so the next request is one a provider accepts."""
    for call_id in call_ids:
        messages.append({"role": "tool", "tool_call_id": call_id, "content": f"Error: {why}"})
    call_ids.clear()


def tool_message(record: ToolCallRecord, limit: int) -> dict[str, Any]:
    """The tool message the model reads: the result, or the error and what to do next."""
    content = (to_text(record.result) if record.success or record.result is not None
               else f"Error: {record.error}")
    if not record.success and record.guidance:
        content += f"\n\n{record.guidance}"
    if len(content) > limit:
        content = (content[:limit] + f"\n...[truncated: the result has {len(content)} "
                   f"characters; the first {limit} are shown]")
    return {"role": "tool", "tool_call_id": record.call_id, "content": content}
