"""Measure what a person waits for in a fresh kernel: the first output, the answer, memory.

Each round starts a real ``python3`` kernel (jupyter_client) and plays JupyterLab's part:
it answers the frontend probe (a live frontend, so ``%agent`` cells return at once and the
run streams into its widget) and times every cell from the moment it is sent (Enter):

* ``first output``: the first iopub message of the cell that shows something (the run's
  widget display);
* ``notice``: the first message carrying "loading the model library" (litellm runs only);
* ``answer``: the first message carrying the answer's text.

Four kernels per round:

* ``demo``: the offline ``demo`` model (first run, next run, then a ``remember`` and a
  ``recall`` run that open the memory store);
* ``litellm``: ``openai/test-model`` served by the scripted server of
  ``tests/scripted_server.py`` on 127.0.0.1, named per run (first run, which loads
  litellm inside the run, and a next run);
* ``configured``: the same model set as ``c.AgentMagics.model``, so ``%load_ext`` warms
  litellm up in the background; the person waits for the warm-up to end (``warm-up
  left``), then the first run and a next run: their difference is what the first call
  still loads that the warm-up did not;
* ``headless``: a client like nbclient (cells sent with ``allow_stdin: false``, the probe
  never answered) sends ``%agent`` right after ``%load_ext``: the time to its answer
  includes any wait for the frontend probe.

A fresh ``python -c "import litellm"`` per round gives litellm's import alone, the floor
of a first litellm run. The kernel's resident memory (VmRSS from ``/proc/<pid>/status``)
is read after ``%load_ext`` and after the runs.

Run: ``python benchmarks/first_run.py [--rounds N] [--code DIR ...]``; prints a table of
medians over the rounds (min and max beside them). With several ``--code`` folders (e.g.
the main checkout and a branch's worktree) each round runs every kernel once per folder,
interleaved, its agent_kernel imported from there (``PYTHONPATH``), and each row is
labelled with the folder's name. docs/loop.md quotes it. Needs no network.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from scripted_server import Message, ScriptedServer  # noqa: E402

PROBE_TARGET = "agent_kernel.frontend_probe"
NOTICE = "loading the model library"


def rss_mib(pid: int) -> float:
    """The process's resident memory in MiB, from ``/proc``."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


class Kernel:
    """A fresh python3 kernel with a client that answers the probe like JupyterLab."""

    def __init__(self, env: dict[str, str], cwd: str) -> None:
        from jupyter_client.manager import KernelManager

        self.manager = KernelManager(kernel_name="python3")
        self.manager.start_kernel(env=env, cwd=cwd)
        self.client = self.manager.blocking_client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)
        self.pid = int(self.execute("import os; print(os.getpid())")["text"].split()[-1])

    def close(self) -> None:
        """Stop the kernel."""
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)

    def execute(self, code: str, answer: str | None = None, timeout: float = 120.0,
                allow_stdin: bool = True) -> dict[str, Any]:
        """Run ``code``; seconds from sending to first output, the notice and ``answer``.

        ``allow_stdin=False`` sends the cell as nbclient does, and leaves the probe
        unanswered (a headless client)."""
        sent = time.perf_counter()
        msg_id = self.client.execute(code, allow_stdin=allow_stdin)
        marks: dict[str, Any] = {"text": ""}
        idle = False
        deadline = sent + timeout
        while not (idle and (answer is None or "answer" in marks)):
            try:
                msg = self.client.get_iopub_msg(timeout=max(0.1, deadline - time.perf_counter()))
            except queue.Empty:
                raise TimeoutError(f"no answer to {code!r} within {timeout:g} s") from None
            now = time.perf_counter() - sent
            kind, content = msg["msg_type"], msg["content"]
            if kind == "comm_open" and content.get("target_name") == PROBE_TARGET:
                if not allow_stdin:
                    continue
                self.client.shell_channel.send(self.client.session.msg(
                    "comm_close", {"comm_id": content["comm_id"], "data": {}}))
                continue
            mine = msg["parent_header"].get("msg_id") == msg_id
            if kind == "status" and mine and content["execution_state"] == "idle":
                idle = True
                continue
            if kind in ("display_data", "stream", "execute_result", "error") and mine:
                marks.setdefault("first_output", now)
            if kind == "stream" and mine:
                marks["text"] += content["text"]
            if kind == "error" and mine:
                raise RuntimeError(f"{code!r} failed: {content['ename']}: {content['evalue']}")
            body = json.dumps(content)
            if NOTICE in body:
                marks.setdefault("notice", now)
            if answer is not None and answer in body:
                marks.setdefault("answer", now)
        return marks


def demo_round(env: dict[str, str], cwd: str) -> dict[str, float]:
    """One fresh kernel on the demo model."""
    kernel = Kernel(env, cwd)
    try:
        out: dict[str, float] = {"rss kernel started": rss_mib(kernel.pid)}
        kernel.execute("%load_ext agent_kernel")
        time.sleep(1.0)  # let anything %load_ext started in the background settle
        out["rss after %load_ext"] = rss_mib(kernel.pid)
        for label, prompt, answer in (
                ("demo first run", "echo hello", "The echo tool returned: hello"),
                ("demo next run", "echo again", "The echo tool returned: again")):
            marks = kernel.execute(f"%agent {prompt}", answer)
            out[f"{label}: first output"] = marks["first_output"]
            out[f"{label}: answer"] = marks["answer"]
            kernel.execute("%agent_wait")  # the run has ended, its final display sent
            time.sleep(0.5)
            out[f"rss after {label}"] = rss_mib(kernel.pid)
        for label, prompt, answer in (
                ("demo remember run", "remember that the build server is orion-7",
                 "I will remember that"),
                ("demo recall run", "recall build server", "Here is what I remember")):
            out[f"{label}: answer"] = kernel.execute(f"%agent {prompt}", answer)["answer"]
            kernel.execute("%agent_wait")
        time.sleep(0.5)
        out["rss after remember + recall"] = rss_mib(kernel.pid)
        return out
    finally:
        kernel.close()


def litellm_round(env: dict[str, str], cwd: str) -> dict[str, float]:
    """One fresh kernel whose runs use ``openai/test-model`` on the scripted server."""
    with ScriptedServer() as server:
        server.script(Message(text="first scripted answer"), Message(text="next scripted answer"))
        kernel = Kernel({**env, "OPENAI_API_KEY": "sk-bench-0123456789abcdef"}, cwd)
        try:
            kernel.execute(f"get_ipython().config.AgentMagics.api_base = {server.base_url!r}\n"
                           "%load_ext agent_kernel")
            time.sleep(1.0)  # as in the demo kernel: a person types the next cell
            out: dict[str, float] = {}
            for label, answer in (("litellm first run", "first scripted answer"),
                                  ("litellm next run", "next scripted answer")):
                marks = kernel.execute("%agent --model openai/test-model hello", answer)
                out[f"{label}: first output"] = marks["first_output"]
                if "notice" in marks:
                    out[f"{label}: loading notice"] = marks["notice"]
                out[f"{label}: answer"] = marks["answer"]
                kernel.execute("%agent_wait")
            time.sleep(0.5)
            out["rss after litellm runs"] = rss_mib(kernel.pid)
            return out
        finally:
            kernel.close()


def configured_round(env: dict[str, str], cwd: str) -> dict[str, float]:
    """A kernel configured for ``openai/test-model``: the warm-up runs from ``%load_ext``."""
    with ScriptedServer() as server:
        server.script(Message(text="first scripted answer"), Message(text="next scripted answer"))
        kernel = Kernel({**env, "OPENAI_API_KEY": "sk-bench-0123456789abcdef"}, cwd)
        try:
            started = time.perf_counter()
            kernel.execute(f"get_ipython().config.AgentMagics.api_base = {server.base_url!r}\n"
                           "get_ipython().config.AgentMagics.model = 'openai/test-model'\n"
                           "%load_ext agent_kernel")
            out: dict[str, float] = {"configured: %load_ext cell": time.perf_counter() - started}
            out["configured: warm-up left after %load_ext"] = kernel.execute(
                "from agent_kernel.engine.models import litellm_loader\n"
                "litellm_loader._warm_thread.join()\nprint('warm', 'ed')", "warm ed")["answer"]
            for label, answer in (("configured: first run after the warm-up", "first scripted"),
                                  ("configured: next run", "next scripted answer")):
                out[f"{label}: answer"] = kernel.execute("%agent hello", answer)["answer"]
                kernel.execute("%agent_wait")
            time.sleep(0.5)
            out["rss after configured litellm runs"] = rss_mib(kernel.pid)
            return out
        finally:
            kernel.close()


def headless_round(env: dict[str, str], cwd: str) -> dict[str, float]:
    """A client like nbclient: ``allow_stdin: false``, the probe never answered."""
    kernel = Kernel(env, cwd)
    try:
        kernel.execute("%load_ext agent_kernel", allow_stdin=False)
        marks = kernel.execute("%agent echo hello", "The echo tool returned: hello",
                               allow_stdin=False)
        return {"headless first run (right after %load_ext): answer": marks["answer"]}
    finally:
        kernel.close()


def import_litellm(env: dict[str, str]) -> dict[str, float]:
    """litellm's import alone, in a fresh process: the floor of a first litellm run."""
    code = "import time; t = time.perf_counter(); import litellm; print(time.perf_counter() - t)"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, check=True, timeout=300)
    return {"litellm import alone (fresh process)": float(done.stdout.split()[-1])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="fresh kernels per model")
    parser.add_argument("--code", action="append", default=None, metavar="DIR",
                        help="a checkout whose agent_kernel the kernels import (repeatable; "
                             "default: this one)")
    args = parser.parse_args()
    codes = [os.path.abspath(c) for c in args.code or [str(ROOT)]]
    found_rows: dict[str, dict[str, list[float]]] = {}  # measure -> code tag -> values
    with tempfile.TemporaryDirectory(prefix="agent-kernel-first-run-") as tmp:
        for _ in range(args.rounds):
            for play in (demo_round, litellm_round, configured_round, headless_round, None):
                for code in codes:
                    folder = tempfile.mkdtemp(dir=tmp)
                    env = dict(os.environ, AGENT_KERNEL_WORKSPACE=os.path.join(folder, "ws"),
                               IPYTHONDIR=os.path.join(folder, "ipython"),
                               LITELLM_LOCAL_MODEL_COST_MAP="True", PYTHONPATH=code)
                    found = import_litellm(env) if play is None else play(env, folder)
                    tag = f"[{os.path.basename(code)}] " if len(codes) > 1 and play else ""
                    for key, value in found.items():
                        found_rows.setdefault(key, {}).setdefault(tag, []).append(value)
                    if play is None:
                        break  # the import does not depend on our code
    rows = {tag + key: values for key, by_code in found_rows.items()  # side by side
            for tag, values in by_code.items()}
    width = max(len(k) for k in rows)
    print(f"{'measure':{width}}  {'median':>9}  {'min':>9}  {'max':>9}   ({args.rounds} rounds)")
    for key, values in rows.items():
        unit = "MiB" if key.split("] ")[-1].startswith("rss") else "s"
        cells = [f"{v:7.{1 if unit == 'MiB' else 2}f} {unit}" for v in
                 (statistics.median(values), min(values), max(values))]
        print(f"{key:{width}}  {cells[0]:>9}  {cells[1]:>9}  {cells[2]:>9}")


if __name__ == "__main__":
    main()
