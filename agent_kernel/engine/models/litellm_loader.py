"""The one place litellm is imported: once, lazily, off the event loop when asked.

litellm takes seconds and ~190 MiB to import, so it is loaded on first use by
a model that needs it (the offline ``demo`` model never does), or warmed in a
background thread once such a model is configured. Loading sets the offline
cost map and silences litellm's banner. A process that exits while the warm-up
is still importing leaves quietly (see :func:`_end_warm_up`).

Importing is not all a first call pays: litellm loads more on it (tiktoken's
encoding for its token and cost counts, its proxy types, the pydantic schemas of
its stream and cost records: 0.3-0.7 s). The background warm-up does that part too
(:func:`_first_call_ahead`), with one offline call that sends nothing and logs
nowhere. A run that loads litellm itself does not: its own first call loads the
same, and the offline call would only add to its wait.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib
import logging
import os
import sys
import threading
import time
from typing import Any

from agent_kernel.core.config import DEMO_MODEL

LIBRARY = "the model library (first run)"
"""What a run waits for while litellm loads (see :class:`~agent_kernel.core.events.Loading`)."""
_lock = threading.Lock()
_litellm: Any = None
_warm_thread: threading.Thread | None = None
loaded_at: float | None = None
"""``time.time()`` when litellm's import finished (None until then)."""
log = logging.getLogger(__name__)
_ANY_MODEL = "openai/agent-kernel-warm-up"
"""A model name outside litellm's cost map, for a warm-up that knows no model."""


def load_litellm() -> Any:
    """Import and configure litellm once; safe from any thread."""
    global _litellm, loaded_at
    if _litellm is not None:
        return _litellm
    with _lock:
        if _litellm is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            import litellm

            litellm.suppress_debug_info = True
            litellm.telemetry = False
            # litellm imports this on the first call with tools (seconds): do it now
            with contextlib.suppress(ImportError):
                import litellm.responses.mcp.chat_completions_handler  # noqa: F401
            with contextlib.suppress(Exception):  # the fast path's first request's: now
                from agent_kernel.engine.models import fast_path

                fast_path.prepare(litellm)
            _litellm = litellm
            loaded_at = time.time()
    return _litellm


def _first_call_ahead(litellm: Any, model: str | None) -> None:
    """Pay what litellm loads on its first call to ``model`` now, off the event loop.

    A streamed ``mock_response`` goes through litellm's whole path except the HTTP
    (stream wrapper, usage, cost, logging) with nothing sent; ``no-log`` keeps it out of
    any callback a person configured. It names the model the runs will use, so it loads
    what that model's first call does (a model in litellm's cost map costs ~120 MiB more
    than one outside it, for its real first call just the same); with none known, a name
    outside the map loads only what every model needs. A failure only leaves the cost to
    the first run.
    """
    try:
        importlib.import_module("litellm.litellm_core_utils.default_encoding")  # tiktoken's BPE
        stream = litellm.completion(
            model=model or _ANY_MODEL, messages=[{"role": "user", "content": "warm"}],
            mock_response="ok", stream=True, stream_options={"include_usage": True},
            **{"no-log": True})
        for _ in stream:
            pass
    except Exception:
        log.debug("litellm's first-call warm-up failed", exc_info=True)


def needs_loading(model: str) -> bool:
    """True when a run on ``model`` would first wait for litellm's import."""
    return model != DEMO_MODEL and _litellm is None


async def load_off_loop() -> float:
    """Load litellm in a worker thread (joining a warm-up under way); the seconds waited."""
    started = time.perf_counter()
    await asyncio.to_thread(load_litellm)
    return time.perf_counter() - started


def _warm(model: str | None) -> None:
    try:
        _first_call_ahead(load_litellm(), model)
    except Exception:  # the process is exiting; otherwise the run that needs it will say why
        log.debug("litellm warm-up failed", exc_info=True)


class _RefuseWarmImports:
    """A meta-path finder that fails every new import of the warm-up thread."""

    @staticmethod
    def find_spec(name: str, path: object = None, target: object = None) -> None:
        if threading.current_thread() is _warm_thread:
            raise ImportError(f"not importing {name}: the process is exiting")


def _end_warm_up() -> None:
    """At exit: stop a warm-up still importing, quietly, before the interpreter goes.

    A daemon thread left inside litellm's import when the interpreter finalizes
    aborts the process ("FATAL: exception not rethrown"); waiting for the whole
    import costs seconds. Its next import fails instead, and ``_warm`` swallows it.
    """
    thread = _warm_thread
    if thread is None or not thread.is_alive():
        return
    sys.meta_path.insert(0, _RefuseWarmImports)
    thread.join(30.0)


def warm_up(model: str | None = None) -> threading.Thread | None:
    """Import litellm in a daemon thread so the first real run (on ``model``, when known)
    does not wait for it, nor for what its first call loads.

    Does nothing when litellm is loaded or already loading.
    """
    global _warm_thread
    if _litellm is not None:
        return None
    if _warm_thread is not None and _warm_thread.is_alive():
        return _warm_thread
    if _warm_thread is None:
        atexit.register(_end_warm_up)
    _warm_thread = threading.Thread(target=_warm, args=(model,), name="agent-kernel-warmup",
                                    daemon=True)
    _warm_thread.start()
    return _warm_thread
