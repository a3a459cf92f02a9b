"""The loop over real HTTP: a scripted OpenAI-compatible server on 127.0.0.1.

Every test drives ``Agent.arun`` over HTTP (``api_base``) on both model paths
(``model_path``: litellm's own call, and the openai-SDK fast path), then checks the
result, the ledger, and what the server received next (the tool results the model
was shown).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from scripted_server import Call, CutStream, HttpError, Message, ScriptedServer, usage

from agent_kernel import Agent, Field, Settings, Tool
from agent_kernel.core.events import (
    Notice,
    RunError,
    StreamReset,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)

MODEL = "openai/test-model"


@pytest.fixture
def server(model_path):
    with ScriptedServer() as srv:
        yield srv
        assert not srv.hook_errors, srv.hook_errors


def make_agent(server: ScriptedServer, workspace: Path, tools: list[Any] | None = None,
               model: str = MODEL, **settings: Any) -> Agent:
    settings.setdefault("retry_base_delay", 0.01)
    return Agent(model=model, workspace=workspace, tools=[Tool(t) for t in tools or []],
                 settings=Settings(api_base=server.base_url, api_key="sk-test-0123456789abcdef",
                                   **settings))


def tool_records(agent: Agent) -> list[dict[str, Any]]:
    return [r for r in agent.ledger.records() if r.get("kind") == "tool_call"]


async def test_streaming_text_arrives_in_deltas(server, tmp_path):
    agent = make_agent(server, tmp_path)
    deltas: list[str] = []
    agent.bus.subscribe(lambda e: deltas.append(e.text) if isinstance(e, TextDelta) else None)
    server.script(Message(text="Hello from the scripted model.", pieces=4))
    result = await agent.arun("hi")
    assert result.status == "ok", result.error
    assert result.reply == "Hello from the scripted model."
    assert len(deltas) >= 4 and "".join(deltas) == result.reply
    sent = server.requests[0]
    assert sent["model"] == "test-model" and sent["stream"] is True
    assert sent["messages"][-1] == {"role": "user", "content": "hi"}
    assert {t["function"]["name"] for t in sent["tools"]} >= {"echo", "find_tools"}  # the core
    assert server.headers[0]["authorization"] == "Bearer sk-test-0123456789abcdef"


async def test_tool_call_deltas_split_and_interleaved(server, tmp_path):
    agent = make_agent(server, tmp_path)
    server.script(
        Message(calls=[Call("echo", json.dumps({"value": "first value"}), id="call_A"),
                       Call("echo", json.dumps({"value": "second value"}), id="call_B")],
                pieces=5, interleave=True),
        Message(text="done"),
    )
    result = await agent.arun("echo twice")
    assert result.status == "ok", result.error
    assert [(c.call_id, c.arguments, c.result) for c in result.tool_calls] == [
        ("call_A", {"value": "first value"}, "first value"),
        ("call_B", {"value": "second value"}, "second value"),
    ]
    follow_up = server.requests[1]["messages"]
    assistant = next(m for m in follow_up if m.get("tool_calls"))
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_A", "call_B"]
    assert server.tool_messages(1) == [
        {"role": "tool", "tool_call_id": "call_A", "content": "first value"},
        {"role": "tool", "tool_call_id": "call_B", "content": "second value"},
    ]
    # concurrent calls reach the ledger in the order they finish
    assert sorted(r["arguments"]["value"] for r in tool_records(agent)) == [
        "first value", "second value"]


async def test_tool_calls_of_one_response_run_concurrently(server, tmp_path):
    ping_seen, pong_seen = asyncio.Event(), asyncio.Event()

    async def ping() -> str:
        """Set ping, then wait for pong."""
        ping_seen.set()
        await pong_seen.wait()
        return "ping ok"

    async def pong() -> str:
        """Set pong, then wait for ping."""
        pong_seen.set()
        await ping_seen.wait()
        return "pong ok"

    # Run one after the other, each would wait for the other until the timeout.
    agent = make_agent(server, tmp_path, tools=[ping, pong], tool_timeout=3)
    server.script(Message(calls=[Call("ping", "{}"), Call("pong", "{}")]), Message(text="both"))
    result = await agent.arun("go")
    assert result.status == "ok"
    assert [(c.tool_name, c.success, c.result) for c in result.tool_calls] == [
        ("ping", True, "ping ok"), ("pong", True, "pong ok")]


async def test_several_tool_calls_non_streaming(server, tmp_path):
    agent = make_agent(server, tmp_path, stream=False)
    server.script(
        Message(text="Let me echo.", calls=[Call("echo", '{"value": "a"}'),
                                            Call("echo", '{"value": "b"}'),
                                            Call("echo", '{"value": "c"}')]),
        Message(text="Echoed a, b and c."),
    )
    result = await agent.arun("echo three")
    assert result.status == "ok" and result.reply == "Echoed a, b and c."
    assert [c.result for c in result.tool_calls] == ["a", "b", "c"]
    assert all(not r.get("stream") for r in server.requests)
    assert [m["content"] for m in server.tool_messages(1)] == ["a", "b", "c"]


async def test_malformed_json_goes_back_to_the_model(server, tmp_path):
    agent = make_agent(server, tmp_path)
    server.script(Message(calls=[Call("echo", '{"value": "unterminated', id="call_bad")]),
                  Message(text="sorry"))
    result = await agent.arun("echo")
    assert result.status == "ok"
    [message] = server.tool_messages(1)
    assert message["tool_call_id"] == "call_bad"
    assert message["content"].startswith("Error: Invalid JSON arguments for tool 'echo'")
    [record] = tool_records(agent)
    assert record["success"] is False and record["tool_name"] == "echo"
    assert "Invalid JSON arguments" in record["error"]
    assert record["arguments"] == '{"value": "unterminated'
    # the conversation keeps valid JSON (Anthropic's converter in litellm rejects bad JSON)
    assistant = next(m for m in server.requests[1]["messages"] if m.get("tool_calls"))
    assert assistant["tool_calls"][0]["function"]["arguments"] == "{}"


async def test_unknown_tool_goes_back_to_the_model(server, tmp_path):
    agent = make_agent(server, tmp_path)
    server.script(Message(calls=[Call("launch_rocket", '{"target": "moon"}')]),
                  Message(text="I cannot."))
    result = await agent.arun("launch")
    assert result.status == "ok" and result.reply == "I cannot."
    [message] = server.tool_messages(1)
    assert message["content"].startswith(  # spec 001's words, then the tools there are
        "Error: Unknown built-in tool: launch_rocket\n\nAvailable tools:")
    assert "echo" in message["content"]
    [record] = tool_records(agent)
    assert (record["tool_name"], record["success"]) == ("launch_rocket", False)
    assert record["arguments"] == {"target": "moon"}


def bounded(
    name: Annotated[str, Field(max_length=5)],
    count: Annotated[int, Field(ge=1, le=10)],
    color: Literal["red", "blue"],
) -> str:
    """A tool with limits.

    Args:
        name: A short name.
        count: How many, 1 to 10.
        color: Which colour.
    """
    return f"{name} x{count} {color}"


@pytest.mark.parametrize("arguments, expected", [
    ({"count": 1, "color": "red"}, "name: required argument is missing"),
    ({"name": "a", "count": "many", "color": "red"}, "count: Input should be a valid integer"),
    ({"name": "a", "count": 11, "color": "red"}, "count: Input should be less than or equal to 10"),
    ({"name": "abcdefgh", "count": 1, "color": "red"}, "name: String should have at most 5"),
    ({"name": "a", "count": 1, "color": "green"}, "color: Input should be 'red' or 'blue'"),
])
async def test_invalid_arguments_go_back_to_the_model(server, tmp_path, arguments, expected):
    calls_made: list[Any] = []

    def spy(name: str) -> str:
        """Never to be called."""
        calls_made.append(name)
        return name

    agent = make_agent(server, tmp_path, tools=[bounded, spy])
    server.script(Message(calls=[Call("bounded", json.dumps(arguments))]), Message(text="ok"))
    result = await agent.arun("use bounded")
    assert result.status == "ok"
    [message] = server.tool_messages(1)
    assert message["content"].startswith("Error: Invalid arguments for tool 'bounded': ")
    assert expected in message["content"]
    [record] = tool_records(agent)
    assert record["success"] is False and expected in record["error"]
    assert record["arguments"] == arguments and record["result"] is None


async def test_valid_arguments_reach_the_tool(server, tmp_path):
    agent = make_agent(server, tmp_path, tools=[bounded])
    server.script(Message(calls=[Call("bounded", '{"name": "abc", "count": 10, "color": "blue"}')]),
                  Message(text="ok"))
    result = await agent.arun("use bounded")
    assert result.tool_calls[0].result == "abc x10 blue"
    assert server.tool_messages(1)[0]["content"] == "abc x10 blue"


async def test_tool_timeout_goes_back_to_the_model(server, tmp_path):
    async def slow() -> str:
        """Take far too long."""
        await asyncio.sleep(10)
        return "never"

    agent = make_agent(server, tmp_path, tools=[slow], tool_timeout=0.2)
    server.script(Message(calls=[Call("slow", "{}")]), Message(text="it timed out"))
    result = await agent.arun("be slow")
    assert result.status == "ok"
    expected = "Tool 'slow' execution exceeded 0.2s timeout"
    assert server.tool_messages(1)[0]["content"] == f"Error: {expected}"
    [record] = tool_records(agent)
    assert record["success"] is False and record["error"] == expected
    assert record["duration_ms"] >= 190


async def test_failing_tool_names_the_error(server, tmp_path):
    def broken() -> str:
        """Always fails."""
        raise KeyError("missing piece")

    agent = make_agent(server, tmp_path, tools=[broken])
    server.script(Message(calls=[Call("broken", "{}")]), Message(text="hm"))
    await agent.arun("break")
    content = server.tool_messages(1)[0]["content"]
    assert content.startswith("Error: Tool 'broken' execution failed:")
    assert "missing piece" in content


async def test_record_is_on_disk_before_the_model_sees_the_result(server, tmp_path):
    agent = make_agent(server, tmp_path)
    seen_on_disk: list[list[dict[str, Any]]] = []

    def read_ledger(number: int, body: dict[str, Any]) -> None:
        if number == 1:
            path = tmp_path / "ledger.jsonl"
            lines = path.read_text().splitlines() if path.exists() else []
            seen_on_disk.append([json.loads(line) for line in lines])

    server.on_request = read_ledger
    server.script(Message(calls=[Call("echo", '{"value": "durable"}', id="call_d")]),
                  Message(text="ok"))
    await agent.arun("echo durable")
    [records] = seen_on_disk
    assert [(r["tool_name"], r["result"], r["success"]) for r in records] == [
        ("echo", "durable", True)]
    assert server.tool_messages(1)[0]["content"] == "durable"


async def test_429_then_success(server, tmp_path):
    agent = make_agent(server, tmp_path)
    notices: list[Any] = []
    agent.bus.subscribe(notices.append)
    server.script(HttpError(429, "slow down", retry_after=0.3), Message(text="fine now"))
    result = await agent.arun("hi")
    assert result.status == "ok" and result.reply == "fine now"
    assert len(server.requests) == 2
    [notice] = [e.text for e in notices if isinstance(e, Notice)]
    assert "rate limited (429)" in notice and "slow down" in notice
    assert notice.endswith("retry 1 in 0.3 s")  # the server's Retry-After, not the backoff


async def test_500_forever_ends_the_run_with_a_clear_error(server, tmp_path):
    agent = make_agent(server, tmp_path, max_retries=2)
    server.script(HttpError(500, "the scripted backend is down", forever=True))
    result = await agent.arun("hi")
    assert result.status == "error"
    assert len(server.requests) == 3  # max_retries + 1
    assert "after 3 attempts" in result.error
    assert "server error (500)" in result.error
    assert "the scripted backend is down" in result.error


async def test_cut_stream_is_retried(server, tmp_path):
    agent = make_agent(server, tmp_path)
    events: list[Any] = []
    agent.bus.subscribe(events.append)
    server.script(CutStream("half an ans"), Message(text="A whole answer."))
    result = await agent.arun("hi")
    assert result.status == "ok" and result.reply == "A whole answer."
    assert len(server.requests) == 2
    kinds = [type(e) for e in events]
    assert StreamReset in kinds
    # the partial text streamed before the break, then the views were told to drop it
    reset_at = kinds.index(StreamReset)
    before = "".join(e.text for e in events[:reset_at] if isinstance(e, TextDelta))
    assert before and "half an ans".startswith(before)


async def test_stream_ending_without_finish_is_retried(server, tmp_path):
    agent = make_agent(server, tmp_path, max_retries=1)
    server.script(CutStream("never finish", abrupt=False), Message(text="Finished."))
    result = await agent.arun("hi")
    assert result.status == "ok" and result.reply == "Finished."
    server.script(CutStream("never finish", abrupt=False, forever=True))
    result = await agent.arun("again")
    assert result.status == "error"
    assert "the stream ended before the model finished its answer" in result.error


async def test_cut_stream_forever_ends_with_a_clear_error(server, tmp_path):
    agent = make_agent(server, tmp_path, max_retries=1)
    server.script(CutStream(forever=True))
    result = await agent.arun("hi")
    assert result.status == "error"
    assert len(server.requests) == 2
    assert "the stream broke" in result.error and "after 2 attempts" in result.error


async def test_refused_request_is_not_retried_and_does_not_raise(server, tmp_path):
    agent = make_agent(server, tmp_path)
    server.script(HttpError(401, "bad api key"), Message(text="never"))
    result = await agent.arun("hi")
    assert result.status == "error" and len(server.requests) == 1
    assert "401" in result.error and "bad api key" in result.error


async def test_unreachable_server_does_not_raise(tmp_path, model_path):
    with ScriptedServer() as srv:
        agent = make_agent(srv, tmp_path, max_retries=1)
    result = await agent.arun("hi")  # the server is gone now
    # a refused connection is said at once, not retried (issue 25)
    assert result.status == "error" and "nothing is listening at" in result.error
    assert "attempts" not in result.error


async def test_tool_call_limit(server, tmp_path):
    agent = make_agent(server, tmp_path, max_tool_calls=3)
    events: list[Any] = []
    agent.bus.subscribe(events.append)
    echo_two = [Call("echo", '{"value": "x"}'), Call("echo", '{"value": "y"}')]
    server.script(Message(calls=echo_two), Message(calls=echo_two), Message(text="never"))
    result = await agent.arun("loop")
    assert result.status == "limit"
    assert "limit is 3" in result.error
    assert len(server.requests) == 2
    assert [c.success for c in result.tool_calls] == [True, True, True, False]
    records = tool_records(agent)
    assert len(records) == 4
    assert records[-1]["error"].startswith("Tool call limit reached: at most 3")
    # every call, the refused one too, is announced to the views before it finishes
    started = [e.call_id for e in events if isinstance(e, ToolCallStarted)]
    finished = [e.call_id for e in events if isinstance(e, ToolCallFinished)]
    assert sorted(started) == sorted(finished) and len(finished) == 4
    assert [e.kind for e in events if isinstance(e, RunError)] == ["limit"]


async def test_using_exactly_the_limit_still_gets_an_answer(server, tmp_path):
    agent = make_agent(server, tmp_path, max_tool_calls=2)
    server.script(Message(calls=[Call("echo", '{"value": "x"}'), Call("echo", '{"value": "y"}')]),
                  Message(text="two calls, then done"))
    result = await agent.arun("two")
    assert result.status == "ok" and result.reply == "two calls, then done"


async def test_usage_is_summed_and_cost_kept(server, tmp_path):
    agent = make_agent(server, tmp_path)
    server.script(Message(calls=[Call("echo", '{"value": "x"}')], usage=usage(7, 3)),
                  Message(text="done", usage=usage(11, 4)))
    result = await agent.arun("hi")
    assert result.usage == {"prompt_tokens": 18, "completion_tokens": 7, "total_tokens": 25}
    assert result.cost is None  # litellm has no price for test-model


async def test_cost_from_litellm_prices(server, tmp_path):
    from agent_kernel.engine.models import llm

    llm.load_litellm().register_model({"openai/priced-test-model": {
        "input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6,
        "litellm_provider": "openai", "mode": "chat"}})
    agent = make_agent(server, tmp_path, model="openai/priced-test-model", stream=False)
    server.script(Message(calls=[Call("echo", '{"value": "x"}')], usage=usage(100, 10)),
                  Message(text="done", usage=usage(200, 20)))
    result = await agent.arun("hi")
    assert result.status == "ok"
    assert result.cost == pytest.approx(300 * 1e-6 + 30 * 2e-6)


async def test_conversation_goes_on_across_runs(server, tmp_path):
    agent = make_agent(server, tmp_path)
    server.script(Message(text="first"), Message(text="second"), Message(text="fresh"))
    await agent.arun("one")
    await agent.arun("two")
    contents = [m["content"] for m in server.requests[1]["messages"] if m["role"] != "system"]
    assert contents == ["one", "first", "two"]
    await agent.arun("three", new=True)
    contents = [m["content"] for m in server.requests[2]["messages"] if m["role"] != "system"]
    assert contents == ["three"]


# Which path a turn takes, and what the fast path shares (issue 27).

async def test_a_turn_takes_the_path_asked_for(server, tmp_path, model_path):
    from agent_kernel.engine.models import fast_path

    before = fast_path.requests_sent
    agent = make_agent(server, tmp_path)
    assert agent.settings.openai_fast_path is model_path.fast
    server.script(Message(calls=[Call("echo", '{"value": "x"}')]), Message(text="done"))
    result = await agent.arun("hi")
    assert result.status == "ok" and len(server.requests) == 2
    assert fast_path.requests_sent - before == (2 if model_path.fast else 0)
    assert model_path.litellm_calls == (0 if model_path.fast else 2)


def _same_clock(request: dict[str, Any]) -> dict[str, Any]:
    """A request with its system prompt's time taken out (the two runs differ by seconds)."""
    messages = [m for m in request["messages"] if m["role"] != "system"]
    return {**request, "messages": messages}


async def test_both_paths_send_the_same_request(tmp_path):
    bodies: list[list[dict[str, Any]]] = []
    for fast in (False, True):
        with ScriptedServer() as srv:
            agent = make_agent(srv, tmp_path / str(fast), openai_fast_path=fast, temperature=0.2,
                               extra_completion_args={"max_tokens": 50})
            srv.script(Message(calls=[Call("echo", '{"value": "x"}', id="call_1")]),
                       Message(text="done"))
            result = await agent.arun("hi")
            assert result.status == "ok"
            bodies.append([_same_clock(r) for r in srv.requests])
    assert bodies[0] == bodies[1]
    assert bodies[1][0]["temperature"] == 0.2 and bodies[1][0]["max_tokens"] == 50


def test_the_fast_paths_body_is_the_sdks_json_with_the_schemas_written_once():
    """The body goes as the bytes the SDK's own encoder makes of it; the schemas' part is
    kept by their identity, so a copy of the list reuses it and a new schema does not."""
    from openai._utils._json import openapi_dumps

    from agent_kernel.engine.models import fast_path

    echo = {"type": "function", "function": {"name": "echo", "description": "Échoue « x »",
                                             "parameters": {"type": "object"}}}
    body = {"model": "m", "messages": [{"role": "user", "content": "hé"}], "tools": [echo],
            "stream": True}
    sent = fast_path.encoded(body)
    assert json.loads(sent) == json.loads(openapi_dumps(body)) == body
    assert "Échoue « x »".encode() in sent  # as the SDK sends it: UTF-8, not \u escapes
    assert fast_path.encoded({**body, "tools": list(body["tools"])}) == sent
    other = {"type": "function", "function": {**echo["function"], "name": "echo2"}}
    assert json.loads(fast_path.encoded({**body, "tools": [other]}))["tools"] == [other]
    assert json.loads(fast_path.encoded({"model": "m", "messages": []})) == {
        "model": "m", "messages": []}


AWKWARD_CHUNKS: list[dict[str, Any]] = [
    {"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "content": None}}]},
    {"id": "c", "choices": [{"index": 0, "delta": {"content": "Hel"}}]},
    {"id": "c", "choices": [{"index": 0, "delta": None}]},
    {"id": "c", "choices": [{"index": 0, "delta": {"content": "lo", "tool_calls": [
        {"index": 1, "id": "call_b", "function": {"name": "ec", "arguments": "{"}},
        {"index": 0, "id": "call_a", "type": "function", "function": {"name": "echo"}}]}}]},
    {"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 1, "function": {"name": "ho", "arguments": "}"}},
        {"index": 0, "id": None, "function": {"arguments": '{"value": 1}'}}]}}]},
    {"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": None, "id": "call_c", "function": None}]}}]},
    {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    {"id": "c", "choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": None,
                                         "total_tokens": 9}},
]


@pytest.mark.parametrize("cut", [False, True])
async def test_the_fast_paths_chunks_read_as_the_sdks_models_did(cut):
    """The fast path reads the server's JSON as it came (dicts); the turn is the one the
    SDK's chunk models gave, down to null deltas, calls split by index and a cut stream."""
    from openai._models import construct_type
    from openai.types.chat import ChatCompletionChunk

    from agent_kernel.engine.models import llm

    chunks = AWKWARD_CHUNKS[:-2] if cut else AWKWARD_CHUNKS

    async def feed(items: list[Any]) -> Any:
        for item in items:
            yield item

    turns: list[Any] = []
    for read, items in ((llm._read_stream, [construct_type(type_=ChatCompletionChunk, value=c)
                                            for c in chunks]),
                        (llm._read_chunks, chunks)):
        said: list[str] = []
        try:
            turns.append(await read(feed(items), said.append))
        except llm.BrokenStream as exc:
            turns.append(str(exc))
        turns.append(said)
    assert turns[0] == turns[2] and turns[1] == turns[3] == ["Hel", "lo"]
    if cut:
        assert turns[0] == llm.CUT_STREAM_WORDS
    else:
        assert [(c.id, c.name, c.arguments) for c in turns[2].tool_calls] == [
            ("call_a", "echo", '{"value": 1}'), ("call_b", "echo", "{}"), ("call_c", "", "")]
        assert turns[2].usage == {"prompt_tokens": 7, "completion_tokens": 0, "total_tokens": 9}
        assert turns[2].text == "Hello" and turns[2].finish_reason == "tool_calls"


@pytest.mark.parametrize("change, why", [
    ({"openai_fast_path": False}, "switched off"),
    ({"extra_completion_args": {"metadata": {"team": "x"}}}, "a key litellm handles itself"),
])
def test_what_the_fast_path_cannot_honour_goes_through_litellm(change, why):
    from agent_kernel.engine.models import fast_path, llm

    plain = Settings(api_base="http://127.0.0.1:9/v1", api_key="sk-test-0123456789abcdef")
    assert fast_path.route(MODEL, plain, llm.load_litellm()) is not None
    changed = Settings(**{**plain.__dict__, **change})
    assert fast_path.route(MODEL, changed, llm.load_litellm()) is None, why


@pytest.mark.parametrize("model, fast", [
    ("openai/test-model", True), ("gpt-4o-mini", True), ("openai/gpt-4o", True),
    ("o3-mini", False),  # litellm rewrites an o-series model's parameters
    ("gpt-5", False), ("anthropic/claude-sonnet-4-5", False), ("ollama/llama3.2", False),
])
def test_the_fast_path_is_for_what_litellm_sends_to_openai_unchanged(model, fast):
    from agent_kernel.engine.models import fast_path, llm

    settings = Settings(api_key="sk-test-0123456789abcdef")
    assert (fast_path.route(model, settings, llm.load_litellm()) is not None) is fast


async def test_every_run_shares_one_connection_pool(tmp_path, monkeypatch):
    from agent_kernel.engine.models import fast_path

    made: list[object] = []
    original = fast_path.client

    def counted(where: fast_path.Route) -> Any:
        made.append(original(where))
        return made[-1]

    monkeypatch.setattr(fast_path, "client", counted)
    with ScriptedServer() as srv:
        agents = [make_agent(srv, tmp_path / f"a{i}", openai_fast_path=True) for i in range(2)]
        srv.script(*[Message(text=f"answer {i}", delay=0.05) for i in range(20)])
        results = await asyncio.gather(*(agents[i % 2].arun(f"run {i}", isolated=True)
                                         for i in range(20)))
    assert all(r.status == "ok" for r in results)
    assert len(made) >= 20 and len({id(c) for c in made}) == 1  # one client, one pool
    session = made[0]._client._transport.client  # type: ignore[attr-defined]
    assert session.connector.limit >= 20  # 20 runs at once need not queue for a connection


async def test_the_key_reaches_no_repr_log_or_ledger(server, tmp_path, model_path, caplog):
    import logging

    from agent_kernel.engine.models import fast_path, llm

    key = "sk-test-0123456789abcdef"
    agent = make_agent(server, tmp_path)
    server.script(Message(calls=[Call("echo", '{"value": "x"}')]), Message(text="done"))
    with caplog.at_level(logging.DEBUG):
        result = await agent.arun("hi")
    assert result.status == "ok"
    where = fast_path.route(MODEL, Settings(**{**agent.settings.__dict__,
                                               "openai_fast_path": True}), llm.load_litellm())
    assert where is not None and key not in repr(where)
    assert key not in caplog.text
    assert key not in (tmp_path / "ledger.jsonl").read_text()



async def test_a_price_registered_after_a_run_counts_in_the_next(server, tmp_path, model_path):
    # litellm's "no price for this model" is remembered between turns, until its table grows
    from agent_kernel.engine.models import llm

    model = f"openai/later-priced-{model_path.name.replace(' ', '-')}-model"  # one per path
    agent = make_agent(server, tmp_path, model=model)
    server.script(Message(text="one", usage=usage(100, 10)),
                  Message(text="two", usage=usage(100, 10)))
    assert (await agent.arun("hi")).cost is None
    llm.load_litellm().register_model({model: {
        "input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6,
        "litellm_provider": "openai", "mode": "chat"}})
    assert (await agent.arun("again")).cost == pytest.approx(100 * 1e-6 + 10 * 2e-6)


def test_loading_litellm_imports_what_the_first_fast_request_would():
    # a warm kernel's first run does not pay the SDK's chat types, the HTTP transport
    # (aiohttp's, through the SDK) or the TLS context (~100 ms): litellm's load (the
    # warm-up) does
    import subprocess
    import sys

    code = ("import sys\nfrom agent_kernel.engine.models import fast_path, llm\n"
            "before = {m for m in ('openai.resources.chat', 'aiohttp.client', "
            "'openai._vendor.httpx_aiohttp.transport') if m in sys.modules}\n"
            "llm.load_litellm()\n"
            "print(sorted(before), 'openai.resources.chat' in sys.modules, "
            "'openai._vendor.httpx_aiohttp.transport' in sys.modules, "
            "fast_path._tls_context is not None)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.split("\n")[0] == "[] True True True", done.stdout + done.stderr


def test_runs_on_loops_that_ended_leave_no_unclosed_connection_words(tmp_path):
    # Agent.run outside a kernel runs each prompt on a loop of its own (asyncio.run); the
    # fast path's connections on a loop that ended are let go quietly, at the next loop's
    # first request and at exit: aiohttp would otherwise print "Unclosed client session"
    import subprocess
    import sys

    with ScriptedServer() as srv:
        srv.script(Message(text="one"), Message(text="two"))
        code = ("import sys\nfrom agent_kernel import Agent, Settings\n"
                "from agent_kernel.engine.models import fast_path\n"
                f"a = Agent(model={MODEL!r}, workspace=sys.argv[1], settings=Settings("
                f"api_base={srv.base_url!r}, api_key='sk-test-0123456789abcdef', "
                "openai_fast_path=True))\n"
                "print(a.run('hi').reply, a.run('again').reply, fast_path.requests_sent)\n")
        done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "ws")],
                              capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split("\n")[0] == "one two 2", done.stdout + done.stderr
    assert "Unclosed" not in done.stderr and "Traceback" not in done.stderr, done.stderr


async def test_both_paths_send_the_same_images_and_history():
    # an image message, a turn of only tool calls and its result, as the loop sends them
    from agent_kernel.engine.models.llm import complete

    png = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
           "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
    messages: list[Any] = [
        {"role": "system", "content": "be brief"}, {"role": "user", "content": "plot it"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "plot", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "a figure"},
        {"role": "user", "content": [{"type": "text", "text": "the figure"},
                                     {"type": "image_url", "image_url": {"url": png}}]}]
    from agent_kernel.engine.models import fast_path

    with ScriptedServer() as srv:
        for fast in (False, True):
            srv.script(Message(text="a line"))
            before = fast_path.requests_sent
            turn = await complete(MODEL, messages, [], Settings(
                api_base=srv.base_url, api_key="sk-test-0123456789abcdef", openai_fast_path=fast),
                on_text=lambda _: None, on_retry=lambda *_: None)
            assert turn.text == "a line" and fast_path.requests_sent - before == int(fast)
        assert srv.requests[0] == srv.requests[1]
    assert messages[2]["content"] is None  # what the loop keeps is not changed by sending it


def test_an_ended_event_loop_leaves_no_client_behind(tmp_path):
    # Agent.run outside a kernel runs each prompt on a new loop (asyncio.run)
    from agent_kernel.engine.models import fast_path

    with ScriptedServer() as srv:
        agent = make_agent(srv, tmp_path, openai_fast_path=True)
        srv.script(Message(text="one"), Message(text="two"), Message(text="three"))
        assert [agent.run(p).reply for p in ("a", "b", "c")] == ["one", "two", "three"]
    assert len(fast_path._clients) == 1  # the last loop's; the two before were dropped


async def test_the_fast_path_checks_the_servers_certificate(tmp_path, monkeypatch):
    # aiohttp's transport under the SDK verifies TLS as httpx's did: a server whose
    # certificate no trusted authority signed never sees the request (nor the key in it)
    import ssl

    import trustme

    from agent_kernel.engine.models import fast_path

    authority = trustme.CA()
    server = ScriptedServer()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    authority.issue_cert("127.0.0.1").configure_cert(context)
    server._httpd.socket = context.wrap_socket(server._httpd.socket, server_side=True)
    with server:
        server.script(Message(text="over TLS"))

        def agent(key: str, fast: bool = True) -> Agent:
            return Agent(model=MODEL, workspace=tmp_path / key, settings=Settings(
                api_base=f"https://127.0.0.1:{server.port}/v1", api_key=key,
                openai_fast_path=fast, max_retries=1, retry_base_delay=0.01))

        before = fast_path.requests_sent
        refused = await agent("sk-test-untrusted-0123456789").arun("hi")
        assert fast_path.requests_sent == before + 1  # it went the fast path's way
        by_litellm = await agent("sk-test-untrusted-litellm-01", fast=False).arun("hi")
        assert server.requests == [] and fast_path.requests_sent == before + 1
        assert refused.status == by_litellm.status == "error"
        assert refused.error == by_litellm.error, (refused.error, by_litellm.error)
        # said in words, once, not retried: the reason, what to check, how to trust it
        assert refused.error == (
            "The model provider failed: the model server's certificate could not be "
            "verified (unable to get local issuer certificate), so nothing was sent: check "
            "api_base; a server whose certificate comes from an authority of its own needs "
            "that authority trusted (set SSL_CERT_FILE to its certificate file)")
        trusting = ssl.create_default_context()
        authority.configure_trust(trusting)
        monkeypatch.setattr(fast_path, "_tls_context", trusting)
        trusted = await agent("sk-test-trusted-0123456789ab").arun("hi")
        assert trusted.status == "ok" and trusted.reply == "over TLS", trusted.error
        assert len(server.requests) == 1


async def test_an_sdk_without_its_aiohttp_transport_falls_back_to_httpx(tmp_path, monkeypatch):
    # the correction of the SDK's vendored aiohttp module is the only private thing the
    # fast path leans on: a release that moves it leaves the fast path on httpx, working
    from agent_kernel.engine.models import fast_path

    def moved() -> None:
        raise ImportError("no module named openai._vendor.httpx_aiohttp")

    monkeypatch.setattr(fast_path, "_map_errors", moved)
    with ScriptedServer() as srv:
        srv.script(Message(text="still here"))
        agent = make_agent(srv, tmp_path, openai_fast_path=True)
        before = fast_path.requests_sent
        result = await agent.arun("hi")
        assert result.status == "ok" and result.reply == "still here", result.error
        assert fast_path.requests_sent == before + 1
    [made] = [c for mine in fast_path._clients.values() for slot, c in mine.items()
              if slot[0] == srv.base_url]
    assert type(made._client._transport).__module__.startswith("httpx2")
