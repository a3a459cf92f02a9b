"""``python -m agent_kernel run`` through a real subprocess: transcript, exit codes, questions."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import time


def cli(*args: str, stdin=subprocess.DEVNULL, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agent_kernel", "run", *args],
                          stdin=stdin, capture_output=True, text=True, timeout=timeout)


def test_run_prints_transcript_and_exits_0(tmp_path):
    ws = tmp_path / "ws"
    proc = cli("echo from the cli", "--model", "demo", "--workspace", str(ws))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.splitlines()[0] == ">>> [demo] echo from the cli"
    assert "[tool] echo ok in" in out and "-> from the cli" in out
    assert "(offline demo model) The echo tool returned: from the cli" in out
    assert "[done ·" in out
    ledger = (ws / "ledger.jsonl").read_text()
    assert '"tool_name":"echo"' in ledger


def test_run_error_exits_1_with_clear_message(tmp_path):
    proc = cli("hi", "--model", "nonexistent/foo", "--workspace", str(tmp_path / "ws"))
    assert proc.returncode == 1
    assert "error: the run ended with status 'error'" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


def test_run_bad_settings_exit_1(tmp_path):
    proc = cli("hi", "--max-tool-calls", "0", "--workspace", str(tmp_path / "ws"))
    assert proc.returncode == 1
    assert "error: max_tool_calls must be at least 1" in proc.stderr


def test_no_terminal_questions_are_headless(tmp_path):
    proc = cli("ask me to choose between tea or coffee", "--workspace", str(tmp_path / "ws"))
    assert proc.returncode == 0, proc.stderr
    assert "[question] Which do you choose: tea, coffee? [tea / coffee]" in proc.stdout
    assert "[answer] (no answer) (timeout)" in proc.stdout
    assert not (tmp_path / "ws" / "pending_question.json").exists()


def test_terminal_questions_are_asked_on_stdin(tmp_path):
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "agent_kernel", "run",
                             "ask me to choose between tea or coffee",
                             "--workspace", str(tmp_path / "ws")],
                            stdin=follower, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    os.close(follower)
    pending = tmp_path / "ws" / "pending_question.json"
    deadline = time.monotonic() + 90
    while not pending.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pending.exists(), "the CLI did not wait for an answer on the terminal"
    os.write(leader, b"2\n")
    out, err = proc.communicate(timeout=60)
    os.close(leader)
    assert proc.returncode == 0, err
    assert "[1] tea [2] coffee" in out
    assert "[answer] coffee (user)" in out
    assert "You answered **coffee**" in out
