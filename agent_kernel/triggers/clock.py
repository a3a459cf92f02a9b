"""Clocks: the scheduler asks one callable for "now", so tests can move time by hand.

The ``schedule`` library reads ``datetime.datetime.now()`` (naive local time)
on its own. :class:`ManualClock` both answers the scheduler and, while
:meth:`ManualClock.patch_schedule` is active, stands in for that call inside
``schedule``, so jobs, due times and cooldowns all see the same time. The
real clock is :func:`system_clock`.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import types
from collections.abc import Callable, Iterator

Clock = Callable[[], _dt.datetime]


def system_clock() -> _dt.datetime:
    """The current time, timezone-aware, in UTC."""
    return _dt.datetime.now(_dt.timezone.utc)


def to_local_naive(moment: _dt.datetime) -> _dt.datetime:
    """An aware time as the naive local time ``schedule`` works in."""
    return moment.astimezone().replace(tzinfo=None)


def from_local_naive(moment: _dt.datetime) -> _dt.datetime:
    """A naive local time from ``schedule`` as an aware UTC time."""
    return moment.astimezone(_dt.timezone.utc)


class ManualClock:
    """A clock that only moves when told to; call it for the time."""

    def __init__(self, start: _dt.datetime | None = None) -> None:
        self.now = start or _dt.datetime(2026, 1, 5, 9, 0, tzinfo=_dt.timezone.utc)

    def __call__(self) -> _dt.datetime:
        return self.now

    def advance(self, seconds: float) -> _dt.datetime:
        """Move time forward by ``seconds`` and return the new time."""
        self.now += _dt.timedelta(seconds=seconds)
        return self.now

    @contextlib.contextmanager
    def patch_schedule(self) -> Iterator[ManualClock]:
        """Make the ``schedule`` library read this clock while the block runs."""
        import schedule

        clock = self

        class _DateTime(_dt.datetime):
            @classmethod
            def now(cls, tz: _dt.tzinfo | None = None) -> _dt.datetime:  # type: ignore[override]
                if tz is None:
                    return to_local_naive(clock.now)
                return clock.now.astimezone(tz)

        fake = types.SimpleNamespace(**{k: getattr(_dt, k) for k in dir(_dt)
                                        if not k.startswith("__")})
        fake.datetime = _DateTime
        saved = schedule.datetime
        schedule.datetime = fake  # type: ignore[assignment]
        try:
            yield self
        finally:
            schedule.datetime = saved
