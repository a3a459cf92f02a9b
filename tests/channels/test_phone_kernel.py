"""A REAL KERNEL: a trigger fires with nobody at the notebook (nbclient draws no controls),
its approval goes to a scripted Telegram Bot API on 127.0.0.1, the person's button press
comes back, and the run goes on; the ledger says the answer came from Telegram. The same
approval by mail: the person's reply, delivered into the agent's IMAP mailbox (Dovecot on
127.0.0.1), approves it and the ledger says e-mail; with no mailbox configured the mail
carries the question one way, and with no other answer the call is not run."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from bot_api_server import PERSON, BotApi
from imap_server import DOVECOT, ImapServer
from imap_server import PASSWORD as IMAP_PASSWORD
from imap_server import USER as IMAP_USER
from kernel_runs import IdleKernel, eventually, ledger_records
from mail_server import PASSWORD, USER, MailServer

from agent_kernel.core.ledger import Ledger

pytestmark = pytest.mark.kernel

TOKEN = "777777:KERNEL-test-bot-token"
TESTS = str(Path(__file__).resolve().parents[1])
NIGHT = "%agent --wait in 2 seconds write a file night.txt with all quiet"


@contextmanager
def _night_scheduled(tmp_path: Path, secrets: dict[str, str], setup: str,
                     then: str = "") -> Iterator[IdleKernel]:
    """A kernel on ``tmp_path/ws`` whose channel profiles may use ``secrets`` on 127.0.0.1
    only, set as the person sets them (in the environment, never in a cell); it runs
    ``setup`` (the channel's config), loads the extension, runs ``then`` and schedules
    the night's trigger, and stays up while the block runs."""
    env = {}
    for profile, secret in secrets.items():
        env[f"AGENT_KERNEL_AUTH_{profile}_TOKEN"] = secret
        env[f"AGENT_KERNEL_AUTH_{profile}_HOSTS"] = "127.0.0.1"
    kernel = IdleKernel(tmp_path / "ws", tmp_path, env)
    with kernel.client.setup_kernel(env=kernel.env):
        out = kernel.run(setup + "%load_ext agent_kernel\n" + then + NIGHT)
        assert "Scheduled" in out, out
        yield kernel


def test_a_night_triggers_approval_is_answered_on_telegram(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    with BotApi(TOKEN) as bot, _night_scheduled(tmp_path, {"TELEGRAM": TOKEN},
                          "from agent_kernel.channels import CONFIG, TelegramConfig\n"
                          f"CONFIG.telegram = TelegramConfig(chat_id={PERSON}, "
                          f"base_url={bot.url!r}, poll_seconds=1)\n"):
        # The kernel sits idle; the trigger fires, its write_file asks, nobody can click.
        message = bot.wait_sent(1, timeout=40)[0]
        assert "write_file" in message["text"] and "all quiet" in message["text"]
        assert not (workspace / "files" / "night.txt").exists()
        bot.press(message, "Approve", user=31337)  # not the person: ignored
        time.sleep(1.5)
        assert not (workspace / "files" / "night.txt").exists()
        bot.press(message, "Approve")
        runs = eventually(lambda: ledger_records(workspace, "trigger_run"), 30)
        assert runs and runs[0]["status"] == "ok", runs
        assert (workspace / "files" / "night.txt").read_text() == "all quiet"
    approvals = ledger_records(workspace, "approval")
    assert [(a["tool_name"], a["decision"], a["source"]) for a in approvals] == [
        ("write_file", "approved", "telegram")]
    ignored = ledger_records(workspace, "channel_answer_ignored")
    assert [r["from_id"] for r in ignored] == [31337]
    sent = ledger_records(workspace, "channel_sent")
    assert [(r["channel"], r["what"]) for r in sent] == [("telegram", "approval")]
    ledger_text = (workspace / "ledger.jsonl").read_text()
    assert TOKEN not in ledger_text
    kinds = [r["kind"] for r in Ledger(workspace / "ledger.jsonl").records()]
    assert kinds.index("channel_sent") < kinds.index("approval")


def test_a_night_triggers_approval_by_mail_carries_the_question(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    with MailServer(tmp_path) as mail, _night_scheduled(
            tmp_path, {"SMTP": PASSWORD},
            "from agent_kernel.channels import CONFIG, EmailConfig\n"
            f"CONFIG.email = EmailConfig(host='127.0.0.1', port={mail.port}, "
            f"to='me@example.org', sender='agent@example.org', username={USER!r}, "
            f"verify={mail.ca!r})\n",
            "from agent_kernel.notebook.magics import current\n"
            "current(get_ipython()).agent.approvals.timeout = 4\n"):
        runs = eventually(lambda: ledger_records(workspace, "trigger_run"), 60)
        assert runs, "the trigger did not run"
    [message] = mail.messages
    body = message.get_payload(decode=True).decode()
    assert message["To"] == "me@example.org" and "write_file" in message["Subject"]
    assert "Options: Approve · Deny" in body and "all quiet" in body
    assert "Answer in the notebook" in body
    assert mail.logins == [USER]
    # No answer came back: the call was not run, and the ledger says so.
    assert not (workspace / "files" / "night.txt").exists()
    approvals = ledger_records(workspace, "approval")
    assert [(a["decision"], a["source"]) for a in approvals] == [("denied", "default")]
    assert [r["channel"] for r in ledger_records(workspace, "channel_sent")] == ["email"]
    assert PASSWORD not in (workspace / "ledger.jsonl").read_text()


@pytest.mark.skipif(DOVECOT is None and not os.environ.get("CI"),
                    reason="dovecot is not installed (apt-get install dovecot-imapd)")
def test_a_night_triggers_approval_is_answered_by_a_mail_reply(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    with MailServer(tmp_path) as mail, ImapServer() as imap:
        bundle = tmp_path / "both-ca.pem"
        bundle.write_text(Path(mail.ca).read_text() + Path(imap.ca).read_text())
        with _night_scheduled(
                tmp_path, {"SMTP": PASSWORD, "IMAP": IMAP_PASSWORD},
                "from agent_kernel.channels import CONFIG, EmailConfig\n"
                f"CONFIG.email = EmailConfig(host='127.0.0.1', port={mail.port}, "
                f"to='me@example.org', sender='agent@example.org', username={USER!r}, "
                f"verify={str(bundle)!r}, imap_host='127.0.0.1', imap_port={imap.port}, "
                f"imap_username={IMAP_USER!r}, imap_auth_profile='imap', poll_every=0.5)\n"):
            assert eventually(lambda: mail.messages, 40), "no question mail came"
            [message] = mail.messages
            found = re.search(r"\[answer code ([A-Z0-9]+)\]", str(message["Subject"]))
            assert found and "write_file" in message["Subject"]
            assert not (workspace / "files" / "night.txt").exists()
            imap.deliver("mallory@example.org", f"Re: {message['Subject']}", "Approve")
            time.sleep(1.5)
            assert not (workspace / "files" / "night.txt").exists()
            imap.deliver("me@example.org", f"Re: {message['Subject']}", "Approve\n\n> ...")
            runs = eventually(lambda: ledger_records(workspace, "trigger_run"), 40)
            assert runs and runs[0]["status"] == "ok", runs
            assert (workspace / "files" / "night.txt").read_text() == "all quiet"
    approvals = ledger_records(workspace, "approval")
    assert [(a["tool_name"], a["decision"], a["source"]) for a in approvals] == [
        ("write_file", "approved", "email")]
    ignored = ledger_records(workspace, "channel_answer_ignored")
    assert [(r["from_address"], r["reason"]) for r in ignored] == [
        ("mallory@example.org", "the reply came from another address")]
    assert [r["channel"] for r in ledger_records(workspace, "channel_sent")] == ["email"]
    ledger_text = (workspace / "ledger.jsonl").read_text()
    assert PASSWORD not in ledger_text and IMAP_PASSWORD not in ledger_text
