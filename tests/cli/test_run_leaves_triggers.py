"""``python -m agent_kernel run`` and the workspace's saved triggers (issue 25, item 10).

A one-shot prompt saves the triggers it makes and says how they will run; it never runs,
skips or cancels the saved ones as a side effect (before, a ``list_tasks`` in a one-shot
run restored them: a trigger due in the past was marked missed for good, one due during
the run fired and was cancelled when the command ended). In-process, with the demo model.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from agent_kernel.__main__ import main as cli


def _kinds(workspace: Path) -> list[str]:
    return [json.loads(line).get("kind") for line in
            (workspace / "ledger.jsonl").read_text().splitlines()]


@pytest.mark.timeout(60)
def test_a_one_shot_run_leaves_the_saved_triggers_alone(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    ws = tmp_path / "ws"
    assert cli(["run", "in 1 second remind me to stretch", "--workspace", str(ws)]) == 0
    out = capsys.readouterr().out
    assert f"Saved 1 trigger in {ws / 'triggers'}; none runs from this command" in out
    [saved] = list((ws / "triggers").glob("*.json"))
    before = saved.read_text()
    time.sleep(1.5)  # now it is overdue
    assert cli(["run", "list my tasks", "--workspace", str(ws)]) == 0
    out = capsys.readouterr().out
    assert "Restored" not in out and "skipped" not in out
    assert saved.read_text() == before  # still active, still due: the next runner decides
    kinds = _kinds(ws)
    for kind in ("trigger_missed", "trigger_fired", "trigger_cancelled", "trigger_skipped"):
        assert kind not in kinds, kind
    assert json.loads(before)["status"] == "active"


@pytest.mark.timeout(60)
def test_the_triggers_command_names_the_process_that_holds_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import os
    import subprocess
    import sys

    ws = tmp_path / "ws"
    assert cli(["run", "in 60 seconds remind me to stretch", "--workspace", str(ws)]) == 0
    capsys.readouterr()
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\n"
         "sys.argv = ['/usr/lib/ipykernel_launcher.py', '-f', 'kernel-1.json']\n"
         "from agent_kernel.core.workspace import Workspace\n"
         "from agent_kernel.triggers.store import TriggerStore\n"
         f"lock = TriggerStore(Workspace({str(ws)!r})).claim('agent')\n"
         "print('held' if lock else 'not held', flush=True)\n"
         "time.sleep(60)\n"],
        stdout=subprocess.PIPE, text=True, env={**os.environ})
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        code = cli(["triggers", "--workspace", str(ws), "--duration", "0.1"])
        out = capsys.readouterr().out
        assert code == 1, out
        assert (f"Not running the triggers of agent 'agent': a Jupyter kernel (process "
                f"{holder.pid}, since ") in out
        assert "Running the triggers" not in out and "Restored" not in out
    finally:
        holder.kill()
        holder.wait()
    assert cli(["triggers", "--workspace", str(ws), "--duration", "0.1"]) == 0
    assert "Restored 1 trigger(s)" in capsys.readouterr().out  # free again: it runs here
