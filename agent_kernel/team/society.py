"""Spec 004's society in the workspace: roles made at run time, and artifacts agents share.

Spec 000's Teller, Planner and Worker are *built-in* roles: always there,
their tools fixed by the permission table in :mod:`.roles`. Spec 004 lets an
agent grow the team: ``create_role`` makes a role with a name, a prompt and
the tools it may use (never more than its creator may use), and
``find_role_by_name`` finds a role of either kind. Artifacts are typed pieces
of content with meta that agents hand each other by reference
(``"artifact:<uuid>"``) instead of pasting them into messages.

Both live under ``<workspace>/team/`` as one JSON file each, written to a
temporary file first and redacted (a secret never reaches the disk), so a
new kernel on the same workspace sees them. A role's file is named by a hash
of its name: two agents creating the same name at once get the same role,
because the second ``os.link`` finds the file already there. Every file read
back is data a person or a crash may have changed: size, type and every
field are checked, and a reference that is not exactly ``artifact:<uuid>``
never becomes a path.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import unicodedata
import uuid
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agent_kernel.core.ledger import now_iso
from agent_kernel.core.safe_open import TooLarge, folder_fd, read_capped, write_all, write_atomic
from agent_kernel.core.workspace import Workspace
from agent_kernel.team.roles import ROLES

TEAM_DIR = "team"
ROLES_FOLDER = "team/roles"
ARTIFACTS_FOLDER = "team/artifacts"
MAX_NAME_CHARS = 100
MAX_ROLE_PROMPT_CHARS = 20_000
MAX_ROLES = 500
MAX_ROLE_FILE_BYTES = 256 * 1024
MAX_TYPE_CHARS = 100
MAX_CONTENT_BYTES = 1_000_000
"""An artifact's content, as UTF-8 JSON."""
MAX_META_BYTES = 16 * 1024
MAX_ARTIFACTS = 10_000
BUILTIN_CREATOR = "system"
REF_PREFIX = "artifact:"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_ROLE_ID = re.compile(r"role-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TYPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+/-]*")


class SocietyError(ValueError):
    """A request the society refuses; the message says what to change."""


_LINE_BREAKS = {"\u2028": "\\u2028", "\u2029": "\\u2029", "\u0085": "\\u0085"}


def json_line(record: dict[str, Any]) -> str:
    """``record`` as one line of JSON an agent reads: every text in it quoted, so no line
    break inside a value (``\\n``, and U+2028, U+2029, U+0085, which JSON leaves raw but
    readers split on) can start a line of its own."""
    line = json.dumps(record, ensure_ascii=False, default=str)
    for raw, escaped in _LINE_BREAKS.items():
        line = line.replace(raw, escaped)
    return line


def _under_workspace(path: Path) -> tuple[Path, str]:
    """``path`` (a file of the team's, ``<workspace>/team/...``) as the workspace root and
    the part below it, for :mod:`agent_kernel.core.safe_open` to walk without following a link."""
    parts = path.parts
    at = len(parts) - 1 - parts[::-1].index(TEAM_DIR) if TEAM_DIR in parts else None
    if at is None or at == 0:
        raise SocietyError(f"{path} is not one of the team's files")
    return Path(*parts[:at]), "/".join(parts[at:])


def _write_json(path: Path, record: dict[str, Any], *, exclusive: bool = False) -> bool:
    """Write ``record`` redacted to ``path`` via a temporary file, never through a link (a
    planted one raises UnsafeWorkspacePath). With ``exclusive`` an existing file wins and
    False is returned."""
    from agent_kernel.core.redaction import scrub

    root, relative = _under_workspace(path)
    data = json.dumps(scrub(record), ensure_ascii=False).encode("utf-8")
    if not exclusive:
        write_atomic(root, relative, data)
        return True
    folder, _, name = relative.rpartition("/")
    with folder_fd(root, folder, create=True) as parent:
        tmp = f".{name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                     | os.O_CLOEXEC, 0o644, dir_fd=parent)
        try:
            try:
                write_all(fd, data)
            finally:
                os.close(fd)
            try:
                os.link(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
            except FileExistsError:
                return False
            return True
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=parent)


def _read_json(path: Path, limit: int) -> dict[str, Any]:
    """A small regular file's JSON object (never through a link, never a FIFO: safe_open);
    raises FileNotFoundError when there is none and SocietyError for anything else."""
    try:
        root, relative = _under_workspace(path)
        data = read_capped(root, relative, limit)
    except FileNotFoundError:
        raise
    except (OSError, TooLarge) as exc:  # a link, a FIFO, a device, too long
        raise SocietyError(f"{path.name} is not a small regular file") from exc
    try:
        record = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise SocietyError(f"{path.name} is not readable JSON ({exc})") from exc
    if not isinstance(record, dict):
        raise SocietyError(f"{path.name} is not a JSON object")
    return record


# -- roles --------------------------------------------------------------------------------


@dataclass(frozen=True)
class RoleRecord:
    """A role of the society: spec 004's fields plus the tools an agent of it may use."""

    id: str
    name: str
    rolePrompt: str  # noqa: N815 - spec 004's names
    createdBy: str  # noqa: N815
    createdAt: str  # noqa: N815
    tools: list[str] = field(default_factory=list)
    builtin: bool = False

    def to_result(self) -> dict[str, Any]:
        """What ``find_role_by_name`` and ``create_role`` return."""
        return {"id": self.id, "name": self.name, "rolePrompt": self.rolePrompt,
                "createdBy": self.createdBy, "createdAt": self.createdAt,
                "tools": list(self.tools), "builtin": self.builtin}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> RoleRecord:
        """A role read back from its file, every field checked."""
        texts = ("id", "name", "rolePrompt", "createdBy", "createdAt")
        if any(not isinstance(record.get(k), str) for k in texts):
            raise SocietyError("a role file lacks one of " + ", ".join(texts))
        tools = record.get("tools", [])
        if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
            raise SocietyError("a role file's tools are not a list of names")
        if not _ROLE_ID.fullmatch(record["id"]):
            raise SocietyError(f"a role file's id is not a role id: {record['id'][:60]!r}")
        return cls(**{k: record[k] for k in texts}, tools=list(tools))


def name_key(name: str) -> str:
    """Two names are the same role when they match after Unicode NFKC, case folding and
    collapsing whitespace."""
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


def check_name(name: str) -> str:
    """A role name, tidied, or SocietyError saying what is wrong with it."""
    if not isinstance(name, str):
        raise SocietyError("name must be text")
    tidy = " ".join(name.split())
    if not tidy:
        raise SocietyError("name cannot be empty")
    if len(tidy) > MAX_NAME_CHARS:
        raise SocietyError(f"name exceeds {MAX_NAME_CHARS} characters (got {len(tidy)})")
    if any(unicodedata.category(c).startswith("C") for c in tidy):
        raise SocietyError("name cannot contain control or invisible format characters")
    return tidy


def builtin_roles() -> dict[str, RoleRecord]:
    """Spec 000's Teller, Planner and Worker as society roles, by name key."""
    from agent_kernel.team.roles import permission_table

    table = permission_table()
    return {name: RoleRecord(
        id=f"role-builtin-{name}", name=name.capitalize(), rolePrompt=role.instructions,
        createdBy=BUILTIN_CREATOR, createdAt="", builtin=True,
        tools=sorted(tool for tool, roles in table.items() if roles[name]))
        for name, role in ROLES.items()}


class RoleStore:
    """The roles made at run time, one file each under ``<workspace>/team/roles/``."""

    def __init__(self, workspace: Workspace) -> None:
        self.folder: Path = workspace.root / ROLES_FOLDER

    def _path(self, name: str) -> Path:
        digest = hashlib.sha256(name_key(name).encode("utf-8")).hexdigest()[:32]
        return self.folder / f"{digest}.json"

    def find(self, name: str) -> RoleRecord | None:
        """The role called ``name`` (built-in or made at run time), or None."""
        tidy = check_name(name)
        builtin = builtin_roles().get(name_key(tidy))
        if builtin is not None:
            return builtin
        path = self._path(tidy)
        try:
            role = RoleRecord.from_record(_read_json(path, MAX_ROLE_FILE_BYTES))
        except FileNotFoundError:
            return None
        if name_key(role.name) != name_key(tidy):
            raise SocietyError(f"the file of role {tidy!r} holds another role "
                               f"({role.name[:60]!r}); a person should look at {path}")
        return role

    def get(self, role_id: str) -> RoleRecord | None:
        """The role with id ``role_id``, or None (files that cannot be read are skipped)."""
        return next((r for r in self.all() if r.id == role_id), None)

    def all(self) -> list[RoleRecord]:
        """The built-in roles, then every readable role made at run time, oldest first."""
        made: list[RoleRecord] = []
        if self.folder.is_dir():
            for path in sorted(self.folder.glob("*.json"))[:MAX_ROLES]:
                try:
                    made.append(RoleRecord.from_record(_read_json(path, MAX_ROLE_FILE_BYTES)))
                except (OSError, SocietyError):
                    continue
        made.sort(key=lambda r: (r.createdAt, r.id))
        return [*builtin_roles().values(), *made]

    def create(self, name: str, role_prompt: str, created_by: str,
               tools: Iterable[str]) -> tuple[RoleRecord, bool]:
        """Make the role, or return the one already called ``name``; True when made now.

        ``tools`` must already be checked against what the creator may use."""
        tidy = check_name(name)
        if not isinstance(role_prompt, str) or not role_prompt.strip():
            raise SocietyError("rolePrompt cannot be empty")
        if len(role_prompt) > MAX_ROLE_PROMPT_CHARS:
            raise SocietyError(f"rolePrompt exceeds {MAX_ROLE_PROMPT_CHARS} characters "
                               f"(got {len(role_prompt)})")
        existing = self.find(tidy)
        if existing is not None:
            return existing, False
        if self.folder.is_dir() and sum(1 for _ in self.folder.glob("*.json")) >= MAX_ROLES:
            raise SocietyError(f"the society already has {MAX_ROLES} roles, its limit; "
                               "use find_role_by_name to reuse one")
        role = RoleRecord(id=f"role-{uuid.uuid4()}", name=tidy, rolePrompt=role_prompt,
                          createdBy=created_by, createdAt=now_iso(), tools=sorted(set(tools)))
        if _write_json(self._path(tidy), asdict(role), exclusive=True):
            return role, True
        found = self.find(tidy)  # made by someone else a moment ago: theirs wins
        if found is None:
            raise SocietyError(f"role {tidy!r} could not be made; try again")
        return found, False


# -- artifacts ----------------------------------------------------------------------------


def artifact_id(ref: str) -> str:
    """The uuid in ``"artifact:<uuid>"``; anything else is refused before it nears a path."""
    if not isinstance(ref, str) or not ref.startswith(REF_PREFIX):
        shown = ref[:80] if isinstance(ref, str) else type(ref).__name__
        raise SocietyError(f"ref must look like 'artifact:<uuid>' (as put_artifact returns), "
                           f"got {shown!r}")
    ident = ref[len(REF_PREFIX):]
    if not _UUID.fullmatch(ident):
        raise SocietyError(f"ref {ref[:80]!r} does not hold a valid artifact id: expected "
                           "'artifact:' and a lowercase uuid like "
                           "'artifact:3f2b8c1e-4d5a-4e6f-8a9b-0c1d2e3f4a5b'")
    return ident


def check_artifact(type_: str, content: object, meta: dict[str, Any] | None) -> None:
    """Raise SocietyError when an artifact's type, content or meta breaks a limit."""
    if not isinstance(type_, str) or not type_.strip():
        raise SocietyError("type cannot be empty")
    if len(type_) > MAX_TYPE_CHARS:
        raise SocietyError(f"type exceeds {MAX_TYPE_CHARS} characters (got {len(type_)})")
    if not _TYPE.fullmatch(type_):
        raise SocietyError(f"type must be a word such as 'document', 'code' or 'text/csv' "
                           f"(letters, digits, _ . + / -), got {type_[:60]!r}")
    if content is None:
        raise SocietyError("content is required (text, a number, a list or an object)")
    try:
        size = len(json.dumps(content, ensure_ascii=False).encode("utf-8"))
    except (TypeError, ValueError, RecursionError) as exc:
        raise SocietyError(f"content must be JSON data (text, numbers, lists, objects): "
                           f"{exc}") from None
    if size > MAX_CONTENT_BYTES:
        raise SocietyError(f"content is {size:,} bytes as JSON; the limit is "
                           f"{MAX_CONTENT_BYTES:,}: split it or write a file instead")
    if meta is not None:
        if not isinstance(meta, dict):
            raise SocietyError("meta must be an object")
        try:
            size = len(json.dumps(meta, ensure_ascii=False).encode("utf-8"))
        except (TypeError, ValueError, RecursionError) as exc:
            raise SocietyError(f"meta must be JSON data: {exc}") from None
        if size > MAX_META_BYTES:
            raise SocietyError(f"meta is {size:,} bytes as JSON; the limit is {MAX_META_BYTES:,}")


class ArtifactStore:
    """Artifacts, one file each under ``<workspace>/team/artifacts/<uuid>.json``."""

    def __init__(self, workspace: Workspace) -> None:
        self.folder: Path = workspace.root / ARTIFACTS_FOLDER

    def put(self, type_: str, content: object, meta: dict[str, Any] | None,
            created_by: str) -> str:
        """Store an artifact; returns its reference ``"artifact:<uuid>"``."""
        check_artifact(type_, content, meta)
        if self.folder.is_dir():
            with os.scandir(self.folder) as entries:
                if sum(1 for e in entries if e.name.endswith(".json")) >= MAX_ARTIFACTS:
                    raise SocietyError(f"the workspace already holds {MAX_ARTIFACTS:,} "
                                       "artifacts, the limit")
        from agent_kernel.core.redaction import scrub

        ident = str(uuid.uuid4())
        # What is written is masked, and masking can make it larger (a number under a
        # secret name becomes "[REDACTED]"): the limits hold for that, so the file stays
        # within what get reads back and what one call may add to the workspace.
        record = scrub({"id": ident, "type": type_, "content": content, "meta": meta or {},
                        "createdAt": now_iso(), "createdBy": created_by})
        for name, limit in (("content", MAX_CONTENT_BYTES), ("meta", MAX_META_BYTES)):
            size = len(json.dumps(record[name], ensure_ascii=False).encode("utf-8"))
            if size > limit:
                raise SocietyError(f"{name} is {size:,} bytes as JSON once what looks like a "
                                   f"secret is masked (as it is saved); the limit is "
                                   f"{limit:,}: split it or write a file instead")
        _write_json(self.folder / f"{ident}.json", record)
        return REF_PREFIX + ident

    def get(self, ref: str) -> dict[str, Any]:
        """The artifact ``ref`` names: ``{id, type, content, meta, createdAt}``."""
        ident = artifact_id(ref)
        path = self.folder / f"{ident}.json"
        try:
            record = _read_json(path, MAX_CONTENT_BYTES + MAX_META_BYTES + 64 * 1024)
        except FileNotFoundError:
            raise SocietyError(f"no artifact {ref}: check the reference put_artifact "
                               "returned") from None
        if record.get("id") != ident or not isinstance(record.get("type"), str) or not (
                isinstance(record.get("meta"), dict)
                and isinstance(record.get("createdAt"), str) and "content" in record):
            raise SocietyError(f"artifact {ref} is damaged on disk and cannot be read")
        return {k: record[k] for k in ("id", "type", "content", "meta", "createdAt")}
