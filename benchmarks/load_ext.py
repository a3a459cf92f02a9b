"""Measure ``%load_ext agent_kernel`` and the time to the first streamed text of a demo run.

Each figure comes from a fresh Python process (no warm imports):

* ``load_ext``: ``%load_ext agent_kernel`` in a new IPython shell (median of N runs), and which
  heavy modules it pulled in (litellm, lancedb and ipywidgets must not be among them);
* the floor, interleaved with it (one fresh process each, in turn): ``%load_ext autoreload``,
  IPython's own extension, loaded the same way in the same kind of fresh shell;
* ``first text, cold``: from the start of a first run of ``what can you do?`` on the demo
  model, started at once after ``%load_ext``, to its first ``TextDelta`` (the demo needs no
  litellm, so none is imported);
* ``first text, warm``: the same for a second run in the same process;
* ``whole``: from before ``%load_ext`` to the first run's first ``TextDelta`` (the agent made
  and the run started at once, while the background imports ``%load_ext`` starts still run).

Run: ``python benchmarks/load_ext.py [--runs N]``. Prints the figures; docs/notebook.md quotes them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

LOAD_EXT = r"""
import json, sys, time
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
if CORE_ONLY:
    import agent_kernel.notebook.magics
    agent_kernel.notebook.magics.MAGIC_MODULES = ()
t = time.perf_counter()
shell.run_line_magic("load_ext", EXTENSION)
elapsed = time.perf_counter() - t
heavy = [m for m in ("lancedb", "ipywidgets") if m in sys.modules]
if EXTENSION == "agent_kernel":
    import agent_kernel.engine.models.litellm_loader as llm
    if llm._litellm is not None:
        heavy.append("litellm")
print(json.dumps({"load_ext_ms": elapsed * 1000, "heavy": heavy}), flush=True)
import os
os._exit(0)  # do not wait for (or tear down under) the background warm-up imports
"""

FIRST_TEXT = r"""
import asyncio, json, time
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
t0 = time.perf_counter()
shell.run_line_magic("load_ext", "agent_kernel")
import agent_kernel.notebook.magics as m
from agent_kernel.core.events import TextDelta
agent = m.current().agent

async def first_text(prompt):
    start = time.perf_counter()
    seen = asyncio.get_running_loop().create_future()
    def on(e):
        if isinstance(e, TextDelta) and not seen.done():
            seen.set_result(time.perf_counter())
    off = agent.bus.subscribe(on)
    await agent.arun(prompt)
    off()
    return seen.result() - start, seen.result()

cold, at = asyncio.run(first_text("what can you do?"))
warm, _ = asyncio.run(first_text("what can you do?"))
print(json.dumps({"cold_ms": cold * 1000, "warm_ms": warm * 1000,
                  "whole_ms": (at - t0) * 1000}), flush=True)
import os
os._exit(0)
"""


def fresh(code: str, env: dict[str, str], core_only: bool = False,
          extension: str = "agent_kernel") -> dict:
    code = f"CORE_ONLY = {core_only}\nEXTENSION = {extension!r}\n" + code
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="agent-kernel-bench-")
    env = dict(os.environ, IPYTHONDIR=os.path.join(tmp, "ipython"),
               AGENT_KERNEL_WORKSPACE=os.path.join(tmp, "ws"), LITELLM_LOCAL_MODEL_COST_MAP="True")
    floor: list[float] = []
    for core_only in (True, False):
        loads = []
        for _ in range(args.runs):
            floor.append(fresh(LOAD_EXT, env, extension="autoreload")["load_ext_ms"])
            loads.append(fresh(LOAD_EXT, env, core_only))
        times = sorted(r["load_ext_ms"] for r in loads)
        what = "core magics only (MAGIC_MODULES=())" if core_only else "with feature modules"
        print(f"%load_ext agent_kernel, {what}: median {statistics.median(times):.0f} ms "
              f"(min {times[0]:.0f}, max {times[-1]:.0f}, {args.runs} fresh processes)")
        heavy = sorted({name for r in loads for name in r["heavy"]})
        print(f"  heavy modules imported by %load_ext (main thread): {heavy or 'none'}")
    floor.sort()
    print(f"floor, %load_ext autoreload (IPython's own), interleaved: median "
          f"{statistics.median(floor):.1f} ms (min {floor[0]:.1f}, max {floor[-1]:.1f}, "
          f"{len(floor)} fresh processes)")
    runs = [fresh(FIRST_TEXT, env) for _ in range(max(3, args.runs // 2))]
    cold = sorted(r["cold_ms"] for r in runs)
    warm = sorted(r["warm_ms"] for r in runs)
    whole = sorted(r["whole_ms"] for r in runs)
    print(f"%load_ext, the agent and the first run to its first streamed text: median "
          f"{statistics.median(whole):.0f} ms (min {whole[0]:.0f}, max {whole[-1]:.0f})")
    print(f"first streamed text, first run: median "
          f"{statistics.median(cold):.0f} ms (min {cold[0]:.0f}, max {cold[-1]:.0f})")
    print(f"first streamed text, next runs: median {statistics.median(warm):.1f} ms "
          f"(min {warm[0]:.1f}, max {warm[-1]:.1f})")


if __name__ == "__main__":
    main()
