"""The memory tools as a model calls them: arguments, limits, shapes, history, persistence."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agent_kernel import Agent
from agent_kernel.core.events import Notice
from agent_kernel.engine.registry import ToolArgumentError, ToolContext

MEMORY_TOOLS = {"remember", "recall", "search_memory", "memory_recently", "get_recent_history",
                "get_history_by_time"}


def ctx_for(agent: Agent, run_id: str = "run_test") -> ToolContext:
    return ToolContext(agent=agent, run_id=run_id, agent_id=agent.agent_id,
                       workspace=agent.workspace)


async def call(agent: Agent, name: str, **arguments: Any) -> Any:
    tool = agent.registry.get(name)
    assert tool is not None, name
    return await tool.invoke(tool.validate(arguments), ctx_for(agent))


@pytest.fixture
def agent(tmp_path: Path) -> Agent:
    return Agent(workspace=tmp_path / "ws")


def test_tools_are_registered_with_the_specs_arguments(agent: Agent) -> None:
    assert set(agent.registry.names()) >= MEMORY_TOOLS
    params = {name: agent.registry.get(name).parameters for name in MEMORY_TOOLS}
    assert set(params["remember"]["properties"]) == {"content", "longTerm", "tags"}
    assert params["remember"]["required"] == ["content"]
    assert params["remember"]["properties"]["content"]["maxLength"] == 2000
    assert params["recall"]["properties"]["limit"] == {
        "type": "integer", "minimum": 1, "maximum": 20, "default": 5,
        "description": params["recall"]["properties"]["limit"]["description"]}
    assert set(params["search_memory"]["properties"]) == {"query", "after", "before", "limit"}
    assert params["search_memory"]["properties"]["limit"]["default"] == 5
    assert set(params["memory_recently"]["properties"]) == {"days", "limit", "include_body"}
    assert params["memory_recently"]["properties"]["days"]["default"] == 3
    assert set(params["get_recent_history"]["properties"]) == {"count", "offset"}
    assert params["get_recent_history"]["required"] == ["count"]
    assert set(params["get_history_by_time"]["properties"]) == {"after", "before"}
    assert params["get_history_by_time"]["required"] == ["after"]


def test_attach_is_cheap_and_opens_nothing(agent: Agent) -> None:
    store = agent.services.memory
    assert store.tables._db is None and store.tables._memories is None
    assert agent.services.history_writer is not None


@pytest.mark.parametrize(("name", "arguments", "message"), [
    ("remember", {}, "content: required argument is missing"),
    ("remember", {"content": "x", "longTerm": "maybe"}, "longTerm"),
    ("search_memory", {"query": "x", "limit": 0}, "greater than or equal to 1"),
    ("memory_recently", {"days": 0}, "greater than or equal to 1"),
    ("get_recent_history", {}, "count: required argument is missing"),
    ("get_recent_history", {"count": 5, "offset": -1}, "greater than or equal to 0"),
    ("get_history_by_time", {}, "after: required argument is missing"),
])
def test_bad_arguments_get_clear_errors(agent: Agent, name: str, arguments: dict[str, Any],
                                        message: str) -> None:
    with pytest.raises(ToolArgumentError, match=re.escape(message)):
        agent.registry.get(name).validate(arguments)


@pytest.mark.parametrize(("name", "arguments", "message"), [
    ("remember", {"content": "x" * 2001}, "content exceeds 2000 characters (got 2001)"),
    ("remember", {"content": ""}, "content cannot be empty"),
    ("recall", {"query": "x", "limit": 0}, "limit must be between 1 and 20, got 0"),
    ("recall", {"query": "x", "limit": 21}, "limit must be between 1 and 20, got 21"),
])
async def test_spec_bounds_are_refused_in_the_specs_words(
        agent: Agent, name: str, arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        await call(agent, name, **arguments)
    assert agent.services.memory.tables._db is None  # refused before the store opened


async def test_remember_recall_and_search_shapes(agent: Agent) -> None:
    saved = await call(agent, "remember", content="The build server is called orion-7",
                       tags=["infra"])
    assert set(saved) == {"path", "memory_id", "timestamp"}
    assert saved["path"].startswith("memory/") and saved["memory_id"].startswith("mem_")
    long = await call(agent, "remember", content="Never deploy on Fridays", longTerm=True)
    assert long["path"] == "memory.md"
    assert "Never deploy on Fridays" in (agent.workspace.root / "memory.md").read_text()

    recalled = await call(agent, "recall", query="what is the build machine's name?", limit=1)
    assert recalled["count"] == 1 == len(recalled["memories"])
    memory = recalled["memories"][0]
    assert memory["content"] == "The build server is called orion-7"
    assert memory["memory_id"] == saved["memory_id"] and memory["tags"] == ["infra"]
    assert memory["run_id"] == "run_test" and isinstance(memory["score"], float)
    assert {"memory_id", "content", "tags", "timestamp", "run_id", "score"} <= set(memory)

    await call(agent, "remember", content="A long note " + "word " * 200)
    found = await call(agent, "search_memory", query="long note word")
    assert set(found) == {"hits"}
    hit = found["hits"][0]
    assert set(hit) == {"source", "content", "score"}
    assert len(hit["content"]) == 300 and hit["source"].startswith("memory/")
    later = (datetime.now(timezone.utc) + timedelta(hours=1)).isoformat()
    assert await call(agent, "search_memory", query="orion", after=later) == {"hits": []}
    with pytest.raises(ValueError, match="ISO 8601"):
        await call(agent, "search_memory", query="orion", before="'; DROP TABLE memories --")


async def test_memory_recently_summarises_with_optional_body(agent: Agent) -> None:
    await call(agent, "remember", content="First line of a note\nwith a second line")
    plain = await call(agent, "memory_recently")
    assert plain["count"] == 1 and plain["days"] == 3
    item = plain["items"][0]
    assert item["summary"] == "First line of a note" and "body" not in item
    assert {"memory_id", "created_at", "summary", "tags", "long_term", "path"} <= set(item)
    full = await call(agent, "memory_recently", days=1, limit=5, include_body=True)
    assert full["items"][0]["body"] == "First line of a note\nwith a second line"


async def test_history_records_prompts_and_replies(agent: Agent) -> None:
    before_runs = datetime.now(timezone.utc) - timedelta(seconds=1)
    await agent.arun("echo first")
    await agent.arun("echo second")
    recent = await call(agent, "get_recent_history", count=2)
    assert [(m["role"], m["text"]) for m in recent["messages"]] == [
        ("user", "echo second"), ("assistant", recent["messages"][1]["text"])]
    assert "second" in recent["messages"][1]["text"]
    older = await call(agent, "get_recent_history", count=2, offset=2)
    assert [m["text"] for m in older["messages"]][0] == "echo first"
    assert all(set(m) == {"role", "text", "createdAt"} for m in older["messages"])
    window = await call(agent, "get_history_by_time", after=before_runs.isoformat())
    assert [m["role"] for m in window["messages"]] == ["user", "assistant", "user", "assistant"]
    future = (datetime.now(timezone.utc) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert (await call(agent, "get_history_by_time", after=future))["messages"] == []
    rows = agent.services.memory.tables.history().to_arrow().to_pylist()
    assert {r["conversation_id"] for r in rows} and all(r["run_id"] for r in rows)


async def test_demo_model_remembers_and_recalls_across_a_new_agent(tmp_path: Path) -> None:
    first = Agent(workspace=tmp_path / "ws")
    result = await first.arun("remember that the espresso machine is descaled every March")
    assert result.tool_calls[0].tool_name == "remember" and result.tool_calls[0].success
    assert "I will remember that" in result.reply
    second = Agent(workspace=tmp_path / "ws")
    answer = await second.arun("what do you remember about the coffee maker maintenance?")
    assert answer.tool_calls[0].tool_name == "recall"
    assert "espresso machine is descaled every March" in answer.reply


async def test_keyword_fallback_is_said_plainly(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("AGENT_KERNEL_EMBEDDING", "none")
    from agent_kernel.memory import service

    monkeypatch.setattr(service, "_STORES", {})
    agent = Agent(workspace=tmp_path / "ws")
    notices: list[Notice] = []
    agent.bus.subscribe(lambda e: notices.append(e) if isinstance(e, Notice) else None)
    await agent.arun("remember that the wifi password is on the fridge")
    result = await agent.arun("recall wifi password")
    assert "wifi password is on the fridge" in result.reply
    assert any("keywords only" in n.text for n in notices)
    assert len([n for n in notices if "keywords only" in n.text]) == 1


class EmbeddingServer:
    """A tiny OpenAI-compatible ``/v1/embeddings`` server: hashed bag of words, 32 dims."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "body": body})
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                data = [{"object": "embedding", "index": i, "embedding": outer.vector(t)}
                        for i, t in enumerate(texts)]
                payload = json.dumps({"object": "list", "data": data, "model": body["model"],
                                      "usage": {"prompt_tokens": 1, "total_tokens": 1}})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(payload.encode())

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @staticmethod
    def vector(text: str) -> list[float]:
        out = [0.0] * 32
        for word in re.findall(r"\w+", text.lower()):
            out[hashlib.sha256(word.encode()).digest()[0] % 32] += 1.0
        return out if any(out) else [1.0] + [0.0] * 31


def test_litellm_embeddings_through_a_local_server(tmp_path: Path, monkeypatch) -> None:
    from agent_kernel.memory.service import MemoryStore

    server = EmbeddingServer()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    try:
        store = MemoryStore(tmp_path / "ws", embedding="litellm:openai/test-embed",
                            api_base=server.url)
        store.remember("apples and pears grow in the orchard", agent_id="a")
        store.remember("the train leaves from platform nine", agent_id="a")
        assert store.embedder_name == "litellm:openai/test-embed"
        assert store.tables.embedder.dim == 32
        hits = store.search("orchard pears", agent_id="a", limit=1)
        assert hits[0]["content"] == "apples and pears grow in the orchard"
        assert server.requests and all(r["path"] == "/v1/embeddings" for r in server.requests)
        assert server.requests[-1]["body"]["input"] == ["orchard pears"]
        meta = store.tables.memories().schema.metadata[b"embedding_functions"].decode()
        assert '"agent-kernel-litellm"' in meta and "openai/test-embed" in meta
        assert "127.0.0.1" not in meta and "sk-test" not in meta
        # Reopened with no setting: the table's own embedder is used again.
        again = MemoryStore(tmp_path / "ws", api_base=server.url)
        assert again.embedder_name == "litellm:openai/test-embed"
        assert again.search("platform train", agent_id="a", limit=1)[0]["content"] == (
            "the train leaves from platform nine")
    finally:
        server.httpd.shutdown()


def test_import_and_a_new_agent_load_no_heavy_memory_libraries(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = ("import sys\nimport agent_kernel\nagent = agent_kernel.Agent(workspace=sys.argv[1])\n"
            "print(sorted(m for m in ('lancedb', 'lance', 'onnxruntime', 'tokenizers', 'pyarrow') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "ws")],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


async def test_the_first_memory_call_says_it_loads_the_index(tmp_path: Path) -> None:
    """LanceDB and the embedding model take seconds on first use: the run says so at once,
    then how long it took, as it does for the model library; later calls say nothing."""
    from agent_kernel.core.events import Loading
    from agent_kernel.views.mime import Transcript

    agent = Agent(workspace=tmp_path / "ws")
    seen: list[Loading] = []
    agent.bus.subscribe(lambda e: seen.append(e) if isinstance(e, Loading) else None)
    transcript = Transcript(run_id="run_first")
    agent.bus.subscribe(lambda e: transcript.feed(e) if e.run_id == "run_first" else None)
    result = await agent.arun("remember that the standup is in the Oak room",
                              run_id="run_first")
    assert result.ok
    memory = [e for e in seen if e.what == "the memory index (first use)"]
    assert [e.seconds is None for e in memory] == [True, False], seen
    assert memory[0].shown == "loading the memory index (first use)…"
    assert memory[1].shown.startswith("loaded the memory index (first use) in ")
    loading = transcript.state()["loading"]  # the demo model loads no library: the run's line
    assert loading and loading["what"] == "the memory index (first use)", loading
    assert loading["seconds"] is not None
    seen.clear()
    await agent.arun("what do you remember about the standup?", run_id="run_second")
    assert not [e for e in seen if e.what == "the memory index (first use)"], seen


def test_a_memory_load_after_the_model_librarys_is_a_line_where_it_happened() -> None:
    """The model library keeps the run's loading line; the memory index's load, later in
    the run, is one line in the transcript, first "loading…", then how long it took."""
    from agent_kernel.core.events import Loading
    from agent_kernel.views.mime import Transcript

    transcript = Transcript(run_id="r")
    transcript.feed(Loading("r", "the model library (first run)"))
    transcript.feed(Loading("r", "the model library (first run)", seconds=2.0))
    transcript.feed(Loading("r", "the memory index (first use)"))
    notices = [e for e in transcript.state()["entries"] if e["kind"] == "notice"]
    assert [n["text"] for n in notices] == ["loading the memory index (first use)…"]
    transcript.feed(Loading("r", "the memory index (first use)", seconds=8.25))
    state = transcript.state()
    assert state["loading"] == {"what": "the model library (first run)", "seconds": 2.0}
    notices = [e for e in state["entries"] if e["kind"] == "notice"]
    assert [n["text"] for n in notices] == ["loaded the memory index (first use) in 8.2 s"]
