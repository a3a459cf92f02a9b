"""Tools: plain typed Python functions, turned into schemas the model can call.

``@tool`` reads a function's signature and docstring and builds a pydantic
model from them. That one model gives both the JSON schema sent to the model
and the validation run before every call (required arguments, types,
minimum/maximum, maxLength, enums), so a schema can never say one thing while
validation checks another. A parameter annotated :class:`ToolContext` is
filled in by the runtime and never shown to the model.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import copy
import enum
import functools
import inspect
import threading
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from agent_kernel.engine.models.base import FunctionSpec, JsonObject, Model, ToolSchema
from agent_kernel.engine.tool_schema import format_validation_error, inline_refs, parse_docstring
from agent_kernel.engine.tool_threads import tool_thread

if typing.TYPE_CHECKING:
    from pydantic import BaseModel
    from pydantic.fields import FieldInfo

    from agent_kernel.core.config import Settings
    from agent_kernel.core.events import Event, EventBus
    from agent_kernel.core.ledger import Ledger
    from agent_kernel.core.workspace import Workspace
    from agent_kernel.engine.approvals import Approvals, ApprovalTerms
    from agent_kernel.engine.context import ContextWindow
    from agent_kernel.engine.questions import QuestionChannel
    from agent_kernel.engine.services import AgentServices
    from agent_kernel.engine.tool_clock import ToolClock
    from agent_kernel.engine.user_tools import UserTools

# pydantic costs ~60 ms to import: it is imported when the first tool is made (or the
# first ``Field`` written), not when this module is.
if typing.TYPE_CHECKING:
    from pydantic import Field as Field
else:
    def Field(*args, **kwargs):
        """pydantic's ``Field`` (``Annotated[int, Field(ge=0)]``): its ``FieldInfo``, with
        pydantic imported on the first call."""
        from pydantic import Field as pydantic_field

        return pydantic_field(*args, **kwargs)


class ToolArgumentError(ValueError):
    """The model's arguments do not fit the tool's schema."""


class ToolError(RuntimeError):
    """A tool failed in a way the model can read and act on.

    The message is the fact (ledger, run result). ``summary`` is the short line the
    person sees instead, and ``guidance`` is said to the model only.
    """

    def __init__(self, message: str, *, summary: str | None = None,
                 guidance: str | None = None) -> None:
        super().__init__(message)
        self.summary = summary
        self.guidance = guidance


class ToolHost(typing.Protocol):
    """What a running tool may use of the agent that runs it (:class:`ToolContext.agent`)."""

    agent_id: str
    role: str | None
    workspace: Workspace
    settings: Settings
    bus: EventBus
    ledger: Ledger
    registry: ToolRegistry
    approvals: Approvals
    questions: QuestionChannel
    services: AgentServices
    windows: dict[str, ContextWindow]
    """The conversation of each run in progress, by run id."""
    user_tools: UserTools
    """The session's ``@tool`` functions and ``@state`` providers."""

    @property
    def model(self) -> str:
        """The model runs use unless they name one."""
        ...

    @property
    def running(self) -> list[str]:
        """Ids of runs in progress."""
        ...

    def stop(self, run_id: str | None = None) -> int:
        """Cancel one run (or all)."""
        ...


@dataclass
class TurnState:
    """What the tool calls of one model response share with the loop that runs them."""

    trigger: JsonObject | None = None
    """The trigger that started the run (None for a person's prompt)."""
    ended_by: str | None = None
    """Set by :meth:`ToolContext.end_run`: the run ends once these calls are answered."""
    closing: dict[str, str] = field(default_factory=dict)
    """Call id → why, set by :meth:`ToolContext.end_run_if_all`: the run ends once these
    calls are answered if every call of the response is here and succeeded."""


@dataclass
class ToolContext:
    """What a running tool may know about its run; injected, never model-visible."""

    agent: ToolHost
    run_id: str
    agent_id: str
    workspace: Workspace
    trigger: JsonObject | None = None
    call_id: str | None = None
    turn: TurnState = field(default_factory=TurnState)
    """Shared by the calls of one response and read by the loop after them."""
    clock: ToolClock | None = None
    """The call's timeout, which stands still while a person is asked (None outside the loop)."""
    thread: threading.Thread | None = None
    """The thread a sync tool runs in (a tool that outlives its timeout is left there)."""

    def emit(self, event: Event) -> None:
        """Emit an event on the agent's bus."""
        self.agent.bus.emit(event)

    def run_model(self) -> Model | None:
        """The model this call's run talks to, or None outside a run: a tool that needs the
        model's judgement (``todo_update``, ``plan_create``) asks it through the same door."""
        window = self.agent.windows.get(self.run_id)
        return window.model if window is not None else None

    def end_run(self, why: str) -> None:
        """End the run once this response's tool calls are answered, without another model
        call (``ask_user`` in a team, ``wait_for_message``); ``why`` names the tool."""
        self.turn.ended_by = why

    def end_run_if_all(self, why: str) -> None:
        """End the run after this response if every one of its calls asks the same and
        succeeds: nothing is left for another model call to do (a Planner's response of
        delegations alone, whose Workers start when its run ends). A response that mixes
        in any other call, or whose calls fail, goes on as usual."""
        if self.call_id is not None:
            self.turn.closing[self.call_id] = why

    async def ask(
        self,
        question: str,
        options: list[str] | None = None,
        timeout: float = 3600.0,
        default: str | None = None,
    ) -> dict[str, str]:
        """Ask the person; returns ``{answer, source}``."""
        result: dict[str, str] = await self.agent.questions.ask(
            run_id=self.run_id,
            question=question,
            options=options,
            timeout=timeout,
            default=default,
            limited=True,  # spec 000: options limit the reply
        )
        return result


def _is_context(annotation: object) -> bool:
    return annotation is ToolContext or annotation == "ToolContext"


Precheck = Callable[[JsonObject, "ToolContext"], JsonObject | None]
"""Looks at a call's validated arguments (and its context: the workspace) before anyone is
asked to approve it, so a refusal that does not depend on the person is said first: raises
:class:`ToolError` to refuse the call outright, or returns notes for the approval
question (``{"sandbox": "not sandboxed: ..."}``), or None."""


ApprovalRule = Callable[["ToolContext", "dict[str, object]"], "ApprovalTerms"]
"""How a call of a tool is approved, from its run and its arguments (``run_python``: the
code's digest, and no standing permission or headless policy for a trigger's run)."""


ForModel = Callable[[Any], object]
"""What the model reads of a tool's result, when that is less than the views show (an
image drawn in the run, given to the model as a line of words)."""


ImagesOf = Callable[[Any], list[str]]
"""The PNG images in a tool's result, each as base64: shown to a model that reads images
in a message after the tool results (:meth:`Model.accepts_images`)."""


class FailedCall(TypedDict, total=False):
    """A failed call in spec 004's words: ``{ok: false, error}`` or ``{error}``."""

    ok: bool
    error: str


Failure = Callable[[str], FailedCall]
"""A failed call in its spec's shape, from the reason in words: spec 004's
``{ok: false, error}`` or ``{error}``. A refusal (a precheck, a denied approval, bad
arguments) or a raise of such a tool reaches the model as this object, not as
``Error: ...`` text; the ledger still records the call as failed."""


def ok_false(reason: str) -> FailedCall:
    """Spec 004's failed call of the tools with an ``ok`` (files, commands, requests)."""
    return {"ok": False, "error": reason}


def error_only(reason: str) -> FailedCall:
    """Spec 004's failed ``spawn_agent`` / ``terminate_agent``: ``{error}``."""
    return {"error": reason}


SideEffects = Callable[[JsonObject], bool]
"""Decides per call whether a tool's validated arguments need an approval (``url_fetch``:
a GET does not, a POST does)."""


class Tool:
    """A callable the model may use: name, description, schema, validator.

    ``precheck`` (see :data:`Precheck`) runs on every call the model makes, after
    validation and before approval.
    """

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        side_effects: bool | SideEffects = False,
        timeout: float | None = None,
        source: str | None = None,
        precheck: Precheck | None = None,
        approval_terms: ApprovalRule | None = None,
        for_model: ForModel | None = None,
        images: ImagesOf | None = None,
        failure: Failure | None = None,
        schema_extra: Mapping[str, object] | None = None,
        envelope: bool = True,
    ) -> None:
        self.func = func
        self.envelope = envelope
        """Whether a ``{ok: false, ...}`` result is a failed call (spec 004's envelopes);
        False for a tool whose result is a value it was given to compute (run_javascript)."""
        self.failure = failure
        self.schema_extra = schema_extra
        self.images = images
        self.approval_terms = approval_terms
        self.for_model = for_model
        self.name = name or func.__name__
        self.side_effects = side_effects
        self.timeout = timeout
        self.source = source
        self.precheck = precheck
        self.is_async = inspect.iscoroutinefunction(func)
        summary, arg_docs = parse_docstring(func.__doc__)
        self.description = description or summary or self.name
        hints = typing.get_type_hints(func, include_extras=True)
        self.context_param: str | None = None
        from pydantic.fields import FieldInfo

        fields: dict[str, tuple[Any, FieldInfo]] = {}
        for param in inspect.signature(func).parameters.values():
            annotation = hints.get(param.name, Any)
            if _is_context(annotation):
                self.context_param = param.name
                continue
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"tool {self.name!r}: *args/**kwargs cannot become a schema")
            default = ... if param.default is param.empty else param.default
            doc = arg_docs.get(param.name)
            if isinstance(default, FieldInfo):
                info = default
                if doc and not info.description:
                    info.description = doc
            else:
                info = Field(default=default, description=doc)
            fields[param.name] = (annotation, info)
        self._fields = fields
        self.__doc__ = func.__doc__
        self.__name__ = self.name

    def needs_approval(self, arguments: JsonObject) -> bool:
        """Whether this call must be approved first (``side_effects``, or its verdict on
        ``arguments`` when it is a :data:`SideEffects` callable; a callable that fails asks)."""
        if not callable(self.side_effects):
            return bool(self.side_effects)
        try:
            return bool(self.side_effects(arguments))
        except Exception:
            return True

    # Building the pydantic model costs ~20 ms a tool; deferring it keeps
    # ``%load_ext`` and ``Agent()`` fast when a session has dozens of tools.
    @functools.cached_property
    def model(self) -> type[BaseModel]:
        """The pydantic model that validates this tool's arguments."""
        from pydantic import ConfigDict, create_model

        made: type[BaseModel] = create_model(  # type: ignore[call-overload]
            f"{self.name}_arguments", __config__=ConfigDict(extra="forbid"), **self._fields
        )
        return made

    @functools.cached_property
    def parameters(self) -> JsonObject:
        """The JSON schema of the arguments, as sent to the model."""
        schema = inline_refs(self.model.model_json_schema())
        schema.setdefault("properties", {})
        schema.setdefault("required", [])
        schema.pop("additionalProperties", None)
        if self.schema_extra:  # what a signature cannot say: "one of taskId or id"
            schema.update(copy.deepcopy(self.schema_extra))
        return schema

    def schema(self) -> ToolSchema:
        """The OpenAI function-calling schema of this tool."""
        return ToolSchema(type="function", function=FunctionSpec(
            name=self.name, description=self.description, parameters=self.parameters))

    def validate(self, arguments: object) -> JsonObject:
        """Check ``arguments`` against the schema; returns them ready for the call."""
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise ToolArgumentError(
                f"Invalid arguments for tool '{self.name}': expected a JSON object, "
                f"got {type(arguments).__name__}"
            )
        from pydantic import ValidationError

        try:
            parsed = self.model.model_validate(arguments)
        except ValidationError as exc:
            raise ToolArgumentError(format_validation_error(self.name, exc)) from None
        values = {name: getattr(parsed, name) for name in self.model.model_fields}
        return {
            name: (value.value if isinstance(value, enum.Enum) else value)
            for name, value in values.items()
        }

    async def invoke(self, arguments: JsonObject, context: ToolContext | None) -> Any:
        """Run the tool with validated ``arguments``; sync tools run in a thread of their own.

        The thread is a daemon, outside the loop's executor: a sync tool that ignores its
        timeout is left behind (``context.thread`` tells) and holds up neither
        ``asyncio.run``'s shutdown nor the process's exit. A thread whose call has ended
        waits for the next (:mod:`.tool_threads`), so a call seldom waits for one to start.
        """
        kwargs = dict(arguments)
        if self.context_param:
            kwargs[self.context_param] = context
        if self.is_async:
            return await self.func(**kwargs)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        call = functools.partial(contextvars.copy_context().run, self.func, **kwargs)

        def settle(value: object, error: BaseException | None) -> None:
            if future.done():
                return
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(value)

        def work() -> None:
            try:
                value, error = call(), None
            except BaseException as exc:  # handed to the awaiting run, never lost
                value, error = None, exc
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(settle, value, error)

        thread = tool_thread(work, f"agent-tool-{self.name}")
        if context is not None:
            context.thread = thread
        return await future

    def __call__(self, *args: object, **kwargs: object) -> Any:
        return self.func(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<Tool {self.name}{' (side effects)' if self.side_effects else ''}>"


PermissionHook = Callable[[str | None, Tool], bool]
"""May an agent of this role call this tool? A hook may also have ``refusal(role, name)``:
what the model is told when it may not (None: the engine's plain words)."""


class Toolset(typing.Protocol):
    """A set of tools an agent is built with: a module (or object) listing ``TOOLS``; it may
    also define ``attach(agent)``, called once per new agent."""

    TOOLS: list[Tool]


@dataclass(frozen=True)
class Offering:
    """Which tools a request carries: a core, and groups a run brings in on demand.

    Offering is about tokens, not permission: every tool the role may use can still be
    called (its permission hook and the approvals decide, as always); a request only
    describes the ones a run is likely to need. A tool with no group (the session's
    ``@tool`` functions, ``Agent(tools=...)``) is always offered. ``finder`` is the tool a
    model calls to bring the rest in (``find_tools``); a role that may not call it is
    offered everything it may use, since nothing could bring a hidden tool back.
    """

    groups: Mapping[str, str]
    """Tool name -> its group (``files``, ``schedule``, ...)."""
    core: frozenset[str]
    """The tools offered from a run's first request (an agent without a team role)."""
    by_role: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """A team role's own core, in place of :attr:`core`."""
    about: Mapping[str, str] = field(default_factory=dict)
    """Each group in a few words (what ``find_tools`` says it holds)."""
    finder: str = "find_tools"

    def core_for(self, role: str | None) -> frozenset[str]:
        """The core of ``role`` (the single agent's for no role or a role made at run time)."""
        return self.by_role.get(role, self.core) if role is not None else self.core


SchemaKey = tuple[str | None, frozenset[str] | None]
"""What a request's tool schemas depend on beyond the tools: the role, the groups found."""


class ToolRegistry:
    """The tools one agent may use, with a per-role permission hook, and which of them each
    run's requests offer (:class:`Offering`; None: every tool the role may use).

    Schemas are built once and kept until a tool is added or removed (or the hook or the
    offering changes): a model call reads a cached list, it does not rebuild 50 schemas.
    """

    def __init__(
        self, tools: typing.Iterable[Tool] = (), permission_hook: PermissionHook | None = None
    ) -> None:
        self._tools: dict[str, Tool] = {}
        self._permission_hook = permission_hook
        self._offering: Offering | None = None
        self._cache: dict[SchemaKey, list[ToolSchema]] = {}
        self._found: dict[str, set[str]] = {}
        for item in tools:
            self.add(item)

    @property
    def permission_hook(self) -> PermissionHook | None:
        """May an agent of this role call this tool (None: every tool)."""
        return self._permission_hook

    @permission_hook.setter
    def permission_hook(self, hook: PermissionHook | None) -> None:
        self._permission_hook = hook
        self._cache.clear()

    @property
    def offering(self) -> Offering | None:
        """Which tools a request carries (None: every tool the role may use)."""
        return self._offering

    @offering.setter
    def offering(self, offering: Offering | None) -> None:
        self._offering = offering
        self._cache.clear()

    def add(self, item: Tool | Callable[..., Any]) -> Tool:
        """Add a tool (a plain function is wrapped on the way in)."""
        made = item if isinstance(item, Tool) else Tool(item)
        self._tools[made.name] = made
        self._cache.clear()
        return made

    def remove(self, name: str) -> None:
        """Forget a tool by name."""
        self._tools.pop(name, None)
        self._cache.clear()

    def get(self, name: str) -> Tool | None:
        """The tool named ``name``, or None."""
        return self._tools.get(name)

    def built_schemas(self) -> dict[SchemaKey, list[ToolSchema]]:
        """The schema lists built so far, by role and brought-in groups (a copy): what
        another registry of the same tools and settings may reuse (:meth:`reuse_schemas`)."""
        return dict(self._cache)

    def fingerprint(self) -> tuple[object, ...]:
        """What this registry's schemas depend on, by identity: its tools (the same objects,
        in order), its permission hook and its offering. Two registries with the same
        fingerprint build the same schema lists (:meth:`reuse_schemas` may pass them on)."""
        return (*self._tools.values(), self._permission_hook, self._offering)

    def reuse_schemas(self, built: Mapping[SchemaKey, list[ToolSchema]]) -> None:
        """Take schema lists a registry of the same tools and settings built (any add or
        remove after this empties them again)."""
        self._cache.update(built)

    def names(self) -> list[str]:
        """All tool names, sorted."""
        return sorted(self._tools)

    def allowed(self, role: str | None, tool_obj: Tool) -> bool:
        """Whether ``role`` may call ``tool_obj`` (everything, without a hook)."""
        return True if self.permission_hook is None else self.permission_hook(role, tool_obj)

    def schemas(self, role: str | None = None) -> list[ToolSchema]:
        """Function schemas of every tool ``role`` may use (what the role could be offered)."""
        return self._built(role, None)

    def offered(self, role: str | None = None, run_id: str | None = None,
                messages: typing.Sequence[Mapping[str, Any]] = ()) -> list[ToolSchema]:
        """The schemas one request of run ``run_id`` carries: the role's core, the groups
        the run found (``find_tools``), the tools with no group, and the finder while
        anything the role may use is left out. A run's first call also brings in the groups
        of the tools ``messages`` (the conversation it continues) already called."""
        if self._offering is None:
            return self._built(role, None)
        found = self._found.get(run_id) if run_id is not None else None
        if found is None:
            found = self._used_groups(role, messages)
            if run_id is not None:
                self._found[run_id] = found
        return self._built(role, frozenset(found))

    def hidden(self, role: str | None, run_id: str | None) -> list[Tool]:
        """The tools ``role`` may use that run ``run_id`` is not offered now."""
        found = self._found.get(run_id, set()) if run_id is not None else set()
        offered = self._built(role, None if self._offering is None else frozenset(found))
        shown = {s["function"]["name"] for s in offered}
        return [t for t in self._tools.values() if t.name not in shown and self.allowed(role, t)]

    def bring_in(self, run_id: str, names: typing.Iterable[str]) -> None:
        """Offer the tools ``names`` for the rest of run ``run_id``."""
        self._found.setdefault(run_id, set()).update(names)

    def forget(self, run_id: str) -> None:
        """The run ended: forget what it found (the next run starts from its core)."""
        self._found.pop(run_id, None)

    def _used_groups(self, role: str | None,
                     messages: typing.Sequence[Mapping[str, Any]]) -> set[str]:
        offering = self._offering
        if offering is None:
            return set()
        called = {call.get("function", {}).get("name") for message in messages
                  if message.get("role") == "assistant"
                  for call in message.get("tool_calls") or ()}
        groups = {offering.groups[name] for name in called if name in offering.groups}
        return {name for name, group in offering.groups.items() if group in groups}

    def _built(self, role: str | None, found: frozenset[str] | None) -> list[ToolSchema]:
        """A copy of the cached list; the schemas in it are shared and never changed
        (``fast_path`` keeps their JSON by identity)."""
        key = (role, found)
        cached = self._cache.get(key)
        if cached is None:
            cached = self._cache[key] = [t.schema() for t in self._pick(role, found)]
        return list(cached)

    def _pick(self, role: str | None, found: frozenset[str] | None) -> list[Tool]:
        mine = [t for t in self._tools.values() if self.allowed(role, t)]
        offering = self._offering
        if found is None or offering is None:
            return mine
        if not any(t.name == offering.finder for t in mine):
            return mine  # nothing could bring a hidden tool back: offer all it may use
        core = offering.core_for(role)
        shown = [t for t in mine if t.name != offering.finder and (
            t.name not in offering.groups or t.name in core or t.name in found)]
        if len(shown) == len(mine) - 1:
            return shown  # nothing left to find
        return [*shown, *(t for t in mine if t.name == offering.finder)]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> typing.Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)
