"""Code the agent runs in the kernel, as a cell would: :class:`KernelPython`.

``run_python`` (``tools/python.py``) asks the person first; this is what runs the code
once approved. It runs in the person's namespace (``shell.user_ns``) on the kernel's
main thread, where the run's asyncio task is (user code must run there: matplotlib,
the person's objects, signals), and it owns compile and exec rather than calling
``shell.run_cell``: a cell run would bump the execution count, fire the person's
``pre_run_cell``/``post_run_cell`` hooks and print into the agent's cell. What a cell
does that matters is kept: IPython's input transformations (magics, ``!cmd``), its AST
transformers, its compiler (so tracebacks show the code's lines) and its formatter for
the last expression's value (``last_expr``).

While the code runs, what it writes from the main thread (stdout, stderr, ``display``)
is captured, bounded; other threads (a click arriving on a kernel subshell) pass
through to where they always went. Matplotlib figures the code made are drawn to PNG
and closed, only if pyplot is already imported. Two signals end the code: ``SIGALRM``
from a timer (``status: timeout``) and ``SIGINT`` (``status: stopped``), sent by the
kernel's interrupt or by :meth:`KernelPython.interrupt`, which the agent's Stop calls
from whatever thread the click arrives on. Both raise private exceptions that
``except Exception`` in the person's code does not swallow.
"""

from __future__ import annotations

import ast
import base64
import binascii
import inspect
import io
import re
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from IPython.core.displaypub import DisplayPublisher

from agent_kernel.engine.services import (
    PythonError,
    PythonNames,
    PythonOutput,
    PythonRun,
    PythonStatus,
)
from agent_kernel.notebook.blocking import route_to_named_subshells

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

MAX_CAPTURE_CHARS = 1_000_000
"""Per stream: what the code writes beyond this is counted, not kept."""
MAX_OUTPUTS = 50
TRACEBACK_FRAMES = 16
TRACEBACK_CHARS = 8_000
CODE_NAME = "<run_python>"
_BARE_REPR = re.compile(r"^<[\w.]+ object( at 0x[0-9a-fA-F]+)?>$")
"""``object.__repr__``'s words: an HTML display says more."""
_HIDDEN_FILES = tuple(str(Path(m.__file__).resolve().parent) for m in (
    sys.modules["IPython"], sys.modules["agent_kernel"]) if m.__file__)


class RunView(Protocol):
    """A run's live view, as far as this module draws it."""

    run_id: str

    def push(self, force: bool = False) -> None: ...


RETIMEOUT = 0.1
"""Seconds between timeouts once code has run past its time (see ``KernelPython._arm``)."""


class _TimedOut(BaseException):
    """Raised in the code by the timer: not an ``Exception``, so the code cannot catch it
    with ``except Exception``."""


class _Stopped(BaseException):
    """Raised in the code by Stop or the kernel's interrupt."""


class _Capture(io.TextIOBase):
    """A stream the code writes to: the main thread's text is kept (bounded), any other
    thread's goes where it always went."""

    def __init__(self, original: Any, main: int) -> None:
        super().__init__()
        self.original = original
        self.main = main
        self.parts: list[str] = []
        self.kept = 0
        self.total = 0

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def __getattr__(self, name: str) -> Any:
        # What the kernel may ask of its stream meanwhile (``set_parent``...): the original's.
        if name in ("original", "main", "parts", "kept", "total"):
            raise AttributeError(name)
        return getattr(self.original, name)

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        if threading.get_ident() != self.main:
            return int(self.original.write(text) or 0)
        text = str(text)
        self.total += len(text)
        room = MAX_CAPTURE_CHARS - self.kept
        if room > 0:
            self.parts.append(text[:room])
            self.kept += min(room, len(text))
        return len(text)

    def flush(self) -> None:
        if threading.get_ident() != self.main:
            self.original.flush()

    def text(self) -> str:
        """What was kept, with a line saying how much was not."""
        kept = "".join(self.parts)
        if self.total > self.kept:
            kept += f"\n[{self.total - self.kept:,} more characters were not kept]"
        return kept


class _Displays(DisplayPublisher):
    """``display(...)`` from the code: kept; from any other thread: published as before."""

    def __init__(self, original: DisplayPublisher, main: int) -> None:
        super().__init__()
        self.original = original
        self.main = main
        self.bundles: list[dict[str, object]] = []

    def publish(self, data: dict[str, object], metadata: object = None,  # type: ignore[override]
                source: object = None, *, transient: object = None, update: bool = False,
                **kwargs: object) -> None:
        if threading.get_ident() != self.main:
            self.original.publish(data, metadata=metadata, source=source,  # type: ignore[arg-type]
                                  transient=transient, update=update, **kwargs)
            return
        if len(self.bundles) < MAX_OUTPUTS:
            self.bundles.append(dict(data))

    def __getattr__(self, name: str) -> Any:
        # The kernel keeps using its publisher meanwhile (``set_parent`` from a subshell
        # that handles a click): whatever is not ours is the original's.
        if name in ("original", "main", "bundles"):
            raise AttributeError(name)
        return getattr(self.original, name)

    def clear_output(self, wait: bool = False) -> None:
        if threading.get_ident() != self.main:
            self.original.clear_output(wait)
            return
        self.bundles.clear()


def png_size(data: bytes) -> tuple[int, int]:
    """A PNG's width and height from its header (0, 0 when it is not one)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or len(data) < 24:
        return 0, 0
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def as_output(bundle: dict[str, object]) -> PythonOutput | None:
    """One display bundle as an output: an image, else plain text, else HTML as text."""
    png = bundle.get("image/png")
    if isinstance(png, str):
        try:
            png = base64.b64decode(png, validate=True)
        except (binascii.Error, ValueError):
            png = None
    if isinstance(png, bytes) and png_size(png) != (0, 0):
        width, height = png_size(png)
        return {"mime": "image/png", "data": base64.b64encode(png).decode("ascii"),
                "width": width, "height": height}
    plain, html = bundle.get("text/plain"), bundle.get("text/html")
    if isinstance(html, str) and not (isinstance(plain, str) and not _BARE_REPR.match(plain)):
        return {"mime": "text/html", "text": html}
    if isinstance(plain, str):
        return {"mime": "text/plain", "text": plain}
    if bundle:
        return {"mime": "text/plain", "text": f"[{', '.join(sorted(bundle))} output]"}
    return None


def _hidden(filename: str) -> bool:
    try:
        resolved = str(Path(filename).resolve())
    except (OSError, ValueError):
        return False
    return resolved.startswith(_HIDDEN_FILES)


def trimmed_traceback(exc: BaseException, code_file: str) -> str:
    """The traceback through the person's code only (no IPython or agent-kernel frames),
    its middle left out when it is long, at most :data:`TRACEBACK_CHARS`."""
    frames: list[traceback.FrameSummary] = []
    compiling = isinstance(exc, SyntaxError) and exc.filename == code_file
    tb: TracebackType | None = None if compiling else exc.__traceback__
    while tb is not None:
        frame: FrameType = tb.tb_frame
        if not _hidden(frame.f_code.co_filename):
            frames.extend(traceback.extract_tb(tb, limit=1))
        tb = tb.tb_next
    lines: list[str] = []
    if frames:
        if len(frames) > TRACEBACK_FRAMES:
            head, tail = frames[:4], frames[-(TRACEBACK_FRAMES - 4):]
            lines = ["Traceback (most recent call last):\n",
                     *traceback.StackSummary.from_list(head).format(),
                     f"  ... {len(frames) - len(head) - len(tail)} frames left out ...\n",
                     *traceback.StackSummary.from_list(tail).format()]
        else:
            lines = ["Traceback (most recent call last):\n",
                     *traceback.StackSummary.from_list(frames).format()]
    lines += traceback.format_exception_only(type(exc), exc)
    text = "".join(lines).replace(f'"{code_file}"', f'"{CODE_NAME}"').replace(
        code_file, CODE_NAME)
    if len(text) > TRACEBACK_CHARS:
        text = "[the start of the traceback is left out]\n" + text[-TRACEBACK_CHARS:]
    return text


class KernelPython:
    """Runs approved code in a shell's user namespace on the main thread (see the module)."""

    def __init__(self, shell: InteractiveShell,
                 views: Callable[[], Iterable[RunView]] | None = None) -> None:
        self.shell = shell
        self.views = views
        """The session's live run views (``AgentMagics.views``): the run's is drawn before
        the code holds the loop, so the person sees it approved and running, with Stop."""
        self._lock = threading.Lock()
        self._active = False
        self._run_id: str | None = None
        self._thread = 0
        self._saved_timer: tuple[float, float] = (0.0, 0.0)
        self._timed_out = False
        self._armed_at = 0.0

    # -- Stop, from any thread ---------------------------------------------------------
    def interrupt(self, run_id: str | None = None) -> bool:
        """End the code ``run_id`` runs now (None: whichever runs) with ``stopped``."""
        with self._lock:
            if not self._active or (run_id is not None and run_id != self._run_id):
                return False
            signal.pthread_kill(self._thread, signal.SIGINT)
            return True

    def _on_alarm(self, _signum: int, _frame: object) -> None:
        if self._active:
            self._timed_out = True
            raise _TimedOut

    def _on_interrupt(self, _signum: int, _frame: object) -> None:
        if self._active:
            raise _Stopped

    # -- running ---------------------------------------------------------------------
    async def run(self, code: str, *, timeout: float, run_id: str) -> PythonRun:
        """Run ``code`` now (it holds the loop, as a cell does) and say what it did."""
        for view in self.views() if self.views is not None else ():
            if getattr(view, "run_id", None) == run_id:
                view.push(force=True)
        return self.run_now(code, timeout=timeout, run_id=run_id)

    def run_now(self, code: str, *, timeout: float, run_id: str) -> PythonRun:
        """The synchronous run (what :meth:`run` does; the benchmark times it)."""
        if threading.current_thread() is not threading.main_thread():
            return _refused("code runs in the kernel only on its main thread; this call "
                            "came from another thread")
        if self._active:
            return _refused("other code is already running in the kernel")
        shell = self.shell
        started = time.perf_counter()
        before = dict(shell.user_ns)  # references, not ids: an id can be reused
        figures_before = _figure_numbers()
        main = threading.get_ident()
        out, err = _Capture(sys.stdout, main), _Capture(sys.stderr, main)
        displays = _Displays(shell.display_pub, main)
        saved = sys.stdout, sys.stderr, shell.display_pub
        status: PythonStatus = "done"
        error: PythonError | None = None
        value: list[dict[str, object]] = []
        code_file = CODE_NAME
        sys.stdout, sys.stderr, shell.display_pub = out, err, displays  # type: ignore[assignment]
        # Stop must reach the main thread's code from a kernel subshell: see blocking.py
        restore_routing = route_to_named_subshells()
        try:
            try:
                self._saved_handlers = (signal.getsignal(signal.SIGALRM),
                                        signal.getsignal(signal.SIGINT))
                try:
                    self._arm(timeout, run_id)  # inside: a 1 ms timer may fire at once
                    cell = shell.transform_cell(code)
                    code_file = shell.compile.cache(cell, shell.execution_count, raw_code=code)
                    value = self._execute(cell, code_file)
                finally:
                    self._disarm()
            except _TimedOut:
                status = "timeout"
            except (_Stopped, KeyboardInterrupt):
                status = "stopped"
            except BaseException as exc:  # the person's code failed: words, not a crash
                status = "error"
                error = {"type": type(exc).__name__,
                         "message": str(exc).replace(code_file, CODE_NAME),
                         "traceback": trimmed_traceback(exc, code_file)}
            if self._timed_out and status != "stopped":  # past its time, even if a bare
                status, error = "timeout", None           # except swallowed the timeout
        finally:
            sys.stdout, sys.stderr, shell.display_pub = saved
            if restore_routing is not None:
                restore_routing()
        outputs = [o for o in map(as_output, displays.bundles) if o is not None]
        text_value: str | None = None
        for bundle in value:
            plain = bundle.get("text/plain")
            text_value = plain if isinstance(plain, str) else text_value
            if "image/png" in bundle and (made := as_output(bundle)) is not None:
                outputs.append(made)
        outputs.extend(_new_figures(figures_before))
        names = _names_changed(before, shell.user_ns, shell.user_ns_hidden)
        before.clear()
        return {"status": status, "stdout": out.text(), "stderr": err.text(),
                "value": text_value, "outputs": outputs[:MAX_OUTPUTS], "error": error,
                "names": names, "seconds": round(time.perf_counter() - started, 4)}

    def _execute(self, cell: str, code_file: str) -> list[dict[str, object]]:
        """Compile and run the transformed code; the last expression's formatted value."""
        shell = self.shell
        tree = shell.compile.ast_parse(cell, filename=code_file)
        tree = shell.transform_ast(tree)
        assert isinstance(tree, ast.Module)
        body = list(tree.body)
        last = body.pop() if body and isinstance(body[-1], ast.Expr) else None
        assert last is None or isinstance(last, ast.Expr)
        module = shell.compile(ast.Module(body=body, type_ignores=[]), code_file, "exec")
        if module.co_flags & inspect.CO_COROUTINE:
            raise SyntaxError("top-level await cannot run here: run_python holds the "
                              "kernel's loop; use asyncio.run in a thread, or a cell")
        exec(module, shell.user_global_ns, shell.user_ns)  # noqa: S102 - approved code
        if last is None:
            return []
        expression = shell.compile(ast.Expression(body=last.value), code_file, "eval")
        if expression.co_flags & inspect.CO_COROUTINE:
            raise SyntaxError("top-level await cannot run here: run_python holds the "
                              "kernel's loop; use a cell")
        result = eval(expression, shell.user_global_ns, shell.user_ns)  # noqa: S307
        if result is None or shell.display_formatter is None:
            return []
        data, _metadata = shell.display_formatter.format(result)
        return [dict(data)]

    def _arm(self, timeout: float, run_id: str) -> None:
        """Install the timer and the interrupt handler (main thread) and mark the run."""
        signal.signal(signal.SIGALRM, self._on_alarm)
        signal.signal(signal.SIGINT, self._on_interrupt)
        with self._lock:
            self._active, self._run_id, self._thread = True, run_id, threading.get_ident()
        self._timed_out = False
        self._armed_at = time.monotonic()
        # Past the deadline it fires again every 0.1 s: code whose bare ``except:``
        # swallowed one timeout (in a loop, say) meets the next. The person's own timer
        # is put back by _disarm.
        self._saved_timer = signal.setitimer(signal.ITIMER_REAL, max(timeout, 0.001),
                                             RETIMEOUT)

    def _disarm(self) -> None:
        """Unmark the run first (a late signal is then ignored), then restore the handlers.

        A signal may land while this runs, before the run is unmarked: its exception
        starts this over (the code has ended anyway), so the handlers are always put back.
        """
        while True:
            try:
                with self._lock:
                    self._active, self._run_id = False, None
                signal.setitimer(signal.ITIMER_REAL, 0)
                alarm, interrupt = self._saved_handlers
                signal.signal(signal.SIGALRM, alarm if alarm is not None else signal.SIG_DFL)
                signal.signal(signal.SIGINT,
                              interrupt if interrupt is not None else signal.SIG_DFL)
                left, every = self._saved_timer
                if left > 0:  # the person's own timer, as far on as it would be
                    spent = time.monotonic() - self._armed_at
                    signal.setitimer(signal.ITIMER_REAL, max(left - spent, 0.001), every)
                return
            except (_TimedOut, _Stopped):
                continue


def _names_changed(before: dict[str, object], after: dict[str, object],
                   hidden: dict[str, object]) -> PythonNames:
    """The person's names created, rebound to another object (by identity) and deleted;
    no IPython names, no private ones. One pass over the namespace: 10,000 names in
    well under a millisecond."""
    missing = object()
    moved = [k for k, v in after.items() if before.get(k, missing) is not v]
    gone = before.keys() - after.keys() if len(before) + len(moved) != len(after) else set()

    def shown(name: str) -> bool:
        return not name.startswith("_") and name not in hidden

    return {"created": [k for k in moved if k not in before and shown(k)],
            "changed": [k for k in moved if k in before and shown(k)],
            "deleted": [k for k in before if k in gone and shown(k)]}


def _refused(why: str) -> PythonRun:
    return {"status": "error", "stdout": "", "stderr": "", "value": None, "outputs": [],
            "error": {"type": "RuntimeError", "message": why, "traceback": ""},
            "names": {"created": [], "changed": [], "deleted": []}, "seconds": 0.0}


def _figure_numbers() -> set[int]:
    """Open pyplot figures, if pyplot is imported (it is never imported here)."""
    helpers = sys.modules.get("matplotlib._pylab_helpers")
    if helpers is None or "matplotlib.pyplot" not in sys.modules:
        return set()
    return set(helpers.Gcf.figs)


def _new_figures(before: set[int]) -> list[PythonOutput]:
    """Figures the code opened and did not show: drawn to PNG, then closed."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    helpers = sys.modules.get("matplotlib._pylab_helpers")
    if pyplot is None or helpers is None:
        return []
    drawn: list[PythonOutput] = []
    for number in sorted(set(helpers.Gcf.figs) - before):
        manager = helpers.Gcf.figs.get(number)
        if manager is None:
            continue
        figure = manager.canvas.figure
        buffer = io.BytesIO()
        try:
            figure.savefig(buffer, format="png")
        except Exception as exc:  # a figure that cannot draw: say so, do not fail the run
            drawn.append({"mime": "text/plain",
                          "text": f"[a figure could not be drawn: {type(exc).__name__}]"})
        else:
            made = as_output({"image/png": buffer.getvalue()})
            if made is not None:
                drawn.append(made)
        finally:
            pyplot.close(figure)
    return drawn[:MAX_OUTPUTS]
