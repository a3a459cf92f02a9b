"""``python -m agent_kernel verify --workspace DIR``: check the ledger's hash chain."""

from __future__ import annotations

import argparse
from typing import Any

from ..ledger import LEDGER_FILE, Ledger
from ..workspace import Workspace


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the ``verify`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "verify", help="re-derive the ledger's hash chain and name the first bad record")
    parser.add_argument("--workspace", default=None, help="workspace folder (default .agent/)")
    return parser


def main(args: argparse.Namespace) -> int:
    """Print the verdict; exit 1 when the chain is broken."""
    ledger = Ledger(Workspace(args.workspace).root / LEDGER_FILE)
    verdict = ledger.verify()
    print(verdict)
    return 0 if verdict.ok else 1
