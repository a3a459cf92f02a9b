"""Todos: spec 003's ``TODO.WIP.md`` and ``TODO.DONE.md`` in the state folder.

Both are Markdown a person can read and edit, in the reference implementation's shape::

    ---
    created_at: "2026-11-26 05:30"
    updated_at: "2026-11-26 06:10"
    open_count: 2
    ---

    # TODO Work In Progress (WIP)

    - [ ] Created=2026-11-26 06:10 | Call Alice (tg:@alice) about the report
    - [ ] Created=2026-11-26 05:30 | Renew the domain

``TODO.DONE.md`` has ``done_count``, the header ``# TODO Done`` and lines
``- [x] Created=..., Done=... | ...``. Newest first in both. Times are UTC,
``YYYY-MM-DD hh:mm``. A line a person wrote by hand without the metadata
(``- [ ] buy milk``) is kept as an item, and any other line is kept below the list:
rewriting a file never loses what was in it. Text is redacted before it is written.

A write is read, decided (the model may be asked in between), then written only if
neither file changed meanwhile; otherwise nothing is written and the caller is told.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TypedDict

from agent_kernel.core.safe_open import (
    LockTimeout,
    TooLarge,
    WorkspaceLock,
    read_capped,
    write_atomic,
)
from agent_kernel.core.workspace import Workspace
from agent_kernel.organiser import STATE_DIR
from agent_kernel.organiser.asking import OrganiserError
from agent_kernel.organiser.contacts import is_reference_id

HEADER_WIP = "# TODO Work In Progress (WIP)"
HEADER_DONE = "# TODO Done"
TIME_FORMAT = "%Y-%m-%d %H:%M"
MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_CONTENT = 2000
_TIME = r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}"
_META = r"^((?:(?:Created|Done)=[^,|]*)(?:,\s*(?:Created|Done)=[^,|]*)*)\s\|\s(.*)$"
_PAREN = r"\(([^()]*)\)"
_SELF_EN = r"(?i)\b(i|me|my|myself|we|us|our|ourselves)\b"
_ANNOTATED = r"[^()\s]+\s*\([^()]+\)"
"""Patterns as text, compiled on first use (``re``'s cache): importing stays cheap."""


def now_text() -> str:
    """The current time in the files' format (UTC, ``YYYY-MM-DD hh:mm``)."""
    return datetime.now(timezone.utc).strftime(TIME_FORMAT)


class EntryJson(TypedDict, total=False):
    """A todo as the tools return it (spec 003's ``entry`` / ``wip_items``)."""

    done: bool
    created_at: str
    done_at: str
    content: str


@dataclass
class Entry:
    """One todo line."""

    content: str
    created_at: str = ""
    done_at: str = ""
    done: bool = False

    def to_json(self) -> EntryJson:
        """The entry as spec 003 returns it (``done_at`` only when done)."""
        out: EntryJson = {"done": self.done, "created_at": self.created_at,
                          "content": self.content}
        if self.done:
            out["done_at"] = self.done_at
        return out

    def line(self) -> str:
        """The entry as a Markdown line of its file."""
        meta = [f"Created={self.created_at}"] if self.created_at else []
        if self.done and self.done_at:
            meta.append(f"Done={self.done_at}")
        box = "- [x] " if self.done else "- [ ] "
        content = " ".join(self.content.split())
        return box + (", ".join(meta) + " | " + content if meta else content)


@dataclass
class TodoFile:
    """One of the two files, parsed: its dates, entries (newest first) and other lines."""

    created_at: str = ""
    updated_at: str = ""
    entries: list[Entry] = field(default_factory=list)
    other_lines: list[str] = field(default_factory=list)


def parse_line(line: str) -> Entry | None:
    """A ``- [ ] ...`` or ``- [x] ...`` line as an entry, or None."""
    text = line.strip()
    if not text.startswith(("- [ ] ", "- [x] ", "- [X] ")):
        return None
    entry = Entry(content=text[5:].strip(), done=text[3] in "xX")
    rest = entry.content
    if match := re.match(_META, rest):
        for pair in match.group(1).split(","):
            key, _, value = pair.strip().partition("=")
            if re.fullmatch(_TIME, value.strip()):
                if key == "Created":
                    entry.created_at = value.strip()
                else:
                    entry.done_at = value.strip()
        entry.content = match.group(2).strip()
    return entry if entry.content else None


def parse(text: str, done: bool) -> TodoFile:
    """A file's text as a :class:`TodoFile` (a missing front matter is fine)."""
    out = TodoFile()
    lines = text.splitlines()
    if lines and lines[0].strip() == "---" and "---" in (x.strip() for x in lines[1:]):
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
        for raw in lines[1:end]:
            key, _, value = raw.partition(":")
            value = value.strip().strip('"')
            if key.strip() == "created_at":
                out.created_at = value
            elif key.strip() == "updated_at":
                out.updated_at = value
        lines = lines[end + 1:]
    for raw in lines:
        if not raw.strip() or raw.strip() in (HEADER_WIP, HEADER_DONE):
            continue
        entry = parse_line(raw)
        if entry is not None and entry.done == done:
            out.entries.append(entry)
        else:
            out.other_lines.append(raw.rstrip())
    return out


def render(file: TodoFile, done: bool) -> str:
    """The file's text (counts always match the entries)."""
    from agent_kernel.core.redaction import redact_text

    count = "done_count" if done else "open_count"
    parts = ["---", f'created_at: "{file.created_at}"', f'updated_at: "{file.updated_at}"',
             f"{count}: {len(file.entries)}", "---", "",
             HEADER_DONE if done else HEADER_WIP, ""]
    parts += [redact_text(e.line()) for e in file.entries]
    if file.other_lines:
        parts += ["", *(redact_text(x) for x in file.other_lines)]
    return "\n".join(parts) + "\n"


def reference_ids(content: str) -> list[str]:
    """The ``(id)`` references in ``content``; spec 003's ``invalid reference id: X`` when
    a parenthesis holds anything else."""
    found: list[str] = []
    for raw in re.findall(_PAREN, content):
        ref = raw.strip()
        if not is_reference_id(ref):
            raise OrganiserError(f"invalid reference id: {ref}")
        if ref not in found:
            found.append(ref)
    return found


def unannotated_self_mention(content: str) -> str:
    """The first "I"/"me"/"我" in ``content`` that carries no ``(id)``, or ``""``: a todo
    that says "me" must say who (spec 003's first-person rule)."""
    stripped = re.sub(_ANNOTATED, "", content)
    for token in ("我们", "本人", "我"):
        if token in stripped:
            return token
    found = re.search(_SELF_EN, stripped)
    return found.group(0) if found else ""


@dataclass
class Snapshot:
    """Both files as read, with their bytes, to tell whether they changed meanwhile."""

    wip: TodoFile
    done: TodoFile
    raw: tuple[bytes, bytes]


class TodoFiles:
    """``TODO.WIP.md`` / ``TODO.DONE.md`` under ``<workspace>/state`` (names configurable)."""

    def __init__(self, workspace: Workspace, wip_name: str = "TODO.WIP.md",
                 done_name: str = "TODO.DONE.md") -> None:
        self.workspace = workspace
        self.wip_name = wip_name
        self.done_name = done_name

    def _read_raw(self, name: str) -> bytes:
        try:
            return read_capped(self.workspace.ensure(), f"{STATE_DIR}/{name}", MAX_FILE_BYTES)
        except FileNotFoundError:
            return b""
        except TooLarge:
            raise OrganiserError(f"{name} is larger than {MAX_FILE_BYTES} bytes; move old "
                                 "items out of it") from None

    def read(self) -> Snapshot:
        """Both files, parsed (missing files are empty)."""
        raw = (self._read_raw(self.wip_name), self._read_raw(self.done_name))
        try:
            texts = (raw[0].decode("utf-8"), raw[1].decode("utf-8"))
        except UnicodeDecodeError:
            raise OrganiserError(f"{self.wip_name} or {self.done_name} is not UTF-8 text; "
                                 "nothing was changed") from None
        return Snapshot(parse(texts[0], False), parse(texts[1], True), raw)

    def write(self, before: Snapshot, wip: TodoFile, done: TodoFile) -> None:
        """Write both files, unless either changed since ``before`` was read."""
        stamp = now_text()
        for file in (wip, done):
            file.created_at = file.created_at or stamp
            file.updated_at = stamp
        root = self.workspace.ensure()
        try:
            with WorkspaceLock(root, f"{STATE_DIR}/.todo.lock", timeout=5):
                now = (self._read_raw(self.wip_name), self._read_raw(self.done_name))
                if now != before.raw:
                    raise OrganiserError(f"{self.wip_name} changed while the todo was being "
                                         "written; nothing was changed, try again")
                write_atomic(root, f"{STATE_DIR}/{self.done_name}",
                             render(done, True).encode("utf-8"))
                write_atomic(root, f"{STATE_DIR}/{self.wip_name}",
                             render(wip, False).encode("utf-8"))
        except LockTimeout:
            raise OrganiserError("the todo files are busy (another process writes them); "
                                 "try again") from None
