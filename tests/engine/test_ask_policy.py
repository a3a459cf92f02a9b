"""Approvals by effect (issue 25, item 3): ask only where an approval protects something.

Every call goes through the real tool-call path (``tool_calls.execute``) with a person
attached who answers Approve, so a question that should never be asked is seen: a write
no approval could allow is refused first, in words; ``run_javascript`` (a sandbox with no
file system and no network) runs without asking unless the person chose otherwise; code
for the kernel asks whatever anyone chose.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tool_helpers import loaded_magics, person, through_the_loop

from agent_kernel import Agent, Settings
from agent_kernel.engine import ask_policy


@pytest.mark.parametrize("path", ["../ledger.jsonl", "file_state_dir/../ledger.jsonl",
                                  "notes/.env", "../triggers.json", "/etc/passwd"])
async def test_a_write_no_approval_could_allow_is_refused_before_asking(
        tmp_path: Path, path: str) -> None:
    agent = Agent(workspace=tmp_path / "ws")
    asked = person(agent)
    record = await through_the_loop(agent, "write_file", path=path, content="forged")
    assert asked == []
    assert not record.success
    assert record.summary is not None and record.summary.startswith(
        "Refused without asking you: ")
    for jargon in ("deny_paths pattern", "ToolError", "PermissionError"):
        assert jargon not in record.summary and jargon not in (record.error or "")
    assert not [r for r in agent.ledger.records() if r.get("kind") == "approval"]


async def test_the_refusal_of_a_protected_file_says_what_it_protects(tmp_path: Path) -> None:
    agent = Agent(workspace=tmp_path / "ws")
    person(agent)
    record = await through_the_loop(agent, "write_file", path="../ledger.jsonl",
                                    content="forged")
    assert record.summary == ("Refused without asking you: '../ledger.jsonl' is a protected "
                              "file (the ledger, the record of what the agent did); the agent "
                              "may not read or write it.")
    lines = (tmp_path / "ws" / "ledger.jsonl").read_text().splitlines()
    assert all(json.loads(line).get("hash") for line in lines)  # no line the model wrote


async def test_too_much_text_is_refused_before_asking(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_kernel.tools import files

    monkeypatch.setattr(files.LIMITS, "write_max_bytes", 10)
    agent = Agent(workspace=tmp_path / "ws")
    asked = person(agent)
    record = await through_the_loop(agent, "write_file", path="a.txt", content="x" * 11)
    assert asked == [] and not record.success
    assert "11 bytes" in (record.summary or "")


async def test_a_write_that_may_happen_still_asks(tmp_path: Path) -> None:
    agent = Agent(workspace=tmp_path / "ws")
    asked = person(agent)
    record = await through_the_loop(agent, "write_file", path="notes.txt", content="hi")
    assert record.success and len(asked) == 1
    assert (tmp_path / "ws" / "files" / "notes.txt").read_text() == "hi"


async def test_bash_in_a_protected_folder_is_refused_before_asking(tmp_path: Path) -> None:
    agent = Agent(workspace=tmp_path / "ws")
    asked = person(agent)
    record = await through_the_loop(agent, "bash", cmd="ls", cwd="..")
    assert asked == [] and not record.success
    assert (record.summary or "").startswith("Refused without asking you: ")


async def test_run_javascript_runs_without_asking_by_default(tmp_path: Path) -> None:
    agent = Agent(workspace=tmp_path / "ws")
    asked = person(agent)
    record = await through_the_loop(agent, "run_javascript", code="return 6 * 7")
    assert asked == []
    assert record.success and record.result == 42


async def test_run_javascript_asks_when_the_person_chose_so(tmp_path: Path) -> None:
    agent = Agent(workspace=tmp_path / "ws",
                  settings=Settings(ask_before={"run_javascript": True}))
    asked = person(agent, "Deny")
    record = await through_the_loop(agent, "run_javascript", code="return 6 * 7")
    assert len(asked) == 1 and not record.success
    assert record.summary == "You denied run_javascript"


async def test_code_for_the_kernel_asks_whatever_was_chosen(tmp_path: Path) -> None:
    chosen = {name: False for name in ("run_python", "bash", "run_command", "write_file",
                                       "run_cell", "edit_cell", "http_request")}
    agent = Agent(workspace=tmp_path / "ws", settings=Settings(ask_before=chosen))
    for name in chosen:
        if name not in ("run_cell", "edit_cell"):  # they ask from inside, seeing the cell
            tool = agent.registry.get(name)
            assert ask_policy.asks(tool, {"method": "POST", "url": "http://x"}, chosen), name
        assert ask_policy.refusal_to_skip(name) is not None
    asked = person(agent, "Deny")
    record = await through_the_loop(agent, "write_file", path="a.txt", content="x")
    assert len(asked) == 1 and not record.success
    record = await through_the_loop(agent, "run_python", code="print('hi')")
    assert len(asked) == 2 and record.summary == "You denied run_python"


def test_the_magic_changes_the_table_and_the_ledger_keeps_it(tmp_path: Path) -> None:
    with loaded_magics(tmp_path / "ws") as magics:
        refused = magics.choose_asking(None, "run_python")
        assert refused.startswith("agent-kernel: nothing changed. run_python always asks")
        assert magics.ask_before == {}
        said = magics.choose_asking("run_javascript", None)
        assert "run_javascript: asks (your choice)" in said
        assert magics.agent.settings.ask_before == {"run_javascript": True}
        magics.choose_asking(None, "run_javascript")
        assert magics.agent.settings.ask_before == {"run_javascript": False}
        changes = [(r["tool_name"], r["asks"], r["by"]) for r in magics.agent.ledger.records()
                   if r.get("kind") == "ask_policy_changed"]
        assert changes == [("run_javascript", True, "user"), ("run_javascript", False, "user")]


def test_the_table_says_why_for_every_row() -> None:
    for rule in ask_policy.POLICY.values():
        assert rule.why and not rule.why.endswith(".")
    skippable = {r.tool for r in ask_policy.POLICY.values() if r.may_skip}
    assert skippable == {"run_javascript"}
    assert ask_policy.refusal_to_skip("run_javascript") is None
    said = ask_policy.describe({"run_javascript": True})
    assert "run_javascript: asks (your choice)" in said
    assert "run_python: asks — it runs code in the kernel" in said
