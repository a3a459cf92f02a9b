"""The organiser in a real kernel on the demo model: a contact, a todo, a plan; the cell's
saved outputs say it in words, and the files are in the workspace's state folder."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.mark.kernel
def test_todos_contacts_and_a_plan_in_a_kernel(run_notebook: Any, output_text: Any) -> None:
    nb = run_notebook([
        "%load_ext agent_kernel",
        "%agent --wait add contact Alice tg:@alice",
        "%agent --wait add a todo: send Alice the sales report",
        "%agent --wait plan: load the sales data; chart it by month",
        "import agent_kernel.notebook.magics as m\n"
        "ws = m.current().agent.workspace.root\n"
        "print((ws / 'state' / 'TODO.WIP.md').read_text())\n"
        "print('CONTACTS', (ws / 'state' / 'contacts.json').exists())",
    ], timeout=120)
    assert "contacts_upsert: saved contact Alice" in output_text(nb.cells[1])
    added = output_text(nb.cells[2])
    assert "todo_update: added “send Alice the sales report” to the todo list · 1 open" in added
    planned = output_text(nb.cells[3])
    assert "plan_create: a plan of 2 steps" in planned
    assert "◐ Load the sales data" in planned and "☐ Chart it by month" in planned
    files = output_text(nb.cells[4])
    assert "- [ ] Created=" in files and "| send Alice (tg:@alice) the sales report" in files
    assert "CONTACTS True" in files
