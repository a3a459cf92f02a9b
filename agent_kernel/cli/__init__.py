"""Subcommands of ``python -m agent_kernel``; see ``__main__.py``."""

from __future__ import annotations

import argparse
import os
import sys


def leave(code: int) -> int:
    """Return ``code``; run as ``python -m agent_kernel`` or ``agent-kernel``, exit at once.

    Native libraries' background threads (LanceDB's event loop) can abort the
    interpreter's finalization; by the time a command returns every ledger
    record is fsync'd and every table write committed, so the process leaves
    without it. Called in-process (tests, other code), it only returns.
    """
    main_spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    script = os.path.basename(sys.argv[0]) == "agent-kernel"  # the installed script
    if script or (main_spec is not None and main_spec.name == "agent_kernel.__main__"):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


EXAMPLES = argparse.RawDescriptionHelpFormatter


def examples(*lines: str) -> str:
    """An ``examples:`` epilog for a subcommand's ``--help``."""
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)
