"""Commands: spec 003's ``bash`` and spec 004's ``run_command``, two faces of one runner.

Both run a bash command line in the sandbox of :mod:`agent_kernel.guards.sandbox`: only
``files/`` and ``state/`` are writable, the rest of the workspace is hidden, the
environment is clean, the command has its own PID namespace (when it ends, times
out or the person presses Stop, every process it started dies with it) and, unless
the person set ``LIMITS.network = True``, a network of its own with nothing in it
but its own loopback and no Unix sockets. Where no sandbox can start, commands are
refused unless the person set ``LIMITS.allow_unsandboxed``; the approval card and
every result then say "not sandboxed".

Every sandboxed command is bounded (figures in :class:`CommandLimits`): processes and
memory for the whole command through a cgroup of its own (:mod:`agent_kernel.guards.cgroups`)
where one can be made, and per process through rlimits set inside the sandbox
(address space, file size, open files, no core files; the process count too where no
cgroup counts it); ``/tmp`` is a tmpfs of a set size. A command that reaches the
process or memory limit is stopped at once, and every result that met a limit says
which, in words (``limit``), not only as an exit code.

Before anyone is asked to approve a call, its :func:`precheck` refuses commands on
the list of :mod:`agent_kernel.guards.dangerous` (spec 004: ``sudo``, ``rm -rf /``
...), a disabled tool and a missing sandbox, and tells the approval card how the
command will run (``details["sandbox"]``).

The faces differ only in shape. ``bash(cmd, cwd, timeout_seconds)`` returns spec
003's facts: ``{exit_code, stdout, stderr, sandboxed, sandbox}``.
``run_command(command, timeoutMs=60000)`` returns spec 004's envelope:
``{ok, stdout, stderr, exitCode, sandbox}``, where ``ok`` is true only for exit code
0 (004 shows ``ok: true`` with ``exitCode: 0`` and ``{ok: false, error}`` for a
failure); a command that ran and failed keeps its output and exit code beside the
``error``, since the model needs them (``npm test`` that fails).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Annotated, Any, TypedDict

from agent_kernel.core.workspace import Workspace
from agent_kernel.engine.registry import Field, Tool, ToolContext, ToolError, ok_false
from agent_kernel.guards import cgroups, command_limits, sandbox
from agent_kernel.guards.command_limits import MIB, CommandLimits
from agent_kernel.guards.dangerous import find_danger
from agent_kernel.tools import files

_DRAIN_SECONDS = 2.0  # after the command ends, how long to wait for the last output
_READ_CHUNK = 64 * 1024
_WATCH_SECONDS = 0.1  # how often a running command's cgroup counters are read
_FORK_REFUSED = b"fork: retry: Resource temporarily unavailable"  # bash at RLIMIT_NPROC
__all__ = ["LIMITS", "CommandLimits", "Outcome", "TOOLS", "bash", "precheck", "run",
           "run_command", "sandbox_state"]


LIMITS = CommandLimits()


@dataclass
class Outcome:
    """What one command did, before either face shapes it."""

    exit_code: int | None
    stdout: str
    stderr: str
    truncated: bool
    timed_out: bool
    sandbox: str
    sandboxed: bool
    env_dropped: list[str]
    limit: str | None = None
    """Which limit the command met, in words ("stopped: it ran out of memory ...")."""


class _BashFields(TypedDict):
    exit_code: int | None
    stdout: str
    stderr: str
    sandboxed: bool
    sandbox: str


class BashResult(_BashFields, total=False):
    """What ``bash`` returns: the streams and exit code, and what cut the command short."""

    truncated: bool
    timed_out: bool
    limit: str
    env_dropped: list[str]
    env_note: str
    files_note: str


class CommandResult(TypedDict, total=False):
    """What ``run_command`` returns (spec 004's camelCase keys); a refusal is only ``ok``
    and ``error``."""

    ok: bool
    error: str
    stdout: str
    stderr: str
    exitCode: int | None  # noqa: N815 - spec 004's names
    sandbox: str
    timedOut: bool  # noqa: N815
    limit: str
    truncated: bool
    envDropped: list[str]  # noqa: N815
    envNote: str  # noqa: N815
    filesNote: str  # noqa: N815


def sandbox_state() -> str:
    """How a command runs now, in the person's words (the approval card and results).

    ``"bubblewrap, no network"``, ``"bubblewrap, network allowed"`` or
    ``"not sandboxed: <why>"``; raises :class:`ToolError` when no sandbox can start and
    the person has not allowed commands without one.
    """
    if sandbox.find_bubblewrap() is not None:
        state = f"bubblewrap, {'network allowed' if LIMITS.network else 'no network'}"
        gaps = command_limits.weaker_limits(LIMITS)
        return f"{state} ({'; '.join(gaps)})" if gaps else state
    if not LIMITS.allow_unsandboxed:
        raise ToolError(_unsandboxed_refusal(),
                        summary=f"Commands cannot run here: {sandbox.unavailable_reason()}; "
                                f"{sandbox.INSTALL_HINT}.",
                        guidance="Do not retry it; tell the user commands need bubblewrap.")
    return f"not sandboxed: {sandbox.unavailable_reason()}"


def _unsandboxed_refusal() -> str:
    return (f"commands need bubblewrap to keep the runtime's files out of reach, and "
            f"{sandbox.unavailable_reason()}. To fix: {sandbox.INSTALL_HINT}, then run the "
            f"command again. To run commands without that protection (they could then "
            f"change anything the kernel can, the agent's ledger and triggers included), "
            f"the person may set agent_kernel.tools.commands.LIMITS.allow_unsandboxed = True.")


def _checked_timeout(seconds: float | None, shown: str, scale: float = 1.0) -> float:
    timeout = LIMITS.timeout if seconds is None else seconds
    if timeout > LIMITS.max_timeout:
        raise ValueError(f"{shown} must be at most {LIMITS.max_timeout * scale:g}, "
                         f"got {timeout * scale:g}")
    return timeout


def precheck(script: str, tool_name: str, timeout: float | None, shown: str,
             scale: float = 1.0) -> dict[str, Any]:
    """Refuse before approval (disabled, a bad timeout, a dangerous command, no sandbox);
    else the notes for the approval card: ``{"sandbox": sandbox_state()}``."""
    if not LIMITS.enabled:
        raise ToolError(f"{tool_name} tool is disabled",  # spec 003's words
                        guidance="commands.LIMITS.enabled (tools.bash.enabled) is false.")
    try:
        _checked_timeout(timeout, shown, scale)
        LIMITS.check()
    except ValueError as exc:
        raise ToolError(str(exc)) from None
    danger = find_danger(script)
    if danger is not None:
        short = danger.command if len(danger.command) <= 60 else danger.command[:59] + "…"
        raise ToolError(
            f"`{danger.command}` {danger.why}. It is on the list of dangerous commands, so "
            f"it was refused before anyone was asked to approve it.",
            summary=f"Refused without asking you: `{short}` {danger.why}.",
            guidance="Do not retry it or rephrase it to get past the check: commands run "
                     "without root, in a sandbox. If the task truly needs it, tell the user "
                     "what they would have to run themselves, and why.")
    return {"sandbox": sandbox_state()}


def files_note(ctx: ToolContext) -> str | None:
    """With ``files/`` on an object store, where a command runs in words: commands need a
    local folder, so they keep the workspace's local ``files/``, which the file tools do
    not show (None when the file tools and commands share the local folder)."""
    root = files.store_of(ctx, checked=False)  # words only: commands never reach the store
    if root is None:
        return None
    return (f"file_cache_dir is on the object store ({root.words()}); commands run in the "
            f"local folder {ctx.workspace.root / files.CACHE_DIR}, which the file tools do not "
            "see: move text between them with read_file/write_file and the command's output")


def _command_cwd(workspace: Workspace, cwd: str | None) -> Path:
    if not cwd:
        return files._writable_root(workspace, files.CACHE_DIR)
    folder, parts = files._writable_parts(workspace, files.resolve(workspace, cwd), cwd)
    base = files._writable_root(workspace, folder)
    with files._folder_fd(base, parts, create=True):
        pass
    return base.joinpath(*parts)


class _Capture:
    """Reads one pipe to its end in a thread, keeping the first ``limit`` bytes only."""

    def __init__(self, stream: IO[bytes], limit: int) -> None:
        self.limit = limit
        self.kept = bytearray()
        self.total = 0
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True,
                                       name="agent-command-output")
        self.thread.start()

    def _read(self, stream: IO[bytes]) -> None:
        with contextlib.suppress(OSError, ValueError), stream:
            while chunk := os.read(stream.fileno(), _READ_CHUNK):
                self.total += len(chunk)
                room = self.limit - len(self.kept)
                if room > 0:
                    self.kept += chunk[:room]

    def text(self) -> str:
        return bytes(self.kept).decode("utf-8", errors="replace")


def _kill(process: subprocess.Popen[bytes]) -> None:
    # bwrap leads this group; its PID namespace dies with it (--die-with-parent).
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


async def run(workspace: Workspace, script: str, cwd: Path, timeout: float) -> Outcome:
    """Run ``script`` with bash in the sandbox (the one runner behind both faces)."""
    LIMITS.check()
    state = sandbox_state()
    env, dropped = sandbox.clean_environment(LIMITS.env)
    bwrap = sandbox.find_bubblewrap()
    argv = ["bash", "-c", script]
    loop = asyncio.get_running_loop()
    group = None
    counted = False  # whether a cgroup counts the command's processes
    if bwrap is not None:
        writable = tuple(files._writable_root(workspace, name) for name in files.WRITABLE_DIRS)
        hidden = [*sandbox.private_paths(), *([] if LIMITS.network else sandbox.socket_folders())]
        box = sandbox.Sandbox(root=workspace.root, writable=writable, cwd=cwd, env=env,
                              hidden=tuple(hidden), network=LIMITS.network,
                              tmp_bytes=LIMITS.tmp_mib * MIB, syscall_filter=True)
        group = await loop.run_in_executor(None, command_limits.make_group, LIMITS)
        counted = group is not None and "pids" in group.folders
        argv = box.argv(bwrap, command_limits.bash_argv(script, LIMITS, not counted))
        if group is not None:
            argv = group.wrap(argv)
    try:
        process = sandbox.start(
            argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True,
        )
    except BaseException:
        if group is not None:
            group.remove()
        raise
    assert process.stdout is not None and process.stderr is not None
    out = _Capture(process.stdout, LIMITS.output_max_bytes)
    err = _Capture(process.stderr, LIMITS.output_max_bytes)
    waiter = loop.run_in_executor(None, process.wait)
    timed_out = False
    stopped = None
    try:
        # Where no cgroup counts processes, bash's own complaint at RLIMIT_NPROC does.
        stopped = await _watch(waiter, group, err if bwrap and not counted else None, timeout)
        if stopped is not None:
            _kill(process)
            await waiter
    except asyncio.TimeoutError:
        _kill(process)
        timed_out = True
        await waiter
    except asyncio.CancelledError:
        _kill(process)  # Stop pressed: the command must not outlive the run that started it
        if group is not None:
            loop.run_in_executor(None, group.remove)
        raise
    drained = await loop.run_in_executor(None, _drain, out, err)
    stderr = err.text()
    if group is not None:
        # an OOM kill the command outlived
        stopped = stopped or command_limits.stopped_by(group, LIMITS)
        loop.run_in_executor(None, group.remove)  # the result need not wait for it
    limit = stopped
    if limit is None:  # a timed-out command may have been waiting at a limit
        limit = command_limits.limit_from_output(process.returncode, stderr, LIMITS)
    if not drained:  # unsandboxed only: a detached child still holds the pipes
        stderr += "\n[later output lost: a process the command detached still holds it]"
    if timed_out:
        stderr += f"\n[killed after {timeout:g} s timeout]"
    if limit is not None:
        stderr += f"\n[{limit}{command_limits.how_to_change(limit)}]"
    return Outcome(exit_code=process.returncode, stdout=out.text(), stderr=stderr.lstrip("\n"),
                   truncated=max(out.total, err.total) > LIMITS.output_max_bytes,
                   timed_out=timed_out, sandbox=state, sandboxed=bwrap is not None,
                   env_dropped=dropped, limit=limit)


async def _watch(waiter: asyncio.Future[int], group: cgroups.CommandGroup | None,
                 errors: _Capture | None, timeout: float) -> str | None:
    """Wait for the command; the limit it met if that came first (None when it ended):
    its group's counters, or bash saying in ``errors`` that a fork was refused (where
    ``RLIMIT_NPROC`` alone bounds it, bash would otherwise retry until the timeout).
    Raises TimeoutError after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        left = deadline - loop.time()
        if left <= 0:
            raise asyncio.TimeoutError
        watching = group is not None or errors is not None
        done, _ = await asyncio.wait({waiter}, timeout=min(left, _WATCH_SECONDS)
                                     if watching else left)
        if done:
            return None
        stopped = command_limits.stopped_by(group, LIMITS)
        if stopped is None and errors is not None and _FORK_REFUSED in errors.kept:
            stopped = f"stopped: it tried to run more than {LIMITS.max_processes} processes " \
                      f"at once"
        if stopped is not None:
            return stopped


def _drain(*captures: _Capture) -> bool:
    for capture in captures:
        capture.thread.join(_DRAIN_SECONDS)
    return not any(capture.thread.is_alive() for capture in captures)


_ENV_NOTE = ("not passed to the command: their names say they hold secrets "
             "(commands.LIMITS.env never passes those)")


async def bash(
    cmd: Annotated[str, Field(min_length=1, max_length=20000)],
    ctx: ToolContext,
    cwd: str | None = None,
    timeout_seconds: Annotated[float | None, Field(gt=0)] = None,
) -> BashResult:
    """Run a bash command in a sandbox: it may write only file_cache_dir and file_state_dir.

    Args:
        cmd: The bash command to run.
        cwd: Working folder in file_cache_dir or file_state_dir (default: file_cache_dir).
        timeout_seconds: Seconds before the command is killed (default 30, at most 600).
    """
    if not LIMITS.enabled:
        raise PermissionError("bash tool is disabled")  # spec 003's words
    timeout = _checked_timeout(timeout_seconds, "timeout_seconds")
    done = await run(ctx.workspace, cmd, _command_cwd(ctx.workspace, cwd), timeout)
    result: BashResult = {"exit_code": done.exit_code, "stdout": done.stdout,
                          "stderr": done.stderr, "sandboxed": done.sandboxed,
                          "sandbox": done.sandbox}
    if done.truncated:
        result["truncated"] = True
    if done.timed_out:
        result["timed_out"] = True
    if done.limit:
        result["limit"] = done.limit
    if done.env_dropped:
        result["env_dropped"] = done.env_dropped
        result["env_note"] = _ENV_NOTE
    if (note := files_note(ctx)) is not None:
        result["files_note"] = note
    return result


async def run_command(
    command: Annotated[str, Field(min_length=1, max_length=20000)],
    ctx: ToolContext,
    timeoutMs: Annotated[float, Field(gt=0)] = 60000,  # noqa: N803 - spec 004's name
) -> CommandResult:
    """Run a terminal command in the workspace's file folder, in a sandbox.

    Args:
        command: The command to run (bash syntax).
        timeoutMs: Milliseconds before the command is killed (default 60000, at most 600000).
    """
    if not LIMITS.enabled:
        return {"ok": False, "error": "run_command tool is disabled"}
    try:
        timeout = _checked_timeout(timeoutMs / 1000, "timeoutMs", 1000)
        done = await run(ctx.workspace, command, _command_cwd(ctx.workspace, None), timeout)
    except (ToolError, ValueError, PermissionError) as exc:
        return {"ok": False, "error": str(exc)}
    result: CommandResult = {"ok": done.exit_code == 0 and not done.timed_out,
                             "stdout": done.stdout, "stderr": done.stderr,
                             "exitCode": None if done.timed_out else done.exit_code,
                             "sandbox": done.sandbox}
    if done.timed_out:
        result["error"] = f"the command was killed after {timeoutMs:g} ms (timeoutMs)"
        result["timedOut"] = True
    elif done.limit:
        result["error"] = f"{done.limit} (exit code {done.exit_code})"
        result["limit"] = done.limit
    elif done.exit_code != 0:
        result["error"] = f"the command exited with code {done.exit_code}"
    if done.truncated:
        result["truncated"] = True
    if done.env_dropped:
        result["envDropped"] = done.env_dropped
        result["envNote"] = _ENV_NOTE
    if (note := files_note(ctx)) is not None:
        result["filesNote"] = note
    return result


def _bash_precheck(values: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    notes = precheck(values["cmd"], "bash", values.get("timeout_seconds"), "timeout_seconds")
    if values.get("cwd"):  # a folder the command may never work in is refused unasked
        try:
            files._writable_parts(ctx.workspace, files.resolve(ctx.workspace, values["cwd"]),
                                  values["cwd"])
        except (ValueError, PermissionError) as exc:
            raise ToolError(f"cwd: {exc}", summary=f"Refused without asking you: {exc}.",
                            guidance=files.PATH_GUIDANCE) from None
    return _with_files_note(notes, ctx)


def _with_files_note(notes: dict[str, object], ctx: ToolContext) -> dict[str, object]:
    note = files_note(ctx)
    return notes if note is None else {**notes, "where": note}


def _run_command_precheck(values: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return _with_files_note(precheck(values["command"], "run_command",
                                     values["timeoutMs"] / 1000, "timeoutMs", 1000), ctx)


TOOLS = [
    # Each face enforces its own timeout; the loop's 30 s tool timeout must not cut it.
    Tool(bash, source="builtin", side_effects=True, timeout=LIMITS.max_timeout + 5.0,
         precheck=_bash_precheck),
    Tool(run_command, source="builtin", side_effects=True, timeout=LIMITS.max_timeout + 5.0,
         precheck=_run_command_precheck, failure=ok_false),
]
