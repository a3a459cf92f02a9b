"""``python -m agent_kernel run "PROMPT"``: one run from the command line.

The transcript is printed with the plain-text view. With a terminal on stdin
the person answers questions there (an answerer is attached and each answer
is read in a thread, so the run's loop keeps going); with no terminal
(pipes, CI, cron) questions are headless: the default is used at once, or
they end as ``timeout``. Exit code 0 when the run ends with an answer, 1 when
it ends with an error, was stopped or hit a limit.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
from typing import Any

from ..events import Event, Question
from . import EXAMPLES, examples


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """The ``run`` subcommand."""
    parser = subparsers.add_parser(
        "run", help="run one prompt and print the transcript", formatter_class=EXAMPLES,
        epilog=examples('run "echo hello"',
                        'run "remember that the build server is orion-7" --workspace .agent',
                        'run --model openai/gpt-4o-mini "summarise notes.txt"  '
                        '# needs OPENAI_API_KEY'))
    parser.add_argument("prompt", help="what to ask the agent")
    parser.add_argument("--model", default="demo",
                        help="'demo' (offline) or a litellm model string (default: demo)")
    parser.add_argument("--workspace", default=None,
                        help="workspace folder (default: $AGENT_KERNEL_WORKSPACE or .agent/)")
    parser.add_argument("--api-base", default=None, help="provider base URL (api_base)")
    parser.add_argument("--tool-timeout", type=float, default=30.0,
                        help="seconds a tool call may take (default 30)")
    parser.add_argument("--max-tool-calls", type=int, default=50,
                        help="tool calls allowed in the run (default 50)")
    parser.add_argument("--headless-approval", choices=("deny", "allow"), default="deny",
                        help="approvals with no terminal to ask (default deny)")
    return parser


class StdinAnswerer:
    """Reads answers to questions from the terminal, one thread per question."""

    def __init__(self, agent: Any) -> None:
        self.agent = agent

    def on_event(self, event: Event) -> None:
        """Start reading an answer when a question that waits is asked."""
        if isinstance(event, Question) and event.question_id in self.agent.questions.pending:
            threading.Thread(target=self._read, args=(event,), daemon=True).start()

    def _read(self, event: Question) -> None:
        hint = ""
        if event.options:
            hint = " ".join(f"[{i}] {o}" for i, o in enumerate(event.options, 1))
            hint = f"{hint} (number or text)"
        sys.stdout.write(f"{hint}\n> " if hint else "> ")
        sys.stdout.flush()
        line = sys.stdin.readline()
        if not line:
            return
        text = line.strip()
        if event.options and text.isdigit() and 1 <= int(text) <= len(event.options):
            text = event.options[int(text) - 1]
        self.agent.questions.answer(event.question_id, text)


def main(args: argparse.Namespace) -> int:
    """Run the prompt; 0 on success, 1 on an error."""
    from ..agent import Agent
    from ..config import Settings
    from ..views.text import TextView

    try:
        settings = Settings(tool_timeout=args.tool_timeout, max_tool_calls=args.max_tool_calls,
                            api_base=args.api_base, headless_approval=args.headless_approval)
        agent = Agent(model=args.model, workspace=args.workspace, settings=settings)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    view = TextView(agent.bus)
    if sys.stdin is not None and sys.stdin.isatty():
        agent.bus.subscribe(StdinAnswerer(agent).on_event)
        agent.questions.attach_answerer()
    try:
        result = asyncio.run(agent.arun(args.prompt))
    except KeyboardInterrupt:
        print("\nerror: interrupted", file=sys.stderr)
        return 1
    finally:
        view.close()
    if result.ok:
        return 0
    print(f"error: the run ended with status '{result.status}': {result.error}", file=sys.stderr)
    return 1
