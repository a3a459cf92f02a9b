"""``python -m agent_kernel verify --workspace DIR``: check, heal and anchor the ledger.

``verify`` re-derives the hash chain, checks the size and SHA-256 of every blob
in ``ledger-blobs/`` the chain names, and prints the verdict and the head (the
last record's hash). ``--repair`` first moves a torn or unreadable tail to the
quarantine file and removes partial blob files of writes that died, and says
what it did; it never removes a blob. ``--anchor HASH`` also fails unless a
record with that hash is in the chain: the chain alone cannot show that the
whole file was emptied or replaced, a hash kept somewhere else can.
Exit code 0 when the ledger verifies, 1 when it does not, when the anchor is not found
("anchor not found": the chain itself verified) or when the folder holds no ledger.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from agent_kernel.cli import EXAMPLES, examples

if TYPE_CHECKING:
    from agent_kernel.cli.grammar import Subparsers


def add_parser(sub: Subparsers) -> argparse.ArgumentParser:
    """Add the ``verify`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "verify", help="re-derive the ledger's hash chain, check its blobs and name the first "
                       "bad line",
        formatter_class=EXAMPLES,
        epilog=examples("verify --workspace .agent", "verify --repair",
                        "verify --anchor 3f2a...  # the full head hash printed earlier"))
    parser.add_argument("--workspace", default=None, help="workspace folder (default .agent/)")
    parser.add_argument("--repair", action="store_true",
                        help="first move a torn or unreadable tail to the quarantine file "
                             "and remove partial blob files (never a blob)")
    parser.add_argument("--anchor", metavar="HASH", default=None,
                        help="a head hash kept elsewhere; fail unless it is in the chain")
    return parser


def main(args: argparse.Namespace) -> int:
    """Print what repair moved (with ``--repair``), the verdict and the head."""
    from agent_kernel.core.ledger import (  # not for other commands
        GENESIS,
        LEDGER_FILE,
        Ledger,
        LedgerError,
    )
    from agent_kernel.core.workspace import Workspace

    root = Workspace(args.workspace).root
    ledger = Ledger(root / LEDGER_FILE)
    if not ledger.path.exists():
        where = "does not exist" if not root.exists() else "holds no ledger (ledger.jsonl)"
        print(f"no workspace to verify: {root} {where}. Name the workspace folder with "
              "--workspace DIR (by default .agent/ in this folder, or "
              "$AGENT_KERNEL_WORKSPACE).")
        return 1
    if args.repair:
        try:
            print(ledger.repair())
        except LedgerError as exc:
            print(f"repair failed: {exc}")
    verdict = ledger.verify(anchor=args.anchor)
    print(verdict)
    if verdict.head == GENESIS:
        print("head: none (no record verified)")
    elif verdict.ok or verdict.anchor_missing:
        print(f"head: {verdict.head} (record {verdict.count}); keep it elsewhere and check "
              "later with --anchor")
    else:
        print(f"last record that verified: {verdict.head} (record {verdict.count})")
    return 0 if verdict.ok else 1
