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
