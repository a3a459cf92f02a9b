"""Persistence: every trigger is one JSON file in the workspace's ``triggers/`` folder.

Spec 000 says ``schedule`` "writes to ``triggers/``"; we keep that literally,
one file per trigger named by its id, so a person can read, copy or delete a
trigger with ordinary tools, and a broken file costs one trigger, not all.
Writes go to a temporary file first and are renamed into place, so a
crash never leaves half a trigger. The files are small; writing one takes
well under a millisecond, which is why this module does it in the caller's
thread. Every record goes through :func:`agent_kernel.redaction.scrub` first,
so a secret in a prompt never reaches the disk.

Reading is bounded: at most ``MAX_FILES`` regular files (a FIFO or device
would block the read) of at most ``MAX_FILE_BYTES`` each, and a file whose
``id`` is not its name is refused (a copy would otherwise overwrite the
original on the next save). What a record *says* is
checked later, by :mod:`.checks`.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import Path
from typing import Any

from ..workspace import Workspace

FOLDER = "triggers"
MAX_FILES = 1000
MAX_FILE_BYTES = 256 * 1024


class TriggerStore:
    """Reads and writes saved triggers under ``<workspace>/triggers/``."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    @property
    def folder(self) -> Path:
        """The folder holding the trigger files (not created until first save)."""
        return self.workspace.root / FOLDER

    def _path(self, trigger_id: str) -> Path:
        if not trigger_id or "/" in trigger_id or "\\" in trigger_id or trigger_id.startswith("."):
            raise ValueError(f"not a trigger id: {trigger_id!r}")
        return self.folder / f"{trigger_id}.json"

    def save(self, record: dict[str, Any]) -> None:
        """Write one trigger (its ``id`` names the file) atomically."""
        from ..redaction import scrub

        path = self._path(str(record["id"]))
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(scrub(record), ensure_ascii=False, indent=2),
                       encoding="utf-8")
        tmp.replace(path)

    def delete(self, trigger_id: str) -> None:
        """Forget a trigger; a missing file is fine."""
        with contextlib.suppress(FileNotFoundError):
            self._path(trigger_id).unlink()

    def claim(self, agent_id: str) -> Any:
        """The runner lock for ``agent_id``'s triggers (a held FileLock), or None when another
        scheduler, in this process or another, holds it. Release it to give it up."""
        from filelock import FileLock, Timeout

        self.folder.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(self.folder / f".runner-{agent_id}.lock"), timeout=0)
        try:
            lock.acquire()
        except Timeout:
            return None
        return lock

    def load_all(self) -> tuple[list[dict[str, Any]], list[str]]:
        """Every saved trigger, oldest first, and a problem line for each unreadable file."""
        if not self.folder.is_dir():
            return [], []
        records: list[dict[str, Any]] = []
        problems: list[str] = []
        paths = sorted(self.folder.glob("*.json"))
        if len(paths) > MAX_FILES:
            problems.append(f"{len(paths)} trigger files; only the first {MAX_FILES} were read")
            paths = paths[:MAX_FILES]
        for path in paths:
            try:
                info = path.stat()
                if not stat.S_ISREG(info.st_mode):  # a FIFO would block the read for ever
                    problems.append(f"{path.name}: not read (not a regular file)")
                    continue
                size = info.st_size
                if size > MAX_FILE_BYTES:
                    problems.append(f"{path.name}: not read ({size} bytes; a trigger file is "
                                    f"at most {MAX_FILE_BYTES})")
                    continue
                record = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError, RecursionError) as exc:
                problems.append(f"{path.name}: unreadable ({exc})")
                continue
            if not isinstance(record, dict) or not record.get("id") or not record.get("kind"):
                problems.append(f"{path.name}: not a trigger record")
                continue
            if f"{record['id']}.json" != path.name:
                problems.append(f"{path.name}: not restored: its id {record['id']!r} is not "
                                "its file name")
                continue
            records.append(record)
        records.sort(key=lambda r: str(r.get("created_at", "")))
        return records, problems
