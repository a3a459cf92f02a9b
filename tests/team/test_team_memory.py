"""A team shares the person's memory (spec 000's Teller → memory → Planner).

The Teller remembers; the Planner, in the same team's workspace, finds it with every
memory and history tool it has (``recall``, ``search_memory``, ``memory_recently``,
``get_recent_history``, ``get_history_by_time``), and reads the person's conversation
with the Teller, not its own runs. What each role may write stays the matrix's: the
Planner may not ``remember``. Real LanceDB and the default embedding model.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

from scripted_server import Call, Message
from test_team import RoleModel, last, make_team

from agent_kernel.team.roles import PLANNER, TELLER

FACT = "The person's cat is called Miso and eats only salmon."
PROMPT = "Please remember my cat's name, then plan a birthday for her."
SECOND = "And now a picnic."
READS = ["recall", "search_memory", "memory_recently", "get_recent_history",
         "get_history_by_time"]


def planner_calls() -> list[Call]:
    hour_ago = (datetime.now(timezone.utc) - timedelta(hours=1)).isoformat()
    arguments: dict[str, dict[str, Any]] = {
        "recall": {"query": "what is the cat called"},
        "search_memory": {"query": "Miso salmon"},
        "memory_recently": {"include_body": True},
        "get_recent_history": {"count": 10},
        "get_history_by_time": {"after": hour_ago},
    }
    return [Call(name, json.dumps(arguments[name])) for name in READS] + [
        Call("remember", json.dumps({"content": "the Planner's own note"}))]


def script(role: str, body: dict[str, Any]) -> Message:
    said = last(body)
    if role == TELLER:
        if said["role"] == "user" and said["content"] == SECOND:
            return Message(calls=[Call("delegate", json.dumps({"prompt": "plan the picnic"}))])
        if said["role"] == "user" and not said["content"].startswith("The work"):
            return Message(calls=[Call("remember", json.dumps({"content": FACT}))])
        if said["role"] == "tool" and "memory_id" in said["content"]:  # remembered: hand on
            return Message(calls=[Call("delegate", json.dumps({"prompt": "plan the party"}))])
        if said["role"] == "user":
            return Message(calls=[Call("reply", json.dumps({"text": "Planned."}))])
        return Message(text="On it.")
    assert role == PLANNER, role
    if said["role"] == "user" and said["content"] == "plan the picnic":
        return Message(calls=[Call("get_recent_history", '{"count": 50}')])
    if said["role"] == "user":
        return Message(calls=planner_calls())
    return Message(text="A salmon party for Miso.")


async def test_the_planner_reads_what_the_teller_remembered_and_the_persons_talk(tmp_path):
    with RoleModel(script) as model:
        team = make_team(model, tmp_path / "ws")
        result = await team.arun(PROMPT)
        assert not model.hook_errors, model.hook_errors
    assert result.status == "ok", result.error

    planner = model.by_role(PLANNER)[-1]["messages"]
    answers = {m["tool_call_id"]: m["content"] for m in planner if m["role"] == "tool"}
    calls = [c for m in planner if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    read = {c["function"]["name"]: answers[c["id"]] for c in calls}
    found = {name: json.loads(read[name]) for name in READS}

    assert FACT in [m["content"] for m in found["recall"]["memories"]]
    assert found["recall"]["count"] >= 1
    assert [h["content"] for h in found["search_memory"]["hits"]] == [FACT]
    assert [i["body"] for i in found["memory_recently"]["items"]] == [FACT]
    for name in ("get_recent_history", "get_history_by_time"):
        messages = found[name]["messages"]
        assert {"role": "user", "text": PROMPT} in [
            {k: m[k] for k in ("role", "text")} for m in messages], (name, messages)
        # the person's conversation only: none of the Planner's own runs
        assert not any(m["text"] == "plan the party" for m in messages), (name, messages)

    # the matrix still holds: the Planner may read, not write
    assert "remember" not in {t["function"]["name"] for t in model.by_role(PLANNER)[0]["tools"]}
    assert "cannot use 'remember'" in read["remember"]
    # what was remembered is the Teller's, once, in the team's workspace
    records = [r for r in team.ledger.records() if r.get("tool_name") == "remember"]
    assert [(r["role"], r["success"]) for r in records] == [(TELLER, True), (PLANNER, False)]
    mirrored = list((tmp_path / "ws" / "memory").glob("*.md"))
    assert len(mirrored) == 1 and FACT in mirrored[0].read_text()


async def test_history_is_the_persons_conversation_not_the_results_handed_on(tmp_path):
    """The Teller's later runs read the team's results; history keeps what the person said
    and what the Teller answered, not those results (they are not the person's words)."""
    with RoleModel(script) as model:
        team = make_team(model, tmp_path / "ws")
        assert (await team.arun(PROMPT)).status == "ok"
        assert (await team.arun(SECOND)).status == "ok"
        assert not model.hook_errors, model.hook_errors
    planner = model.by_role(PLANNER)[-1]["messages"]
    [read] = [json.loads(m["content"]) for m in planner if m["role"] == "tool"]
    said = [(m["role"], m["text"]) for m in read["messages"]]
    assert [text for role, text in said if role == "user"] == [PROMPT, SECOND]
    assert ("assistant", "Planned.") in said
    assert not any("The work you delegated" in text for _, text in said), said


async def test_a_single_agent_keeps_its_own_memory(tmp_path):
    """Outside a team nothing changes: an agent reads what it (and no team) remembered."""
    from agent_kernel import Agent
    from agent_kernel.engine.registry import ToolContext

    workspace = tmp_path / "ws"
    with RoleModel(script) as model:
        team = make_team(model, workspace)
        await team.arun(PROMPT)
    single = Agent(workspace=workspace)
    tool = single.registry.get("search_memory")
    assert tool is not None
    ctx = ToolContext(agent=single, run_id="run_test", agent_id=single.agent_id,
                      workspace=single.workspace)
    found = await tool.invoke(tool.validate({"query": "Miso salmon"}), ctx)
    assert found == {"hits": []}
    assert single.services.memory_owner is None
    assert team.teller.services.memory_owner == TELLER
