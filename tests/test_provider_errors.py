"""Provider errors a person can act on: keys named from litellm's provider data, no retries
for what a retry cannot fix, one request each, over litellm's real HTTP path."""

from __future__ import annotations

import pytest
from scripted_server import HttpError, Message, ScriptedServer

from agent_kernel import Agent, Settings
from agent_kernel.events import Notice

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
