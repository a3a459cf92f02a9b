"""Standing permissions: "Always allow this tool", seen, listed and revoked.

The person answers approvals from another thread, as a widget click does; the
magic is driven through a real IPython shell and a real kernel (nbclient).
"""

from __future__ import annotations

import io
import threading
from pathlib import Path
from typing import Any

import pytest

from agent_kernel import Agent
from agent_kernel.core.events import Event, Question
from agent_kernel.core.mime_types import RUN_MIME
from agent_kernel.engine.approvals import ALWAYS, APPROVE, DENY
from agent_kernel.views.mime import Transcript, mime_bundle
from agent_kernel.views.text import TextView


def _agent(tmp_path: Path) -> Agent:
    agent = Agent(workspace=tmp_path / "ws")
    agent.questions.attach_answerer()
    return agent


def _answer(agent: Agent, answers: list[str]) -> list[Question]:
    """Answer each approval with the next of ``answers`` from another thread."""
    seen: list[Question] = []

    def on_event(event: Event) -> None:
        if isinstance(event, Question):
            seen.append(event)
            threading.Timer(0.05, agent.questions.answer,
                            args=(event.question_id, answers[len(seen) - 1])).start()

    agent.bus.subscribe(on_event)
    return seen


def _records(agent: Agent, kind: str) -> list[dict[str, Any]]:
    return [r for r in agent.ledger.records() if r.get("kind") == kind]


def _watch(agent: Agent) -> dict[str, Transcript]:
    """One transcript per run (by run id), fed from the bus as the notebook views are."""
    transcripts: dict[str, Transcript] = {}

    def on_event(event: Event) -> None:
        if event.run_id.startswith("run_"):
            transcripts.setdefault(event.run_id, Transcript()).feed(event)

    agent.bus.subscribe(on_event)
    return transcripts


async def test_always_allow_is_a_standing_permission_on_record_and_in_the_run(
        tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    seen = _answer(agent, [ALWAYS])
    runs = _watch(agent)
    first = await agent.arun("write file a.txt with one")
    terminal = io.StringIO()
    TextView(agent.bus, terminal)  # the CLI's and terminal IPython's transcript
    second = await agent.arun("write file b.txt with two")

    assert len(seen) == 1, "the second write_file ran without asking"
    assert (agent.workspace.root / "files" / "b.txt").read_text() == "two"
    [permission] = agent.approvals.standing()
    assert (permission.tool, permission.run_id) == ("write_file", first.run_id)
    [granted] = _records(agent, "permission_granted")
    assert (granted["tool_name"], granted["agent_id"], granted["run_id"], granted["by"]) == (
        "write_file", agent.agent_id, first.run_id, "user")
    assert granted["timestamp"]
    asked, standing = _records(agent, "approval")
    assert (asked["source"], asked["answer"]) == ("user", ALWAYS)
    assert (standing["run_id"], standing["source"]) == (second.run_id, "always")
    assert standing["standing_since"] == granted["timestamp"]
    assert standing["permission_record_id"] == granted["record_id"]

    state = runs[second.run_id].state()
    assert state["status"] == "done"
    [card] = [e for e in state["entries"] if e["kind"] == "tool"]
    assert card["state"] == "ok" and card["approval"]["source"] == "standing"
    assert card["approval"]["answer"].startswith(f"{ALWAYS} (standing permission since ")
    bundle = mime_bundle(runs[second.run_id])
    assert bundle[RUN_MIME]["entries"] == state["entries"]
    assert "allowed by your standing permission" in bundle["text/html"]
    assert "approval: allowed by your standing permission" in bundle["text/plain"]
    assert "[approval] write_file allowed by your standing permission · ledger rec_" in (
        terminal.getvalue())
    # The first run shows the click itself, not a standing permission.
    [asked_card] = [e for e in runs[first.run_id].state()["entries"] if e["kind"] == "tool"]
    assert asked_card["approval"]["source"] == "user"


async def test_revoke_makes_the_tool_ask_again(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    seen = _answer(agent, [ALWAYS, DENY])
    await agent.arun("write file a.txt with one")
    [revoked] = agent.approvals.revoke("write_file")
    assert revoked.tool == "write_file" and agent.approvals.standing() == []
    [record] = _records(agent, "permission_revoked")
    assert (record["tool_name"], record["by"], record["agent_id"]) == (
        "write_file", "user", agent.agent_id)
    assert record["granted_record_id"] == _records(agent, "permission_granted")[0]["record_id"]

    result = await agent.arun("write file b.txt with two")
    assert [q.details["tool"] for q in seen if q.details] == ["write_file", "write_file"]
    assert not result.tool_calls[0].success
    assert not (agent.workspace.root / "files" / "b.txt").exists()
    assert agent.approvals.revoke("write_file") == [], "nothing left to revoke"
    assert len(_records(agent, "permission_revoked")) == 1
    assert agent.ledger.verify().ok


async def test_revoke_all_and_a_new_agent_starts_with_none(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    _answer(agent, [ALWAYS, ALWAYS])
    await agent.arun("write file a.txt with one")
    await agent.arun("run command echo hi")
    assert [p.tool for p in agent.approvals.standing()] == ["write_file", "bash"]
    again = Agent(workspace=tmp_path / "ws")  # the next kernel, same workspace and ledger
    assert again.approvals.standing() == [], "a record is history, not a grant"
    assert len(_records(again, "permission_granted")) == 2
    assert [p.tool for p in agent.approvals.revoke("all")] == ["write_file", "bash"]
    assert agent.approvals.standing() == [] and agent.approvals.revoke("all") == []
    assert [r["tool_name"] for r in _records(agent, "permission_revoked")] == [
        "write_file", "bash"]


async def test_a_call_that_fails_under_a_standing_permission_is_not_called_denied(
        tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    _answer(agent, [ALWAYS])
    runs = _watch(agent)
    await agent.arun("write file sub/a.txt with one")
    # allowed without asking, then refused by the tool itself (sub is a folder: a path
    # outside the workspace is refused before any approval, standing or not)
    failed = await agent.arun("write file sub with nope")
    state = runs[failed.run_id].state()
    [card] = [e for e in state["entries"] if e["kind"] == "tool"]
    assert card["state"] == "failed" and card["approval"]["source"] == "standing"
    assert state["status"] == "done_with_failures", "the person did not deny it"


def test_the_magic_lists_and_revokes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import asyncio

    from IPython.core.interactiveshell import InteractiveShell

    from agent_kernel.notebook.magics import current

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "agent_kernel")
    shell.run_line_magic("agent_config", f"--workspace {tmp_path / 'ws'}")
    shell.run_line_magic("agent_config", "--permissions")
    assert "No standing permissions" in capsys.readouterr().out

    agent = current().agent
    agent.questions.attach_answerer()
    _answer(agent, [ALWAYS, APPROVE])
    first = asyncio.run(agent.arun("write file a.txt with one"))
    capsys.readouterr()
    shell.run_line_magic("agent_config", "")
    assert "standing permissions: 1 (%agent_config --permissions)" in capsys.readouterr().out
    shell.run_line_magic("agent_config", "--permissions")
    listed = capsys.readouterr().out
    assert "Standing permissions (1;" in listed
    assert "write_file · since " in listed and f"granted in run {first.run_id}" in listed

    shell.run_line_magic("agent_config", "--revoke bash")
    assert ("bash has no standing permission, so there is nothing to revoke"
            in capsys.readouterr().out)
    shell.run_line_magic("agent_config", "--revoke write_file --permissions")
    out = capsys.readouterr().out
    assert "Revoked the standing permission of write_file: it asks before it runs again." in out
    assert "No standing permissions" in out
    assert [r["tool_name"] for r in _records(agent, "permission_revoked")] == ["write_file"]
    shell.run_line_magic("agent_config", "--revoke all")
    assert "There were no standing permissions to revoke." in capsys.readouterr().out
    shell.run_line_magic("agent_config", "")
    assert "standing permissions: 0" in capsys.readouterr().out


@pytest.mark.kernel
def test_the_magic_in_a_kernel(run_notebook: Any, output_text: Any, tmp_path: Path) -> None:
    nb = run_notebook([
        "%load_ext agent_kernel\n%agent_config --permissions",
        "import agent_kernel.notebook.magics as m\n"
        "m.current().agent.approvals.grant('write_file', run_id='run_by_hand')\n"
        "%agent_config",
        "%%agent --wait\nwrite file notes.txt with hello",
        "%agent_config --permissions",
        "%agent_config --revoke write_file",
        "print([r['kind'] for r in m.current().agent.ledger.records()"
        " if r['kind'].startswith('permission')])",
    ], cwd=tmp_path, timeout=90)
    texts = [output_text(cell) for cell in nb.cells]
    assert "No standing permissions" in texts[0]
    assert "standing permissions: 1" in texts[1]
    run_html = "".join(o.get("data", {}).get("text/html", "") for o in nb.cells[2].outputs)
    assert "allowed by your standing permission" in run_html  # headless, yet it ran
    assert "write_file · since" in texts[3] and "granted in run run_by_hand" in texts[3]
    assert "Revoked the standing permission of write_file" in texts[4]
    assert "['permission_granted', 'permission_revoked']" in texts[5]
