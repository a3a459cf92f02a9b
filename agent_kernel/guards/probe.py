"""A fact about this machine, found once per process: :class:`MachineProbe`.

Process-wide on purpose: whether bubblewrap is installed and may make namespaces, what its
``--help`` offers, which cgroup controllers this user was delegated, are facts of the
machine and the user, the same for every agent and session in the process, and finding
them costs a subprocess or a walk of ``/sys/fs/cgroup``. No agent writes to a probe; one
that asks again (after installing bubblewrap, or in a test) calls :meth:`forget`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class MachineProbe(Generic[T]):
    """``find()``'s answer, found on first use and kept (thread-safe)."""

    def __init__(self, find: Callable[[], T]) -> None:
        self._find = find
        self._lock = threading.Lock()
        self._found: tuple[T] | None = None

    def get(self) -> T:
        """The answer, found now if it was not yet."""
        with self._lock:
            if self._found is None:
                self._found = (self._find(),)
            return self._found[0]

    def forget(self) -> None:
        """Find the answer again next time."""
        with self._lock:
            self._found = None
