"""The demo model's answers to the organiser's JSON requests (spec 003's LLM-assisted steps).

``todo_update`` and ``plan_create`` ask the run's own model for strict JSON: a
reference rewrite, a semantic match, a dedup, a plan. Each request's system prompt opens
with ``Contract: <name>`` (:data:`CONTRACT_LINE`), and its user message is one JSON object.
The demo recognises the contract and answers with fixed, explainable rules (word overlap,
exact names), so a notebook works offline and gives the same answer every time. The
contract names live here, below the organiser, so both sides spell them once.
"""

from __future__ import annotations

import json
import re
from typing import TypedDict, cast

from agent_kernel.engine.models.base import ChatMessage, turn_calls

REFERENCE_RESOLVE = "reference_resolve"
SEMANTIC_MATCH = "semantic_match"
SEMANTIC_DEDUP = "semantic_dedup"
PLAN_CREATE = "plan_create"
CONTRACTS = (REFERENCE_RESOLVE, SEMANTIC_MATCH, SEMANTIC_DEDUP, PLAN_CREATE)
CONTRACT_LINE = "Contract: {name}"
"""The first line of each organiser request's system prompt."""

class _Item(TypedDict, total=False):
    index: int
    created_at: str
    content: str


class _Contact(TypedDict, total=False):
    contact_id: str
    name: str
    aliases: list[str]
    preferred_id: str


class _Input(TypedDict, total=False):
    content: str
    people: list[str]


class Request(TypedDict, total=False):
    """The user message of any organiser request (each contract uses its own keys)."""

    input: _Input
    contacts: list[_Contact]
    allowed_ids: list[str]
    query: str
    items: list[_Item]
    task: str
    max_steps: int
    style: str


_WORD = r"\w+"
"""Patterns here are text, compiled on first use (``re``'s cache): importing stays cheap."""
_SPECIAL_PEOPLE = {"$speaker", "$agent"}
_STOP = {"the", "a", "an", "to", "of", "and", "or", "for", "with", "on", "in", "at", "is",
         "my", "me", "i", "it", "be", "this", "that", "todo", "task", "done"}


def contract_of(messages: list[ChatMessage]) -> str | None:
    """The organiser contract a request follows (``semantic_match`` ...), or None."""
    if not messages or messages[0].get("role") != "system":
        return None
    first = str(messages[0].get("content") or "").split("\n", 1)[0].strip()
    name = first.removeprefix("Contract: ")
    return name if first.startswith("Contract: ") and name in CONTRACTS else None


def _words(text: str) -> set[str]:
    found: set[str] = set()
    for word in re.findall(_WORD, text.lower()):
        if any("\u4e00" <= ch <= "\u9fff" for ch in word):
            found.update(ch for ch in word if "\u4e00" <= ch <= "\u9fff")
        elif len(word) > 1 and word not in _STOP:
            found.add(word)
    return found


def _resolve(data: Request) -> object:
    given = data.get("input") or _Input()
    content = str(given.get("content") or "")
    allowed = {str(i) for i in data.get("allowed_ids") or []}
    contacts = [c for c in data.get("contacts") or [] if isinstance(c, dict)]
    missing: list[dict[str, str]] = []
    for person in given.get("people") or []:
        name = str(person).strip()
        if not name or name.lower() in _SPECIAL_PEOPLE:
            continue
        if name in allowed:
            continue
        key = name.lstrip("@").lower()
        hits = [c for c in contacts
                if key in {str(v).lstrip("@").lower()
                           for v in [c.get("name"), c.get("contact_id"),
                                     *(c.get("aliases") or [])] if v}]
        ids = {str(c.get("preferred_id") or "") for c in hits} - {""}
        if len(ids) != 1:
            missing.append({"mention": name})
            continue
        ref = ids.pop()
        pattern = re.compile(rf"(?<![\w@]){re.escape(name)}(?!\w)(?!\s*\()", re.IGNORECASE)
        found = pattern.search(content)
        if found is None:
            missing.append({"mention": name})
            continue
        content = f"{content[:found.end()]} ({ref}){content[found.end():]}"
    if missing:
        return {"status": "missing_reference_id", "missing": missing}
    return {"status": "ok", "rewritten_content": content}


def _match(data: Request) -> object:
    query = str(data.get("query") or "")
    wanted = _words(query)
    scores: list[tuple[float, int]] = []
    for item in data.get("items") or []:
        content = str(item.get("content") or "")
        if query.strip().lower() and query.strip().lower() in content.lower():
            score = 1.0
        else:
            score = len(wanted & _words(content)) / len(wanted) if wanted else 0.0
        scores.append((score, int(item.get("index", len(scores)))))
    best = max((s for s, _ in scores), default=0.0)
    if best < 0.5:
        return {"status": "no_match"}
    top = [i for s, i in scores if s == best]
    if len(top) > 1:
        return {"status": "ambiguous", "candidate_indices": top}
    return {"status": "matched", "index": top[0]}


def _dedup(data: Request) -> object:
    seen: set[str] = set()
    keep: list[int] = []
    for item in data.get("items") or []:
        key = " ".join(re.findall(_WORD, str(item.get("content") or "").lower()))
        if key not in seen:
            seen.add(key)
            keep.append(int(item.get("index", len(keep))))
    return {"keep_indices": keep}


_SPLIT = r"(?i)\s*(?:;|\.\s|, then |\bthen\b|\band then\b|\n|；|。|然后)\s*"


def _plan(data: Request) -> object:
    task = str(data.get("task") or "").strip()
    limit = max(1, int(data.get("max_steps") or 6))
    parts = [p.strip(" ,.") for p in re.split(_SPLIT, task) if p and p.strip(" ,.")]
    if len(parts) < 2:
        parts = [f"Find out what is needed for: {task}", f"Do it: {task}",
                 "Check the result and report it"]
    steps = [{"step": p[:1].upper() + p[1:], "status": "in_progress" if i == 0 else "pending"}
             for i, p in enumerate(parts[:limit])]
    terse = str(data.get("style") or "").strip().lower() == "terse"
    return {"plan": {
        "thought": "" if terse else "Split the task into the parts it names, in order.",
        "summary": f"{len(steps)} step{'s' if len(steps) != 1 else ''} for: {task}"[:300],
        "steps": steps, "risks": [], "questions": [],
        "completion": "Every step is done and the result is reported."}}


def answer(messages: list[ChatMessage]) -> str | None:
    """The demo's JSON answer to an organiser request, or None when it is not one."""
    name = contract_of(messages)
    if name is None:
        return None
    try:
        data = json.loads(str(messages[-1].get("content") or "{}"))
    except json.JSONDecodeError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    request = cast(Request, data)
    rules = {REFERENCE_RESOLVE: _resolve, SEMANTIC_MATCH: _match, SEMANTIC_DEDUP: _dedup,
             PLAN_CREATE: _plan}
    try:
        said = rules[name](request)
    except (TypeError, ValueError, AttributeError):  # a request off its contract
        said = {"error": "the request does not follow its contract"}
    return json.dumps(said, ensure_ascii=False)


_REF_ID = r"\b(?:tg:@?-?\w+|maep:[\w.-]+|slack:[\w.:-]+|discord:[\w.:-]+|email:\S+@\S+)"
_NAME = r"(?<![\w@])([A-Z][a-z]+)\b"
_NOT_NAMES = {"I", "Remind", "Add", "Todo", "Please", "Plan", "The", "A", "An", "Call", "Send",
              "Ask", "Email", "Tell", "Write", "Buy", "Book", "Pay", "Check", "Water", "Fix"}


def _people(content: str) -> list[str]:
    """Who a todo mentions, as the tool wants them: capitalised names, and ``$SPEAKER``
    for "I" / "me" / "my"."""
    names = [n for n in re.findall(_NAME, content) if n not in _NOT_NAMES]
    if re.search(r"\b(?:I|me|my|myself)\b", content):
        names.insert(0, "$SPEAKER")
    return list(dict.fromkeys(names))


def plan_call(text: str, tools: set[str]) -> tuple[str, dict[str, object]] | None:
    """The organiser tool a prompt asks for (``add a todo: ...``, ``done: ...``, ``show my
    todos``, ``plan: ...``, ``add contact Alice tg:@alice``, ``list contacts``, ``whom
    should I share with``), or None."""
    low = text.lower().strip()
    if "todo_update" in tools:
        m = re.match(r"^(?:add (?:a |to my )?todo(?: list)?|todo)\s*:?\s+(.+)$",
                     text, re.I | re.S)
        if m:
            content = m.group(1).strip().rstrip(".")
            return "todo_update", {"action": "add", "content": content,
                                   "people": _people(content)}
        m = re.match(r"^(?:done|tick off|mark done|complete the todo)\s*:?\s+(.+)$", text,
                     re.I | re.S)
        if m:
            return "todo_update", {"action": "complete", "content": m.group(1).strip()}
    if "todo_list" in tools and re.match(
            r"^(?:show|list|what(?:'s| is) on)\s+(?:me\s+)?(?:my\s+)?todos?(?: list)?\b", low):
        scope = "both" if re.search(r"\b(?:done|finished|all)\b", low) else "wip"
        return "todo_list", {"scope": scope}
    if "plan_create" in tools:
        m = re.match(r"^(?:plan|make a plan(?: for| to)?)\s*:\s*(.+)$", text, re.I | re.S)
        if m:
            return "plan_create", {"task": m.group(1).strip()}
    if "contacts_upsert" in tools:
        m = re.match(r"^(?:add|save) (?:a )?contact\s*:?\s+(.+)$", text, re.I | re.S)
        if m:
            rest = m.group(1)
            ids = re.findall(_REF_ID, rest)
            name = " ".join(re.sub(_REF_ID, "", rest).split()).strip(" ,.")
            if ids:
                call: dict[str, object] = {"contact_id": ids[0], "contact_nickname": name}
                if len(ids) > 1:
                    call["addresses"] = ids[1:]
                return "contacts_upsert", call
    if "contacts_list" in tools and re.match(r"^(?:list|show) (?:my )?contacts\b", low):
        return "contacts_list", {}
    if "contacts_candidate_rank" in tools and re.search(
            r"\b(?:who|whom) should i share\b|\brank (?:my )?contacts\b", low):
        return "contacts_candidate_rank", {}
    return None


def _items(found: object) -> list[str]:
    texts = [str(i.get("content", "")) for i in found if isinstance(i, dict)] \
        if isinstance(found, list) else []
    return [f"- {t}" for t in texts[:10]]


def _todo_words(_args: dict[str, object], result: object) -> str | None:
    if not isinstance(result, dict) or not isinstance(result.get("entry"), dict):
        return None
    content = result["entry"].get("content")
    counts = result.get("updated_counts") or {}
    left = counts.get("open_count", 0) if isinstance(counts, dict) else 0
    if result.get("action") == "complete":
        return f"Ticked off “{content}”. {left} still open."
    raw = " I could not tie everyone it mentions to a contact, so I wrote it as you said " \
          "it." if result.get("warnings") else ""
    return f"Added “{content}” to your todo list ({left} open).{raw}"


def _todo_list_words(_args: dict[str, object], result: object) -> str | None:
    if not isinstance(result, dict):
        return None
    lines = [f"{result.get('open_count', 0)} open, {result.get('done_count', 0)} done."]
    if result.get("wip_items"):
        lines += ["", "Open:", *_items(result.get("wip_items"))]
    if result.get("done_items"):  # a blank line first: Markdown would run it into the list
        lines += ["", "Done:", *_items(result.get("done_items"))]
    return "\n".join(lines)


def _plan_words(_args: dict[str, object], result: object) -> str | None:
    plan = result.get("plan") if isinstance(result, dict) else None
    if not isinstance(plan, dict) or not isinstance(plan.get("steps"), list):
        return None
    steps = [f"{n}. {s.get('step')}" for n, s in enumerate(plan["steps"], 1)
             if isinstance(s, dict)]
    return "\n".join([f"Here is the plan: {plan.get('summary', '')}".strip(), *steps])


def _contact_words(_args: dict[str, object], result: object) -> str | None:
    if not isinstance(result, dict):
        return None
    return f"Saved {result.get('contact_nickname') or result.get('contact_id')} in your " \
           "contacts."


def _contacts_words(_args: dict[str, object], result: object) -> str | None:
    if not isinstance(result, list):
        return None
    names = [str(c.get("contact_nickname") or c.get("contact_id")) for c in result
             if isinstance(c, dict)]
    return f"You have {len(names)} contact{'s' if len(names) != 1 else ''}" + \
        (f": {', '.join(names)}." if names else ".")


def _rank_words(_args: dict[str, object], result: object) -> str | None:
    if not isinstance(result, dict) or not isinstance(result.get("decisions"), list):
        return None
    picks = [f"- {d.get('contact_nickname') or d.get('contact_id')}: “{d.get('item_preview')}”"
             for d in result["decisions"] if isinstance(d, dict)]
    if not picks:
        return "Nobody to share anything with right now. Nothing was sent."
    return "\n".join(["These could be worth sharing (nothing was sent):", *picks])


WORDS = {"todo_update": _todo_words, "todo_list": _todo_list_words, "plan_create": _plan_words,
         "contacts_upsert": _contact_words, "contacts_list": _contacts_words,
         "contacts_candidate_rank": _rank_words}
"""What the demo says about each organiser tool's result (merged into demo_answers')."""


_SEND = (r"^(?:please\s+)?(?:send|e-?mail|message)\s+(?:to\s+)?([A-Z][\w'-]*)"
         r"(?:\s+(?:a|an)\s+(?:message|note|mail|e-?mail))?\s*:\s*(.+)$")


def _uuid7(now_ms: int, rand: int) -> str:
    """A UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, the version, random bits."""
    value = (now_ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | (rand >> 62 & 0xFFF) << 64 \
        | 0b10 << 62 | rand & ((1 << 62) - 1)
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def _seen(turn: list[ChatMessage]) -> dict[str, tuple[dict[str, object], str]]:
    """This turn's calls by tool name (the latest of each): the arguments and what came
    back (text)."""
    return {name: (args, result) for name, args, result in turn_calls(turn)}


def message_story(prompt: str, turn: list[ChatMessage],
                  tools: set[str]) -> tuple[str, list[tuple[str, dict[str, object]]]] | None:
    """``send Ana a message: ...``: look the name up in the contacts, then ``contacts_send``
    to the one contact of that name (which asks the person), then say what happened.
    Returns (answer text, tool calls), or None when the prompt is not a message."""
    m = re.match(_SEND, prompt.strip(), re.S)
    if not m or not {"contacts_list", "contacts_send"} <= tools:
        return None
    name, text = m.group(1), m.group(2).strip()
    seen = _seen(turn)
    if "contacts_send" in seen:
        _args, said = seen["contacts_send"]
        try:
            sent = json.loads(said)
        except ValueError:
            sent = None
        outcome = sent.get("outcome") if isinstance(sent, dict) else None
        if isinstance(outcome, dict) and outcome.get("accepted"):
            how = "by e-mail" if sent.get("channel") == "email" else "on Telegram"
            return f"I sent your message to {name} {how}.", []
        why = re.sub(r"^Tool '[^']*' (?:was not run|execution failed|failed): ", "",
                     said.removeprefix("Error: ").split("\n\n", 1)[0].strip())
        if isinstance(outcome, dict) and outcome.get("error"):
            why = str(outcome["error"])
        return f"The message to {name} was not sent: {why.rstrip('.')}.", []
    if "contacts_list" not in seen:
        return "", [("contacts_list", {"status": "active"})]
    try:
        listed = json.loads(seen["contacts_list"][1])
    except ValueError:
        listed = []
    hits = [c for c in listed if isinstance(c, dict)
            and str(c.get("contact_nickname") or "").strip().lower() == name.lower()] \
        if isinstance(listed, list) else []
    if len(hits) != 1:
        found = "no contact" if not hits else f"{len(hits)} contacts"
        return f"I found {found} called {name}, so I sent nothing.", []
    import secrets
    import time

    return "", [("contacts_send", {"contact_id": str(hits[0].get("contact_id")),
                                   "message_text": text,
                                   "session_id": _uuid7(time.time_ns() // 1_000_000,
                                                        secrets.randbits(74))})]
