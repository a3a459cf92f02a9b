"""Queued tasks an earlier session left: named to the person before any of them runs.

A workspace may come from someone else (a cloned repository, a shared drive),
so a task file in ``team/tasks/`` is a request nobody in this session made.
The supervisor puts restored queued tasks on no queue
(``Supervisor.undecided``); the team asks the person through the Teller's
question channel, in words (roles, priorities and prompts, never ids), to
**Run them** or **Drop them**. With nobody to ask, the headless policy
answers: ``allow`` runs them, ``deny`` (the default) keeps them saved and
unrun. No answer in time keeps them too. Each decision is a
``restored_tasks_decided`` ledger record, and a dropped task a
``task_cancelled`` one.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Literal

from ..events import Notice
from ..ledger import new_id

if TYPE_CHECKING:
    from ..agent import Agent
    from .queue import Task
    from .supervisor import Supervisor

RUN_RESTORED, DROP_RESTORED = "Run them", "Drop them"
RESTORED_TIMEOUT = 600.0
"""Seconds the person has to answer; then the tasks stay saved, not run."""
Decision = Literal["ask", "run", "drop"]
Choice = Literal["run", "drop", "keep"]
SHOWN = 10
"""Tasks the question names one by one; the rest are counted."""


def question(tasks: list[Task]) -> str:
    """The question about tasks an earlier session left: their roles, priorities, prompts."""
    count = len(tasks)
    lines = [f"{count} task{'s were' if count != 1 else ' was'} waiting from an earlier "
             "session:"]
    for task in tasks[:SHOWN]:
        prompt = " ".join(task.prompt.split())
        prompt = prompt if len(prompt) <= 200 else prompt[:199] + "…"
        lines.append(f"- {task.role.capitalize()}, priority {task.priority}: {prompt}")
    if count > SHOWN:
        lines.append(f"- and {count - SHOWN} more")
    lines.append("Run them now, or drop them? If nobody answers they stay saved and do not "
                 "run.")
    return "\n".join(lines)


async def ask(teller: Agent, team: Supervisor) -> tuple[Choice, str]:
    """Ask the person about ``team.undecided``: ``(choice, source)``, the source being the
    answer's (``user``, ``timeout``) or ``headless policy: allow|deny``."""
    channel = teller.questions
    if not channel.interactive:
        policy = team.settings.headless_approval
        return ("run" if policy == "allow" else "keep"), f"headless policy: {policy}"
    reply = await channel.ask(run_id=new_id("run"), question=question(team.undecided),
                              options=[RUN_RESTORED, DROP_RESTORED],
                              timeout=RESTORED_TIMEOUT, default=None)
    answer = reply["answer"]
    choice: Choice = ("run" if answer == RUN_RESTORED else
                      "drop" if answer == DROP_RESTORED else "keep")
    return choice, reply["source"]


async def settle(teller: Agent, team: Supervisor, choice: str, source: str) -> None:
    """Run, drop or keep the undecided restored tasks as ``choice`` says; recorded, and
    told to the person in a notice on the Teller's bus (the prompt's view shows it)."""
    tasks = list(team.undecided)
    if team.desk is not None:
        try:
            await asyncio.to_thread(
                team.desk.ledger.record_event, "restored_tasks_decided",
                agent_id=teller.agent_id, decision=choice, source=source,
                task_ids=[t.id for t in tasks], prompts=[t.prompt[:200] for t in tasks])
        except Exception as exc:  # the decision stands; the person hears the record failed
            teller.bus.emit(Notice("team", f"The ledger could not record the decision about "
                                   f"the earlier session's tasks: {exc}", level="error"))
    count = f"{len(tasks)} task{'s' if len(tasks) != 1 else ''} from an earlier session"
    by_policy = source.startswith("headless")
    if choice == "run":
        team.run_restored()
        said = (f"{count}: running them; nobody could be asked and the headless policy "
                "(allow) runs them." if by_policy else f"{count}: running them, as you said.")
    elif choice == "drop":
        team.drop_restored("dropped: it was waiting from an earlier session and you chose "
                           "Drop")
        said = f"{count}: dropped, as you said."
    elif by_policy:
        said = (f"{count} did not run: nobody could be asked and the headless policy (deny) "
                "does not run them. They stay saved: team.resume(\"run\") runs them, "
                "team.resume(\"drop\") drops them.")
    else:
        said = (f"{count} did not run: nobody answered. They stay saved, and the team's next "
                "prompt asks again.")
    teller.bus.emit(Notice("team", said))
