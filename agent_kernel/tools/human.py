"""``ask_user``: the one tool whose result comes from a person.

Spec 000 defines it: ``question``, optional ``options`` (rendered as buttons),
``timeout`` in seconds (default 3600) and ``default``; it returns
``{answer, source}`` with ``source`` ``"user"``, ``"default"`` or
``"timeout"``. Its timeout table: with a ``default``, an unanswered question
ends with that default (``source: "default"``); without one, it ends with
``answer: ""`` and ``source: "timeout"``. Where nobody can answer (nbclient,
papermill, a CLI with no terminal) the same rules apply at once instead of
after the timeout. The waiting itself lives in
:class:`~agent_kernel.engine.questions.QuestionChannel`; this module only validates
and asks; who can answer is decided by the views that attach to the channel
(the magics probe the frontend) and by :mod:`agent_kernel.notebook.blocking`. In a team
the Teller's question follows spec 000 instead: its run ends and the team
asks (:mod:`agent_kernel.team.asking`).
"""

from __future__ import annotations

from typing import Annotated

from agent_kernel.engine.registry import Field, Tool, ToolContext

MAX_TIMEOUT = 7 * 24 * 3600.0
MAX_OPTIONS = 20


async def ask_user(
    question: Annotated[str, Field(min_length=1, max_length=4000)],
    ctx: ToolContext,
    timeout: Annotated[float, Field(gt=0, le=MAX_TIMEOUT)] = 3600.0,
    default: str | None = None,
    options: Annotated[list[str] | None, Field(max_length=MAX_OPTIONS)] = None,
) -> dict[str, str]:
    """Ask the user a question and wait for the answer.

    Args:
        question: The question to ask.
        timeout: Seconds to wait for an answer (default 3600, one hour).
        default: Answer used when the question times out; without it a timeout
            returns an empty answer with source "timeout".
        options: Choices that limit the reply, shown to the user as buttons.
    """
    if not question.strip():
        raise ValueError("question must not be blank")
    if options is not None:
        cleaned = [str(option).strip() for option in options]
        if any(not option for option in cleaned):
            raise ValueError("options must be non-empty strings")
        if len(set(cleaned)) != len(cleaned):
            raise ValueError(f"options must be distinct, got {options!r}")
        options = cleaned or None
    team = ctx.agent.services.team
    if team is not None and ctx.agent.role == "teller":
        # Spec 000: the Teller's run ends here; the team asks and wakes it with the answer.
        asked: dict[str, str] = team.hold_question(ctx, question, options=options,
                                                   timeout=timeout, default=default)
        return asked
    return await ctx.ask(question, options=options, timeout=timeout, default=default)


# The question's own timeout ends the wait: the call's clock (the loop's general tool
# timeout) stands still while a person is asked (agent_kernel.engine.tool_clock).
TOOLS = [Tool(ask_user, source="builtin")]
