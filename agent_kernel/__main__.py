"""The command line: ``python -m agent_kernel run "PROMPT" --model demo --workspace DIR``.

Subcommands are small modules; each adds its parser in ``add_parser`` and
does its work in ``main(args)``, so a feature brings its own command without
touching the others.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# (module, subcommand) pairs; each module defines add_parser(subparsers) and main(args) -> int.
COMMANDS = ("agent_kernel.cli.run", "agent_kernel.cli.ledger", "agent_kernel.cli.triggers",
            "agent_kernel.cli.memory")


def build_parser() -> argparse.ArgumentParser:
    """The CLI's argument parser with every subcommand."""
    parser = argparse.ArgumentParser(prog="python -m agent_kernel",
                                     description="agent-kernel from the command line")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        module = importlib.import_module(name)
        module.add_parser(sub).set_defaults(_main=module.main)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the chosen subcommand."""
    args = build_parser().parse_args(argv)
    return int(args._main(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
