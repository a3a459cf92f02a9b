"""``python -m agent_kernel run "PROMPT"``: one run from the command line.

The transcript is printed with the plain-text view. With a terminal on stdin
the person answers questions and approvals there (``views/terminal.py``, shared
with terminal IPython: each answer is read in a thread, so the run's loop keeps
going, and the question's own timeout and default still apply); with no terminal
(pipes, CI, cron) questions are headless: the default is used at once, or
they end as ``timeout``. Exit code 0 when the run ends with an answer, 1 when
it ends with an error, was stopped or hit a limit.

``--team`` answers the prompt with a :class:`~agent_kernel.team.Team`: the
Teller's runs are printed as one transcript, then the task tree (role, status,
priority and the first line of each result).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING

from agent_kernel.cli import EXAMPLES, examples

if TYPE_CHECKING:
    from agent_kernel.cli.grammar import Subparsers
    from agent_kernel.core.config import Settings


def add_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    """The ``run`` subcommand."""
    parser = subparsers.add_parser(
        "run", help="run one prompt and print the transcript", formatter_class=EXAMPLES,
        epilog=examples('run "echo hello"',
                        'run "remember that the build server is orion-7" --workspace .agent',
                        'run --model openai/gpt-4o-mini "summarise notes.txt"  '
                        '# needs OPENAI_API_KEY',
                        'run --team "research three cities for a trip and compare them"'))
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
    parser.add_argument("--team", action="store_true",
                        help="answer with the team: a Teller, a Planner and Workers")
    parser.add_argument("--max-workers", type=int, default=4,
                        help="with --team: Workers running at once (default 4)")
    parser.add_argument("--cluster", default=None, metavar="ADDRESS",
                        help="with --team: run the Workers on the Dask scheduler at ADDRESS "
                             "(tcp://HOST:PORT; see docs/scale.md)")
    parser.add_argument("--files", default=None, metavar="URI",
                        help="the workspace's files/ at an object-store URI, e.g. "
                             "s3://bucket/prefix, or off (default: $AGENT_KERNEL_FILES_URI, "
                             "else the local folder); credentials come from the environment")
    parser.add_argument("--files-option", action="append", default=[], metavar="KEY=VALUE",
                        help="a storage option for --files: endpoint, region, allow_http")
    return parser


def _files_uri(given: str) -> str | None:
    """``--files``: a URI, or ``off`` (the local folder, whatever $AGENT_KERNEL_FILES_URI
    says; without ``--files`` that variable decides)."""
    from agent_kernel.core import object_store

    return None if object_store.means_local(given, "files") else given


def said_already() -> bool:
    """Did the transcript (stdout) already say why where the person reads stderr? On one
    terminal, or both streams into one pipe or file (``2>&1``): yes. A log or a pipe of
    its own gets the reason too."""
    import os

    try:
        if sys.stdout.isatty() and sys.stderr.isatty():
            return True
        return os.path.samestat(os.fstat(sys.stdout.fileno()), os.fstat(sys.stderr.fileno()))
    except (OSError, ValueError, AttributeError):  # a stream with no file behind it
        return False


def main(args: argparse.Namespace) -> int:
    """Run the prompt; 0 on success, 1 on an error."""
    import dataclasses

    from agent_kernel.app import Agent
    from agent_kernel.core import object_store
    from agent_kernel.core.config import Settings
    from agent_kernel.views.terminal import TerminalAnswerer, can_answer_on
    from agent_kernel.views.text import TextView

    try:
        files = dict(object_store.parse_option(o, "files", object_store.FILES_OPTIONS)
                     for o in args.files_option)
        settings = Settings(tool_timeout=args.tool_timeout, max_tool_calls=args.max_tool_calls,
                            api_base=args.api_base, headless_approval=args.headless_approval,
                            files_options=files)
        if args.files:
            settings = dataclasses.replace(settings, files_uri=_files_uri(args.files))
        if args.cluster and not args.team:
            raise ValueError("--cluster is where the team's Workers run: add --team")
        if args.team:
            return run_team(args, settings)
        agent = Agent(model=args.model, workspace=args.workspace, settings=settings)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    from agent_kernel.triggers import scheduler_for

    # A one-shot prompt saves the triggers it makes, and runs, skips or cancels none.
    scheduler = scheduler_for(agent, fires=False)
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
    if scheduler.triggers:
        count = len(scheduler.triggers)
        print(f"Saved {count} trigger{'s' if count > 1 else ''} in "
              f"{agent.workspace.root / 'triggers'}; none runs from this command: "
              "`python -m agent_kernel triggers`, or a notebook using this workspace, runs "
              f"{'them' if count > 1 else 'it'} when due.")
    if result.ok:
        return 0
    why = "" if said_already() or not result.error else f": {result.error}"
    print(f"error: the run ended with status '{result.status}'{why}", file=sys.stderr)
    return 1


def run_team(args: argparse.Namespace, settings: Settings) -> int:
    """``run --team``: the Teller's transcript, then the task tree; 0 when the Teller
    answered. Raises ValueError or OSError for a bad model, workspace or limit."""
    from agent_kernel.core.ledger import new_id
    from agent_kernel.team import Team
    from agent_kernel.team.relay import TellerRelay
    from agent_kernel.views.team_summary import tree_text
    from agent_kernel.views.terminal import TerminalAnswerer, can_answer_on
    from agent_kernel.views.text import TextView

    if args.max_workers < 1:
        raise ValueError(f"--max-workers must be at least 1, got {args.max_workers}")
    team = Team(model=args.model, workspace=args.workspace, settings=settings,
                max_workers=args.max_workers, cluster=args.cluster)
    relay = TellerRelay(team, new_id("run"))
    view = TextView(relay.bus, run_id=relay.run_id)
    answerer = TerminalAnswerer(relay, view).attach() if can_answer_on(sys.stdin) else None
    result = None
    try:
        result = asyncio.run(team.arun(args.prompt))
    except KeyboardInterrupt:
        print("\nerror: interrupted", file=sys.stderr)
        return 1
    finally:
        relay.close(result)
        if answerer is not None:
            answerer.close()
        view.close()
        team.use_cluster(None)  # the client it made to the scheduler is closed
    for note in result.notes:
        print(note)
    print(tree_text(result.tree))
    if result.ok:
        return 0
    why = "" if said_already() or not result.error else f": {result.error}"
    print(f"error: the team's run ended with status '{result.status}'{why}", file=sys.stderr)
    return 1
