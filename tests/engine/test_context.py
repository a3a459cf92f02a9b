"""Context care: counting a window, its status, compress_context and automatic compaction.

Counting is checked against litellm's own tokenizer (offline data); the loop is
driven over real HTTP through litellm to a scripted server on 127.0.0.1, with a
window small enough that a long conversation must be compacted to fit, so what is
counted is what litellm sends. A test that only needs an answer scripts it in-process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from scripted_model import ScriptedModel
from scripted_server import Call, HttpError, Message, ScriptedServer

from agent_kernel import Agent, Settings, Tool
from agent_kernel.core.events import ContextCompacted, Notice
from agent_kernel.engine.context import (
    DEFAULT_WINDOW,
    SUMMARY_HEADING,
    SUMMARY_REQUEST,
    ContextWindow,
    compress,
    count_tokens,
    max_tokens,
    status_of,
    upper_bound,
)
from agent_kernel.engine.models.litellm_loader import load_litellm

MODEL = "openai/test-model"
WORDS = ["apple", "river", "stone", "cloud", "green", "table", "music", "light", "paper",
         "window", "garden", "bread", "chair", "ocean", "forest", "silver", "market", "letter",
         "winter", "summer"]


def filler(count: int, seed: int = 0) -> str:
    """``count`` common words (about one token each)."""
    return " ".join(WORDS[(i * 7 + seed) % len(WORDS)] for i in range(count))


def call(call_id: str, name: str = "note") -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": '{"text": "x"}'}}


def conversation() -> list[dict[str, Any]]:
    """A system prompt, then 12 messages: two tool rounds (one with two calls) among text."""
    return [
        {"role": "system", "content": "You are a test."},
        {"role": "user", "content": "u1"},                                   # 1
        {"role": "assistant", "content": None, "tool_calls": [call("a")]},   # 2
        {"role": "tool", "tool_call_id": "a", "content": "ra"},              # 3
        {"role": "assistant", "content": "t1"},                              # 4
        {"role": "user", "content": "u2"},                                   # 5
        {"role": "assistant", "content": "t2"},                              # 6
        {"role": "user", "content": "u3"},                                   # 7
        {"role": "assistant", "content": None,
         "tool_calls": [call("b1"), call("b2")]},                            # 8
        {"role": "tool", "tool_call_id": "b1", "content": "rb1"},            # 9
        {"role": "tool", "tool_call_id": "b2", "content": "rb2"},            # 10
        {"role": "assistant", "content": "t3"},                              # 11
        {"role": "user", "content": "u4"},                                   # 12
    ]


def assert_pairs_whole(messages: list[dict[str, Any]]) -> None:
    """Every tool result follows the assistant message that called it, and every call
    has its result."""
    open_calls: set[str] = set()
    for message in messages:
        if message["role"] == "tool":
            assert message["tool_call_id"] in open_calls, message
            open_calls.discard(message["tool_call_id"])
        else:
            assert not open_calls, f"calls without results: {open_calls}"
            open_calls = {c["id"] for c in message.get("tool_calls") or ()}


# -- counting, the window, the status -------------------------------------------------

def test_counting_uses_litellms_tokenizer_for_the_model():
    litellm = load_litellm()
    messages = [{"role": "system", "content": "Be brief."},
                {"role": "user", "content": "How many tokens is this sentence, exactly?"}]
    tools = [Tool(lambda text: text, name="note").schema()]
    for model in ("gpt-4o-mini", "openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5"):
        expected = litellm.token_counter(model=model, messages=messages, tools=tools)
        assert count_tokens(model, messages, tools) == expected
    plain = count_tokens("gpt-4o-mini", messages)
    assert plain == litellm.token_counter(model="gpt-4o-mini", messages=messages)
    assert 15 < plain < count_tokens("gpt-4o-mini", messages, tools)
    longer = [*messages, {"role": "assistant", "content": filler(300)}]
    assert count_tokens("gpt-4o-mini", longer) - plain >= 300
    # no tokenizer counts more than the cheap bound the loop checks first
    assert upper_bound(longer, tools) > count_tokens("gpt-4o-mini", longer, tools)


def test_the_window_comes_from_litellms_data_or_the_settings():
    info = load_litellm().get_model_info("gpt-4o-mini")
    assert max_tokens("openai/gpt-4o-mini", Settings()) == info["max_input_tokens"] == 128_000
    assert max_tokens("anthropic/claude-sonnet-4-5", Settings()) == 200_000
    assert max_tokens("openai/gpt-4o-mini", Settings(context_window=4000)) == 4000
    assert max_tokens(MODEL, Settings()) == DEFAULT_WINDOW  # litellm does not know it
    assert max_tokens("demo", Settings()) == DEFAULT_WINDOW
    with pytest.raises(ValueError, match="context_window must be at least 256 tokens, got 10"):
        Settings(context_window=10)


def test_the_demo_model_is_counted_without_importing_litellm():
    code = ("import sys; from agent_kernel.engine.context import count_tokens, max_tokens;"
            "from agent_kernel.core.config import Settings;"
            "m = [{'role': 'user', 'content': 'x' * 400}];"
            "print(count_tokens('demo', m), max_tokens('demo', Settings()),"
            " 'litellm' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.split() == ["104", str(DEFAULT_WINDOW), "False"]  # 400 / 4 + 4


@pytest.mark.parametrize(("percent", "status"), [
    (0, "normal"), (69.99, "normal"), (70, "warning"), (89.99, "warning"),
    (90, "critical"), (99.99, "critical"), (100, "exceeded"), (250, "exceeded")])
def test_status_thresholds(percent, status):
    assert status_of(percent) == status


def test_status_reports_the_next_request():
    messages = [{"role": "user", "content": filler(700)}]
    window = ContextWindow("gpt-4o-mini", messages, Settings(context_window=1000))
    used = count_tokens("gpt-4o-mini", messages)
    assert window.status() == {"ok": True, "usedTokens": used, "maxTokens": 1000,
                               "usagePercent": round(used / 10, 2), "status": "warning"}
    messages.append({"role": "assistant", "content": filler(300)})
    assert window.status()["status"] == "exceeded"


# -- compress ---------------------------------------------------------------------------

def test_compress_replaces_the_older_messages_and_keeps_the_recent_ones():
    messages = conversation()
    assert compress(messages, "the summary", keep_recent=2) == (10, 2)
    assert messages[0] == {"role": "system", "content": "You are a test."}
    assert messages[1] == {"role": "user", "content": f"{SUMMARY_HEADING}\n\nthe summary"}
    assert [m["content"] for m in messages[2:]] == ["t3", "u4"]


def test_compress_never_parts_a_tool_call_from_its_results():
    # keeping 3 would start at rb2, inside the round with two calls: the round stays whole
    messages = conversation()
    assert compress(messages, "s", keep_recent=3) == (7, 5)
    assert [m.get("content") for m in messages[2:]] == [None, "rb1", "rb2", "t3", "u4"]
    assert_pairs_whole(messages)
    for keep in range(0, 14):
        messages = conversation()
        compressed, remaining = compress(messages, "s", keep_recent=keep)
        assert compressed + remaining == 12
        assert remaining >= min(max(keep, 1), 12)  # the last message always stays
        assert messages[-1] == {"role": "user", "content": "u4"}
        assert_pairs_whole(messages)
        assert messages[0]["role"] == "system"
        if compressed:
            assert messages[1]["content"].startswith(SUMMARY_HEADING)


def test_compress_with_too_few_messages_changes_nothing():
    messages = conversation()
    assert compress(messages, "s", keep_recent=12) == (0, 12)
    assert messages == conversation()
    no_system = conversation()[1:]
    assert compress(no_system, "s", keep_recent=1) == (11, 1)
    assert no_system[0]["content"].startswith(SUMMARY_HEADING) and len(no_system) == 2


def test_the_turn_that_calls_compress_keeps_its_tool_calls():
    # mid-turn: the last message calls tools whose results are not in yet
    messages = [*conversation(), {"role": "assistant", "content": None,
                                  "tool_calls": [call("c", "compress_context")]}]
    assert compress(messages, "s", keep_recent=0) == (12, 1)
    assert messages[-1]["tool_calls"][0]["id"] == "c"


# -- through the loop, over HTTP ---------------------------------------------------------

class AnsweringServer(ScriptedServer):
    """A scripted server that answers each request by what it asks (``answer(body)``)."""

    def __init__(self, answer: Any) -> None:
        super().__init__()
        self._answer = answer
        self._placeholders: dict[int, Message] = {}
        self.on_request = self._fill

    def _next(self) -> tuple[int, Message]:
        with self._lock:
            number = len(self.requests)
            self._placeholders[number] = placeholder = Message()
        return number, placeholder

    def _fill(self, number: int, body: dict[str, Any]) -> None:
        made = self._answer(body)
        placeholder = self._placeholders.pop(number)
        placeholder.text, placeholder.calls = made.text, made.calls


def is_summary_request(body: dict[str, Any]) -> bool:
    return body["messages"][0]["content"] == SUMMARY_REQUEST


def make_agent(server: ScriptedServer, workspace: Path, *, builtin_tools: bool = True,
               **settings: Any) -> Agent:
    return Agent(model=MODEL, workspace=workspace, builtin_tools=builtin_tools,
                 settings=Settings(api_base=server.base_url, api_key="sk-test-0123456789abcdef",
                                   retry_base_delay=0.01, **settings))


def only_tool(agent: Agent, tool: Tool) -> None:
    """Leave ``tool`` the agent's only tool (tools other tests registered go)."""
    for name in agent.registry.names():
        agent.registry.remove(name)
    agent.registry.add(tool)


def note(text: str) -> str:
    """Keep a note.

    Args:
        text: The note.
    """
    return f"noted {len(text.split())} words"


def records(agent: Agent, kind: str) -> list[dict[str, Any]]:
    return [r for r in agent.ledger.records() if r.get("kind") == kind]


async def test_the_agent_reads_its_status_and_compresses_its_context(tmp_path):
    with ScriptedServer() as server:
        agent = make_agent(server, tmp_path, context_window=60_000)
        events: list[Any] = []
        agent.bus.subscribe(events.append)
        server.script(
            Message(calls=[Call("echo", '{"value": "one"}')]), Message(text="first answer"),
            Message(calls=[Call("echo", '{"value": "two"}'), Call("echo", '{"value": "3"}')]),
            Message(text="second answer"),
            Message(calls=[Call("get_context_status", "{}")]),
            Message(calls=[Call("compress_context",
                                json.dumps({"summary": "We echoed one, two and 3.",
                                            "keepRecentCount": 2}))]),
            Message(text="compacted"))
        assert (await agent.arun("echo one")).ok
        assert (await agent.arun("echo two and 3")).ok
        result = await agent.arun("how full is your context? then compress it")
        assert result.status == "ok", result.error
        asked = server.requests[4]
        status = json.loads(server.tool_messages(5)[-1]["content"])
        sent = load_litellm().token_counter(model=MODEL, messages=asked["messages"],
                                            tools=asked["tools"])
        # the request that asked, plus the assistant turn that made the call
        assert sent < status["usedTokens"] < sent + 60
        assert status["maxTokens"] == 60_000 and status["status"] == "normal"
        assert status["usagePercent"] == round(status["usedTokens"] / 600, 2)
        assert set(status) == {"ok", "usedTokens", "maxTokens", "usagePercent", "status"}

        compressed = json.loads(server.tool_messages(6)[-1]["content"])
        # 13 messages after the system prompt when compress_context ran: keeping 2 would
        # part the status call from its result, so that round stays whole with this turn
        assert compressed == {"ok": True, "compressedCount": 10, "remainingCount": 3}
        final = server.requests[6]["messages"]
        assert final[0]["role"] == "system"
        assert final[1] == {"role": "user",
                            "content": f"{SUMMARY_HEADING}\n\nWe echoed one, two and 3."}
        assert [m["role"] for m in final[2:]] == ["assistant", "tool", "assistant", "tool"]
        assert_pairs_whole(final)
        assert agent.messages[-1] == {"role": "assistant", "content": "compacted"}
        [shown] = [e for e in events if isinstance(e, ContextCompacted)]
        assert isinstance(shown, Notice)  # every view already shows it
        assert (shown.summary_by, shown.compressed_count, shown.remaining_count) == (
            "agent", 10, 3)
        [record] = [r for r in records(agent, "tool_call")
                    if r["tool_name"] == "compress_context"]
        assert record["success"] and record["result"]["compressedCount"] == 10


async def test_compress_context_refuses_an_empty_summary(tmp_path):
    with ScriptedModel() as server:
        agent = Agent(model=server, workspace=tmp_path)
        server.script(Message(calls=[Call("compress_context", '{"summary": "   "}')]),
                      Message(text="ok"))
        result = await agent.arun("compress")
        assert result.status == "ok"
        told = server.tool_messages(1)[0]["content"]
        assert told.startswith("Error: Tool 'compress_context' execution failed: summary "
                               "cannot be empty")
        assert len(agent.messages) == 5  # nothing was compacted


async def test_automatic_compaction_keeps_a_long_conversation_under_a_small_window(tmp_path):
    window = 2000

    def answer(body: dict[str, Any]) -> Message:
        if is_summary_request(body):
            summaries = sum(1 for r in server.requests if is_summary_request(r))
            return Message(text=f"SUMMARY-{summaries}: the person asked about topics.")
        last = body["messages"][-1]
        if last["role"] == "user":
            return Message(calls=[Call("note", json.dumps({"text": filler(150, 3)}))])
        return Message(text=f"Answer. {filler(120, 5)}")

    with AnsweringServer(answer) as server:
        agent = make_agent(server, tmp_path, builtin_tools=False, context_window=window)
        only_tool(agent, Tool(note))
        events: list[Any] = []
        agent.bus.subscribe(events.append)
        prompts = [f"Topic {k}: {filler(200, k)}" for k in range(12)]
        for prompt in prompts:
            result = await agent.arun(prompt)
            assert result.status == "ok", result.error
            assert result.reply.startswith("Answer.")

    litellm = load_litellm()
    asked = [r for r in server.requests if not is_summary_request(r)]
    assert len(asked) == 24  # two model calls a run, none lost
    total = sum(count_tokens(MODEL, [{"role": "user", "content": p}]) for p in prompts)
    assert total > 1.2 * window  # the prompts alone would not fit, let alone the rest
    for body in asked:
        used = litellm.token_counter(model=MODEL, messages=body["messages"], tools=body["tools"])
        assert used < window * 0.9, used
        assert_pairs_whole(body["messages"])
    compactions = records(agent, "context_compacted")
    assert len(compactions) >= 3
    for record in compactions:
        assert record["compressed_count"] >= 2 and record["max_tokens"] == window
        assert record["tokens_before"] >= window * 0.9 > record["tokens_after"]
        assert record["summary_by"] == "model"
        assert record["summary"].startswith("SUMMARY-")
    assert agent.ledger.verify().ok
    shown = [e for e in events if isinstance(e, ContextCompacted)]
    assert [e.compressed_count for e in shown] == [r["compressed_count"] for r in compactions]
    assert shown[0].text.startswith("Context compacted: ")
    # the model wrote each summary from the older messages, and saw it afterwards
    summary_asks = [r for r in server.requests if is_summary_request(r)]
    assert len(summary_asks) == len(compactions)
    assert "Topic 0:" in summary_asks[0]["messages"][1]["content"]
    assert summary_asks[0]["max_tokens"] == window // 10
    last = asked[-1]["messages"]
    assert any(str(m.get("content")).startswith(f"{SUMMARY_HEADING}\n\nSUMMARY-") for m in last)
    assert any(m.get("content") == prompts[-1] for m in last)


async def test_a_failed_summary_call_falls_back_to_a_digest(tmp_path):
    window = 1000
    with ScriptedServer() as server:
        agent = make_agent(server, tmp_path, builtin_tools=False, context_window=window)
        only_tool(agent, Tool(note))
        first, reply, second = (f"First {filler(280, 1)}", f"Reply {filler(280, 2)}",
                                f"Second {filler(300, 4)}")
        server.script(Message(text=reply),
                      HttpError(400, "the summary request was refused"),
                      Message(text="second reply"))
        assert (await agent.arun(first)).ok
        before = count_tokens(MODEL, [*agent.messages, {"role": "user", "content": second}],
                              agent.registry.schemas())
        assert before >= 0.9 * window  # the precondition: this run must compact
        result = await agent.arun(second)
        assert result.status == "ok" and result.reply == "second reply"
    assert is_summary_request(server.requests[1])
    [record] = records(agent, "context_compacted")
    assert record["summary_by"] == "digest"
    assert "400" in record["summary_error"] and "refused" in record["summary_error"]
    assert record["summary"].startswith("Digest of 2 earlier messages")
    sent = server.requests[2]["messages"]
    assert sent[1]["content"] == f"{SUMMARY_HEADING}\n\n{record['summary']}"
    assert sent[-1] == {"role": "user", "content": second}
    assert count_tokens(MODEL, sent) < 0.9 * window


async def test_the_demo_model_compacts_with_a_digest(tmp_path):
    # No built-in tools: their schemas alone would fill most of a window this small.
    agent = Agent(model="demo", workspace=tmp_path, builtin_tools=False,
                  settings=Settings(context_window=8000, stream=False))
    for k in range(6):
        assert (await agent.arun(f"Tell me a story {k}: {filler(900, k)}")).ok
    compactions = records(agent, "context_compacted")
    assert compactions and all(r["summary_by"] == "digest" for r in compactions)
    assert all(r["tokens_after"] < r["tokens_before"] for r in compactions)
    window = ContextWindow("demo", agent.messages, agent.settings)
    assert window.status(agent.registry.schemas())["usedTokens"] < 8000


def test_the_bound_measures_each_tool_list_it_is_given(tmp_path: Path) -> None:
    agent = Agent(workspace=tmp_path)
    messages: list[Any] = [{"role": "user", "content": "hi"}]
    offered = agent.registry.offered(None, "run_a", [])
    every = agent.registry.schemas()
    for tools in (offered, every, agent.registry.offered(None, "run_a", []), every[::-1],
                  [dict(s) for s in offered]):
        assert upper_bound(messages, tools) == (len(json.dumps(messages))
                                                + len(json.dumps(tools)) + 8 + 64)
