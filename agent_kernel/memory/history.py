"""The conversation history writer: every run's prompt and final reply, kept in the journal.

A :class:`HistoryWriter` listens to an agent's event bus. ``RunStarted``
gives the user's prompt, ``Reply`` (the ``reply`` tool) and ``RunFinished``
the assistant's replies; each
becomes a history record (role, text, createdAt, run and conversation ids).
Subscribers run on the event loop, so the writer only queues the record: one
daemon thread appends the queue to the history journal (:mod:`.journal`,
redacted, fsync'd) in batches. Nothing here imports lancedb or loads the
embedding model: a kernel that only chats never does; the first history read
brings the journal into the LanceDB table. :meth:`flush` waits for the queue
to drain, which the history tools call so a run can read its own prompt.
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from agent_kernel.core.events import Event, Reply, RunFinished, RunStarted
from agent_kernel.core.ledger import new_id

if TYPE_CHECKING:
    from agent_kernel.engine.registry import ToolHost
    from agent_kernel.memory.service import MemoryStore

log = logging.getLogger(__name__)


class HistoryWriter:
    """Records user prompts and final replies of one agent's runs."""

    def __init__(self, agent: ToolHost, store: MemoryStore) -> None:
        self.agent = agent
        self.store = store
        self.conversation_id = new_id("conv")
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._pending = 0
        self._idle = threading.Condition()
        self.errors: list[str] = []
        self._not_said: set[str] = set()

    def __call__(self, event: Event) -> None:
        """Bus subscriber: queue a record for the events that carry conversation text."""
        if isinstance(event, RunStarted):
            if not getattr(self.agent, "messages", None):
                self.conversation_id = new_id("conv")
            if event.run_id in self._not_said:
                self._not_said.discard(event.run_id)
            else:
                self._put("user", event.prompt, event.run_id, event.at)
        elif isinstance(event, Reply) and event.text:  # spec 000's reply tool: said to them
            self._put("assistant", event.text, event.run_id, event.at)
        elif isinstance(event, RunFinished):
            reply = getattr(event.result, "reply", "") or ""
            if reply:
                self._put("assistant", reply, event.run_id, event.at)

    def not_the_person(self, run_id: str) -> None:
        """The prompt of run ``run_id`` is not the person's words (the results a team hands
        its Teller): its reply is history, its prompt is not."""
        self._not_said.add(run_id)

    def _put(self, role: str, text: str, run_id: str, at: float) -> None:
        record = {"role": role, "text": text,
                  "createdAt": datetime.fromtimestamp(at, timezone.utc),
                  "run_id": run_id, "conversation_id": self.conversation_id,
                  "agent_id": self.agent.agent_id}
        with self._idle:
            self._pending += 1
        self._ensure_thread()
        self._queue.put(record)

    def _ensure_thread(self) -> None:
        if self._thread is not None:
            return
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, daemon=True,
                                                name="agent-kernel-history")
                self._thread.start()
                atexit.register(self.flush, 10.0)

    def _work(self) -> None:
        while True:
            first = self._queue.get()
            batch = [first] if first is not None else []
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    batch.append(item)
            try:
                self.store.add_history(batch)
            except Exception as exc:  # keep the run going; say why history is missing
                log.warning("history write failed: %s", exc)
                self.errors.append(str(exc))
            with self._idle:
                self._pending -= len(batch)
                self._idle.notify_all()

    def flush(self, timeout: float | None = 30.0) -> bool:
        """Wait until every queued record is written; False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending <= 0, timeout)
