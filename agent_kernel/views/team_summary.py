"""A short static summary of a team's task tree: one line per task, as text and HTML.

Each task below the prompt shows its role, status, priority and the first line
of its result (or its error), indented by depth. The notebook shows it below
the Teller's run output; the CLI prints it after the transcript.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_kernel.views.safe_html import esc

if TYPE_CHECKING:
    from agent_kernel.team.queue import TaskNode, TaskTree

LINE_CHARS = 120


def _first_line(text: str | None) -> str:
    line = next((part.strip() for part in (text or "").splitlines() if part.strip()), "")
    return line if len(line) <= LINE_CHARS else line[:LINE_CHARS - 1] + "…"


def _rows(tree: TaskTree, depth: int = 0) -> list[tuple[int, TaskNode]]:
    rows: list[tuple[int, TaskNode]] = []
    for child in tree.get("children", []):
        rows.append((depth, child))
        rows.extend(_rows(child, depth + 1))
    return rows


def _said(task: TaskNode) -> str:
    return _first_line(task.get("result")) or _first_line(task.get("error")) or "(no result)"


def tree_text(tree: TaskTree) -> str:
    """The tree as plain text: ``role · status · priority N: first line of the result``."""
    rows = _rows(tree)
    if not rows:
        return "Tasks: none (the Teller answered by itself)."
    lines = [f"Tasks ({len(rows)}):"]
    for depth, task in rows:
        lines.append(f"{'  ' * (depth + 1)}- {task['role']} · {task['status']} · priority "
                     f"{task.get('priority', '')}: {_said(task)}")
    return "\n".join(lines)


def tree_html(tree: TaskTree) -> str:
    """The tree as a small static HTML list (no widget, no script)."""
    rows = _rows(tree)
    if not rows:
        return ('<div class="agent-kernel-team-tree"><b>Tasks:</b> none (the Teller '
                'answered by itself).</div>')
    items = []
    for depth, task in rows:
        items.append(
            f'<li style="margin-left:{depth * 1.5}em" data-role="{esc(task["role"])}" '
            f'data-status="{esc(task["status"])}"><b>{esc(task["role"])}</b> · '
            f'{esc(task["status"])} · priority {esc(str(task.get("priority", "")))}: '
            f'{esc(_said(task))}</li>')
    return (f'<div class="agent-kernel-team-tree"><b>Tasks ({len(rows)}):</b>'
            f'<ul style="list-style:none;padding-left:0;margin:0.2em 0">{"".join(items)}'
            f'</ul></div>')


def tree_bundle(tree: TaskTree) -> dict[str, str]:
    """The MIME bundle shown below the run output: ``text/html`` and ``text/plain``."""
    return {"text/html": tree_html(tree), "text/plain": tree_text(tree)}
