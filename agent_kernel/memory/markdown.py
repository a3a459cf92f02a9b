"""Readable mirrors of memory: ``memory.md`` and ``memory/YYYY-MM-DD-{slug}.md``.

Spec 000 keeps long-term memories in ``memory.md`` and short-term ones in
dated files; here LanceDB is the source of truth and these files are a copy a
person can read (or grep) to see what the agent knows. Each entry carries its
memory id in an HTML comment so ``forget`` can take it out again. A file lock
keeps two kernels appending at once from interleaving.
"""

from __future__ import annotations

import contextlib
import os
import re
from datetime import datetime
from pathlib import Path

from agent_kernel.core.safe_open import (
    UnsafeWorkspacePath,
    WorkspaceLock,
    open_fd,
    read_text,
    unlink,
    write_all,
    write_atomic,
)

LONG_TERM_FILE = "memory.md"
SHORT_TERM_DIR = "memory"
LOCK_FILE = ".memory-md.lock"
_WORD = re.compile(r"[a-z0-9]+")
_ENTRY = re.compile(r"<!-- (mem_[A-Za-z0-9_]+) -->")


def slug(text: str, words: int = 6) -> str:
    """A short file-name slug of ``text``'s first words (``note`` when there are none)."""
    found = _WORD.findall(text.lower())[:words]
    return "-".join(found)[:60].strip("-") or "note"


def mirror_path(content: str, created_at: datetime, long_term: bool) -> str:
    """The workspace-relative file a memory is mirrored to."""
    if long_term:
        return LONG_TERM_FILE
    return f"{SHORT_TERM_DIR}/{created_at.strftime('%Y-%m-%d')}-{slug(content)}.md"


def _entry(memory_id: str, content: str, tags: list[str], created_at: datetime) -> str:
    stamp = created_at.strftime("%Y-%m-%d %H:%M:%S UTC")
    tag_text = " " + " ".join(f"#{t.replace(' ', '_')}" for t in tags) if tags else ""
    body = content.strip().replace("\n", "\n  ")
    return f"- <!-- {memory_id} --> **{stamp}**{tag_text}\n  {body}\n"


def check(root: Path, relative: str) -> None:
    """Raise UnsafeWorkspacePath when the mirror file (or a folder above it) is a link or not a
    regular file; a missing one is fine (it is made at the first write)."""
    with contextlib.suppress(FileNotFoundError):
        os.close(open_fd(root, relative, os.O_RDONLY))


def write(root: Path, memory_id: str, content: str, tags: list[str], created_at: datetime,
          long_term: bool) -> str:
    """Append a memory to its mirror file; returns the workspace-relative path.

    The file is opened through :mod:`agent_kernel.core.safe_open`: a mirror (or ``memory/``)
    that is a link or not a regular file raises UnsafeWorkspacePath and nothing is written.
    """
    relative = mirror_path(content, created_at, long_term)
    with WorkspaceLock(root, LOCK_FILE):
        fd = open_fd(root, relative, os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                     create_folders=True)
        try:
            text = ""
            if os.fstat(fd).st_size == 0:
                title = "Long-term memory" if long_term else f"Memory of {created_at:%Y-%m-%d}"
                text = f"# {title}\n\n"
            text += _entry(memory_id, content, tags, created_at)
            write_all(fd, text.encode("utf-8"))
        finally:
            os.close(fd)
    return relative


def remove(root: Path, relative: str, memory_id: str) -> bool:
    """Take one memory's entry out of its mirror file (the file goes when it is empty)."""
    with WorkspaceLock(root, LOCK_FILE):
        try:
            lines = read_text(root, relative).splitlines(keepends=True)
        except (FileNotFoundError, UnsafeWorkspacePath, UnicodeDecodeError):
            return False
        kept: list[str] = []
        skipping = removed = False
        for line in lines:
            match = _ENTRY.search(line) if line.startswith("- ") else None
            if match:
                skipping = match.group(1) == memory_id
                removed = removed or skipping
            elif skipping and not line.startswith("  "):
                skipping = False
            if not skipping:
                kept.append(line)
        if not removed:
            return False
        if any(_ENTRY.search(line) for line in kept) or relative == LONG_TERM_FILE:
            write_atomic(root, relative, "".join(kept).encode("utf-8"))
        else:
            unlink(root, relative)
    return True
