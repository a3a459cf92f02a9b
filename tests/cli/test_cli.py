"""``python -m agent_kernel run`` through a real subprocess: transcript, exit codes, questions."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import time

from scripted_server import HttpError, ScriptedServer


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
    with ScriptedServer() as server:
        server.script(HttpError(401, "Incorrect API key provided", forever=True))
        proc = subprocess.run(
            [sys.executable, "-m", "agent_kernel", "run", "hi", "--model", "openai/test-model",
             "--api-base", server.base_url, "--workspace", str(tmp_path / "ws")],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
            env={**os.environ, "OPENAI_API_KEY": "sk-wrong-but-well-formed-0123"})
    assert proc.returncode == 1
    assert "error: the run ended with status 'error'" in proc.stderr
    assert "OPENAI_API_KEY" in proc.stdout and len(server.requests) == 1
    assert "Traceback" not in proc.stderr + proc.stdout


def test_run_error_on_a_terminal_is_said_once(tmp_path):
    """On one terminal the transcript gives the reason; the closing line does not repeat it."""
    import pexpect

    with ScriptedServer() as server:
        server.script(HttpError(401, "Incorrect API key provided", forever=True))
        child = pexpect.spawn(
            sys.executable, ["-m", "agent_kernel", "run", "hi", "--model", "openai/test-model",
                             "--api-base", server.base_url, "--workspace", str(tmp_path / "ws")],
            env={**os.environ, "OPENAI_API_KEY": "sk-wrong-but-well-formed-0123"},
            encoding="utf-8", timeout=120, dimensions=(50, 200))
        child.expect(pexpect.EOF)
        child.close()
    output = child.before
    assert child.exitstatus == 1
    assert "error: the run ended with status 'error'" in output
    assert output.count("Incorrect API key provided") == 1, output
    assert output.count("OPENAI_API_KEY") == 1, output


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
    assert "  [1] tea  [2] coffee · answer within 60 min\n  > 2\n" in out
    assert "[answer] coffee (user)" in out
    assert "You answered **coffee**" in out


def test_run_into_a_closed_pipe_says_nothing(tmp_path):
    """``run ... | head -1``: the reader leaves early; no traceback, the run still ends well."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent_kernel", "run", "echo hi", "--workspace",
         str(tmp_path / "ws")], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before the interpreter has started, so every write finds no reader
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err
    assert "echo" in (tmp_path / "ws" / "ledger.jsonl").read_text()


def test_triggers_into_a_closed_pipe_stops_quietly(tmp_path):
    """``triggers | head -1``: any subcommand whose reader left stops without a traceback,
    with the shell's code for a closed pipe (141), as CLIs do."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent_kernel", "triggers", "--workspace", str(tmp_path / "ws"),
         "--duration", "0.1"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first line is written
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 141, err
    assert "Traceback" not in err and "BrokenPipe" not in err


LATE_FLUSH = """
import atexit, runpy, sys, threading, time
def late():  # a slow flush of ours at exit: it must run, and finish, before the process ends
    time.sleep(0.5)
    print("flushed at exit", flush=True)
atexit.register(late)
def worker():  # a thread that is not a daemon, still working when the command returns
    threading.main_thread().join()
    time.sleep(0.5)
    print("worker done", flush=True)
threading.Thread(target=worker).start()
sys.argv = ["agent_kernel", *sys.argv[1:]]
runpy.run_module("agent_kernel", run_name="__main__", alter_sys=True)
print("never: the command leaves the process itself")
"""


def test_the_cli_leaves_after_everything_is_flushed(tmp_path):
    """``python -m agent_kernel`` ends without the interpreter's teardown, but only after
    what a normal exit does first: threads that are not daemons joined, every atexit
    handler run (the history writer's flush among them), the output flushed."""
    ws = tmp_path / "ws"
    proc = subprocess.run([sys.executable, "-c", LATE_FLUSH, "run", "echo kept-at-exit",
                           "--model", "demo", "--workspace", str(ws)],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stdout
    lines = proc.stdout.splitlines()
    assert "(offline demo model) The echo tool returned: kept-at-exit" in proc.stdout
    assert lines[-2:] == ["worker done", "flushed at exit"]
    history = (ws / "memory" / "history.jsonl").read_text()
    assert history.count("kept-at-exit") == 2  # the prompt and the reply
    assert '"tool_name":"echo"' in (ws / "ledger.jsonl").read_text()
