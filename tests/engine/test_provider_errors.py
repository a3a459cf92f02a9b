"""Provider errors a person can act on: keys named from litellm's provider data, no retries
for what a retry cannot fix, one request each, over HTTP on both model paths (litellm's
call and the openai-SDK fast path, ``model_path``)."""

from __future__ import annotations

import json
import re

import pytest
from scripted_server import CutStream, Hangup, HttpError, Message, ScriptedServer

from agent_kernel import Agent, Settings
from agent_kernel.core.events import Notice

MODEL = "openai/test-model"


@pytest.fixture
def server(model_path):
    with ScriptedServer() as srv:
        yield srv


@pytest.fixture
def kernel_server():
    with ScriptedServer() as srv:
        yield srv


def agent_for(server: ScriptedServer, tmp_path, **settings) -> Agent:
    return Agent(model=MODEL, workspace=tmp_path,
                 settings=Settings(api_base=server.base_url, retry_base_delay=0.01, **settings))


@pytest.mark.parametrize("status", [401, 403])
async def test_a_refused_key_is_asked_once_and_named(server, tmp_path, monkeypatch, status):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-but-well-formed-0123")
    server.script(HttpError(status, "Incorrect API key provided", forever=True))
    agent = agent_for(server, tmp_path)
    notices: list[Notice] = []
    agent.bus.subscribe(lambda e: notices.append(e) if isinstance(e, Notice) else None)
    result = await agent.arun("hello")
    assert result.status == "error"
    assert len(server.requests) == 1
    assert "OPENAI_API_KEY" in (result.error or "")
    assert "--model demo" in (result.error or "")
    assert "Incorrect API key provided" in (result.error or "")
    assert not [n for n in notices if "retry" in n.text]


async def test_a_missing_key_names_the_variable_and_is_not_retried(server, tmp_path,
                                                                  monkeypatch, model_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model_path.falls_back = True  # no key anywhere: litellm words that, on both paths
    server.script(Message(text="never"))
    agent = agent_for(server, tmp_path)
    result = await agent.arun("hello")
    assert result.status == "error"
    assert len(server.requests) <= 1
    assert "set OPENAI_API_KEY" in (result.error or "")
    assert "after" not in (result.error or "")  # no "failed after 4 attempts"
    assert "docs.ai" not in (result.error or "")


@pytest.mark.parametrize("status", [400, 404])
async def test_bad_request_and_not_found_are_not_retried(server, tmp_path, status):
    server.script(HttpError(status, "no such model here", forever=True))
    agent = agent_for(server, tmp_path, api_key="sk-x")
    result = await agent.arun("hello")
    assert result.status == "error"
    assert len(server.requests) == 1
    assert str(status) in (result.error or "")


async def test_litellm_nested_messages_are_said_once(server, tmp_path):
    # litellm wraps a timeout's text in itself ("Request timed out. Error_str: Request
    # timed out."); the person reads each sentence once
    server.script(Message(text="too slow", delay=2.0))
    agent = agent_for(server, tmp_path, api_key="sk-x", max_retries=0, request_timeout=0.3)
    result = await agent.arun("hello")
    assert result.status == "error"
    assert "timed out" in (result.error or "")
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", result.error or "") if len(s) > 12]
    assert len(sentences) == len(set(sentences)), result.error
    assert "Error_str" not in (result.error or "") and "litellm." not in (result.error or "")


LITELLM_BANNER = ("Give Feedback", "Get Help", "LiteLLM.Info", "_turn_on_debug",
                  "Provider List", "litellm.AuthenticationError")


@pytest.mark.kernel
def test_a_refused_key_shows_once_in_the_cell_and_once_in_the_ledger(kernel_server, run_notebook,
                                                                     output_text, tmp_path):
    server = kernel_server
    server.script(HttpError(401, "Incorrect API key provided", forever=True))
    workspace = tmp_path / "ws"
    nb = run_notebook([
        "%load_ext agent_kernel",
        f"import agent_kernel.notebook.magics as m\nm.current().api_base = {server.base_url!r}\n"
        f"%agent_config --model {MODEL} --workspace {workspace}",
        "%agent hello",
    ], cwd=tmp_path, timeout=120, env={"OPENAI_API_KEY": "sk-wrong-but-well-formed-0123"})
    cell = nb.cells[2]
    everything = json.dumps([c.outputs for c in nb.cells])
    for banner in LITELLM_BANNER:
        assert banner not in everything
    assert all(out.output_type != "error" for out in cell.outputs)
    for mime in ("text/plain", "text/html"):
        shown = output_text(cell, mime)
        assert shown.count("refused the API key (401)") == 1, shown
        assert shown.count("Incorrect API key provided") == 1, shown
    assert len(server.requests) == 1
    records = [json.loads(line) for line in (workspace / "ledger.jsonl").read_text().splitlines()]
    errors = [r for r in records if r["kind"] == "run_error"]
    assert len(errors) == 1 and len(records) == 1
    assert errors[0]["error_kind"] == "provider" and errors[0]["status"] == 401
    assert errors[0]["error"].count("Incorrect API key provided") == 1
    assert "OPENAI_API_KEY" in errors[0]["error"]


# A model server that is not running, and a key that is not there (issue 25, item 10).

def _dead_port() -> int:
    """A port on 127.0.0.1 where nothing listens (bound, then closed)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("model", "server"), [("ollama/llama3.2", "Ollama"),
                                               ("openai/test-model", "the model server")])
async def test_a_server_that_is_not_running_is_one_sentence_said_once(tmp_path, model, server,
                                                                       model_path):
    model_path.falls_back = not model.startswith("openai/")  # ollama is litellm's alone
    port = _dead_port()
    agent = Agent(model=model, workspace=tmp_path,
                  settings=Settings(api_base=f"http://127.0.0.1:{port}", api_key="sk-x-01234567",
                                    retry_base_delay=0.01))
    notices: list[Notice] = []
    agent.bus.subscribe(lambda e: notices.append(e) if isinstance(e, Notice) else None)
    result = await agent.arun("hello")
    assert result.status == "error"
    assert result.error == (f"The model provider failed: nothing is listening at "
                            f"http://127.0.0.1:{port} — is {server} running?")
    assert not [n for n in notices if "retry" in n.text]  # a refused connection: no retries


def test_the_words_for_a_refused_connection_carry_no_object_address() -> None:
    from agent_kernel.engine.models.provider_errors import classify, said_once

    class APIConnectionError(Exception):
        pass

    inner = ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 11434)")
    outer = APIConnectionError("OllamaException - Cannot connect to host localhost:11434 "
                               "ssl:<ssl.SSLContext object at 0x7fa272bd28d0> [Connect call "
                               "failed ('127.0.0.1', 11434)]")
    outer.__cause__ = inner
    assert classify(outer, "ollama/llama3.2") == (
        False, None, "nothing is listening at http://localhost:11434 — is Ollama running?")
    assert classify(outer, "hosted_vllm/m") == (
        False, None, "nothing is listening at localhost:11434 — is the vLLM server running?")
    said = said_once("Cannot connect to host x:1 ssl:<ssl.SSLContext object at 0x7f00> [boom] "
                     "<aiohttp.Foo object at 0xdeadbeef>")
    assert "0x" not in said and said == "Cannot connect to host x:1 [boom] aiohttp.Foo"


async def test_a_missing_key_is_said_before_the_model_library_loads(tmp_path, monkeypatch):
    from agent_kernel.core.events import Loading

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    agent = Agent(model="openai/gpt-4o-mini", workspace=tmp_path)
    seen: list[object] = []
    agent.bus.subscribe(seen.append)
    result = await agent.arun("hello")
    assert result.status == "error"
    assert result.error is not None and result.error.startswith(
        "The model provider was not called: no API key for openai: set OPENAI_API_KEY")
    assert not [e for e in seen if isinstance(e, Loading)]  # said before litellm's import
    assert result.duration_ms < 1000


@pytest.mark.timeout(60)
def test_the_cli_says_the_reason_once_when_both_streams_go_to_one_place(tmp_path) -> None:
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    done = subprocess.run([sys.executable, "-m", "agent_kernel", "run", "hello", "--model",
                           "openai/gpt-4o-mini", "--workspace", str(tmp_path / "ws")],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=env, timeout=50)
    assert done.returncode == 1
    assert done.stdout.count("no API key for openai") == 1, done.stdout
    assert "error: the run ended with status 'error'" in done.stdout
    apart = subprocess.run([sys.executable, "-m", "agent_kernel", "run", "hello", "--model",
                            "openai/gpt-4o-mini", "--workspace", str(tmp_path / "ws")],
                           capture_output=True, text=True, env=env, timeout=50)
    assert "no API key for openai" in apart.stderr  # a log of its own gets the reason


# The same failure reads the same on both model paths (issue 27).

SCENARIOS = {
    "429 then an answer": [HttpError(429, "slow down", retry_after=0.05), Message(text="ok")],
    "500 forever": [HttpError(500, "the backend is down", forever=True)],
    "401": [HttpError(401, "Incorrect API key provided", forever=True)],
    "400": [HttpError(400, "bad request here", forever=True)],
    "404": [HttpError(404, "no such model here", forever=True)],
    "timeout": [Message(text="slow", delay=1.0), Message(text="slow", delay=1.0)],
    "a stream cut off": [CutStream(forever=True)],
    "a stream that ends too soon": [CutStream(abrupt=False, forever=True)],
    "a hang-up before any answer": [Hangup(forever=True)],
}


def _timeless(text: str | None) -> str | None:
    """Text with litellm's measured "time taken=0.31 seconds" made one figure."""
    return re.sub(r"time taken=[\d.]+", "time taken=T", text) if text else text


@pytest.mark.timeout(60)
@pytest.mark.parametrize("scenario, stream", [
    (name, stream) for name in SCENARIOS for stream in (True, False)
    if stream or not isinstance(SCENARIOS[name][0], CutStream)])  # a cut needs a stream
async def test_a_failure_reads_the_same_on_both_paths(tmp_path, scenario, stream):
    from agent_kernel.engine.models import fast_path

    said: list[tuple[str, str | None, list[str | None]]] = []
    for fast in (False, True):
        before = fast_path.requests_sent
        with ScriptedServer() as srv:
            srv.script(*SCENARIOS[scenario])
            # 0.3 s only where the time-out is the failure: elsewhere a loaded machine's
            # slow answer must not turn a 401 into a time-out on one path and not the other
            agent = agent_for(srv, tmp_path / str(fast), api_key="sk-x", max_retries=1,
                              request_timeout=0.3 if scenario == "timeout" else 10.0,
                              openai_fast_path=fast, stream=stream)
            events: list[object] = []
            agent.bus.subscribe(events.append)
            result = await agent.arun("hello")
            said.append((result.status, _timeless(result.error),
                         [_timeless(e.text) for e in events if isinstance(e, Notice)]))
            sent = fast_path.requests_sent - before
            if not fast:
                assert sent == 0
            elif scenario == "timeout":
                # the client gives up after 0.3 s; on a loaded machine the server may not
                # have read the second request by then, so it can count fewer than were sent
                assert sent == 2 and 1 <= len(srv.requests) <= sent
            else:
                assert sent == len(srv.requests)
    assert said[0] == said[1]
    assert said[0][0] == "ok" if scenario == "429 then an answer" else said[0][0] == "error"
