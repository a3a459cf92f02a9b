"""Reading the ISO 8601 times the ledger, the triggers and the saved runs write.

Every record stamps its time as ISO 8601 with a trailing ``Z``, which
Python 3.10's ``datetime.fromisoformat`` cannot read; :func:`parse_iso` is the
one reader, so every view and store reads the same text the same way.
"""

from __future__ import annotations

from datetime import datetime


def parse_iso(text: str | None) -> datetime | None:
    """Read an ISO 8601 time; a time without an offset is local time; None for none.

    Raises ValueError for text that is not an ISO 8601 time.
    """
    if not text:
        return None
    moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.astimezone()
