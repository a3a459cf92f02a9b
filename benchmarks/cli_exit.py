"""Measure how long ``python -m agent_kernel run`` takes to end once its work is printed.

Each round runs the CLI in a fresh process twice per code folder: on the offline ``demo``
model and on ``openai/test-model`` served by the scripted server of
``tests/scripted_server.py`` on 127.0.0.1 (litellm imported). It times the last line of
output (the ``[done ·`` line, written after the ledger and the run) and the process's
end; ``exit`` is the time between them: the interpreter's shutdown, which used to tear
down every module litellm imported.

Run: ``python benchmarks/cli_exit.py [--rounds N] [--code DIR ...]``; several ``--code``
folders (the main checkout and a worktree) run interleaved, each process importing
agent_kernel from its folder (``PYTHONPATH``). Prints medians (min, max). Needs no network.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from scripted_server import Message, ScriptedServer  # noqa: E402


def one_run(model: str, code: str, base_url: str, folder: str) -> tuple[float, float]:
    """(seconds to the last output line, seconds from it to the process's end)."""
    args = [sys.executable, "-m", "agent_kernel", "run", "echo hi", "--model", model,
            "--workspace", os.path.join(folder, "ws")]
    if model != "demo":
        args += ["--api-base", base_url]
    env = dict(os.environ, PYTHONPATH=code, OPENAI_API_KEY="sk-bench-0123456789abcdef",
               LITELLM_LOCAL_MODEL_COST_MAP="True")
    started = time.perf_counter()
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, bufsize=1, env=env,
                            cwd=folder)  # not this checkout: -m imports from the cwd first
    assert proc.stdout is not None
    last = started
    for line in proc.stdout:
        last = time.perf_counter()
        if line.startswith("[done"):
            break
    for _ in proc.stdout:
        last = time.perf_counter()
    proc.wait()
    ended = time.perf_counter()
    if proc.returncode != 0:
        raise SystemExit(f"{model} run failed: {proc.stderr.read() if proc.stderr else ''}")
    return last - started, ended - last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--code", action="append", default=None, metavar="DIR")
    args = parser.parse_args()
    codes = [os.path.abspath(c) for c in args.code or [str(ROOT)]]
    rows: dict[str, list[float]] = {}
    with ScriptedServer() as server, tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            for model in ("demo", "openai/test-model"):
                for code in codes:
                    server.script(Message(text="the scripted answer"))
                    work, leaving = one_run(model, code, server.base_url,
                                            tempfile.mkdtemp(dir=tmp))
                    name = f"[{os.path.basename(code)}] {model}"
                    rows.setdefault(f"{name}: to the last line", []).append(work)
                    rows.setdefault(f"{name}: exit after it", []).append(leaving)
    width = max(len(k) for k in rows)
    print(f"{'measure':{width}}  {'median':>8}  {'min':>8}  {'max':>8}   ({args.rounds} rounds)")
    for key, values in sorted(rows.items(), key=lambda kv: ("exit" in kv[0], kv[0])):
        print(f"{key:{width}}  " + "  ".join(f"{v:6.2f} s" for v in (
            statistics.median(values), min(values), max(values))))


if __name__ == "__main__":
    main()
