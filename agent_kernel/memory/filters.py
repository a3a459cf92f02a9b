"""Validation and SQL ``where`` clauses for memory queries: model text never reaches SQL raw.

LanceDB filters are SQL strings. Everything a model sends that ends up in a
filter is first turned into a Python value and then written back out by this
module in a fixed shape: times are parsed as ISO 8601 and re-formatted,
ids must match a strict pattern, tags must use a small alphabet and are
quoted with doubled single quotes anyway. A string that fails is a
``ValueError`` with a message the model can act on, never a query.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime, timezone

MAX_CHARS = 2000
MAX_TAGS = 20
MAX_TAG_CHARS = 64
_TAG = re.compile(r"^[\w\-.:/+# ]{1,64}$", re.UNICODE)
_MEMORY_ID = re.compile(r"^mem_[A-Za-z0-9_]{1,80}$")
_AGENT_ID = re.compile(r"^[\w\-.:@]{1,128}$", re.UNICODE)


def quote(value: str) -> str:
    """A SQL string literal for ``value`` (single quotes doubled)."""
    return "'" + value.replace("'", "''") + "'"


def parse_time(value: str | datetime | None, name: str) -> datetime | None:
    """An aware UTC datetime from an ISO 8601 string (naive means UTC), or None."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, datetime):
        parsed = value
    else:
        text = value.strip()
        if len(text) > 40:
            raise ValueError(f"{name} must be an ISO 8601 time like 2026-01-31T10:00:00Z, "
                             f"got {text[:40]!r}...")
        try:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise ValueError(f"{name} must be an ISO 8601 time like 2026-01-31T10:00:00Z, "
                             f"got {text!r}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc)


def sql_time(moment: datetime) -> str:
    """A SQL timestamp literal for an aware datetime (written by us, never by the model)."""
    return "TIMESTAMP '" + moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f") + "'"


def check_content(content: str, limit: int = MAX_CHARS) -> str:
    """The memory text, or a clear error when it is empty or too long."""
    if not isinstance(content, str) or not content.strip():
        raise ValueError("content cannot be empty")
    if len(content) > limit:
        raise ValueError(f"content exceeds {limit} characters (got {len(content)})")
    return content


def check_tags(tags: Iterable[str] | None) -> list[str]:
    """Tags cleaned of surrounding spaces and '#', deduplicated; a clear error otherwise."""
    cleaned: list[str] = []
    for raw in tags or []:
        if not isinstance(raw, str):
            raise ValueError(f"tags must be strings, got {raw!r}")
        tag = raw.strip().lstrip("#").strip()
        if not tag:
            continue
        if not _TAG.match(tag):
            raise ValueError(
                f"tag {raw[:80]!r} is not allowed: use at most {MAX_TAG_CHARS} letters, digits, "
                "spaces and - _ . : / + #")
        if tag not in cleaned:
            cleaned.append(tag)
    if len(cleaned) > MAX_TAGS:
        raise ValueError(f"at most {MAX_TAGS} tags per memory, got {len(cleaned)}")
    return cleaned


def check_memory_id(memory_id: str) -> str:
    """A memory id (``mem_...``), or a clear error."""
    if not isinstance(memory_id, str) or not _MEMORY_ID.match(memory_id.strip()):
        raise ValueError(f"not a memory id: {str(memory_id)[:80]!r} (ids look like "
                         "mem_20260210_173000_ab12cd)")
    return memory_id.strip()


def check_agent_id(agent_id: str) -> str:
    """An agent id usable in a filter, or a clear error."""
    if not isinstance(agent_id, str) or not _AGENT_ID.match(agent_id):
        raise ValueError(f"agent_id {str(agent_id)[:80]!r} may only contain letters, digits "
                         "and - _ . : @")
    return agent_id


def where(
    agent_id: str | None = None,
    *,
    after: datetime | None = None,
    before: datetime | None = None,
    tags: Iterable[str] | None = None,
    long_term: bool | None = None,
    time_column: str = "created_at",
) -> str | None:
    """A ``where`` clause from already-validated values (None when nothing filters)."""
    parts: list[str] = []
    if agent_id is not None:
        parts.append(f"agent_id = {quote(check_agent_id(agent_id))}")
    if after is not None:
        parts.append(f"{time_column} >= {sql_time(after)}")
    if before is not None:
        parts.append(f"{time_column} <= {sql_time(before)}")
    checked = check_tags(tags)
    if checked:
        parts.append("array_has_any(tags, [" + ", ".join(quote(t) for t in checked) + "])")
    if long_term is not None:
        parts.append(f"long_term = {'true' if long_term else 'false'}")
    return " AND ".join(parts) if parts else None
