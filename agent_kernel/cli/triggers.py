"""``python -m agent_kernel triggers --workspace DIR``: run the saved triggers in the foreground.

For the person who wants triggers to outlive the notebook: the same
scheduler the kernel uses, on this process's own asyncio loop, with one
agent per ``agent_id`` found in ``DIR/triggers/``. It prints the restore note
(missed runs are skipped unless ``--missed run_once``), then one line per
firing and per finished run, until Ctrl-C (or ``--duration`` seconds). Stop
the notebook's kernel first: a kernel that runs the triggers holds the runner
lock, and this command then says so instead of firing them twice. Conditions
over notebook variables have no namespace here and report that; file
conditions work.

There is no person here to approve anything: a trigger of any kind without a
signed record that this user made or approved exactly it (a hand-written or
edited trigger file, a workspace from another machine, a time-based trigger
saved before triggers were signed) is listed as needing approval and never
runs; the note says to approve it in a notebook.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from datetime import datetime
from typing import TYPE_CHECKING, Any

from agent_kernel.cli import EXAMPLES, examples, leave

if TYPE_CHECKING:
    from agent_kernel.cli.grammar import Subparsers
    from agent_kernel.core.events import Event


def add_parser(sub: Subparsers) -> argparse.ArgumentParser:
    """Add the ``triggers`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "triggers", help="run the workspace's saved triggers in the foreground until stopped",
        formatter_class=EXAMPLES,
        epilog=examples("triggers --workspace .agent", "triggers --missed run_once",
                        "triggers --duration 60 --model demo"))
    parser.add_argument("--workspace", default=None,
                        help="workspace folder (default: $AGENT_KERNEL_WORKSPACE or .agent/)")
    parser.add_argument("--model", default=None,
                        help="model for the runs (default: the model the trigger was made with)")
    parser.add_argument("--missed", choices=("skip", "run_once"), default="skip",
                        help="runs missed while nothing ran: skip them (default) or run once")
    parser.add_argument("--headless-approval", choices=("deny", "allow"), default="deny",
                        help="approvals with nobody to ask (default deny)")
    parser.add_argument("--duration", type=float, default=None,
                        help="stop after this many seconds (default: run until Ctrl-C)")
    return parser


def _printer(prompts: dict[str, str]) -> Any:
    from agent_kernel.core.events import Notice, RunFinished, RunStarted

    def show(event: Event) -> None:
        stamp = datetime.now().strftime("%H:%M:%S")
        if isinstance(event, RunStarted) and event.trigger:
            prompts[event.run_id] = event.prompt
            print(f"{stamp} fired {event.trigger.get('trigger_id')}: {event.prompt[:80]}",
                  flush=True)
        elif isinstance(event, RunFinished) and event.run_id in prompts:
            result = event.result
            text = (result.reply if result.ok else result.error or "").replace("\n", " ")
            print(f"{stamp} {event.run_id} {result.status}: {text[:200]}", flush=True)
            prompts.pop(event.run_id, None)
        elif isinstance(event, Notice) and event.level in ("warning", "error"):
            print(f"{stamp} {event.level}: {event.text}", flush=True)

    return show


async def serve(args: argparse.Namespace) -> int:
    """Start one scheduler per saved agent and keep them running."""
    from agent_kernel.core.workspace import Workspace
    from agent_kernel.engine.models.names import check_model
    from agent_kernel.triggers.checks import check_name
    from agent_kernel.triggers.model import LIVE
    from agent_kernel.triggers.store import TriggerStore

    workspace = Workspace(args.workspace)
    records, problems = TriggerStore(workspace).load_all()
    for problem in problems:
        print(f"problem: {problem}")
    active = [r for r in records if r.get("status", "active") in LIVE]
    if not active:
        print(f"No saved triggers in {workspace.root / 'triggers'}.")
        return 0
    agents: dict[str, str] = {}
    for record in active:
        agent_id = record.get("agent_id")
        try:
            check_name("agent_id", agent_id)
        except ValueError as exc:
            print(f"problem: {record.get('id')}: not restored: {exc}")
            continue
        model = record.get("model")
        model = args.model or (model if isinstance(model, str) and model else "demo")
        try:
            check_model(model)  # a saved name litellm no longer knows
        except ValueError as exc:
            print(f"problem: {record.get('id')}: not restored: {exc}")
            continue
        agents.setdefault(str(agent_id), model)
    from agent_kernel.app import Agent  # only now: with nothing to run, it is never needed
    from agent_kernel.core.config import Settings
    from agent_kernel.engine.models import llm
    from agent_kernel.triggers import scheduler_for

    # Import the provider library before the first firing, off the loop: a first run
    # should not spend seconds importing while the clock runs (demo needs none).
    if any(llm.needs_loading(model) for model in agents.values()):
        await asyncio.to_thread(llm.load_litellm)
    prompts: dict[str, str] = {}
    schedulers = []
    for agent_id, model in agents.items():
        agent = Agent(model=model, workspace=workspace, agent_id=agent_id,
                      settings=Settings(headless_approval=args.headless_approval))
        agent.bus.subscribe(_printer(prompts))
        scheduler = scheduler_for(agent, missed=args.missed, namespace={})
        report = scheduler.start()
        schedulers.append(scheduler)
        if not scheduler.runs_here:  # a kernel holds them: say who, do not pretend to run
            print(f"Not running the triggers of agent {agent_id!r}: "
                  f"{scheduler.store.holder(agent_id)} runs them. Stop it first (or leave "
                  "them to it).", flush=True)
            continue
        print(report.text(), flush=True)
    if not any(scheduler.runs_here for scheduler in schedulers):
        for scheduler in schedulers:
            await scheduler.close()
        return 1
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    print("Running the triggers; Ctrl-C stops.", flush=True)
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(stop.wait(), args.duration)
    for scheduler in schedulers:
        await scheduler.close()
    print("Stopped; the triggers stay saved in the workspace.")
    return 0


def main(args: argparse.Namespace) -> int:
    """Run until stopped; exit 0 (1 for a model litellm cannot route, or when another
    process runs every one of the workspace's triggers)."""
    from agent_kernel.engine.models.names import check_model

    if args.model is not None:
        try:
            check_model(args.model)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return leave(1)
    try:
        code = asyncio.run(serve(args))
    except KeyboardInterrupt:
        code = 0
    return leave(code)
