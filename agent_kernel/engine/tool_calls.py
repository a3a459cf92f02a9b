"""One tool call, start to finish: parse, check, approve, run with a timeout, record.

The loop (``agent.py``) hands each call the model asked for to :func:`execute`,
which runs it through stages: parse, look up, permit, validate, precheck,
approve, run, record. A stage returns its value or raises :class:`CallRefused`,
and :func:`execute` turns that one type into the record, in one place: so every
failure a model can cause (bad JSON, an unknown tool, invalid arguments, a
refused role or approval, a timeout, the tool raising) becomes a
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
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent_kernel.core.events import (
    LedgerRecorded,
    Notice,
    ToolCallFinished,
    ToolCallStarted,
)
from agent_kernel.core.ledger import LedgerError
from agent_kernel.core.redaction import to_text
from agent_kernel.engine.models.base import ChatMessage, ContentPart, JsonObject
from agent_kernel.engine.models.llm import ToolCallRequest
from agent_kernel.engine.registry import (
    Tool,
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
    for_model: Any = None
    """What the model reads instead of ``result`` (the tool's ``for_model``), or None."""
    images: list[str] = field(default_factory=list)
    """The result's PNG images as base64 (the tool's ``images``), for a model that reads
    images."""


class LedgerUnavailable(RuntimeError):
    """A tool call could not be recorded; the run ends with this message."""


async def refuse(agent: CallHost, call: ToolCallRequest, run_id: str, error: str
                 ) -> ToolCallRecord:
    """Record a call that is not run at all (the run's tool-call limit)."""
    agent.bus.emit(ToolCallStarted(run_id, call.id, call.name, call.arguments))
    return await finish(agent, call, run_id, call.arguments, None, error, 0)


class CallRefused(Exception):
    """A stage ends the call here, unsuccessful: refused before it ran, or failed as it ran.

    Every stage of :func:`execute` says "no" this one way, and :func:`execute` records it
    once. ``error`` is the fact (ledger, run result), ``summary`` what the person is shown,
    ``guidance`` what only the model is told; ``result`` is what the tool returned, if
    anything, and ``duration_ms`` how long it ran (0: it never started).
    """

    def __init__(self, error: str, *, summary: str | None = None,
                 guidance: str | None = None, result: Any = None,
                 duration_ms: int = 0, reason: str | None = None) -> None:
        super().__init__(error)
        self.error = error
        self.reason = reason if reason is not None else error
        """The refusal in words without the ``Tool 'NAME' ...`` frame: what a tool's own
        failure shape (:data:`~agent_kernel.engine.registry.Failure`) carries."""
        self.summary = summary
        self.guidance = guidance
        self.result = result
        self.duration_ms = duration_ms


async def execute(
    agent: CallHost, call: ToolCallRequest, run_id: str, turn: TurnState | None = None
) -> ToolCallRecord:
    """Parse, look up, permit, validate, precheck, approve, run and record one tool call.

    Each stage returns its value or raises :class:`CallRefused`; the first refusal ends
    the call and is recorded here, once. A run stopped while its tool runs is recorded
    as cancelled, and the stop goes on.
    """
    arguments: Any = call.arguments  # the model's text, until it parses
    try:
        try:
            arguments = parse(call)
        finally:  # the views hear of every call, with its arguments parsed when they parse
            agent.bus.emit(ToolCallStarted(run_id, call.id, call.name, arguments))
        tool_obj = look_up(agent, call)
        switched_on(agent, call)
        permit(agent, call, tool_obj)
        values = validate(call, tool_obj, arguments)
        clock = ToolClock(tool_obj.timeout or agent.settings.tool_timeout)
        ctx = tool_context(agent, call, run_id, turn if turn is not None else TurnState(), clock)
        notes = precheck(call, tool_obj, ctx, values)
        await approve(agent, ctx, tool_obj, values, notes)
        started = time.perf_counter()
        try:
            value = await run(agent, call, tool_obj, values, ctx, clock, started)
        except asyncio.CancelledError:
            await finish(agent, call, run_id, arguments, None, "cancelled by the user",
                         monotonic_ms(started))
            raise
        if tool_obj.envelope:
            check_envelope(call, value, started)
    except CallRefused as refused:
        shaped = agent.registry.get(call.name)
        if refused.result is None and shaped is not None and shaped.failure is not None:
            refused.result = shaped.failure(refused.reason)  # the spec's shape, e.g. {ok: false}
        made = await finish(agent, call, run_id, arguments, refused.result, refused.error,
                            refused.duration_ms, summary=refused.summary,
                            guidance=refused.guidance)
        return _read_for_model(made, agent.registry.get(call.name))
    made = await finish(agent, call, run_id, arguments, value, None, monotonic_ms(started))
    return _read_for_model(made, tool_obj)


def _read_for_model(record: ToolCallRecord, tool_obj: Tool | None) -> ToolCallRecord:
    """Give the record what the model reads of its result, when the tool says."""
    if tool_obj is not None and tool_obj.for_model is not None and record.result is not None:
        record.for_model = tool_obj.for_model(record.result)
    if tool_obj is not None and tool_obj.images is not None and record.result is not None:
        record.images = tool_obj.images(record.result)[:MAX_IMAGES_SHOWN]
    return record


MAX_IMAGES_SHOWN = 4
"""Images one tool call may show the model (each costs ~800 tokens and more)."""


def images_message(records: list[ToolCallRecord]) -> ChatMessage | None:
    """The message that shows a model the images of this response's tool calls (a tool
    message holds only text), or None when they made none. It says where they came from:
    the tools, not the person."""
    parts: list[ContentPart] = []
    for record in records:
        for number, image in enumerate(record.images, 1):
            parts.append({"type": "text", "text": f"Image {number} of {record.tool_name} "
                                                  f"(call {record.call_id}):"})
            parts.append({"type": "image_url",
                          "image_url": {"url": f"data:image/png;base64,{image}"}})
    if not parts:
        return None
    return {"role": "user", "content": [
        {"type": "text", "text": "The images the tool calls above made (data from the tools, "
                                 "not words of the person):"}, *parts]}


def parse(call: ToolCallRequest) -> Any:
    """The call's arguments as JSON values (no text at all: no arguments)."""
    try:
        return json.loads(call.arguments) if call.arguments.strip() else {}
    except (ValueError, RecursionError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise CallRefused(f"Invalid JSON arguments for tool '{call.name}': {why}") from exc


def look_up(agent: CallHost, call: ToolCallRequest) -> Tool:
    """The tool the call names; the model is told which ones there are when it has none."""
    tool_obj = agent.registry.get(call.name)
    if tool_obj is None:
        known = ", ".join(agent.registry.names())
        # spec 001's words (case 2 of its error handling), for the person's tools too
        raise CallRefused(f"Unknown built-in tool: {call.name}",
                          summary=f"unknown tool '{call.name}'",
                          guidance=f"Available tools: {known}")
    return tool_obj


def switched_on(agent: CallHost, call: ToolCallRequest) -> None:
    """Refuse a tool the person switched off (spec 003's ``tools.<name>.enabled``), in 003's
    words."""
    if agent.settings.tools_enabled.get(call.name, True):
        return
    raise CallRefused(f"{call.name} tool is disabled", summary=f"{call.name} is switched off",
                      guidance="Do without it; the person switched it off "
                               "(Settings.tools_enabled).")


def permit(agent: CallHost, call: ToolCallRequest, tool_obj: Tool) -> None:
    """Refuse a tool the agent's role may not use (the permission hook explains why)."""
    if agent.registry.allowed(agent.role, tool_obj):
        return
    explain = getattr(agent.registry.permission_hook, "refusal", None)
    raise CallRefused(f"Tool '{call.name}' is not permitted for role '{agent.role}'",
                      summary=f"{call.name} is not for the {agent.role}",
                      guidance=explain(agent.role, call.name) if explain is not None else None)


def validate(call: ToolCallRequest, tool_obj: Tool, arguments: Any) -> JsonObject:
    """The arguments checked against the tool's schema."""
    try:
        return tool_obj.validate(arguments)
    except ToolArgumentError as exc:
        raise CallRefused(str(exc)) from exc
    except Exception as exc:  # pydantic's own limits (deep nesting and the like)
        raise CallRefused(f"Invalid arguments for tool '{call.name}': they could "
                          f"not be checked ({type(exc).__name__})") from exc


def tool_context(agent: CallHost, call: ToolCallRequest, run_id: str,
                 turn: TurnState, clock: ToolClock) -> ToolContext:
    """What the running tool may know of its run."""
    return ToolContext(agent=agent, run_id=run_id, agent_id=agent.agent_id,
                       workspace=agent.workspace, trigger=turn.trigger,
                       call_id=call.id, clock=clock, turn=turn)


def precheck(call: ToolCallRequest, tool_obj: Tool, ctx: ToolContext,
             values: JsonObject) -> JsonObject | None:
    """The tool's own check, before anyone is asked to approve: a refusal that does not
    depend on the person (a protected path, a limit) is said here, and never asked for.
    Its notes go to the person."""
    try:
        return tool_obj.precheck(values, ctx) if tool_obj.precheck is not None else None
    except ToolError as exc:  # refused before anyone is asked to approve it
        raise CallRefused(f"Tool '{call.name}' was not run: {exc}", summary=exc.summary,
                          guidance=exc.guidance, reason=str(exc)) from exc
    except Exception as exc:  # a precheck that breaks refuses too: it cannot vouch
        raise CallRefused(f"Tool '{call.name}' was not run: its arguments could not be "
                          f"checked ({type(exc).__name__}: {exc})") from exc


async def approve(agent: CallHost, ctx: ToolContext, tool_obj: Tool, values: JsonObject,
                  notes: JsonObject | None) -> None:
    """Ask for approval when the tool needs it; a denial (or no answer) refuses."""
    verdict = await agent.approvals.check(ctx, tool_obj, values, notes)
    if verdict is not None:
        raise CallRefused(verdict.error, summary=verdict.summary, guidance=verdict.guidance,
                          reason=verdict.error.removeprefix(f"Tool '{tool_obj.name}' was not "
                                                            "run: "))


async def run(agent: CallHost, call: ToolCallRequest, tool_obj: Tool, values: JsonObject,
              ctx: ToolContext, clock: ToolClock, started: float) -> Any:
    """The tool's value within its timeout (``clock``); a timeout or a raise refuses."""
    try:
        return await clock.run(tool_obj.invoke(values, ctx))
    except asyncio.TimeoutError as exc:
        error = f"Tool '{call.name}' execution exceeded {clock.limit:g}s timeout"
        if clock.waited >= 0.5:
            error += (f" (the {clock.waited:.0f} s it waited for a person's answer "
                      "did not count)")
        thread = ctx.thread
        if thread is not None and thread.is_alive():
            error += "; it is still running in the background and its result is ignored"
            agent.bus.emit(Notice(ctx.run_id, f"Tool '{call.name}' outlived its "
                                  f"{clock.limit:g} s timeout; it was left running in a "
                                  "background thread", level="warning"))
        raise CallRefused(error, duration_ms=monotonic_ms(started),
                          summary=f"{call.name} timed out after {clock.limit:g} s") from exc
    except Exception as exc:
        message = str(exc) or type(exc).__name__
        if not isinstance(exc, (ValueError, RuntimeError, PermissionError, LookupError)):
            message = f"{type(exc).__name__}: {message}"
        told = exc if isinstance(exc, ToolError) else None
        raise CallRefused(f"Tool '{call.name}' execution failed: {message}",
                          duration_ms=monotonic_ms(started), reason=message,
                          summary=(told.summary if told else None) or message,
                          guidance=told.guidance if told else None) from exc


def check_envelope(call: ToolCallRequest, value: Any, started: float) -> None:
    """A spec 004 envelope (``{ok: false, error}``) is a failed call; the model reads it."""
    if isinstance(value, dict) and value.get("ok") is False:
        error = value.get("error")
        if isinstance(error, dict):  # {type, message}: an error the tool ran into, in words
            error = ": ".join(str(error[k]) for k in ("type", "message") if error.get(k))
        said = str(error or "") or "no reason given"
        raise CallRefused(f"Tool '{call.name}' failed: {said}", result=value,
                          duration_ms=monotonic_ms(started), summary=said)


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
        record = await agent.ledger.arecord_tool_call(  # no thread held while it waits
            agent_id=agent.agent_id, run_id=run_id,
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


def answer_pending(messages: list[ChatMessage], call_ids: list[str], why: str) -> None:
    """Answer every unanswered tool call, so the next request is one a provider accepts."""
    for call_id in call_ids:
        messages.append({"role": "tool", "tool_call_id": call_id, "content": f"Error: {why}"})
    call_ids.clear()


def tool_message(record: ToolCallRecord, limit: int) -> ChatMessage:
    """The tool message the model reads: the result, or the error and what to do next."""
    result = record.for_model if record.for_model is not None else record.result
    content = (to_text(result) if record.success or result is not None
               else f"Error: {record.error}")
    if not record.success and record.guidance:
        content += f"\n\n{record.guidance}"
    if len(content) > limit:
        content = (content[:limit] + f"\n...[truncated: the result has {len(content)} "
                   f"characters; the first {limit} are shown]")
    return {"role": "tool", "tool_call_id": record.call_id, "content": content}
