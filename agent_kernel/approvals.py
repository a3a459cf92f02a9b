"""Approvals: a side-effecting tool call asks the person before it runs.

Tools marked ``side_effects=True`` (writing files, shell commands, non-GET
HTTP, code execution, conditions that evaluate code) pass through
:meth:`Approvals.check`. In a notebook the person sees the exact arguments
with Approve / Deny / Always allow buttons; "always" lasts for this kernel
session. With nobody to ask, the configured headless policy decides (deny by
default). Every decision is a ledger record.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from .events import LedgerRecorded

if TYPE_CHECKING:
    from .agent import Agent
    from .tools.base import Tool, ToolContext

APPROVE, DENY, ALWAYS = "Approve", "Deny", "Always allow this tool"
APPROVAL_TIMEOUT = 600.0


class Approvals:
    """Decides whether a side-effecting call may run."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.always_allowed: set[str] = set()
        self.timeout = APPROVAL_TIMEOUT

    async def check(self, ctx: ToolContext, tool: Tool, arguments: dict[str, Any]) -> str | None:
        """None when the call may run, else the refusal to give the model."""
        if not tool.side_effects:
            return None
        if tool.name in self.always_allowed:
            await self._record(ctx.run_id, tool.name, arguments, True, ALWAYS, "always")
            return None
        return await self.request(ctx.run_id, tool.name, arguments)

    async def request(self, run_id: str, what: str, arguments: dict[str, Any]) -> str | None:
        """Ask for approval of ``what`` with ``arguments``; None means approved."""
        channel = self.agent.questions
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
            policy = self.agent.settings.headless_approval
            answer, source = (APPROVE if policy == "allow" else DENY), "policy"
        approved = answer in (APPROVE, ALWAYS)
        if answer == ALWAYS:
            self.always_allowed.add(what)
        await self._record(run_id, what, arguments, approved, answer, source)
        if approved:
            return None
        why = "no one could approve it (headless policy: deny)" if source == "policy" else (
            "the approval timed out" if source != "user" else "the user denied it")
        return f"Tool '{what}' was not run: {why}. Do not retry it; carry on without it."

    async def _record(self, run_id: str, what: str, arguments: dict[str, Any], approved: bool,
                      answer: str, source: str) -> None:
        record = await asyncio.to_thread(
            self.agent.ledger.record_event, "approval", agent_id=self.agent.agent_id,
            run_id=run_id, tool_name=what, arguments=arguments,
            decision="approved" if approved else "denied", answer=answer, source=source,
        )
        self.agent.bus.emit(LedgerRecorded(run_id, record))
