"""Subcommands of ``python -m agent_kernel``; see ``__main__.py``."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import sys
import threading


def leave(code: int) -> int:
    """Return ``code``; run as ``python -m agent_kernel`` or ``agent-kernel``, exit at once.

    Once a command is done, the interpreter's own ending costs seconds where litellm
    was imported (tearing down thousands of modules: 1.4-3 s on a 2-core machine), and
    native libraries' background threads (LanceDB's event loop) can abort it. So the
    process ends the way the interpreter begins to: it joins the threads that are not
    daemons and runs every ``atexit`` handler (the history writer's flush, the litellm
    warm-up's stop, litellm's logging flush, ``logging.shutdown``), flushes the output,
    and then leaves without the teardown (ledger records are fsync'd as written). Called
    in-process (tests, other code), it only returns.
    """
    main_spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    script = os.path.basename(sys.argv[0]) == "agent-kernel"  # the installed script
    if script or (main_spec is not None and main_spec.name == "agent_kernel.__main__"):
        _flush()
        join_threads = getattr(threading, "_shutdown", None)  # what finalization does first
        if join_threads is not None:
            join_threads()
        atexit._run_exitfuncs()
        _flush()
        os._exit(code)
    return code


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):  # gone or closed
            stream.flush()


EXAMPLES = argparse.RawDescriptionHelpFormatter


def examples(*lines: str) -> str:
    """An ``examples:`` epilog for a subcommand's ``--help``."""
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)
