"""Which tools ask the person before they run, and why: approvals by effect.

An approval protects something only when the call could change what the person cares
about: it writes, runs code with access to the kernel, the files or the network, sends,
or spends. A call whose effect stays inside a sandbox with no file system and no network
(``run_javascript``) protects nothing by asking, and asking anyway teaches people to click
Approve without reading. So the policy is this table, by effect, and the person may change
it only where it is safe to: any tool may be made to ask (``%agent_config --ask TOOL``,
``Settings.ask_before``), but only a tool whose row says ``may_skip`` may be made not to
ask. Code for the kernel, writes, commands and requests that send can never be made not
to ask: :func:`asks` ignores such a choice, wherever it came from.

Refusals that do not depend on the person (a protected path, a limit, bad arguments, the
dangerous-command list) are not here: each tool's ``precheck`` says them before anyone is
asked (:mod:`agent_kernel.engine.tool_calls`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_kernel.engine.registry import Tool


@dataclass(frozen=True)
class AskRule:
    """One row of the table: does ``tool`` ask by default, why, and may that change."""

    tool: str
    asks: bool
    """Asks by default (for tools that ask per call, such as ``url_fetch``: when the call
    has an effect)."""
    why: str
    """The reason, in a person's words (``%agent_config --asking``, docs/security.md)."""
    may_skip: bool = False
    """The person may make it not ask (only where the effect stays in a sandbox)."""


POLICY: dict[str, AskRule] = {rule.tool: rule for rule in (
    AskRule("run_python", True, "runs code in the kernel, with everything the kernel can "
            "reach: your variables, files and the network"),
    AskRule("run_cell", True, "runs a notebook cell in the kernel; you see its source"),
    AskRule("edit_cell", True, "changes what a notebook cell will run; you see the change"),
    AskRule("bash", True, "runs a shell command that can read and change the workspace's "
            "files"),
    AskRule("run_command", True, "runs a program that can read and change the workspace's "
            "files"),
    AskRule("write_file", True, "writes a file in the workspace"),
    AskRule("url_fetch", True, "sends data to a server (anything but a plain GET); a GET "
            "only reads and does not ask"),
    AskRule("http_request", True, "sends data to a server (anything but a plain GET); a GET "
            "only reads and does not ask"),
    AskRule("run_javascript", False, "runs in a sandbox with no file system, no network and "
            "limits on memory, CPU and time: nothing outside it can change", may_skip=True),
    AskRule("todo_update", False, "changes only the agent's own todo list (TODO.WIP.md and "
            "TODO.DONE.md in its state folder), which you can read and edit; nothing leaves "
            "the workspace"),
    AskRule("contacts_send", True, "sends a message to a person, on Telegram or by e-mail; "
            "you see who, where and the exact text"),
    AskRule("contacts_upsert", False, "changes only the agent's own address book "
            "(state/contacts.json); nothing is sent, and a message to a contact asks when it "
            "is sent, showing where it goes"),
    AskRule("find_tools", False, "changes only which tools this run's requests describe; "
            "a tool it brings in asks as it always does, and it finds none the agent's "
            "role may not use"),
    AskRule("insert_cell", False, "adds a cell below the agent's own cell: nothing runs and "
            "you can delete it (placed anywhere else, or showing an image from the web, it "
            "asks)"),
)}
"""The built-in tools that ask, or that one might expect to ask and do not. Every other
built-in tool reads, or changes only the agent's own notes (memory, schedules whose runs
ask for themselves); a person's ``@tool`` asks when it says ``side_effects=True``."""


def asks(tool: Tool, arguments: dict[str, object], chosen: Mapping[str, bool]) -> bool:
    """Whether this call waits for the person: the table, the person's ``chosen`` changes
    (tool name -> asks), and what the call does (``Tool.needs_approval``).

    A choice not to ask counts only for a tool whose row says ``may_skip``; a choice to
    ask always counts.
    """
    choice = chosen.get(tool.name)
    if choice is True:
        return True
    rule = POLICY.get(tool.name)
    if rule is not None and rule.may_skip:
        return rule.asks if choice is None else False
    return tool.needs_approval(arguments)


def refusal_to_skip(tool: str) -> str | None:
    """Why ``tool`` cannot be made not to ask, in words (None: it may)."""
    rule = POLICY.get(tool)
    if rule is not None and rule.may_skip:
        return None
    if rule is not None:
        return f"{tool} always asks before it runs: it {rule.why}."
    return (f"{tool} is not one of the tools that may run without asking (only "
            f"{', '.join(sorted(r.tool for r in POLICY.values() if r.may_skip))}); a tool "
            "of your own asks only when it says side_effects=True.")


def describe(chosen: Mapping[str, bool]) -> str:
    """The table as a person reads it, with their changes (``%agent_config --asking``)."""
    lines = ["Which tools ask before they run:"]
    for rule in POLICY.values():
        now = chosen.get(rule.tool)
        effective = True if now is True else (
            False if now is False and rule.may_skip else rule.asks)
        said = "asks" if effective else "runs without asking"
        changed = " (your choice)" if now is not None and effective != rule.asks else ""
        lines.append(f"  {rule.tool}: {said}{changed} — it {rule.why}")
    extra = sorted(name for name, on in chosen.items() if on and name not in POLICY)
    if extra:
        lines.append(f"  also asks, by your choice: {', '.join(extra)}")
    lines.append("Change with %agent_config --ask TOOL or --no-ask TOOL (only "
                 f"{', '.join(r.tool for r in POLICY.values() if r.may_skip)} may run "
                 "without asking).")
    return "\n".join(lines)
