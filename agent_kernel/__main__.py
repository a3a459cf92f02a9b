"""The command line: ``python -m agent_kernel run "PROMPT" --model demo --workspace DIR``.

Subcommands are small modules; each adds its parser in ``add_parser`` and
does its work in ``main(args)``, so a feature brings its own command without
touching the others.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# (module, subcommand) pairs; each module defines add_parser(subparsers) and main(args) -> int.
COMMANDS = ("agent_kernel.cli.run", "agent_kernel.cli.ledger", "agent_kernel.cli.triggers",
            "agent_kernel.cli.memory", "agent_kernel.cli.trust", "agent_kernel.cli.telegram")


def program_name() -> str:
    """``agent-kernel`` when run as the installed script, else ``python -m agent_kernel``."""
    return "agent-kernel" if os.path.basename(sys.argv[0]) == "agent-kernel" else \
        "python -m agent_kernel"


def build_parser() -> argparse.ArgumentParser:
    """The CLI's argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog=program_name(), description="agent-kernel from the command line",
        epilog="Options may come before or after the subcommand and its action. "
               "`SUBCOMMAND --help` shows examples.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        module = importlib.import_module(name)
        module.add_parser(sub).set_defaults(_main=module.main)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv``, run the chosen subcommand, and (as the process) leave at once."""
    from agent_kernel.cli import leave

    return leave(_command(argv))


def _command(argv: list[str] | None) -> int:
    from agent_kernel.cli.grammar import reorder

    parser = build_parser()
    args = parser.parse_args(reorder(list(sys.argv[1:] if argv is None else argv), parser))
    from agent_kernel.core.workspace import WorkspaceError

    try:
        return int(args._main(args) or 0)
    except WorkspaceError as exc:  # a linked default .agent: said in words, no traceback
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return _reader_left()


def _reader_left() -> int:
    """The reader of our output left (``| head -1``): stop quietly, as CLIs do. Python
    flushes stdout again at exit, which would raise anew, so stdout goes to /dev/null
    first (the recipe of Python's signal docs); 141 is a shell's code for SIGPIPE."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 141


if __name__ == "__main__":
    sys.exit(main())
