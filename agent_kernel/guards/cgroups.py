"""A cgroup of its own for each sandboxed command, where the machine lets us make one.

Resource limits (``setrlimit``) bound one process at a time (address space, file
size) or one user across the machine (process count, and for root not at all), so
they cannot bound what a whole command uses. A cgroup can: ``pids.max`` counts every
process and thread the command starts, the memory limit every page it uses (the
pages of its ``/tmp`` included), and the kernel's OOM killer then acts inside the
group, not on the kernel. So each command gets a child group under the kernel's own
(cgroup v2: when that group hands the ``pids`` and ``memory`` controllers down; v1:
in the ``pids`` and ``memory`` hierarchies), joins it before bubblewrap starts (a
``sh`` that writes its own pid, then execs), and the runner reads the group's event
counters to say which limit stopped the command. The group is removed when the
command ends.

Where no group can be made (``/sys/fs/cgroup`` read-only, a v2 group that keeps the
controllers to itself), :func:`unavailable_reason` says why and commands run under
rlimits alone. The probe makes a trial group and moves a process into it, once per
kernel, so a group that would refuse the command is known before any command runs.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from agent_kernel.guards.probe import MachineProbe

CONTROLLERS = ("pids", "memory")
_PREFIX = "agent-kernel-"
_counter = itertools.count(1)


def _mounts() -> list[tuple[str, Path, str, set[str]]]:
    """(root in the hierarchy, mount point, fs type, options) of each cgroup mount."""
    found = []
    with contextlib.suppress(OSError), open("/proc/self/mountinfo") as info:
        for line in info:
            fields = line.split()
            if " - " not in line or len(fields) < 5:
                continue
            tail = line.split(" - ", 1)[1].split()
            if tail and tail[0] in ("cgroup", "cgroup2"):
                options = set(tail[2].split(",")) if len(tail) > 2 else set()
                found.append((fields[3], Path(fields[4]), tail[0], options))
    return found


def _own_paths() -> dict[str, str]:
    """Controller (or "" for v2) -> this process's group path, from /proc/self/cgroup."""
    paths: dict[str, str] = {}
    with contextlib.suppress(OSError), open("/proc/self/cgroup") as groups:
        for line in groups:
            parts = line.rstrip("\n").split(":", 2)
            if len(parts) == 3:
                for name in parts[1].split(",") if parts[1] else [""]:
                    paths[name] = parts[2]
    return paths


def _inside(mount: Path, root: str, path: str) -> Path | None:
    relative = os.path.relpath(path, root)
    return None if relative.startswith("..") else (mount / relative).resolve()


def _parents() -> tuple[dict[str, Path], str]:
    """Where each controller's groups for commands go, and why any is missing."""
    own = _own_paths()
    mounts = _mounts()
    parents: dict[str, Path] = {}
    for controller in CONTROLLERS:
        for root, mount, kind, options in mounts:
            if kind == "cgroup" and controller in options and controller in own:
                place = _inside(mount, root, own[controller])
                if place is not None:
                    parents[controller] = place
                    break
    if parents:
        return parents, ""
    for root, mount, kind, _options in mounts:
        if kind == "cgroup2" and "" in own:
            place = _inside(mount, root, own[""])
            if place is None:
                continue
            # A v2 group with processes cannot hand controllers down (only the root can),
            # so the command's group is usually made beside the kernel's, in its parent
            # (a systemd user session delegates that folder to its user).
            for candidate in (place, place.parent):
                if candidate != mount and mount not in candidate.parents:
                    continue
                try:
                    handed = (candidate / "cgroup.subtree_control").read_text().split()
                except OSError:
                    continue
                found = {c: candidate for c in CONTROLLERS if c in handed}
                if found:
                    return found, ""
            return {}, (f"neither the kernel's cgroup ({place}) nor its parent passes the "
                        f"pids and memory controllers to groups below it")
    return {}, "no cgroup hierarchy with the pids or memory controller is mounted"


def _can_join(group: Path) -> bool:
    """Whether a new process can move itself into ``group`` (what each command does)."""
    try:
        done = subprocess.run(["/bin/sh", "-c", 'echo 0 > "$1"', "sh",
                               str(group / "cgroup.procs")],
                              capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _probe() -> tuple[dict[str, Path], str]:
    parents, why = _parents()
    usable: dict[str, Path] = {}
    for controller, parent in parents.items():
        _remove_stale(parent)
        trial = parent / f"{_PREFIX}{os.getpid()}-probe"
        try:
            trial.mkdir()
        except FileExistsError:
            usable[controller] = parent
            continue
        except OSError as exc:
            why = f"cannot make a cgroup in {parent} ({exc.strerror or exc})"
            continue
        limit = trial / ("pids.max" if controller == "pids" else
                         "memory.max" if (trial / "memory.max").exists() else
                         "memory.limit_in_bytes")
        if not limit.exists():
            why = f"a cgroup made in {parent} has no {limit.name}"
        elif not _can_join(trial):
            why = f"a process cannot move itself into a cgroup made in {parent}"
        else:
            usable[controller] = parent
        for _ in range(50):  # the trial process has exited; its group empties at once
            try:
                trial.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.01)
    if set(usable) == set(CONTROLLERS):
        why = ""
    elif usable:
        missing = " and ".join(c for c in CONTROLLERS if c not in usable)
        why = f"no {missing} controller here ({why})" if why else f"no {missing} controller here"
    return usable, why


PROBE: MachineProbe[tuple[dict[str, Path], str]] = MachineProbe(_probe)
"""The controllers delegated to this user here, or why not: one machine, one answer for
every agent of the process (:mod:`agent_kernel.guards.probe`)."""


def controllers() -> dict[str, Path]:
    """The controllers a command's group can use, and where its groups go (probed once)."""
    return PROBE.get()[0]


def unavailable_reason() -> str:
    """Why some or all of :data:`CONTROLLERS` are missing ("" when both work)."""
    return PROBE.get()[1]


def forget() -> None:
    """Probe again next time (in tests)."""
    PROBE.forget()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_stale(parent: Path) -> None:
    """Groups an earlier kernel left behind (it died before removing them)."""
    with contextlib.suppress(OSError):
        for entry in parent.iterdir():
            if not entry.name.startswith(_PREFIX):
                continue
            owner = entry.name[len(_PREFIX):].split("-")[0]
            if owner.isdigit() and not _alive(int(owner)):
                with contextlib.suppress(OSError):
                    entry.rmdir()


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _count(text: str, key: str) -> int:
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return 0


@dataclass
class CommandGroup:
    """One command's group: its folders (one per v1 hierarchy, one for v2)."""

    folders: dict[str, Path]

    @classmethod
    def make(cls, max_processes: int, memory_bytes: int) -> CommandGroup:
        """A new group with these limits (raises OSError when it cannot be made)."""
        name = f"{_PREFIX}{os.getpid()}-{next(_counter)}"
        folders: dict[str, Path] = {}
        group = cls(folders)
        try:
            for controller, parent in controllers().items():
                folder = parent / name
                if folder not in folders.values():
                    folder.mkdir()
                folders[controller] = folder
            if "pids" in folders:
                (folders["pids"] / "pids.max").write_text(str(max_processes))
            if "memory" in folders:
                group._limit_memory(folders["memory"], memory_bytes)
        except OSError:
            group.remove()
            raise
        return group

    @staticmethod
    def _limit_memory(folder: Path, limit: int) -> None:
        if (folder / "memory.max").exists():  # v2
            (folder / "memory.max").write_text(str(limit))
            for setting, value in (("memory.swap.max", "0"), ("memory.oom.group", "1")):
                with contextlib.suppress(OSError):
                    (folder / setting).write_text(value)
            return
        (folder / "memory.limit_in_bytes").write_text(str(limit))
        with contextlib.suppress(OSError):  # swap accounting is often off
            (folder / "memory.memsw.limit_in_bytes").write_text(str(limit))

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` run by a ``sh`` that first moves itself into this group."""
        procs = sorted({str(folder / "cgroup.procs") for folder in self.folders.values()})
        joins = " && ".join(f'echo 0 > "${i + 1}"' for i in range(len(procs)))
        script = f'{joins} || exit 125; shift {len(procs)}; exec "$@"'
        return ["/bin/sh", "-c", script, "sh", *procs, *argv]

    def processes_refused(self) -> int:
        """How many times a new process or thread was refused at ``pids.max``."""
        folder = self.folders.get("pids")
        return _count(_read(folder / "pids.events"), "max") if folder else 0

    def out_of_memory_kills(self) -> int:
        """How many processes the kernel's OOM killer ended in this group."""
        folder = self.folders.get("memory")
        if folder is None:
            return 0
        if (folder / "memory.events").exists():
            return _count(_read(folder / "memory.events"), "oom_kill")
        return _count(_read(folder / "memory.oom_control"), "oom_kill")

    def remove(self) -> None:
        """Kill whatever is still in the group, then remove it (best effort, ~1 s)."""
        folders = list(dict.fromkeys(self.folders.values()))
        deadline = time.monotonic() + 1.0
        while folders:
            for folder in list(folders):
                for pid in _read(folder / "cgroup.procs").split():
                    with contextlib.suppress(OSError):
                        os.kill(int(pid), signal.SIGKILL)
                try:
                    folder.rmdir()
                except FileNotFoundError:
                    folders.remove(folder)
                except OSError:
                    continue
                else:
                    folders.remove(folder)
            if not folders or time.monotonic() > deadline:
                return
            time.sleep(0.005)  # its last processes are still exiting
