"""The threads sync tools run in: a call handed to a waiting thread, else to a new one.

A sync tool runs in a daemon thread of its own, outside the loop's executor
(``Tool.invoke``): one that ignores its timeout is left behind and holds up neither
``asyncio.run``'s shutdown nor the process's exit. A thread whose call has ended waits
for the next, so a call seldom waits for a thread to start.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable


class _ToolThread(threading.Thread):
    """A daemon thread that runs sync tool calls one after another. Handed a call while it
    waits, it spares the loop the wait for a new thread to be scheduled (``start`` blocks
    until it runs: 0.1 ms on a quiet machine, a millisecond or more on a loaded one); one
    whose call never returns is never handed another (left behind, as before)."""

    def __init__(self, name: str) -> None:
        super().__init__(daemon=True, name=name)
        self.calls: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()

    def run(self) -> None:
        while True:
            try:
                work = self.calls.get(timeout=_IDLE_SECONDS)
            except queue.Empty:
                if _retire(self):
                    return
                continue  # handed a call as it timed out: take it
            work()
            if not _rest(self):
                return


_IDLE: list[_ToolThread] = []
"""Tool threads waiting for a call (at most :data:`_MAX_IDLE`)."""
_IDLE_LOCK = threading.Lock()
_MAX_IDLE = 8
_IDLE_SECONDS = 60.0
"""A thread left idle this long ends."""


def tool_thread(work: Callable[[], None], name: str) -> threading.Thread:
    """Run ``work`` on a waiting tool thread, or on a new one; returns the thread."""
    with _IDLE_LOCK:
        thread = _IDLE.pop() if _IDLE else None
    if thread is None:
        thread = _ToolThread(name)
        thread.calls.put(work)
        thread.start()
    else:
        thread.name = name
        thread.calls.put(work)
    return thread


def _rest(thread: _ToolThread) -> bool:
    """Put ``thread`` among the waiting ones; False when enough wait (it ends)."""
    with _IDLE_LOCK:
        if len(_IDLE) >= _MAX_IDLE:
            return False
        _IDLE.append(thread)
        return True


def _retire(thread: _ToolThread) -> bool:
    """Take an idle ``thread`` off the waiting ones; False when it was just handed a call."""
    with _IDLE_LOCK:
        if thread in _IDLE:
            _IDLE.remove(thread)
            return True
        return False


def _forget_threads() -> None:
    """In a forked child the waiting threads do not exist."""
    global _IDLE_LOCK
    _IDLE.clear()
    _IDLE_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_threads)
