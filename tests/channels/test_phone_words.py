"""What a phone shows of an approval: the exact arguments and, for files/ on an object
store, where the write goes (the notebook's card says the same ``where``)."""

from __future__ import annotations

from agent_kernel.channels.relay import words
from agent_kernel.core.events import Question


def approval(details: dict[str, object]) -> Question:
    return Question("run-1", "q-1", "Run write_file?", ["approve", "deny"], 60.0, None,
                    kind="approval", details={"tool": "write_file", **details})


def test_a_phone_approval_says_where_a_stored_write_goes() -> None:
    where = "files/notes.txt, stored at s3://team/a/notes.txt (object store on 127.0.0.1:9000)"
    said = words(approval({"arguments": {"path": "notes.txt", "content": "hi"},
                           "where": where}), "telegram", "")
    assert '"path": "notes.txt"' in said and f"Where: {where}" in said


def test_where_is_shown_with_its_hidden_characters_written_out() -> None:
    said = words(approval({"arguments": {"path": "a.txt"},
                           "where": "files/a\u202etxt.exe"}), "telegram", "")
    assert "\u202e" not in said and "<U+202E>" in said


def test_a_local_write_has_no_where_line() -> None:
    said = words(approval({"arguments": {"path": "notes.txt"}}), "email", "", code="1234")
    assert "Where:" not in said
