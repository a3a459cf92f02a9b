"""Approvals: a side-effecting tool call asks the person before it runs.

Tools marked ``side_effects=True`` (writing files, shell commands, non-GET
HTTP, code execution, conditions that evaluate code) pass through
:meth:`Approvals.check`. In a notebook the person sees the exact arguments
with Approve / Deny / Always allow buttons; "always" lasts for this kernel
session. With nobody to ask, the configured headless policy decides (deny by
default). Every decision is a ledger record.

Code that must be approved *again later* (a trigger's condition, restored by
the next kernel) is approved with a ``digest`` of exactly that code; the
record then also carries a ``mac`` under this user's key (see
:mod:`agent_kernel.trust`), so a restore can tell an approval made here from
one written into the folder by someone else.

This module needs only what it uses (a bus, a ledger, a question channel,
settings and an agent id: :class:`ApprovalHost`), not the agent itself, so
the agent imports it and it imports nothing back.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .events import LedgerRecorded, Notice

if TYPE_CHECKING:
    from .config import Settings
    from .events import EventBus
    from .ledger import Ledger
    from .questions import QuestionChannel
    from .tools.base import Tool, ToolContext

APPROVE, DENY, ALWAYS = "Approve", "Deny", "Always allow this tool"
APPROVAL_TIMEOUT = 600.0
REFUSAL_GUIDANCE = "Do not retry it; carry on without it."


@dataclass(frozen=True)
class Refusal:
    """Why a call was not approved, said once for each reader.

    ``error`` is the fact (ledger, run result), ``summary`` the short line the person
    sees (``reason`` its why, for callers that word their own), ``guidance`` what only
    the model is told.
    """

    error: str
    summary: str
    reason: str
    guidance: str = REFUSAL_GUIDANCE


class ApprovalHost(Protocol):
    """What approvals need of an agent."""

    @property
    def agent_id(self) -> str: ...

    @property
    def bus(self) -> EventBus: ...

    @property
    def ledger(self) -> Ledger: ...

    @property
    def questions(self) -> QuestionChannel: ...

    @property
    def settings(self) -> Settings: ...


class Approvals:
    """Decides whether a side-effecting call may run, and records every decision."""

    def __init__(self, host: ApprovalHost) -> None:
        self.host = host
        self.always_allowed: set[str] = set()
        self.timeout = APPROVAL_TIMEOUT

    async def check(self, ctx: ToolContext, tool: Tool,
                    arguments: dict[str, Any]) -> Refusal | None:
        """None when the call may run, else why it may not."""
        if not tool.side_effects:
            return None
        return await self.request(ctx.run_id, tool.name, arguments)

    async def request(self, run_id: str, what: str, arguments: dict[str, Any], *,
                      digest: str | None = None) -> Refusal | None:
        """Ask for approval of ``what`` with ``arguments``; None means approved.

        ``digest`` names exactly the code being approved; an approval (also an "always"
        one) is then recorded with it and signed, so it can be checked after a restart.
        """
        if what in self.always_allowed:
            await self._record(run_id, what, arguments, True, ALWAYS, "always", digest)
            return None
        channel = self.host.questions
        if channel.interactive:
            reply = await channel.ask(
                run_id=run_id,
                question=f"Allow `{what}` to run with these arguments?",
                options=[APPROVE, DENY, ALWAYS],
                timeout=self.timeout,
                default=DENY,
                kind="approval",
                details={"tool": what, "arguments": arguments},
            )
            answer, source = reply["answer"], reply["source"]
        else:
            policy = self.host.settings.headless_approval
            answer, source = (APPROVE if policy == "allow" else DENY), "policy"
        approved = answer in (APPROVE, ALWAYS)
        if answer == ALWAYS:
            self.always_allowed.add(what)
        await self._record(run_id, what, arguments, approved, answer, source, digest)
        if approved:
            return None
        if source == "user":
            why, reason = "the user denied it", "you denied it"
        elif source == "policy":
            why = "no one could approve it (headless policy: deny)"
            reason = "no one was there to approve it (headless policy: deny)"
        else:
            why, reason = "the approval timed out", "no one answered the approval in time"
        summary = f"You denied {what}" if source == "user" else f"{what} was not run: {reason}"
        return Refusal(f"Tool '{what}' was not run: {why}.", summary, reason)

    def record_person(self, what: str, arguments: dict[str, Any], digest: str,
                      run_id: str = "person") -> dict[str, Any]:
        """Record that the person approved ``digest`` themselves (their own code, or a click
        on Approve for a restored trigger). Written at once, before the code may run."""
        record, warning = self._write(run_id, what, arguments, True, APPROVE, "person", digest)
        self._announce(run_id, record, warning)
        return record

    async def _record(self, run_id: str, what: str, arguments: dict[str, Any], approved: bool,
                      answer: str, source: str, digest: str | None = None) -> None:
        record, warning = await asyncio.to_thread(self._write, run_id, what, arguments,
                                                  approved, answer, source, digest)
        self._announce(run_id, record, warning)

    def _announce(self, run_id: str, record: dict[str, Any], warning: str | None) -> None:
        # Subscribers (views) are not thread-safe: events go out on the caller's thread.
        if warning:
            self.host.bus.emit(Notice(run_id, warning, level="warning"))
        self.host.bus.emit(LedgerRecorded(run_id, record))

    def _write(self, run_id: str, what: str, arguments: dict[str, Any], approved: bool,
               answer: str, source: str, digest: str | None
               ) -> tuple[dict[str, Any], str | None]:
        from .trust import TrustError, sign

        fields: dict[str, Any] = {}
        warning = None
        if digest is not None:
            fields["digest"] = digest
            if approved:
                try:
                    fields["mac"] = sign(digest)
                except TrustError as exc:
                    warning = (f"The approval is recorded but cannot be signed ({exc}); a new "
                               "kernel will ask for it again.")
        record = self.host.ledger.record_event(
            "approval", agent_id=self.host.agent_id, run_id=run_id, tool_name=what,
            arguments=arguments, decision="approved" if approved else "denied", answer=answer,
            source=source, **fields,
        )
        return record, warning
