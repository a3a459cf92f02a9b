"""The memory index's first load: said when someone waits for it, done ahead only if asked.

The first use of memory in a process imports LanceDB, opens the table and loads the
embedding model: seconds (8-9 s on a small machine) and ~300 MiB. A kernel that never
uses memory never pays either, so nothing loads it ahead by default and ``%load_ext``
and a chat-only run import none of it. Whoever waits is told: a run's memory tools emit
``Loading(LOADING)`` (the views draw "loading the memory index (first use)…", then how
long it took), and the ``%agent_memory`` magic and ``python -m agent_kernel memory``
print the same two lines (:func:`load_saying`). A kernel whose person uses memory can
ask for it ahead (``c.AgentMagics.warm_memory = True``): :func:`warm_in_background`
loads it in a daemon thread once the first run has ended, so the idle kernel stays
small until a run has happened and the first memory call does not wait.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from agent_kernel.core.events import Loading

if TYPE_CHECKING:
    from agent_kernel.memory.service import MemoryStore

LOADING = "the memory index (first use)"
"""What a caller waits for while :meth:`MemoryStore.load` works (see ``events.Loading``)."""
log = logging.getLogger(__name__)


def load_saying(store: MemoryStore, say: Callable[[str], None]) -> None:
    """Load ``store`` now; on its first use say so before (``loading …``) and after
    (``loaded … in 8.4 s``), the lines a run's ``Loading`` events show."""
    if store.loaded:
        return
    started = time.perf_counter()
    say(Loading("", LOADING).shown)
    store.load()
    say(Loading("", LOADING, seconds=time.perf_counter() - started).shown)


def warm_in_background(store: MemoryStore) -> threading.Thread | None:
    """Load ``store`` in a daemon thread (None when it is loaded already).

    A memory call meanwhile waits for the same load (its locks) and is announced as
    usual. At exit the thread is given 10 s to finish rather than being torn down inside
    a native import.
    """
    if store.loaded:
        return None
    thread = threading.Thread(target=_load_quietly, args=(store,),
                              name="agent-kernel-warm-memory", daemon=True)
    thread.start()
    atexit.register(thread.join, 10.0)
    return thread


def _load_quietly(store: MemoryStore) -> None:
    try:
        store.load()
    except Exception:  # the first memory call will load again and say why it cannot
        log.debug("memory warm-up failed", exc_info=True)
