"""What one command may use, and the words for a limit it met.

:class:`CommandLimits` holds the settings of both command tools (``bash``,
``run_command``; the live instance is ``commands.LIMITS``). The bounds are applied
in two places, because neither alone can hold them all: the whole command's
process count and memory through a cgroup of its own (:mod:`agent_kernel.guards.cgroups`,
where the machine lets us make one), and each process's address space, file size,
open files and core files through rlimits that a small bash prelude sets *inside*
the sandbox (:func:`bash_argv`). When a command meets a limit, the runner says
which in a person's words (:func:`stopped_by` from the cgroup's counters while it
runs, :func:`limit_from_output` from its errors afterwards), never a bare exit code.
"""

from __future__ import annotations

import os
import platform
import resource
import signal
from dataclasses import dataclass, field
from pathlib import Path

from agent_kernel.guards import cgroups, sandbox, seccomp

MIB = 1024 * 1024
_BWRAP_PROCESSES = 2  # bubblewrap's own two processes count in the cgroup's pids.max


@dataclass
class CommandLimits:
    """Spec 003's ``tools.bash.*`` settings, for both faces; change ``LIMITS`` for a session."""

    enabled: bool = True
    """``tools.bash.enabled``: false gives "tool is disabled" (both faces)."""
    timeout: float = 30.0
    """``tools.bash.timeout``: ``bash``'s default, in seconds (``run_command``'s is 60 s)."""
    max_timeout: float = 600.0
    output_max_bytes: int = 64 * 1024
    """stdout and stderr are each cut here (the rest is read and dropped, never held)."""
    env: list[str] = field(default_factory=list)
    """Extra environment variables commands may see (PATH, HOME, LANG... always pass);
    a name that says it holds a secret (API_KEY, TOKEN, PASSWORD...) is never passed."""
    network: bool = False
    """Let sandboxed commands reach the network and the machine's own services (its
    Unix sockets included)."""
    allow_unsandboxed: bool = False
    """Without bubblewrap, run commands anyway, able to change whatever the kernel can."""
    max_processes: int = 512
    """Processes and threads one command may run at once (its cgroup's ``pids.max``;
    without a cgroup, ``RLIMIT_NPROC``, which root is exempt from). The command is
    stopped when it tries to start one more."""
    memory_mib: int = 2048
    """Memory one whole command may use, its ``/tmp`` included (its cgroup's memory
    limit). The command is stopped when the kernel's OOM killer ends a process of it."""
    address_space_mib: int = 4096
    """Virtual memory per process (``RLIMIT_AS``): the only memory bound where no cgroup
    can be made. Programs reserve more than they use (Java needs about 4 GiB), so this
    is looser than ``memory_mib``."""
    file_size_mib: int = 1024
    """The largest file a command may write (``RLIMIT_FSIZE``)."""
    open_files: int = 1024
    """Files, pipes and sockets one process may hold open (``RLIMIT_NOFILE``)."""
    tmp_mib: int = 512
    """Size of the command's private ``/tmp``, and of its ``/dev/shm`` (each)."""
    use_cgroup: bool = True
    """Put each command in a cgroup of its own, where the machine lets us make one."""

    def check(self) -> None:
        """Refuse a bound that would lift the limit or stop every command, saying which."""
        for name, least in _LEAST.items():
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ValueError(f"agent_kernel.tools.commands.LIMITS.{name} must be a whole "
                                 f"number of at least {least}, got {value!r}")


_LEAST = {"max_processes": 8, "memory_mib": 32, "address_space_mib": 64, "file_size_mib": 1,
          "open_files": 16, "tmp_mib": 1}


def size(mib: int) -> str:
    """``2048`` -> ``"2 GiB"``, ``64`` -> ``"64 MiB"``."""
    return f"{mib // 1024:g} GiB" if mib % 1024 == 0 else f"{mib:g} MiB"


def group_controllers(limits: CommandLimits) -> dict[str, Path]:
    """The cgroup controllers a command's group will use (none when switched off)."""
    return cgroups.controllers() if limits.use_cgroup else {}


def weaker_limits(limits: CommandLimits) -> list[str]:
    """What this machine cannot bound as docs/security.md says, in words (or [])."""
    gaps = []
    have = group_controllers(limits)
    why = "commands.LIMITS.use_cgroup is off" if not limits.use_cgroup else \
        cgroups.unavailable_reason()
    if "memory" not in have:
        gaps.append(f"memory limited per process only, no cgroup: {why}")
    if "pids" not in have:
        gaps.append("process count not limited (root ignores RLIMIT_NPROC)"
                    if os.geteuid() == 0 else "process count limited per user namespace")
    if seccomp.program() is None:
        gaps.append(f"no system call filter on {platform.machine()}: the kernel's keyrings "
                    f"open" + ("" if limits.network else ", Unix sockets only hidden"))
    if not sandbox.sizes_tmpfs():
        gaps.append("/tmp not sized: bubblewrap before 0.6")
    return gaps


def _rlimit(kind: int, wanted: int) -> int:
    """``wanted``, or the kernel's own hard limit if that is lower (it cannot be raised)."""
    hard = resource.getrlimit(kind)[1]
    return wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)


def bash_argv(script: str, limits: CommandLimits, count_processes: bool) -> list[str]:
    """``bash -c script`` under the per-process limits, set inside the sandbox.

    Set there, not before bubblewrap starts, so ``RLIMIT_NPROC`` counts the processes
    of the sandbox's own user namespace, not all of the user's on the machine. Each
    is lowered soft and hard, so the command cannot raise it again. ``oom_score_adj``
    1000: if the machine (or a container around it) runs out of memory, the kernel's
    OOM killer takes the command before the kernel.
    """
    values = [("-c", 0),
              ("-n", _rlimit(resource.RLIMIT_NOFILE, limits.open_files)),
              ("-f", _rlimit(resource.RLIMIT_FSIZE, limits.file_size_mib * MIB) // 1024),
              ("-v", _rlimit(resource.RLIMIT_AS, limits.address_space_mib * MIB) // 1024)]
    if count_processes:
        values.append(("-u", _rlimit(resource.RLIMIT_NPROC, limits.max_processes)))
    flags = " ".join(f"{flag} {value}" for flag, value in values)
    prelude = (f"set +o posix; ulimit {flags} || exit 126; "  # -f counts KiB outside posix
               f"echo 1000 > /proc/self/oom_score_adj 2>/dev/null; exec bash -c \"$1\"")
    return ["bash", "-c", prelude, "bash", script]


def make_group(limits: CommandLimits) -> cgroups.CommandGroup | None:
    """A cgroup for one command, or None where none can be made (the state line says so)."""
    if not group_controllers(limits):
        return None
    try:
        return cgroups.CommandGroup.make(limits.max_processes + _BWRAP_PROCESSES,
                                         limits.memory_mib * MIB)
    except OSError:
        return None


def stopped_by(group: cgroups.CommandGroup | None, limits: CommandLimits) -> str | None:
    """The limit a running command's group has met, in words, or None."""
    if group is None:
        return None
    if group.processes_refused():
        return f"stopped: it tried to run more than {limits.max_processes} processes at once"
    if group.out_of_memory_kills():
        return f"stopped: it ran out of memory (limit {size(limits.memory_mib)})"
    return None


def limit_from_output(code: int | None, stderr: str, limits: CommandLimits) -> str | None:
    """A limit the command's own errors point to (exit code 153 is SIGXFSZ), or None.

    Memory a cgroup bounds ends in an OOM kill, seen by :func:`stopped_by`; a failed
    allocation (``MemoryError``) is the per-process address-space limit.
    """
    if code == 128 + signal.SIGXFSZ or "File size limit exceeded" in stderr or \
            "File too large" in stderr:
        return f"a file reached the size limit ({size(limits.file_size_mib)})"
    if "No space left on device" in stderr:
        return (f"a write found no space: /tmp holds {size(limits.tmp_mib)} in the sandbox "
                f"(files/ and state/ have what the disk has)")
    if "Too many open files" in stderr:
        return f"it reached the limit of {limits.open_files} open files per process"
    if any(sign in stderr for sign in ("MemoryError", "Cannot allocate memory", "bad_alloc")):
        return (f"it ran out of memory (limit {size(limits.address_space_mib)} of "
                f"address space per process)")
    if "fork: retry" in stderr or "fork: Resource temporarily unavailable" in stderr:
        return f"it tried to run more than {limits.max_processes} processes at once"
    return None


_SETTINGS = {"processes": "max_processes", "address space": "address_space_mib",
             "out of memory": "memory_mib", "size limit": "file_size_mib", "/tmp": "tmp_mib",
             "open files": "open_files"}


def how_to_change(words: str) -> str:
    """``"; to change it: agent_kernel.tools.commands.LIMITS.<setting>"`` for a limit."""
    name = next((v for k, v in _SETTINGS.items() if k in words), "")
    return f"; to change it: agent_kernel.tools.commands.LIMITS.{name}" if name else ""
