"""The run's saved form (schema version 1) as typed records: one pydantic model per entry.

A run's cell output keeps its state as ``application/vnd.agent-kernel.run.v1+json``
(``docs/notebook.md``, "The run's saved form"). These models are that form:
``views/mime.py`` builds them rather than literal dicts, :func:`read_run` validates a
saved one read back from a notebook (or any other JSON) with them, and
:func:`run_schema` derives the JSON Schema the repository keeps in
``labextension/schema/run.v1.json``, against which a test checks the extension's
TypeScript types (``labextension/src/state.ts``) and the fixture it draws.

A transcript's entries are a tagged union on ``kind``; a field the form writes only
while the extension draws the live controls (``seconds_left``, ``controls``) is left
out of the dump until it is set (dump with ``exclude_unset``). Field order is the
saved order: saved notebooks stay byte for byte as they were.

``python -m agent_kernel.views.run_record [PATH]`` writes the schema file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict, cast

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from agent_kernel.core.statuses import NoticeLevel, RunStatus, SavedAnswerSource, ToolState
from agent_kernel.views.summaries import ResultKind

SCHEMA_ID = "https://agent-kernel.invalid/schema/run.v1.json"
EXTENSION = Path(__file__).resolve().parents[2] / "labextension"
SCHEMA_FILE = EXTENSION / "schema" / "run.v1.json"
"""Where the repository keeps the generated schema (in a checkout; a wheel has no copy)."""


class _Record(BaseModel):
    """A part of the saved form: no field beyond those named, in the saved order."""

    model_config = ConfigDict(extra="forbid")


class Usage(_Record):
    """Tokens the run's model calls used."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class Loading(_Record):
    """What the run waited to load (the model library), and for how long once loaded."""

    what: str
    seconds: float | None


class LedgerLine(_Record):
    """The ledger record a tool call left: its id, time and hash."""

    record_id: str
    timestamp: str | None
    hash: str | None


class TextEntry(_Record):
    """Answer text (Markdown)."""

    kind: Literal["text"]
    text: str


class QuestionEntry(_Record):
    """A question (``ask_user``) or an approval without a card, and how it ended."""

    kind: Literal["question"]
    question_id: str
    question: str
    options: list[str] | None
    default: str | None
    timeout: float
    asked_at: str | None
    approval: bool
    details: dict[str, JsonValue] | None
    answer: str | None
    source: SavedAnswerSource | None
    answered_at: str | None
    seconds_left: int | None = None
    """Only while the extension draws the controls: seconds left to answer."""


class ToolEntry(_Record):
    """One tool call as its card shows it."""

    kind: Literal["tool"]
    call_id: str
    tool: str
    arguments: JsonValue
    state: ToolState
    summary: str
    result: JsonValue
    result_kind: ResultKind | None
    error: str | None
    duration_ms: int | None
    ledger: LedgerLine | None
    approval: QuestionEntry | None


class NoticeEntry(_Record):
    """A notice from the run (a retry, a stop, a compaction)."""

    kind: Literal["notice"]
    level: NoticeLevel
    text: str


class ConsoleEntry(_Record):
    """What a tool printed for the person (``console_print``)."""

    kind: Literal["console"]
    text: str


class ErrorEntry(_Record):
    """The error that ended the run."""

    kind: Literal["error"]
    text: str


class AgentEntry(_Record):
    """A team agent's run (a Planner's, a Worker's), nested in the run that started it."""

    kind: Literal["agent"]
    agent_id: str
    role: str
    task_id: str
    prompt: str
    status: RunStatus
    elapsed_ms: int | None
    entries: list[Entry]


Entry = Annotated[
    AgentEntry | TextEntry | ToolEntry | QuestionEntry | NoticeEntry | ConsoleEntry | ErrorEntry,
    Field(discriminator="kind")]
"""One entry of a transcript, told apart by its ``kind``."""


class RunState(_Record):
    """One run's saved form: the ``application/vnd.agent-kernel.run.v1+json`` data."""

    model_config = ConfigDict(extra="forbid", title="agent-kernel run, version 1")

    version: Literal[1]
    run_id: str
    prompt: str
    model: str
    offline: bool
    status: RunStatus
    started_at: str | None
    elapsed_ms: int | None
    usage: Usage | None
    cost: float | None
    loading: Loading | None
    entries: list[Entry]
    controls: Literal["extension"] | None = None
    """Only while the run is live and the extension draws its controls."""
    stopped_by_person: bool | None = None
    """Only when a person stopped the run (Stop, ``%agent_stop``): it reads "stopped by you"."""
    queued: bool | None = None
    """Only while the run waits for the run before it (one conversation, one run at a time)."""

    def saved(self) -> RunData:
        """The JSON data the notebook keeps (fields set only while live left out)."""
        return cast(RunData, self.model_dump(mode="json", exclude_unset=True))


AgentEntry.model_rebuild()


# -- the same form as the JSON a view reads ---------------------------------------------
# The HTML and text fallbacks (``views/run_html.py``) draw the saved JSON itself, as a
# notebook keeps it, not the models: these TypedDicts are that JSON's shape, key for key
# the models' fields (a test in tests/views/test_run_record.py holds them together).

class UsageData(TypedDict):
    """:class:`Usage` as saved."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class LoadingData(TypedDict):
    """:class:`Loading` as saved."""

    what: str
    seconds: float | None


class LedgerLineData(TypedDict):
    """:class:`LedgerLine` as saved."""

    record_id: str
    timestamp: str | None
    hash: str | None


class TextData(TypedDict):
    """:class:`TextEntry` as saved."""

    kind: Literal["text"]
    text: str


class _QuestionFields(TypedDict):
    kind: Literal["question"]
    question_id: str
    question: str
    options: list[str] | None
    default: str | None
    timeout: float
    asked_at: str | None
    approval: bool
    details: dict[str, JsonValue] | None
    answer: str | None
    source: SavedAnswerSource | None
    answered_at: str | None


class QuestionData(_QuestionFields, total=False):
    """:class:`QuestionEntry` as saved (``seconds_left`` only while live)."""

    seconds_left: int | None


class ToolData(TypedDict):
    """:class:`ToolEntry` as saved."""

    kind: Literal["tool"]
    call_id: str
    tool: str
    arguments: JsonValue
    state: ToolState
    summary: str
    result: JsonValue
    result_kind: ResultKind | None
    error: str | None
    duration_ms: int | None
    ledger: LedgerLineData | None
    approval: QuestionData | None


class NoticeData(TypedDict):
    """:class:`NoticeEntry` as saved."""

    kind: Literal["notice"]
    level: NoticeLevel
    text: str


class ConsoleData(TypedDict):
    """:class:`ConsoleEntry` as saved."""

    kind: Literal["console"]
    text: str


class ErrorData(TypedDict):
    """:class:`ErrorEntry` as saved."""

    kind: Literal["error"]
    text: str


class AgentData(TypedDict):
    """:class:`AgentEntry` as saved."""

    kind: Literal["agent"]
    agent_id: str
    role: str
    task_id: str
    prompt: str
    status: RunStatus
    elapsed_ms: int | None
    entries: list[EntryData]


EntryData = (AgentData | TextData | ToolData | QuestionData | NoticeData | ConsoleData
             | ErrorData)
"""One saved entry, told apart by its ``kind`` (mypy narrows on it as pydantic does)."""


class _RunFields(TypedDict):
    version: Literal[1]
    run_id: str
    prompt: str
    model: str
    offline: bool
    status: RunStatus
    started_at: str | None
    elapsed_ms: int | None
    usage: UsageData | None
    cost: float | None
    loading: LoadingData | None
    entries: list[EntryData]


class RunData(_RunFields, total=False):
    """:class:`RunState` as saved: the ``application/vnd.agent-kernel.run.v1+json`` data."""

    controls: Literal["extension"] | None
    stopped_by_person: bool | None
    queued: bool | None


class NotARun(ValueError):
    """Data that is not a run's saved form this version can read."""


def read_run(data: object) -> RunState:
    """A run's saved form read back (from a notebook, the wire), checked field by field."""
    try:
        return RunState.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the run"
        raise NotARun(f"not a saved agent-kernel run (version 1): {where}: {first['msg']} "
                      f"({exc.error_count()} problem{'s' if exc.error_count() != 1 else ''} "
                      "in all)") from None


STOPPED_OUTCOME = "Not answered: the run was stopped"
"""How a question or approval reads when its run ended while it waited."""
STOPPED_CARD = {True: "not run: the run was stopped before you answered",
                False: "not answered: the run was stopped"}
"""The card's line of a call whose approval (True) or question (False) the run's end left
unanswered."""


def ended_waits(state: RunData) -> RunData:
    """``state`` as a person reads it once its run has ended: a question or approval still
    waiting is ``stopped`` (not answered: the run was stopped) and the card it gated did not
    run, so a saved notebook never reads "waiting for your approval" with nobody to ask.
    A run saved before ``stopped`` existed (its waits ``source: null``) reads the same."""
    if state["status"] == "running" and not _any_ended(state["entries"]):
        return state
    ended = cast(RunData, dict(state))
    over = state["status"] != "running"
    ended["entries"] = _ended_entries(state["entries"], over, over)
    return ended


def _any_ended(entries: list[EntryData]) -> bool:
    return any(e["kind"] == "agent" and (e["status"] != "running" or _any_ended(e["entries"]))
               for e in entries)


def _ended_entries(entries: list[EntryData], ended: bool, over: bool) -> list[EntryData]:
    """``entries`` of a run that has ``ended``, inside a whole run that is ``over``: a
    nested run's waits end with it or with the whole run, never with the run it sits in
    (a Worker still asking sits inside its Planner's finished run)."""
    out: list[EntryData] = []
    for entry in entries:
        if entry["kind"] == "agent":
            agent = cast(AgentData, dict(entry))
            agent["entries"] = _ended_entries(entry["entries"],
                                              over or entry["status"] != "running", over)
            out.append(agent)
        elif ended and entry["kind"] == "question" and entry["source"] is None:
            out.append(_stopped(entry))
        elif ended and entry["kind"] == "tool" and entry["approval"] is not None \
                and entry["approval"]["source"] is None:
            tool = cast(ToolData, dict(entry))
            tool["approval"] = _stopped(entry["approval"])
            if entry["state"] in ("waiting", "running"):  # it never ran, nor will
                words = STOPPED_CARD[entry["approval"]["approval"]]
                tool["state"], tool["summary"], tool["error"] = "failed", words, words
            out.append(tool)
        else:
            out.append(entry)
    return out


def _stopped(question: QuestionData) -> QuestionData:
    ended = cast(QuestionData, dict(question))
    ended["source"] = "stopped"
    ended.pop("seconds_left", None)
    return ended


def run_schema() -> dict[str, Any]:
    """The saved form's JSON Schema, as ``labextension/schema/run.v1.json`` keeps it."""
    schema = RunState.model_json_schema(mode="serialization")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID,
            **schema}


def schema_text() -> str:
    """The schema file's text (two-space indent, a final newline)."""
    return json.dumps(run_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the schema to PATH (default: the repository's ``labextension/schema``)."""
    args = sys.argv[1:] if argv is None else argv
    if not args and not (EXTENSION / "package.json").is_file():
        print("error: not a checkout of agent-kernel (no labextension/ beside the package): "
              "say where to write the schema", file=sys.stderr)
        return 2
    path = Path(args[0]) if args else SCHEMA_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(schema_text(), encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
