"""A mail question answered by replying to it, against real servers on 127.0.0.1: aiosmtpd
takes the question mail (STARTTLS, login), Dovecot holds the agent's mailbox (IMAPS or
STARTTLS, a passwd-file user) where the person's reply is delivered. A reply counts only
from the person's address, with the answer code of a question still open, naming one of
its options; anything else is ignored and recorded. The first answer wins, the mailbox is
watched only while a mail question is open, and no password reaches the ledger."""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Iterator
from email.message import Message
from pathlib import Path

import pytest
from imap_server import DOVECOT, ImapServer
from imap_server import PASSWORD as IMAP_PASSWORD
from imap_server import USER as IMAP_USER
from mail_server import PASSWORD as SMTP_PASSWORD
from mail_server import USER as SMTP_USER
from mail_server import MailServer

from agent_kernel import Agent
from agent_kernel.channels import CONFIG, EmailConfig
from agent_kernel.channels.config import ChannelError
from agent_kernel.channels.mail import Mailbox
from agent_kernel.channels.relay import MAIL, answer_in, reply_lines
from agent_kernel.guards.web.auth import AuthProfile
from agent_kernel.tools.human import ask_user  # noqa: F401 - the tool the agent has

# Under CI a missing Dovecot fails (ImapServer says what to install); elsewhere it skips.
pytestmark = pytest.mark.skipif(DOVECOT is None and not os.environ.get("CI"),
                                reason="dovecot is not installed (apt-get install "
                                       "dovecot-imapd)")
PERSON = "me@example.org"


class Servers:
    def __init__(self, smtp: MailServer, imap: ImapServer) -> None:
        self.smtp = smtp
        self.imap = imap

    def wait_mail(self, count: int, timeout: float = 20.0) -> list[Message]:
        deadline = time.monotonic() + timeout
        while len(self.smtp.messages) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(self.smtp.messages)} mails came, not {count}")
            time.sleep(0.05)
        return self.smtp.messages[:count]

    def reply(self, subject: str, body: str, sender: str = PERSON) -> None:
        self.imap.deliver(sender, subject, body)


def _config(smtp: MailServer, imap: ImapServer, **extra: object) -> EmailConfig:
    settings: dict[str, object] = {
        "host": "127.0.0.1", "port": smtp.port, "to": PERSON, "sender": "agent@example.org",
        "username": SMTP_USER, "verify": smtp.ca, "imap_host": "127.0.0.1",
        "imap_port": imap.port, "imap_username": IMAP_USER, "imap_auth_profile": "imap",
        "poll_every": 0.3}
    settings.update(extra)
    return EmailConfig(**settings)  # type: ignore[arg-type]


@pytest.fixture
def servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Servers]:
    with MailServer(tmp_path) as smtp, ImapServer() as imap:
        # Both servers' certificates come from their own test CAs: one bundle for both.
        bundle = tmp_path / "both-ca.pem"
        bundle.write_text(Path(smtp.ca).read_text() + Path(imap.ca).read_text())
        monkeypatch.setattr(CONFIG, "email", _config(smtp, imap, verify=str(bundle)))
        monkeypatch.setattr(CONFIG, "ask_after", 300.0)
        monkeypatch.setattr(CONFIG, "profiles", {
            "smtp": AuthProfile(hosts=["127.0.0.1"], token=SMTP_PASSWORD),
            "imap": AuthProfile(hosts=["127.0.0.1"], token=IMAP_PASSWORD)})
        yield Servers(smtp, imap)


def _records(agent: Agent, kind: str) -> list[dict[str, object]]:
    return [r for r in agent.ledger.records() if r["kind"] == kind]


def _code(message: Message) -> str:
    found = re.search(r"\[answer code ([A-Z0-9]+)\]", str(message["Subject"]))
    assert found, message["Subject"]
    return found.group(1)


def _body(message: Message) -> str:
    payload = message.get_payload(decode=True)
    assert isinstance(payload, bytes)
    return payload.decode()


def _quoted(message: Message) -> str:
    return "\n".join("> " + line for line in _body(message).splitlines())


async def _until(check: object, seconds: float = 10.0) -> None:
    assert callable(check)
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.1)


async def test_an_approval_is_answered_by_a_reply_and_only_the_persons_counts(
        servers: Servers, tmp_path: Path) -> None:
    from tool_helpers import through_the_loop

    agent = Agent(workspace=tmp_path / "ws")  # no notebook attached: nobody can click
    call = asyncio.create_task(through_the_loop(agent, "write_file", path="note.txt",
                                                content="hello"))
    [message] = await asyncio.to_thread(servers.wait_mail, 1)
    code = _code(message)
    body = _body(message)
    assert len(code) >= 10 and f"[answer code {code}]" in body
    assert "write_file" in message["Subject"] and '"content": "hello"' in body
    assert "Options: Approve · Deny" in body and "Answer by replying to this mail" in body
    await _until(lambda: MAIL.polling)  # it starts once the mail is sent: soon after it lands
    subject = f"Re: {message['Subject']}"
    # None of these answers: no code, a wrong code, another sender, an answer not offered.
    servers.reply("Re: Approval needed", "Approve")
    servers.reply(subject.replace(code, "ZZZZZZZZZZZZ"), "Approve")
    servers.reply(subject, "Approve\n\n" + _quoted(message), sender="mallory@example.org")
    servers.reply(subject, "Always allow this tool\nyes please\n\n" + _quoted(message))
    await _until(lambda: len(_records(agent, "channel_answer_ignored")) == 4)
    assert not call.done()
    servers.reply(subject, "approve\n\nOn Thu, me wrote:\n" + _quoted(message))
    record = await asyncio.wait_for(call, 20)
    assert record.success, record
    assert (tmp_path / "ws" / "files" / "note.txt").read_text() == "hello"
    approval = _records(agent, "approval")[-1]
    assert approval["decision"] == "approved" and approval["source"] == "email"
    assert [(r["reason"], r["from_address"]) for r in
            _records(agent, "channel_answer_ignored")] == [
        ("the reply carries no answer code of an open question", PERSON),
        ("the reply carries no answer code of an open question", PERSON),
        ("the reply came from another address", "mallory@example.org"),
        ("the answer is not one of the question's options", PERSON)]
    assert [r["channel"] for r in _records(agent, "channel_sent")] == ["email"]
    await _until(lambda: not MAIL.polling)  # nothing open: the mailbox is left alone
    # A late reply to the answered question changes nothing, and is not even read.
    servers.reply(subject, "Deny")
    await asyncio.sleep(0.8)
    assert len(_records(agent, "channel_answer_ignored")) == 4
    ledger = (tmp_path / "ws" / "ledger.jsonl").read_text()
    assert IMAP_PASSWORD not in ledger and SMTP_PASSWORD not in ledger
    assert code not in ledger  # the code stays in the person's mail


async def test_a_deny_by_mail_is_the_persons_denial(servers: Servers, tmp_path: Path) -> None:
    from tool_helpers import through_the_loop

    agent = Agent(workspace=tmp_path / "ws")
    call = asyncio.create_task(through_the_loop(agent, "write_file", path="note.txt",
                                                content="hello"))
    [message] = await asyncio.to_thread(servers.wait_mail, 1)
    servers.reply(f"Re: {message['Subject']}", "Deny.\n-- \nsent from my phone")
    record = await asyncio.wait_for(call, 20)
    assert not record.success and not (tmp_path / "ws" / "files" / "note.txt").exists()
    approval = _records(agent, "approval")[-1]
    assert approval["decision"] == "denied" and approval["source"] == "email"


async def test_a_mail_cannot_approve_what_it_cannot_show_whole(servers: Servers,
                                                               tmp_path: Path) -> None:
    """The phone-approval rules hold by mail: arguments that look like a secret are not
    sent, the mail offers Deny alone, and an Approve in a reply is ignored."""
    from tool_helpers import through_the_loop

    content = "export OPENAI_API_KEY=sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2
    agent = Agent(workspace=tmp_path / "ws")
    call = asyncio.create_task(through_the_loop(agent, "write_file", path="note.txt",
                                                content=content))
    [message] = await asyncio.to_thread(servers.wait_mail, 1)
    body = _body(message)
    assert "sk-proj" not in body and "here you can only deny" in body
    assert "Options: Deny" in body and "Approve ·" not in body
    servers.reply(f"Re: {message['Subject']}", "Approve")
    await _until(lambda: len(_records(agent, "channel_answer_ignored")) == 1)
    assert not call.done()
    servers.reply(f"Re: {message['Subject']}", "deny")
    record = await asyncio.wait_for(call, 20)
    assert not record.success and not (tmp_path / "ws" / "files" / "note.txt").exists()
    assert [r["reason"] for r in _records(agent, "channel_answer_ignored")] == [
        "the answer is not one of the question's options"]


async def test_the_notebook_answers_first_and_the_mailbox_is_left_alone(
        servers: Servers, tmp_path: Path) -> None:
    from tool_helpers import call_tool, notebook_open

    CONFIG.ask_after = 0.3
    agent = Agent(workspace=tmp_path / "ws")
    asked = notebook_open(agent)
    task = asyncio.create_task(call_tool(agent, "ask_user", question="Tea or coffee?",
                                         options=["tea", "coffee"]))
    [message] = await asyncio.to_thread(servers.wait_mail, 1)  # after 0.3 s unanswered
    assert "Tea or coffee?" in _body(message) and "Options: tea · coffee" in _body(message)
    await _until(lambda: MAIL.polling)
    agent.questions.answer(asked[0].question_id, "coffee")
    assert await asyncio.wait_for(task, 10) == {"answer": "coffee", "source": "user"}
    await _until(lambda: not MAIL.polling, 5)
    servers.reply(f"Re: {message['Subject']}", "tea")  # too late: nothing changes
    await asyncio.sleep(0.8)
    assert not _records(agent, "channel_answer_ignored")


async def test_a_free_text_question_takes_the_first_line_of_the_reply(
        servers: Servers, tmp_path: Path) -> None:
    from tool_helpers import call_tool

    agent = Agent(workspace=tmp_path / "ws")
    task = asyncio.create_task(call_tool(agent, "ask_user", question="Where shall we meet?"))
    [message] = await asyncio.to_thread(servers.wait_mail, 1)
    assert "write your answer on the first line" in _body(message)
    servers.reply(f"Re: {message['Subject']}",
                  "\n  At the station  \nsee you\n\n" + _quoted(message))
    assert await asyncio.wait_for(task, 20) == {"answer": "At the station",
                                                "source": "email"}


async def test_the_mailbox_over_starttls_and_a_certificate_not_trusted(
        servers: Servers) -> None:
    imap = servers.imap
    config = _config(servers.smtp, imap, verify=imap.ca, imap_port=imap.starttls_port,
                     imap_starttls=True)
    box = Mailbox(config)
    await box.mark()
    imap.deliver(PERSON, "hello", "first line")
    [found] = await box.new_mail()
    assert found["Subject"] == "hello" and await box.new_mail() == []
    # Without the test's CA the certificate is refused, and the error holds no password.
    strict = Mailbox(_config(servers.smtp, imap, verify=True))
    with pytest.raises(ChannelError) as refused:
        await strict.new_mail()
    assert "certificate" in str(refused.value) and IMAP_PASSWORD not in str(refused.value)
    # A profile not meant for the mailbox's host is refused before anything is sent.
    CONFIG.profiles = {**CONFIG.profiles,
                       "imap": AuthProfile(hosts=["imap.example.org"], token=IMAP_PASSWORD)}
    with pytest.raises(ChannelError, match="may not be sent to 127.0.0.1"):
        Mailbox(config)


async def test_with_no_mailbox_a_mail_question_stays_one_way(servers: Servers,
                                                              tmp_path: Path) -> None:
    from tool_helpers import call_tool

    assert CONFIG.email is not None
    CONFIG.email.imap_host = None
    agent = Agent(workspace=tmp_path / "ws")
    task = asyncio.create_task(call_tool(agent, "ask_user", question="Anyone?",
                                         default="no"))
    [message] = await asyncio.to_thread(servers.wait_mail, 1)
    assert "answer code" not in str(message["Subject"]) + _body(message)
    assert "This mail cannot carry your answer back." in _body(message)
    assert not MAIL.polling
    task.cancel()


def test_what_a_reply_says() -> None:
    body = ("\n> quoted Approve\n  approve!  \nDeny\nOn Thu, 26 Nov 2026, me wrote:\nDeny\n")
    assert reply_lines(body) == ["approve!", "Deny"]
    assert answer_in(body, ["Approve", "Deny"]) == "Approve"
    assert answer_in("maybe\nDENY", ["Approve", "Deny"]) == "Deny"
    assert answer_in("maybe", ["Approve", "Deny"]) is None
    assert answer_in("> only quoted", []) is None
    assert answer_in("-----Original Message-----\nApprove", ["Approve"]) is None
    assert answer_in("at noon\nthanks", []) == "at noon"


async def test_two_agents_share_the_mailbox_and_each_reply_finds_its_question(
        servers: Servers, tmp_path: Path) -> None:
    """One reader per mailbox: each reply goes to the question whose code it carries, and a
    question asked after the reader stopped starts it again."""
    from tool_helpers import call_tool

    first = Agent(workspace=tmp_path / "one")
    second = Agent(workspace=tmp_path / "two")
    one = asyncio.create_task(call_tool(first, "ask_user", question="First?",
                                        options=["a", "b"]))
    two = asyncio.create_task(call_tool(second, "ask_user", question="Second?",
                                        options=["c", "d"]))
    sent = await asyncio.to_thread(servers.wait_mail, 2)
    by_question = {_body(m).splitlines()[0]: m for m in sent}
    second_mail = by_question["The agent asks: Second?"]
    first_mail = by_question["The agent asks: First?"]
    assert _code(first_mail) != _code(second_mail)
    # The first agent's answer in a reply to the second's question is not offered there.
    servers.reply(f"Re: {second_mail['Subject']}", "b")
    servers.reply(f"Re: {second_mail['Subject']}", "D")
    servers.reply(f"Re: {first_mail['Subject']}", "b")
    assert await asyncio.wait_for(two, 20) == {"answer": "d", "source": "email"}
    assert await asyncio.wait_for(one, 20) == {"answer": "b", "source": "email"}
    assert [r["reason"] for r in _records(second, "channel_answer_ignored")] == [
        "the answer is not one of the question's options"]
    assert not _records(first, "channel_answer_ignored")
    await _until(lambda: not MAIL.polling)
    again = asyncio.create_task(call_tool(first, "ask_user", question="Again?",
                                          options=["yes", "no"]))
    third = (await asyncio.to_thread(servers.wait_mail, 3))[2]
    servers.reply(f"Re: {third['Subject']}", "no")
    assert await asyncio.wait_for(again, 20) == {"answer": "no", "source": "email"}
