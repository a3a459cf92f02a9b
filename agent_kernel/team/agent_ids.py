"""The numbers of a team's built-in agents (``planner-N``, ``worker-N``) across kernels.

Agent ids go on across kernels, so a role made by an earlier kernel's ``planner-1`` is
never a new kernel's ``planner-1``'s: a team starts counting one past the highest id its
workspace's team files name, believing only ids it can parse and a number no file could
have pushed past the id grammar. Two teams on one workspace at once (two kernels, or two
teams in one) draw their numbers from one counter file under a cross-process lock
(:func:`reserve_agent_number`), so no two agents of a workspace share a name.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from agent_kernel.core.safe_open import (
    LockTimeout,
    UnsafeWorkspacePath,
    WorkspaceLock,
    open_fd,
    read_capped,
    write_atomic,
)
from agent_kernel.core.safe_open import names as file_names
from agent_kernel.team.members import AGENTS_FOLDER
from agent_kernel.team.queue import FOLDER, INTERRUPTED
from agent_kernel.team.roles import agent_number, looks_numbered
from agent_kernel.team.society import ROLES_FOLDER

TRUSTED_AGENT_NUMBER = 100_000_000
"""The highest agent number a workspace file is believed about: a team starts its ids at
most here, so a planted ``worker-999999999`` cannot push the counter past the id grammar
(``roles.MAX_AGENT_NUMBER``) and 900 million ids stay free."""
ID_FIELDS = {ROLES_FOLDER: ("createdBy",), FOLDER: ("agent_id", "parent_agent_id"),
             INTERRUPTED: ("agent_id", "parent_agent_id"), AGENTS_FOLDER: ("parentAgentId",)}
"""The fields of each team folder's files that name a built-in agent."""
MAX_ID_FILES = 10_000
MAX_ID_FILE_BYTES = 1024 * 1024
COUNTER = "team/agent-numbers"
"""The last agent number handed out on this workspace (a decimal number, no ``.json``: the
scan above reads every ``.json`` file of the team folders as a team record)."""
COUNTER_LOCK = "team/agent-numbers.lock"


def first_agent_number(root: Path) -> tuple[int, list[str]]:
    """One past the highest ``planner-N`` / ``worker-N`` the workspace's team files name
    (the roles' makers, saved and interrupted tasks, spawned agents' parents), and a line
    for each value that is not an agent id it can believe.

    Agent ids go on across kernels, so a role made by an earlier kernel's ``planner-1``
    (which only its maker may spawn agents in) is never a new kernel's ``planner-1``'s.
    Each file is read as JSON (an id spelt with escapes is still seen) and each field is
    parsed whole (:func:`~.roles.agent_number`): ``planner-1e9``, ``worker-007`` or a
    20-digit number is no id and moves nothing; a number above
    :data:`TRUSTED_AGENT_NUMBER` is reported and not believed."""
    highest, problems = 0, []
    for folder, names in ID_FIELDS.items():
        try:
            found = file_names(root, folder, ".json")
        except OSError:  # a planted link: its own reader reports it
            continue
        for file_name in found[:MAX_ID_FILES]:
            try:  # read as the stores read them: never through a link, never a FIFO
                record = json.loads(read_capped(root, f"{folder}/{file_name}",
                                                MAX_ID_FILE_BYTES))
            except (OSError, ValueError, RecursionError):
                continue  # unreadable: its own reader reports it, and it grants nothing
            if not isinstance(record, dict):
                continue
            for name in names:
                value = record.get(name)
                number = agent_number(value)
                if number is None:
                    if looks_numbered(value):
                        problems.append(f"{folder}/{file_name}: {name} {str(value)[:40]!r} "
                                        "is not an agent id (planner- or worker- and a "
                                        "number); it is ignored")
                elif number > TRUSTED_AGENT_NUMBER:
                    problems.append(f"{folder}/{file_name}: {name} {value!r} is beyond the "
                                    f"{TRUSTED_AGENT_NUMBER:,} agents a workspace may have "
                                    "named; it is ignored")
                else:
                    highest = max(highest, number)
    return highest + 1, problems


def reserve_agent_number(root: Path, at_least: int, count: int = 1) -> int:
    """The next planner/worker number of the workspace at ``root``, never below
    ``at_least``: each number is handed out once across every team of every kernel on the
    workspace (the counter file, under a cross-process lock). ``count`` numbers are taken
    at once (the one returned and those after it), for a team with that many tasks about
    to start: one lock for a fan-out's Workers, not one each. A counter that does not read
    as a number a workspace may have named counts as none; a lock held past a few seconds
    (a stuck process) gives ``at_least``, as before the counter."""
    return reserve_agent_numbers(root, at_least, count)[0]


def reserve_agent_numbers(root: Path, at_least: int, count: int = 1) -> tuple[int, int]:
    """:func:`reserve_agent_number`, and how many numbers from it were reserved: ``count``,
    or 0 when the counter could not be used (then only the one returned is handed out)."""
    try:
        with WorkspaceLock(root, COUNTER_LOCK, timeout=5.0):
            try:  # the lock made team/ already: no folder to make
                fd = open_fd(root, COUNTER, os.O_RDWR | os.O_CREAT)
            except UnsafeWorkspacePath:  # a planted link or FIFO: replaced, never followed
                number = _next(b"", at_least)
                write_atomic(root, COUNTER, f"{number + max(1, count) - 1}\n".encode())
                return number, max(1, count)
            try:  # rewritten in place under the lock: no temporary file, no rename per agent
                size = os.fstat(fd).st_size
                number = _next(os.pread(fd, 64, 0) if size <= 64 else b"", at_least)
                data = f"{number + max(1, count) - 1}\n".encode()
                os.pwrite(fd, data, 0)
                os.ftruncate(fd, len(data))
            finally:
                os.close(fd)
            return number, max(1, count)
    except (LockTimeout, OSError):
        return at_least, 0


def _next(saved: bytes, at_least: int) -> int:
    """The number to hand out after the counter's ``saved`` bytes (none that reads as a
    number a workspace may have named: counted as none), never below ``at_least``."""
    text = saved.decode("ascii", "replace").strip()
    last = int(text) if text.isdigit() and len(text) <= 12 else 0
    return max(at_least, last + 1 if last <= TRUSTED_AGENT_NUMBER else 0)


__all__ = ["TRUSTED_AGENT_NUMBER", "first_agent_number", "reserve_agent_number",
           "reserve_agent_numbers"]
