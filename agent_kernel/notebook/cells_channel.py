"""The notebook's cells, reached through the JupyterLab extension: :class:`CellChannel`.

The kernel cannot see its notebook: cells live in the frontend. With our extension, the
frontend answered ``hello`` on the probe comm (:mod:`.frontend`), and that comm carries
requests the other way too: the kernel sends ``{"cells": op, "request_id", "run_id",
...}`` (``read``, ``insert``, ``edit``, ``run``) and the extension of the notebook panel
whose kernel sent it does the work and replies ``{"action": "cells_reply", "reply_to":
request_id, "ok", "message", ...}``. The reply resolves a future on the loop of the run
that asked; it may arrive on a kernel subshell thread, so it is handed over with
``call_soon_threadsafe``. Requests are addressed to the page that said hello last
(:attr:`FrontendProbe.page`), so two tabs of one notebook do not both act. The run awaits
on that loop, so the kernel is free meanwhile to execute the cell the frontend runs for
``run``.

Without the extension (nbclient, papermill, terminal IPython, JupyterLab without it) there
is nobody to ask: :meth:`CellChannel.unavailable` says so in words, and ``read_cells``
falls back to :meth:`CellChannel.history`, the kernel's own input history.
Imports nothing heavy: ``%load_ext`` makes one.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from agent_kernel.engine.services import CellReply, CellRequest
    from agent_kernel.notebook.frontend import FrontendProbe

NO_KERNEL = ("The agent is not running in a notebook kernel here (a terminal or a script), "
             "so there are no cells to see or change.")
HEADLESS = ("No notebook is open on this kernel that can show cells: it runs without a "
            "person's notebook page (nbclient, papermill or a console).")
NO_EXTENSION = ("This notebook is open without the agent-kernel JupyterLab extension, so the "
                "agent cannot see or change its cells.")
GONE = ("The notebook page that had this kernel's cells is no longer connected (closed or "
        "reloaded without the extension).")


class CellChannel:
    """Kernel -> frontend cell requests over the probe comm, each awaited on its run's loop."""

    def __init__(self, probe: FrontendProbe, shell: Any = None) -> None:
        self.probe = probe
        self.shell = shell
        self._ids = itertools.count(1)
        self._waiting: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Future[CellReply]]] = {}
        self._lock = threading.Lock()
        probe.on_reply(self._on_reply)

    def unavailable(self) -> str | None:
        """Why the cell tools cannot reach the notebook here, or None when they can."""
        if self.shell is None or getattr(self.shell, "kernel", None) is None:
            return NO_KERNEL
        if self.probe.sent_at is None or not self.probe.answered.is_set():
            return HEADLESS
        if not self.probe.extension:
            return NO_EXTENSION
        if not self.probe.connected:
            return GONE
        return None

    async def request(self, op: str, payload: CellRequest, *, timeout: float) -> CellReply:
        """Ask the notebook to do ``op`` and wait for its reply (at most ``timeout`` s).

        A reply that never comes is ``{"ok": false, "message": ...}`` in words, as is a
        notebook that cannot be reached; the caller reads ``ok`` either way."""
        why = self.unavailable()
        if why is not None:
            return {"ok": False, "message": why}
        loop = asyncio.get_running_loop()
        request_id = f"c{next(self._ids)}"
        future: asyncio.Future[CellReply] = loop.create_future()
        with self._lock:
            self._waiting[request_id] = (loop, future)
        try:
            if not self.probe.send_to_frontend({**payload, "cells": op,
                                                "request_id": request_id}):
                return {"ok": False, "message": GONE}
            return await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            return {"ok": False, "timed_out": True,
                    "message": f"The notebook did not answer within {timeout:g} s (is its "
                               "page still open?)."}
        finally:
            with self._lock:
                self._waiting.pop(request_id, None)

    def _on_reply(self, data: Mapping[str, object]) -> None:
        """The extension's reply to one request: resolve its future on the run's own loop."""
        reply_to = data.get("reply_to")
        with self._lock:
            waiting = self._waiting.get(reply_to) if isinstance(reply_to, str) else None
        if waiting is None:
            return
        loop, future = waiting
        # the extension's own reply, read by the tools key by key (cells.ts makes it)
        reply = cast("CellReply",
                     {k: v for k, v in data.items() if k not in ("action", "reply_to")})
        reply["ok"] = data.get("ok") is True

        def settle() -> None:
            if not future.done():
                future.set_result(reply)

        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
            loop.call_soon_threadsafe(settle)

    def history(self) -> list[tuple[int, str]]:
        """The kernel's input history as (execution count, source), oldest first: what
        ``read_cells`` falls back to with no notebook to ask."""
        if self.shell is None:
            return []
        manager = getattr(self.shell, "history_manager", None)
        inputs = getattr(manager, "input_hist_raw", None)  # as typed, magics unexpanded
        if not isinstance(inputs, list):
            inputs = getattr(self.shell, "user_ns", {}).get("In")
        if not isinstance(inputs, list):
            return []
        return [(count, source) for count, source in enumerate(inputs)
                if count > 0 and isinstance(source, str)]
