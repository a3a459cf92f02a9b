"""What the pieces around the scheduler may ask of it: one Protocol, so imports run one way.

``make``, ``restore``, ``runner`` and ``panel`` each work on "a scheduler", but
importing :class:`~.scheduler.TriggerScheduler` for its type would tie them to
the module that imports them. They type against :class:`TriggerHost` instead
(this module imports only the plain data modules), and the scheduler, which
satisfies it, is the one module that imports them all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from agent_kernel.triggers.clock import Clock
from agent_kernel.triggers.model import Trigger
from agent_kernel.triggers.store import TriggerStore

Listener = Callable[[Trigger], None]


@dataclass
class Firing:
    """A trigger that fired: running, or queued behind a run still going."""

    run_id: str
    trigger_id: str
    due_at: datetime
    fired_at: datetime


class TriggerHost(Protocol):
    """The scheduler as making, restoring, running and showing triggers see it."""

    agent: Any
    clock: Clock
    namespace: dict[str, Any] | None
    missed: str
    max_active: int
    store: TriggerStore
    triggers: dict[str, Trigger]
    listeners: list[Listener]

    def active(self) -> list[Trigger]:
        """Triggers that will still fire."""
        ...

    def pending(self) -> list[Trigger]:
        """Triggers waiting for the person's approval."""
        ...

    def check_room(self) -> None:
        """Refuse a new trigger past the per-agent limit."""
        ...

    def add(self, trigger: Trigger, *, first_due: datetime | None = None) -> Trigger:
        """Register a validated trigger, save it and book its first run."""
        ...

    def book(self, trigger: Trigger, first_due: datetime | None) -> None:
        """Book the trigger's next run (or arm its condition)."""
        ...

    def fire(self, trigger: Trigger, due: datetime) -> Firing | None:
        """Start a run for ``trigger`` now, or queue it."""
        ...

    def cancel(self, trigger_id: str) -> bool:
        """Cancel a trigger; False when there is none by that id."""
        ...

    def approve(self, trigger_id: str) -> bool:
        """Approve a trigger that needs approval and arm it."""
        ...

    def record_approval(self, trigger: Trigger, run_id: str | None = None) -> None:
        """Record the person's approval of the trigger's condition, with its digest."""
        ...

    def record(self, kind: str, **fields: object) -> None:
        """Append a ledger record."""
        ...

    def changed(self, trigger: Trigger) -> None:
        """Tell the listeners (panels) that ``trigger`` changed."""
        ...
