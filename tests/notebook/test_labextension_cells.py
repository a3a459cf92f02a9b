"""The page's side of the cell tools (``labextension/src/cells.ts``), run in node.

The browser test (tests/browser/test_cells_lab.py) drives it in a real JupyterLab; these
checks compile ``cells.ts`` with the extension's own TypeScript and hand its
``NotebookCells`` a notebook of plain objects, to reach what the browser test does not:
a cell named by an id no cell has, an id of the wrong shape, two cells sharing one id
(a hand-edited file), an id that names the cell after an insert moved it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from extension_node import compiled, in_node

PROVENANCE = {"run_id": "run_1", "ledger_record": "rec_1", "action": "edited", "at": "now"}

SCRIPT = r"""
globalThis.window = { requestAnimationFrame: () => 0 };
globalThis.document = { createElement: () => ({ appendChild: (x) => x }) };
const { NotebookCells } = require(process.argv[1]);
function widget(id, source, type = 'code') {
  const meta = {};
  const model = {
    type, text: source, executionCount: null, outputs: { length: 0, get: () => null },
    sharedModel: { getId: () => id, getSource: () => model.text,
                   setSource: (text) => { model.text = text; }, transact: (f) => f() },
    getMetadata: (key) => meta[key], setMetadata: (key, value) => { meta[key] = value; },
  };
  return { model, isDisposed: false, addClass() {}, removeClass() {},
           node: { querySelector: () => null, appendChild: (x) => x } };
}
const widgets = [widget('a1', '%agent x'), widget('b2', '1/0'), widget('c3', '# hi', 'markdown')];
let made = 0;
const notebook = {
  widgets, modelContentChanged: { connect: () => true },
  model: { sharedModel: { insertCell(index, cell) {
    const w = widget(`new-${++made}`, cell.source, cell.cell_type);
    widgets.splice(index, 0, w);
    return w.model.sharedModel;
  } } },
};
const cells = new NotebookCells(notebook, {});
const requests = JSON.parse(process.argv[2]);
(async () => {
  const replies = [];
  for (const request of requests) {
    if (request.cells === 'duplicate') {
      widgets.push(widget(request.id, 'x = 1'));
      replies.push(null);
      continue;
    }
    const reply = await cells.handle(request);
    replies.push({ ...reply, sources: widgets.map((w) => w.model.text),
                   ids: widgets.map((w) => w.model.sharedModel.getId()) });
  }
  console.log(JSON.stringify(replies));
})();
"""


def page(requests: list[dict[str, Any]], tmp_path: Path) -> list[dict[str, Any]]:
    """``cells.ts``'s reply to each request in turn, with the notebook's sources and ids
    after it."""
    replies: list[dict[str, Any]] = in_node(SCRIPT, str(compiled("cells", tmp_path)),
                                            json.dumps(requests))
    return replies


def test_the_page_finds_a_cell_by_its_id_and_never_by_a_guess(tmp_path: Path) -> None:
    inserted = {**PROVENANCE, "action": "inserted"}
    read_b2, unknown, bad, insert, edit, gone, stale, below_gone = page([
        {"cells": "read", "cell_id": "b2", "count": 1, "full": True},
        {"cells": "read", "cell_id": "zz", "count": 1},
        {"cells": "read", "cell_id": "<img src=x>", "count": 1},
        {"cells": "insert", "below_cell_id": "a1", "kind": "code", "source": "y = 2",
         "provenance": inserted},
        # b2 is at 2 now: its id still names it (the index sent is the old, stale one)
        {"cells": "edit", "cell_id": "b2", "index": 1, "source": "1/1", "expected": "1/0",
         "provenance": PROVENANCE},
        {"cells": "edit", "cell_id": "zz", "index": 1, "source": "boom", "expected": "y = 2",
         "provenance": PROVENANCE},
        {"cells": "edit", "cell_id": "b2", "source": "2/2", "expected": "1/0",
         "provenance": PROVENANCE},
        {"cells": "insert", "below_cell_id": "zz", "kind": "code", "source": "z",
         "provenance": inserted},
    ], tmp_path)
    assert read_b2["ok"] and [(c["index"], c["id"], c["source"]) for c in read_b2["cells"]] \
        == [(1, "b2", "1/0")]
    assert unknown["ok"] and unknown["cells"] == [] and bad["cells"] == []
    assert insert["ok"] and (insert["index"], insert["id"]) == (1, "new-1")
    assert insert["ids"] == ["a1", "new-1", "b2", "c3"]
    assert edit["ok"] and edit["index"] == 2
    assert edit["sources"] == ["%agent x", "y = 2", "1/1", "# hi"]
    assert not gone["ok"] and "No cell in the notebook has that id" in gone["message"]
    assert not stale["ok"] and "changed after it was read" in stale["message"]
    assert not below_gone["ok"] and "The cell was not added" in below_gone["message"]
    assert below_gone["sources"] == gone["sources"] == edit["sources"]


def test_two_cells_with_one_id_are_refused_by_id(tmp_path: Path) -> None:
    _, read, edit, run, by_index = page([
        {"cells": "duplicate", "id": "b2"},
        {"cells": "read", "cell_id": "b2", "count": 1},
        {"cells": "edit", "cell_id": "b2", "source": "x", "expected": "1/0",
         "provenance": PROVENANCE},
        {"cells": "run", "cell_id": "b2", "expected": "1/0"},
        {"cells": "read", "start": 3, "count": 1},
    ], tmp_path)
    for reply in (read, edit, run):
        assert not reply["ok"] and "2 cells share that id (cells 1, 3)" in reply["message"]
    assert "Nothing was edited" in edit["message"] and "Nothing was run" in run["message"]
    assert edit["sources"][1] == "1/0"
    assert by_index["ok"] and by_index["cells"][0]["source"] == "x = 1"
