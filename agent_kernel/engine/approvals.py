"""Approvals: a side-effecting tool call asks the person before it runs.

Tool calls pass through :meth:`Approvals.check`, which asks when the policy table
(:mod:`agent_kernel.engine.ask_policy`: writing files, shell commands, non-GET HTTP, code
execution; not the sandboxed ``run_javascript``) and the person's changes to it say so.
In a notebook the person sees the exact arguments with Approve / Deny / Always allow
buttons. With nobody to ask, the configured headless policy decides (deny by default).
Every decision is a ledger record.

"Always allow this tool" gives a *standing permission*: the tool runs without
asking until the person revokes it (:meth:`Approvals.revoke`, ``%agent_config
--revoke``) or the Agent ends. Granting and revoking are ledger records
(``permission_granted``, ``permission_revoked``) and each call let through
says so, but a record is history, not a grant: a new kernel starts with none.

Code that must be approved *again later* (a trigger's condition, restored by
the next kernel) is approved with a ``digest`` of exactly that code; the
record then also carries a ``mac`` under this user's key (see
:mod:`agent_kernel.core.trust`), so a restore can tell an approval made here from
one written into the folder by someone else.

This module needs only what it uses (a bus, a ledger, a question channel,
settings and an agent id: :class:`ApprovalHost`), not the agent itself, so
the agent imports it and it imports nothing back.
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Protocol

from agent_kernel.core.events import LedgerRecorded, Notice
from agent_kernel.core.json_types import JsonObject
from agent_kernel.core.statuses import REMOTE_SOURCES
from agent_kernel.core.times import parse_iso

if TYPE_CHECKING:
    from agent_kernel.core.config import Settings
    from agent_kernel.core.events import EventBus
    from agent_kernel.core.ledger import Ledger
    from agent_kernel.engine.questions import QuestionChannel
    from agent_kernel.engine.registry import Tool, ToolContext

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


@dataclass(frozen=True)
class ApprovalTerms:
    """How one call is approved, when its tool says more than "ask" (``Tool.approval_terms``).

    ``digest`` names exactly the code approved (recorded and signed). ``standing`` False:
    a standing "Always allow" does not let this call through (the person is asked anyway);
    ``policy`` False: with nobody to click, the headless policy does not decide, the call
    is refused, and ``why`` says why in the person's words.
    """

    digest: str | None = None
    standing: bool = True
    policy: bool = True
    why: str = ""


@dataclass(frozen=True)
class StandingPermission:
    """One "Always allow this tool": ``tool`` runs without asking since ``since``."""

    tool: str
    since: datetime
    """When it was granted (aware, UTC: the ledger record's timestamp)."""
    run_id: str
    """The run in which the person chose "Always allow"."""
    record_id: str | None = None
    """The ``permission_granted`` ledger record."""

    def describe(self, now: datetime | None = None) -> str:
        """``write_file · since 12:04:31 CET (4 min ago) · granted in run run_…``."""
        local = self.since.astimezone()
        now = now or datetime.now(timezone.utc)
        minutes = int((now - self.since).total_seconds() // 60)
        ago = "just now" if minutes < 1 else f"{minutes} min ago" if minutes < 120 else (
            f"{minutes // 60} h ago")
        when = local.strftime("%H:%M:%S") if local.date() == now.astimezone().date() else (
            local.strftime("%Y-%m-%d %H:%M:%S"))
        return f"{self.tool} · since {when} {local.strftime('%Z')} ({ago}) · granted in run " \
               f"{self.run_id}"


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
        self._standing: dict[str, StandingPermission] = {}
        self.timeout = APPROVAL_TIMEOUT
        self.offers_standing = True
        """Whether "Always allow" is offered at all: not by an agent that lives for one
        task (a team's Planner or Worker), whose standing permission would end, unseen,
        with the task; its cards offer Approve and Deny."""

    def standing(self) -> list[StandingPermission]:
        """The standing permissions of this Agent, oldest first."""
        return sorted(self._standing.values(), key=lambda p: p.since)

    def grant(self, tool: str, run_id: str = "person") -> StandingPermission:
        """Let ``tool`` run without asking from now on (what "Always allow" does).

        Recorded as ``permission_granted``; granting a tool already allowed changes nothing.
        """
        if (held := self._standing.get(tool)) is not None:
            return held
        return self._granted(tool, run_id, self._write_grant(tool, run_id))

    def revoke(self, tool: str) -> list[StandingPermission]:
        """End the standing permission of ``tool`` (``"all"``: every one); the next call asks.

        Returns what was revoked, each recorded as ``permission_revoked``; an empty list
        when ``tool`` had none.
        """
        ended = self.standing() if tool == "all" else (
            [self._standing[tool]] if tool in self._standing else [])
        for permission in ended:
            del self._standing[permission.tool]
            record = self.host.ledger.record_event(
                "permission_revoked", agent_id=self.host.agent_id, run_id="person",
                tool_name=permission.tool, by="user", granted_in=permission.run_id,
                granted_record_id=permission.record_id)
            self._announce("person", record, None)
        return ended

    async def check(self, ctx: ToolContext, tool: Tool, arguments: JsonObject,
                    notes: JsonObject | None = None) -> Refusal | None:
        """None when the call may run, else why it may not (``notes``: see :meth:`request`)."""
        from agent_kernel.engine.ask_policy import asks

        if not asks(tool, arguments, self.host.settings.ask_before):
            return None
        terms = tool.approval_terms(ctx, arguments) if tool.approval_terms else ApprovalTerms()
        return await self.request(ctx.run_id, tool.name, arguments, notes=notes, terms=terms)

    async def request(self, run_id: str, what: str, arguments: JsonObject, *,
                      digest: str | None = None,
                      notes: JsonObject | None = None,
                      terms: ApprovalTerms | None = None) -> Refusal | None:
        """Ask for approval of ``what`` with ``arguments``; None means approved.

        ``digest`` names exactly the code being approved; an approval (also an "always"
        one) is then recorded with it and signed, so it can be checked after a restart.
        ``notes`` are facts the person should see beside the arguments (a command's
        ``sandbox``: whether it runs sandboxed); they go into the question's ``details``.
        ``terms`` may name the digest too, and keep a standing permission or the headless
        policy from deciding (:class:`ApprovalTerms`).
        """
        terms = terms or ApprovalTerms()
        if not self.offers_standing and terms.standing:
            terms = dataclasses.replace(terms, standing=False)
        digest = digest if digest is not None else terms.digest
        if terms.standing and (held := self._standing.get(what)) is not None:
            await self._record(run_id, what, arguments, True, ALWAYS, "always", digest,
                               standing=held)
            return None
        channel = self.host.questions
        if channel.reachable:
            reply = await channel.ask(
                run_id=run_id,
                question=f"Allow `{what}` to run with these arguments?",
                # "Always allow" only where a standing permission would count: a trigger's
                # card must not grant the person's own runs one in passing.
                options=[APPROVE, DENY, ALWAYS] if terms.standing else [APPROVE, DENY],
                timeout=self.timeout,
                default=DENY,
                kind="approval",
                details={**(notes or {}), "tool": what, "arguments": arguments},
                interactive=channel.interactive,
            )
            answer, source = reply["answer"], reply["source"]
            if source in REMOTE_SOURCES and answer == ALWAYS:
                answer = APPROVE  # a standing permission is granted in the notebook only
        elif not terms.policy:
            answer, source = DENY, "policy"
        else:
            policy = self.host.settings.headless_approval
            answer, source = (APPROVE if policy == "allow" else DENY), "policy"
        approved = answer in (APPROVE, ALWAYS)
        await self._record(run_id, what, arguments, approved, answer, source, digest)
        if answer == ALWAYS and terms.standing and what not in self._standing:
            record = await asyncio.to_thread(self._write_grant, what, run_id)
            self._granted(what, run_id, record)
        if approved:
            return None
        if source in ("user", *REMOTE_SOURCES):
            why, reason = "the user denied it", "you denied it"
        elif source == "policy" and not terms.policy:
            why = f"no one could approve it ({terms.why or 'it is never approved by a policy'})"
            reason = f"no one was there to approve it ({terms.why or 'never approved by a policy'})"
        elif source == "policy":
            why = "no one could approve it (headless policy: deny)"
            reason = "no one was there to approve it (headless policy: deny)"
        else:
            why, reason = "the approval timed out", "no one answered the approval in time"
        by_person = source in ("user", *REMOTE_SOURCES)
        summary = f"You denied {what}" if by_person else f"{what} was not run: {reason}"
        return Refusal(f"Tool '{what}' was not run: {why}.", summary, reason)

    def record_asking(self, tool: str, asks: bool, by: str = "user") -> None:
        """Record a change to whether ``tool`` asks before it runs (``ask_policy_changed``);
        ``by`` says who changed it ("user", "configuration")."""
        record = self.host.ledger.record_event(
            "ask_policy_changed", agent_id=self.host.agent_id, run_id="person",
            tool_name=tool, asks=asks, by=by)
        self._announce("person", record, None)

    def record_person(self, what: str, arguments: JsonObject, digest: str,
                      run_id: str = "person") -> JsonObject:
        """Record that the person approved ``digest`` themselves (their own code, or a click
        on Approve for a restored trigger). Written at once, before the code may run."""
        record, warning = self._write(run_id, what, arguments, True, APPROVE, "person", digest)
        self._announce(run_id, record, warning)
        return record

    async def _record(self, run_id: str, what: str, arguments: JsonObject, approved: bool,
                      answer: str, source: str, digest: str | None = None,
                      standing: StandingPermission | None = None) -> None:
        record, warning = await asyncio.to_thread(self._write, run_id, what, arguments,
                                                  approved, answer, source, digest, standing)
        self._announce(run_id, record, warning)

    def _write_grant(self, tool: str, run_id: str) -> JsonObject:
        return self.host.ledger.record_event(
            "permission_granted", agent_id=self.host.agent_id, run_id=run_id, tool_name=tool,
            by="user")

    def _granted(self, tool: str, run_id: str, record: JsonObject) -> StandingPermission:
        permission = self._standing.setdefault(tool, StandingPermission(
            tool, _when(record.get("timestamp")), run_id, record.get("record_id")))
        self._announce(run_id, record, None)
        return permission

    def _announce(self, run_id: str, record: JsonObject, warning: str | None) -> None:
        # Subscribers (views) are not thread-safe: events go out on the caller's thread.
        if warning:
            self.host.bus.emit(Notice(run_id, warning, level="warning"))
        self.host.bus.emit(LedgerRecorded(run_id, record))

    def _write(self, run_id: str, what: str, arguments: JsonObject, approved: bool,
               answer: str, source: str, digest: str | None,
               standing: StandingPermission | None = None
               ) -> tuple[JsonObject, str | None]:
        from agent_kernel.core.trust import TrustError, sign

        fields: dict[str, str | None] = {}
        warning = None
        if standing is not None:
            fields["standing_since"] = standing.since.isoformat(
                timespec="milliseconds").replace("+00:00", "Z")
            fields["permission_record_id"] = standing.record_id
        if digest is not None:
            fields["digest"] = digest
            if approved:
                try:
                    fields["mac"] = sign(digest, workspace=self.host.ledger.path.parent)
                except TrustError as exc:
                    warning = (f"The approval is recorded but cannot be signed ({exc}); a new "
                               "kernel will ask for it again.")
        record = self.host.ledger.record_event(
            "approval", agent_id=self.host.agent_id, run_id=run_id, tool_name=what,
            arguments=arguments, decision="approved" if approved else "denied", answer=answer,
            source=source, **getattr(self.host, "ledger_fields", {}), **fields,
        )
        return record, warning


def _when(stamp: object) -> datetime:
    """A ledger timestamp as an aware datetime (now, if it cannot be read)."""
    try:
        return parse_iso(str(stamp)) or datetime.now(timezone.utc)
    except ValueError:
        return datetime.now(timezone.utc)


def describe_standing(approvals: Approvals | None) -> str:
    """The standing permissions as a person reads them (``%agent_config --permissions``)."""
    held = approvals.standing() if approvals is not None else []
    if not held:
        return "No standing permissions: every side-effecting tool asks before it runs."
    lines = [f"Standing permissions ({len(held)}; each tool runs without asking until you "
             "revoke it or this kernel session ends):"]
    lines += [f"  {permission.describe()}" for permission in held]
    lines.append("Revoke one with %agent_config --revoke TOOL, or all with --revoke all.")
    return "\n".join(lines)


def revoke_words(approvals: Approvals | None, tool: str) -> str:
    """Revoke ``tool`` (or ``all``) and say what changed (``%agent_config --revoke``)."""
    ended = approvals.revoke(tool) if approvals is not None else []
    if ended:
        names = ", ".join(p.tool for p in ended)
        again = "it asks" if len(ended) == 1 else "each asks"
        return f"Revoked the standing permission of {names}: {again} before it runs again."
    if tool == "all":
        return "There were no standing permissions to revoke."
    return (f"{tool} has no standing permission, so there is nothing to revoke; it already "
            "asks before it runs.")
