"""An unapproved GET of a compression bomb grows the workspace by at most the stated bound.

A real run: the scripted model (tests/scripted_server.py) asks for ``url_fetch``
of a local site's 1 GiB gzip bomb (1 MB on the wire) with the largest
``max_bytes`` a model may ask for; the call needs no approval. Without the
bounded ledger this run wrote ~63 MB to ``ledger.jsonl`` (10 MiB of NUL
characters, each ``\\u0000`` in JSON).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scripted_server import Call, Message, ScriptedServer
from tool_helpers import call_tool
from web_server import LocalSite

from agent_kernel import Agent, Settings
from agent_kernel.core.events import Event
from agent_kernel.core.ledger import LIMITS
from agent_kernel.core.mime_types import RUN_MIME
from agent_kernel.tools import web
from agent_kernel.views.mime import SAVED_VALUE_CHARS, Transcript, mime_bundle

STATED_BOUND = 2 * 1024 * 1024 + 64 * 1024  # docs/security.md, "The ledger": 2,162,688 bytes


@pytest.fixture(scope="module")
def site() -> Iterator[LocalSite]:
    with LocalSite() as running:
        yield running


@pytest.fixture
def allowed(monkeypatch: pytest.MonkeyPatch) -> web.WebToolLimits:
    """The web tools' limits as shipped, with only the local site allowed through the guard."""
    fresh = web.WebToolLimits(allow_hosts=["127.0.0.1"])
    monkeypatch.setattr(web, "LIMITS", fresh)
    return fresh


def sizes(root: Path) -> dict[str, int]:
    return {p.relative_to(root).as_posix(): p.stat().st_size
            for p in root.rglob("*") if p.is_file()}


async def fetch_in_a_run(workspace: Path, url: str, max_bytes: int
                         ) -> tuple[Agent, list[Event], dict[str, int], dict[str, int]]:
    """One run whose only tool call is an unapproved url_fetch; the workspace before/after."""
    with ScriptedServer() as server:
        agent = Agent(model="openai/test-model", workspace=workspace,
                      settings=Settings(api_base=server.base_url, api_key="sk-x"))
        warm = [Message(text="ready")]
        server.script(*warm, Message(calls=[Call("url_fetch", json.dumps(
            {"url": url, "max_bytes": max_bytes}), id="c1")]), Message(text="fetched"))
        assert (await agent.arun("warm up")).reply == "ready"  # the run's own files exist
        before = sizes(workspace)
        events: list[Event] = []
        agent.bus.subscribe(events.append)
        result = await agent.arun("fetch it")
    assert result.reply == "fetched", result
    return agent, events, before, sizes(workspace)


def the_call(agent: Agent) -> dict[str, Any]:
    [record] = [r for r in agent.ledger.records() if r.get("kind") == "tool_call"]
    return record


@pytest.mark.timeout(180)
async def test_a_gigabyte_bomb_fetched_without_approval_stays_within_the_bound(
        tmp_path: Path, allowed: web.WebToolLimits, site: LocalSite) -> None:
    workspace = tmp_path / "ws"
    agent, _, before, after = await fetch_in_a_run(
        workspace, site.url("/gigabyte-bomb"), allowed.max_bytes_limit)
    record = the_call(agent)
    assert record["success"] is True and record["tool_name"] == "url_fetch"
    assert not [r for r in agent.ledger.records() if r.get("kind") == "approval"]
    grown = {name: size - before.get(name, 0) for name, size in after.items()
             if size != before.get(name, 0)}
    assert sum(grown.values()) <= STATED_BOUND == LIMITS.record_bound(), grown
    entry = record["blobs"]["result"]
    assert entry["bytes"] > 6 * allowed.max_bytes_limit  # the whole result: ~63 MB of JSON
    assert entry["blob_bytes"] == LIMITS.blob_bytes  # the stored copy is cut at the limit
    # the call's line and its one blob; the history keeps only the prompt and the reply
    assert set(grown) == {"ledger.jsonl", f"ledger-blobs/{entry['blob']}",
                          "memory/history.jsonl"}, grown
    assert grown["ledger.jsonl"] < 4096 and grown["memory/history.jsonl"] < 1024, grown
    verified = subprocess.run([sys.executable, "-m", "agent_kernel", "verify", "--workspace",
                               str(workspace)], capture_output=True, text=True, timeout=60)
    assert verified.returncode == 0 and "ledger ok" in verified.stdout, verified.stdout


@pytest.mark.timeout(180)
async def test_a_json_bomb_is_bounded_in_the_ledger_and_in_the_saved_run(
        tmp_path: Path, allowed: web.WebToolLimits, site: LocalSite) -> None:
    count = 1_000_000  # 2 MB of JSON that parses into a million-item list
    agent, events, before, after = await fetch_in_a_run(
        tmp_path / "ws", site.url(f"/json-bomb?n={count}"), allowed.max_bytes_limit)
    record = the_call(agent)
    assert record["blobs"]["result"]["bytes"] > 2 * count
    assert sum(after.values()) - sum(before.values()) <= STATED_BOUND
    transcript = Transcript()
    for event in events:
        transcript.feed(event)
    bundle = mime_bundle(transcript)
    [card] = [e for e in bundle[RUN_MIME]["entries"] if e.get("kind") == "tool"]
    assert isinstance(card["result"], str) and card["result_kind"] == "text"
    assert f"characters in all; the first {SAVED_VALUE_CHARS:,} are kept" in card["result"]
    saved = json.dumps(bundle, ensure_ascii=False)
    assert len(saved) < 8 * SAVED_VALUE_CHARS, len(saved)  # the state and its two fallbacks


async def test_the_model_cannot_read_the_blobs_back(tmp_path: Path) -> None:
    agent = Agent(workspace=tmp_path / "ws")
    record = agent.ledger.record_event("note", text="secret-free but large " * 10_000)
    blob = record["blobs"]["text"]["blob"]
    for path in (f"../ledger-blobs/{blob}", str(agent.ledger.blob_folder / blob),
                 "../ledger-blobs"):
        answer = await call_tool(agent, "read_file", path=path)
        assert answer["ok"] is False and "is a protected file" in answer["error"], (path, answer)
    (agent.workspace.root / "files").mkdir(exist_ok=True)
    (agent.workspace.root / "files" / "link").symlink_to(agent.ledger.blob_folder / blob)
    answer = await call_tool(agent, "read_file", path="link")
    assert answer["ok"] is False and "is a protected file" in answer["error"], answer
