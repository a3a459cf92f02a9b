"""Opening the runtime's own files in the workspace without following a link.

A workspace can come from a cloned repository (``.agent/`` beside the notebook), and git
keeps symbolic links: ``.agent/memory.md -> ../../.bashrc`` would send the agent's own
appends out of the workspace. Every runtime reader and writer of a workspace file
therefore opens it here: the path is walked one component at a time from the workspace
root, each folder opened with ``O_DIRECTORY | O_NOFOLLOW`` relative to the one before
(missing folders are made the same way), and the file itself with ``O_NOFOLLOW |
O_NONBLOCK`` and checked with ``fstat``. A link anywhere below the root, or a FIFO,
socket or device where a file belongs, is refused at once with :class:`UnsafeWorkspacePath`,
whose message tells the person what to remove; nothing waits on a FIFO. The root itself
is the one folder that may be reached through a link (see
:class:`agent_kernel.core.workspace.Workspace` for when that is allowed).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import threading
import time
import weakref
from collections.abc import Iterator
from pathlib import Path, PurePath
from types import TracebackType

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_KINDS = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFSOCK: "a socket",
          stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
          stat.S_IFDIR: "a folder", stat.S_IFLNK: "a symbolic link"}


class UnsafeWorkspacePath(PermissionError):
    """A runtime path in the workspace is a link or not a regular file; the message says
    what it is and what to remove (``kind``: "a symbolic link", "a FIFO (named pipe)"...)."""

    kind = ""


def _shown(parts: list[str]) -> str:
    return "/".join(parts) or "the workspace folder"


def _refused(root: Path, parts: list[str], kind: str) -> UnsafeWorkspacePath:
    where = root.joinpath(*parts)
    if kind == "a symbolic link":
        try:
            target = os.readlink(where)
        except OSError:
            target = "somewhere else"
        refused = UnsafeWorkspacePath(
            f"the workspace's {_shown(parts)} is a symbolic link (to {target}); the agent "
            f"never follows links in its workspace, so nothing was read or written there. "
            f"Remove the link ({where}) and try again")
    else:
        refused = UnsafeWorkspacePath(
            f"the workspace's {_shown(parts)} is {kind}, not a regular file; the agent opens "
            f"only regular files in its workspace, so nothing was read or written there. Remove "
            f"it ({where}) and try again")
    refused.kind = kind
    return refused


def _kind_at(parent: int, name: str) -> str | None:
    """What ``name`` in the folder ``parent`` is, without following it (None: gone)."""
    try:
        mode = os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
    except OSError:
        return None
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def parts_of(root: Path, path: str | PurePath) -> list[str]:
    """``path`` (absolute under ``root``, or relative to it) as plain names below the root."""
    candidate = PurePath(path)
    if candidate.is_absolute():
        try:
            candidate = candidate.relative_to(root)
        except ValueError:
            raise UnsafeWorkspacePath(f"{path} is not inside the workspace {root}") from None
    parts = [p for p in candidate.parts if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeWorkspacePath(f"{path} climbs out of the workspace ('..')")
    return parts


@contextlib.contextmanager
def folder_fd(root: Path, folder: str | PurePath = "", create: bool = False
              ) -> Iterator[int]:
    """An fd for the folder ``root/folder``, walked without following a link at any step.

    ``create`` makes missing folders on the way. Raises FileNotFoundError when one is
    missing (and not made), :class:`UnsafeWorkspacePath` for a link or a non-folder.
    """
    parts = parts_of(root, folder)
    if create:
        root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for index, part in enumerate(parts):
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
            try:
                child = os.open(part, _FOLDER, dir_fd=fd)
            except FileNotFoundError:
                raise
            except OSError as exc:  # O_NOFOLLOW meets a link as ELOOP or ENOTDIR
                kind = _kind_at(fd, part)
                if kind is None:
                    raise
                raise _refused(root, parts[:index + 1], kind) from exc
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def open_fd(root: Path, path: str | PurePath, flags: int, mode: int = 0o644,
            create_folders: bool = False) -> int:
    """A blocking fd for the regular file ``root/path`` opened with ``flags``; never follows a
    link, never waits on a FIFO. The caller closes it.

    Raises FileNotFoundError when it (or a folder) is missing, :class:`UnsafeWorkspacePath`
    for a link or a file that is not regular, OSError for other failures.
    """
    parts = parts_of(root, path)
    if not parts:
        raise UnsafeWorkspacePath("a file name is needed, not the workspace folder itself")
    with folder_fd(root, PurePath(*parts[:-1]) if parts[1:] else "",
                   create=create_folders) as parent:
        name = parts[-1]
        try:
            fd = os.open(name, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode,
                         dir_fd=parent)
        except FileNotFoundError:
            raise
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR, errno.ENOTDIR,
                             errno.EWOULDBLOCK):
                kind = _kind_at(parent, name)
                if kind is not None:
                    raise _refused(root, parts, kind) from exc
            raise
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise _refused(root, parts, _KINDS.get(stat.S_IFMT(info.st_mode),
                                                       "not a regular file"))
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd


def read_bytes(root: Path, path: str | PurePath, limit: int | None = None) -> bytes:
    """The bytes of the regular file ``root/path`` (at most ``limit``)."""
    fd = open_fd(root, path, os.O_RDONLY)
    try:
        chunks: list[bytes] = []
        wanted = limit if limit is not None else -1
        while wanted != 0:
            chunk = os.read(fd, 1 << 20 if wanted < 0 else min(wanted, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            if wanted > 0:
                wanted -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


class TooLarge(ValueError):
    """A file is longer than the reader allows (``size`` bytes at least); nothing was read."""

    def __init__(self, message: str, size: int) -> None:
        super().__init__(message)
        self.size = size


def read_capped(root: Path, path: str | PurePath, max_bytes: int) -> bytes:
    """The bytes of ``root/path``, or :class:`TooLarge` when it holds more than ``max_bytes``
    (checked with ``fstat`` before reading, and again while reading)."""
    fd = open_fd(root, path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if size > max_bytes:
            raise TooLarge(f"{size} bytes; at most {max_bytes} are read", size)
        chunks: list[bytes] = []
        total = 0
        while chunk := os.read(fd, min(1 << 20, max_bytes + 1 - total) or 1):
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise TooLarge(f"more than {max_bytes} bytes; at most {max_bytes} are read",
                               total)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(root: Path, path: str | PurePath, limit: int | None = None) -> str:
    """:func:`read_bytes` decoded as UTF-8 (a bad byte raises UnicodeDecodeError)."""
    return read_bytes(root, path, limit).decode("utf-8")


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd``."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def append_bytes(root: Path, path: str | PurePath, data: bytes) -> None:
    """Append ``data`` to ``root/path``, making it (and its folders) when missing."""
    fd = open_fd(root, path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, create_folders=True)
    try:
        write_all(fd, data)
    finally:
        os.close(fd)


def write_atomic(root: Path, path: str | PurePath, data: bytes, fsync: bool = False) -> None:
    """Replace ``root/path`` with ``data`` through a temporary file in the same folder.

    The rename replaces a link that stands at the name itself; it never writes through it.
    """
    parts = parts_of(root, path)
    if not parts:
        raise UnsafeWorkspacePath("a file name is needed, not the workspace folder itself")
    folder = PurePath(*parts[:-1]) if parts[1:] else ""
    with folder_fd(root, folder, create=True) as parent:
        write_atomic_at(parent, parts[-1], data, fsync)


def _file_name(name: str) -> None:
    """Refuse a ``name`` that is not one file's name in its folder."""
    if not name or "/" in name or name in (".", ".."):
        raise UnsafeWorkspacePath(f"not a file name: {name!r}")


def write_atomic_at(parent: int, name: str, data: bytes, fsync: bool = False) -> None:
    """:func:`write_atomic` in the folder open as ``parent`` (from :func:`folder_fd`): for a
    writer that puts many files in one folder without walking to it each time."""
    _file_name(name)
    temporary = f".{name}.{os.getpid()}.{threading.get_ident()}.tmp"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temporary, dir_fd=parent)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                 | os.O_CLOEXEC, 0o644, dir_fd=parent)
    try:
        try:
            write_all(fd, data)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, name, src_dir_fd=parent, dst_dir_fd=parent)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=parent)
        raise
    if fsync:
        os.fsync(parent)


def unlink_at(parent: int, name: str) -> bool:
    """Remove the name ``name`` in the folder open as ``parent`` (a link itself, never its
    target); False when missing."""
    _file_name(name)
    try:
        os.unlink(name, dir_fd=parent)
    except FileNotFoundError:
        return False
    return True


def unlink(root: Path, path: str | PurePath) -> bool:
    """Remove the name ``root/path`` (a link itself, never its target); False when missing."""
    parts = parts_of(root, path)
    folder = PurePath(*parts[:-1]) if parts[1:] else ""
    try:
        with folder_fd(root, folder) as parent:
            os.unlink(parts[-1], dir_fd=parent)
    except FileNotFoundError:
        return False
    return True


def names(root: Path, folder: str | PurePath, suffix: str = "") -> list[str]:
    """The sorted names in ``root/folder`` ending with ``suffix``, hidden ones left out as a
    glob leaves them ([] when the folder is missing)."""
    try:
        with folder_fd(root, folder) as fd, os.scandir(fd) as found:
            return sorted(e.name for e in found
                          if e.name.endswith(suffix) and not e.name.startswith("."))
    except FileNotFoundError:
        return []


def ensure_folder(root: Path, folder: str | PurePath) -> Path:
    """Make ``root/folder`` (and the folders above it) without following a link; refuses one
    that is a link or lies under one. Returns the path."""
    with folder_fd(root, folder, create=True):
        pass
    return root.joinpath(*parts_of(root, folder))


class LockTimeout(TimeoutError):
    """A :class:`WorkspaceLock` was not free within its timeout."""


class WorkspaceLock:
    """A cross-process lock on ``root/path`` (``flock``), opened through :func:`open_fd`, so a
    planted link is refused and its target never truncated; re-entrant within a process.

    ``keep_open`` keeps the lock file open between holds (for a lock taken many times a
    second, the ledger's): the next hold locks the same open file, then checks with one
    ``lstat`` that the name still is that file, and opens the name again (the same walk)
    when it is not, as a lock not kept is opened for every hold: a lock file removed or
    replaced between holds is not the one held. Only for a ``path`` of one name (the
    check then reads what the walk would). A forked child never uses the parent's open
    file (:class:`KeptFile`)."""

    def __init__(self, root: Path, path: str | PurePath, timeout: float = -1,
                 keep_open: bool = False) -> None:
        self.root, self.path, self.timeout = root, path, timeout
        self._thread_lock = threading.RLock()
        self._fd: int | None = None
        self._count = 0
        self._kept: KeptFile | None = None
        if keep_open:
            parts = parts_of(root, path)
            if len(parts) != 1:
                raise ValueError(f"a lock kept open is one name in its folder, not {path}")
            self._kept = KeptFile(root, parts[0], os.O_RDWR | os.O_CREAT, create_folder=True)

    @property
    def is_locked(self) -> bool:
        """Whether this process holds it."""
        return self._fd is not None

    def acquire(self, timeout: float | None = None) -> _Held:
        """Take the lock (``timeout`` seconds at most, negative: wait); raises LockTimeout."""
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit if limit >= 0 else None
        if not self._thread_lock.acquire(timeout=-1 if limit < 0 else limit):
            raise LockTimeout(f"{self.path} is held by another thread")
        try:
            if self._count == 0:
                self._fd = self._lock_file(deadline)
            self._count += 1
        except BaseException:
            self._thread_lock.release()
            raise
        return _Held(self)

    def _lock_file(self, deadline: float | None) -> int:
        """The lock file, open and locked (a kept one: still the file at its name)."""
        kept = self._kept
        if kept is None:
            fd = open_fd(self.root, self.path, os.O_RDWR | os.O_CREAT, create_folders=True)
            try:
                self._flock(fd, deadline)
            except BaseException:
                os.close(fd)
                raise
            return fd
        fd = kept.fd(check=False)
        self._flock(fd, deadline)
        if kept.still_named():
            return fd
        with contextlib.suppress(OSError):  # a file no one else locks any more
            fcntl.flock(fd, fcntl.LOCK_UN)
        kept.close()
        fd = kept.fd(check=False)  # walked and opened afresh, as a lock not kept is
        self._flock(fd, deadline)
        return fd

    def _flock(self, fd: int, deadline: float | None) -> None:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if deadline is not None and time.monotonic() >= deadline:
                    raise LockTimeout(f"{self.path} is held by another process") from None
                time.sleep(0.02)

    def release(self) -> None:
        """Let go once (the file lock goes with the last release)."""
        if self._count == 0:
            return
        self._count -= 1
        if self._count == 0 and self._fd is not None:
            fd, self._fd = self._fd, None
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            if self._kept is None:
                os.close(fd)
        self._thread_lock.release()

    def close_kept(self, *guarded: KeptFile) -> bool:
        """Close a kept lock file now, and the files only used under this lock
        (``guarded``), unless a thread holds the lock (False then: nothing was closed)."""
        if not self._thread_lock.acquire(blocking=False):
            return False
        try:
            if self._count:  # this thread holds it
                return False
            for kept in (self._kept, *guarded):
                if kept is not None:
                    kept.close()
            return True
        finally:
            self._thread_lock.release()

    def __enter__(self) -> WorkspaceLock:
        self.acquire()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.release()


class KeptFile:
    """A regular file ``root/name`` opened once through :func:`open_fd` and kept open: each
    :meth:`fd` checks with one ``lstat`` that the name still is that file (the walk's
    answer, for one name below ``root``), and opens the name again when it is not, or when
    it is gone (``flags`` with ``O_CREAT`` then makes it). The caller serialises its uses.

    A forked child closes its copy and opens the name afresh: an ``flock`` on a copy would
    be the parent's lock, held by both at once."""

    def __init__(self, root: Path, name: str, flags: int, create_folder: bool = False) -> None:
        _file_name(name)
        self.root, self.name, self.flags, self.create_folder = root, name, flags, create_folder
        self._fd: int | None = None
        self._ident = (0, 0)
        _KEPT.add(self)

    def fd(self, check: bool = True) -> int:
        """The open file, still the one at its name (opened again if not; ``check=False``:
        the open file as it is, for a caller that checks later); raises as
        :func:`open_fd`."""
        if self._fd is not None and (not check or self.still_named()):
            return self._fd
        self.close()
        fd = open_fd(self.root, self.name, self.flags, create_folders=self.create_folder)
        info = os.fstat(fd)
        self._fd, self._ident = fd, (info.st_dev, info.st_ino)
        return fd

    def still_named(self) -> bool:
        """Whether the name in the folder is still the open file (never through a link)."""
        try:
            info = os.stat(self.root / self.name, follow_symlinks=False)
        except OSError:
            return False
        return (info.st_dev, info.st_ino) == self._ident and stat.S_ISREG(info.st_mode)

    def close(self) -> None:
        """Close it (the next :meth:`fd` opens the name again)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


_KEPT: weakref.WeakSet[KeptFile] = weakref.WeakSet()
"""Every :class:`KeptFile` of the process, for a forked child to close."""


def _close_kept_in_child() -> None:
    for kept in list(_KEPT):
        kept.close()


os.register_at_fork(after_in_child=_close_kept_in_child)


class _Held:
    """What :meth:`WorkspaceLock.acquire` returns: ``with lock.acquire(timeout=1):`` holds
    it once and lets go at the end."""

    def __init__(self, lock: WorkspaceLock) -> None:
        self.lock = lock

    def __enter__(self) -> WorkspaceLock:
        return self.lock

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.lock.release()
