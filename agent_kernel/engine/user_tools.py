"""The tools ``@tool`` registers, per session: :class:`UserTools`, the current session's
(:func:`user_tools`, :func:`session_tools`) and the decorator itself.

``%load_ext`` reaches this module before any tool is made, so it imports the registry
(and pydantic, through it) only when ``@tool`` makes the first one.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import typing
from collections.abc import Callable
from typing import Any

if typing.TYPE_CHECKING:
    from agent_kernel.engine.registry import SideEffects, Tool
    from agent_kernel.engine.services import SchedulerService


class UserTools:
    """The tools ``@tool`` (and the states ``@state``) registered in one session: offered to
    every agent it makes.

    A session is whoever makes agents for a person: a notebook's magics, a script. Each
    holds one :class:`UserTools` and gives it to its agents (``Agent(user_tools=...)``),
    so a second session in the same process (a test, an application embedding two
    notebooks' worth of agents) neither offers nor sees the other's tools.
    """

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}
        self._states: dict[str, Callable[[], object]] = {}
        self._lock = threading.Lock()
        self.wire_scheduler: Callable[[SchedulerService], None] | None = None
        """Called with each trigger scheduler made for this session's agents
        (``triggers.scheduler_for``): a notebook's ``%load_ext`` sets one that hands the
        scheduler its shell's namespace and panel display. None (a script, the CLI): the
        scheduler gets neither."""

    def add_state(self, name: str, provider: Callable[[], object]) -> None:
        """Make ``provider`` the state ``name`` this session's agents read (``query_state``)."""
        with self._lock:
            self._states[name] = provider

    def remove_state(self, name: str) -> None:
        """Forget the state provider ``name``."""
        with self._lock:
            self._states.pop(name, None)

    def state(self, name: str) -> Callable[[], object] | None:
        """The state provider ``name``, or None."""
        return self._states.get(name)

    def state_names(self) -> list[str]:
        """The names of the state providers, sorted."""
        return sorted(self._states)

    def add(self, made: Tool) -> None:
        """Offer ``made`` to this session's agents (replacing one of the same name)."""
        with self._lock:
            self._tools[made.name] = made

    def remove(self, name: str) -> None:
        """Stop offering the tool ``name`` to agents made from now on."""
        with self._lock:
            self._tools.pop(name, None)

    def tools(self) -> list[Tool]:
        """The tools, in the order they were registered."""
        with self._lock:
            return list(self._tools.values())

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)


INTERPRETER_TOOLS = UserTools()
"""The interpreter's own session: where ``@tool`` registers outside :func:`session_tools`.
A kernel runs one notebook, so in a kernel this is the notebook's session."""

_SESSION: contextvars.ContextVar[UserTools | None] = contextvars.ContextVar(
    "agent_kernel_user_tools", default=None)


def user_tools() -> UserTools:
    """The current session's user tools: the one :func:`session_tools` chose, else the
    interpreter's (:data:`INTERPRETER_TOOLS`)."""
    chosen = _SESSION.get()
    return chosen if chosen is not None else INTERPRETER_TOOLS


@contextlib.contextmanager
def session_tools(tools: UserTools) -> typing.Iterator[UserTools]:
    """Within the block, ``@tool`` registers in ``tools`` and new agents are offered them."""
    token = _SESSION.set(tools)
    try:
        yield tools
    finally:
        _SESSION.reset(token)


def tool(
    func: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    side_effects: bool | SideEffects = False,
    timeout: float | None = None,
    register: bool = True,
) -> Any:
    """Turn a typed, docstring'd function into a :class:`Tool`.

    Registered tools are offered to every agent this session makes afterwards
    (``%agent`` included; see :class:`UserTools`); pass ``register=False`` to keep one
    private.
    """

    def wrap(fn: Callable[..., Any]) -> Tool:
        from agent_kernel.engine.registry import Tool

        made = Tool(fn, name=name, description=description, side_effects=side_effects,
                    timeout=timeout, source="user")
        if register:
            user_tools().add(made)
        return made

    return wrap(func) if func is not None else wrap
