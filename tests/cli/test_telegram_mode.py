"""``python -m agent_kernel telegram`` against a scripted Bot API on 127.0.0.1: the
person's message is answered by one run and the reply sent back, a stranger's is ignored
and recorded, litellm is not imported to serve the demo model, and Ctrl-C stops it cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from bot_api_server import PERSON, BotApi

from agent_kernel.core.ledger import Ledger

TOKEN = "424242:CLI-test-bot-token"
ROOT = Path(__file__).resolve().parents[2]


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "AGENT_KERNEL_AUTH_TELEGRAM_TOKEN": TOKEN,
            "AGENT_KERNEL_AUTH_TELEGRAM_HOSTS": "127.0.0.1",
            "AGENT_KERNEL_WORKSPACE": str(tmp_path / "ws"),
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def test_a_message_is_answered_and_litellm_stays_out(tmp_path: Path) -> None:
    with BotApi(TOKEN) as bot:
        bot.say("hello from a stranger", user=555, chat=555)
        bot.say("echo good morning")
        script = ("import sys, argparse\n"
                  "from agent_kernel.__main__ import build_parser\n"
                  "args = build_parser().parse_args(sys.argv[1:])\n"
                  "code = args._main(args)\n"
                  "print('LITELLM', 'litellm' in sys.modules, 'CODE', code)\n")
        done = subprocess.run(
            [sys.executable, "-c", script, "telegram", "--chat-id", str(PERSON), "--base-url",
             bot.url, "--poll-seconds", "1", "--max-messages", "1"],
            env=_env(tmp_path), capture_output=True, text=True, timeout=120)
        assert "LITELLM False CODE 0" in done.stdout, (done.stdout, done.stderr)
        replies = bot.calls("sendMessage")
    assert [r["chat_id"] for r in replies] == [PERSON]
    assert "good morning" in replies[0]["text"]
    records = Ledger(tmp_path / "ws" / "ledger.jsonl").records()
    ignored = [r for r in records if r["kind"] == "channel_message_ignored"]
    assert [r["from_id"] for r in ignored] == [555]
    assert TOKEN not in (tmp_path / "ws" / "ledger.jsonl").read_text()


def test_ctrl_c_stops_it_cleanly(tmp_path: Path) -> None:
    with BotApi(TOKEN) as bot:
        process = subprocess.Popen(
            [sys.executable, "-m", "agent_kernel", "telegram", "--chat-id", str(PERSON),
             "--base-url", bot.url, "--poll-seconds", "1"],
            env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert process.stdout is not None
            assert "listening" in process.stdout.readline()
            bot.say("echo still here")
            bot.wait_sent(1, timeout=60)
            time.sleep(0.3)
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
    assert process.returncode == 0, err
    assert "stopped" in out
    assert "Traceback" not in err


def test_a_runs_approval_comes_to_the_chat_and_the_press_lets_it_run(tmp_path: Path) -> None:
    with BotApi(TOKEN) as bot:
        process = subprocess.Popen(
            [sys.executable, "-m", "agent_kernel", "telegram", "--chat-id", str(PERSON),
             "--base-url", bot.url, "--poll-seconds", "1", "--max-messages", "1"],
            env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            bot.say("write a file hello.txt with hi there")
            card = bot.wait_sent(1, timeout=60)[0]
            assert "write_file" in card["text"] and card["reply_markup"]
            bot.press(card, "Approve")
            reply = bot.wait_sent(2, timeout=60)[1]
            out, err = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
    assert process.returncode == 0, err
    assert reply["reply_markup"] is None and "hello.txt" in reply["text"]
    assert (tmp_path / "ws" / "files" / "hello.txt").read_text() == "hi there"
    approvals = [r for r in Ledger(tmp_path / "ws" / "ledger.jsonl").records()
                 if r["kind"] == "approval"]
    assert [(r["decision"], r["source"]) for r in approvals] == [("approved", "telegram")]
