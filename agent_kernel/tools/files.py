"""Workspace files: ``read_file``, ``write_file``, ``list_files``, ``get_workspace_info``.

Arguments are the union of spec 003 (``mode``, the ``file_cache_dir/`` and
``file_state_dir/`` aliases, deny paths, byte limits, "tool is disabled") and
spec 004 (``list_files``, ``get_workspace_info``); results are spec 004's
envelopes: ``{ok: true, ...}`` or ``{ok: false, error}``. A refusal is a result
the model reads, never an exception.

Paths name files inside the agent's workspace. Relative paths land in the file
cache (``<workspace>/files``, ``file_cache_dir``); ``file_cache_dir/<path>`` and
``file_state_dir/<path>`` (``<workspace>/state``) are aliases, and an absolute
path is accepted only when it lies inside the workspace. The rest of the
workspace is the runtime's own state (ledger, memory, triggers, questions): the
model may read it by name but never write it, and the listings do not show it,
so ``list_files`` and ``get_workspace_info`` cover ``files/`` and ``state/``
only, without deny-listed names, and stop after ``LIMITS.list_max_entries`` /
``LIMITS.info_max_entries`` entries (saying so). Writes are checked on the
fully resolved path and opened without following a symlink. Reads and listings
never open anything but regular files and folders, so a FIFO cannot hang the
kernel. ``write_file`` is marked ``side_effects=True``: every call asks the
person first (see :mod:`agent_kernel.engine.ask_policy`), except one no approval could
allow (a protected name, a path outside the writable folders, too much text, the tool
turned off): its precheck refuses it in words before anyone is asked. ``bash`` and ``run_command``
(commands.py, with their own ``LIMITS``) share the path helpers.

With ``Settings.files_uri`` set, ``files/`` lives on an object store
(:mod:`agent_kernel.tools.files_store`): a path is first placed in the workspace
lexically (:func:`store_parts`: aliases, ``..`` and absolute paths worked out on the
text, never on a file system; a URL refused); what lands in ``files/`` becomes checked
parts the store joins to its prefix, and everything else (``state/``, the runtime's
files) is the local workspace as before. A path that reaches the local ``files/``
folder only through a link is refused then: the files are on the store.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any, Literal

from agent_kernel.core.safe_open import folder_fd
from agent_kernel.core.workspace import Workspace, WorkspaceError
from agent_kernel.engine.registry import Field, Tool, ToolContext, ToolError, ok_false
from agent_kernel.tools import files_store
from agent_kernel.tools.files_store import StoreRoot

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
    # "<tool> tool is disabled" when false (tools.read_file.enabled and the like).
    read_file_enabled: bool = True
    write_file_enabled: bool = True
    list_files_enabled: bool = True
    get_workspace_info_enabled: bool = True
    # Listings stop here and say so: a folder of 100k files must not stall the kernel.
    list_max_entries: int = 1000
    info_max_entries: int = 20000
    # Glob patterns (matched against the workspace-relative path and the file name).
    deny_paths: list[str] = field(default_factory=lambda: [
        ".env", "*.pem", "*.key", "id_rsa*", "ledger.jsonl", "ledger.quarantine.jsonl",
        "pending_question.json",
        "ledger-blobs", "ledger-blobs/*"])  # the ledger's large fields (ledger_blobs.py)


LIMITS = FileToolLimits()


def _denied(relative: str) -> str | None:
    """The deny pattern ``relative`` matches, in any case: ``Server.PEM`` is a key as much
    as ``server.pem``, and on a case-insensitive disk ``.ENV`` is ``.env``."""
    folded = relative.casefold()
    name = folded.rsplit("/", 1)[-1]
    for pattern in LIMITS.deny_paths:
        wanted = pattern.casefold()
        if fnmatch.fnmatchcase(folded, wanted) or fnmatch.fnmatchcase(name, wanted):
            return pattern
    return None


def _checked_text(user_path: str) -> str:
    text = (user_path or "").strip()
    if not text:
        raise ValueError("path must be a non-empty string")
    if "\0" in text:
        raise ValueError(f"path {user_path!r} contains a NUL character")
    return text


def resolve(workspace: Workspace, user_path: str) -> Path:
    """Map a model-given path to a file inside the workspace, or raise a clear error."""
    text = _checked_text(user_path)
    base = workspace.root / CACHE_DIR
    for alias, folder in ((CACHE_ALIAS, CACHE_DIR), (STATE_ALIAS, STATE_DIR)):
        if text.rstrip("/") == alias:
            raise ValueError(f"'{alias}' needs a file path after it, like '{alias}/notes.txt'")
        if text.startswith(alias + "/"):
            base, text = workspace.root / folder, text[len(alias) + 1:]
            break
    try:
        candidate = Path(text).expanduser()
    except RuntimeError:  # ~name of no known user
        raise ValueError(f"path {user_path!r} names an unknown home folder; use a relative "
                         f"path (it goes to {CACHE_ALIAS})") from None
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
    _refuse_denied(resolved.relative_to(workspace.root).as_posix(), user_path)


def _refuse_denied(relative: str, user_path: str) -> None:
    pattern = _denied(relative)
    if pattern:
        kind = _PROTECTED_KIND.get(pattern) or (
            f"its name matches {pattern!r} in files.LIMITS.deny_paths")
        raise PermissionError(f"{user_path!r} is a protected file ({kind}); the agent may "
                              "not read or write it")


_PROTECTED_KIND = {
    ".env": "it holds secrets", "*.pem": "a key or certificate", "*.key": "a key",
    "id_rsa*": "an SSH key", "ledger.jsonl": "the ledger, the record of what the agent did",
    "ledger.quarantine.jsonl": "the ledger's quarantine",
    "pending_question.json": "the question the agent is waiting on",
    "ledger-blobs": "the ledger's large fields", "ledger-blobs/*": "the ledger's large fields",
}
"""Why each default protected name is protected, in words (the refusal says it)."""

PATH_GUIDANCE = ("Do not retry with another spelling of the path: the refusal is by where it "
                 "leads. Use a relative path (it goes to file_cache_dir) or "
                 "file_state_dir/<path>.")


def _writable_parts(workspace: Workspace, resolved: Path, user_path: str,
                    rule: str = "write only inside") -> tuple[str, list[str]]:
    """Split a resolved path into its writable folder (files or state) and the parts below.

    ``rule`` words the refusal of a path outside them ("the file tools list only").
    """
    parts = list(resolved.relative_to(workspace.root).parts)
    if not parts or parts[0] not in WRITABLE_DIRS:
        shown = "/".join(parts) or "the workspace folder itself"
        raise PermissionError(
            f"path {user_path!r} resolves to {shown}, which belongs to the runtime; "
            f"{rule} {CACHE_DIR}/ ({CACHE_ALIAS}) or {STATE_DIR}/ ({STATE_ALIAS})")
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
    the check and the write: every step is opened with ``O_NOFOLLOW`` (the runtime's
    shared walk, :func:`agent_kernel.core.safe_open.folder_fd`).
    """
    with folder_fd(base, "/".join(parts), create=create) as fd:
        yield fd


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


Result = dict[str, Any]
_MAX_DEPTH = 64  # get_workspace_info descends no deeper (and holds at most this many fds)
_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _failed(error: str) -> Result:
    return {"ok": False, "error": error}


def _answer(tool_name: str, work: Callable[[], Result]) -> Result:
    """Run ``work`` as spec 004 answers: its result, or ``{ok: false, error}``."""
    if not getattr(LIMITS, f"{tool_name}_enabled"):
        return _failed(f"{tool_name} tool is disabled")  # spec 003's words
    try:
        return work()
    except (OSError, ValueError, RuntimeError) as exc:
        if isinstance(exc, OSError) and exc.strerror:  # the system's, not one of ours
            return _failed(f"{tool_name} failed: {exc.strerror}")
        return _failed(str(exc) or type(exc).__name__)


def _read(workspace: Workspace, path: str, root: StoreRoot | None = None) -> Result:
    if root is not None and (parts := store_parts(workspace, path)) is not None:
        return _store_read(root, parts)
    target = resolve(workspace, path)
    if root is not None:
        not_local_cache(workspace, target, path)
    shown = _shown(workspace, target)
    fd, info = _open_regular(target, os.O_RDONLY, shown, "read_file")
    try:
        if info.st_nlink > 1:  # a hard link a person or a tarball put here: the key's?
            from agent_kernel.core.trust import is_key

            if is_key(info):
                raise PermissionError(f"{shown} is another name (a hard link) for the "
                                      "approval signing key; read_file refuses it")
        opened = _opened_path(fd)
        if opened is not None:  # a folder swapped for a symlink after resolve()
            try:
                _check_denied(workspace, workspace.resolve(str(opened)), path)
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
    return {"ok": True, "content": text}


def read_file(
    path: Annotated[str, Field(min_length=1, max_length=4096)], ctx: ToolContext
) -> Result:
    """Read a text file from the workspace (long files are truncated).

    Args:
        path: File path. Relative paths are in file_cache_dir; file_cache_dir/<path> and
            file_state_dir/<path> aliases are supported.
    """
    return _answer("read_file", lambda: _read(ctx.workspace, path, store_of(ctx)))


def _write(workspace: Workspace, path: str, content: str, mode: str,
           root: StoreRoot | None = None) -> Result:
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"content is not valid text: a lone surrogate at character "
                         f"{exc.start}; nothing was written") from None
    if len(data) > LIMITS.write_max_bytes:
        raise ValueError(f"content is {len(data)} bytes; write_file allows at most "
                         f"{LIMITS.write_max_bytes} (tools.write_file.max_bytes)")
    if root is not None and (store := store_parts(workspace, path)) is not None:
        return _store_write(root, store, data, mode)
    target = resolve(workspace, path)
    if root is not None:
        not_local_cache(workspace, target, path)
    folder, parts = _writable_parts(workspace, target, path)
    shown = _shown(workspace, target)
    if not parts:
        raise IsADirectoryError(f"{shown} is a folder, not a file")
    base = _writable_root(workspace, folder)
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
    return {"ok": True, "path": shown, "bytes": len(data), "mode": mode}


def write_file(
    path: Annotated[str, Field(min_length=1, max_length=4096)],
    content: str,
    ctx: ToolContext,
    mode: Literal["overwrite", "append"] = "overwrite",
) -> Result:
    """Write a text file in file_cache_dir or file_state_dir; parent folders are created.

    Args:
        path: Target path. Relative paths go to file_cache_dir; file_state_dir/<path> is
            also supported.
        content: The text to write.
        mode: "overwrite" (default) or "append".
    """
    return _answer("write_file", lambda: _write(ctx.workspace, path, content, mode,
                                                store_of(ctx)))


def _listed_folder(workspace: Workspace, user_path: str | None) -> tuple[str, list[str]]:
    """The file folder (files or state) and the parts below it that ``user_path`` names."""
    text = (user_path or "").strip()
    if text in ("", ".", "./", CACHE_ALIAS, CACHE_ALIAS + "/"):
        return CACHE_DIR, []
    if text in (STATE_ALIAS, STATE_ALIAS + "/"):
        return STATE_DIR, []
    return _writable_parts(workspace, resolve(workspace, text), str(user_path),
                           rule="the file tools list only")


def _open_folder(workspace: Workspace, folder: str, parts: list[str]) -> int | None:
    """An fd for ``<workspace>/folder/parts...`` opened without following a symlink at any
    step; None when the file folder itself does not exist yet (nothing written)."""
    shown = "/".join([folder, *parts])
    try:
        fd = os.open(workspace.root / folder, _FOLDER_FLAGS)
    except FileNotFoundError:
        if parts:
            raise FileNotFoundError(f"no such folder: {shown}") from None
        return None
    except OSError:
        raise PermissionError(f"{folder}/ in the workspace is not a plain folder (a "
                              f"symlink?); move it away and try again") from None
    for part in parts:
        try:
            child = os.open(part, _FOLDER_FLAGS, dir_fd=fd)
        except OSError as exc:
            with contextlib.suppress(OSError):  # O_NOFOLLOW meets a symlink as ENOTDIR
                if stat.S_ISLNK(os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode):
                    exc.errno = errno.ELOOP
            os.close(fd)
            if exc.errno == errno.ENOENT:
                raise FileNotFoundError(f"no such folder: {shown}") from None
            if exc.errno == errno.ENOTDIR:
                raise NotADirectoryError(f"{shown} is not a folder; read it with "
                                         f"read_file") from None
            raise PermissionError(f"cannot open {shown}: it changed while it was opened "
                                  f"({exc.strerror})") from None
        os.close(fd)
        fd = child
    return fd


def _kind(entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        return "symlink"
    if entry.is_dir(follow_symlinks=False):
        return "directory"
    return "file" if entry.is_file(follow_symlinks=False) else "other"


def _list(workspace: Workspace, path: str | None, root: StoreRoot | None = None) -> Result:
    if root is not None:
        text = (path or "").strip()
        if text in ("", ".", "./", CACHE_ALIAS, CACHE_ALIAS + "/"):
            return _store_list(root, [])
        if text not in (STATE_ALIAS, STATE_ALIAS + "/"):
            if (store := store_parts(workspace, text)) is not None:
                return _store_list(root, store)
            not_local_cache(workspace, resolve(workspace, text), text)
    folder, parts = _listed_folder(workspace, path)
    where = "/".join([folder, *parts])
    _check_denied(workspace, workspace.root / where, path or where)
    fd = _open_folder(workspace, folder, parts)
    entries: list[dict[str, str]] = []
    truncated = False
    if fd is not None:
        try:
            with os.scandir(fd) as listing:  # names and d_type only: nothing is opened
                for entry in listing:
                    if _denied(f"{where}/{entry.name}"):
                        continue
                    if len(entries) >= LIMITS.list_max_entries:
                        truncated = True
                        break
                    entries.append({"name": entry.name, "type": _kind(entry)})
        finally:
            os.close(fd)
    entries.sort(key=lambda e: (e["type"] != "directory", e["name"]))
    result: Result = {"ok": True, "path": where, "entries": entries, "truncated": truncated}
    if truncated:
        result["note"] = (f"only the first {LIMITS.list_max_entries} entries the file system "
                          f"returned are listed (list_max_entries); list a subfolder")
    return result


def list_files(
    ctx: ToolContext,
    path: Annotated[str | None, Field(max_length=4096)] = None,
) -> Result:
    """List the files and folders in file_cache_dir (default) or a folder inside it.

    Args:
        path: Folder to list: relative to file_cache_dir, or file_state_dir,
            file_state_dir/<path>. Default: file_cache_dir itself.
    """
    return _answer("list_files", lambda: _list(ctx.workspace, path, store_of(ctx)))


def _walk(workspace: Workspace, folder: str, budget: list[int]) -> Iterator[os.stat_result]:
    """lstat of every entry below ``folder`` that is not deny-listed, depth first, without
    following a symlink; stops when ``budget[0]`` reaches zero or ``_MAX_DEPTH`` is hit."""
    fd = _open_folder(workspace, folder, [])
    if fd is None:
        return
    stack: list[tuple[int, Any, str]] = [(fd, os.scandir(fd), folder)]
    try:
        while stack:
            parent, listing, where = stack[-1]
            entry = next(listing, None)
            if entry is None:
                stack.pop()
                os.close(parent)
                continue
            relative = f"{where}/{entry.name}"
            if _denied(relative):
                continue
            if budget[0] <= 0:
                budget.append(1)  # tells the caller it stopped early
                return
            budget[0] -= 1
            with contextlib.suppress(OSError):  # gone meanwhile
                info = os.stat(entry.name, dir_fd=parent, follow_symlinks=False)
                yield info
                if stat.S_ISDIR(info.st_mode):
                    if len(stack) >= _MAX_DEPTH:
                        budget.append(1)
                        continue
                    child = os.open(entry.name, _FOLDER_FLAGS, dir_fd=parent)
                    stack.append((child, os.scandir(child), relative))
    finally:
        for parent, listing, _where in stack:
            listing.close()
            os.close(parent)


def _info(workspace: Workspace, root: StoreRoot | None = None) -> Result:
    if root is not None:
        return _store_info(workspace, root)
    budget = [LIMITS.info_max_entries]
    files, folders, size, newest = _tally(workspace, WRITABLE_DIRS, budget)
    return _info_result(files, folders, size, newest, len(budget) > 1)


def _tally(workspace: Workspace, top: tuple[str, ...], budget: list[int],
           files: int = 0, folders: int = 0, size: int = 0, newest: float = 0.0
           ) -> tuple[int, int, int, float]:
    """Files, folders, bytes and the newest change under the local ``top`` folders, added
    to the counts given (the walk spends ``budget``)."""
    for folder in top:
        for info in _walk(workspace, folder, budget):
            if stat.S_ISDIR(info.st_mode):
                folders += 1
            elif stat.S_ISREG(info.st_mode):
                files += 1
                size += info.st_size
            newest = max(newest, info.st_mtime)
    return files, folders, size, newest


def _info_result(files: int, folders: int, size: int, newest: float, truncated: bool,
                 stored_at: str | None = None) -> Result:
    modified = (datetime.fromtimestamp(newest, timezone.utc).isoformat(timespec="seconds")
                .replace("+00:00", "Z") if newest else None)
    result: Result = {"ok": True, "info": {
        "fileCount": files, "directoryCount": folders, "totalSize": size,
        "lastModified": modified}, "truncated": truncated}
    if stored_at is not None:
        result["stored_at"] = stored_at
    if truncated:
        result["note"] = (f"counted the first {LIMITS.info_max_entries} entries "
                          f"(info_max_entries) at most {_MAX_DEPTH} folders deep; the "
                          f"totals are lower bounds")
    return result


def get_workspace_info(ctx: ToolContext) -> Result:
    """Count the files and folders in file_cache_dir and file_state_dir, their total size in
    bytes and when the newest changed."""
    return _answer("get_workspace_info", lambda: _info(ctx.workspace, store_of(ctx)))

# files/ on an object store (Settings.files_uri): the paths worked out here, the I/O there.

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:/")


def store_of(ctx: ToolContext, checked: bool = True) -> StoreRoot | None:
    """The object store ``files/`` lives on for this call's agent, or None: the local folder
    (``checked``: see :func:`files_store.root_of`)."""
    settings = getattr(ctx.agent, "settings", None)
    return files_store.root_of(settings, checked) if settings is not None else None


def store_parts(workspace: Workspace, user_path: str) -> list[str] | None:
    """The parts below ``files/`` that ``user_path`` names, worked out on the text alone
    (aliases, ``..``, absolute paths), or None when it names a place outside ``files/``
    (``state/``, the runtime's files: the local workspace decides, as before).

    Nothing here touches a file system or lets a string choose a protocol: a path that
    looks like a URL (``s3://other/x``, ``file:///etc/passwd``) is refused, and the parts
    returned are plain names (no empty, ``.`` or ``..`` one)."""
    text = _checked_text(user_path)
    if _URL.match(text) or "://" in text:
        raise ValueError(f"path {user_path!r} looks like a URL; the file tools take paths in "
                         f"the workspace, never a URL: use a relative path (it goes to "
                         f"{CACHE_ALIAS})")
    folder, rest = CACHE_DIR, text
    for alias, name in ((CACHE_ALIAS, CACHE_DIR), (STATE_ALIAS, STATE_DIR)):
        if text.rstrip("/") == alias:
            raise ValueError(f"'{alias}' needs a file path after it, like '{alias}/notes.txt'")
        if text.startswith(alias + "/"):
            folder, rest = name, text[len(alias) + 1:]
            break
    if rest.startswith("~"):
        try:
            rest = str(Path(rest).expanduser())
        except RuntimeError:
            return None  # resolve() words it
    if os.path.isabs(rest):
        relative = os.path.relpath(os.path.normpath(rest), workspace.root)
    else:
        relative = os.path.normpath(f"{folder}/{rest}")
    parts = relative.split("/")
    if parts[0] != CACHE_DIR:
        return None
    parts = [p for p in parts[1:] if p not in ("", ".")]
    if ".." in parts:  # normpath leaves none below the first part; kept as a guard
        raise ValueError(f"path {user_path!r} could not be placed in {CACHE_DIR}/")
    _refuse_denied("/".join([CACHE_DIR, *parts]), user_path)
    return parts


def store_where(root: StoreRoot, parts: list[str]) -> str:
    """The approval card's ``where`` for a write to ``files/<parts>`` on the store, once the
    key is one the write can send as shown (:func:`files_store.check_key`: no invisible
    character makes the card read as another place); refusals as ``ValueError`` or ``Refused``."""
    if not parts:
        raise ValueError(f"{CACHE_DIR} is a folder, not a file")
    files_store.check_key(root, parts, approved=True)
    return f"{files_store.shown_of(parts)}, stored at {root.words(parts)}"


def not_local_cache(workspace: Workspace, resolved: Path, user_path: str) -> None:
    """With ``files/`` on a store, a path that reaches the local folder (through a link,
    or a spelling of the workspace's path the text did not match) is refused."""
    parts = resolved.relative_to(workspace.root).parts
    if parts and parts[0] == CACHE_DIR:
        raise PermissionError(f"path {user_path!r} leads to the local {CACHE_DIR}/ folder, "
                              f"but {CACHE_ALIAS} is on the object store: use a relative path")


def _store_read(root: StoreRoot, parts: list[str]) -> Result:
    shown = files_store.shown_of(parts)
    if not parts:
        raise IsADirectoryError(f"{shown} is a folder, not a file")
    limit = LIMITS.read_max_bytes
    data, size = files_store.call(root, shown, lambda store: store.read(parts, limit))
    text, clipped = _clip(data, limit)
    if clipped:
        text += f"\n...[truncated: showed {limit} of {size} bytes]"
    return {"ok": True, "content": text}


def _store_write(root: StoreRoot, parts: list[str], data: bytes, mode: str) -> Result:
    shown = files_store.shown_of(parts)
    if not parts:
        raise IsADirectoryError(f"{shown} is a folder, not a file")
    files_store.call(root, shown, lambda store: store.write(parts, data, mode == "append"))
    return {"ok": True, "path": shown, "bytes": len(data), "mode": mode,
            "stored_at": root.url(parts)}


def _store_list(root: StoreRoot, parts: list[str]) -> Result:
    where = files_store.shown_of(parts)
    limit = LIMITS.list_max_entries
    entries, stopped = files_store.call(
        root, where, lambda store: store.list(parts, limit, lambda rel: bool(_denied(rel))))
    entries.sort(key=lambda e: (e["type"] != "directory", e["name"]))
    result: Result = {"ok": True, "path": where, "entries": entries,
                      "truncated": stopped is not None, "stored_at": root.url(parts)}
    if stopped == "limit":
        result["note"] = (f"only the first {limit} entries the object store returned are "
                          f"listed (list_max_entries); list a subfolder")
    elif stopped == "scanned":
        result["note"] = (f"the listing stopped after {limit * files_store.SCAN_FACTOR} keys, "
                          f"most of them protected names; list a subfolder")
    return result


def _store_info(workspace: Workspace, root: StoreRoot) -> Result:
    budget = [LIMITS.info_max_entries]
    files, folders, size, newest, stopped = files_store.call(
        root, CACHE_DIR, lambda store: store.count(budget[0], lambda rel: bool(_denied(rel)),
                                           _MAX_DEPTH))
    budget[0] -= files + folders
    files, folders, size, newest = _tally(workspace, (STATE_DIR,), budget, files, folders,
                                          size, newest)
    return _info_result(files, folders, size, newest, stopped or len(budget) > 1,
                        root.url([]))



def _write_precheck(values: dict[str, object], ctx: ToolContext) -> dict[str, object] | None:
    """Refuse, before anyone is asked, a write no approval could allow: the tool turned off,
    too much text, a path outside the files the agent may write or a protected one. With
    ``files/`` on an object store, the card is told where the file will be (``where``)."""
    if not LIMITS.write_file_enabled:
        raise ToolError("write_file tool is disabled",
                        summary="Refused without asking you: writing files is turned off.")
    path, content = str(values["path"]), str(values["content"])
    try:
        size = len(content.encode("utf-8", errors="surrogatepass"))
        if size > LIMITS.write_max_bytes:
            raise ValueError(f"the text is {size} bytes; write_file writes at most "
                             f"{LIMITS.write_max_bytes} (files.LIMITS.write_max_bytes)")
        root = store_of(ctx)
        if root is not None and (parts := store_parts(ctx.workspace, path)) is not None:
            return {"where": store_where(root, parts)}
        resolved = resolve(ctx.workspace, path)
        if root is not None:
            not_local_cache(ctx.workspace, resolved, path)
        _writable_parts(ctx.workspace, resolved, path)
    except (ValueError, PermissionError, files_store.Refused) as exc:
        raise ToolError(f"{exc}. Nothing was written.",
                        summary=f"Refused without asking you: {exc}.",
                        guidance=PATH_GUIDANCE) from None
    return None


TOOLS = [
    # Spec 004: every failure {ok: false, error}, refusals before the call included.
    Tool(read_file, source="builtin", side_effects=False, failure=ok_false),
    Tool(write_file, source="builtin", side_effects=True, precheck=_write_precheck,
         failure=ok_false),
    Tool(list_files, source="builtin", side_effects=False, failure=ok_false),
    Tool(get_workspace_info, source="builtin", side_effects=False, failure=ok_false),
]
