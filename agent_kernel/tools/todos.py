"""Spec 003's todo tools: ``todo_update`` (``add`` | ``complete``) and ``todo_list``.

The files are ``TODO.WIP.md`` / ``TODO.DONE.md`` in the state folder
(:mod:`agent_kernel.organiser.todos` keeps their format). Arguments, result fields and
every error text are spec 003's; the errors are raised, so the model reads
``Tool 'todo_update' execution failed: <spec text>``. ``action`` and ``content`` are
required in the schema the model sees, as in the spec, but are checked here rather than
by the schema validator, so a missing one gets the spec's ``action is required``.

``add`` is spec 003's "arguments + model insertion" flow: the model of the run (the same
door as the run's own turns, :meth:`ToolContext.run_model`) rewrites the text with
``Name (ref_id)`` for the ``people`` it mentions, choosing only among the active
contacts' reachable ids; each id is then checked again here. A person it cannot tie to
one id, or an "I"/"me" left without an id, makes the todo be written as given with the
warning ``reference_unresolved_write_raw``. The new item goes first, and the model drops
repeats (``semantic_dedup``). ``complete`` finds the item by meaning only
(``semantic_match``): no match or several is an error, never a guess.

Writes stay in the agent's state folder and ask no one (engine/ask_policy.py says why).
``LIMITS.enabled = False`` turns both tools off (spec 003's ``tools.todo.enabled``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from agent_kernel.core.redaction import redact_text
from agent_kernel.engine.models.base import Model
from agent_kernel.engine.registry import Field, Tool, ToolContext, ToolError
from agent_kernel.organiser import asking
from agent_kernel.organiser.asking import IndexedItem, OrganiserError, SnapshotContact
from agent_kernel.organiser.contacts import ContactStore
from agent_kernel.organiser.todos import (
    MAX_CONTENT,
    Entry,
    EntryJson,
    Snapshot,
    TodoFiles,
    now_text,
    reference_ids,
    unannotated_self_mention,
)

STATE_ALIAS = "file_state_dir"
UNRESOLVED = "reference_unresolved_write_raw"


@dataclass
class TodoLimits:
    """Spec 003's ``tools.todo.*`` settings; change ``LIMITS`` for a session."""

    enabled: bool = True
    """``todo_update tool is disabled`` / ``todo_list tool is disabled`` when false."""
    wip_file: str = "TODO.WIP.md"
    """The open items, in the state folder; empty: ``todo paths are not configured``."""
    done_file: str = "TODO.DONE.md"


LIMITS = TodoLimits()


class Counts(TypedDict):
    """How many items each file holds after the change."""

    open_count: int
    done_count: int


class Changed(TypedDict):
    """What the change did."""

    wip_added: int
    wip_removed: int
    done_added: int


class UpdateResult(TypedDict, total=False):
    """``todo_update``'s result (spec 003's ``UpdateResult``)."""

    ok: bool
    action: str
    updated_counts: Counts
    changed: Changed
    entry: EntryJson
    warnings: list[str]


class ListResult(TypedDict, total=False):
    """``todo_list``'s result (spec 003's ``ListResult``)."""

    scope: str
    open_count: int
    done_count: int
    wip_items: list[EntryJson]
    done_items: list[EntryJson]
    wip_path: str
    done_path: str
    generated_at: str


def _files(ctx: ToolContext) -> TodoFiles:
    wip, done = LIMITS.wip_file.strip(), LIMITS.done_file.strip()
    if not wip or not done:
        raise ValueError("todo paths are not configured")
    return TodoFiles(ctx.workspace, wip, done)


def _people(value: object) -> list[str]:
    if value is None:
        raise ValueError("people is required for add action")
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise ValueError("people must be an array of strings")
    out: list[str] = []
    for raw in value:
        name = raw.strip().removeprefix("@").strip()
        if name and name.lower() not in (p.lower() for p in out):
            out.append(name)
    return out


def _snapshot(ctx: ToolContext) -> tuple[list[SnapshotContact], list[str]]:
    store = ContactStore(ctx.workspace)
    contacts: list[SnapshotContact] = []
    every: set[str] = set()
    for contact in store.list("active"):
        reachable = store.reachable_ids(contact)
        if not reachable:
            continue
        every.update(reachable)
        alias = contact.contact_id.removeprefix("tg:@") \
            if contact.contact_id.startswith("tg:@") else ""
        name = contact.contact_nickname or alias or contact.contact_id
        preferred = contact.contact_id if contact.contact_id in reachable else reachable[0]
        contacts.append({"contact_id": contact.contact_id, "name": name,
                         "aliases": sorted({a for a in (contact.contact_nickname, alias) if a}),
                         "reachable_ids": reachable, "preferred_id": preferred})
    contacts.sort(key=lambda c: (c["name"], c["contact_id"]))
    return contacts, sorted(every)


def _prompt_of(ctx: ToolContext) -> str:
    """The person's words that started the run (the model resolves "me" against them)."""
    window = ctx.agent.windows.get(ctx.run_id)
    for message in window.messages if window is not None else []:
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return str(message.get("content"))[:4000]
    return ""


def door_for(ctx: ToolContext, model: Model) -> asking.ModelDoor:
    """The run's model with the run's settings; a team's budget is told what each answer
    cost, as it is told of the run's own turns."""
    budget = ctx.agent.services.budget

    def spent(usage: dict[str, int], cost: float | None) -> None:
        if budget is not None:
            budget.spent(ctx.agent, ctx.run_id, usage, cost)  # type: ignore[arg-type]

    return asking.ModelDoor(model, ctx.agent.settings, spent)


def _indexed(entries: list[Entry]) -> list[IndexedItem]:
    return [{"index": i, "created_at": e.created_at, "content": e.content}
            for i, e in enumerate(entries)]


async def _add(ctx: ToolContext, model: Model, files: TodoFiles, content: str,
               people: list[str]) -> UpdateResult:
    reference_ids(content)
    contacts, allowed = _snapshot(ctx)
    warnings: list[str] = []
    try:
        rewritten, said = await asking.resolve_references(
            door_for(ctx, model), content, people, contacts, allowed, _prompt_of(ctx))
        warnings += said
        if unannotated_self_mention(rewritten):
            raise asking.MissingReferenceIds([{"mention": unannotated_self_mention(rewritten)}])
        for ref in reference_ids(rewritten):
            if ref not in allowed:
                raise ValueError(f"reference id is not reachable: {ref}")
    except asking.MissingReferenceIds:
        rewritten = content
        warnings.append(UNRESOLVED)
    entry = Entry(content=redact_text(rewritten)[:MAX_CONTENT], created_at=now_text())
    before = files.read()
    entries = [entry, *before.wip.entries]
    if len(entries) > 1:
        keep = await asking.dedup_keep(door_for(ctx, model), _indexed(entries))
        entries = [entries[i] for i in keep]
    before.wip.entries, wip, done = entries, before.wip, before.done
    files.write(before, wip, done)
    result: UpdateResult = {
        "ok": True, "action": "add",
        "updated_counts": {"open_count": len(wip.entries), "done_count": len(done.entries)},
        "changed": {"wip_added": 1 if entry in wip.entries else 0, "wip_removed": 0,
                    "done_added": 0},
        "entry": entry.to_json()}
    if warnings:
        result["warnings"] = list(dict.fromkeys(warnings))
    return result


async def _complete(ctx: ToolContext, model: Model, files: TodoFiles,
                    query: str) -> UpdateResult:
    before: Snapshot = files.read()
    wip, done = before.wip, before.done
    if not wip.entries:
        raise ValueError("no matching todo item in TODO.WIP.md")
    index = await asking.match_complete(door_for(ctx, model), query,
                                       _indexed(wip.entries))
    target = wip.entries.pop(index)
    finished = Entry(content=target.content, created_at=target.created_at,
                     done_at=now_text(), done=True)
    done.entries.insert(0, finished)
    files.write(before, wip, done)
    return {"ok": True, "action": "complete",
            "updated_counts": {"open_count": len(wip.entries), "done_count": len(done.entries)},
            "changed": {"wip_added": 0, "wip_removed": 1, "done_added": 1},
            "entry": finished.to_json()}


async def todo_update(
    ctx: ToolContext,
    action: str = "",
    content: str = "",
    people: Annotated[object, Field(json_schema_extra={
        "type": "array", "items": {"type": "string"}})] = None,
) -> UpdateResult:
    """Update the todo list in file_state_dir (TODO.WIP.md / TODO.DONE.md): add an item or
    complete one.

    Args:
        action: add or complete.
        content: For add, the item's text; for complete, words that find the item.
        people: Required for add: the people the item mentions. Write '$SPEAKER' for the
            person speaking ("I", "me"), '$AGENT' for you, and a nickname or a contact id
            (tg:@alice) for anyone else.
    """
    if not LIMITS.enabled:
        raise ToolError("todo_update tool is disabled",
                        guidance="The person turned the todo tools off "
                                 "(agent_kernel.tools.todos.LIMITS.enabled).")
    verb = action.strip().lower()
    text = content.strip()
    if not verb:
        raise ValueError("action is required")
    if not text:
        raise ValueError("content is required")
    files = _files(ctx)
    model = ctx.run_model()
    if model is None:
        raise ValueError("todo_update unavailable (missing llm client)")
    if not str(getattr(model, "name", "") or "").strip():
        raise ValueError("todo_update unavailable (missing llm model)")
    try:
        if verb == "add":
            return await _add(ctx, model, files, text, _people(people))
        if verb == "complete":
            return await _complete(ctx, model, files, text)
    except OrganiserError as exc:
        raise ValueError(str(exc)) from None
    raise ValueError(f"invalid action: {verb}")


def todo_list(ctx: ToolContext, scope: str = "wip") -> ListResult:
    """List the todo items: the open ones (wip), the finished ones (done) or both.

    Args:
        scope: wip, done or both.
    """
    if not LIMITS.enabled:
        raise ToolError("todo_list tool is disabled",
                        guidance="The person turned the todo tools off "
                                 "(agent_kernel.tools.todos.LIMITS.enabled).")
    files = _files(ctx)
    chosen = scope.strip().lower() or "wip"
    if chosen not in ("wip", "done", "both"):
        raise ValueError(f"invalid scope: {chosen}")
    try:
        read = files.read()
    except OrganiserError as exc:
        raise ValueError(str(exc)) from None
    from datetime import datetime, timezone

    out: ListResult = {"scope": chosen, "open_count": len(read.wip.entries),
                       "done_count": len(read.done.entries)}
    if chosen in ("wip", "both"):
        out["wip_items"] = [e.to_json() for e in read.wip.entries]
    if chosen in ("done", "both"):
        out["done_items"] = [e.to_json() for e in read.done.entries]
    out["wip_path"] = f"{STATE_ALIAS}/{files.wip_name}"
    out["done_path"] = f"{STATE_ALIAS}/{files.done_name}"
    out["generated_at"] = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return out


class SpecRequired(Tool):
    """A tool whose schema marks ``required`` arguments the tool checks itself, as the spec
    does, so a missing one gets the spec's own error text rather than the validator's."""

    def __init__(self, func: Callable[..., Any], *, required: tuple[str, ...],
                 **options: Any) -> None:
        super().__init__(func, **options)
        self.spec_required = required

    @functools.cached_property
    def parameters(self) -> dict[str, object]:
        """The schema, with the spec's required arguments."""
        schema = Tool.parameters.func(self)  # type: ignore[attr-defined]
        schema["required"] = [*schema.get("required", []), *self.spec_required]
        return dict(schema)


TOOLS = [SpecRequired(todo_update, required=("action", "content"), source="builtin",
                      timeout=180.0),
         Tool(todo_list, source="builtin")]
