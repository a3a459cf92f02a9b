"""Triggers in a real kernel (nbclient): firing while the kernel sits idle between cells,
their runs in the ledger, restoring in a new kernel on the same workspace, and the
``03-triggers`` notebook executed end to end.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest
from kernel_runs import IdleKernel, eventually, ledger_records, outputs_text

from agent_kernel.core.ledger import Ledger

pytestmark = pytest.mark.kernel

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "03-triggers.ipynb"


def test_trigger_fires_while_idle_and_a_new_kernel_restores_it(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    first = IdleKernel(workspace, tmp_path)
    with first.client.setup_kernel(env=first.env):
        out = first.run("%load_ext agent_kernel\n%agent --wait every 2 seconds check the build")
        assert "Scheduled it as" in out
        made = eventually(lambda: ledger_records(workspace, "trigger_created"))
        assert len(made) == 1
        trigger_id = made[0]["trigger_id"]
        before = len(ledger_records(workspace, "trigger_fired"))
        time.sleep(6.5)  # the kernel is idle: no cell is running
        fired = [r for r in ledger_records(workspace, "trigger_fired")
                 if r["trigger_id"] == trigger_id]
        assert len(fired) - before >= 2, fired
        runs = {r["run_id"]: r for r in ledger_records(workspace, "trigger_run")}
        finished = [runs[r["run_id"]] for r in fired if r["run_id"] in runs]
        assert len(finished) >= 2 and all(r["status"] == "ok" for r in finished)
        run_ids = {r["run_id"] for r in finished}
        model_calls = [r for r in Ledger(workspace / "ledger.jsonl").records()
                       if r.get("run_id") in run_ids and r["kind"] == "trigger_run"]
        assert model_calls
        listed = first.run("%agent_triggers --text")
        assert trigger_id in listed and "every 2 s" in listed
    assert (workspace / "triggers" / f"{trigger_id}.json").exists()

    second = IdleKernel(workspace, tmp_path)
    with second.client.setup_kernel(env=second.env):
        out = second.run("%load_ext agent_kernel")
        # in words: the trigger by what it asks and when; its id only in a magic to type
        assert "Restored 1 trigger(s)" in out and "(every 2 s)" in out
        assert trigger_id not in out
        restored_at = len(ledger_records(workspace, "trigger_fired"))
        time.sleep(4.5)
        assert len(ledger_records(workspace, "trigger_fired")) - restored_at >= 1
        assert ledger_records(workspace, "trigger_restored")[-1]["trigger_id"] == trigger_id
        out = second.run(f"%agent_triggers cancel {trigger_id}")
        assert "Cancelled: " in out and "(every 2 s)." in out and trigger_id not in out
    assert not (workspace / "triggers" / f"{trigger_id}.json").exists()


def test_triggers_notebook_runs(tmp_path: Path, run_notebook: Callable[..., Any]) -> None:
    workspace = tmp_path / "ws"
    nb = run_notebook(NOTEBOOK, timeout=120, cwd=tmp_path,
                      env={"AGENT_KERNEL_WORKSPACE": str(workspace)})
    code = [c for c in nb.cells if c.cell_type == "code"]
    texts = [outputs_text(c) for c in code]
    assert not any("Traceback" in t or "Error:" in t.split("\n")[0] for t in texts), texts
    everything = "\n".join(texts)
    assert "every 2 s: check the build" in everything
    assert "The echo tool returned: the one-shot fired" in everything or \
        "runs 1" in everything
    assert "(1, 'ok'" in everything  # the conditional trigger fired once
    assert "not approved" in everything  # the model's condition needed approval
    assert "cancelling" in everything
    assert "trigger_fired" in everything
    fired = ledger_records(workspace, "trigger_fired")
    assert len(fired) >= 3


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def test_a_live_trigger_panel_saved_without_the_extension_reopens_as_text(
        tmp_path: Path, run_notebook: Callable[..., Any]) -> None:
    """Someone can click, our extension is absent (ipywidgets' ground): the panel and its
    controls are text, so the saved file holds no widget view to reopen as "Error
    displaying widget: model not found"; the words say how to cancel the live trigger."""
    workspace = tmp_path / "ws"
    nb = run_notebook(["%load_ext agent_kernel\n%config AgentMagics.interactive = True",
                       "%%agent --wait\nremind me every 10 minutes to drink water"],
                      timeout=120, cwd=tmp_path, env={"AGENT_KERNEL_WORKSPACE": str(workspace)})
    saved = tmp_path / "saved.ipynb"
    nbformat.write(nb, saved)
    reopened = nbformat.read(saved, as_version=4)
    outputs = [o for c in reopened.cells for o in c.get("outputs", [])]
    assert not [o for o in outputs if WIDGET_VIEW in o.get("data", {})]
    [trigger] = ledger_records(workspace, "trigger_created")
    controls = [o["data"] for o in outputs  # the controls' words, apart from the panel
                if "%agent_triggers cancel" in o.get("data", {}).get("text/plain", "")
                and "agent-kernel-outcome" in o["data"].get("text/html", "")]
    assert len(controls) == 1, [o.get("data", {}).get("text/plain") for o in outputs]
    words = controls[0]
    assert set(words) == {"text/plain", "text/html"}
    assert words["text/plain"] == ("every 10 min · remind me to drink water — cancel with "
                                   f"%agent_triggers cancel {trigger['trigger_id']}")
    assert f"%agent_triggers cancel {trigger['trigger_id']}" in words["text/html"]
    panel = [o["data"] for o in outputs if "agent-kernel-triggers" in
             o.get("data", {}).get("text/html", "")]
    assert panel and "drink water" in panel[0]["text/plain"]
    # the panel's text leads with the schedule and the prompt; the id only in the magic
    assert ("  every 10 min: remind me to drink water [recurring, active] — to cancel it: "
            f"%agent_triggers cancel {trigger['trigger_id']}") in panel[0]["text/plain"]
