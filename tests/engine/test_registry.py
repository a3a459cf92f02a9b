"""The tool registry: schemas from type hints, validation before the call, roles, spec tools."""

from __future__ import annotations

import asyncio
import enum
import re
import threading
from typing import Annotated, Any, Literal, Optional

import pytest
from scripted_model import ScriptedModel
from scripted_server import Call, Message

import agent_kernel
from agent_kernel import Agent, Field, Settings, Tool, ToolContext
from agent_kernel.engine.registry import ToolArgumentError, ToolRegistry
from agent_kernel.engine.user_tools import INTERPRETER_TOOLS
from agent_kernel.tools.core import TOOLS, query_state


class Mood(enum.Enum):
    CALM = "calm"
    BUSY = "busy"


def everything(
    text: str,
    count: int,
    ratio: float,
    flag: bool,
    items: list[str],
    extra: dict,
    mode: Literal["fast", "slow"],
    maybe: Optional[int] = None,  # noqa: UP045 - the point is to test typing.Optional
    mood: Mood = Mood.CALM,
    level: Annotated[int, Field(ge=1, le=5)] = 3,
    short: Annotated[str, Field(max_length=4)] = "ab",
) -> str:
    """Take one argument of every supported kind.

    Args:
        text: Some text.
        count: How many; this description
            goes on over two lines.
        ratio: A fraction.
        flag: On or off.
        items: A list of names.
        extra: Free-form settings.
        mode: Which mode.
        maybe: An optional number.
        mood: The mood.
    """
    return "ok"


MISSING = object()
VALID = {"text": "t", "count": 2, "ratio": 0.5, "flag": True, "items": ["a"], "extra": {"k": 1},
         "mode": "fast"}


def test_schema_from_type_hints_and_docstring():
    schema = Tool(everything).schema()
    assert schema["type"] == "function"
    function = schema["function"]
    assert function["name"] == "everything"
    assert function["description"] == "Take one argument of every supported kind."
    params = function["parameters"]
    assert params["type"] == "object"
    assert params["required"] == ["text", "count", "ratio", "flag", "items", "extra", "mode"]
    props = params["properties"]
    assert props["text"] == {"type": "string", "description": "Some text."}
    assert props["count"] == {"type": "integer",
                              "description": "How many; this description goes on over two lines."}
    assert props["ratio"]["type"] == "number"
    assert props["flag"]["type"] == "boolean"
    assert props["items"]["type"] == "array" and props["items"]["items"] == {"type": "string"}
    assert props["extra"]["type"] == "object"
    assert props["mode"]["enum"] == ["fast", "slow"] and props["mode"]["type"] == "string"
    assert props["maybe"]["type"] == "integer" and "default" not in props["maybe"]
    assert props["mood"]["enum"] == ["calm", "busy"] and props["mood"]["default"] == "calm"
    assert props["mood"]["description"] == "The mood."
    assert (props["level"]["minimum"], props["level"]["maximum"]) == (1, 5)
    assert props["short"]["maxLength"] == 4
    assert "$defs" not in params and "$ref" not in str(params)


def test_validation_accepts_and_fills_defaults():
    values = Tool(everything).validate({**VALID, "mood": "busy"})
    assert values["mood"] == "busy"  # enums reach the function as their values
    assert values["maybe"] is None and values["level"] == 3 and values["short"] == "ab"


@pytest.mark.parametrize("change, message", [
    ({"text": MISSING}, "text: required argument is missing"),
    ({"text": 5}, "text: Input should be a valid string"),
    ({"count": "lots"}, "count: Input should be a valid integer"),
    ({"flag": "perhaps"}, "flag: Input should be a valid boolean"),
    ({"items": "not a list"}, "items: Input should be a valid list"),
    ({"level": 0}, "level: Input should be greater than or equal to 1"),
    ({"level": 6}, "level: Input should be less than or equal to 5"),
    ({"short": "toolong"}, "short: String should have at most 4 characters"),
    ({"mode": "medium"}, "mode: Input should be 'fast' or 'slow'"),
    ({"mood": "angry"}, "mood: Input should be 'calm' or 'busy'"),
    ({"surprise": 1}, "surprise: unexpected argument"),
])
def test_validation_rejects_with_a_clear_message(change, message):
    arguments = {k: v for k, v in {**VALID, **change}.items() if v is not MISSING}
    with pytest.raises(ToolArgumentError) as caught:
        Tool(everything).validate(arguments)
    assert str(caught.value).startswith("Invalid arguments for tool 'everything': ")
    assert message in str(caught.value)


def test_arguments_must_be_an_object():
    with pytest.raises(ToolArgumentError, match="expected a JSON object, got list"):
        Tool(everything).validate([1, 2])


async def test_sync_tools_run_in_a_thread_and_async_tools_on_the_loop():
    threads: dict[str, int] = {}

    def sync_tool(x: int) -> int:
        """Double in a thread."""
        threads["sync"] = threading.get_ident()
        return x * 2

    async def async_tool(x: int) -> int:
        """Triple on the loop."""
        threads["async"] = threading.get_ident()
        await asyncio.sleep(0)
        return x * 3

    sync, asyn = Tool(sync_tool), Tool(async_tool)
    assert (sync.is_async, asyn.is_async) == (False, True)
    assert await sync.invoke(sync.validate({"x": 2}), None) == 4
    assert await asyn.invoke(asyn.validate({"x": 2}), None) == 6
    assert threads["async"] == threading.get_ident() != threads["sync"]


async def test_context_is_injected_and_hidden_from_the_schema(tmp_path):
    seen: list[ToolContext] = []

    async def whoami(note: str, ctx: ToolContext) -> str:
        """Report the run.

        Args:
            note: Anything.
        """
        seen.append(ctx)
        return f"{ctx.agent_id}/{ctx.run_id}/{note}"

    made = Tool(whoami)
    assert list(made.parameters["properties"]) == ["note"]
    assert made.parameters["required"] == ["note"]
    with pytest.raises(ToolArgumentError, match="ctx: unexpected argument"):
        made.validate({"note": "x", "ctx": "forged"})

    with ScriptedModel() as model:
        agent = Agent(model=model, workspace=tmp_path, tools=[made],
                      agent_id="agent-7",
                      settings=Settings(api_key="sk-x"))
        model.script(Message(calls=[Call("whoami", '{"note": "hi"}')]), Message(text="done"))
        result = await agent.arun("who")
    assert result.tool_calls[0].result == f"agent-7/{result.run_id}/hi"
    assert seen[0].agent is agent and seen[0].workspace is agent.workspace
    assert seen[0].call_id == result.tool_calls[0].call_id


def test_plain_function_is_wrapped_by_the_registry():
    registry = ToolRegistry()
    registry.add(everything)
    assert registry.names() == ["everything"] and "everything" in registry
    assert isinstance(registry.get("everything"), Tool)
    registry.remove("everything")
    assert len(registry) == 0 and registry.get("everything") is None


def test_star_args_are_refused():
    def loose(*args: int) -> None:
        """No schema for this."""

    with pytest.raises(TypeError, match=r"\*args/\*\*kwargs cannot become a schema"):
        Tool(loose)


async def test_permission_hook_per_role(tmp_path):
    def hook(role: str | None, tool_obj: Tool) -> bool:
        return not (role == "viewer" and tool_obj.name == "echo")

    with ScriptedModel() as model:
        agent = Agent(model=model, workspace=tmp_path, role="viewer",
                      settings=Settings(api_key="sk-x"))
        agent.registry.permission_hook = hook
        assert "echo" not in {s["function"]["name"] for s in agent.registry.schemas("viewer")}
        assert "echo" in {s["function"]["name"] for s in agent.registry.schemas("editor")}
        model.script(Message(calls=[Call("echo", '{"value": "sneaky"}')]), Message(text="ok"))
        result = await agent.arun("echo")
        offered = {t["function"]["name"] for t in model.requests[0]["tools"]}
        assert "echo" not in offered and "read_file" in offered  # core; log_decision is found
        content = model.tool_messages(1)[0]["content"]
    assert content == "Error: Tool 'echo' is not permitted for role 'viewer'"
    assert result.tool_calls[0].success is False
    [record] = [r for r in agent.ledger.records() if r.get("kind") == "tool_call"]
    assert record["success"] is False and "not permitted" in record["error"]


@pytest.fixture
def cleanup_globals():
    tools, states = ({t.name for t in INTERPRETER_TOOLS.tools()},
                     set(INTERPRETER_TOOLS.state_names()))
    yield
    for name in {t.name for t in INTERPRETER_TOOLS.tools()} - tools:
        INTERPRETER_TOOLS.remove(name)
    for name in set(INTERPRETER_TOOLS.state_names()) - states:
        INTERPRETER_TOOLS.remove_state(name)


def test_decorator_registers_for_new_agents(tmp_path, cleanup_globals):
    @agent_kernel.tool
    def registry_test_shout(words: str) -> str:
        """Shout the words.

        Args:
            words: What to shout.
        """
        return words.upper()

    @agent_kernel.tool(name="registry_test_private", register=False, timeout=2.5,
                       side_effects=True)
    def private(words: str) -> str:
        """Not offered to everyone."""
        return words

    assert isinstance(registry_test_shout, Tool) and registry_test_shout("hey") == "HEY"
    assert (private.name, private.timeout, private.side_effects) == (
        "registry_test_private", 2.5, True)
    agent = Agent(workspace=tmp_path)
    assert "registry_test_shout" in agent.registry
    assert "registry_test_private" not in agent.registry
    schema = agent.registry.get("registry_test_shout").schema()["function"]
    assert schema["parameters"]["properties"]["words"]["description"] == "What to shout."


def _spec_schema(name: str) -> dict[str, Any]:
    return next(t for t in TOOLS if t.name == name).schema()["function"]


def test_spec_tools_names_and_arguments_exactly():
    assert [t.name for t in TOOLS] == ["echo", "reply", "log_decision", "query_state",
                                       "console_print"]
    expected_args = {"echo": ["value"], "reply": ["text"],
                     "log_decision": ["reasoning", "decision_type"],
                     "query_state": ["state_name"], "console_print": ["text"]}
    required = {"echo": ["value"], "reply": ["text"], "log_decision": ["reasoning"],
                "query_state": ["state_name"], "console_print": ["text"]}
    for name, args in expected_args.items():
        params = _spec_schema(name)["parameters"]
        assert list(params["properties"]) == args, name
        assert params["required"] == required[name], name
        for arg in args:
            assert params["properties"][arg]["type"] == "string", (name, arg)
    decision = _spec_schema("log_decision")["parameters"]["properties"]
    assert decision["reasoning"]["maxLength"] == 1000
    assert decision["decision_type"]["enum"] == [
        "capability_selection", "schedule_decision", "no_action", "other"]
    assert decision["decision_type"]["default"] == "other"


async def test_log_decision_limits():
    log_decision = next(t for t in TOOLS if t.name == "log_decision")
    # The tool checks reasoning itself, in spec 001's words, before it touches the ledger.
    for reasoning, words in (("x" * 1001, "reasoning exceeds 1000 characters (got 1001)"),
                             ("", "reasoning cannot be empty")):
        with pytest.raises(ValueError, match=re.escape(words)):
            await log_decision.invoke(log_decision.validate({"reasoning": reasoning}), None)
    with pytest.raises(ToolArgumentError, match="decision_type"):
        log_decision.validate({"reasoning": "why", "decision_type": "whim"})
    assert log_decision.validate({"reasoning": "x" * 1000})["decision_type"] == "other"


async def test_query_state_providers(cleanup_globals, tmp_path):
    @agent_kernel.state("registry_test_balance")
    def balance() -> dict[str, int]:
        return {"cash": 42}

    @agent_kernel.state("registry_test_async")
    async def later() -> str:
        return "async value"

    agent = Agent(workspace=tmp_path)
    ctx = ToolContext(agent=agent, run_id="run_s", agent_id=agent.agent_id,
                      workspace=agent.workspace)
    assert await query_state("registry_test_balance", ctx) == {"cash": 42}
    assert await query_state("registry_test_async", ctx) == "async value"
    with pytest.raises(ValueError) as caught:
        await query_state("x", ctx)
    assert str(caught.value) == "No state provider registered for 'x'"
    with pytest.raises(ValueError, match="letters, digits and underscores"):
        agent_kernel.state("bad name!")


async def test_query_state_unknown_name_reaches_the_model(tmp_path):
    with ScriptedModel() as model:
        agent = Agent(model=model, workspace=tmp_path,
                      settings=Settings(api_key="sk-x"))
        model.script(Message(calls=[Call("query_state", '{"state_name": "nowhere"}')]),
                      Message(text="none"))
        await agent.arun("query")
        content = model.tool_messages(1)[0]["content"]
    assert content == ("Error: Tool 'query_state' execution failed: "
                       "No state provider registered for 'nowhere'")
