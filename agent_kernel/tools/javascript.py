"""run_javascript (spec 004): model-written JavaScript, run in a process of its own.

Spec 004 describes ``code`` as a function body with an explicit ``return``,
``input`` as the data passed in, an isolated environment with no file system
or network, and the result as its examples show it: the code's value itself
(``result = 579``). A failure is an error the model reads (``Error: Tool
'run_javascript' execution failed: TypeError: ...``), never a value, so whatever
the code returns (an ``{ok: false}`` object too) is data.

The code is hostile until shown otherwise, so it never runs in the kernel:
each call gets a fresh child (:mod:`agent_kernel.guards.js_runner`) running
quickjs-ng, an engine that offers plain ECMAScript and nothing else, under
three limits that each end it on their own: the engine's memory and CPU-time
limits, ``setrlimit`` in the child (address space, CPU seconds, no files, no
processes), and a wall-clock kill from here. Where bubblewrap can start, the
child also runs inside :mod:`agent_kernel.guards.sandbox` with no network and no Unix
sockets, a read-only file system, the workspace, Jupyter's connection files and
the machine's socket folders hidden, and an empty environment. Starting
Python costs about 100 ms, so one spare child is started after each call and
waits for the next; it serves one call and exits, so no state passes between
calls.

The tool is ``side_effects=True`` (the model writes the code), but by the policy table
(:mod:`agent_kernel.engine.ask_policy`) it runs without asking: its effect stays inside
that sandbox, so an approval would protect nothing. A person who wants to be asked says
``%agent_config --ask run_javascript``.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

from agent_kernel.core.workspace import Workspace
from agent_kernel.engine.registry import Field, Tool, ToolContext, ToolError
from agent_kernel.guards import sandbox

MIB = 1024 * 1024
MAX_TIMEOUT_SECONDS = 60.0
RUNNER = Path(__file__).resolve().parent.parent / "guards" / "js_runner.py"  # run as a script
ENGINE_HINT = "pip install 'quickjs-ng>=0.17,<0.18'"


@dataclass
class JavaScriptLimits:
    """What one call may use; change ``LIMITS`` to tune them for a session."""

    timeout_seconds: float = 5.0
    """CPU seconds for the code (the engine stops it; the wall clock allows twice that + 5 s)."""
    memory_mib: int = 64
    max_result_chars: int = 65_536
    """Longer results come back cut, as text, with ``truncated: true``."""
    max_input_bytes: int = 1 * MIB
    sandboxed: bool = True
    """Run the child in bubblewrap (no network, read-only, workspace hidden) when it can start."""

    def check(self) -> None:
        """Refuse settings that cannot work, with what to change."""
        if not 0 < self.timeout_seconds <= MAX_TIMEOUT_SECONDS:
            raise ValueError(f"run_javascript LIMITS.timeout_seconds must be between 0 and "
                             f"{MAX_TIMEOUT_SECONDS:g}, got {self.timeout_seconds:g}")
        if not 8 <= self.memory_mib <= 4096:
            raise ValueError(f"run_javascript LIMITS.memory_mib must be between 8 and 4096, "
                             f"got {self.memory_mib}")
        if self.max_result_chars < 1000:
            raise ValueError(f"run_javascript LIMITS.max_result_chars must be at least 1000, "
                             f"got {self.max_result_chars}")

    @property
    def wall_seconds(self) -> float:
        """When the parent kills the child, whatever it is doing."""
        return 2 * self.timeout_seconds + 5.0


LIMITS = JavaScriptLimits()


@dataclass
class Worker:
    """One child process, started ahead of its call; it serves exactly one."""

    process: subprocess.Popen[bytes]
    argv: tuple[str, ...]

    def exchange(self, request: bytes, cap: int) -> tuple[bytes, bytes]:
        """Send the request, read at most ``cap`` bytes of answer and a bounded stderr."""
        assert self.process.stdin and self.process.stdout and self.process.stderr
        with contextlib.suppress(BrokenPipeError, OSError):  # it died: its exit says why
            self.process.stdin.write(request)
            self.process.stdin.close()
        out = self.process.stdout.read(cap)
        if len(out) >= cap:
            self.kill()
        err = self.process.stderr.read(16 * 1024)
        self.process.wait()
        return out, err

    def kill(self) -> None:
        """End the child and everything in its session (bwrap leads that session)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def discard(self) -> None:
        """Kill and reap a spare that will not be used."""
        self.kill()
        with contextlib.suppress(Exception):
            self.process.communicate(timeout=5)


_lock = threading.Lock()
_spare: Worker | None = None


def _start(argv: tuple[str, ...]) -> Worker:
    process = sandbox.start(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={}, cwd="/", start_new_session=True)
    return Worker(process, argv)


def take_worker(argv: tuple[str, ...]) -> Worker:
    """The waiting spare if it was started for these limits, else a new child."""
    global _spare
    with _lock:
        spare, _spare = _spare, None
    if spare is not None and spare.argv == argv and spare.process.poll() is None:
        return spare
    if spare is not None:
        spare.discard()
    return _start(argv)


def restock(argv: tuple[str, ...]) -> None:
    """Start the spare the next call will use (nothing if one is waiting)."""
    global _spare
    with _lock:
        if _spare is not None:
            return
        _spare = _start(argv)


def drop_spare() -> None:
    """Kill the waiting spare (at exit, and when the limits change)."""
    global _spare
    with _lock:
        spare, _spare = _spare, None
    if spare is not None:
        spare.discard()


atexit.register(drop_spare)


def _holds(folder: Path, needed: list[Path]) -> bool:
    return any(folder == path or folder in path.parents for path in needed)


def command(workspace: Workspace) -> tuple[tuple[str, ...], bool]:
    """The child's command line, and whether it runs in bubblewrap."""
    argv = [sys.executable, "-I", "-B", str(RUNNER), str(LIMITS.memory_mib * MIB),
            repr(float(LIMITS.timeout_seconds)), str(LIMITS.max_result_chars)]
    bwrap = sandbox.find_bubblewrap() if LIMITS.sandboxed else None
    if bwrap is None:
        return tuple(argv), False
    spec = importlib.util.find_spec("quickjs")
    needed = [Path(sys.executable).resolve(), Path(sys.prefix).resolve(), RUNNER,
              *([Path(spec.origin).resolve()] if spec and spec.origin else [])]
    # A folder that holds the interpreter or the engine stays visible (still read-only).
    hidden = tuple(p for p in (workspace.root, *sandbox.private_paths(),
                               *sandbox.socket_folders())
                   if p.exists() and not _holds(p, needed))
    # The interpreter, its environment and the runner stay visible even under /tmp.
    keep = (Path(sys.prefix), Path(sys.executable).parent, RUNNER.parent,
            *([Path(spec.origin).parent] if spec and spec.origin else []))
    box = sandbox.Sandbox(root=None, writable=(), cwd=Path("/"), env={}, hidden=hidden,
                          network=False, keep=keep, syscall_filter=True)
    boxed = box.argv(bwrap, argv)
    isolate = [flag for flag in ("--unshare-net", "--unshare-ipc", "--unshare-uts")
               if flag not in boxed]
    return (boxed[0], *isolate, *boxed[1:]), True


class JsResult(TypedDict, total=False):
    """What ``run_javascript`` returns (spec 004's shape): ``{ok: true, result}`` (the
    code's JSON, or its first characters as text with ``truncated`` and a ``note``), or
    ``{ok: false, error}``."""

    ok: bool
    result: object
    truncated: bool
    note: str
    error: str


def _failed(error: str) -> JsResult:
    return {"ok": False, "error": error}


def _exit_words(code: int | None, err: bytes) -> str:
    """What a child that gave no answer died of."""
    said = err.decode("utf-8", "replace").strip().splitlines()
    last = said[-1] if said else f"exit code {code}"
    if "MemoryError" in last:
        return f"ran out of memory (limit {LIMITS.memory_mib} MiB)"
    if code in (-signal.SIGXCPU, -signal.SIGKILL):
        return f"stopped after {LIMITS.timeout_seconds:g} s (the CPU time limit of run_javascript)"
    if "No module named 'quickjs'" in last:
        return f"the JavaScript engine is not installed here: {ENGINE_HINT}"
    return f"the JavaScript engine stopped unexpectedly ({last[:300]})"


def read_answer(out: bytes, code: int | None, err: bytes) -> JsResult:
    """Check the child's answer and give the tool's result (spec 004's shape)."""
    try:
        answer = json.loads(out)
    except ValueError:
        answer = None
    if not isinstance(answer, dict) or not isinstance(answer.get("ok"), bool):
        return _failed(_exit_words(code, err))
    if not answer["ok"]:
        return _failed(str(answer.get("error") or "the code failed"))
    text = answer.get("json")
    if not isinstance(text, str):
        return _failed("the JavaScript engine gave an unreadable answer")
    if answer.get("truncated"):
        return {"ok": True, "result": text, "truncated": True,
                "note": f"the result is {answer.get('chars', 0):,} characters of JSON; only "
                        f"the first {len(text):,} are shown, as text. Return less (a summary, "
                        f"a slice) to get data back."}
    try:
        return {"ok": True, "result": json.loads(text)}
    except RecursionError:
        return _failed("the result is nested too deeply to pass back; flatten it, or return "
                       "JSON.stringify(result) as a string")
    except ValueError:
        return _failed("the JavaScript engine gave an unreadable answer")


def _request(code: str, data: object) -> bytes:
    try:
        text = json.dumps(data, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValueError(f"input must be JSON data (objects, arrays, strings, numbers, "
                         f"booleans, null): {exc}") from None
    if len(text) > LIMITS.max_input_bytes:
        raise ValueError(f"input is {len(text):,} bytes of JSON; at most "
                         f"{LIMITS.max_input_bytes:,} are accepted")
    return json.dumps({"code": code, "input": data}).encode("ascii")


async def run_javascript(
    code: Annotated[str, Field(min_length=1, max_length=100_000)],
    ctx: ToolContext,
    input: Any = None,  # noqa: A002  (the spec's name)
) -> object:
    """Run JavaScript for exact calculation or data processing; no files, network or console.
    Returns the value the code returns.

    Notes:
        Spec 004: "result = 579", the value itself. It runs in a sandbox and asks no one
        unless the person chose so (engine/ask_policy.py).

    Args:
        code: A function body; it must `return` the result (JSON data).
            Example: "return input.items.filter(x => x.active).map(x => x.name)".
        input: JSON data passed to the code as `input`.
    """
    return value_of(await run_script(code, ctx, input))


def value_of(answer: JsResult) -> object:
    """Spec 004's result: the code's value itself. A value too long to pass back whole is
    its first characters as text with a ``[truncated: ...]`` line; a failure raises, so the
    model reads ``Error: ...`` and no returned value can pass for one."""
    if not answer.get("ok"):
        raise ToolError(str(answer.get("error") or "the code failed"))
    value = answer.get("result")
    if answer.get("truncated"):
        return f"{value}\n...[truncated: {answer.get('note', '')}]"
    return value


async def run_script(code: str, ctx: ToolContext, input: object = None  # noqa: A002
                     ) -> JsResult:
    """Run ``code`` in the engine's child: ``{ok: true, result}`` or ``{ok: false, error}``."""
    LIMITS.check()
    try:
        request = _request(code, input)
    except ValueError as exc:
        return _failed(str(exc))
    if importlib.util.find_spec("quickjs") is None:
        return _failed(f"the JavaScript engine is not installed here: {ENGINE_HINT}")
    argv, _sandboxed = command(ctx.workspace)
    loop = asyncio.get_running_loop()
    worker = await loop.run_in_executor(None, take_worker, argv)
    cap = 12 * LIMITS.max_result_chars + 64 * 1024  # \uXXXX escapes, and the envelope
    waiter = loop.run_in_executor(None, worker.exchange, request, cap)
    try:
        out, err = await asyncio.wait_for(asyncio.shield(waiter), LIMITS.wall_seconds)
    except asyncio.TimeoutError:
        worker.kill()
        return _failed(f"stopped after {LIMITS.wall_seconds:g} s (the wall-clock limit of "
                       f"run_javascript)")
    except asyncio.CancelledError:  # Stop pressed: the code must not outlive its run
        worker.kill()
        raise
    finally:
        loop.run_in_executor(None, restock, argv)
    return read_answer(out, worker.process.returncode, err)


TOOLS = [
    # Its result is the code's value: an {ok: false} the code returns is data, not a failure.
    Tool(run_javascript, source="builtin", side_effects=True,
         timeout=2 * MAX_TIMEOUT_SECONDS + 10.0, envelope=False),
]
