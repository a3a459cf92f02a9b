"""The organiser's questions to the run's own model, each with a strict JSON contract.

Four steps of spec 003 need judgement, not rules: putting ``Name (ref_id)`` into a new
todo for the people it mentions (``reference_resolve``), finding the todo a ``complete``
means (``semantic_match``), dropping a todo that repeats another (``semantic_dedup``) and
writing a plan (``plan_create``). Each is one request through the same model door as the
run (:class:`~agent_kernel.engine.models.base.Model`), at temperature 0, with a system
prompt that opens with ``Contract: <name>`` and states the only JSON it accepts; the
answer is parsed strictly, and anything else is spec 003's ``invalid <name> response``
error, never a guess. What the model says is data: an index must exist, an id must be
one of the contacts' reachable ids (checked by the caller).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TypedDict

from agent_kernel.core.config import Settings
from agent_kernel.engine.models.base import ChatMessage, Model
from agent_kernel.engine.models.demo_organiser import (
    CONTRACT_LINE,
    PLAN_CREATE,
    REFERENCE_RESOLVE,
    SEMANTIC_DEDUP,
    SEMANTIC_MATCH,
)

JsonValue = object


class OrganiserError(ValueError):
    """A step failed with one of spec 003's error texts (the message starts with it)."""


class MissingReference(TypedDict):
    """A person the model could not tie to one reachable id."""

    mention: str


class MissingReferenceIds(OrganiserError):
    """``missing_reference_id``: some people could not be resolved (the tool then writes
    the todo as given, with the ``reference_unresolved_write_raw`` warning)."""

    def __init__(self, items: list[MissingReference]) -> None:
        first = items[0]["mention"] if items else ""
        super().__init__(f"missing_reference_id: mention={first!r}" if first
                         else "missing_reference_id")
        self.items = items


class SnapshotContact(TypedDict):
    """One active contact as the reference step sees it."""

    contact_id: str
    name: str
    aliases: list[str]
    reachable_ids: list[str]
    preferred_id: str


class IndexedItem(TypedDict):
    """A todo as the match and dedup steps see it."""

    index: int
    created_at: str
    content: str


def strict_json(text: str) -> JsonValue:
    """The one JSON value ``text`` holds (a ```json fence around it is tolerated); raises
    ValueError for anything else (empty, two values, trailing words)."""
    raw = text.strip()
    if raw.startswith("```"):
        raw = raw.removeprefix("```json").removeprefix("```").removesuffix("```").strip()
    if not raw:
        raise ValueError("empty response")
    return json.loads(raw)


@dataclass
class ModelDoor:
    """The run's model as the organiser asks it: the model, the run's settings, and who is
    told each answer's usage and cost (a team's budget), so these calls are counted too."""

    model: Model
    settings: Settings
    spent: Callable[[dict[str, int], float | None], None] | None = None


async def _ask(door: ModelDoor, contract: str, rules: Sequence[str],
               payload: dict[str, object], max_tokens: int) -> str:
    system = "\n".join([CONTRACT_LINE.format(name=contract), *rules])
    messages: list[ChatMessage] = [
        {"role": "system", "content": system},
        {"role": "user", "content": json.dumps(payload, ensure_ascii=False)}]
    settings = door.settings
    quiet = dataclasses.replace(
        settings, max_retries=min(settings.max_retries, 1), stream=False,
        extra_completion_args={**settings.extra_completion_args, "temperature": 0,
                               "max_tokens": max_tokens})
    turn = await door.model.complete(messages, [], quiet)
    if door.spent is not None:
        door.spent(dict(turn.usage), turn.cost)
    return turn.text or ""


def _object(text: str, contract: str) -> dict[str, object]:
    try:
        value = strict_json(text)
    except ValueError as exc:
        raise OrganiserError(f"invalid {contract} response: {exc}") from None
    if not isinstance(value, dict):
        raise OrganiserError(f"invalid {contract} response: expected a JSON object")
    return value


def _index(value: object, size: int, contract: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < size:
        raise OrganiserError(f"invalid {contract} response: index {value!r} is not one of "
                             f"the {size} items")
    return value


async def resolve_references(door: ModelDoor, content: str,
                             people: list[str], contacts: list[SnapshotContact],
                             allowed_ids: list[str], input_raw: str = "") -> tuple[str, list[str]]:
    """``content`` rewritten with ``Name (ref_id)`` for each of ``people``, and warnings.

    Raises :class:`MissingReferenceIds` when the model says a person cannot be tied to
    one id, and ``invalid reference_resolve response`` for anything off-contract."""
    now = datetime.now(timezone.utc)
    text = await _ask(door, REFERENCE_RESOLVE, [
        "You rewrite `input.content` by attaching explicit reference ids to the "
        "`input.people` it mentions.",
        "Return strict JSON only: {\"status\":\"ok\",\"rewritten_content\":\"...\"} or "
        "{\"status\":\"missing_reference_id\",\"missing\":[{\"mention\":\"...\"}]}.",
        "Attach ids as `Name (id)`, each id taken from `allowed_ids`; never invent one.",
        "Use `contacts` to resolve people; `$SPEAKER` is the person speaking, `$AGENT` "
        "is you.",
        "If a person cannot be tied to exactly one allowed id, answer "
        "missing_reference_id.",
        "Keep the original language and intent; change nothing but the references.",
    ], {"input": {"content": content, "people": people}, "input_raw": input_raw or content,
        "runtime": {"now_utc": now.strftime("%Y-%m-%d %H:%M")},
        "contacts": list(contacts), "allowed_ids": allowed_ids,
        "output_rules": ["strict_json_only"]}, 1200)
    out = _object(text, REFERENCE_RESOLVE)
    status = str(out.get("status") or "").strip().lower()
    if status == "missing_reference_id":
        raw = out.get("missing")
        items = [MissingReference(mention=str(m.get("mention") or "").strip())
                 for m in raw if isinstance(m, dict)] if isinstance(raw, list) else []
        raise MissingReferenceIds([m for m in items if m["mention"]])
    rewritten = out.get("rewritten_content")
    if status != "ok" or not isinstance(rewritten, str) or not rewritten.strip():
        raise OrganiserError(f"invalid {REFERENCE_RESOLVE} response: expected status ok "
                             "with a non-empty rewritten_content")
    warnings = out.get("warnings")
    said = [str(w).strip() for w in warnings if str(w).strip()] \
        if isinstance(warnings, list) else []
    return rewritten.strip(), said


async def match_complete(door: ModelDoor, query: str,
                         items: list[IndexedItem]) -> int:
    """The index of the one open todo ``query`` means; spec 003's ``no matching todo item
    in TODO.WIP.md`` or ``ambiguous todo item match`` when there is none or several."""
    text = await _ask(door, SEMANTIC_MATCH, [
        "You pick exactly one TODO.WIP entry to complete, by meaning.",
        "Return strict JSON only: {\"status\":\"matched\",\"index\":1} or "
        "{\"status\":\"no_match\"} or {\"status\":\"ambiguous\",\"candidate_indices\":[1,3]}.",
        "If no entry is a confident match, answer no_match; if several are plausible, "
        "answer ambiguous. Indices must be those of the input items.",
    ], {"query": query, "items": list(items)}, 500)
    out = _object(text, SEMANTIC_MATCH)
    status = str(out.get("status") or "").strip().lower()
    if status == "matched":
        return _index(out.get("index"), len(items), SEMANTIC_MATCH)
    if status == "no_match":
        raise OrganiserError("no matching todo item in TODO.WIP.md")
    if status == "ambiguous":
        candidates = out.get("candidate_indices")
        if isinstance(candidates, list):
            for value in candidates:
                _index(value, len(items), SEMANTIC_MATCH)
        raise OrganiserError("ambiguous todo item match")
    raise OrganiserError(f"invalid {SEMANTIC_MATCH} response: unknown status {status!r}")


async def dedup_keep(door: ModelDoor, items: list[IndexedItem]) -> list[int]:
    """The indices of the todos to keep (newest first in ``items``), sorted."""
    text = await _ask(door, SEMANTIC_DEDUP, [
        "You deduplicate newest-first todo entries (index 0 is the newest).",
        "Return strict JSON only: {\"keep_indices\":[0,2]}.",
        "When entries mean the same thing, keep one: the one with clearer detail and "
        "explicit reference ids. keep_indices holds unique indices of the input and is "
        "never empty.",
    ], {"items": list(items)}, 600)
    out = _object(text, SEMANTIC_DEDUP)
    keep = out.get("keep_indices")
    if not isinstance(keep, list) or not keep:
        raise OrganiserError(f"invalid {SEMANTIC_DEDUP} response: keep_indices must be a "
                             "non-empty list")
    return sorted({_index(v, len(items), SEMANTIC_DEDUP) for v in keep})


async def write_plan(door: ModelDoor, task: str, max_steps: int,
                     style: str, tools: list[str]) -> dict[str, object]:
    """The model's plan for ``task`` as parsed JSON (checked by :mod:`.plans`)."""
    text = await _ask(door, PLAN_CREATE, [
        "You write a concise execution plan.",
        "Return strict JSON only: {\"plan\":{\"thought\":\"...\",\"summary\":\"1-2 "
        "sentences\",\"steps\":[{\"step\":\"...\",\"status\":\"in_progress\"},"
        "{\"step\":\"...\",\"status\":\"pending\"}],\"risks\":[],\"questions\":[],"
        "\"completion\":\"definition of done\"}}.",
        "Steps are actionable, ordered and at most max_steps; name only available_tools.",
    ], {"task": task, "max_steps": max_steps, "style": style, "available_tools": tools},
        4096)
    return _object(text, PLAN_CREATE)
