"""A team Worker's approval, with nobody at the notebook, reaches the person's phone
through the Teller's channel (as ``%agent --team`` wires it) and the press lets it run."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from bot_api_server import BotApi, phone_bot
from test_team import RoleModel, make_team
from test_team_ask import worker_writes

from agent_kernel.channels.relay import PhoneRelay
from agent_kernel.core.ledger import Ledger

TOKEN = "999999:TEAM-test-bot-token"


@pytest.fixture
def bot(monkeypatch: pytest.MonkeyPatch) -> Iterator[BotApi]:
    """A scripted Bot API, and the channels configured to reach it."""
    with phone_bot(monkeypatch, TOKEN, poll_seconds=1) as api:
        yield api


async def test_a_workers_approval_is_answered_on_telegram(bot: BotApi, tmp_path) -> None:
    with RoleModel(worker_writes) as server:
        team = make_team(server, tmp_path)
        team.supervisor.settings.headless_approval = "deny"  # only a person can allow it
        team.teller.questions.remote = PhoneRelay(team.ledger, team.bus, "teller")
        run = asyncio.create_task(team.arun("notes please"))
        message = (await asyncio.to_thread(bot.wait_sent, 1, 60))[0]
        assert "write_file" in message["text"]
        bot.press(message, "Approve")
        result = await asyncio.wait_for(run, 60)
    assert result.ok, result
    assert (tmp_path / "files" / "notes.md").read_text() == "from the Worker"
    approvals = [r for r in Ledger(tmp_path / "ledger.jsonl").records()
                 if r.get("kind") == "approval"]
    assert [(r["source"], r["role"]) for r in approvals] == [("telegram", "worker")]
