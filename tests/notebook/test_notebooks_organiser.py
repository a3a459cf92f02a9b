"""``notebooks/07-organiser.ipynb`` runs top to bottom in a real kernel, offline with the
demo model and a local mail server, and its answers mean what they say: Ana is a contact,
the todo that mentions her carries her address on disk, one todo is ticked off, the plan is
drawn as a checklist, and the message to Ana, which nobody can approve in a headless run,
is not sent: the local mailbox stays empty and the ledger has no ``message_sent``. Every
HTML output is escaped (a reply's Markdown is cleaned to an allow-list of tags), and the
notebook's fake mail password is nowhere but its one cell.
The committed notebook carries no outputs, as the others (Binder and a reader run it)."""

from __future__ import annotations

import html
import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import nbformat
import pytest
from kernel_runs import code_cells, run_reply, run_state

pytestmark = pytest.mark.kernel

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "07-organiser.ipynb"
PASSWORD = "not-a-real-password"
ANA = "email:ana@example.org"
SEND = "%agent send Ana a message: could you send me the workshop slides by Wednesday?"
MAILBOX = "await agent_kernel.notebook.magics.wait_all()"
LEDGER = ('STORY = {"contacts_upsert", "todo_update", "todo_list", "plan_create", '
          '"contacts_list",')
RAW = "<img src=x onerror=alert`1`> and <b>bold</b>"
HOSTILE = f"%agent add a todo: ask Ana about {RAW}"
TAGS = {"div", "details", "summary", "span", "b", "i", "em", "strong", "code", "pre", "p",
        "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td", "br", "a", "small",
        "h1", "h2", "h3", "h4", "blockquote", "hr", "section", "header", "footer",
        "style"}  # our own stylesheet; a model's "<style>" is escaped like any tag


def _tools(cell: Any) -> list[dict[str, Any]]:
    """The run's tool rows, without the find_tools search that brought a group in."""
    return [e for e in run_state(cell)["entries"]
            if e["kind"] == "tool" and e["tool"] != "find_tools"]


def _printed(cell: Any) -> str:
    return "".join(o.get("text", "") for o in cell.outputs)


def _pages(nb: Any) -> str:
    return "".join(o["data"].get("text/html", "") for c in nb.cells if c.cell_type == "code"
                   for o in c.outputs if "data" in o)


class _Markup(HTMLParser):
    """Every tag and attribute name an HTML output uses."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes.update(name for name, _ in attrs)


def _only_our_markup(page: str) -> None:
    markup = _Markup()
    markup.feed(page)
    assert markup.tags <= TAGS, markup.tags - TAGS
    assert not {a for a in markup.attributes if a.startswith("on")}, markup.attributes
    assert "<script" not in page.lower() and "javascript:" not in page.lower()


def _no_errors(nb: Any) -> None:
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            assert out.output_type != "error", (cell.source, out)
            assert out.get("name") != "stderr", (cell.source, out)


def _the_story_holds(nb: Any) -> None:
    """What a headless run shows, cell by cell (the test's run and the committed one)."""
    _no_errors(nb)
    cells = code_cells(nb)
    added = cells["%agent add contact Ana email:ana@example.org"]
    assert [e["tool"] for e in _tools(added)] == ["contacts_upsert"]
    assert "Saved Ana in your contacts." in run_reply(added)
    todo = run_reply(cells["%agent add a todo: ask Ana for the workshop slides"])
    assert f"“ask Ana ({ANA}) for the workshop slides”" in todo
    done = cells["%agent done: book the room"]
    assert _tools(done)[0]["state"] == "ok"
    assert "Ticked off “book the room for Thursday”" in run_reply(done)
    both = run_reply(cells["%agent show my todos, done ones too"])
    assert "1 open, 1 done." in both and "Done:\n- book the room for Thursday" in both
    assert f"ask Ana ({ANA}) for the workshop slides" in _printed(
        cells["import agent_kernel.notebook.magics"])
    planned = cells["%agent plan: collect the slides from Ana; copy the handouts; set up the room"]
    assert [e["tool"] for e in _tools(planned)] == ["plan_create"]
    page = "".join(o["data"].get("text/html", "") for o in planned.outputs if "data" in o)
    assert "class='ak-plan'" in page  # the checklist
    for mark, step, status in [("◐", "Collect the slides from Ana", "in progress"),
                               ("☐", "Copy the handouts", "to do"),
                               ("☐", "Set up the room", "to do")]:
        assert f"{mark}</span> {step} <span class='ak-muted'>({status})</span>" in page
    sent = cells[SEND]
    assert [(e["tool"], e["state"]) for e in _tools(sent)][0] == ("contacts_list", "ok")
    assert _tools(sent)[1]["tool"] == "contacts_send" and _tools(sent)[1]["state"] != "ok"
    assert "The message to Ana was not sent: no one could approve it" in run_reply(sent)
    assert _printed(cells[MAILBOX]) == ("The mailbox is empty: the message was not approved, "
                                        "so nothing was sent.\n")
    ledger = _printed(cells[LEDGER])
    assert "approval     contacts_send    denied" in ledger
    assert "message sent" not in ledger and "ledger verified: True" in ledger
    assert _printed(cells["mail_server.stop()"]) == "The local mail server is stopped.\n"
    _only_our_markup(_pages(nb))
    outputs = json.dumps([c.get("outputs", []) for c in nb.cells])
    assert PASSWORD not in outputs
    assert [c for c in nb.cells if PASSWORD in c.source] == [
        cells["import os"]]  # the one cell that sets the fake password, in the open


def test_the_committed_notebook_has_no_outputs_and_says_how_it_approves() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source
    words = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "stands in for your mail server" in words and "offline demo model" in words
    assert "you approve it first" in words and "never approved by a policy" in words
    text = "\n".join(c.source for c in nb.cells)
    assert "headless_approval" not in text and "--allow" not in text


def test_the_organiser_notebook_runs_offline_and_sends_nothing_unapproved(
        run_notebook: Any, tmp_path: Path) -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":  # run afresh, not the saved run's outputs
            cell.outputs, cell.execution_count = [], None
    nb.cells.append(nbformat.v4.new_code_cell(HOSTILE))
    workspace = tmp_path / "ws"
    out = run_notebook(nb, cwd=tmp_path, timeout=180,
                       env={"AGENT_KERNEL_WORKSPACE": str(workspace)})
    _the_story_holds(out)

    state = workspace / "state"
    contacts = json.loads((state / "contacts.json").read_text())
    rows = contacts["contacts"] if isinstance(contacts, dict) else contacts
    [ana] = [c for c in rows if c["contact_nickname"] == "Ana"]
    assert ana["contact_id"] == ANA and ana["status"] == "active"
    wip = (state / "TODO.WIP.md").read_text()
    assert f"| ask Ana ({ANA}) for the workshop slides" in wip and "open_count: 2" in wip
    assert "book the room" not in wip
    done = (state / "TODO.DONE.md").read_text()
    assert "done_count: 1" in done and "- [x] Created=" in done
    assert "| book the room for Thursday" in done
    ledger = [json.loads(line) for line in (workspace / "ledger.jsonl").read_text().splitlines()]
    assert not [r for r in ledger if r["kind"] == "message_sent"]
    assert [r.get("decision") for r in ledger if r["kind"] == "approval"
            and r.get("tool_name") == "contacts_send"] == ["denied"]

    hostile = out.cells[-1]
    page = "".join(o["data"].get("text/html", "") for o in hostile.outputs if "data" in o)
    assert "<img" not in page and "onerror=alert`1`&gt;" in page  # the image is text
    card = page[page.index("<details"):page.index("</details>")]
    assert "&lt;b&gt;bold&lt;/b&gt;" in card and "<b>bold" not in card  # the card escapes
    assert RAW in html.unescape(card)  # there, as text
    # The reply is Markdown made safe (an allow-list of tags, images held), not escaped.
    _only_our_markup(_pages(out))

    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert PASSWORD.encode() not in path.read_bytes(), path
