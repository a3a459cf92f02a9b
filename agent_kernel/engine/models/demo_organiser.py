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

from agent_kernel.engine.models.base import ChatMessage

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


_WORD = re.compile(r"[\w]+", re.UNICODE)
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
    for word in _WORD.findall(text.lower()):
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
        key = " ".join(_WORD.findall(str(item.get("content") or "").lower()))
        if key not in seen:
            seen.add(key)
            keep.append(int(item.get("index", len(keep))))
    return {"keep_indices": keep}


_SPLIT = re.compile(r"\s*(?:;|\.\s|, then |\bthen\b|\band then\b|\n|；|。|然后)\s*", re.IGNORECASE)


def _plan(data: Request) -> object:
    task = str(data.get("task") or "").strip()
    limit = max(1, int(data.get("max_steps") or 6))
    parts = [p.strip(" ,.") for p in _SPLIT.split(task) if p and p.strip(" ,.")]
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
