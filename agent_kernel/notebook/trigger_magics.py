"""The notebook side of triggers: wire schedulers to the kernel, restore, ``%agent_triggers``.

``load(ipython, agent_magics)`` is called by ``%load_ext agent_kernel`` and
must stay cheap: it registers ``%agent_triggers`` and gives the magics' session
(``UserTools.wire_scheduler``) a wiring hook that gives every scheduler its
agents make the shell's namespace (conditions read ``user_ns``) and shows a
triggers panel in the cell where each new trigger is made. Only when the
workspace holds saved triggers does it create the session
agent and start its scheduler on the kernel's running loop, which restores
them and prints a note saying so. Otherwise the scheduler starts with the
first trigger a run makes.

- ``%agent_triggers``: the panel of every trigger (a static table updated in
  place: status, schedule, next and last run, runs, last result), with Cancel
  and Approve in an output of their own when someone can click (buttons drawn by our
  extension, else the ``%agent_triggers`` line for each, never a widget);
- ``%agent_triggers --text``: every trigger of this session (active first) as text;
- ``%agent_triggers cancel ID``: cancel one;
- ``%agent_triggers approve ID``: approve a restored trigger that needs
  approval (the person has read it in the restore note or the panel); the
  approval is recorded with its digest, signed, and the trigger is armed.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from agent_kernel.engine.services import SchedulerService
    from agent_kernel.notebook.magics import AgentMagics
    from agent_kernel.triggers.model import Trigger
    from agent_kernel.triggers.scheduler import TriggerScheduler

USAGE = ("usage: %agent_triggers [--text] | %agent_triggers cancel TRIGGER_ID | "
         "%agent_triggers approve TRIGGER_ID")


def _someone_can_click(agent_magics: AgentMagics) -> bool:
    """The frontend answer without waiting (a run asking has waited for it already)."""
    if agent_magics.interactive is not None:
        return bool(agent_magics.interactive)
    return bool(agent_magics.probe.answered.is_set())


def _extension(agent_magics: AgentMagics) -> Any:
    """Our extension's channel when it draws the controls (else None: words)."""
    probe = agent_magics.probe
    return probe if agent_magics.interactive is not False and probe.extension else None


def _wiring(ipython: InteractiveShell,
            agent_magics: AgentMagics) -> Callable[[SchedulerService], None]:
    """What a scheduler made in this shell's session needs: the shell's namespace (its
    conditions read ``user_ns``) and a panel in the cell where each new trigger is made."""
    def wire(service: SchedulerService) -> None:
        from agent_kernel.triggers.scheduler import TriggerScheduler

        if not isinstance(service, TriggerScheduler):
            raise TypeError(f"a {type(service).__name__} is not a TriggerScheduler")
        if service.namespace is None:
            service.namespace = ipython.user_ns
        from agent_kernel.notebook.terminal_loop import is_terminal, print_fired_runs

        if is_terminal(ipython) and not getattr(service, "_agent_kernel_printed", False):
            print_fired_runs(service.agent.bus)  # no cell to draw in: the terminal
            service._agent_kernel_printed = True  # type: ignore[attr-defined]
        if not is_terminal(ipython) and not any(
                getattr(h, "_agent_kernel_card", False) for h in service.on_created):
            # a live panel: in a terminal, each update would print the table anew
            service.on_created.append(_card_hook(service, agent_magics))

    return wire


def _card_hook(scheduler: TriggerScheduler, agent_magics: AgentMagics) -> Any:
    def show(trigger: Trigger) -> None:
        from agent_kernel.notebook.trigger_panel import TriggersPanel

        TriggersPanel(scheduler, [trigger.id]).show(controls=_someone_can_click(agent_magics),
                                                    channel=_extension(agent_magics))

    show._agent_kernel_card = True  # type: ignore[attr-defined]
    return show


def session_scheduler(ipython: InteractiveShell, agent_magics: AgentMagics, *,
                      announce: bool = False) -> Any:
    """The session agent's scheduler, wired to this kernel and started when a loop runs."""
    from agent_kernel.triggers import scheduler_for

    scheduler = scheduler_for(agent_magics.agent)
    _wiring(ipython, agent_magics)(scheduler)
    if not scheduler.started:
        from agent_kernel.notebook.terminal_loop import start_on, terminal_loop

        try:
            report = scheduler.start()
        except RuntimeError:
            loop = terminal_loop(ipython)  # terminal IPython: the loop between prompts
            if loop is None:
                _start_later(ipython, agent_magics)
                return scheduler
            report = start_on(loop, scheduler.start)
        if announce and report.has_news:
            print(report.text())
    return scheduler


def _start_later(ipython: InteractiveShell, agent_magics: AgentMagics) -> None:
    """No loop runs yet (a startup file): start on the first cell, when the kernel's loop does."""
    def once(*_args: object) -> None:
        ipython.events.unregister("pre_run_cell", once)
        session_scheduler(ipython, agent_magics, announce=True)

    ipython.events.register("pre_run_cell", once)


def agent_triggers(ipython: InteractiveShell, agent_magics: AgentMagics, line: str) -> Any:
    """``%agent_triggers [--text] | cancel ID | approve ID``."""
    try:
        words = shlex.split(line)
    except ValueError as exc:
        print(f"{exc}; {USAGE}")
        return None
    scheduler = session_scheduler(ipython, agent_magics, announce=True)
    if words[:1] in (["cancel"], ["approve"]):
        from agent_kernel.notebook.trigger_panel import trigger_outcome
    if words[:1] == ["cancel"]:
        trigger = scheduler.triggers.get(words[1]) if len(words) == 2 else None
        if len(words) != 2:
            print(USAGE)
        elif scheduler.cancel(words[1]):
            print(f"{trigger_outcome('cancel', trigger, True)}.")
        else:
            print(f"No active trigger {words[1]!r}; %agent_triggers lists them.")
        return None
    if words[:1] == ["approve"]:
        if len(words) != 2:
            print(USAGE)
            return None
        trigger = scheduler.triggers.get(words[1])
        if scheduler.approve(words[1]):
            print(f"{trigger_outcome('approve', trigger, True)}; "
                  + ("its condition is checked from now on." if trigger.kind == "conditional"
                     else "it runs on its schedule from now on (at once if it is overdue)."))
        else:
            print(f"No trigger {words[1]!r} needs approval; %agent_triggers --text lists them.")
        return None
    if words == ["--text"]:
        from agent_kernel.views.trigger_panel import text_table

        ordered = sorted(scheduler.triggers.values(), key=lambda t: (not t.active, t.created_at))
        print(text_table(ordered))
        return None
    if words:
        print(USAGE)
        return None
    from agent_kernel.notebook.trigger_panel import TriggersPanel

    TriggersPanel(scheduler).show(controls=agent_magics.frontend_live(),
                                  channel=_extension(agent_magics))
    return None


def _has_saved_triggers(agent_magics: AgentMagics) -> bool:
    from agent_kernel.core.safe_open import names
    from agent_kernel.core.workspace import Workspace, WorkspaceError
    from agent_kernel.triggers.store import FOLDER

    try:
        root = Workspace(getattr(agent_magics, "workspace", None) or None).root
        return bool(names(root, FOLDER, ".json"))
    except (WorkspaceError, OSError):  # a refused workspace or triggers/ link: none restored
        return False


def load(ipython: Any, agent_magics: AgentMagics) -> None:
    """Register ``%agent_triggers`` and the wiring; restore saved triggers if there are any."""
    from agent_kernel.triggers import existing_scheduler

    ipython.register_magic_function(lambda line: agent_triggers(ipython, agent_magics, line),
                                    "line", "agent_triggers")
    # The session owns its wiring: schedulers its agents make get this shell's namespace,
    # not the last loaded shell's.
    agent_magics.user_tools.wire_scheduler = _wiring(ipython, agent_magics)
    existing = getattr(agent_magics, "_agent", None)
    scheduler = existing_scheduler(existing) if existing is not None else None
    if scheduler is not None:
        _wiring(ipython, agent_magics)(scheduler)
    if _has_saved_triggers(agent_magics):
        session_scheduler(ipython, agent_magics, announce=True)
