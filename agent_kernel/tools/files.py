"""Workspace files: spec 003's ``read_file`` and ``write_file`` (``bash`` is in commands.py).

Paths name files inside the agent's workspace. Relative paths land in the file
cache (``<workspace>/files``, spec 003's ``file_cache_dir``);
``file_cache_dir/<path>`` and ``file_state_dir/<path>`` (``<workspace>/state``)
are accepted as aliases, and an absolute path is accepted only when it lies
inside the workspace. The rest of the workspace is the runtime's own state
(ledger, memory, triggers, questions), so the model may read it but never
write it: ``write_file`` writes only inside ``files/`` and ``state/``, checked
on the fully resolved path and opened without following a symlink, and
``bash`` runs in the sandbox of :mod:`agent_kernel.sandbox`, where only those
two folders are writable, with a clean environment. Where no sandbox can
start, ``bash`` refuses unless the person set ``LIMITS.allow_unsandboxed``.
Reads refuse anything but regular files, so a FIFO cannot hang the kernel.
``write_file`` and ``bash`` are marked ``side_effects=True``: every call asks
the person first (see :mod:`agent_kernel.approvals`). Spec 003's guards are
kept: deny paths, byte limits, a bash timeout and ``tools.bash.enabled``
(here ``LIMITS.bash_enabled``).
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from ..workspace import Workspace, WorkspaceError
from .base import Field, Tool, ToolContext

CACHE_ALIAS, STATE_ALIAS = "file_cache_dir", "file_state_dir"
CACHE_DIR, STATE_DIR = "files", "state"
WRITABLE_DIRS = (CACHE_DIR, STATE_DIR)
_NOT_REGULAR = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFSOCK: "a socket",
                stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device"}


@dataclass
class FileToolLimits:
    """Spec 003's ``tools.*`` settings; change ``LIMITS`` to tune them for a session."""

    read_max_bytes: int = 256 * 1024
    write_max_bytes: int = 1024 * 1024
    bash_enabled: bool = True
    bash_timeout: float = 30.0
    bash_max_timeout: float = 600.0
    bash_output_max_bytes: int = 64 * 1024
    # Glob patterns (matched against the workspace-relative path and the file name).
    deny_paths: list[str] = field(default_factory=lambda: [
        ".env", "*.pem", "*.key", "id_rsa*", "ledger.jsonl", "ledger.quarantine.jsonl",
        "pending_question.json"])
    # Extra environment variables commands may see (PATH, HOME, LANG... always pass);
    # a name that says it holds a secret (API_KEY, TOKEN, PASSWORD...) is never passed.
    command_env: list[str] = field(default_factory=list)
    # Without bubblewrap, run commands anyway, able to write whatever the kernel can.
    allow_unsandboxed: bool = False


LIMITS = FileToolLimits()


def _denied(relative: str) -> str | None:
    name = relative.rsplit("/", 1)[-1]
    for pattern in LIMITS.deny_paths:
        if fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(name, pattern):
            return pattern
    return None


def resolve(workspace: Workspace, user_path: str) -> Path:
    """Map a model-given path to a file inside the workspace, or raise a clear error."""
    text = (user_path or "").strip()
    if not text:
        raise ValueError("path must be a non-empty string")
    base = workspace.root / CACHE_DIR
    for alias, folder in ((CACHE_ALIAS, CACHE_DIR), (STATE_ALIAS, STATE_DIR)):
        if text.rstrip("/") == alias:
            raise ValueError(f"'{alias}' needs a file path after it, like '{alias}/notes.txt'")
        if text.startswith(alias + "/"):
            base, text = workspace.root / folder, text[len(alias) + 1:]
            break
    candidate = Path(text).expanduser()
    if not candidate.is_absolute():
        candidate = base / candidate
    try:
        resolved = workspace.resolve(str(candidate))
    except WorkspaceError:
        raise ValueError(
            f"path {user_path!r} is outside the workspace {str(workspace.root)!r}; "
            f"use a relative path (it goes to {CACHE_ALIAS}) or '{STATE_ALIAS}/...'"
        ) from None
    _check_denied(workspace, resolved, user_path)
    return resolved


def _check_denied(workspace: Workspace, resolved: Path, user_path: str) -> None:
    pattern = _denied(resolved.relative_to(workspace.root).as_posix())
    if pattern:
        raise PermissionError(f"path {user_path!r} is denied (deny_paths pattern {pattern!r})")


def _writable_parts(workspace: Workspace, resolved: Path, user_path: str) -> tuple[str, list[str]]:
    """Split a resolved path into its writable folder (files or state) and the parts below."""
    parts = list(resolved.relative_to(workspace.root).parts)
    if not parts or parts[0] not in WRITABLE_DIRS:
        shown = "/".join(parts) or "the workspace folder itself"
        raise PermissionError(
            f"path {user_path!r} resolves to {shown}, which belongs to the runtime; "
            f"write only inside {CACHE_DIR}/ ({CACHE_ALIAS}) or {STATE_DIR}/ ({STATE_ALIAS})")
    return parts[0], parts[1:]


def _writable_root(workspace: Workspace, folder: str) -> Path:
    """``<workspace>/files`` or ``/state``, created if needed and never a symlink."""
    path = workspace.ensure() / folder
    with contextlib.suppress(FileExistsError):
        path.mkdir()
    if path.is_symlink() or not path.is_dir():
        raise PermissionError(f"{folder}/ in the workspace is not a plain folder (a symlink?); "
                              f"move it away and try again")
    return path


@contextlib.contextmanager
def _folder_fd(base: Path, parts: list[str], create: bool) -> Iterator[int]:
    """An fd for ``base/parts...``, walked without following a symlink at any step.

    A command running at the same time cannot swap a folder for a symlink between
    the check and the write: every step is opened with ``O_NOFOLLOW``.
    """
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(base, flags)
    try:
        for part in parts:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, dir_fd=fd)
            try:
                child = os.open(part, flags, dir_fd=fd)
            except OSError as exc:
                raise PermissionError(f"{part!r} changed or is not a folder ({exc.strerror})") \
                    from None
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _shown(workspace: Workspace, path: Path) -> str:
    return path.relative_to(workspace.root).as_posix()


def _clip(data: bytes, limit: int) -> tuple[str, bool]:
    text = data[:limit].decode("utf-8", errors="replace")
    return text, len(data) > limit


def _refuse_special(mode: int, shown: str, tool_name: str) -> None:
    kind = _NOT_REGULAR.get(stat.S_IFMT(mode))
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(f"{shown} is a folder, not a file")
    if not stat.S_ISREG(mode):
        raise PermissionError(f"{shown} is {kind or 'not a regular file'}; "
                              f"{tool_name} works only on regular files")


def _open_failed(shown: str, tool_name: str, exc: OSError) -> str:
    if exc.errno == errno.ENXIO:  # a socket, or a FIFO nobody reads
        return f"{shown} is a socket or FIFO; {tool_name} works only on regular files"
    if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a symlink that appeared after the check
        return f"{shown} became a symlink while it was opened; try again"
    return f"cannot open {shown}: {exc.strerror}"


def _open_regular(path: str | Path, flags: int, shown: str, tool_name: str,
                  dir_fd: int | None = None) -> tuple[int, os.stat_result]:
    """Open without following a symlink or waiting on a FIFO (``O_NONBLOCK``), and refuse
    anything but a regular file; returns the fd and its ``fstat``."""
    flags |= os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644, dir_fd=dir_fd)
    except FileNotFoundError:
        raise FileNotFoundError(f"no such file: {shown}") from None
    except IsADirectoryError:
        raise IsADirectoryError(f"{shown} is a folder, not a file") from None
    except OSError as exc:
        raise PermissionError(_open_failed(shown, tool_name, exc)) from None
    try:
        info = os.fstat(fd)
        _refuse_special(info.st_mode, shown, tool_name)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def _opened_path(fd: int) -> Path | None:
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        return None


def read_file(
    path: Annotated[str, Field(min_length=1, max_length=4096)], ctx: ToolContext
) -> str:
    """Read a text file from the workspace (long files are truncated).

    Args:
        path: File path. Relative paths are in file_cache_dir; file_cache_dir/<path> and
            file_state_dir/<path> aliases are supported.
    """
    target = resolve(ctx.workspace, path)
    shown = _shown(ctx.workspace, target)
    fd, info = _open_regular(target, os.O_RDONLY, shown, "read_file")
    try:
        opened = _opened_path(fd)
        if opened is not None:  # a folder swapped for a symlink after resolve()
            try:
                _check_denied(ctx.workspace, ctx.workspace.resolve(str(opened)), path)
            except WorkspaceError:
                raise PermissionError(f"path {path!r} changed while it was opened") from None
        chunks, wanted = [], LIMITS.read_max_bytes + 1
        while wanted > 0 and (chunk := os.read(fd, wanted)):
            chunks.append(chunk)
            wanted -= len(chunk)
    finally:
        os.close(fd)
    text, clipped = _clip(b"".join(chunks), LIMITS.read_max_bytes)
    if clipped:
        text += f"\n...[truncated: showed {LIMITS.read_max_bytes} of {info.st_size} bytes]"
    return text


def write_file(
    path: Annotated[str, Field(min_length=1, max_length=4096)],
    content: str,
    ctx: ToolContext,
    mode: Literal["overwrite", "append"] = "overwrite",
) -> dict[str, Any]:
    """Write a text file in file_cache_dir or file_state_dir; parent folders are created.

    Args:
        path: Target path. Relative paths go to file_cache_dir; file_state_dir/<path> is
            also supported.
        content: The text to write.
        mode: "overwrite" (default) or "append".
    """
    data = content.encode("utf-8")
    if len(data) > LIMITS.write_max_bytes:
        raise ValueError(f"content is {len(data)} bytes; write_file allows at most "
                         f"{LIMITS.write_max_bytes} (tools.write_file.max_bytes)")
    target = resolve(ctx.workspace, path)
    folder, parts = _writable_parts(ctx.workspace, target, path)
    shown = _shown(ctx.workspace, target)
    if not parts:
        raise IsADirectoryError(f"{shown} is a folder, not a file")
    base = _writable_root(ctx.workspace, folder)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if mode == "append" else 0)
    with _folder_fd(base, parts[:-1], create=True) as parent:
        fd, info = _open_regular(parts[-1], flags, shown, "write_file", dir_fd=parent)
    try:
        if info.st_nlink > 1:  # another name for this file may be one of the runtime's
            raise PermissionError(f"{shown} has {info.st_nlink} hard links; write_file "
                                  f"refuses files that have other names")
        os.set_blocking(fd, True)
        if mode == "overwrite":
            os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
    return {"path": shown, "bytes": len(data), "mode": mode}


TOOLS = [
    Tool(read_file, source="builtin", side_effects=False),
    Tool(write_file, source="builtin", side_effects=True),
]
