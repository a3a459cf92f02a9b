"""``%agent_memory`` and the CLI show memories as a short list a person reads.

The text of each memory leads; its local date with the zone, its tags and whether
it is long-term follow in a quiet line; ids and match scores are secondary (folded
in HTML, at the end of the quiet line in text, where ``forget`` needs the id).
"""

from __future__ import annotations

import re
from datetime import datetime

from agent_kernel.views.memory_table import MemoryTable

ROWS = [
    {"memory_id": "mem_20261123_161900_ab12cd34", "agent_id": "agent",
     "content": "The standup is in the Oak room", "tags": ["work", "rooms"],
     "timestamp": "2026-11-23T16:19:00+00:00", "run_id": "run_x", "long_term": True,
     "path": "memory.md", "score": 0.016393},
    {"memory_id": "mem_20261124_090000_ef56ab78", "agent_id": "agent",
     "content": "<b>Deploys</b> happen on Tuesdays", "tags": [],
     "timestamp": "2026-11-24T09:00:00+00:00", "run_id": None, "long_term": False,
     "path": "memory/2026-11-24-deploys.md", "score": 0.5},
]
LOCAL = datetime.fromisoformat("2026-11-23T16:19:00+00:00").astimezone()
WHEN = LOCAL.strftime("%Y-%m-%d %H:%M %Z")


def test_the_html_is_a_list_of_texts_with_date_and_tags_and_ids_folded() -> None:
    html = MemoryTable(ROWS, "Newest memories")._repr_html_()
    shown, folded = html.split("<details", 1)
    assert "<ol" in shown and "The standup is in the Oak room" in shown
    assert f"{WHEN} · tags: work, rooms · long-term" in shown
    assert "&lt;b&gt;Deploys&lt;/b&gt;" in shown and "<b>Deploys" not in html  # escaped
    for storage in ("mem_", "0.02", "run_x", "memory.md", "score", "memory_id", "run_id",
                    "long_term", "0.016393"):
        assert storage not in shown, storage
    assert "<summary>ids and scores</summary>" in folded
    assert "mem_20261123_161900_ab12cd34 · match 0.02" in folded


def test_the_text_reads_as_numbered_lines_with_the_id_last() -> None:
    text = repr(MemoryTable(ROWS, "Newest memories"))
    lines = text.splitlines()
    assert lines[0] == "Newest memories:"
    assert lines[1] == "  1. The standup is in the Oak room"
    assert lines[2] == f"     {WHEN} · tags: work, rooms · long-term · " \
                       "mem_20261123_161900_ab12cd34 · match 0.02"
    assert lines[3] == "  2. <b>Deploys</b> happen on Tuesdays"
    assert not re.search(r"run_id|long_term|memory_id|0\.016393", text)
    assert repr(MemoryTable([], "Memories matching “x”")) == "Memories matching “x”: none."


def test_a_recall_card_is_the_same_short_list_not_a_table_of_storage_fields() -> None:
    """``recall``'s card in the run (the HTML fallback the saved notebook keeps)."""
    from agent_kernel.core.events import ToolCallFinished, ToolCallStarted
    from agent_kernel.views.mime import Transcript
    from agent_kernel.views.run_html import html_of

    t = Transcript(run_id="run_m")
    t.feed(ToolCallStarted("run_m", call_id="c1", tool_name="recall",
                           arguments={"query": "where is the standup?"}))
    result = {"memories": [{k: v for k, v in r.items() if k != "agent_id"} for r in ROWS],
              "count": 2}
    t.feed(ToolCallFinished("run_m", call_id="c1", tool_name="recall", arguments={},
                            result=result, success=True, error=None, duration_ms=3))
    html = html_of(t.state())
    card = html[html.index("<details class='agent-kernel-tool'"):]
    result = card[card.index("<div class='agent-kernel-memory'>"):]  # under the query
    shown, folded = result.split("<details style=", 1)
    assert "<table" not in result and "<ol" in shown
    assert "The standup is in the Oak room" in shown and f"{WHEN} · tags: work, rooms" in shown
    for storage in ("mem_", "run_x", "memory.md", "score", "memory_id", "run_id", "0.016393"):
        assert storage not in shown, storage
    assert "mem_20261123_161900_ab12cd34 · match 0.02" in folded
