"""``%agent_team``: a live board of the session's team, with Cancel and Stop on its rows.

Like the triggers panel (:mod:`agent_kernel.notebook.trigger_panel`), the board is ONE
display of a static bundle (``text/html`` + ``text/plain`` from
:mod:`.board_html`), updated in place through its display id while the kernel
lives. The supervisor tells the board whenever a task is held, queued,
started or ended (``Supervisor.listeners``) and the desk's scheduler whenever
a trigger changes, so the board follows the team exactly and costs nothing
while the team is idle; updates are throttled to :data:`UPDATES_PER_SECOND`,
and while work is open the board redraws every :data:`REFRESH_SECONDS` so its
"as of" stays near the clock (times are local with the zone, never "2 min ago").
Roles and artifacts are files the agents write during their runs: they are read again
on each redraw (cheaply: only when their folder changed).
A saved notebook keeps the last real state.

What a person presses: one Cancel per queued or held task and trigger, one
Stop per running task (``Supervisor.stop``). With our JupyterLab extension they
sit IN the board's rows: the board's bundle also carries
:data:`~agent_kernel.views.board.BOARD_MIME` (the snapshot and the live rows),
which the extension draws with each row's button (labextension/src/board.ts),
clicks coming back over the probe comm as action ``team``; what was done is
written at the top of the board. Otherwise the controls are a separate output of
words naming the ``%agent_team stop|cancel ID`` line that does each (never a
widget, so a notebook saved while work runs reopens as text). Only the newest
board is live: an older one stops updating and its rows lose their buttons.
Headless clients get no controls. Imported on the first ``%agent_team`` only.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import sys
import threading
from datetime import datetime
from typing import TYPE_CHECKING, Any

from agent_kernel.core.events import Question, QuestionAnswered
from agent_kernel.core.mime_types import BOARD_MIME
from agent_kernel.notebook.cells import LiveOutput, in_cell, outcome_bundle
from agent_kernel.triggers import existing_scheduler
from agent_kernel.views.board import board_bundle, one_line, snapshot, someone
from agent_kernel.views.summaries import task_words
from agent_kernel.views.trigger_panel import local_time

if TYPE_CHECKING:
    from IPython.display import DisplayHandle

    from agent_kernel.notebook.magics import AgentMagics
    from agent_kernel.notebook.requests import TeamRequest
    from agent_kernel.team.supervisor import Supervisor
    from agent_kernel.team.team import Team

UPDATES_PER_SECOND = 2
REFRESH_SECONDS = 30.0
USAGE = ("usage: %agent_team [--text] | %agent_team cancel TASK_OR_TRIGGER_ID | "
         "%agent_team stop TASK_ID")
NO_TEAM = ("No team in this session yet: start one with %agent --team PROMPT "
           "(or %agent_config --team on).")

_LIVE: TeamBoard | None = None
"""The newest board: it holds the live controls."""


def _now_text() -> str:
    now = datetime.now().astimezone()
    return local_time(now.isoformat(), now)


def describe(supervisor: Supervisor, ident: str) -> tuple[str, str] | None:
    """A task or trigger of the team in words, and its state now (``running``, ``queued``,
    ``held``, ``trigger``, or how it ended): ``("run command sleep 30 (a Worker)",
    "running")``; None when the team has no such id. The outcome lines lead with these
    words; the id is for the magic a person types, never the line's subject."""
    task = supervisor.tasks.get(ident)
    if task is not None and not (task.status == "trigger" and task.trigger_id):
        work = one_line(task_words(task.prompt), 60)
        who = someone(task.role)
        if task.status in ("queued", "held"):
            return f"{work} ({task.status} for {who}, priority {task.priority})", task.status
        return f"{work} ({who})", task.status
    if task is not None:
        ident = task.trigger_id or ident
    scheduler = existing_scheduler(supervisor.desk) if supervisor.desk is not None else None
    for trigger in [*scheduler.active(), *scheduler.pending()] if scheduler else []:
        if trigger.id == ident:
            return (f"{one_line(trigger.prompt, 60)} (a trigger, {trigger.schedule_text()})",
                    "trigger")
    return None


def done_line(op: str, words: str, state: str) -> str:
    """What a Stop or Cancel did, in words: ``Stopped: run command sleep 30 (a Worker)``."""
    return f"{'Stopped' if op == 'stop' and state == 'running' else 'Cancelled'}: {words}"


def acted_line(supervisor: Supervisor, op: str, ident: str, before: tuple[str, str] | None,
               done: bool, unnamed: str) -> str:
    """What a Stop or Cancel of ``ident`` did, or why nothing was done, from the task's
    words ``before`` it (:func:`describe`); ``unnamed`` follows the verb when the team could
    not name it (the row's label, or nothing)."""
    if done:
        if before is not None:
            return done_line(op, *before)
        return f"{'Stopped' if op == 'stop' else 'Cancelled'}{unnamed}"
    return not_done_line(op, ident, describe(supervisor, ident) or before)


def not_done_line(op: str, ident: str, found: tuple[str, str] | None) -> str:
    """Why nothing was stopped or cancelled, in words; the id only in a magic to type."""
    if found is None:
        return (f"Nothing to {op}: this team has no task or trigger {ident!r} "
                "(%agent_team --text lists the live ones, with the line that acts on each)")
    words, state = found
    if state == "running":
        return f"Nothing to cancel: {words} is running; to stop it: %agent_team stop {ident}"
    if state in ("queued", "held", "trigger"):
        return f"Nothing to {op}: {words} could not be {op}{'ped' if op == 'stop' else 'led'}"
    return f"Nothing to {op}: {words} has already ended"


class TeamBoard:
    """A static, self-updating board of one :class:`~agent_kernel.team.Team`."""

    def __init__(self, team: Team) -> None:
        self.team = team
        self.supervisor = team.supervisor
        self.controls: BoardControls | None = None
        self.note = ""
        self.loop: asyncio.AbstractEventLoop | None = None
        self.output = LiveOutput(self.bundle, UPDATES_PER_SECOND)
        self._refresher: asyncio.TimerHandle | None = None
        self._scheduler: Any = None
        self.supervisor.listeners.append(self.changed)
        teller = getattr(team, "teller", None)  # a member's question: "waiting for your ..."
        self._unsubscribe = teller.bus.subscribe(self._on_teller_event) if teller else None
        self._listen_to_triggers()
        with contextlib.suppress(RuntimeError):
            self.loop = asyncio.get_running_loop()

    def _listen_to_triggers(self) -> None:
        """Follow the desk's scheduler once it exists (made by the first trigger)."""
        desk = self.supervisor.desk
        scheduler = existing_scheduler(desk) if desk is not None else None
        if scheduler is not None and scheduler is not self._scheduler:
            self._scheduler = scheduler
            scheduler.listeners.append(self.changed)

    def state(self) -> dict[str, Any]:
        """The board's data now (see :func:`.board_html.snapshot`)."""
        state = snapshot(self.team)
        if self.note:
            state["note"] = self.note
        if isinstance(self.controls, ExtensionBoardControls) and self.controls.outcomes:
            state["outcomes"] = list(self.controls.outcomes)  # what the row buttons did
        return state

    def bundle(self) -> dict[str, Any]:
        """The static bundle (``text/html`` and ``text/plain``; never a widget), and with
        our extension the board's JSON, whose rows carry their own Stop or Cancel."""
        state = self.state()
        bundle: dict[str, Any] = dict(board_bundle(state))
        controls = self.controls
        if isinstance(controls, ExtensionBoardControls):
            bundle[BOARD_MIME] = {
                "version": 1, "state": state,
                "controls": "extension" if controls.live and controls.rows else "none",
                "rows": [{"id": i, "op": op, "label": label}
                         for i, (op, label) in controls.rows.items()]}
        return bundle

    def _repr_mimebundle_(self, **_kwargs: object) -> dict[str, Any]:
        return self.bundle()

    def show(self, controls: bool = False, channel: object = None) -> None:
        """Display the board (and its controls when a person can click) in this cell.

        With ``channel`` (our extension's), the extension draws the controls; otherwise
        they are words naming the magic (:class:`TextBoardControls`). This board becomes
        the live one; an older one retires.
        """
        global _LIVE

        previous, _LIVE = _LIVE, self
        if previous is not None and previous is not self:
            previous.retire()
        if controls:  # the extension's go in the board's rows; words go above the board
            made: BoardControls = (ExtensionBoardControls(self, channel) if channel is not None
                                   else TextBoardControls(self))
            self.controls = made
            made.show()
        self.output.show()
        self._schedule_refresh()

    # -- updates --------------------------------------------------------------------
    def _on_teller_event(self, event: object) -> None:
        if isinstance(event, (Question, QuestionAnswered)):
            self.changed()

    def changed(self, *_what: object) -> None:
        """Called by the supervisor (a task) or the desk's scheduler (a trigger)."""
        self._listen_to_triggers()
        if self.controls is not None:
            self.controls.sync()
        self.push()

    def push(self, force: bool = False) -> None:
        """Update the board now, or as soon as the throttle allows."""
        self.output.push(force)
        if self._refresher is None:
            self._schedule_refresh()

    @property
    def updates(self) -> int:
        """How many times the board was redrawn."""
        return self.output.updates

    def _open_work(self) -> bool:
        sup = self.supervisor
        return bool(sup.running or any(len(q) for q in sup.queues.values()))

    def _schedule_refresh(self) -> None:
        self._refresher = None
        if self.output.handle is None or not self._open_work():
            return
        with contextlib.suppress(RuntimeError):
            self._refresher = asyncio.get_running_loop().call_later(REFRESH_SECONDS,
                                                                    self._refresh)

    def _refresh(self) -> None:
        self._refresher = None
        self.push()

    def retire(self) -> None:
        """A newer board took over: stop listening, say so, and let the controls go."""
        with contextlib.suppress(ValueError):
            self.supervisor.listeners.remove(self.changed)
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._scheduler is not None:
            with contextlib.suppress(ValueError):
                self._scheduler.listeners.remove(self.changed)
        self.output.cancel()
        if self._refresher is not None:
            self._refresher.cancel()
            self._refresher = None
        self.note = (f"This board stopped updating at {_now_text()}: a newer %agent_team "
                     "board took over.")
        if self.controls is not None:
            self.controls.moved()
        self.push(force=True)

    # -- acting ---------------------------------------------------------------------
    def act(self, op: str, ident: str) -> bool:
        """Cancel a queued or held task or a trigger, or stop a running task (on the loop)."""
        def do() -> bool:
            if op == "stop":
                return bool(self.supervisor.stop(ident))
            return bool(self.supervisor.cancel(ident))

        loop = self.loop
        if loop is None or loop.is_closed() or not loop.is_running() or _on_loop(loop):
            return do()

        async def on_loop() -> bool:
            return do()

        return asyncio.run_coroutine_threadsafe(on_loop(), loop).result(10)


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return getattr(loop, "_thread_id", None) == threading.get_ident()


class BoardControls:
    """What both kinds of board controls share: the live rows, and what was done."""

    def __init__(self, board: TeamBoard) -> None:
        self.board = board
        self.rows: dict[str, tuple[str, str]] = {}
        """Row id (a task's or a trigger's) -> (op, label); op is ``cancel`` or ``stop``."""
        self.outcomes: list[str] = []
        self.handle: DisplayHandle | None = None
        self.live = True
        """False once a newer board holds the controls."""
        self.rows = self.wanted()

    def wanted(self) -> dict[str, tuple[str, str]]:
        """The rows the team calls for now: queued and held tasks, running ones, triggers."""
        sup = self.board.supervisor
        rows: dict[str, tuple[str, str]] = {}
        for task in list(sup.running.values()):
            rows[task.id] = ("stop", f"{str(task.role).capitalize()} · running: "
                                     f"{one_line(task.prompt, 60)}")
        for role, queue in sup.queues.items():
            for task in queue.waiting():
                rows[task.id] = ("cancel", f"{role.capitalize()} · priority {task.priority}"
                                           f" · queued: {one_line(task.prompt, 60)}")
        for task in [t for t in sup.tasks.values() if t.status == "held"]:
            rows[task.id] = ("cancel", f"{task.role.capitalize()} · priority {task.priority}"
                                       f" · held: {one_line(task.prompt, 60)}")
        scheduler = existing_scheduler(sup.desk) if sup.desk is not None else None
        for trigger in [*scheduler.active(), *scheduler.pending()] if scheduler else []:
            rows[trigger.id] = ("cancel", f"Trigger · {trigger.schedule_text()}: "
                                          f"{one_line(trigger.prompt, 60)}")
        return rows

    def sync(self) -> None:
        """Bring the rows in step with the team and redraw."""
        if not self.live:
            return
        wanted = self.wanted()
        if wanted == self.rows:
            return
        self.rows = wanted
        self.redraw()

    def use(self, op: str, ident: str) -> tuple[bool, str]:
        """A click on Cancel or Stop: act, then say what happened in words (and return it)."""
        sup = self.board.supervisor
        before = describe(sup, ident)
        done = self.board.act(op, ident)
        said = acted_line(sup, op, ident, before, done, f": {self._label(ident)}")
        line = f"{said} · {_now_text()}"
        self.outcomes = [*self.outcomes[-9:], line]
        self.sync()
        self.redraw()
        return done, line

    def _label(self, ident: str) -> str:
        known = self.rows.get(ident)
        return known[1] if known else "that task"

    def moved(self) -> None:
        """A newer board holds the controls now: this output becomes text."""
        self.live = False
        self.rows = {}
        self.outcomes.append(f"The controls moved to a newer team board · {_now_text()}")
        self.redraw()

    def text_bundle(self) -> dict[str, str]:
        """What was done, as text (no rows live)."""
        return outcome_bundle(self.outcomes or [f"Nothing to cancel or stop · {_now_text()}"])

    def redraw(self) -> None:
        """Show the rows and outcomes as they are now."""
        raise NotImplementedError

    def show(self) -> None:
        """Display the controls as an output of their own."""
        raise NotImplementedError

    def _update(self, what: object, raw: bool) -> None:
        if self.handle is not None:
            with in_cell(self.board.output.cell):
                self.handle.update(what, raw=raw)


class ExtensionBoardControls(BoardControls):
    """The board's Cancel / Stop drawn by our JupyterLab extension IN the board's rows.

    No output of their own: the rows and what was done travel in the board's own
    :data:`~agent_kernel.views.board.BOARD_MIME` bundle (:meth:`TeamBoard.bundle`), so
    Stop sits on the running row it acts on; clicks come back as action ``team``.
    """

    def __init__(self, board: TeamBoard, channel: Any) -> None:
        super().__init__(board)
        self.channel = channel
        from agent_kernel.notebook.requests import TeamRequest

        channel.on_action("team", TeamRequest, _team_action)

    def show(self) -> None:
        """Nothing to show apart: the board carries the rows."""

    def redraw(self) -> None:
        if self.live:
            self.board.push(force=True)


class TextBoardControls(BoardControls):
    """Without our extension: each live row as words with the magic that acts on it.

    No widget, as the triggers panel's :class:`~.trigger_panel.TextControls`: a live
    widget saved in a notebook (JupyterLab saves every two minutes, and a team's work
    runs for minutes) reopens as "Error displaying widget: model not found", since
    JupyterLab's widget renderer wins over every fallback in the bundle. So the
    controls are what a saved notebook shows too: plain text, updated in place, and
    ``%agent_team stop ID`` / ``cancel ID`` act (what they did is added here).
    """

    def show(self) -> None:
        """Display the rows' words (or, with none live, what was done)."""
        from IPython.display import display

        self.handle = display(self.bundle(), raw=True, display_id=True)

    def hints(self) -> list[str]:
        """One line per live row: its work and role in words, then the magic that stops or
        cancels it (``run command sleep 30 (a Worker) — to stop it: %agent_team stop …``)."""
        sup = self.board.supervisor
        return [f"{(describe(sup, ident) or (label, ''))[0]} — to {op} it: "
                f"%agent_team {op} {ident}" for ident, (op, label) in self.rows.items()]

    def bundle(self) -> dict[str, str]:
        """What was done first, then the live rows as words; never a widget."""
        if not self.rows:
            return self.text_bundle()
        return outcome_bundle([*self.outcomes, *self.hints()])

    def redraw(self) -> None:
        self._update(self.bundle(), raw=True)


def _team_action(request: TeamRequest) -> tuple[bool, str]:
    """The extension's Cancel or Stop: the live board's controls act."""
    op, ident = request.op, request.id
    board = _LIVE
    controls = board.controls if board is not None else None
    if controls is None or ident not in controls.rows:
        return False, "This row has no live controls in this kernel any more."
    done, line = controls.use(op, ident)
    return done, "" if done else line


def agent_team(agent_magics: AgentMagics, line: str) -> None:
    """``%agent_team [--text] | cancel ID | stop ID``."""
    session = getattr(agent_magics, "_team", None)
    if session is None:
        print(NO_TEAM)
        return
    team = session.team
    try:
        words = shlex.split(line)
    except ValueError as exc:
        print(f"{exc}; {USAGE}", file=sys.stderr)
        return
    if words[:1] in (["cancel"], ["stop"]):
        if len(words) != 2:
            print(USAGE, file=sys.stderr)
            return
        op, ident = words
        controls = _LIVE.controls if _LIVE is not None and _LIVE.team is team else None
        if controls is not None and ident in controls.rows:  # what was done shows there too
            done, line = controls.use(op, ident)
            said = line.rsplit(" · ", 1)[0]
        else:
            before = describe(team.supervisor, ident)
            done = team.stop(ident) if op == "stop" else team.cancel(ident)
            said = acted_line(team.supervisor, op, ident, before, done, ".")
        if done:
            print(said if said.endswith(".") else f"{said}.")
        else:
            print(f"{said}.", file=sys.stderr)
        return
    if words == ["--text"]:
        from agent_kernel.views.board import board_text

        print(board_text(snapshot(team)))
        return
    if words:
        print(USAGE, file=sys.stderr)
        return
    probe = agent_magics.probe
    channel = probe if agent_magics.interactive is not False and probe.extension else None
    TeamBoard(team).show(controls=agent_magics.frontend_live(), channel=channel)
