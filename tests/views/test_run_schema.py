"""The run's saved form has one source: the pydantic models in ``views/run_record.py``.

The committed JSON Schema (``labextension/schema/run.v1.json``) is generated from them
and must match; the extension's TypeScript types (``labextension/src/state.ts``) are
parsed and compared with that schema, field by field and literal by literal; the words
the extension shares with the HTML fallback (``labextension/src/words.ts``,
``render.ts``) are compared with the Python ones; the fixture the browser test draws and
a kernel-made run with every kind of entry validate against the schema.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, get_args

import jsonschema
import pytest

from agent_kernel.core import statuses
from agent_kernel.core.events import (
    AgentActivity,
    ConsoleOutput,
    Notice,
    Question,
    QuestionAnswered,
    RunError,
    RunStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from agent_kernel.views import mime, run_html, run_record
from agent_kernel.views.run_record import SCHEMA_FILE, NotARun, read_run, schema_text

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "labextension" / "src"
FIXTURE = ROOT / "labextension" / "test" / "fixtures" / "run.json"
NOT_SAVED = {"IExactPart", "IExactRow"}
"""Interfaces of state.ts that are not the saved form (the comm's exact arguments)."""

Token = tuple[Any, ...]


def committed_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return schema


def test_the_committed_schema_is_the_models() -> None:
    assert SCHEMA_FILE == ROOT / "labextension" / "schema" / "run.v1.json"
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_text(), (
        "the run models changed: regenerate the schema with "
        "`python -m agent_kernel.views.run_record` and commit labextension/schema/run.v1.json")


def test_the_schema_writer_writes_what_the_test_compares(tmp_path: Path) -> None:
    out = tmp_path / "schema" / "run.v1.json"
    assert run_record.main([str(out)]) == 0
    assert out.read_text(encoding="utf-8") == schema_text()
    jsonschema.Draft202012Validator.check_schema(json.loads(out.read_text(encoding="utf-8")))


def test_the_fixture_validates_and_reads_back_byte_for_byte() -> None:
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(committed_schema()).validate(data)
    saved = read_run(data).saved()
    assert json.dumps(saved, ensure_ascii=False) == json.dumps(data, ensure_ascii=False)


def every_kind_of_run() -> tuple[dict[str, Any], dict[str, Any]]:
    """A kernel-made run holding every kind of entry: live, with the extension drawing it
    (a question open), then ended by an error."""
    t = mime.Transcript()
    t.controls = "extension"
    for event in [
        RunStarted("run_1", prompt="hi", model="demo", agent_id="a"),
        TextDelta("run_1", "Looking."),
        ToolCallStarted("run_1", "call_1", "bash", {"cmd": "ls"}),
        Question("run_1", "q_1", "Run `ls`?", ["Approve", "Deny"], 60.0, "Deny",
                 kind="approval", details={"tool": "bash", "arguments": {"cmd": "ls"}}),
        QuestionAnswered("run_1", "q_1", "Approve", "user"),
        ToolCallFinished("run_1", "call_1", "bash", {"cmd": "ls"}, {"stdout": "a\n",
                         "exit_code": 0}, True, None, 4),
        ConsoleOutput("run_1", "printed"),
        Notice("run_1", "retrying", level="warning"),
        AgentActivity("run_1", agent_id="worker-1", role="worker", task_id="task_1",
                      parent_task_id=None, prompt="research",
                      inner=RunStarted("run_2", prompt="research", model="demo",
                                       agent_id="worker-1")),
        Question("run_1", "q_2", "Tea?", ["tea", "coffee"], 60.0, None),
    ]:
        t.feed(event)
    live = t.state()
    t.feed(RunError("run_1", "boom"))
    return live, t.state()


def test_a_kernel_made_run_validates_against_the_schema() -> None:
    live, ended = every_kind_of_run()
    assert {e["kind"] for e in live["entries"] + ended["entries"]} == {
        "text", "tool", "question", "console", "notice", "agent", "error"}
    assert live["status"] == "running" and live["controls"] == "extension"
    assert isinstance(live["entries"][-1]["seconds_left"], int)  # the open question
    assert ended["status"] == "failed" and "controls" not in ended
    assert "seconds_left" not in ended["entries"][-2]
    for state in (live, ended):
        jsonschema.Draft202012Validator(committed_schema()).validate(state)
        assert read_run(state).saved() == state


def test_a_saved_run_without_its_live_fields_leaves_them_out() -> None:
    state = mime.Transcript(run_id="run_1", prompt="hello", model="demo").state()
    assert "controls" not in state
    assert "controls" not in committed_schema()["required"]


@pytest.mark.parametrize(("change", "words"), [
    (lambda s: s.update(version=2), "version: Input should be 1"),
    (lambda s: s.update(status="fine"), "status: Input should be 'running', 'done'"),
    (lambda s: s["entries"].append({"kind": "poem", "text": "x"}), "entries.0: Input tag "
                                                                   "'poem' found"),
    (lambda s: s.pop("run_id"), "run_id: Field required"),
])
def test_a_run_that_is_not_the_saved_form_is_refused_in_words(change: Any, words: str) -> None:
    state = mime.Transcript(run_id="run_1", prompt="hello", model="demo").state()
    change(state)
    with pytest.raises(NotARun) as caught:
        read_run(state)
    assert str(caught.value).startswith("not a saved agent-kernel run (version 1): ")
    assert words in str(caught.value)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(committed_schema()).validate(state)


# -- the TypeScript types against the schema --------------------------------------------

def _split_union(text: str) -> list[str]:
    """Top-level ``|`` parts of a TypeScript type (braces and brackets kept whole)."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += char in "{[(" and 1 or 0
        depth -= char in "}])" and 1 or 0
        if char == "|" and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    parts.append(current.strip())
    return [p for p in parts if p]


def ts_declarations() -> tuple[dict[str, dict[str, tuple[str, bool]]], dict[str, str]]:
    """state.ts's interfaces (field: (type, optional)) and type aliases (name: type)."""
    source = re.sub(r"/\*\*.*?\*/", "", (SRC / "state.ts").read_text(encoding="utf-8"),
                    flags=re.S)
    interfaces: dict[str, dict[str, tuple[str, bool]]] = {}
    for name, body in re.findall(r"export interface (\w+) \{(.*?)\n\}", source, flags=re.S):
        fields = {}
        for field, optional, kind in re.findall(r"^\s+(\w+)(\??): (.+?);$", body, flags=re.M):
            fields[field] = (kind, optional == "?")
        interfaces[name] = fields
    aliases = {name: " ".join(kind.split())
               for name, kind in re.findall(r"export type (\w+) =(.*?);", source, flags=re.S)}
    return interfaces, aliases


def ts_tokens(kind: str, aliases: dict[str, str]) -> frozenset[Token]:
    tokens: set[Token] = set()
    for part in _split_union(kind):
        if part.startswith("'"):
            tokens.add(("literal", part.strip("'")))
        elif part in ("string", "number", "boolean", "null"):
            tokens.add((part,))
        elif part == "unknown":
            tokens.add(("any",))
        elif part.endswith("[]"):
            tokens.add(("array", ts_tokens(part[:-2], aliases)))
        elif part.startswith("{ [key: string]"):
            tokens.add(("object",))
        elif part in aliases:
            tokens |= ts_tokens(aliases[part], aliases)
        elif re.fullmatch(r"I[A-Z]\w+", part):
            tokens.add(("ref", part[1:]))
        else:
            raise AssertionError(f"state.ts: a type this test cannot read: {part!r}")
    return frozenset(tokens)


def schema_tokens(prop: dict[str, Any], defs: dict[str, Any]) -> frozenset[Token]:
    tokens: set[Token] = set()
    if "$ref" in prop:
        name = prop["$ref"].rsplit("/", 1)[-1]
        return frozenset({("any",)} if name == "JsonValue" else {("ref", name)})
    for key in ("anyOf", "oneOf"):
        for option in prop.get(key, []):
            tokens |= schema_tokens(option, defs)
    if "const" in prop:
        value = prop["const"]
        tokens.add(("literal", value) if isinstance(value, str) else ("number",))
    elif "enum" in prop:
        tokens |= {("literal", value) for value in prop["enum"]}
    elif prop.get("type") == "array":
        tokens.add(("array", schema_tokens(prop["items"], defs)))
    elif prop.get("type") == "object":
        tokens.add(("object",))
    elif prop.get("type") in ("integer", "number"):
        tokens.add(("number",))
    elif prop.get("type") in ("string", "boolean", "null"):
        tokens.add((prop["type"],))
    return frozenset(tokens)


def test_every_saved_interface_of_state_ts_is_a_schema_definition() -> None:
    interfaces, _aliases = ts_declarations()
    schema = committed_schema()
    defs = {name for name in schema["$defs"] if name != "JsonValue"} | {"RunState"}
    assert {name[1:] for name in interfaces if name not in NOT_SAVED} == defs


def test_the_typescript_fields_and_literals_are_the_schemas() -> None:
    interfaces, aliases = ts_declarations()
    schema = committed_schema()
    defs = {**schema["$defs"], "RunState": schema}
    for name, fields in interfaces.items():
        if name in NOT_SAVED:
            continue
        model = defs[name[1:]]
        assert list(fields) == list(model["properties"]), name  # same names, saved order
        for field, (kind, optional) in fields.items():
            assert optional == (field not in model["required"]), (name, field)
            assert ts_tokens(kind, aliases) == schema_tokens(
                model["properties"][field], defs), (name, field, kind)


def test_the_typescript_check_sees_a_difference() -> None:
    _interfaces, aliases = ts_declarations()
    defs = committed_schema()["$defs"]
    state = defs["ToolEntry"]["properties"]["state"]
    assert ts_tokens("'running' | 'waiting' | 'ok'", aliases) != schema_tokens(state, defs)
    assert ts_tokens("RunStatus", aliases) == schema_tokens(
        defs["AgentEntry"]["properties"]["status"], defs)


# -- the words the extension shares with the HTML fallback ------------------------------

def ts_object(source: str, name: str) -> dict[str, str]:
    body = re.search(rf"const {name}\b[^=]*= \{{(.*?)\}};?", source, flags=re.S)
    assert body is not None, name
    return dict(re.findall(r"(\w+): '([^']*)'", body.group(1)))


def test_the_extension_words_statuses_as_the_fallback_does() -> None:
    words = (SRC / "words.ts").read_text(encoding="utf-8")
    assert ts_object(words, "STATUS_TEXT") == statuses.RUN_STATUS_WORDS
    assert set(statuses.RUN_STATUS_WORDS) == set(statuses.RUN_STATUSES)
    for name, value in (("APPROVE", mime.APPROVE), ("DENY", mime.DENY),
                        ("ALWAYS", mime.ALWAYS)):
        assert f"export const {name} = '{value}';" in words
    render = (SRC / "render.ts").read_text(encoding="utf-8")
    assert ts_object(render, "MARKS") == run_html.MARKS
    assert set(run_html.MARKS) == set(get_args(statuses.ToolState))


def test_the_saved_json_types_name_the_models_fields() -> None:
    """The TypedDicts the HTML fallback reads (``RunData`` and its parts) have the keys of
    the models they mirror, in the same order, each required unless the model leaves it
    out of the dump until set."""
    from agent_kernel.views import run_record as rr

    pairs = [(rr.RunData, rr.RunState), (rr.UsageData, rr.Usage), (rr.LoadingData, rr.Loading),
             (rr.LedgerLineData, rr.LedgerLine), (rr.TextData, rr.TextEntry),
             (rr.QuestionData, rr.QuestionEntry), (rr.ToolData, rr.ToolEntry),
             (rr.NoticeData, rr.NoticeEntry), (rr.ConsoleData, rr.ConsoleEntry),
             (rr.ErrorData, rr.ErrorEntry), (rr.AgentData, rr.AgentEntry)]
    for data, model in pairs:
        assert list(data.__annotations__) == list(model.model_fields), data.__name__
        optional = {name for name, f in model.model_fields.items() if not f.is_required()}
        assert set(data.__optional_keys__) == optional, data.__name__
