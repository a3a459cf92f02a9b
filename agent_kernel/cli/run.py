"""``python -m agent_kernel run "PROMPT"``: one run from the command line.

The transcript is printed with the plain-text view. With a terminal on stdin
the person answers questions and approvals there (``views/terminal.py``, shared
with terminal IPython: each answer is read in a thread, so the run's loop keeps
going, and the question's own timeout and default still apply); with no terminal
(pipes, CI, cron) questions are headless: the default is used at once, or
they end as ``timeout``. Exit code 0 when the run ends with an answer, 1 when
it ends with an error, was stopped or hit a limit.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

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


def main(args: argparse.Namespace) -> int:
    """Run the prompt; 0 on success, 1 on an error."""
    from ..agent import Agent
    from ..config import Settings
    from ..views.terminal import TerminalAnswerer, can_answer_on
    from ..views.text import TextView

    try:
        settings = Settings(tool_timeout=args.tool_timeout, max_tool_calls=args.max_tool_calls,
                            api_base=args.api_base, headless_approval=args.headless_approval)
        agent = Agent(model=args.model, workspace=args.workspace, settings=settings)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    view = TextView(agent.bus)
    answerer = TerminalAnswerer(agent, view).attach() if can_answer_on(sys.stdin) else None
    try:
        result = asyncio.run(agent.arun(args.prompt))
    except KeyboardInterrupt:
        print("\nerror: interrupted", file=sys.stderr)
        return 1
    finally:
        if answerer is not None:
            answerer.close()
        view.close()
    if result.ok:
        return 0
    # On one terminal the transcript just said why; a log or a pipe gets the reason too.
    shown = sys.stdout.isatty() and sys.stderr.isatty()
    why = "" if shown or not result.error else f": {result.error}"
    print(f"error: the run ended with status '{result.status}'{why}", file=sys.stderr)
    return 1
