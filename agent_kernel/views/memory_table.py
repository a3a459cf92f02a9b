"""Memories as a short list: HTML in a notebook, text in a terminal (``%agent_memory`` and
``python -m agent_kernel memory``). Every value is escaped (:mod:`.safe_html`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agent_kernel.views.safe_html import esc


def local_time(value: object) -> str:
    """An ISO time as local ``2026-11-23 17:19 CET``; anything else as it is."""
    from agent_kernel.core.times import parse_iso

    try:
        moment = parse_iso(str(value))
    except ValueError:
        moment = None
    return moment.astimezone().strftime("%Y-%m-%d %H:%M %Z") if moment else str(value)


def memory_line(row: Mapping[str, object]) -> str:
    """The quiet line under a memory's text: its local date, tags, and kind."""
    parts = [local_time(row["timestamp"])] if row.get("timestamp") else []
    tags = row.get("tags")
    if isinstance(tags, list) and tags:
        parts.append("tags: " + ", ".join(str(t) for t in tags))
    if row.get("long_term"):
        parts.append("long-term")
    return " · ".join(parts)


def secondary(row: Mapping[str, object]) -> str:
    """What a person rarely needs (to forget one, to see why it matched): id and score."""
    parts = [str(row["memory_id"])] if row.get("memory_id") else []
    if isinstance(row.get("score"), float):
        parts.append(f"match {row['score']:.2f}")
    return " · ".join(parts)


def is_memories(records: Sequence[Mapping[str, object]]) -> bool:
    """Records of the memory store (``recall``'s): each has its text and its id."""
    return bool(records) and all("content" in r and "memory_id" in r for r in records)


_QUIET = "color:var(--jp-ui-font-color2,#4a4a4a);font-size:12px"


def memory_list_html(rows: Sequence[Mapping[str, object]]) -> str:
    """The memories as a short list (text, then its date and tags), ids and scores folded
    under "ids and scores": a ``recall`` card's body and ``%agent_memory``'s list."""
    items = "".join(
        f"<li style='margin:0 0 6px'><div style='white-space:pre-wrap'>"
        f"{esc(row.get('content', ''))}</div>"
        f"<div class='ak-memory-line' style='{_QUIET}'>{esc(memory_line(row))}</div></li>"
        for row in rows)
    listed = (f"<ol style='margin:4px 0;padding-left:1.8em'>{items}</ol>" if rows
              else "<p><em>none</em></p>")
    ids = "".join(f"<li>{esc(secondary(row))}</li>" for row in rows if secondary(row))
    folded = (f"<details style='{_QUIET}'><summary>ids and scores</summary>"
              f"<ol style='margin:2px 0;padding-left:1.8em'>{ids}</ol></details>"
              if ids else "")
    return listed + folded


class MemoryTable:
    """Memories as a short list (text, then date and tags), in a notebook and elsewhere.

    The text leads; its local date with the zone, its tags and whether it is long-term
    follow in a quiet line. Ids and match scores are secondary: folded under "ids and
    scores" in HTML (``%agent_memory forget`` takes an id), at the end of the quiet line
    in text."""

    def __init__(self, rows: Sequence[Mapping[str, object]], title: str) -> None:
        self.rows = rows
        self.title = title

    def __repr__(self) -> str:
        if not self.rows:
            return f"{self.title}: none."
        lines = [f"{self.title}:"]
        for n, row in enumerate(self.rows, 1):
            text = str(row.get("content", "")).replace("\n", " ")
            lines.append(f"  {n}. {text[:119] + '…' if len(text) > 120 else text}")
            quiet = " · ".join(p for p in (memory_line(row), secondary(row)) if p)
            if quiet:
                lines.append(f"     {quiet}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return (f"<div class='agent-kernel-memory' style='font-size:13px;line-height:1.45'>"
                f"<strong>{esc(self.title)}</strong>{memory_list_html(self.rows)}</div>")
