"""Who is on the other end of the kernel, and the extension's channel for live controls.

``%load_ext`` opens one comm to the target ``agent_kernel.frontend_probe``
(:class:`FrontendProbe`). What happens next tells the kernel who is there:

- JupyterLab or Notebook 7 **without** our extension close it at once (a comm
  to a target nobody registered): a person can click, so runs show ipywidgets
  controls in outputs of their own.
- **With** the extension (``labextension/``), the frontend registers that target
  and answers ``{"action": "hello"}``: runs then let the extension draw their
  controls inside the run output itself (an approval inside the card it gates,
  Stop in the header) and the comm stays open as the channel for the person's
  answers. No ipywidgets output is made at all, so nothing in a saved notebook
  depends on a widget model.
- Headless clients (nbclient, papermill) never answer: nobody can click.

Messages from the extension, each with a ``request_id`` the reply repeats:
``{"action": "answer", "run_id", "question_id", "answer"}`` and
``{"action": "stop", "run_id"}``, ``{"action": "state", "run_id"}`` (the run's current
state and MIME bundle, as ``state`` and ``bundle``: a page reloaded while the run lives, or a
second tab, gets no display updates and draws the run, controls and all, from these; a run
that ended lately still answers with its final form), ``{"action": "exact", "run_id",
"question_id"}`` (a
waiting approval's exact arguments, which the reply carries as ``rows``: see
:mod:`.exact`; they travel only on this comm, never in an output, so nothing saved holds
them), and ``{"action": "trigger", "op": "cancel" | "approve", "trigger_id"}`` from a
triggers panel's controls. Each is read as its typed request (:mod:`.requests`, pydantic)
before anything acts on it; one that does not fit is refused in words. Replies are
``{"request_id", "ok", "message"}`` (plus ``rows`` for ``exact``).
The kernel asks the extension too (:mod:`.cells_channel`: ``{"cells": op, "request_id"}``,
:meth:`FrontendProbe.send_to_frontend`); the extension's ``{"action": "cells_reply",
"reply_to"}`` goes to the handler given to :meth:`FrontendProbe.on_reply`, unanswered.
A page reloaded while the kernel lives finds the same comm again through
``comm_info_request`` and says hello on it. Messages may arrive on a kernel
subshell thread; answering and stopping are thread-safe.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from agent_kernel.notebook.requests import Request

    R = TypeVar("R", bound=Request)

PROBE_TARGET = "agent_kernel.frontend_probe"
PROTOCOL = 1
_MAX_ANSWER = 20000
_ENDED_KEPT = 20


class LiveRun(Protocol):
    """What the channel needs of a run whose controls the extension draws."""

    run_id: str

    def answer(self, question_id: str, text: str) -> bool:
        """Hand a person's answer to the waiting run; False when it no longer waits."""

    def request_stop(self) -> bool:
        """Stop the run; False when it has already ended."""

    def exact_rows(self, question_id: str) -> list[dict[str, Any]] | None:
        """A waiting approval's exact arguments as marked rows; None once it no longer waits."""

    def bundle(self) -> Mapping[str, object]:
        """The run's MIME bundle now (its state, ``text/html``, ``text/plain``)."""


class FrontendProbe:
    """Finds out who is connected to this kernel and carries the extension's controls."""

    def __init__(self) -> None:
        self.answered = threading.Event()
        self.extension = False
        self.sent_at: float | None = None
        self._comm: Any = None
        self._runs: dict[str, LiveRun] = {}
        self._ended: dict[str, LiveRun] = {}
        """Runs ended lately: a reloaded page still gets their final form (``state``)."""
        self._actions: dict[str, Callable[[dict[str, Any]], tuple[bool, str]]] = {}
        """What each registered action does with a message: read it as its request, then
        carry it out (or say why not)."""
        self._lock = threading.Lock()
        self._reply_handler: Callable[[Mapping[str, object]], None] | None = None
        self.page: str | None = None
        """The page that said hello last: the kernel's own requests are addressed to it."""
        self._closed = False

    @property
    def connected(self) -> bool:
        """The probe comm is open (the kernel cannot tell a closed page: requests time out)."""
        return self._comm is not None and not self._closed

    def on_reply(self, handler: Callable[[Mapping[str, object]], None]) -> None:
        """Hand the extension's replies to the kernel's own requests to ``handler``."""
        self._reply_handler = handler

    def send_to_frontend(self, data: Mapping[str, object]) -> bool:
        """Send the extension a request of the kernel's, addressed to the page that said
        hello last (every page on the kernel gets it); False when there is no comm."""
        if not self.connected:
            return False
        try:
            self._comm.send({**data, "page": self.page} if self.page else dict(data))
        except Exception:
            return False
        return True

    def _on_close(self) -> None:
        self._closed = True
        self.answered.set()

    def send(self) -> None:
        """Open the probe comm (does nothing outside a kernel)."""
        try:
            from comm import create_comm

            self._comm = create_comm(target_name=PROBE_TARGET,
                                     data={"probe": True, "protocol": PROTOCOL})
            self._comm.on_close(lambda _msg: self._on_close())
            self._comm.on_msg(self._on_msg)
            self.sent_at = time.monotonic()
        except Exception:
            self._comm, self.sent_at = None, None

    async def result(self, wait: float = 1.0) -> bool:
        """True once a frontend answered; waits up to ``wait`` s after sending."""
        if self.sent_at is None:
            return False
        while not self.answered.is_set():
            if time.monotonic() - self.sent_at >= wait:
                return False
            await asyncio.sleep(0.02)
        return True

    # -- the extension's channel ------------------------------------------------
    def add_run(self, run: LiveRun) -> None:
        """A run whose controls the extension draws: its answers come through here."""
        with self._lock:
            self._runs[run.run_id] = run

    def drop_run(self, run_id: str) -> None:
        """The run ended: answers for it are refused from now on."""
        with self._lock:
            run = self._runs.pop(run_id, None)
            if run is not None:
                self._ended[run_id] = run
                while len(self._ended) > _ENDED_KEPT:
                    self._ended.pop(next(iter(self._ended)))

    def on_action(self, action: str, kind: type[R], handler: Callable[[R], tuple[bool, str]]
                  ) -> None:
        """Let ``handler`` carry out the extension's ``action`` messages (e.g. ``trigger``),
        each read as a ``kind`` request first (one that does not fit is refused in words)."""
        from agent_kernel.notebook.requests import read

        def carry_out(data: dict[str, Any]) -> tuple[bool, str]:
            request = read(kind, data)
            return (False, request) if isinstance(request, str) else handler(request)

        self._actions[action] = carry_out

    def _on_msg(self, msg: dict[str, Any]) -> None:
        data = (msg.get("content") or {}).get("data")
        if not isinstance(data, dict):
            return
        action = data.get("action")
        if action == "hello":
            page = data.get("page")
            self.page = page if isinstance(page, str) else None
            self.extension = True
            self.answered.set()
            return
        if action == "cells_reply":
            if self._reply_handler is not None:
                self._reply_handler(data)
            return
        request_id = data.get("request_id")
        reply: dict[str, object]
        if action == "exact":
            reply = self.exact(data)
        elif action == "state":
            reply = self.state(data)
        else:
            ok, message = self.handle(data)
            reply = {"ok": ok, "message": message}
        if isinstance(request_id, (str, int)) and self._comm is not None:
            self._comm.send({"request_id": request_id, **reply})

    def exact(self, data: dict[str, Any]) -> dict[str, Any]:
        """The reply to ``exact``: a waiting approval's arguments as the tool will get them."""
        from agent_kernel.notebook.requests import ExactRequest, read

        run = self._live_run(data)
        if isinstance(run, str):
            return {"ok": False, "message": run}
        request = read(ExactRequest, data)
        rows = None if isinstance(request, str) else run.exact_rows(request.question_id)
        if rows is None:
            return {"ok": False, "message": ExactRequest.refusal}
        return {"ok": True, "message": "", "rows": rows}

    def state(self, data: dict[str, Any]) -> dict[str, object]:
        """The reply to ``state``: a live (or lately ended) run's state and MIME bundle."""
        from agent_kernel.core.mime_types import RUN_MIME
        from agent_kernel.notebook.requests import NOT_LIVE, StateRequest, read

        request = read(StateRequest, data)
        if isinstance(request, str):
            return {"ok": False, "message": request}
        with self._lock:
            run = self._runs.get(request.run_id) or self._ended.get(request.run_id)
        if run is None:
            return {"ok": False, "message": NOT_LIVE}
        bundle = run.bundle()
        return {"ok": True, "message": "", "state": bundle.get(RUN_MIME), "bundle": bundle}

    def _live_run(self, data: dict[str, Any]) -> LiveRun | str:
        """The live run a request names, or the words saying it names none."""
        from agent_kernel.notebook.requests import NOT_LIVE, RunRequest, read

        request = read(RunRequest, data)
        if isinstance(request, str):
            return request
        with self._lock:
            run = self._runs.get(request.run_id)
        return NOT_LIVE if run is None else run

    def handle(self, data: dict[str, Any]) -> tuple[bool, str]:
        """Carry out one message of the extension; (done, what to tell the person)."""
        action = data.get("action")
        if isinstance(action, str) and (handler := self._actions.get(action)) is not None:
            return handler(data)
        if action not in ("answer", "stop"):
            return False, f"unknown action {str(action)[:40]!r}"
        from agent_kernel.engine.questions import AnswerRefused
        from agent_kernel.notebook.requests import AnswerRequest, read

        run = self._live_run(data)
        if isinstance(run, str):
            return False, run
        if action == "stop":
            return (True, "") if run.request_stop() else (False, "The run has already ended.")
        request = read(AnswerRequest, data)
        if isinstance(request, str):
            return False, request
        if len(request.answer) > _MAX_ANSWER:
            return False, f"That answer is too long (more than {_MAX_ANSWER} characters)."
        try:
            taken = run.answer(request.question_id, request.answer)
        except AnswerRefused as exc:  # not one of the question's options: it goes on waiting
            return False, str(exc)
        if not taken:
            return False, "This question is no longer waiting."
        return True, ""
