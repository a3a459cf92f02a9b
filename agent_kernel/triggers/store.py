"""Persistence: every trigger is one JSON file in the workspace's ``triggers/`` folder.

Spec 000 says ``schedule`` "writes to ``triggers/``"; we keep that literally,
one file per trigger named by its id, so a person can read, copy or delete a
trigger with ordinary tools, and a broken file costs one trigger, not all.
Writes go to a temporary file first and are renamed into place, so a
crash never leaves half a trigger. The files are small; writing one takes
well under a millisecond, which is why this module does it in the caller's
thread. Every record goes through :func:`agent_kernel.core.redaction.scrub` first,
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
import sys
import time
from pathlib import Path
from typing import Any

from agent_kernel.core.safe_open import (
    LockTimeout,
    TooLarge,
    UnsafeWorkspacePath,
    WorkspaceLock,
    names,
    read_capped,
    unlink,
    write_atomic,
)
from agent_kernel.core.workspace import Workspace

FOLDER = "triggers"
MAX_FILES = 1000
MAX_FILE_BYTES = 256 * 1024


def _this_process() -> str:
    """What this process is, as a person would name it (for :meth:`TriggerStore.holder`)."""
    argv = " ".join(sys.argv)
    if "ipykernel" in argv:
        return "a Jupyter kernel"
    if "agent_kernel" in argv and "triggers" in argv:
        return "`python -m agent_kernel triggers`"
    if "ipython" in os.path.basename(sys.argv[0] if sys.argv else "").lower():
        return "terminal IPython"
    return f"Python ({os.path.basename(sys.argv[0]) if sys.argv else 'python'})"[:80]


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
        from agent_kernel.core.redaction import scrub

        path = self._path(str(record["id"]))
        # Never through a link: a planted triggers/ link is refused (UnsafeWorkspacePath).
        write_atomic(self.workspace.ensure(), f"{FOLDER}/{path.name}",
                     json.dumps(scrub(record), ensure_ascii=False, indent=2).encode("utf-8"))

    def delete(self, trigger_id: str) -> None:
        """Forget a trigger; a missing file is fine."""
        with contextlib.suppress(FileNotFoundError):
            unlink(self.workspace.root, f"{FOLDER}/{self._path(trigger_id).name}")

    def claim(self, agent_id: str) -> Any:
        """The runner lock for ``agent_id``'s triggers (a held FileLock), or None when another
        scheduler, in this process or another, holds it. Release it to give it up."""
        lock = WorkspaceLock(self.workspace.ensure(), f"{FOLDER}/.runner-{agent_id}.lock",
                             timeout=0)
        try:
            lock.acquire()
        except LockTimeout:
            return None
        with contextlib.suppress(OSError):  # only words for the next claimant: never fatal
            write_atomic(self.workspace.root, f"{FOLDER}/.runner-{agent_id}.holder",
                         json.dumps({"pid": os.getpid(), "what": _this_process(),
                                     "since": time.time()}).encode("utf-8"))
        return lock

    def holder(self, agent_id: str) -> str:
        """Who holds ``agent_id``'s runner lock, in words ("a Jupyter kernel (process 4242,
        since 09:12:03)"), as the holder wrote it when it claimed the lock."""
        try:
            said = json.loads(read_capped(self.workspace.root,
                                          f"{FOLDER}/.runner-{agent_id}.holder", 4096))
            pid, what, since = int(said["pid"]), str(said["what"])[:80], float(said["since"])
        except (OSError, ValueError, TypeError, KeyError, TooLarge, UnsafeWorkspacePath):
            return "another process (a Jupyter kernel, terminal IPython or `python -m " \
                   "agent_kernel triggers`)"
        when = time.strftime("%H:%M:%S", time.localtime(since))
        return f"{what} (process {pid}, since {when})"

    def load_all(self) -> tuple[list[dict[str, Any]], list[str]]:
        """Every saved trigger, oldest first, and a problem line for each unreadable file."""
        root = self.workspace.root
        try:
            found = names(root, FOLDER, ".json")
        except OSError as exc:  # a planted triggers/ link: say so, restore nothing
            return [], [f"{FOLDER}/: not read ({exc})"]
        records: list[dict[str, Any]] = []
        problems: list[str] = []
        if len(found) > MAX_FILES:
            problems.append(f"{len(found)} trigger files; only the first {MAX_FILES} were read")
            found = found[:MAX_FILES]
        for name in found:
            try:  # never through a link, never a FIFO or device (safe_open)
                record = json.loads(read_capped(root, f"{FOLDER}/{name}", MAX_FILE_BYTES))
            except TooLarge as exc:
                problems.append(f"{name}: not read ({exc.size} bytes; a trigger file is at "
                                f"most {MAX_FILE_BYTES})")
                continue
            except UnsafeWorkspacePath as exc:
                problems.append(f"{name}: not read ({exc})" if exc.kind == "a symbolic link"
                                else f"{name}: not read (not a regular file)")
                continue
            except (OSError, ValueError, RecursionError) as exc:
                problems.append(f"{name}: unreadable ({exc})")
                continue
            path = self.folder / name
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
