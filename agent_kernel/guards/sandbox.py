"""Where a command may write: a bubblewrap sandbox around every ``bash`` call.

The agent's workspace holds the runtime's own state (the ledger, memory tables
and mirrors, saved triggers whose conditions the kernel evaluates, pending
questions). A command the person approved must not be able to change any of
it, however the command is spelled: quotes, globs, ``$(printf ...)``,
variables, symlinks and ``/proc/<pid>/root`` all defeat a check of the
command's text. So protection comes from *where the command can write*:
bubblewrap shows it the whole filesystem read-only, a private ``/tmp``, a
workspace emptied by a read-only tmpfs with only ``files/`` and ``state/``
bound back writable, the approval key's folder and Jupyter's connection files
hidden with the person's credential folders such as ``~/.aws`` and ``~/.ssh``
(:func:`private_paths`), its own PID namespace (no other process to reach
through ``/proc``), its own network namespace unless the person allows the
network (only a loopback of its own: no other host, and no service listening
on the machine's ``127.0.0.1``), no capabilities, and a clean environment.
The seccomp filter of :mod:`agent_kernel.guards.seccomp` keeps it from the kernel's
keyrings (``/proc/keys`` is hidden too), and without the network from every
socket but its own namespace's (no Unix sockets; the machine's socket folders
are hidden too). What it may fill in memory is sized: ``/tmp`` and
``/dev/shm`` are tmpfs of a set size and the rest of ``/dev`` is read-only.

When bubblewrap cannot start here, :func:`find_bubblewrap` says so and the
caller refuses (or, if the person opted in, runs unsandboxed and says so).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_kernel.core.redaction import secret_name
from agent_kernel.guards import seccomp
from agent_kernel.guards.probe import MachineProbe

# Passed through from the kernel's environment when set; nothing else is.
ALLOWED_ENV = ("PATH", "HOME", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES",
               "TERM", "TZ", "USER", "LOGNAME")
FIXED_ENV = {"TMPDIR": "/tmp"}
INSTALL_HINT = "install Debian's `bubblewrap` (apt-get install bubblewrap)"
_PROBE_TIMEOUT = 10.0
_TMP = Path("/tmp")
_PROC_KEYS = Path("/proc/keys")
SECCOMP_FD = "{seccomp-fd}"
"""Stands in an ``argv`` for the descriptor :func:`start` opens for ``--seccomp``."""
SECCOMP_FD_NETWORK = "{seccomp-fd network}"
"""The same, for the filter of a command with the network (``program(network=True)``)."""
_FILTERS = {SECCOMP_FD: False, SECCOMP_FD_NETWORK: True}

def _probe() -> tuple[str | None, str]:
    found = shutil.which("bwrap")
    if not found:
        return None, "bubblewrap (bwrap) is not installed"
    probe = Sandbox(root=None, writable=(), cwd=Path("/"), env={})
    try:
        done = subprocess.run(probe.argv(found, ["true"]), stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=_PROBE_TIMEOUT, env={})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{found} could not start a sandbox here ({exc})"
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = said[-1] if said else f"exit code {done.returncode}"
        return None, f"{found} is installed but cannot start a sandbox here ({why})"
    return found, ""


BUBBLEWRAP: MachineProbe[tuple[str | None, str]] = MachineProbe(_probe)
"""A ``bwrap`` that can start our sandbox here, or why not: one machine, one answer for
every agent of the process (:mod:`agent_kernel.guards.probe`)."""


def find_bubblewrap() -> str | None:
    """The path of a ``bwrap`` that can start our sandbox here, or None (probed once)."""
    return BUBBLEWRAP.get()[0]


def unavailable_reason() -> str:
    """Why :func:`find_bubblewrap` found nothing usable ("" when it did)."""
    return BUBBLEWRAP.get()[1]


def forget() -> None:
    """Probe again next time (after installing bubblewrap, or in tests)."""
    BUBBLEWRAP.forget()
    SIZES_TMPFS.forget()


def _sizes_tmpfs() -> bool:
    bwrap = find_bubblewrap()
    if bwrap is None:
        return False
    try:
        said = subprocess.run([bwrap, "--help"], capture_output=True, timeout=10,
                              stdin=subprocess.DEVNULL, env={})
    except (OSError, subprocess.TimeoutExpired):
        return False
    return b"--size" in said.stdout + said.stderr


SIZES_TMPFS: MachineProbe[bool] = MachineProbe(_sizes_tmpfs)
"""Whether this machine's bubblewrap has ``--size`` for a tmpfs."""


def sizes_tmpfs() -> bool:
    """Whether this bubblewrap has ``--size`` for a tmpfs (0.6 and later do)."""
    return SIZES_TMPFS.get()


def start(argv: Sequence[str], **options: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(argv, **options)``, handing ``bwrap`` a fresh copy of the
    seccomp filter where ``argv`` asks for one (:data:`SECCOMP_FD`,
    :data:`SECCOMP_FD_NETWORK`)."""
    wanted = [_FILTERS[arg] for arg in argv if arg in _FILTERS]
    if not wanted:
        return subprocess.Popen(list(argv), **options)
    fd = seccomp.open_program(network=wanted[0])
    if fd is None:
        raise OSError("no seccomp filter is known for this machine's architecture")
    try:
        return subprocess.Popen([str(fd) if arg in _FILTERS else arg for arg in argv],
                                pass_fds=(fd,), **options)
    finally:
        os.close(fd)


def socket_folders() -> list[Path]:
    """Folders that hold the machine's Unix sockets (``/run``, the session's runtime
    folder), for a sandbox without network to hide; a folder that holds a program on
    ``PATH`` (NixOS keeps them under ``/run``) stays visible."""
    found = [Path("/run"), Path("/var/run")]
    if os.environ.get("XDG_RUNTIME_DIR", "").startswith("/"):
        found.append(Path(os.environ["XDG_RUNTIME_DIR"]))
    programs = [Path(p).resolve() for p in os.environ.get("PATH", "").split(os.pathsep) if p]
    folders: list[Path] = []
    for path in found:
        real = path.resolve()
        if real.is_dir() and real != Path("/") and real not in folders and not any(
                real == p or real in p.parents for p in programs):
            folders.append(real)
    return folders


def clean_environment(extra: Iterable[str] = ()) -> tuple[dict[str, str], list[str]]:
    """The environment a command gets, and the configured names refused as secrets.

    Only :data:`ALLOWED_ENV` and the names in ``extra`` pass (when set), never one
    whose name says it holds a secret (``OPENAI_API_KEY``, ``DB_PASSWORD``, ...).
    """
    env = {name: os.environ[name] for name in ALLOWED_ENV if name in os.environ}
    dropped: list[str] = []
    for name in extra:
        if secret_name(name):
            dropped.append(name)
        elif name in os.environ and name not in FIXED_ENV:
            env[name] = os.environ[name]
    env.update(FIXED_ENV)
    return env, dropped


CREDENTIAL_PLACES = (".aws", ".ssh", ".gnupg", ".netrc", ".git-credentials", ".pypirc",
                     ".docker/config.json", ".kube", ".azure", ".config/gcloud", ".config/gh",
                     ".config/hub")
"""Where people and cloud tools keep credentials, under the home folder: object-store
keys (``files_uri`` and ``memory_uri`` take theirs from the cloud's chain, which reads
``~/.aws``), SSH and GPG keys, package-index and registry tokens."""
CREDENTIAL_FILE_VARS = ("AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE",
                        "GOOGLE_APPLICATION_CREDENTIALS", "AZURE_CONFIG_DIR", "KUBECONFIG",
                        "NETRC", "BOTO_CONFIG")
"""Environment variables naming a credential file or folder somewhere else."""


def credential_paths() -> list[Path]:
    """The person's credential files and folders that exist (:data:`CREDENTIAL_PLACES`
    under the home folder, and those :data:`CREDENTIAL_FILE_VARS` name): a sandbox hides
    them, so an approved command cannot print a key for the model to read."""
    found: list[Path] = []
    with contextlib.suppress(RuntimeError, KeyError):  # no home folder: nothing there
        home = Path.home()
        found += [home / place for place in CREDENTIAL_PLACES]
    for name in CREDENTIAL_FILE_VARS:
        for part in os.environ.get(name, "").split(os.pathsep):
            if part.strip():
                found.append(Path(part.strip()).expanduser())
    return [p for p in found if p.exists()]


def private_paths() -> list[Path]:
    """Jupyter's connection files (this kernel's, and the runtime folder holding every
    kernel's): their keys would let a command drive a kernel, and so the runtime, from
    outside the sandbox, so the sandbox hides them. And the folder of the approval key
    (:mod:`agent_kernel.core.trust`), made now if missing: a key made later in a folder the
    sandbox did not hide would show through ``/``, which it binds live. Also the folder of
    every key this process has read or made, should the data folder have changed since,
    and the person's credential files and folders (:func:`credential_paths`)."""
    found: set[Path] = set()
    try:
        from agent_kernel.core.trust import key_folder, read_folders

        folder = key_folder()
        with contextlib.suppress(OSError):  # none made: no key can be made there either
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        found.update([folder, *read_folders()])
    except Exception:  # jupyter_core missing or misconfigured: there is no key folder
        pass
    try:
        from jupyter_core.paths import jupyter_runtime_dir

        found.add(Path(jupyter_runtime_dir()))
    except Exception:  # jupyter_core missing or misconfigured: nothing to hide from it
        pass
    found.update(credential_paths())
    app = sys.modules.get("ipykernel.kernelapp")
    kernel_app = getattr(app, "IPKernelApp", None)
    if kernel_app is not None and kernel_app.initialized():
        connection = getattr(kernel_app.instance(), "abs_connection_file", "")
        if connection:
            found.add(Path(connection))
    return sorted(p.resolve() for p in found if p.exists() and p.resolve() != Path("/"))


@dataclass
class Sandbox:
    """One command's view of the machine: what it may write, where it starts, what it sees.

    ``root`` (the workspace) is hidden except for the ``writable`` folders inside it;
    ``hidden`` folders are replaced by empty read-only ones, ``hidden`` files by a
    ``/dev/null`` the command cannot open. ``keep`` names paths under ``/tmp`` the
    command must still see, read-only (an interpreter in a virtual environment there).
    Without ``network`` the command gets a network namespace of its own, holding
    nothing but its own loopback. ``tmp_bytes`` sizes ``/tmp`` and ``/dev/shm`` (each;
    None: as large as the machine's tmpfs allows). ``syscall_filter`` loads the
    seccomp filter, with its rules for no network when ``network`` is off (start
    the command with :func:`start`).
    """

    root: Path | None
    writable: tuple[Path, ...]
    cwd: Path
    env: dict[str, str]
    hidden: tuple[Path, ...] = field(default=())
    network: bool = False
    keep: tuple[Path, ...] = field(default=())
    tmp_bytes: int | None = None
    syscall_filter: bool = False

    def argv(self, bwrap: str, command: list[str]) -> list[str]:
        """The full ``bwrap`` command line that runs ``command`` inside this sandbox."""
        return [bwrap, *self._filesystem(), *self._processes(), *self._network(),
                *self._environment(), *self._seccomp(), "--", *command]

    def _sized(self) -> list[str]:
        return ["--size", str(self.tmp_bytes)] if self.tmp_bytes and sizes_tmpfs() else []

    def _filesystem(self) -> list[str]:
        # bubblewrap's /dev is a writable tmpfs as large as the machine's: only /dev/shm
        # (sized, for POSIX shared memory and semaphores) stays writable in it.
        args = ["--ro-bind", "/", "/", "--dev", "/dev", *self._sized(), "--tmpfs", "/dev/shm",
                "--remount-ro", "/dev", "--proc", "/proc", *self._sized(), "--tmpfs", "/tmp"]
        if _PROC_KEYS.exists():  # lists by name the keys it may view, its session's too
            args += ["--ro-bind", "/dev/null", str(_PROC_KEYS)]
        kept = [k for k in self.keep if _TMP in k.parents]
        for path in kept:
            args += ["--ro-bind", str(path), str(path)]
        # /tmp is already a fresh tmpfs, so whatever was in it is hidden (unless kept).
        hidden = [f for f in self.hidden if f != _TMP and (_TMP not in f.parents or any(
            k == f or k in f.parents for k in kept))]
        # Inside a hidden folder there is nothing left to hide (Jupyter's runtime folder
        # under /run/user/...), and bwrap could not remount what the tmpfs took away.
        hidden = [f for f in dict.fromkeys(hidden) if not any(
            h in f.parents and h.is_dir() for h in hidden)]
        # A hidden folder holding the workspace is emptied first (the workspace is then
        # rebuilt inside it); any other is emptied last, so no bind can show it again.
        around = [f for f in hidden if self.root is not None and
                  (f == self.root or f in self.root.parents)]
        for folder in around:
            args += ["--tmpfs", str(folder)]
        if self.root is not None:
            args += ["--tmpfs", str(self.root)]
            for folder in self.writable:
                args += ["--bind", str(folder), str(folder)]
        folders = [f for f in hidden if f.is_dir()]
        for path in hidden:
            if path not in around:
                args += ["--tmpfs", str(path)] if path in folders else \
                    ["--ro-bind", "/dev/null", str(path)]
        for folder in (*folders, *([self.root] if self.root is not None else [])):
            args += ["--remount-ro", str(folder)]
        return [*args, "--chdir", str(self.cwd)]

    def _processes(self) -> list[str]:
        # A PID namespace: no /proc/<kernel pid>/root way back, and when the command's
        # first process dies every process it left behind dies with it.
        # Its own IPC namespace: System V shared memory it makes dies with it too.
        return ["--unshare-pid", "--unshare-ipc", "--new-session", "--die-with-parent",
                "--cap-drop", "ALL"]

    def _network(self) -> list[str]:
        return [] if self.network else ["--unshare-net"]

    def _seccomp(self) -> list[str]:
        if not self.syscall_filter or seccomp.program() is None:
            return []
        return ["--seccomp", SECCOMP_FD_NETWORK if self.network else SECCOMP_FD]

    def _environment(self) -> list[str]:
        args = ["--clearenv"]
        for name, value in self.env.items():
            args += ["--setenv", name, value]
        return args
