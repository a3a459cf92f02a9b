"""Subcommands of ``python -m agent_kernel``; see ``__main__.py``."""

from __future__ import annotations

import os
import sys


def leave(code: int) -> int:
    """Return ``code``; when run as ``python -m agent_kernel``, exit at once with it.

    Native libraries' background threads (LanceDB's event loop) can abort the
    interpreter's finalization; by the time a command returns every ledger
    record is fsync'd and every table write committed, so the process leaves
    without it. Called in-process (tests, other code), it only returns.
    """
    main_spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if main_spec is not None and main_spec.name == "agent_kernel.__main__":
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code
