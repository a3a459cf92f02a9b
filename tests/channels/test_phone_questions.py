"""Questions and approvals that reach the person's phone, against a scripted Bot API on
127.0.0.1: the approval goes out with Approve / Deny buttons, only the configured person's
press counts, a stale press does nothing, the first answer (phone or notebook) wins, and
the ledger says where it came from. The bot token never reaches the ledger."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from bot_api_server import PERSON, BotApi, phone_bot

from agent_kernel import Agent
from agent_kernel.channels import CONFIG, TelegramConfig
from agent_kernel.channels.config import ChannelError
from agent_kernel.channels.telegram import TelegramBot
from agent_kernel.guards.web.auth import AuthProfile
from agent_kernel.tools.human import ask_user  # noqa: F401 - the tool the agent has

TOKEN = "123456:TEST-bot-token-that-is-secret"


@pytest.fixture
def bot(monkeypatch: pytest.MonkeyPatch) -> Iterator[BotApi]:
    """A scripted Bot API, and the channels configured to reach it."""
    monkeypatch.setattr(CONFIG, "ask_after", 300.0)
    with phone_bot(monkeypatch, TOKEN, poll_seconds=1) as api:
        yield api


def _records(agent: Agent, kind: str) -> list[dict[str, object]]:
    return [r for r in agent.ledger.records() if r["kind"] == kind]


async def _write_file(agent: Agent) -> object:
    from tool_helpers import through_the_loop

    return await through_the_loop(agent, "write_file", path="note.txt", content="hello")


async def test_an_approval_nobody_can_click_goes_to_telegram_and_the_press_decides(
        bot: BotApi, tmp_path: Path) -> None:
    agent = Agent(workspace=tmp_path)  # no notebook attached: nobody can click
    call = asyncio.create_task(_write_file(agent))
    sent = await asyncio.to_thread(bot.wait_sent, 1)
    message = sent[0]
    assert message["chat"]["id"] == PERSON
    assert "write_file" in message["text"] and '"content": "hello"' in message["text"]
    labels = [b["text"] for row in message["reply_markup"]["inline_keyboard"] for b in row]
    assert labels == ["Approve", "Deny"]  # never "Always allow" from a phone
    # A stranger's press and a press in another chat are ignored and recorded.
    bot.press(message, "Approve", user=999)
    bot.press(message, "Approve", chat=777)
    bot.press(message, "Approve", data=message["reply_markup"]["inline_keyboard"][0][0]
              ["callback_data"].rsplit(":", 1)[0] + ":7")
    await asyncio.sleep(1.0)
    assert not call.done()
    bot.press(message, "Approve")
    record = await asyncio.wait_for(call, 20)
    assert record.success, record
    assert (tmp_path / "files" / "note.txt").read_text() == "hello"
    approval = _records(agent, "approval")[-1]
    assert approval["decision"] == "approved" and approval["source"] == "telegram"
    ignored = _records(agent, "channel_answer_ignored")
    assert [r["reason"] for r in ignored] == [
        "the press came from another person or chat",
        "the press came from another person or chat",
        "the answer is not one of the question's options"]
    assert _records(agent, "channel_sent")[0]["what"] == "approval"
    # The message now says how it ended; the spinner of the press was stopped.
    await asyncio.sleep(0.3)
    edits = bot.calls("editMessageText")
    assert edits and "Answered on Telegram: Approve" in edits[-1]["text"]
    assert any("Got it: Approve" in c["text"] for c in bot.calls("answerCallbackQuery"))
    # A stale press on the answered question changes nothing.
    before = len(agent.ledger.records())
    bot.press(message, "Deny")
    await asyncio.sleep(0.5)
    assert len(agent.ledger.records()) == before
    # The token is in every URL the bot called and in no record.
    assert all(TOKEN in path for path in bot.paths)
    assert TOKEN not in (tmp_path / "ledger.jsonl").read_text()


async def test_a_deny_from_the_phone_is_the_persons_denial(bot: BotApi, tmp_path: Path) -> None:
    agent = Agent(workspace=tmp_path)
    call = asyncio.create_task(_write_file(agent))
    message = (await asyncio.to_thread(bot.wait_sent, 1))[0]
    bot.press(message, "Deny")
    record = await asyncio.wait_for(call, 20)
    assert not record.success
    assert not (tmp_path / "files" / "note.txt").exists()
    approval = _records(agent, "approval")[-1]
    assert approval["decision"] == "denied" and approval["source"] == "telegram"
    assert "the user denied it" in json.dumps(record.error)


@pytest.mark.parametrize("content, why", [
    ("export OPENAI_API_KEY=sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2, "looks like a secret"),
    ("x" * 3000, "too long to show whole"),
])
async def test_a_phone_cannot_approve_what_it_cannot_show_whole(
        bot: BotApi, tmp_path: Path, content: str, why: str) -> None:
    """Arguments holding what looks like a secret are never sent to the phone, and arguments
    too long to show whole are not cut and approved: the phone offers Deny alone, and an
    Approve forged with the question's id and the old button number is ignored."""
    from tool_helpers import through_the_loop

    agent = Agent(workspace=tmp_path)
    call = asyncio.create_task(through_the_loop(agent, "write_file", path="note.txt",
                                                content=content))
    message = (await asyncio.to_thread(bot.wait_sent, 1))[0]
    assert content[:40] not in message["text"] and why in message["text"]
    assert "sk-proj" not in json.dumps(bot.requests)
    labels = [b["text"] for row in message["reply_markup"]["inline_keyboard"] for b in row]
    assert labels == ["Deny"]
    question_id = message["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
    bot.press(message, "Approve", data=question_id.rsplit(":", 1)[0] + ":1")
    await asyncio.sleep(1.0)
    assert not call.done()
    bot.press(message, "Deny")
    record = await asyncio.wait_for(call, 20)
    assert not record.success and not (tmp_path / "files" / "note.txt").exists()
    assert [r["reason"] for r in _records(agent, "channel_answer_ignored")] == [
        "the answer is not one of the question's options"]


async def test_what_draws_nothing_reaches_the_phone_as_a_token(bot: BotApi,
                                                               tmp_path: Path) -> None:
    """A right-to-left override in the arguments cannot reorder what the phone shows: it
    arrives as <U+202E>, and a word mixing alphabets is named."""
    from tool_helpers import through_the_loop

    agent = Agent(workspace=tmp_path)
    call = asyncio.create_task(through_the_loop(agent, "write_file", path="note.txt",
                                                content="safe \u202etxt.exe go to g\u043eogle"))
    message = (await asyncio.to_thread(bot.wait_sent, 1))[0]
    assert "\u202e" not in message["text"] and "<U+202E>" in message["text"]
    assert "mixes alphabets: U+043E" in message["text"]
    bot.press(message, "Deny")
    assert not (await asyncio.wait_for(call, 20)).success


async def test_the_notebook_answers_first_and_the_phone_is_told(bot: BotApi,
                                                                tmp_path: Path) -> None:
    from tool_helpers import call_tool, notebook_open

    CONFIG.ask_after = 0.3
    agent = Agent(workspace=tmp_path)
    asked = notebook_open(agent)
    task = asyncio.create_task(call_tool(agent, "ask_user", question="Tea or coffee?",
                                         options=["tea", "coffee"]))
    message = (await asyncio.to_thread(bot.wait_sent, 1))[0]  # after 0.3 s unanswered
    assert "Tea or coffee?" in message["text"]
    agent.questions.answer(asked[0].question_id, "coffee")
    assert await asyncio.wait_for(task, 10) == {"answer": "coffee", "source": "user"}
    await asyncio.sleep(0.3)
    assert "Answered in the notebook: coffee" in bot.calls("editMessageText")[-1]["text"]
    bot.press(message, "tea")  # too late: nothing changes
    await asyncio.sleep(0.5)
    assert not _records(agent, "channel_answer_ignored")


async def test_a_question_answered_from_the_phone(bot: BotApi, tmp_path: Path) -> None:
    from tool_helpers import call_tool

    agent = Agent(workspace=tmp_path)
    task = asyncio.create_task(call_tool(agent, "ask_user", question="Which report?",
                                         options=["daily", "weekly"]))
    message = (await asyncio.to_thread(bot.wait_sent, 1))[0]
    bot.press(message, "weekly")
    assert await asyncio.wait_for(task, 20) == {"answer": "weekly", "source": "telegram"}


async def test_nothing_configured_keeps_the_old_rules(tmp_path: Path) -> None:
    from tool_helpers import call_tool

    assert CONFIG.telegram is None and CONFIG.email is None
    agent = Agent(workspace=tmp_path)
    assert await call_tool(agent, "ask_user", question="Anyone?", default="no") == {
        "answer": "no", "source": "default"}


async def test_questions_kept_in_the_notebook_never_go_out(bot: BotApi, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """``CONFIG.ask_on = "notebook"``: a channel is configured (for contacts_send), yet a
    question nobody can click ends by the usual rules at once and nothing is sent."""
    monkeypatch.setattr(CONFIG, "ask_on", "notebook")
    agent = Agent(workspace=tmp_path)
    record = await _write_file(agent)
    assert not record.success and "no one could approve it" in json.dumps(record.error)
    assert bot.calls("sendMessage") == [] and _records(agent, "channel_sent") == []


async def test_the_bot_talks_https_through_the_guard(tmp_path: Path) -> None:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    with BotApi(TOKEN, tls=cert) as api:
        CONFIG.profiles = {"telegram": AuthProfile(hosts=["127.0.0.1"], token=TOKEN)}
        try:
            bot = TelegramBot(TelegramConfig(chat_id=PERSON, base_url=api.url,
                                             verify=str(bundle)))
            assert api.url.startswith("https://")
            assert await bot.send("hello", [("OK", "q:0")]) == 500
            # Without the test's CA the certificate is refused, and the error hides the token.
            strict = TelegramBot(TelegramConfig(chat_id=PERSON, base_url=api.url))
            with pytest.raises(ChannelError) as refused:
                await strict.send("hello")
            assert TOKEN not in str(refused.value)
        finally:
            CONFIG.profiles = {}


def test_a_channel_refuses_plain_http_to_another_machine_and_a_profile_for_another_host(
) -> None:
    CONFIG.profiles = {"telegram": AuthProfile(hosts=["api.telegram.org"], token=TOKEN)}
    try:
        with pytest.raises(ChannelError, match="must use https://"):
            TelegramBot(TelegramConfig(chat_id=1, base_url="http://api.telegram.org"))
        with pytest.raises(ChannelError, match="may not be sent to 127.0.0.1"):
            TelegramBot(TelegramConfig(chat_id=1, base_url="http://127.0.0.1:9"))
    finally:
        CONFIG.profiles = {}


def test_the_run_view_says_where_the_answer_came_from() -> None:
    from agent_kernel.views.run_html import outcome

    assert outcome({"approval": True, "answer": "Approve", "source": "telegram"}) == (
        "Approved on Telegram")
    assert outcome({"approval": False, "answer": "tea", "source": "email",
                    "options": ["tea", "coffee"]}) == "You chose tea by e-mail"
    assert outcome({"approval": True, "answer": "Deny", "source": "user"}) == "Denied"


async def test_a_free_text_question_is_answered_by_a_reply(bot: BotApi, tmp_path: Path) -> None:
    from tool_helpers import call_tool

    agent = Agent(workspace=tmp_path)
    task = asyncio.create_task(call_tool(agent, "ask_user", question="Where shall we meet?"))
    message = (await asyncio.to_thread(bot.wait_sent, 1))[0]
    assert "Answer by replying to this message." in message["text"]
    bot.say("at the station", user=999, chat=999)  # a stranger's text answers nothing
    await asyncio.sleep(1.0)
    assert not task.done()
    bot.say("at the station")
    assert await asyncio.wait_for(task, 20) == {"answer": "at the station",
                                                "source": "telegram"}


async def test_two_agents_share_the_bot_and_each_gets_its_own_answer(bot: BotApi,
                                                                     tmp_path: Path) -> None:
    from tool_helpers import call_tool

    first = Agent(workspace=tmp_path / "one")
    second = Agent(workspace=tmp_path / "two")
    one = asyncio.create_task(call_tool(first, "ask_user", question="First?",
                                        options=["a", "b"]))
    two = asyncio.create_task(call_tool(second, "ask_user", question="Second?",
                                        options=["c", "d"]))
    sent = await asyncio.to_thread(bot.wait_sent, 2)
    by_text = {m["text"].split("\n")[0]: m for m in sent}
    bot.press(by_text["The agent asks: Second?"], "d")
    bot.press(by_text["The agent asks: First?"], "b")
    assert await asyncio.wait_for(two, 20) == {"answer": "d", "source": "telegram"}
    assert await asyncio.wait_for(one, 20) == {"answer": "b", "source": "telegram"}
    # One reader: never two long polls at once (Telegram refuses a second one).
    assert not _records(first, "channel_answer_ignored")
    assert not _records(second, "channel_answer_ignored")
