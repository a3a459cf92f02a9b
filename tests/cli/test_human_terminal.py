"""Questions and approvals answered at a terminal: terminal IPython, the CLI, the reader.

Terminal IPython runs in a real pseudo-terminal (pexpect), so the magics see
no kernel and a tty on stdin, exactly as a person's ``ipython`` does. The
in-process tests drive :class:`TerminalAnswerer` through a pty pair.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import pexpect
import pytest

from agent_kernel import Agent
from agent_kernel.core.events import Question
from agent_kernel.engine.approvals import ALWAYS, APPROVE, DENY
from agent_kernel.views.terminal import TerminalAnswerer, can_answer_on, hint, interpret
from agent_kernel.views.text import TextView

IPYTHON = [sys.executable, "-m", "IPython", "--no-banner", "--colors=NoColor", "--simple-prompt"]
# Generous: the first %agent imports litellm (seconds on a busy machine).
WAIT = 120


def _ledger(workspace: Path) -> list[dict[str, Any]]:
    lines = (workspace / "ledger.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


class Terminal:
    """Terminal IPython in a pty, with the transcript it printed."""

    def __init__(self, tmp_path: Path) -> None:
        self.workspace = tmp_path / "ws"
        env = dict(os.environ, AGENT_KERNEL_WORKSPACE=str(self.workspace))
        self.output = io.StringIO()
        self.child = pexpect.spawn(IPYTHON[0], IPYTHON[1:], cwd=str(tmp_path), env=env,
                                   encoding="utf-8", timeout=WAIT, dimensions=(50, 200))
        self.child.logfile_read = self.output
        self.cell = 1
        self.expect_prompt()

    def expect_prompt(self) -> None:
        self.child.expect_exact(f"In [{self.cell}]: ")
        self.cell += 1

    def run(self, line: str) -> None:
        """Type a cell and wait for the next prompt."""
        self.child.sendline(line)
        self.expect_prompt()

    @property
    def text(self) -> str:
        return self.output.getvalue().replace("\r\n", "\n")

    def close(self) -> None:
        self.child.sendline("exit")
        self.child.expect(pexpect.EOF)
        self.child.close()


@pytest.fixture
def terminal(tmp_path: Path) -> Any:
    term = Terminal(tmp_path)
    try:
        term.run("%load_ext agent_kernel")
        yield term
    finally:
        if term.child.isalive():
            term.child.terminate(force=True)


def test_terminal_ipython_asks_with_numbered_options(terminal: Terminal) -> None:
    terminal.child.sendline("%agent plan my week")
    terminal.child.expect_exact("  [1] deep work  [2] meetings  [3] rest · answer within 60 min")
    terminal.child.expect_exact("  > ")
    terminal.child.sendline("7")
    terminal.child.expect_exact("type a number from 1 to 3 or one of the options")
    terminal.child.expect_exact("  > ")
    terminal.child.sendline("2")
    terminal.expect_prompt()
    terminal.close()
    assert "[answer] meetings (user)" in terminal.text
    assert "You answered **meetings**, so I will go with meetings." in terminal.text
    asked = [r for r in _ledger(terminal.workspace) if r.get("tool_name") == "ask_user"]
    assert [r["result"] for r in asked] == [{"answer": "meetings", "source": "user"}]


UNANSWERED = '''
from agent_kernel import ToolContext, tool


@tool
async def pick_days(ctx: ToolContext) -> list:
    """Ask two questions that end by their timeout."""
    first = await ctx.ask("Which day?", options=["Monday", "Tuesday"], timeout=1,
                          default="Monday")
    second = await ctx.ask("Which hour?", options=["morning", "afternoon"], timeout=1)
    return [first, second]
'''


def test_terminal_timeout_follows_spec_000_and_leaves_the_next_line_to_ipython(
        terminal: Terminal, tmp_path: Path) -> None:
    (tmp_path / "unanswered_tools.py").write_text(UNANSWERED, encoding="utf-8")
    terminal.run("import unanswered_tools")
    terminal.run("%agent pick days")
    # Asked on the terminal (a headless run would show no choices), then ended by the timeout.
    assert "  [1] Monday  [2] Tuesday (default: Monday) · answer within 1 s" in terminal.text
    assert "  [1] morning  [2] afternoon · answer within 1 s" in terminal.text
    assert "[answer] Monday (default)" in terminal.text
    assert "[answer] (no answer) (timeout)" in terminal.text
    # The next line typed goes to IPython, not to a reader left behind by a question.
    terminal.child.sendline("print(6 * 7)")
    terminal.child.expect_exact("42")
    terminal.expect_prompt()
    terminal.close()
    call = next(r for r in _ledger(terminal.workspace) if r.get("tool_name") == "pick_days")
    assert call["result"] == [{"answer": "Monday", "source": "default"},
                              {"answer": "", "source": "timeout"}]
    assert not (terminal.workspace / "pending_question.json").exists()


def test_terminal_ipython_asks_for_approval(terminal: Terminal) -> None:
    terminal.child.sendline("%agent write a file notes.txt with hello from the terminal")
    terminal.child.expect_exact("  [y] approve  [n] deny  [a] always allow this tool "
                                "(default: deny) · answer within 10 min")
    terminal.child.expect_exact("  > ")
    terminal.child.sendline("y")
    terminal.expect_prompt()
    terminal.close()
    assert "[answer] Approve (user)" in terminal.text
    written = terminal.workspace / "files" / "notes.txt"
    assert written.read_text(encoding="utf-8") == "hello from the terminal"
    approval = next(r for r in _ledger(terminal.workspace) if r["kind"] == "approval")
    assert (approval["decision"], approval["source"]) == ("approved", "user")


def test_ipython_without_a_terminal_stays_headless(tmp_path: Path) -> None:
    env = dict(os.environ, AGENT_KERNEL_WORKSPACE=str(tmp_path / "ws"))
    proc = subprocess.run(IPYTHON, input="%load_ext agent_kernel\n%agent plan my week\n"
                          "print(6 * 7)\n", capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=WAIT)
    assert "[question] What should this plan put first?" in proc.stdout
    assert "[answer] (no answer) (timeout)" in proc.stdout
    assert "answer within" not in proc.stdout
    assert "42" in proc.stdout


def test_cli_enter_takes_the_approval_default(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    child = pexpect.spawn(sys.executable, ["-m", "agent_kernel", "run",
                                           "write a file notes.txt with hi",
                                           "--workspace", str(workspace)],
                          encoding="utf-8", timeout=WAIT, dimensions=(50, 200))
    output = io.StringIO()
    child.logfile_read = output
    child.expect_exact("(default: deny)")
    child.expect_exact("  > ")
    child.sendline("")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, output.getvalue()
    assert "[answer] Deny (user)" in output.getvalue()
    assert not (workspace / "files" / "notes.txt").exists()
    approval = next(r for r in _ledger(workspace) if r["kind"] == "approval")
    assert (approval["decision"], approval["answer"], approval["source"]) == (
        "denied", "Deny", "user")


# -- what a typed line means ---------------------------------------------------

def _question(options: list[str] | None = None, default: str | None = None,
              kind: str = "ask") -> Question:
    return Question("run", "q_1", "Which?", options, 3600.0, default, kind=kind)


@pytest.mark.parametrize("options, default, typed, answer", [
    (["Monday", "Tuesday"], None, "2", "Tuesday"),
    (["Monday", "Tuesday"], None, " tuesday ", "Tuesday"),
    (["Monday", "Tuesday"], "Monday", "", "Monday"),
    (None, "tea", "", "tea"),
    (None, None, "green tea", "green tea"),
    (None, None, "3", "3"),
])
def test_a_number_the_text_or_enter_answers(options: list[str] | None, default: str | None,
                                            typed: str, answer: str) -> None:
    assert interpret(_question(options, default), typed) == answer


@pytest.mark.parametrize("options, default, typed, problem", [
    (["Monday", "Tuesday"], None, "3", "type a number from 1 to 2 or one of the options"),
    (["Monday", "Tuesday"], None, "Friday", "type a number from 1 to 2 or one of the options"),
    (["Monday", "Tuesday"], None, "", "type the number of an option"),
    (None, None, "  ", "type an answer"),
])
def test_a_line_that_answers_nothing_asks_again(options: list[str] | None, default: str | None,
                                                typed: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        interpret(_question(options, default), typed)


@pytest.mark.parametrize("typed, answer", [
    ("y", APPROVE), ("YES", APPROVE), ("n", DENY), ("", DENY), ("a", ALWAYS),
    ("always", ALWAYS),
])
def test_approvals_take_y_n_a_and_enter_denies(typed: str, answer: str) -> None:
    approval = _question([APPROVE, DENY, ALWAYS], DENY, kind="approval")
    assert interpret(approval, typed) == answer
    with pytest.raises(ValueError, match="type y / n / a"):
        interpret(approval, "maybe")


def test_the_hint_shows_numbered_options_and_the_default() -> None:
    assert hint(_question(["Monday", "Tuesday"], "Monday")) == (
        "  [1] Monday  [2] Tuesday (default: Monday) · answer within 60 min")
    assert hint(_question(None, None)) == "  type your answer · answer within 60 min"


# -- the reader, in process ----------------------------------------------------

@pytest.fixture
def pty_stdin() -> Any:
    """(the person's end, a stdin reading the terminal)."""
    leader, follower = os.openpty()
    stdin = open(follower, encoding="utf-8", closefd=True)  # noqa: SIM115 - closed below
    try:
        yield leader, stdin
    finally:
        os.close(leader)  # first: a reader still blocked on the terminal then gets EOF
        stdin.close()


async def test_a_reader_leaves_the_terminal_when_its_question_times_out(
        tmp_path: Path, pty_stdin: Any) -> None:
    leader, stdin = pty_stdin
    assert can_answer_on(stdin)
    agent = Agent(workspace=tmp_path / "ws")
    view = TextView(agent.bus, stream=io.StringIO())
    answerer = TerminalAnswerer(agent, view, stdin=stdin).attach()
    try:
        reply = await agent.questions.ask(run_id="run", question="Which?",
                                          options=["Monday", "Tuesday"], timeout=0.3,
                                          default="Monday")
    finally:
        answerer.close()
    assert reply == {"answer": "Monday", "source": "default"}
    assert "[1] Monday  [2] Tuesday (default: Monday)" in view.stream.getvalue()
    os.write(leader, b"for the prompt\n")
    # A reader left behind would take the line first: read without blocking to see.
    select.select([stdin], [], [], 30)
    os.set_blocking(stdin.fileno(), False)
    try:
        left = os.read(stdin.fileno(), 100)
    except BlockingIOError:
        left = b""
    assert left == b"for the prompt\n"
    assert not agent.questions.interactive


async def test_questions_asked_together_are_answered_one_line_each(
        tmp_path: Path, pty_stdin: Any) -> None:
    leader, stdin = pty_stdin
    agent = Agent(workspace=tmp_path / "ws")
    view = TextView(agent.bus, stream=io.StringIO())
    answerer = TerminalAnswerer(agent, view, stdin=stdin).attach()
    os.write(leader, b"2\n2\n")
    try:
        replies = await asyncio.gather(*(
            agent.questions.ask(run_id="run", question=f"Which {n}?",
                                options=["Monday", "Tuesday"], timeout=60)
            for n in (1, 2)))
    finally:
        answerer.close()
    assert replies == [{"answer": "Tuesday", "source": "user"}] * 2
    assert view.stream.getvalue().count(" > 2\n") == 2
