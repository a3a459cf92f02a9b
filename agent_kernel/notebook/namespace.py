"""The kernel's variables as ``list_variables`` and ``inspect_variable`` see them.

:class:`KernelNamespace` is the notebook's :class:`~agent_kernel.engine.services.NamespaceService`:
the person's names in ``shell.user_ns``, without IPython's own (``user_ns_hidden``: ``In``,
``Out``, ``exit``, ``get_ipython``...), names starting with ``_`` (``_``, ``__``, ``_i3``,
``_7``, the person's private ones), modules, and the objects of our own magics. It only
reads the namespace: no value is called, printed or copied here (the tools bound every
look that may run the person's code).

"Newest first" needs a time IPython does not keep. A ``post_run_cell`` callback,
registered at ``%load_ext``, compares each name's value by ``id()`` with the last one it saw
and stamps a name with the execution count of the cell that created or rebound it. Each
look rescans too, so a name made since the last cell (``run_python``) counts as newest. A
value changed in place (``df["x"] = 1``) keeps its stamp: only rebinding is seen. Names
already there at ``%load_ext`` have no stamp and come last, the later-made first.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from IPython.core.interactiveshell import ExecutionResult, InteractiveShell

_UNSTAMPED = -1
"""The stamp of a name already in the namespace when we started watching."""
_OURS = "agent_kernel.notebook"
"""Objects of types from here are the magics' machinery, not the person's data."""


def _snapshot(namespace: Mapping[str, object]) -> list[tuple[str, object]]:
    """The namespace's items now; a cell running on the main thread may be changing it."""
    for _attempt in range(5):
        try:
            return list(namespace.items())
        except RuntimeError:  # changed size during the copy: try again
            continue
    return list(dict(namespace).items())


_CLASS_DICT = type.__dict__["__dict__"].__get__
"""A class's own namespace, read the way ``type`` reads it (no metaclass is asked)."""


def _type_excluded(kind: type) -> bool:
    """A module, or an object of our magics' machinery."""
    if issubclass(kind, ModuleType):
        return True
    # Read past any metaclass: a class's own __getattribute__, __eq__ or __hash__ is the
    # person's code, and this runs on the main thread after every cell.
    module = _CLASS_DICT(kind).get("__module__")
    return type(module) is str and module.startswith(_OURS)


class KernelNamespace:
    """The person's variables in one namespace, newest first (see the module docstring).

    ``namespace`` is ``shell.user_ns``, ``hidden`` ``shell.user_ns_hidden`` and ``clock``
    the current execution count; a plain dict and a counter serve tests without a shell.
    """

    def __init__(self, namespace: Mapping[str, object],
                 hidden: Mapping[str, object] | None = None,
                 clock: Callable[[], int] | None = None) -> None:
        self.namespace = namespace
        self.hidden: Mapping[str, object] = hidden if hidden is not None else {}
        self.clock = clock or (lambda: 0)
        self._stamps: dict[str, tuple[int, int]] = {}  # name -> (id of the value, stamp)
        self._lock = threading.Lock()
        self.rescan(_UNSTAMPED)

    @classmethod
    def of_shell(cls, shell: InteractiveShell) -> KernelNamespace:
        """The namespace of an IPython shell, stamped with its execution counts."""
        return cls(shell.user_ns, shell.user_ns_hidden, lambda: int(shell.execution_count))

    def _excluded(self, name: str, value: object) -> bool:
        """IPython's, private, a module, or our magics' own."""
        if not isinstance(name, str) or name.startswith("_"):
            return True
        if name in self.hidden and self.hidden.get(name) is value:
            return True
        return _type_excluded(type(value))

    def rescan(self, stamp: int | None = None) -> list[tuple[str, object]]:
        """Stamp names that are new or rebound with ``stamp`` (the clock when None); return the
        person's variables in namespace order."""
        now = self.clock() if stamp is None else stamp
        hidden = self.hidden
        verdicts: dict[int, bool] = {}  # one per type, by identity: a namespace holds few
        found = []
        for name, value in _snapshot(self.namespace):
            if not isinstance(name, str) or name[:1] == "_":
                continue
            if name in hidden and hidden.get(name) is value:
                continue
            kind = type(value)
            excluded = verdicts.get(id(kind))
            if excluded is None:
                excluded = verdicts[id(kind)] = _type_excluded(kind)
            if not excluded:
                found.append((name, value))
        with self._lock:
            stamps = self._stamps
            kept: dict[str, tuple[int, int]] = {}
            for name, value in found:
                old = stamps.get(name)
                kept[name] = old if old is not None and old[0] == id(value) else (id(value), now)
            self._stamps = kept
        return found

    def post_run_cell(self, result: ExecutionResult) -> None:
        """IPython's ``post_run_cell`` event: stamp what the cell created or rebound."""
        count = getattr(result, "execution_count", None)
        # Never an error under the person's cell: the next look rescans.
        with contextlib.suppress(Exception):
            self.rescan(count if isinstance(count, int) else None)

    def user_variables(self) -> list[tuple[str, object]]:
        """The person's variables, newest first (within one cell, the later-made first)."""
        found = self.rescan()
        stamps = self._stamps
        order = sorted(range(len(found)), reverse=True,
                       key=lambda i: (stamps.get(found[i][0], (0, _UNSTAMPED))[1], i))
        return [found[i] for i in order]

    def value_of(self, name: str) -> object:
        """The value of one of the person's variables; LookupError (in words) otherwise."""
        if name not in self.namespace:
            raise LookupError(f"There is no variable named {name!r} in the kernel.")
        value = self.namespace[name]
        if self._excluded(name, value):
            kind = ("a module" if isinstance(value, ModuleType) else
                    "private" if name.startswith("_") else "IPython's or agent-kernel's own")
            raise LookupError(f"{name!r} is {kind}, not one of the person's variables.")
        return value


_WATCHED: weakref.WeakKeyDictionary[InteractiveShell, KernelNamespace] = (
    weakref.WeakKeyDictionary())


def watch(shell: InteractiveShell) -> KernelNamespace:
    """Start stamping ``shell``'s names after each cell (``%load_ext``)."""
    found = namespace_of(shell)
    assert found is not None
    if found.post_run_cell not in shell.events.callbacks["post_run_cell"]:
        shell.events.register("post_run_cell", found.post_run_cell)
    return found


def unwatch(shell: InteractiveShell) -> None:
    """Stop stamping (``%unload_ext``); the agent already made keeps its namespace."""
    found = _WATCHED.get(shell)
    if found is not None and found.post_run_cell in shell.events.callbacks["post_run_cell"]:
        shell.events.unregister("post_run_cell", found.post_run_cell)


def namespace_of(shell: InteractiveShell | None) -> KernelNamespace | None:
    """``shell``'s namespace service (one per shell), or None without a shell."""
    if shell is None:
        return None
    found = _WATCHED.get(shell)
    if found is None:
        found = _WATCHED[shell] = KernelNamespace.of_shell(shell)
    return found
