"""The kernel's Python service (``notebook/python.py``) on a real ``InteractiveShell``.

What ``run_python`` gets back once approved: the value, stdout, stderr, displays, a
figure, a trimmed traceback, the names changed, IPython's syntax, the timeout and Stop;
and that a run neither bumps the execution count nor fires the person's hooks.
"""

from __future__ import annotations

import asyncio
import base64
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell

from agent_kernel.engine.services import PythonRun
from agent_kernel.notebook.python import CODE_NAME, KernelPython, png_size


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    made = InteractiveShell.instance()
    made.reset()
    yield made
    made.reset()


def run(shell: InteractiveShell, code: str, timeout: float = 10.0,
        service: KernelPython | None = None) -> PythonRun:
    return asyncio.run((service or KernelPython(shell)).run(code, timeout=timeout,
                                                            run_id="run_1"))


def test_value_stdout_stderr_are_captured_not_printed(shell: InteractiveShell,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    got = run(shell, "import sys\nprint('to stdout')\nprint('to stderr', file=sys.stderr)\n"
                     "x = 40\nx + 2")
    assert got["status"] == "done" and got["error"] is None
    assert got["stdout"] == "to stdout\n" and got["stderr"] == "to stderr\n"
    assert got["value"] == "42"
    said = capsys.readouterr()
    assert "to stdout" not in said.out and "to stderr" not in said.err
    assert shell.user_ns["x"] == 40


def test_no_value_for_a_statement_or_none(shell: InteractiveShell) -> None:
    assert run(shell, "y = 3")["value"] is None
    assert run(shell, "None")["value"] is None
    assert run(shell, "y = 3\ny;")["value"] == "3"  # the formatter's value, like last_expr


def test_display_outputs(shell: InteractiveShell) -> None:
    got = run(shell, "from IPython.display import display, HTML\n"
                     "display(HTML('<b>bold</b>'))\ndisplay({'a': 1})")
    assert got["outputs"] == [{"mime": "text/html", "text": "<b>bold</b>"},
                              {"mime": "text/plain", "text": "{'a': 1}"}]


def test_a_figure_is_drawn_and_closed(shell: InteractiveShell) -> None:
    import matplotlib

    matplotlib.use("agg")
    import matplotlib.pyplot as plt

    plt.close("all")
    kept = plt.figure()  # the person's own figure stays open and is not drawn
    got = run(shell, "import matplotlib.pyplot as plt\nplt.figure()\n"
                     "plt.plot([1, 3, 2])\nNone")
    images = [o for o in got["outputs"] if o["mime"] == "image/png"]
    assert len(images) == 1
    data = base64.b64decode(images[0]["data"])
    assert png_size(data) == (640, 480) == (images[0]["width"], images[0]["height"])
    assert plt.get_fignums() == [kept.number]
    plt.close("all")


def test_an_exception_has_a_trimmed_traceback(shell: InteractiveShell) -> None:
    got = run(shell, "def inner():\n    return 1 / 0\n\ninner()")
    assert got["status"] == "error" and got["value"] is None
    error = got["error"]
    assert error is not None
    assert error["type"] == "ZeroDivisionError" and error["message"] == "division by zero"
    trace = error["traceback"]
    assert trace.startswith("Traceback (most recent call last):")
    assert f'File "{CODE_NAME}", line 4' in trace and "return 1 / 0" in trace
    assert "agent_kernel" not in trace and "IPython" not in trace and "run_now" not in trace


def test_a_deep_traceback_is_bounded(shell: InteractiveShell) -> None:
    got = run(shell, "def down(n):\n    return down(n - 1) if n else 1 / 0\ndown(200)")
    assert got["error"] is not None
    trace = got["error"]["traceback"]
    assert "frames left out" in trace and trace.count("line 2, in down") < 20
    assert len(trace) <= 8_100


def test_a_syntax_error_points_at_the_line(shell: InteractiveShell) -> None:
    got = run(shell, "x = (1 +\n")
    assert got["error"] is not None and got["error"]["type"] == "SyntaxError"
    assert "codeop" not in got["error"]["traceback"]
    assert "ipython-input" not in got["error"]["message"]


def test_names_created_changed_deleted(shell: InteractiveShell) -> None:
    run(shell, "a = 1\nb = [1]\nc = 'keep'")
    got = run(shell, "del a\nb = [2]\nnew = {}\n_private = 1")
    assert got["names"] == {"created": ["new"], "changed": ["b"], "deleted": ["a"]}
    assert run(shell, "b.append(3)")["names"]["changed"] == []  # by id: in place is not


def test_ipython_syntax(shell: InteractiveShell) -> None:
    run(shell, "visible_name = 1")
    assert "visible_name" in run(shell, "%who")["stdout"]
    got = run(shell, "x = !echo hi\nx")
    assert got["status"] == "done" and "hi" in (got["value"] or "")
    assert shell.user_ns["x"] == ["hi"]


def test_no_execution_count_no_hooks(shell: InteractiveShell) -> None:
    fired: list[str] = []
    shell.events.register("pre_run_cell", lambda *_a: fired.append("pre"))
    shell.events.register("post_run_cell", lambda *_a: fired.append("post"))
    count = shell.execution_count
    try:
        run(shell, "z = 1\nz")
    finally:
        shell.events.callbacks["pre_run_cell"].clear()
        shell.events.callbacks["post_run_cell"].clear()
    assert shell.execution_count == count and fired == []
    assert "_" not in shell.user_ns or shell.user_ns["_"] != 1


def test_timeout_ends_sleep_and_a_busy_loop(shell: InteractiveShell) -> None:
    started = time.monotonic()
    got = run(shell, "import time\ntime.sleep(30)", timeout=0.4)
    assert got["status"] == "timeout" and time.monotonic() - started < 5
    got = run(shell, "try:\n    while True: pass\nexcept Exception:\n    print('caught')",
              timeout=0.3)
    assert got["status"] == "timeout" and "caught" not in got["stdout"]
    assert signal_handlers_restored()


def test_a_bare_except_in_a_loop_meets_the_next_timeout(shell: InteractiveShell) -> None:
    """Code that swallows one timeout does not hold the kernel: it fires again."""
    started = time.monotonic()
    code = ("import time\nfor _ in range(5):\n    try:\n        time.sleep(30)\n"
            "    except BaseException:\n        print('swallowed')")
    got = run(shell, code, timeout=0.3)
    assert got["status"] == "timeout" and time.monotonic() - started < 5
    assert got["stdout"].count("swallowed") == 5
    assert signal_handlers_restored()


def test_the_persons_own_timer_is_put_back(shell: InteractiveShell) -> None:
    import signal

    fired: list[int] = []
    saved = signal.signal(signal.SIGALRM, lambda *_: fired.append(1))
    try:
        signal.setitimer(signal.ITIMER_REAL, 30.0)
        assert run(shell, "x = 1", timeout=5)["status"] == "done"
        left, _every = signal.getitimer(signal.ITIMER_REAL)
        assert 25 < left <= 30 and signal.getsignal(signal.SIGALRM) is not saved
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, saved)
    assert not fired


def signal_handlers_restored() -> bool:
    import signal

    # No timer of ours is left: none, or only pytest-timeout's own (put back, minutes long).
    left = signal.getitimer(signal.ITIMER_REAL)[0]
    alarm = signal.getsignal(signal.SIGALRM)
    return ((left == 0 or left > 60) and getattr(alarm, "__self__", None) is None
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler)


def test_stop_from_another_thread(shell: InteractiveShell) -> None:
    service = KernelPython(shell)
    said: list[bool] = []

    def stop_soon() -> None:
        time.sleep(0.3)
        said.append(service.interrupt("other_run"))  # another run's Stop: not this code
        said.append(service.interrupt("run_1"))

    threading.Thread(target=stop_soon).start()
    started = time.monotonic()
    got = run(shell, "import time\ntime.sleep(20)\nprint('never')", service=service)
    assert got["status"] == "stopped" and got["stdout"] == ""
    assert time.monotonic() - started < 5 and said == [False, True]
    assert not service.interrupt("run_1")  # nothing runs now
    assert signal_handlers_restored()


def test_a_kernel_interrupt_stops_the_code(shell: InteractiveShell) -> None:
    import os
    import signal

    threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    assert run(shell, "import time\ntime.sleep(20)")["status"] == "stopped"


def test_output_from_other_threads_passes_through(shell: InteractiveShell,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code = ("import threading, sys\n"
            "t = threading.Thread(target=lambda: print('from a thread'))\n"
            "t.start(); t.join()\nprint('from the code')")
    got = run(shell, code)
    assert got["stdout"] == "from the code\n"
    assert "from a thread" in capsys.readouterr().out


def test_off_the_main_thread_nothing_runs(shell: InteractiveShell) -> None:
    box: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: box.update(got=run(shell, "never = 1")))
    thread.start()
    thread.join()
    assert box["got"]["status"] == "error" and "never" not in shell.user_ns
    assert "main thread" in box["got"]["error"]["message"]


def test_matplotlib_is_not_imported_by_the_service() -> None:
    """A fresh process: running code looks for figures without importing pyplot."""
    import subprocess

    script = ("import asyncio, sys\n"
              "from IPython.core.interactiveshell import InteractiveShell\n"
              "from agent_kernel.notebook.python import KernelPython\n"
              "got = asyncio.run(KernelPython(InteractiveShell.instance()).run(\n"
              "    '1 + 1', timeout=5, run_id='r'))\n"
              "print(got['value'], 'matplotlib' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.split() == ["2", "False"]


def test_the_kernel_still_reaches_its_publisher_and_streams(shell: InteractiveShell) -> None:
    """While the code runs, the kernel's other threads use the publisher and streams it
    knows (ipykernel calls ``set_parent`` on them from the subshell that takes a click)."""
    shell.display_pub.kernel_only = "kept"  # type: ignore[attr-defined]
    code = ("import threading, sys\nseen = []\n"
            "t = threading.Thread(target=lambda: seen.append(\n"
            "    (get_ipython().display_pub.kernel_only, sys.stdout.closed)))\n"
            "t.start(); t.join()\nseen")
    assert run(shell, code)["value"] == "[('kept', False)]"


def test_the_runs_view_is_drawn_before_the_code_holds_the_loop(shell: InteractiveShell
                                                                 ) -> None:
    class View:
        def __init__(self, run_id: str) -> None:
            self.run_id = run_id
            self.pushed: list[bool] = []

        def push(self, force: bool = False) -> None:
            self.pushed.append(force)

    mine, other = View("run_1"), View("run_2")
    service = KernelPython(shell, lambda: [mine, other])
    shell.user_ns["mine"] = mine
    assert run(shell, "list(mine.pushed)", service=service)["value"] == "[True]"
    assert other.pushed == []


def test_a_timer_at_the_edge_never_leaks(shell: InteractiveShell) -> None:
    """Timers that fire as the code starts or ends: every run ends in words, and the
    person's handlers are back each time."""
    service = KernelPython(shell)
    seen = set()
    for n in range(150):
        got = service.run_now("x = 1" if n % 2 else "while True: pass", timeout=0.001,
                              run_id="run_1")
        seen.add(got["status"])
        assert signal_handlers_restored()
    assert seen <= {"done", "timeout"} and "timeout" in seen
