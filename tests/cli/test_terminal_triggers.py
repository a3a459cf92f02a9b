"""Triggers fire in terminal IPython (issue 25, item 10).

Terminal IPython runs no asyncio loop between prompts, so a trigger made by ``%agent``
used to be listed as active with a next run in the past, and never fired. Here a real
``ipython`` (prompt_toolkit, not ``--simple-prompt``) in a pseudo-terminal makes a
trigger 2 s ahead and then only waits at its prompt: the trigger fires and its run is
printed above the prompt, from its first line to its last.
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
import time
from pathlib import Path

import pexpect
import pytest

_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


@pytest.mark.timeout(120)
def test_a_trigger_made_in_terminal_ipython_fires_while_the_prompt_waits(
        tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    env = dict(os.environ, AGENT_KERNEL_WORKSPACE=str(workspace), TERM="xterm",
               PROMPT_TOOLKIT_NO_CPR="1")
    child = pexpect.spawn(sys.executable, ["-m", "IPython", "--no-banner", "--colors=NoColor",
                                           "--no-confirm-exit"],
                          cwd=str(tmp_path), env=env, encoding="utf-8", timeout=60,
                          dimensions=(50, 200))
    output = io.StringIO()
    child.logfile_read = output
    try:
        child.expect_exact("In [1]")
        child.sendline("%load_ext agent_kernel")
        child.expect_exact("In [2]")
        child.sendline("%agent in 2 seconds remind me to stretch")
        # the reply says who runs it: this session, not the CLI
        child.expect_exact("while this IPython session is open", timeout=20)
        child.expect_exact("In [3]")  # the run is over; only the prompt waits now
        assert "agent_kernel triggers" not in output.getvalue()
        made = time.monotonic()
        child.expect(r">>> \[demo\] remind me to stretch \(trigger sch_\w+\)", timeout=20)
        child.expect_exact("(offline demo model) Reminder: stretch.", timeout=10)
        child.expect_exact("[done · ", timeout=10)
        assert time.monotonic() - made < 15
        child.sendline("exit")
        child.expect(pexpect.EOF)
    finally:
        if child.isalive():
            child.terminate(force=True)
    text = _ESCAPES.sub("", output.getvalue())
    assert text.count("Reminder: stretch.") == 1, text
    kinds = [json.loads(line).get("kind") for line in
             (workspace / "ledger.jsonl").read_text().splitlines()]
    assert "trigger_fired" in kinds and "trigger_run" in kinds, kinds
