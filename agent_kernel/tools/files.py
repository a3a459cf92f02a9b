"""Workspace files and the shell: spec 003's ``read_file``, ``write_file`` and ``bash``.

Every path stays inside the agent's workspace. Relative paths land in the
file cache (``<workspace>/files``, spec 003's ``file_cache_dir``);
``file_cache_dir/<path>`` and ``file_state_dir/<path>`` (``<workspace>/state``)
are accepted as aliases, and an absolute path is accepted only when it lies
inside the workspace. Anything else is refused with an error naming the
workspace. ``read_file`` is safe; ``write_file`` and ``bash`` change the world,
so they are marked ``side_effects=True`` and every call asks the person first
(see :mod:`agent_kernel.approvals`). Spec 003's guards are kept: deny paths,
byte limits, a bash timeout and ``tools.bash.enabled`` (here
``LIMITS.bash_enabled``). ``bash`` runs with its working folder in the
workspace; once approved, the command itself is the person's to judge.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from ..workspace import Workspace, WorkspaceError
from .base import Field, Tool, ToolContext

CACHE_ALIAS, STATE_ALIAS = "file_cache_dir", "file_state_dir"
CACHE_DIR, STATE_DIR = "files", "state"


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
        ".env", "*.pem", "*.key", "id_rsa*", "ledger.jsonl", "pending_question.json"])


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
    relative = resolved.relative_to(workspace.root).as_posix()
    pattern = _denied(relative)
    if pattern:
        raise PermissionError(f"path {user_path!r} is denied (deny_paths pattern {pattern!r})")
    return resolved


def _shown(workspace: Workspace, path: Path) -> str:
    return path.relative_to(workspace.root).as_posix()


def _clip(data: bytes, limit: int) -> tuple[str, bool]:
    text = data[:limit].decode("utf-8", errors="replace")
    return text, len(data) > limit


def read_file(
    path: Annotated[str, Field(min_length=1, max_length=4096)], ctx: ToolContext
) -> str:
    """Read a text file from the workspace (long files are truncated).

    Args:
        path: File path. Relative paths are in file_cache_dir; file_cache_dir/<path> and
            file_state_dir/<path> aliases are supported.
    """
    target = resolve(ctx.workspace, path)
    if not target.exists():
        raise FileNotFoundError(f"no such file: {_shown(ctx.workspace, target)}")
    if target.is_dir():
        raise IsADirectoryError(f"{_shown(ctx.workspace, target)} is a folder, not a file")
    size = target.stat().st_size
    with target.open("rb") as handle:
        data = handle.read(LIMITS.read_max_bytes + 1)
    text, clipped = _clip(data, LIMITS.read_max_bytes)
    if clipped:
        text += f"\n...[truncated: showed {LIMITS.read_max_bytes} of {size} bytes]"
    return text


def write_file(
    path: Annotated[str, Field(min_length=1, max_length=4096)],
    content: str,
    ctx: ToolContext,
    mode: Literal["overwrite", "append"] = "overwrite",
) -> dict[str, Any]:
    """Write a text file in the workspace (overwrite or append); parent folders are created.

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
    if target.is_dir():
        raise IsADirectoryError(f"{_shown(ctx.workspace, target)} is a folder, not a file")
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("ab" if mode == "append" else "wb") as handle:
        handle.write(data)
    return {"path": _shown(ctx.workspace, target), "bytes": len(data), "mode": mode}


def _kill(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


async def bash(
    cmd: Annotated[str, Field(min_length=1, max_length=20000)],
    ctx: ToolContext,
    cwd: str | None = None,
    timeout_seconds: Annotated[float | None, Field(gt=0)] = None,
) -> dict[str, Any]:
    """Run a bash command with its working folder in the workspace.

    Args:
        cmd: The bash command to run.
        cwd: Working folder inside the workspace (default: file_cache_dir).
        timeout_seconds: Seconds before the command is killed (default 30, at most 600).
    """
    if not LIMITS.bash_enabled:
        raise PermissionError("tool is disabled: bash (tools.bash.enabled is false)")
    for pattern in LIMITS.deny_paths:
        token = pattern.strip("*")
        if token and token in cmd:
            raise PermissionError(f"command mentions a denied path ({pattern!r})")
    timeout = LIMITS.bash_timeout if timeout_seconds is None else timeout_seconds
    if timeout > LIMITS.bash_max_timeout:
        raise ValueError(f"timeout_seconds must be at most {LIMITS.bash_max_timeout:g}, "
                         f"got {timeout:g}")
    folder = resolve(ctx.workspace, cwd) if cwd else ctx.workspace.root / CACHE_DIR
    folder.mkdir(parents=True, exist_ok=True)
    if not folder.is_dir():
        raise NotADirectoryError(f"cwd {cwd!r} is not a folder")
    process = subprocess.Popen(
        ["bash", "-c", cmd], cwd=folder, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, start_new_session=True,
    )
    waiter = asyncio.get_running_loop().run_in_executor(None, process.communicate)
    try:
        stdout, stderr = await asyncio.wait_for(asyncio.shield(waiter), timeout)
        timed_out = False
    except asyncio.TimeoutError:
        _kill(process)
        stdout, stderr = await waiter
        timed_out = True
    except asyncio.CancelledError:
        # Stop pressed: the command must not outlive the run that started it.
        _kill(process)
        raise
    out, out_clipped = _clip(stdout, LIMITS.bash_output_max_bytes)
    err, err_clipped = _clip(stderr, LIMITS.bash_output_max_bytes)
    result: dict[str, Any] = {"exit_code": process.returncode, "stdout": out, "stderr": err}
    if out_clipped or err_clipped:
        result["truncated"] = True
    if timed_out:
        result["timed_out"] = True
        result["stderr"] = (err + f"\n[killed after {timeout:g} s timeout]").lstrip("\n")
    return result


TOOLS = [
    Tool(read_file, source="builtin", side_effects=False),
    Tool(write_file, source="builtin", side_effects=True),
    # bash enforces its own timeout_seconds; the loop's 30 s tool timeout must not cut it.
    Tool(bash, source="builtin", side_effects=True, timeout=LIMITS.bash_max_timeout + 5.0),
]
