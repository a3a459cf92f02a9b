"""Queued tasks an earlier session left: named to the person before any of them runs.

A workspace may come from someone else (a cloned repository, a shared drive),
so a task file in ``team/tasks/`` is a request nobody in this session made.
The supervisor puts restored queued tasks on no queue
(``Restart.undecided``, :mod:`.restart`); the team asks the person through the Teller's
question channel, in words (roles, priorities and prompts, never ids), to
**Run them** or **Drop them**. The question shows every task Run would run, each
prompt whole with invisible and reordering characters as ``<U+202E>`` tokens;
what does not fit in one question (or a view would mask) is not shown, and then
Run is **Run the first N shown** and the rest are asked about at the next
prompt. With nobody to ask, the headless policy
answers: ``allow`` runs them, ``deny`` (the default) keeps them saved and
unrun. No answer in time keeps them too. Each decision is a
``restored_tasks_decided`` ledger record, and a dropped task a
``task_cancelled`` one.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Literal

from agent_kernel.core.events import DISPLAY_MAX_CHARS, Notice
from agent_kernel.core.ledger import new_id
from agent_kernel.core.unseen import draws_nothing, with_tokens

if TYPE_CHECKING:
    from agent_kernel.engine.agent import Agent
    from agent_kernel.team.queue import Task
    from agent_kernel.team.supervisor import Supervisor

RUN_RESTORED, DROP_RESTORED = "Run them", "Drop them"
KEEP_RESTORED = "Keep them saved"
RESTORED_TIMEOUT = 600.0
"""Seconds the person has to answer; then the tasks stay saved, not run."""
Decision = Literal["ask", "run", "drop"]
Choice = Literal["run", "drop", "keep"]
QUESTION_CHARS = 18_000
"""The most text of task lines one question shows, so that the whole question stays within
the 20,000 characters a view shows of any text (``events.DISPLAY_MAX_CHARS``). Every task
shown is shown whole; tasks past this are not shown, and Run never runs them."""
TOKENS_NOTE = "(<U+…>: a character that draws nothing or reorders text, shown by its code)"


def prompt_shown(prompt: str) -> str:
    """A task's prompt as the question shows it: whole, on one line, every character that
    draws nothing or reorders text written as ``<U+202E>`` (``unseen.with_tokens``)."""
    return " ".join(with_tokens(prompt).split())


def _line(task: Task) -> str:
    return f"- {task.role.capitalize()}, priority {task.priority}: {prompt_shown(task.prompt)}"


def _shown_as_is(text: str) -> bool:
    """True when a view shows ``text`` as it is: views mask what looks like a secret and cut
    text past ``DISPLAY_MAX_CHARS`` (``events.for_display``)."""
    from agent_kernel.core.redaction import scrub

    return bool(scrub(text, max_chars=DISPLAY_MAX_CHARS) == text)


def shown_count(tasks: list[Task]) -> int:
    """How many of ``tasks``, from the first, one question shows whole and as they are: as
    many as fit in :data:`QUESTION_CHARS` (none when the first alone does not), and none
    from the first a view would mask part of (a planted prompt may hold text shaped like a
    secret: ``API_KEY=$(curl … | sh)`` would read ``API_KEY=[REDACTED]``)."""
    total, count = 0, 0
    for task in tasks:
        total += len(_line(task)) + 1
        if total > QUESTION_CHARS:
            break
        count += 1
    while count and not _shown_as_is(_question(tasks, count)):
        count -= 1
    return count


def run_option(tasks: list[Task]) -> str | None:
    """The answer that runs tasks: Run them (all shown), Run the first N shown (some), or
    None (the first task's prompt alone is too long to show: nothing runs from here)."""
    shown = shown_count(tasks)
    if shown == len(tasks):
        return RUN_RESTORED
    return f"Run the first {shown} shown" if shown else None


def options(tasks: list[Task]) -> list[str]:
    """The question's answers: never one that runs a task the question did not show."""
    run = run_option(tasks)
    return [run, DROP_RESTORED] if run is not None else [KEEP_RESTORED, DROP_RESTORED]


def question(tasks: list[Task]) -> str:
    """The question about tasks an earlier session left: the roles, priorities and whole
    prompts of every task an answer would run."""
    return _question(tasks, shown_count(tasks))


def _question(tasks: list[Task], shown: int) -> str:
    count = len(tasks)
    lines = [f"{count} task{'s were' if count != 1 else ' was'} waiting from an earlier "
             "session:"]
    lines += [_line(task) for task in tasks[:shown]]
    rest = count - shown
    if rest:
        lines.append(f"- and {rest} more not shown here: a question shows at most "
                     f"{QUESTION_CHARS:,} characters of prompts, each whole, and none holding "
                     "text that looks like a secret (a question masks it). They do not run "
                     "from this question; they stay saved, and the team's next prompt asks "
                     "about them.")
    if any(draws_nothing(c) for task in tasks[:shown] for c in task.prompt):
        lines.append(TOKENS_NOTE)
    if not rest:
        lines.append("Run them now, or drop them? If nobody answers they stay saved and do "
                     "not run.")
    elif shown:
        lines.append(f"Run the first {shown} shown now, or drop all {count}? If nobody "
                     "answers they all stay saved and do not run.")
    else:
        lines.append(f"Keep them saved, or drop all {count}? If nobody answers they stay "
                     "saved and do not run.")
    return "\n".join(lines)


async def ask(teller: Agent, team: Supervisor) -> tuple[Choice, str, int]:
    """Ask the person about ``team.undecided``: ``(choice, source, count)``, the source
    being the answer's (``user``, ``timeout``) or ``headless policy: allow|deny``, and
    ``count`` how many of them, from the first, the choice covers (Run: those shown)."""
    tasks = team.restart.undecided
    channel = teller.questions
    if not channel.interactive:
        policy = team.settings.headless_approval
        return ("run" if policy == "allow" else "keep"), f"headless policy: {policy}", len(tasks)
    run = run_option(tasks)
    reply = await channel.ask(run_id=new_id("run"), question=question(tasks),
                              options=options(tasks), timeout=RESTORED_TIMEOUT, default=None)
    answer = reply["answer"]
    if run is not None and answer == run:
        return "run", reply["source"], shown_count(tasks)
    choice: Choice = "drop" if answer == DROP_RESTORED else "keep"
    return choice, reply["source"], len(tasks)


async def settle(teller: Agent, team: Supervisor, choice: str, source: str,
                 count: int | None = None) -> None:
    """Run, drop or keep the undecided restored tasks as ``choice`` says (Run: the first
    ``count``, those the person was shown; the rest stay undecided and the next prompt
    asks about them); recorded, and told to the person in a notice on the Teller's bus
    (the prompt's view shows it)."""
    tasks = list(team.restart.undecided)
    covered = tasks if choice != "run" or count is None else tasks[:count]
    left = len(tasks) - len(covered)
    if team.desk is not None:
        try:
            await asyncio.to_thread(
                team.desk.ledger.record_event, "restored_tasks_decided",
                agent_id=teller.agent_id, decision=choice, source=source,
                task_ids=[t.id for t in covered], prompts=[t.prompt[:200] for t in covered],
                **({"left_undecided": [t.id for t in tasks[len(covered):]]} if left else {}))
        except Exception as exc:  # the decision stands; the person hears the record failed
            teller.bus.emit(Notice("team", f"The ledger could not record the decision about "
                                   f"the earlier session's tasks: {exc}", level="error"))
    what = f"{len(tasks)} task{'s' if len(tasks) != 1 else ''} from an earlier session"
    by_policy = source.startswith("headless")
    if choice == "run":
        team.restart.run(len(covered))
        said = (f"{what}: running them; nobody could be asked and the headless policy "
                "(allow) runs them." if by_policy else f"{what}: running them, as you said.")
        if left:
            said = (f"{what}: running the first {len(covered)}, the ones you were shown, as "
                    f"you said. The other {left} stay saved and unrun; the team's next prompt "
                    "asks about them.")
    elif choice == "drop":
        team.restart.drop("dropped: it was waiting from an earlier session and you chose "
                          "Drop")
        said = f"{what}: dropped, as you said."
    elif by_policy:
        said = (f"{what} did not run: nobody could be asked and the headless policy (deny) "
                "does not run them. They stay saved: team.resume(\"run\") runs them, "
                "team.resume(\"drop\") drops them.")
    elif source == "user":
        said = (f"{what} did not run: they stay saved, as you said. team.resume(\"run\") "
                "runs them, team.resume(\"drop\") drops them.")
    else:
        said = (f"{what} did not run: nobody answered. They stay saved, and the team's next "
                "prompt asks again.")
    teller.bus.emit(Notice("team", said))
