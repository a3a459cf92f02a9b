"""Commands: spec 003's ``bash``, run in the sandbox of :mod:`agent_kernel.sandbox`.

Only ``files/`` and ``state/`` are writable inside the sandbox, and the command
sees a clean environment. Where no sandbox can start, ``bash`` refuses unless the
person set ``LIMITS.allow_unsandboxed`` (the limits live in
:data:`agent_kernel.tools.files.LIMITS`, shared with the file tools).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from pathlib import Path
from typing import Annotated, Any

from .. import sandbox
from ..workspace import Workspace
from . import files
from .base import Field, Tool, ToolContext

_DRAIN_SECONDS = 2.0  # after a kill, how long to wait for the last output


def _kill(process: subprocess.Popen[bytes]) -> None:
    # bwrap leads this group; its PID namespace dies with it (--die-with-parent).
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _unsandboxed_refusal() -> str:
    return (f"bash refused: commands need bubblewrap to keep the runtime's files out of reach, "
            f"and {sandbox.unavailable_reason()}. To fix: {sandbox.INSTALL_HINT}, then run "
            f"the command again. To run commands without that protection (they could then "
            f"change anything the kernel can, the agent's ledger and triggers included), the "
            f"person may set agent_kernel.tools.files.files.LIMITS.allow_unsandboxed = True.")


def _command_cwd(workspace: Workspace, cwd: str | None) -> Path:
    if not cwd:
        return files._writable_root(workspace, files.CACHE_DIR)
    folder, parts = files._writable_parts(workspace, files.resolve(workspace, cwd), cwd)
    base = files._writable_root(workspace, folder)
    with files._folder_fd(base, parts, create=True):
        pass
    return base.joinpath(*parts)


async def bash(
    cmd: Annotated[str, Field(min_length=1, max_length=20000)],
    ctx: ToolContext,
    cwd: str | None = None,
    timeout_seconds: Annotated[float | None, Field(gt=0)] = None,
) -> dict[str, Any]:
    """Run a bash command in a sandbox: it may write only file_cache_dir and file_state_dir.

    Args:
        cmd: The bash command to run.
        cwd: Working folder in file_cache_dir or file_state_dir (default: file_cache_dir).
        timeout_seconds: Seconds before the command is killed (default 30, at most 600).
    """
    if not files.LIMITS.bash_enabled:
        raise PermissionError("tool is disabled: bash (tools.bash.enabled is false)")
    timeout = files.LIMITS.bash_timeout if timeout_seconds is None else timeout_seconds
    if timeout > files.LIMITS.bash_max_timeout:
        raise ValueError(f"timeout_seconds must be at most {files.LIMITS.bash_max_timeout:g}, "
                         f"got {timeout:g}")
    folder = _command_cwd(ctx.workspace, cwd)
    env, dropped = sandbox.clean_environment(files.LIMITS.command_env)
    bwrap = sandbox.find_bubblewrap()
    argv = ["bash", "-c", cmd]
    if bwrap is not None:
        writable = tuple(files._writable_root(ctx.workspace, name) for name in files.WRITABLE_DIRS)
        box = sandbox.Sandbox(root=ctx.workspace.root, writable=writable, cwd=folder, env=env,
                              hidden=tuple(sandbox.private_paths()))
        argv = box.argv(bwrap, argv)
    elif not files.LIMITS.allow_unsandboxed:
        raise PermissionError(_unsandboxed_refusal())
    process = subprocess.Popen(
        argv, cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, start_new_session=True,
    )
    waiter = asyncio.get_running_loop().run_in_executor(None, process.communicate)
    try:
        stdout, stderr = await asyncio.wait_for(asyncio.shield(waiter), timeout)
        timed_out = False
    except asyncio.TimeoutError:
        _kill(process)
        timed_out = True
        try:
            stdout, stderr = await asyncio.wait_for(asyncio.shield(waiter), _DRAIN_SECONDS)
        except asyncio.TimeoutError:  # unsandboxed only: a detached child holds the pipes
            stdout, stderr = b"", b"[output lost: a process the command detached still holds it]"
    except asyncio.CancelledError:
        # Stop pressed: the command must not outlive the run that started it.
        _kill(process)
        raise
    out, out_clipped = files._clip(stdout, files.LIMITS.bash_output_max_bytes)
    err, err_clipped = files._clip(stderr, files.LIMITS.bash_output_max_bytes)
    result: dict[str, Any] = {"exit_code": process.poll(), "stdout": out, "stderr": err,
                              "sandboxed": bwrap is not None}
    if out_clipped or err_clipped:
        result["truncated"] = True
    if timed_out:
        result["timed_out"] = True
        result["stderr"] = (err + f"\n[killed after {timeout:g} s timeout]").lstrip("\n")
    if dropped:
        result["env_dropped"] = dropped
        result["env_note"] = ("not passed to the command: their names say they hold secrets "
                              "(files.LIMITS.command_env never passes those)")
    return result


TOOLS = [
    # bash enforces its own timeout_seconds; the loop's 30 s tool timeout must not cut it.
    Tool(bash, source="builtin", side_effects=True, timeout=files.LIMITS.bash_max_timeout + 5.0),
]
