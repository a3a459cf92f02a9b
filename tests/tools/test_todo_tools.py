"""``todo_update`` and ``todo_list`` as a model calls them: spec 003's fields, files and
every error text of its two tables, byte for byte.

The model-assisted steps are answered in-process by a FunctionModel that plays the run's
model (its organiser requests are recognised by their ``Contract:`` line); one run goes
through litellm to the scripted HTTP server in test_organiser_litellm.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_kernel import Agent
from agent_kernel.engine.context import ContextWindow
from agent_kernel.engine.models import FunctionModel, ModelRequest, ModelTurn
from agent_kernel.engine.models.demo_organiser import contract_of
from agent_kernel.engine.registry import ToolContext
from agent_kernel.organiser.contacts import ContactStore
from agent_kernel.tools import todos

Answers = dict[str, Callable[[dict[str, Any]], object]]


class Brain:
    """The run's model for organiser requests: one answer function per contract; every
    request is kept."""

    def __init__(self, answers: Answers, name: str = "openai/test-model") -> None:
        self.answers = answers
        self.asked: list[tuple[str, dict[str, Any]]] = []
        self.model = FunctionModel(self._answer, name=name)

    def _answer(self, request: ModelRequest) -> ModelTurn:
        contract = contract_of(request.messages)
        assert contract is not None, request.messages
        payload = json.loads(str(request.messages[-1]["content"]))
        self.asked.append((contract, payload))
        said = self.answers[contract](payload)
        return ModelTurn(text=said if isinstance(said, str) else json.dumps(said),
                         usage={"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
                         cost=0.001)


def keep_all(payload: dict[str, Any]) -> object:
    return {"keep_indices": [i["index"] for i in payload["items"]]}


@pytest.fixture(autouse=True)
def limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(todos, "LIMITS", todos.TodoLimits())


@pytest.fixture
def agent(tmp_path: Path) -> Agent:
    made = Agent(workspace=tmp_path / "ws")
    ContactStore(made.workspace).upsert({"contact_id": "tg:@alice", "contact_nickname": "Alice"})
    ContactStore(made.workspace).upsert({"contact_id": "human:bob",
                                         "contact_nickname": "Bob", "addresses": ["tg:1001"]})
    return made


async def call(agent: Agent, name: str, brain: Brain | None, prompt: str = "",
               **arguments: Any) -> Any:
    """Call a tool inside a run whose model is ``brain`` (none: outside any run)."""
    if brain is not None:
        agent.windows["run_t"] = ContextWindow(
            brain.model, [{"role": "user", "content": prompt or "note this"}], agent.settings)
    try:
        tool = agent.registry.get(name)
        assert tool is not None
        ctx = ToolContext(agent=agent, run_id="run_t", agent_id=agent.agent_id,
                          workspace=agent.workspace)
        return await tool.invoke(tool.validate(arguments), ctx)
    finally:
        agent.windows.pop("run_t", None)


async def fails(agent: Agent, name: str, brain: Brain | None, **arguments: Any) -> str:
    with pytest.raises(Exception) as caught:  # noqa: PT011 - the text is what is checked
        await call(agent, name, brain, **arguments)
    return str(caught.value)


def resolve_alice(payload: dict[str, Any]) -> object:
    text = payload["input"]["content"].replace("Alice", "Alice (tg:@alice)")
    return {"status": "ok", "rewritten_content": text}


def wip(agent: Agent) -> str:
    return (agent.workspace.root / "state" / "TODO.WIP.md").read_text()


def test_the_schemas_are_the_specs(agent: Agent) -> None:
    update = agent.registry.get("todo_update").parameters
    assert set(update["properties"]) == {"action", "content", "people"}
    assert update["required"] == ["action", "content"]
    assert update["properties"]["people"]["type"] == "array"
    listed = agent.registry.get("todo_list").parameters
    assert listed["properties"]["scope"]["default"] == "wip" and listed["required"] == []


async def test_add_writes_the_reference_and_the_files(agent: Agent) -> None:
    brain = Brain({"reference_resolve": resolve_alice, "semantic_dedup": keep_all})
    first = await call(agent, "todo_update", brain, action="add",
                       content="Send Alice the report", people=["Alice"])
    assert first["ok"] is True and first["action"] == "add"
    assert first["entry"]["content"] == "Send Alice (tg:@alice) the report"
    assert first["updated_counts"] == {"open_count": 1, "done_count": 0}
    assert first["changed"] == {"wip_added": 1, "wip_removed": 0, "done_added": 0}
    assert "warnings" not in first
    (contract, payload), = brain.asked  # one item: nothing to dedup
    assert contract == "reference_resolve"
    assert "tg:@alice" in payload["allowed_ids"] and "tg:1001" in payload["allowed_ids"]
    second = await call(agent, "todo_update", brain, action="add", content="Renew the domain",
                        people=["$SPEAKER"])
    assert second["updated_counts"]["open_count"] == 2
    assert [c for c, _ in brain.asked] == ["reference_resolve", "reference_resolve",
                                           "semantic_dedup"]
    text = wip(agent)
    assert text.startswith('---\ncreated_at: "')
    assert "open_count: 2\n---\n\n# TODO Work In Progress (WIP)\n\n- [ ] Created=" in text
    lines = [x for x in text.splitlines() if x.startswith("- [ ]")]
    assert lines[0].endswith(" | Renew the domain")  # newest first
    assert lines[1].endswith(" | Send Alice (tg:@alice) the report")


async def test_dedup_drops_what_the_model_says_repeats(agent: Agent) -> None:
    brain = Brain({"reference_resolve": resolve_alice, "semantic_dedup": keep_all})
    await call(agent, "todo_update", brain, action="add", content="Water the plants",
               people=["$SPEAKER"])
    brain.answers["semantic_dedup"] = lambda payload: {"keep_indices": [0]}
    out = await call(agent, "todo_update", brain, action="add",
                     content="Water the plants today", people=["$SPEAKER"])
    assert out["updated_counts"]["open_count"] == 1
    assert "Water the plants today" in wip(agent) and "| Water the plants\n" not in wip(agent)


async def test_complete_moves_the_matched_item(agent: Agent) -> None:
    brain = Brain({"reference_resolve": resolve_alice, "semantic_dedup": keep_all,
                   "semantic_match": lambda p: {"status": "matched", "index": 1}})
    for text in ("Pay the rent", "Book the train"):
        await call(agent, "todo_update", brain, action="add", content=text, people=["$SPEAKER"])
    out = await call(agent, "todo_update", brain, action="complete", content="the rent")
    assert out["action"] == "complete" and out["entry"]["content"] == "Pay the rent"
    assert out["entry"]["done"] is True and out["entry"]["done_at"]
    assert out["changed"] == {"wip_added": 0, "wip_removed": 1, "done_added": 1}
    assert out["updated_counts"] == {"open_count": 1, "done_count": 1}
    done = (agent.workspace.root / "state" / "TODO.DONE.md").read_text()
    assert "done_count: 1" in done and "# TODO Done" in done and ", Done=" in done
    assert brain.asked[-1][1]["query"] == "the rent"
    listed = await call(agent, "todo_list", None, scope="both")
    assert [e["content"] for e in listed["wip_items"]] == ["Book the train"]
    assert [e["content"] for e in listed["done_items"]] == ["Pay the rent"]
    assert (listed["scope"], listed["open_count"], listed["done_count"]) == ("both", 1, 1)
    assert listed["wip_path"] == "file_state_dir/TODO.WIP.md"
    assert listed["done_path"] == "file_state_dir/TODO.DONE.md"
    assert listed["generated_at"].endswith("Z")
    only = await call(agent, "todo_list", None)
    assert only["scope"] == "wip" and "done_items" not in only


async def test_unresolved_people_fall_back_to_the_raw_text(agent: Agent) -> None:
    brain = Brain({"reference_resolve": lambda p: {"status": "missing_reference_id",
                                                   "missing": [{"mention": "Carol"}]},
                   "semantic_dedup": keep_all})
    out = await call(agent, "todo_update", brain, action="add", content="Ask Carol about it",
                     people=["Carol"])
    assert out["entry"]["content"] == "Ask Carol about it"
    assert out["warnings"] == ["reference_unresolved_write_raw"]
    # an "I" left without an id is unresolved too
    brain.answers["reference_resolve"] = lambda p: {"status": "ok",
                                                    "rewritten_content": "I call Alice"}
    out = await call(agent, "todo_update", brain, action="add", content="I call Alice",
                     people=["$SPEAKER", "Alice"])
    assert out["warnings"] == ["reference_unresolved_write_raw"]


async def test_a_hand_written_line_survives_a_rewrite(agent: Agent) -> None:
    path = agent.workspace.root / "state" / "TODO.WIP.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# TODO Work In Progress (WIP)\n\n- [ ] buy milk\nsome note\n")
    brain = Brain({"reference_resolve": resolve_alice, "semantic_dedup": keep_all})
    await call(agent, "todo_update", brain, action="add", content="Fix the bike",
               people=["$SPEAKER"])
    assert "- [ ] buy milk" in wip(agent) and "some note" in wip(agent)
    listed = await call(agent, "todo_list", None)
    assert [e["content"] for e in listed["wip_items"]] == ["Fix the bike", "buy milk"]


# Every error text of spec 003's todo_update and todo_list tables, byte for byte.

async def test_todo_update_errors(agent: Agent) -> None:
    brain = Brain({"reference_resolve": resolve_alice, "semantic_dedup": keep_all})
    assert await fails(agent, "todo_update", brain, content="x") == "action is required"
    assert await fails(agent, "todo_update", brain, action="add") == "content is required"
    assert await fails(agent, "todo_update", brain, action="add", content="  ") == \
        "content is required"
    assert await fails(agent, "todo_update", brain, action="drop", content="x") == \
        "invalid action: drop"
    assert await fails(agent, "todo_update", None, action="add", content="x", people=[]) == \
        "todo_update unavailable (missing llm client)"
    nameless = Brain({}, name="")
    assert await fails(agent, "todo_update", nameless, action="add", content="x",
                       people=[]) == "todo_update unavailable (missing llm model)"
    assert await fails(agent, "todo_update", brain, action="add", content="x") == \
        "people is required for add action"
    assert await fails(agent, "todo_update", brain, action="add", content="x",
                       people=["a", 3]) == "people must be an array of strings"
    assert await fails(agent, "todo_update", brain, action="add", content="x",
                       people="Alice") == "people must be an array of strings"
    assert await fails(agent, "todo_update", brain, action="add",
                       content="call (urgent) now", people=[]) == "invalid reference id: urgent"
    brain.answers["reference_resolve"] = lambda p: {
        "status": "ok", "rewritten_content": "Send Zed (tg:@zed) the report"}
    assert await fails(agent, "todo_update", brain, action="add", content="Send Zed the "
                       "report", people=["Zed"]) == "reference id is not reachable: tg:@zed"
    assert await fails(agent, "todo_update", brain, action="complete", content="x") == \
        "no matching todo item in TODO.WIP.md"
    brain.answers["reference_resolve"] = lambda p: "this is not JSON"
    said = await fails(agent, "todo_update", brain, action="add", content="Call Alice",
                       people=["Alice"])
    assert said.startswith("invalid reference_resolve response: ")
    brain.answers["reference_resolve"] = resolve_alice
    for text in ("Call Alice", "Call Bob"):
        await call(agent, "todo_update", brain, action="add", content=text, people=[])
    brain.answers["semantic_match"] = lambda p: {"status": "no_match"}
    assert await fails(agent, "todo_update", brain, action="complete", content="x") == \
        "no matching todo item in TODO.WIP.md"
    brain.answers["semantic_match"] = lambda p: {"status": "ambiguous",
                                                 "candidate_indices": [0, 1]}
    assert await fails(agent, "todo_update", brain, action="complete", content="call") == \
        "ambiguous todo item match"
    for broken in ("[1]", '{"status": "matched", "index": 9}', '{"status": "maybe"}',
                   '{"status": "matched", "index": 0} trailing'):
        brain.answers["semantic_match"] = lambda p, b=broken: b
        said = await fails(agent, "todo_update", brain, action="complete", content="call")
        assert said.startswith("invalid semantic_match response: "), said
    for broken in ("nope", '{"keep_indices": []}', '{"keep_indices": [5]}'):
        brain.answers["semantic_dedup"] = lambda p, b=broken: b
        said = await fails(agent, "todo_update", brain, action="add", content="One more",
                           people=[])
        assert said.startswith("invalid semantic_dedup response: "), said
    todos.LIMITS.enabled = False
    assert await fails(agent, "todo_update", brain, action="add", content="x") == \
        "todo_update tool is disabled"


async def test_todo_list_errors(agent: Agent) -> None:
    assert await fails(agent, "todo_list", None, scope="later") == "invalid scope: later"
    todos.LIMITS.wip_file = ""
    assert await fails(agent, "todo_list", None) == "todo paths are not configured"
    todos.LIMITS.enabled = False
    assert await fails(agent, "todo_list", None) == "todo_list tool is disabled"


async def test_missing_reference_id_is_the_specs_text() -> None:
    from agent_kernel.organiser.asking import MissingReferenceIds

    assert str(MissingReferenceIds([])) == "missing_reference_id"
    assert str(MissingReferenceIds([{"mention": "Carol"}])).startswith("missing_reference_id")


async def test_a_failed_call_through_the_loop_says_the_specs_words(agent: Agent) -> None:
    from tool_helpers import through_the_loop

    record = await through_the_loop(agent, "todo_update", content="x")
    assert record.error == "Tool 'todo_update' execution failed: action is required"
    record = await through_the_loop(agent, "todo_list", scope="all")
    assert record.error == "Tool 'todo_list' execution failed: invalid scope: all"


class Ledgered:
    """A team's budget as the engine sees it: told every answer's usage and cost."""

    def __init__(self) -> None:
        self.told: list[tuple[str, dict[str, int], float | None]] = []

    async def before_call(self, agent: object, run_id: str) -> str | None:
        return None

    def spent(self, agent: object, run_id: str, usage: dict[str, int],
              cost: float | None) -> None:
        self.told.append((run_id, usage, cost))


async def test_the_models_answers_count_against_a_budget(agent: Agent) -> None:
    budget = Ledgered()
    agent.services.budget = budget
    brain = Brain({"reference_resolve": resolve_alice, "semantic_dedup": keep_all})
    await call(agent, "todo_update", brain, action="add", content="Call Alice", people=["Alice"])
    assert budget.told == [("run_t", {"prompt_tokens": 7, "completion_tokens": 3,
                                      "total_tokens": 10}, 0.001)]


async def test_an_edit_made_meanwhile_is_kept_and_the_change_refused(agent: Agent) -> None:
    brain = Brain({"reference_resolve": resolve_alice, "semantic_dedup": keep_all})
    await call(agent, "todo_update", brain, action="add", content="First", people=[])
    path = agent.workspace.root / "state" / "TODO.WIP.md"

    def edit_while_asked(payload: dict[str, Any]) -> object:
        path.write_text(path.read_text() + "- [ ] written by hand meanwhile\n")
        return keep_all(payload)

    brain.answers["semantic_dedup"] = edit_while_asked
    said = await fails(agent, "todo_update", brain, action="add", content="Second", people=[])
    assert said == "TODO.WIP.md changed while the todo was being written; nothing was " \
                   "changed, try again"
    assert "written by hand meanwhile" in path.read_text() and "Second" not in path.read_text()


async def test_a_pasted_line_is_taken_for_its_text(agent: Agent) -> None:
    brain = Brain({"reference_resolve": resolve_alice, "semantic_dedup": keep_all,
                   "semantic_match": lambda p: {"status": "matched", "index": 0}})
    out = await call(agent, "todo_update", brain, action="add", content="- [ ] Buy milk",
                     people=[])
    assert out["entry"]["content"] == "Buy milk"
    await call(agent, "todo_update", brain, action="complete",
               content="- [ ] Created=2026-11-26 05:30 | Buy milk")
    assert brain.asked[-1][1]["query"] == "Buy milk"
    assert await fails(agent, "todo_update", brain, action="add", content="- [ ] ") == \
        "content is required"
