"""``python -m agent_kernel trust status|rotate --workspace DIR``: the approval signing key.

Approvals of model-written code (trigger conditions), and the record that this user made
a time-based trigger, are signed with one key per user (:mod:`agent_kernel.core.trust`).
``trust status`` says where the key is, whether it is private (a plain file of this
user's, mode 600, in a folder of mode 700, outside the workspace, hidden from every
sandbox) and how many of the workspace's saved triggers verify with it. ``trust rotate``
replaces the key at once: every signature made with the old key stops counting, in every
workspace, and nothing is re-signed (a key that leaked may have signed forgeries), so
each trigger is asked again. It names the workspace's triggers that will need approving
again and records the rotation in the workspace's ledger (the key itself is never written
anywhere else).
Exit code 0 on success, 1 when the key is refused or cannot be written.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_kernel.cli import EXAMPLES, examples

if TYPE_CHECKING:
    from pathlib import Path

    from agent_kernel.cli.grammar import Subparsers
    from agent_kernel.core.workspace import Workspace


def add_parser(sub: Subparsers) -> argparse.ArgumentParser:
    """Add the ``trust`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "trust", help="where the approval signing key is, and make a new one",
        formatter_class=EXAMPLES,
        epilog=examples("trust status --workspace .agent",
                        "trust rotate --workspace .agent  # the old key leaked, or may have"))
    parser.add_argument("--workspace", default=None,
                        help="workspace folder (default: $AGENT_KERNEL_WORKSPACE or .agent/)")
    actions = parser.add_subparsers(dest="action", required=True)
    actions.add_parser("status", help="where the key is, whether it is private, what it signs")
    actions.add_parser("rotate", help="replace the key; approvals signed with the old one "
                                      "are asked again")
    return parser


@dataclass
class Condition:
    """One saved trigger of the workspace (a condition or a time-based one), in words."""

    trigger_id: str
    agent_id: str
    words: str
    prompt: str
    digest: str

    def line(self) -> str:
        """One line a person reads."""
        prompt = " ".join(self.prompt.split())
        prompt = prompt if len(prompt) <= 80 else prompt[:79] + "…"
        whose = "" if self.agent_id == "agent" else f" (agent {self.agent_id})"
        return f"  {self.trigger_id}{whose}: {self.words}: {prompt}"


def _timed(record: dict[str, Any]) -> Condition | None:
    """A live time-based trigger as restore would read it (None for one it would refuse)."""
    from datetime import datetime, timezone

    from agent_kernel.triggers.checks import check_record

    try:
        checked = check_record(record, datetime.now(timezone.utc))
    except ValueError:
        return None
    if checked is None:
        return None
    trigger = checked.trigger
    return Condition(trigger.id, trigger.agent_id, trigger.schedule_text(), trigger.prompt,
                     trigger.approval_digest())


def _conditions(workspace: Workspace) -> tuple[list[Condition], list[str]]:
    """The workspace's live triggers (conditions and time-based), and lines for files that
    could not be read."""
    from agent_kernel.core.trust import condition_digest
    from agent_kernel.triggers.conditions import Condition as Shape
    from agent_kernel.triggers.model import LIVE
    from agent_kernel.triggers.store import TriggerStore

    records, problems = TriggerStore(workspace).load_all()
    found = []
    for record in records:
        condition, prompt, agent_id = (record.get("condition"), record.get("prompt"),
                                       record.get("agent_id"))
        if record.get("kind") != "conditional" and record.get("status", "active") in LIVE:
            timed = _timed(record)
            if timed is not None:
                found.append(timed)
            continue
        if record.get("status", "active") not in LIVE \
                or not isinstance(condition, dict) or not isinstance(prompt, str) \
                or not isinstance(agent_id, str):
            continue
        try:
            words = Shape.parse(condition).describe()
        except Exception:  # a condition this version cannot read is still listed
            words = "a condition this version cannot read"
        found.append(Condition(str(record.get("id")), agent_id, words, prompt,
                               condition_digest(agent_id, condition, prompt)))
    return found, problems


def _approved(workspace: Workspace, conditions: list[Condition]) -> tuple[list[Condition],
                                                                            str | None]:
    """The triggers whose approval (or signed record of their making) verifies with the
    current key, and why none can (or None). The ledger is read only when it exists (this
    command never makes a workspace)."""
    from agent_kernel.core.ledger import LEDGER_FILE, Ledger
    from agent_kernel.core.trust import ApprovalBook

    ledger = workspace.root / LEDGER_FILE
    if not conditions or not ledger.exists():
        return [], None
    book = ApprovalBook(Ledger(ledger))
    reasons = {c.trigger_id: book.reason(c.digest) for c in conditions}
    approved = [c for c in conditions if reasons[c.trigger_id] is None]
    why = None
    if not approved:
        why = next((r for r in reasons.values() if r and "key" in r), None)
    return approved, why


def _key_words(path: Path) -> tuple[bool, str]:
    """Whether the key is usable, and a sentence saying where it is and how it is kept."""
    import os
    import stat

    from agent_kernel.core.trust import TrustError, load_key
    from agent_kernel.guards import sandbox

    try:
        key = load_key(create=False)
    except TrustError as exc:
        return False, f"not used: {exc}"
    if key is None:
        return True, ("none yet: one is made the first time a trigger is made or a "
                      "condition approved")
    mode = stat.S_IMODE(os.stat(path).st_mode)
    folder = stat.S_IMODE(os.stat(path.parent).st_mode)
    if sandbox.find_bubblewrap() is not None:
        hidden = "its folder is hidden from every command and JavaScript sandbox"
    else:
        hidden = (f"bubblewrap cannot start here ({sandbox.unavailable_reason()}), so commands "
                  "are refused unless you allow unsandboxed commands, which could read it")
    return True, (f"private: a file only you can read (mode {mode:o}) in a folder only you can "
                  f"open (mode {folder:o}); {hidden}")


def status(workspace: Workspace) -> int:
    """Print where the key is, whether it is private, and what in the workspace it signs."""
    from agent_kernel.core.trust import TrustError, check_place, key_path

    path = key_path()
    print(f"Approval key: {path}")
    usable, words = _key_words(path)
    print(f"  {words}")
    try:
        check_place(workspace.root)
    except TrustError as exc:
        usable = False
        print(f"  refused for this workspace: {exc}")
    conditions, problems = _conditions(workspace)
    approved, why = _approved(workspace, conditions) if usable else ([], None)
    print(f"Workspace {workspace.root}: {len(conditions)} saved trigger(s), "
          f"{len(approved)} approved with this key (made or approved by you here).")
    if why:
        print(f"  {why}")
    for problem in problems:
        print(f"  problem: {problem}")
    return 0 if usable else 1


def rotate(workspace: Workspace) -> int:
    """Make a new key; name what needs approving again; record it in the ledger."""
    from agent_kernel.core.ledger import LEDGER_FILE, Ledger, LedgerError
    from agent_kernel.core.trust import TrustError, rotate_key

    conditions, problems = _conditions(workspace)
    approved, why = _approved(workspace, conditions)
    try:
        path = rotate_key()
    except TrustError as exc:
        print(f"error: no new key was made: {exc}")
        return 1
    print(f"A new approval key is in place: {path} (only you can read it; every sandbox "
          "hides its folder).")
    print("Every approval signed with the old key no longer counts, in this workspace and in "
          "every other workspace of yours on this machine; none was signed again with the new "
          "key, since a leaked key may have signed forgeries.")
    if approved:
        print(f"In {workspace.root}, {len(approved)} trigger(s) made or approved with the old "
              "key will need approving again:")
        for condition in approved:
            print(condition.line())
        print("They stay saved and come back as \"needs approval\" the next time a notebook "
              "kernel or `python -m agent_kernel triggers` starts; none runs (nor is a "
              "condition evaluated) until you approve it again in a notebook "
              "(`%agent_triggers approve ID`).")
    elif why:
        print(f"In {workspace.root}, {len(conditions)} saved trigger(s) already needed "
              f"approval before this: {why}")
    else:
        print(f"In {workspace.root}, no approved trigger needs approving again.")
    print("A kernel that is running keeps the triggers it already checked: restart it to "
          "have them asked again now.")
    for problem in problems:
        print(f"  problem: {problem}")
    ledger = workspace.root / LEDGER_FILE
    if workspace.root.is_dir():
        try:
            Ledger(ledger).record_event(
                "approval_key_rotated", agent_id="person", run_id="person",
                needs_approval_again=[c.trigger_id for c in approved])
        except LedgerError as exc:
            print(f"note: the rotation could not be recorded in the ledger: {exc}")
    return 0


def main(args: argparse.Namespace) -> int:
    """Run ``trust status`` or ``trust rotate``."""
    from agent_kernel.core.workspace import Workspace

    workspace = Workspace(args.workspace)
    return rotate(workspace) if args.action == "rotate" else status(workspace)
