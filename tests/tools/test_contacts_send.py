"""``contacts_send`` (spec 003): every constraint's error text byte for byte, and real sends
through the loop, each approved first, to a scripted Bot API and an SMTP server with
STARTTLS on 127.0.0.1; nothing goes out without an approval on record, the ledger says
what went where, and no secret is kept."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bot_api_server import PERSON, BotApi, phone_bot
from mail_server import PASSWORD, USER, MailServer
from tool_helpers import call_tool, person, through_the_loop

from agent_kernel import Agent
from agent_kernel.channels import CONFIG, EmailConfig
from agent_kernel.core.workspace import Workspace
from agent_kernel.engine.approvals import DENY
from agent_kernel.engine.registry import ToolError
from agent_kernel.guards.web.auth import AuthProfile
from agent_kernel.organiser.contacts import ContactStore
from agent_kernel.tools import messaging
from agent_kernel.views.summaries import summarise

TOKEN = "654321:ANOTHER-secret-bot-token"
SESSION = "01890a5d-ac96-774b-bcce-b302099a8057"  # a UUIDv7


def _b64(value: object) -> str:
    raw = value if isinstance(value, bytes) else json.dumps(value).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.fixture
def agent(tmp_path: Path) -> Agent:
    store = ContactStore(Workspace(tmp_path))
    store.upsert({"contact_id": "ana", "contact_nickname": "Ana",
                  "addresses": [f"tg:{PERSON}", "email:ana@example.org"]})
    store.upsert({"contact_id": "bo", "contact_nickname": "Bo",
                  "addresses": ["email:bo@example.org"]})
    store.upsert({"contact_id": "peer", "kind": "agent", "addresses": ["maep:peer1"]})
    return Agent(workspace=tmp_path)


@pytest.fixture
def bot(monkeypatch: pytest.MonkeyPatch) -> Iterator[BotApi]:
    with phone_bot(monkeypatch, TOKEN) as api:
        yield api


ERRORS: list[tuple[dict[str, Any], str]] = [
    ({"contact_id": " "}, "missing required param: contact_id"),
    ({"contact_id": "ana", "message_text": "hi", "content_type": "text/plain"},
     "content_type must be application/json envelope"),
    ({"contact_id": "ana", "message_text": "hi", "session_id": "nope"},
     "session_id must be uuid_v7"),
    ({"contact_id": "ana", "message_text": "hi", "session_id": str(__import__("uuid").uuid4())},
     "session_id must be uuid_v7"),
    ({"contact_id": "ana", "message_text": "hi"},
     "session_id is required for dialogue topics (must be uuid_v7)"),
    ({"contact_id": "ana"}, "message_text or payload_base64 is required"),
    ({"contact_id": "ana", "payload_base64": _b64(b"not json")},
     "payload_base64 must be envelope json"),
    ({"contact_id": "ana", "payload_base64": _b64({"text": "hi", "sent_at": "x"})},
     "payload envelope missing message_id"),
    ({"contact_id": "ana", "payload_base64": _b64({"message_id": "m", "sent_at": "x"})},
     "payload envelope missing text"),
    ({"contact_id": "ana", "payload_base64": _b64({"message_id": "m", "text": "hi"})},
     "payload envelope missing sent_at"),
    ({"contact_id": "ana", "payload_base64": _b64({"message_id": "m", "text": "hi",
                                                   "sent_at": "yesterday"})},
     "payload envelope sent_at must be RFC3339"),
    ({"contact_id": "ana", "payload_base64": _b64({"message_id": "m", "text": "hi",
                                                   "sent_at": "2026-02-10T08:00:00Z"})},
     "payload envelope missing session_id for dialogue topic"),
    ({"contact_id": "ana", "payload_base64": _b64({"message_id": "m", "text": "hi",
                                                   "sent_at": "2026-02-10T08:00:00Z",
                                                   "session_id": "x"})},
     "payload envelope session_id must be uuid_v7"),
    ({"contact_id": "nobody", "message_text": "hi", "session_id": SESSION},
     "contact not found: nobody"),
    # Ours: a secret never leaves, whoever approves it.
    ({"contact_id": "ana", "session_id": SESSION,
      "message_text": "the key is sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2},
     "the message holds something that looks like a secret (a key, a token or a password); "
     "it is not sent"),
    ({"contact_id": "ana", "payload_base64": _b64({
        "message_id": "m", "sent_at": "2026-02-10T08:00:00Z", "session_id": SESSION,
        "text": "hi", "note": "Bearer eyJhbGciOiJIUzI1NiJ9.abcdefghijklmnop.qrstuvwx"})},
     "the message holds something that looks like a secret (a key, a token or a password); "
     "it is not sent"),
]


@pytest.mark.parametrize(("arguments", "error"), ERRORS)
async def test_every_constraint_is_said_in_the_spec_words(agent: Agent, bot: BotApi,
                                                          arguments: dict[str, Any],
                                                          error: str) -> None:
    # The tool itself says 003's text, byte for byte ...
    with pytest.raises(ToolError) as refused:
        await call_tool(agent, "contacts_send", **arguments)
    assert str(refused.value) == error
    # ... and through the loop it is refused before anyone is asked to approve anything.
    asked = person(agent)
    record = await through_the_loop(agent, "contacts_send", **arguments)
    assert not record.success and record.error == f"Tool 'contacts_send' was not run: {error}"
    assert asked == [] and bot.calls("sendMessage") == []


async def test_a_bad_base64_and_a_switched_off_tool(agent: Agent, bot: BotApi,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    record = await through_the_loop(agent, "contacts_send", contact_id="ana",
                                    payload_base64="a+b=")
    assert record.error is not None and record.error.startswith(
        "Tool 'contacts_send' was not run: payload_base64 decode failed: ")
    monkeypatch.setattr(messaging.LIMITS, "enabled", False)
    record = await through_the_loop(agent, "contacts_send", contact_id="ana",
                                    message_text="hi", session_id=SESSION)
    assert record.error == "Tool 'contacts_send' was not run: contacts_send tool is disabled"


async def test_a_message_to_ana_on_telegram_is_approved_then_sent(agent: Agent, bot: BotApi,
                                                                  tmp_path: Path) -> None:
    asked = person(agent)
    record = await through_the_loop(agent, "contacts_send", contact_id="ana",
                                    message_text="The report is ready.", session_id=SESSION,
                                    topic="dm.checkin.v1")
    assert record.success, record.error
    card = asked[0].details or {}
    assert (card["recipient"], card["channel"], card["text"]) == (
        "Ana", "Telegram", "The report is ready.")
    sent = bot.calls("sendMessage")
    assert sent == [{"chat_id": PERSON, "text": "The report is ready."}]
    outcome = record.result["outcome"]
    assert outcome["accepted"] is True and outcome["contact_id"] == "ana"
    assert summarise("contacts_send", record.arguments, record.result,
                     success=True, duration_ms=None) == "sent a message to Ana on Telegram"
    kinds = [r["kind"] for r in agent.ledger.records()]
    assert kinds.index("approval") < kinds.index("message_sent")
    sent_record = next(r for r in agent.ledger.records() if r["kind"] == "message_sent")
    assert (sent_record["channel"], sent_record["contact_id"], sent_record["to"]) == (
        "telegram", "ana", str(PERSON))
    assert TOKEN not in (tmp_path / "ledger.jsonl").read_text()
    assert ContactStore(Workspace(tmp_path)).get("ana").last_shared_at  # type: ignore[union-attr]


async def test_a_denied_message_is_never_sent(agent: Agent, bot: BotApi) -> None:
    person(agent, DENY)
    record = await through_the_loop(agent, "contacts_send", contact_id="ana",
                                    message_text="hello", session_id=SESSION)
    assert not record.success
    assert bot.calls("sendMessage") == []
    assert not [r for r in agent.ledger.records() if r["kind"] == "message_sent"]


async def test_nobody_to_approve_means_nothing_is_sent(agent: Agent, bot: BotApi,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(CONFIG, "telegram", None)  # no phone to ask either
    monkeypatch.setattr(CONFIG, "email", EmailConfig(host="127.0.0.1", to="x@example.org",
                                                     sender="agent@example.org"))
    monkeypatch.setattr(CONFIG, "ask_on", None)
    agent.questions.remote = None  # and no channel for questions: the headless policy
    record = await through_the_loop(agent, "contacts_send", contact_id="bo",
                                    message_text="hello", session_id=SESSION)
    assert not record.success and "no one could approve it" in (record.error or "")
    assert [r["decision"] for r in agent.ledger.records() if r["kind"] == "approval"] == [
        "denied"]


async def test_a_maep_peer_and_an_unreachable_contact(agent: Agent, bot: BotApi) -> None:
    record = await through_the_loop(agent, "contacts_send", contact_id="peer",
                                    message_text="hi", session_id=SESSION)
    assert "team's messages" in (record.error or "")
    record = await through_the_loop(agent, "contacts_send", contact_id="bo",
                                    message_text="hi", session_id=SESSION)
    assert record.error == ("Tool 'contacts_send' was not run: no configured channel reaches "
                            "contact bo (email:bo@example.org); configured channels: telegram")


async def test_a_message_to_bo_by_mail_over_starttls(agent: Agent, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    with MailServer(tmp_path) as mail:
        monkeypatch.setattr(CONFIG, "email", EmailConfig(
            host="127.0.0.1", port=mail.port, to="me@example.org", sender="agent@example.org",
            username=USER, verify=mail.ca))
        monkeypatch.setattr(CONFIG, "profiles", {"smtp": AuthProfile(
            hosts=["127.0.0.1"], token=PASSWORD)})
        person(agent)
        record = await through_the_loop(agent, "contacts_send", contact_id="bo",
                                        message_text="Lunch at one?", session_id=SESSION)
        assert record.success, record.error
        assert mail.logins == [USER]
        [message] = mail.messages
        assert message["To"] == "bo@example.org"
        assert message.get_payload(decode=True).decode().strip() == "Lunch at one?"
    assert summarise("contacts_send", record.arguments, record.result,
                     success=True, duration_ms=None) == "sent a message to Bo by e-mail"
    assert PASSWORD not in (tmp_path / "ledger.jsonl").read_text()
