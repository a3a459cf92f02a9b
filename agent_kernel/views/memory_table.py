"""Memories as a table: HTML in a notebook, text in a terminal (``%agent_memory`` and
``python -m agent_kernel memory``). Every value is escaped (:mod:`.safe_html`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agent_kernel.views.safe_html import esc

COLUMNS = ("timestamp", "content", "tags", "long_term", "score", "memory_id")


def local_time(value: object) -> str:
    """An ISO time as local ``2026-11-23 17:19 CET``; anything else as it is."""
    from agent_kernel.core.times import parse_iso

    try:
        moment = parse_iso(str(value))
    except ValueError:
        moment = None
    return moment.astimezone().strftime("%Y-%m-%d %H:%M %Z") if moment else str(value)


class MemoryTable:
    """Rows of memories shown as an HTML table in a notebook and as text elsewhere."""

    def __init__(self, rows: Sequence[Mapping[str, object]], title: str) -> None:
        self.rows = rows
        self.title = title
        self.columns = [c for c in COLUMNS if any(c in r for r in rows)] or list(COLUMNS[:3])

    @staticmethod
    def _cell(row: Mapping[str, object], column: str, width: int | None = None) -> str:
        value = row.get(column, "")
        if column == "tags":
            value = ", ".join(str(t) for t in value) if isinstance(value, list) else ""
        elif column == "long_term":
            value = "long-term" if value else "short-term"
        elif column == "score":
            value = f"{value:.2f}" if isinstance(value, float) else ""
        elif column == "timestamp" and value:
            value = local_time(value)
        text = str(value).replace("\n", " ")
        if width and len(text) > width:
            text = text[: width - 1] + "…"
        return text

    def __repr__(self) -> str:
        if not self.rows:
            return f"{self.title}: none."
        lines = [f"{self.title}:"]
        for row in self.rows:
            lines.append("  " + " | ".join(self._cell(row, c, 80) for c in self.columns))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        # Ids are secondary (quiet, last); numbers align right; text aligns left at the top.
        def style(column: str) -> str:
            align = "right" if column == "score" else "left"
            quiet = ";color:var(--jp-ui-font-color2,#4a4a4a);font-size:11px" if (
                column == "memory_id") else ""
            return f"text-align:{align};vertical-align:top{quiet}"

        head = "".join(f"<th style='{style(c)}'>{esc(c)}</th>" for c in self.columns)
        body = "".join(
            "<tr>" + "".join(f"<td style='{style(c)}'>{esc(self._cell(r, c))}</td>"
                             for c in self.columns) + "</tr>" for r in self.rows)
        empty = "" if self.rows else "<p><em>none</em></p>"
        return (f"<div class='agent-kernel-memory'><strong>{esc(self.title)}</strong>"
                f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{empty}"
                "</div>")
