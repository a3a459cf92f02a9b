"""Trust: approvals of model-written code that can be checked later, against a key not on disk
next to the code.

Code a model wrote (a trigger's condition today) may run only when an approval of *exactly*
that code is on record, and a restored time-based trigger (recurring, once, scheduled, cron)
runs only when the record that this user made it (its ``trigger_created`` record, signed
when it was made) or the person's approval of exactly it is on record. Such a record
carries ``digest``, the SHA-256 of canonical JSON of what was approved or made, and
``mac``, an HMAC-SHA256 of the digest under a per-user key kept outside the workspace
(``<jupyter data dir>/agent_kernel/approval.key``,
32 random bytes, mode 0600 in a 0700 folder that every sandbox hides; a key that is a link,
has another name (a hard link), is another user's, readable by others or inside the
workspace is refused, and every form of it
is masked by :func:`agent_kernel.core.redaction.add_secret` once this process has read it;
``python -m agent_kernel trust rotate`` replaces it). The hash chain alone proves nothing
to us: anyone who can write the workspace (a cloned repository shipping a ``.agent/``
folder, say) can append a record and recompute every hash. With the key, only approvals
made on this machine by this user count; a workspace copied elsewhere comes back "needs
approval". Anything that cannot be checked (no record, changed code, a broken chain, a
missing or unreadable key) is *not* approved: every failure here fails closed.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import os
import secrets
import stat
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_kernel.core.ledger_lines import canonical
from agent_kernel.core.redaction import add_secret, scrub

if TYPE_CHECKING:
    from agent_kernel.core.ledger import Ledger

KEY_BYTES = 32
KEY_FILE = "approval.key"
KEY_FOLDER = "agent_kernel"


class TrustError(RuntimeError):
    """The approval key cannot be read or made."""


# A relative Jupyter data folder, made absolute where this process first looked (its
# working directory may change later, with %cd), and the keys this process has read or
# made: their folder and (device, inode), which the sandboxes and file tools refuse.
_pinned: dict[str, Path] = {}
_read: dict[Path, tuple[int, int]] = {}


def digest(payload: dict[str, Any]) -> str:
    """SHA-256 (hex) of ``payload`` in its saved, scrubbed form."""
    return hashlib.sha256(canonical(scrub(payload))).hexdigest()


def condition_digest(agent_id: str, condition: dict[str, Any] | None, prompt: str) -> str:
    """The digest of a conditional trigger's code: agent, condition and prompt.

    The prompt is included so a copied approved trigger with another prompt does not
    inherit the approval. Values are scrubbed first, exactly as the trigger store saves
    them, so a trigger whose prompt held a secret still matches after a restore.
    """
    return digest({"what": "condition", "agent_id": agent_id, "condition": condition,
                   "prompt": prompt})


def trigger_digest(agent_id: str, kind: str, prompt: str, definition: dict[str, Any]) -> str:
    """The digest of a time-based trigger: its agent, kind, prompt and what else decides
    when and how it runs (``definition``: interval, run_at, cron, timeout, model, trace_id).

    Signed when the trigger is made, so a restore can tell a trigger this user's agent or
    notebook made from one written into ``triggers/`` by anyone else.
    """
    return digest({"what": "trigger", "agent_id": agent_id, "kind": kind, "prompt": prompt,
                   **definition})


MISSING_CONDITION = "no approval of this exact condition and prompt is on record"
MISSING_TRIGGER = ("no record that you (or your agent) made this exact trigger on this machine, "
                   "and no approval of it: a trigger file written or edited by hand, copied "
                   "from elsewhere, or saved before triggers were signed (those ask once)")


_DATA_DIR_ENV = ("JUPYTER_DATA_DIR", "JUPYTER_PLATFORM_DIRS", "XDG_DATA_HOME", "HOME",
                 "APPDATA", "USERPROFILE")
"""What ``jupyter_data_dir`` reads from the environment."""
_folders: dict[tuple[str | None, ...], Path] = {}


def key_folder() -> Path:
    """The folder that holds this user's approval key (every sandbox hides it).

    Worked out once per value of the environment variables Jupyter reads for it (every
    agent asks, and a team makes one per task: Jupyter resolves the home folder's links
    each time)."""
    env = tuple(os.environ.get(name) for name in _DATA_DIR_ENV)
    found = _folders.get(env)
    if found is not None:
        return found
    from jupyter_core.paths import jupyter_data_dir

    raw = jupyter_data_dir()
    base = Path(raw)
    if not base.is_absolute():  # JUPYTER_DATA_DIR=jd: the same folder after a %cd
        base = _pinned.setdefault(raw, Path(os.path.abspath(raw)))
    if len(_folders) >= 16:  # the environment changed often (tests): start over
        _folders.clear()
    found = _folders[env] = base / KEY_FOLDER
    return found


def read_folders() -> list[Path]:
    """The folders of every key this process has read or made (a sandbox hides them all,
    beside the folder :func:`key_folder` names now)."""
    return sorted(_read)


def is_key(info: os.stat_result) -> bool:
    """Whether the file ``info`` describes is an approval key: one this process read or
    made, or the one at :func:`key_path` now (another name for it, a hard link, say)."""
    found = (info.st_dev, info.st_ino)
    # Only a key still in its place: a deleted key's inode number may be reused.
    for path in {*(folder / KEY_FILE for folder, seen in _read.items() if seen == found),
                 key_path()}:
        try:
            now = os.lstat(path)
        except (OSError, ValueError):
            continue
        if (now.st_dev, now.st_ino) == found:
            return True
    return False


def key_path() -> Path:
    """Where this user's approval key lives (outside every workspace)."""
    return key_folder() / KEY_FILE


_ROTATE_HOW = ("make a new one with `python -m agent_kernel trust rotate` (approvals signed "
               "with the old one will need approving again)")


def _owner_problem(info: os.stat_result) -> str | None:
    getuid = getattr(os, "getuid", None)
    if getuid is not None and info.st_uid != getuid():
        return "belongs to another user"
    return None


def check_place(workspace: Path | None) -> None:
    """Refuse a key kept inside ``workspace``, where file tools, commands and copies reach.

    The notebook folder is allowed: on Binder and many servers it is the home folder, which
    holds the Jupyter data folder; every sandbox hides the key's folder wherever it is.
    """
    if workspace is None:
        return
    root, where = workspace.resolve(), key_folder().resolve()
    if where == root or root in where.parents or where in root.parents:
        raise TrustError(f"the approval key's folder {where} is inside the workspace {root} (or "
                         "holds it), where tools and commands can read it; point "
                         "JUPYTER_DATA_DIR somewhere outside the workspace")


def _check_folder(folder: Path, *, tighten: bool) -> None:
    """The key's folder must be this user's own real folder that no one else can change."""
    try:
        info = os.lstat(folder)
    except OSError as exc:
        raise TrustError(f"cannot read the approval key's folder {folder}: {exc}") from None
    if stat.S_ISLNK(info.st_mode):
        raise TrustError(f"the approval key's folder {folder} is a symbolic link; refused "
                         "(it could lead anywhere): make it a real folder")
    if not stat.S_ISDIR(info.st_mode):
        raise TrustError(f"the approval key's folder {folder} is not a folder")
    problem = _owner_problem(info)
    if problem:
        raise TrustError(f"the approval key's folder {folder} {problem}; refused")
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o022 and not tighten:
        raise TrustError(f"the approval key's folder {folder} can be changed by other users "
                         f"(mode {mode:o}), so its key may have been swapped; {_ROTATE_HOW}")
    if mode & 0o077:
        try:
            folder.chmod(0o700)
        except OSError as exc:
            raise TrustError(f"cannot make the approval key's folder {folder} private: "
                             f"{exc}") from None


def _read_key(path: Path) -> bytes:
    """The key in ``path``: a plain 32-byte file of this user's, mode 0600, never a link."""
    _check_folder(path.parent, tighten=False)
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise TrustError(f"the approval key {path} is a symbolic link; refused (anyone who "
                             f"could make the link chose the key): {_ROTATE_HOW}") from None
        raise TrustError(f"cannot read the approval key {path}: {exc}") from None
    try:
        info = os.fstat(handle)
        mode = stat.S_IMODE(info.st_mode)
        if not stat.S_ISREG(info.st_mode):
            raise TrustError(f"the approval key {path} is not a plain file; refused")
        problem = _owner_problem(info)
        if problem:
            raise TrustError(f"the approval key {path} {problem}; refused: {_ROTATE_HOW}")
        if mode & 0o077:
            raise TrustError(f"the approval key {path} can be read or changed by other users "
                             f"(mode {mode:o}, it must be 600), so it may have been copied; "
                             f"refused: {_ROTATE_HOW}")
        for _ in range(20):  # a key being made has a second name for a moment (load_key)
            if info.st_nlink == 1:
                break
            time.sleep(0.01)
            info = os.fstat(handle)
        if info.st_nlink != 1:
            raise TrustError(f"the approval key {path} has {info.st_nlink} names (hard links), "
                             "so the other names may sit where tools and commands can read "
                             f"it; refused: {_ROTATE_HOW}")
        data = os.read(handle, KEY_BYTES + 1)
    finally:
        os.close(handle)
    if len(data) != KEY_BYTES:
        raise TrustError(f"the approval key {path} is not a {KEY_BYTES}-byte key; {_ROTATE_HOW}")
    add_secret(data)  # from now on no record, output or view of this process shows it
    _read[Path(os.path.abspath(path.parent))] = (info.st_dev, info.st_ino)
    return data


def _write_new(path: Path) -> Path:
    """A new random key in a private temporary file beside ``path`` (fsync'd); its path."""
    tmp = path.with_name(f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    key = secrets.token_bytes(KEY_BYTES)
    handle = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(handle, key)
        os.fsync(handle)
    finally:
        os.close(handle)
    add_secret(key)
    return tmp


def _make_folder(folder: Path) -> None:
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise TrustError(f"cannot create the approval key's folder {folder}: {exc}") from None


def load_key(*, create: bool, workspace: Path | None = None) -> bytes | None:
    """This user's approval key; None when there is none and ``create`` is false.

    Fails closed (:class:`TrustError`) on a key that is a symbolic link, is not this user's,
    can be read by others, or lies inside ``workspace``. A new key is written to a private
    temporary file (mode 0600, in a 0700 folder) and linked into place, so two processes
    starting at once agree on one key and none ever reads half a key.
    """
    check_place(workspace)
    path = key_path()
    if os.path.lexists(path) or not create:
        return _read_key(path) if os.path.lexists(path) else None
    _make_folder(path.parent)
    _check_folder(path.parent, tighten=False)
    try:
        tmp = _write_new(path)
        try:
            os.link(tmp, path)  # fails if another process made the key first: use theirs
        except FileExistsError:
            pass
        except OSError:  # no hard links here: an exclusive rename is the next best thing
            if not os.path.lexists(path):
                os.replace(tmp, path)
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
    except OSError as exc:
        raise TrustError(f"cannot create the approval key {path}: {exc}") from None
    return _read_key(path)


_remembered: tuple[Path, tuple[int, ...]] | None = None
"""The key file :func:`remember_key` last read, and what ``lstat`` said of it then."""


def remember_key() -> None:
    """Load this user's key, if there is one, so redaction masks it in this process.

    Read once per key file: every ``Agent`` calls this (a team makes one per task), and
    while ``lstat`` of the key's path says the same file, unchanged (device, inode, size,
    mode, owner, links, modification and change times), the key it holds is already
    masked. A new, rotated, moved or touched key file is read again."""
    global _remembered
    with contextlib.suppress(TrustError):
        path = key_path()
        try:
            info = os.lstat(path)
        except OSError:
            load_key(create=False)
            return
        seen = (info.st_dev, info.st_ino, info.st_size, info.st_mode, info.st_uid,
                info.st_nlink, info.st_mtime_ns, info.st_ctime_ns)
        if _remembered == (path, seen):
            return
        if load_key(create=False) is not None:
            _remembered = (path, seen)


def rotate_key() -> Path:
    """Replace this user's key with a new one, atomically; return where it is.

    Every approval signed with the old key stops verifying and is asked again; nothing is
    re-signed (a leaked key may have signed forgeries). Works on a refused key too (a link,
    loose permissions): the new file replaces it; a loose folder is made private first.
    """
    path = key_path()
    _make_folder(path.parent)
    _check_folder(path.parent, tighten=True)
    with contextlib.suppress(TrustError):
        _read_key(path)  # the old key stays masked in this process's output
    try:
        tmp = _write_new(path)
        try:
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
    except OSError as exc:
        raise TrustError(f"cannot write a new approval key {path}: {exc}") from None
    _read_key(path)
    return path


def sign(value: str, key: bytes | None = None, *, workspace: Path | None = None) -> str:
    """The HMAC-SHA256 (hex) of a digest under this user's key (made on first use)."""
    key = key if key is not None else load_key(create=True, workspace=workspace)
    if key is None:
        raise TrustError("no approval key could be made")
    return hmac.new(key, value.encode("ascii"), hashlib.sha256).hexdigest()


def signed(value: str, mac: object, key: bytes) -> bool:
    """True when ``mac`` is this key's HMAC of the digest ``value``."""
    if not isinstance(mac, str) or not isinstance(value, str):
        return False
    expected = hmac.new(key, value.encode("ascii", "replace"), hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, mac)


class ApprovalBook:
    """The approvals on record in one ledger, checked once and looked up by digest.

    ``reason(digest)`` is None when an approved record of that digest carries a valid mac,
    else a sentence saying why not. The chain is verified on first use (once per restore).
    """

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._loaded = False
        self._broken: str | None = None
        self._key: bytes | None = None
        self._key_problem: str | None = None
        self._records: dict[str, list[dict[str, Any]]] = {}

    def _load(self) -> None:
        self._loaded = True
        try:
            verdict = self.ledger.verify()
            records = self.ledger.records() if verdict.ok else []
        except Exception as exc:  # an unreadable ledger approves nothing
            self._broken = f"the ledger could not be read ({type(exc).__name__}: {exc})"
            return
        if not verdict.ok:
            self._broken = (f"the ledger's hash chain is broken ({verdict}); no approval in it "
                            "can be trusted until ledger.jsonl is repaired or set aside")
            return
        try:
            ledger_path = getattr(self.ledger, "path", None)
            self._key = load_key(create=False, workspace=Path(ledger_path).parent
                                 if ledger_path is not None else None)
        except TrustError as exc:
            self._key_problem = str(exc)
        self._index(records)

    def _index(self, records: Iterable[dict[str, Any]]) -> None:
        for record in records:
            if not isinstance(record.get("digest"), str):
                continue
            if (record.get("kind") == "approval" and record.get("decision") == "approved") \
                    or record.get("kind") == "trigger_created":
                self._records.setdefault(record["digest"], []).append(record)

    def reason(self, value: str, missing: str = MISSING_CONDITION) -> str | None:
        """None when ``value`` (a digest) was approved (or, for a time-based trigger, made)
        on this machine, else why not (``missing`` when nothing of it is on record)."""
        if not self._loaded:
            self._load()
        if self._broken:
            return self._broken
        found = self._records.get(value, [])
        if not found:
            return missing
        if self._key_problem:
            return self._key_problem
        what = ("an approval is on record" if any(r.get("kind") == "approval" for r in found)
                else "a record of its making is on record")
        if self._key is None:
            return (f"{what}, but this machine has no approval key, so it was made elsewhere "
                    "(a copied workspace) or forged")
        if any(signed(value, r.get("mac"), self._key) for r in found):
            return None
        return (f"{what}, but its signature does not match this user's key (made on another "
                "machine or by another user, or forged)")


__all__ = ["MISSING_CONDITION", "MISSING_TRIGGER", "ApprovalBook", "TrustError", "check_place",
           "condition_digest", "digest", "is_key", "key_folder", "key_path", "load_key",
           "read_folders", "remember_key", "rotate_key", "sign", "signed", "trigger_digest"]
