"""The Teller's question an earlier session left: shown to the person, never their words.

``team/pending_question.json`` outlives its kernel, so a new ``Team`` may find a
question waiting. But a workspace may come from someone else (a cloned
repository, a shared drive): the file's ``prompt`` (the request the Teller was
working on) and its question are text nobody in this session said. So the file
grants nothing by itself. The team's next prompt puts it to the person through
the Teller's question channel, in words, the earlier request and the question
quoted as the earlier session's, with the prompt they just typed: **Answer with
my prompt** or **Drop it**. Only an answer the person chose (that card, or
``Team.answer`` from Python) wakes the Teller on the earlier request, and the
Teller reads it as quoted data from the workspace, exactly as the person saw it.
With nobody to ask, the headless policy decides (``allow`` answers with the
prompt, ``deny`` drops it); no answer in time drops it. A dropped question is a
``question_dropped`` ledger record and the prompt goes to the Teller as a new
request; an expired one ends by spec 000's timeout table (recorded) and the
Teller does not go on with the earlier request either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from agent_kernel.core.events import Notice
from agent_kernel.core.ledger import new_id
from agent_kernel.core.unseen import with_tokens
from agent_kernel.team.society import json_line

if TYPE_CHECKING:
    from agent_kernel.core.config import Settings
    from agent_kernel.engine.agent import Agent
    from agent_kernel.team.asking import PendingQuestion

ANSWER_EARLIER, DROP_EARLIER = "Answer with my prompt", "Drop it"
EARLIER_TIMEOUT = 600.0
"""Seconds the person has to decide; then the question is dropped."""
SHOWN_CHARS = 400
"""The most of the earlier request or question the person is shown (and the Teller
reads: exactly what the person saw)."""
OPTIONS_SHOWN = 10
"""The earlier question's options named one by one; the rest are counted."""
Choice = Literal["answer", "drop"]


def shown(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` as the person reads it between “ and ”: on one line, every character that
    draws nothing or reorders text written as ``<U+202E>``, what looks like a secret masked
    as every view masks it (so the Teller reads what the person saw, never a command the
    mask hid), no quote marks of its own that could close the quote early, at most
    ``limit`` characters."""
    from agent_kernel.core.redaction import redact_text

    flat = " ".join(with_tokens(redact_text(str(text))).split())
    for mark in "“”„‟«»":
        flat = flat.replace(mark, '"')
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def _options(pending: PendingQuestion) -> list[str]:
    """The earlier question's options as shown (and as the Teller reads them)."""
    options = pending.options or []
    named = [shown(o, 80) for o in options[:OPTIONS_SHOWN]]
    return named + ([f"and {len(options) - OPTIONS_SHOWN} more"]
                    if len(options) > OPTIONS_SHOWN else [])


def _request(pending: PendingQuestion, limit: int = SHOWN_CHARS) -> str:
    return f"“{shown(pending.prompt, limit)}”" if pending.prompt.strip() else "(not saved)"


def card(pending: PendingQuestion, prompt: str) -> str:
    """The question to the person: the earlier request and question, quoted as the earlier
    session's, and the prompt that would answer it."""
    options = _options(pending)
    quoted = [f"“{o}”" for o in options[:OPTIONS_SHOWN]] + options[OPTIONS_SHOWN:]
    listed = f" (its options: {', '.join(quoted)})" if options else ""
    return "\n".join([
        "A question from an earlier session is waiting in this workspace. Nobody in this "
        "session asked it: it was saved in the workspace's files.",
        f"- The earlier session's request: {_request(pending)}",
        f"- The Teller's question then: “{shown(pending.question)}”{listed}",
        f"- Your prompt now: “{shown(prompt)}”",
        "Answer the earlier question with your prompt (the Teller then goes on with that "
        "earlier request), or drop it (your prompt is a new request)? If nobody answers, it "
        "is dropped."])


async def ask(teller: Agent, pending: PendingQuestion, prompt: str,
              settings: Settings) -> tuple[Choice, str]:
    """Ask the person whether ``prompt`` answers the earlier question: ``(choice, source)``,
    the source being ``user``, ``timeout`` or ``headless policy: allow|deny``."""
    channel = teller.questions
    if not channel.interactive:
        policy = settings.headless_approval
        return ("answer" if policy == "allow" else "drop"), f"headless policy: {policy}"
    reply = await channel.ask(run_id=new_id("run"), question=card(pending, prompt),
                              options=[ANSWER_EARLIER, DROP_EARLIER],
                              timeout=EARLIER_TIMEOUT, default=None)
    return ("answer" if reply["answer"] == ANSWER_EARLIER else "drop"), reply["source"]


def teller_message(pending: PendingQuestion, prompt: str, source: str) -> str:
    """What the Teller reads when the person's prompt answers the earlier question: the
    earlier request and question as one quoted line of JSON (as the person saw them),
    then the answer."""
    how = ("Nobody could be asked; the headless policy (allow) takes the person's prompt as "
           "its answer." if source.startswith("headless") else
           "The person was shown it and chose to answer it with their prompt.")
    saved = json_line({"earlierRequest": shown(pending.prompt) if pending.prompt.strip()
                       else None, "question": shown(pending.question),
                       "options": _options(pending) or None})
    return "\n".join([
        "The kernel restarted since a question was asked. The earlier session saved, in the "
        "workspace, the request it was working on and its question; here they are as one "
        "line of JSON, the file's words, not the person's:", saved, how,
        f"The person answered: {prompt}", "Go on from there."])


def told(pending: PendingQuestion, choice: Choice, source: str,
         expired: dict[str, str] | None = None) -> str:
    """The notice the person reads about the earlier question once it is decided."""
    what = f"The earlier session's question “{shown(pending.question, 200)}”"
    if expired is not None:
        ended = (f"with its default answer “{shown(expired['answer'], 80)}”"
                 if expired["source"] == "default" else "with no answer")
        return (f"{what} had expired: it ended {ended}. The Teller does not go on with that "
                "session's request; your prompt is a new request.")
    if choice == "answer":
        by = (" by the headless policy (allow), as nobody could be asked"
              if source.startswith("headless") else "")
        return (f"{what} is answered with your prompt{by}; the Teller goes on with that "
                f"session's request {_request(pending, 200)}.")
    why = {"user": "as you said",
           "timeout": "nobody answered"}.get(source, "nobody could be asked and the headless "
                                                     "policy (deny) does not answer it")
    return f"{what} is dropped ({why}); your prompt is a new request."


def notify(teller: Agent, text: str) -> None:
    """Tell the person on the Teller's bus (the prompt's view shows it)."""
    teller.bus.emit(Notice("team", text))
