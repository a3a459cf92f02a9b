"""Token and cost budgets of a team, with scripted answers per role in-process.

Each scripted response carries its usage, so a tree's tokens are known; the
cost test goes through litellm's real HTTP path on a local server and gives the
scripted model a price through litellm's own cost map, so the cost is litellm's,
as it would be for a priced provider model.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from scripted_server import Call, Message, usage
from test_team import (
    RoleModel,
    RoleServer,
    delegate,
    first_prompt,
    last,
    make_team,
    role_of,
)

from agent_kernel.core.events import RunError
from agent_kernel.team import TeamLimits
from agent_kernel.team.roles import PLANNER, TELLER, WORKER


def budget_records(team: Any) -> list[dict[str, Any]]:
    return [r for r in team.ledger.records() if r.get("kind") == "budget_spent"]


def two_workers(role: str, body: dict[str, Any]) -> Message:
    """Teller delegates, Planner splits in two, each Worker writes a file then answers;
    every response uses 100 tokens."""
    said, spent = last(body), usage(60, 40)
    if role == TELLER:
        if said["role"] == "user" and not said["content"].startswith("The work you"):
            return Message(calls=[delegate("compare Paris and Rome")], usage=spent)
        return Message(text="Compared.", usage=spent)
    if role == PLANNER:
        if said["role"] == "user":
            return Message(calls=[delegate("research Rome", priority=7),
                                  delegate("research Paris", priority=3)], usage=spent)
        return Message(text="Plan: one Worker per city.", usage=spent)
    city = first_prompt(body).split()[-1]
    if said["role"] == "user":
        return Message(calls=[Call("write_file", json.dumps(
            {"path": f"{city.lower()}.md", "content": f"{city} notes"}))], usage=spent)
    return Message(text=f"{city}: notes written", usage=spent)


async def test_tree_token_budget_stops_the_tree_mid_work(tmp_path):
    with RoleModel(two_workers) as server:
        team = make_team(server, tmp_path / "ws", max_workers=1,
                         limits=TeamLimits(max_workers=1, max_tree_tokens=250))
        errors: list[RunError] = []
        team.bus.subscribe(lambda e: errors.append(e) if isinstance(e, RunError) else None)
        result = await team.arun("compare two cities")
        assert not server.hook_errors, server.hook_errors

    message = ("Token budget spent: this task tree used 300 tokens of its 250; the run "
               "stops (TeamLimits.max_tree_tokens)")
    assert (result.status, result.error) == ("limit", message)
    assert str(result) == f"[limit] {message}"
    # the Teller and the Planner once each (delegations alone end a run), the first Worker
    # once: then no model call is made
    assert [role_of(b) for b in server.requests] == [TELLER, PLANNER, WORKER]
    assert result.usage["tokens"] == 300 and result.usage["calls"] == 3
    assert result.usage["cost"] is None  # litellm knows no price for the scripted model

    [planner] = result.tree["children"]
    assert planner["status"] == "ok"
    first, second = sorted(planner["children"], key=lambda t: -t["priority"])
    assert first["status"] == "limit" and first["error"] == message
    assert (tmp_path / "ws" / "files" / "rome.md").read_text() == "Rome notes"  # stopped mid-work
    assert second["status"] == "limit" and second["error"] == message
    assert second["started_at"] is None  # queued when the budget ran out: never started
    assert not (tmp_path / "ws" / "files" / "paris.md").exists()
    assert result.runs[-1].status == "limit"  # the Teller's run after the results
    assert [e.message for e in errors if e.kind == "limit"].count(message) == 2  # Worker, Teller

    [record] = budget_records(team)
    assert record["trace_id"] == result.tree["trace_id"]
    assert (record["budget"], record["used"], record["limit"]) == ("max_tree_tokens", 300, 250)
    assert record["message"] == message
    finished = {r["task_id"]: r for r in team.ledger.records() if r["kind"] == "task_finished"}
    assert finished[second["id"]]["status"] == "limit"
    assert team.ledger.verify()


def answer_with(tokens: int) -> Any:
    def respond(role: str, body: dict[str, Any]) -> Message:
        return Message(text="Hello.", usage=usage(tokens - 20, 20))
    return respond


async def test_session_budget_stops_a_second_prompt(tmp_path):
    with RoleModel(answer_with(160)) as server:
        team = make_team(server, tmp_path / "ws",
                         limits=TeamLimits(max_session_tokens=150))
        first = await team.arun("hello")
        second = await team.arun("hello again")
        assert len(server.requests) == 1  # the second prompt reached no model

    assert (first.status, first.reply) == ("ok", "Hello.")
    assert first.usage["tokens"] == 160
    message = ("Token budget spent: this session used 160 tokens of its 150; the run stops "
               "(TeamLimits.max_session_tokens)")
    assert (second.status, second.error) == ("limit", message)
    assert second.usage["tokens"] == 0
    assert team.usage["tokens"] == 160 and team.usage["calls"] == 1
    [record] = budget_records(team)
    assert record["trace_id"] == second.tree["trace_id"] != first.tree["trace_id"]
    assert (record["budget"], record["used"], record["limit"]) == (
        "max_session_tokens", 160, 150)


async def test_tree_budget_is_per_prompt(tmp_path):
    with RoleModel(answer_with(160)) as server:
        team = make_team(server, tmp_path / "ws", limits=TeamLimits(max_tree_tokens=150))
        first = await team.arun("hello")
        second = await team.arun("hello again")
    assert first.ok and second.ok  # each prompt is a tree of its own
    assert team.usage["tokens"] == 320 and not budget_records(team)


async def test_cost_budget_with_the_price_litellm_knows(tmp_path, monkeypatch):
    import litellm

    # a model of its own: litellm keeps what it learnt of a model's price, and the other
    # tests count on the scripted model having none
    model = "openai/budget-priced-model"
    monkeypatch.setitem(litellm.model_cost, model, {
        "input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6,
        "litellm_provider": "openai", "mode": "chat", "max_tokens": 4096})
    prompt, completion = litellm.cost_per_token(model=model, prompt_tokens=1000,
                                                completion_tokens=500)
    price = prompt + completion  # what one scripted response costs: $0.002

    def respond(role: str, body: dict[str, Any]) -> Message:
        if role == TELLER and last(body)["role"] == "user":
            return Message(calls=[delegate("look something up")], usage=usage(1000, 500))
        return Message(text="Done.", usage=usage(1000, 500))

    with RoleServer(respond) as server:
        team = make_team(server, tmp_path / "ws", model=model,
                         limits=TeamLimits(max_tree_cost=0.001))
        result = await team.arun("look it up")
        assert len(server.requests) == 1  # the Teller's delegation spent the budget

    assert result.usage["cost"] == pytest.approx(price)
    message = (f"Cost budget spent: this task tree cost ${price:.4f} of its $0.0010; the run "
               "stops (TeamLimits.max_tree_cost)")
    assert (result.status, result.error) == ("limit", message)
    [planner] = result.tree["children"]
    assert (planner["status"], planner["error"]) == ("limit", message)
    [record] = budget_records(team)
    assert (record["budget"], record["limit"]) == ("max_tree_cost", 0.001)
    assert record["used"] == pytest.approx(price)


@pytest.mark.parametrize("field,value", [
    ("max_tree_tokens", 0), ("max_tree_tokens", True), ("max_tree_tokens", 1.5),
    ("max_session_tokens", -3), ("max_tree_cost", 0), ("max_session_cost", -1.0),
    ("max_tree_cost", float("nan")), ("max_session_cost", "5")])
def test_budget_limits_are_checked(field, value):
    with pytest.raises(ValueError, match=field):
        TeamLimits(**{field: value})


def test_budget_defaults():
    limits = TeamLimits(max_tree_cost=2, max_session_tokens=None)
    assert limits.max_tree_cost == 2 and limits.max_session_tokens is None
    default = TeamLimits()
    assert isinstance(default.max_tree_tokens, int) and default.max_tree_tokens >= 100_000
    assert default.max_tree_cost is None and default.max_session_cost is None



def fresh_trace_ids(role: str, body: dict[str, Any]) -> Message:
    """``two_workers``, but every delegation names a trace id nobody used before."""
    said, spent = last(body), usage(60, 40)
    if role == TELLER:
        if said["role"] == "user" and not said["content"].startswith("The work you"):
            return Message(calls=[delegate("compare Paris and Rome", traceId="trace-teller-new")],
                           usage=spent)
        return Message(text="Compared.", usage=spent)
    if role == PLANNER:
        if said["role"] == "user":
            return Message(calls=[delegate("research Rome", priority=7, traceId="fresh-rome"),
                                  delegate("research Paris", priority=3, traceId="fresh-paris")],
                           usage=spent)
        return Message(text="Plan: one Worker per city.", usage=spent)
    city = first_prompt(body).split()[-1]
    if said["role"] == "user":
        return Message(calls=[Call("write_file", json.dumps(
            {"path": f"{city.lower()}.md", "content": f"{city} notes"}))], usage=spent)
    return Message(text=f"{city}: notes written", usage=spent)


async def test_fresh_trace_ids_do_not_start_a_fresh_tree_budget(tmp_path):
    """A traceId is the model's label: the tree's budget is kept under the prompt's root
    task, so a Teller and a Planner naming new trace ids still spend the one budget."""
    with RoleModel(fresh_trace_ids) as server:
        team = make_team(server, tmp_path / "ws", max_workers=1,
                         limits=TeamLimits(max_workers=1, max_tree_tokens=250))
        result = await team.arun("compare two cities")
        assert not server.hook_errors, server.hook_errors

    message = ("Token budget spent: this task tree used 300 tokens of its 250; the run "
               "stops (TeamLimits.max_tree_tokens)")
    assert (result.status, result.error) == ("limit", message)
    assert [role_of(b) for b in server.requests] == [TELLER, PLANNER, WORKER]
    assert result.usage["tokens"] == 300
    [planner] = result.tree["children"]
    assert planner["trace_id"] == "trace-teller-new" != result.tree["trace_id"]
    first, second = sorted(planner["children"], key=lambda t: -t["priority"])
    assert (first["trace_id"], second["trace_id"]) == ("fresh-rome", "fresh-paris")
    assert first["root_id"] == second["root_id"] == planner["root_id"] == result.tree["id"]
    assert (first["status"], second["status"]) == ("limit", "limit")
    assert second["started_at"] is None
    assert not (tmp_path / "ws" / "files" / "paris.md").exists()
    [record] = budget_records(team)
    assert record["root_task_id"] == result.tree["id"]
    assert record["trace_id"] == "fresh-rome"  # the label stays on the record
    assert set(team.supervisor.budget.trees) == {result.tree["id"]}


async def test_a_planners_schedule_spends_the_budget_of_the_tree_that_made_it(tmp_path):
    """A recurring trigger a Planner makes fires as Worker tasks under the scheduling
    prompt's root task: its firings cannot open a fresh tree budget each time."""
    from test_team import until

    def respond(role: str, body: dict[str, Any]) -> Message:
        said, spent = last(body), usage(60, 40)
        if role == TELLER:
            if said["role"] == "user" and not said["content"].startswith("The work you"):
                return Message(calls=[delegate("keep an eye on it")], usage=spent)
            return Message(text="Watching.", usage=spent)
        if role == PLANNER:
            if said["role"] == "user":
                return Message(calls=[Call("schedule", json.dumps({
                    "prompt": "check the thing", "type": "recurring", "interval": 2,
                    "traceId": "fresh-schedule"}))], usage=spent)
            return Message(text="Scheduled.", usage=spent)
        return Message(text="checked", usage=spent)

    with RoleModel(respond) as server:
        team = make_team(server, tmp_path / "ws",
                         limits=TeamLimits(max_tree_tokens=450))
        result = await team.arun("watch it")
        # the Teller's delegation alone (its run ends), the Planner's two calls, the Teller's
        # answer from the results
        assert result.ok and result.usage["tokens"] == 400

        def firings() -> list[Any]:
            return [t for t in team.supervisor.tasks.values()
                    if t.prompt == "check the thing" and t.role == WORKER and not t.open]

        await until(lambda: len(firings()) >= 2, 30)
        await team.triggers.close()
        assert not server.hook_errors, server.hook_errors

    first, second = firings()[:2]
    assert first.tree_id == second.tree_id == result.tree["id"]
    assert (first.status, second.status) == ("ok", "limit")
    assert "this task tree used 500 tokens of its 450" in (second.error or "")
    assert len(server.by_role(WORKER)) == 1  # the second firing reached no model
