"""``find_tools``: the model brings a group of tools into its run when it needs them.

A request offers a core of tools (:mod:`agent_kernel.tools.groups` says which and why);
the rest cost no tokens until a run asks for them by a group's name, a tool's name or a
few words. What is found stays offered for the rest of that run only: the next run starts
from the core again, plus the groups of the tools its conversation already called (the
registry's :meth:`~agent_kernel.engine.registry.ToolRegistry.offered`). It finds only
tools the agent's role may use, and it never asks the person: it changes what a request
describes, not what may run (engine/ask_policy.py). ``find_tools`` is ours, not a spec's.
"""

from __future__ import annotations

import re
from typing import Annotated

from agent_kernel.engine.registry import Field, Tool, ToolContext, ToolHost
from agent_kernel.tools.groups import FINDER, GROUPS, OFFERING

_STOP = frozenset({"the", "and", "for", "with", "tool", "tools", "that", "this", "some",
                   "need", "want", "can", "use", "from", "into", "about", "how", "what"})


def _stems(text: str) -> set[str]:
    return {word[:5] for word in re.findall(r"[a-z0-9]+", text.lower())
            if len(word) >= 3 and word not in _STOP}


def _one_line(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return re.split(r"(?<=[.;:])\s", first, maxsplit=1)[0].rstrip(".;:")


def matching_groups(query: str, groups: dict[str, tuple[str, list[str]]]) -> list[str]:
    """The groups ``query`` asks for: those it names (a group or one of its tools), else
    those whose words it shares most (``send an email`` -> organiser)."""
    words = set(re.findall(r"[a-z_]+", query.lower()))
    named = [group for group, (_, names) in groups.items()
             if group in words or group.rstrip("s") in words or words & set(names)]
    if named:
        return named
    known = {name for _, names in GROUPS.values() for name in names}
    asked = _stems(" ".join(word for word in words if word not in known))  # not by halves
    scores = {group: len(asked & _stems(" ".join([about, *names])))
              for group, (about, names) in groups.items()}
    best = max(scores.values(), default=0)
    return [group for group, score in scores.items() if best and score == best]


def find(host: ToolHost, run_id: str, query: str) -> str:
    """Bring the groups ``query`` asks for into run ``run_id``; the answer in words."""
    registry = host.registry
    mine = {t.name: t for t in registry if registry.allowed(host.role, t)}
    groups = {group: (about, [n for n in names if n in mine and n != FINDER])
              for group, (about, names) in GROUPS.items()}
    groups = {group: held for group, held in groups.items() if held[1]}
    chosen = matching_groups(query, groups)
    if not chosen:
        listed = "; ".join(f"{group} ({about})" for group, (about, _) in groups.items())
        return (f"No tool you may use matches {query!r}. Ask for one of these groups by "
                f"name: {listed}.")
    names = [name for group in chosen for name in groups[group][1]]
    registry.bring_in(run_id, names)
    lines = [f"- {name}: {_one_line(mine[name].description)}" for name in names]
    return (f"Offered from now on in this run ({', '.join(chosen)}); call them as usual:\n"
            + "\n".join(lines))


async def find_tools(
    query: Annotated[str, Field(max_length=200)], ctx: ToolContext
) -> str:
    """You are offered a core of tools; this brings more into the run. Groups: notebook,
    files, commands (shell, JavaScript), web (fetch, HTTP), memory, schedule (reminders,
    cron), organiser (todos, contacts, plans), context, team, basics.

    Args:
        query: A group, a tool name, or a few words.
    """
    return find(ctx.agent, ctx.run_id, query)


def attach(agent: ToolHost) -> None:
    """Offer this agent's requests a core of tools, the rest through ``find_tools``."""
    agent.registry.offering = OFFERING


TOOLS = [Tool(find_tools, source="builtin")]
