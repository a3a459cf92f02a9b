"""Spec 003's ``tools.<name>.enabled``: every tool can be switched off, and a call of a
switched-off tool is refused with 003's words, ``<name> tool is disabled``, before it
runs or asks anyone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tool_helpers import loaded_magics, person, through_the_loop

from agent_kernel import Agent, Settings
from agent_kernel.engine.tool_calls import tool_message

SPEC_003_TOOLS: dict[str, dict[str, Any]] = {
    "echo": {"value": "hi"},
    "read_file": {"path": "a.txt"},
    "write_file": {"path": "a.txt", "content": "x"},
    "bash": {"cmd": "touch MARK"},
    "url_fetch": {"url": "http://127.0.0.1:9/"},
    "web_search": {"q": "weather"},
    "memory_recently": {},
    "todo_update": {"action": "add", "content": "buy tea", "people": []},
    "todo_list": {},
    "contacts_upsert": {"contact_id": "ana", "contact_nickname": "Ana"},
    "contacts_list": {},
    "contacts_candidate_rank": {},
    "contacts_send": {"contact_id": "ana", "message_text": "hello"},
    "plan_create": {"task": "plan my week"},
}
SHAPED = {"read_file", "write_file"}
"""Tools that answer in spec 004's {ok: false, error} (the file tools)."""


@pytest.mark.parametrize("name", sorted(SPEC_003_TOOLS))
async def test_a_switched_off_tool_is_refused_in_spec_003s_words(tmp_path: Path,
                                                                 name: str) -> None:
    agent = Agent(workspace=tmp_path / "ws", settings=Settings(tools_enabled={name: False}))
    asked = person(agent)
    record = await through_the_loop(agent, name, **SPEC_003_TOOLS[name])
    assert not record.success and record.error == f"{name} tool is disabled"
    assert asked == [] and not (tmp_path / "ws" / "files" / "MARK").exists()
    told = tool_message(record, 10_000)["content"]
    if name in SHAPED:
        assert record.result == {"ok": False, "error": f"{name} tool is disabled"}
        assert json.loads(told.split("\n\n", 1)[0]) == record.result
    else:
        assert record.result is None and told.startswith(f"Error: {name} tool is disabled")
    [ledger] = [r for r in agent.ledger.records() if r.get("kind") == "tool_call"]
    assert (ledger["tool_name"], ledger["success"]) == (name, False)


async def test_other_tools_and_a_switch_left_on_still_run(tmp_path: Path) -> None:
    agent = Agent(workspace=tmp_path / "ws",
                  settings=Settings(tools_enabled={"bash": False, "echo": True}))
    record = await through_the_loop(agent, "echo", value="hi")
    assert record.success and record.result == "hi"


def test_the_magic_switches_a_tool_off_for_the_session_agent(tmp_path: Path) -> None:
    with loaded_magics(tmp_path / "ws") as magics:
        assert magics.agent.settings.tools_enabled == {}
        magics.shell.run_line_magic("config", "AgentMagics.tools_enabled = {'bash': False}")
        assert magics.agent.settings.tools_enabled == {"bash": False}
