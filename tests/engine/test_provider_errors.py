"""Provider errors a person can act on: keys named from litellm's provider data, no retries
for what a retry cannot fix, one request each, over litellm's real HTTP path."""

from __future__ import annotations

import json
import re

import pytest
from scripted_server import HttpError, Message, ScriptedServer

from agent_kernel import Agent, Settings
from agent_kernel.core.events import Notice

MODEL = "openai/test-model"


@pytest.fixture
def server():
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
                                                                  monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
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
def test_a_refused_key_shows_once_in_the_cell_and_once_in_the_ledger(server, run_notebook,
                                                                     output_text, tmp_path):
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
