"""The memory index's first load is said where someone waits, and done ahead only if asked.

Each check runs in a fresh process, so the load is a real first one: LanceDB imported,
the table opened, the embedding model loaded (agent_kernel/memory/warming.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("lancedb", "onnxruntime")

FIRST_LOAD = r"""
import json, sys
from agent_kernel.memory.service import MemoryStore
from agent_kernel.memory.warming import load_saying
store = MemoryStore(sys.argv[1])
before = [m for m in ("lancedb", "onnxruntime") if m in sys.modules]
said = []
load_saying(store, said.append)
first = list(said)
load_saying(store, said.append)
print(json.dumps({"before": before, "said": first, "again": said[len(first):],
                  "after": [m for m in ("lancedb", "onnxruntime") if m in sys.modules]}))
"""

WARMED = r"""
import asyncio, json, sys
from agent_kernel import Agent
from agent_kernel.core.events import Loading
from agent_kernel.memory.service import store_of
from agent_kernel.memory.warming import LOADING, warm_in_background
agent = Agent(model="demo", workspace=sys.argv[1])
asyncio.run(agent.arun("echo before any memory"))
idle = [m for m in ("lancedb", "onnxruntime") if m in sys.modules]
thread = warm_in_background(store_of(agent))
thread.join(120)
seen = []
agent.bus.subscribe(lambda e: seen.append(e.shown) if isinstance(e, Loading) else None)
result = asyncio.run(agent.arun("remember that the build server is orion-7"))
print(json.dumps({"idle": idle, "warm": [m for m in ("lancedb", "onnxruntime")
                                          if m in sys.modules],
                  "ok": result.ok, "loading": seen, "again": warm_in_background(
                      store_of(agent)) is None}))
"""


def _python(code: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_first_load_in_a_process_is_said_before_and_after(tmp_path: Path) -> None:
    """``load_saying`` (the ``%agent_memory`` magic's and the CLI's) says it loads, loads
    LanceDB and the embedding model, then says how long it took; the next time, nothing."""
    out = _python(FIRST_LOAD, str(tmp_path / "ws"))
    assert out["before"] == []
    assert out["said"][0] == "loading the memory index (first use)…"
    assert out["said"][1].startswith("loaded the memory index (first use) in ")
    assert out["said"][1].endswith(" s") and len(out["said"]) == 2
    assert out["again"] == []
    assert out["after"] == list(HEAVY)


def test_warming_in_the_background_spares_the_first_memory_call_its_wait(tmp_path: Path
                                                                          ) -> None:
    """Nothing heavy is loaded by a chat run; ``warm_in_background`` loads it in a thread,
    after which the first ``remember`` has nothing to load (no ``Loading`` event)."""
    out = _python(WARMED, str(tmp_path / "ws"))
    assert out["idle"] == []
    assert out["warm"] == list(HEAVY)
    assert out["ok"] is True and out["loading"] == []
    assert out["again"] is True  # loaded: no second thread


def test_the_memory_cli_says_it_loads_on_stderr(tmp_path: Path) -> None:
    """``python -m agent_kernel memory status``: the first use's two lines on stderr, the
    status itself on stdout as before."""
    done = subprocess.run([sys.executable, "-m", "agent_kernel", "memory", "--workspace",
                           str(tmp_path / "ws"), "status"], capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == "[info] loading the memory index (first use)…"
    assert lines[1].startswith("[info] loaded the memory index (first use) in ")
    assert "embedding: all-MiniLM-L6-v2-int8" in done.stdout


@pytest.mark.kernel
def test_warm_memory_loads_after_the_first_run_in_a_kernel(tmp_path, run_notebook,
                                                            output_text):
    """``%load_ext`` and a run leave memory unloaded; with ``warm_memory`` the end of the
    first run starts the load in the background. ``%agent_memory`` in a kernel without it
    says the first use's load in its output."""
    nb = run_notebook([
        "get_ipython().config.AgentMagics.warm_memory = True\n%load_ext agent_kernel",
        "import sys\nfrom agent_kernel.memory.service import store_of\n"
        "from agent_kernel.notebook.magics import current\n"
        "print('idle:', [m for m in ('lancedb', 'onnxruntime') if m in sys.modules])",
        "%agent echo hello",
        "import threading\n[t.join(120) for t in threading.enumerate()\n"
        " if t.name == 'agent-kernel-warm-memory']\n"
        "print('warm:', [m for m in ('lancedb', 'onnxruntime') if m in sys.modules],\n"
        "      store_of(current().agent).loaded)",
    ], cwd=tmp_path, env={"AGENT_KERNEL_WORKSPACE": str(tmp_path / "ws")})
    assert "idle: []" in output_text(nb.cells[1])
    assert "warm: ['lancedb', 'onnxruntime'] True" in output_text(nb.cells[3])
    plain = run_notebook(["%load_ext agent_kernel", "%agent_memory status"], cwd=tmp_path,
                         env={"AGENT_KERNEL_WORKSPACE": str(tmp_path / "ws2")})
    said = output_text(plain.cells[1])
    assert "loading the memory index (first use)…" in said
    assert "loaded the memory index (first use) in " in said
    assert "embedding: all-MiniLM-L6-v2-int8" in said
