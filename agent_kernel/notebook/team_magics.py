"""``%agent --team``: the session's :class:`~agent_kernel.team.Team` from a notebook.

Imported only when a prompt goes to the team (``%agent --team`` or team mode
set with ``%agent_config --team on``), so ``%load_ext agent_kernel`` never
loads the supervisor. The team is made on first use with the session agent's
workspace, model and settings; the Teller's conversation goes on across
prompts (``--new`` starts a fresh one) and follows ``%agent_config --model``.
A changed workspace makes a new team.

The cell shows one run output for the Teller's runs (the usual run view, fed
by a :class:`~agent_kernel.team.relay.TellerRelay`) and below it a static
summary of the task tree (``text/html`` and ``text/plain``), filled in when the
work has ended. Questions and approvals follow the same policy as ``%agent``:
headless kernels use the headless policy and the cell waits for the end.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING, Any

from agent_kernel.core.events import Notice
from agent_kernel.views.team_summary import tree_bundle, tree_text

if TYPE_CHECKING:
    from agent_kernel.app import Agent
    from agent_kernel.notebook.magics import AgentMagics
    from agent_kernel.team.team import Team

WORKING = {"text/html": '<div class="agent-kernel-team-tree"><b>Tasks:</b> the team is '
                        'working…</div>',
           "text/plain": "Tasks: the team is working…"}


class TeamSession:
    """The notebook's team and whether it is answering a prompt now."""

    def __init__(self, team: Team) -> None:
        self.team = team
        self.busy = False


def session_team(agent_magics: AgentMagics) -> TeamSession | None:
    """The session's team (made or brought up to date); None after printing why not."""
    try:
        agent = agent_magics.agent
    except Exception as exc:  # a bad workspace or setting: say so, no traceback
        print(f"agent-kernel: could not create the team: {exc}", file=sys.stderr)
        return None
    session: TeamSession | None = getattr(agent_magics, "_team", None)
    if session is not None and session.team.workspace is not agent.workspace:
        if session.busy:
            print("agent-kernel: the team is still working in the old workspace; wait for "
                  "it (%agent_wait) first.", file=sys.stderr)
            return None
        session = None
    if session is None:
        from agent_kernel.team.team import Team

        try:
            team = Team(model=agent.model, workspace=agent.workspace, settings=agent.settings,
                        kernel=agent.services)
        except Exception as exc:
            print(f"agent-kernel: could not create the team: {exc}", file=sys.stderr)
            return None
        from agent_kernel.channels.relay import PhoneRelay

        # Every member's question goes through the Teller's channel; that one may reach the
        # person's phone as the single agent's does (agent_kernel.channels.CONFIG).
        team.teller.questions.remote = PhoneRelay(team.ledger, team.bus, "teller")
        session = agent_magics._team = TeamSession(team)
    follow(session.team, agent)
    follow_cluster(session.team, agent_magics.cluster)
    return session


def follow_cluster(team: Team, address: str | None) -> None:
    """The team's Workers run on the Dask scheduler ``%agent_config --cluster`` names (None:
    in this kernel); one that cannot be reached is said in words, and they run here."""
    given = team.cluster.given if team.cluster is not None else None
    if (address or None) == given:
        return
    try:
        team.use_cluster(address or None)
    except Exception as exc:  # an address nobody answers: words, not a traceback
        print(f"agent-kernel: the Dask scheduler at {address} cannot be reached "
              f"({type(exc).__name__}: {exc}); the team's Workers run in this kernel.",
              file=sys.stderr)
        team.use_cluster(None)


def follow(team: Team, agent: Agent) -> None:
    """The team uses the session agent's current model and settings (later runs)."""
    team.supervisor.model, team.supervisor.settings = agent.model, agent.settings
    for member in (team.teller, team.supervisor.desk):
        if member is not None:
            if member.model != agent.model:
                member.model = agent.model
            member.settings = agent.settings


def start_team(agent_magics: AgentMagics, prompt: str, *, new: bool = False, wait: bool = False,
               tasks: set[asyncio.Task[Any]] | None = None) -> asyncio.Task[Any] | None:
    """Run ``prompt`` through the session's team, shown in this cell; returns the task
    (None when it ran synchronously or could not start)."""
    from agent_kernel.core.ledger import new_id
    from agent_kernel.team.relay import TellerRelay

    session = session_team(agent_magics)
    if session is None:
        return None
    if session.busy:
        print("agent-kernel: the team is still answering the last prompt; wait for it "
              "(%agent_wait) or stop it first.", file=sys.stderr)
        return None
    team = session.team
    if new:
        team.teller.new_conversation()
    run_id = new_id("run")
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    relay = TellerRelay(team, run_id)
    if loop is None or getattr(agent_magics.shell, "kernel", None) is None:
        _run_in_terminal(agent_magics, session, relay, prompt)
        return None
    from IPython.display import display

    from agent_kernel.notebook.widgets import WidgetView

    live = agent_magics.frontend_live()
    view = WidgetView(relay, run_id, stop=relay.stop)
    view.interactive = live
    if live and agent_magics.probe.extension:
        view.channel = agent_magics.probe
    view.transcript.prompt, view.transcript.model = prompt, relay.model
    agent_magics.views = [*agent_magics.views[-20:], view]
    view.show()
    summary = display(WORKING, raw=True, display_id=True)
    session.busy = True
    task = loop.create_task(_guarded(agent_magics, session, relay, view, summary, prompt))
    relay.task = task
    if tasks is not None:
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if wait or not live:  # headless clients record only the running cell's output
        from agent_kernel.notebook.blocking import wait_blocking

        wait_blocking(task)
    return task


async def _guarded(agent_magics: AgentMagics, session: TeamSession, relay: Any, view: Any,
                   summary: Any, prompt: str) -> Any:
    """Run one prompt through the team; any failure ends in the view as a message."""
    team, result, attached = session.team, None, False
    try:
        if view.interactive:
            team.teller.questions.attach_answerer()
            attached = True
        result = await team.arun(prompt)
        agent_magics.last_result = result
        if not result.ok:  # stopped or failed: let the stopped tasks end first
            await relay.settle()
        for note in result.notes:
            relay.bus.emit(Notice(relay.run_id, note))
        return result
    except asyncio.CancelledError:
        relay.stop()
        await relay.settle()
        view.fail("The run was stopped.", status="stopped")
        return None
    except Exception as exc:
        view.fail(f"{type(exc).__name__}: {exc}")
        return None
    finally:
        session.busy = False
        if attached:
            team.teller.questions.detach_answerer()
        relay.close(result)
        view.finish()
        if summary is not None:
            summary.update(tree_bundle(relay.tree(result)), raw=True)


def _run_in_terminal(agent_magics: AgentMagics, session: TeamSession, relay: Any,
                     prompt: str) -> None:
    """Terminal IPython: the text view, questions on stdin, then the tree as text."""
    from agent_kernel.notebook.blocking import wait_blocking
    from agent_kernel.views.terminal import TerminalAnswerer
    from agent_kernel.views.text import TextView

    view = TextView(relay.bus, run_id=relay.run_id)
    answerer = TerminalAnswerer(relay, view).attach() if agent_magics.terminal_live() else None
    result = None
    session.busy = True
    try:
        result = wait_blocking(session.team.arun(prompt))
        agent_magics.last_result = result
        for note in result.notes:
            relay.bus.emit(Notice(relay.run_id, note))
    except Exception as exc:
        print(f"agent-kernel: the run failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:
        session.busy = False
        relay.close(result)
        if answerer is not None:
            answerer.close()
        view.close()
    print(tree_text(relay.tree(result)))
