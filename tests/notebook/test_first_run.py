"""A first run is honest: the demo imports nothing heavy, a real model's first run says it
is loading litellm before the import ends, a process that exits during the background
import exits quietly, and CLI subcommands import only what they use."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from scripted_server import Message, ScriptedServer

HEAVY = ("litellm", "lancedb", "ipywidgets", "pydantic", "s3fs", "boto3", "moto", "dask",
         "distributed", "fsspec", "botocore", "aiobotocore")

PLAIN_EXIT = """
import sys
from agent_kernel.engine.models import litellm_loader as llm
llm.warm_up()
print("importing" if llm._warm_thread.is_alive() else "done", flush=True)
sys.exit(0)
"""

IPYTHON_EXIT = """
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "agent_kernel")
from agent_kernel.engine.models import litellm_loader as llm
print("after load_ext:", llm._warm_thread, flush=True)
shell.run_line_magic("agent_config", "--model openai/some-model")
print("importing" if llm._warm_thread.is_alive() else "done", flush=True)
"""

CONFIGURED_EXIT = """
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
shell.config.AgentMagics.model = "openai/some-model"
shell.run_line_magic("load_ext", "agent_kernel")
from agent_kernel.engine.models import litellm_loader as llm
print("importing" if llm._warm_thread.is_alive() else "done", flush=True)
"""


def test_exit_during_the_warm_up_import_is_silent(tmp_path):
    """Leaving while litellm is still importing in the background: no traceback, no abort,
    exit code 0 (before, the import failed at shutdown with a traceback on stderr)."""
    env = {**os.environ, "AGENT_KERNEL_WORKSPACE": str(tmp_path / "ws")}
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
             for code in [PLAIN_EXIT] * 5 + [IPYTHON_EXIT] * 5 + [CONFIGURED_EXIT] * 5]
    for index, proc in enumerate(procs):
        out, err = proc.communicate(timeout=120)
        assert (proc.returncode, err) == (0, ""), (index, out)
        assert out.splitlines()[-1] == "importing", out  # it was exiting mid-import
        if 5 <= index < 10:  # the default model, demo, starts no import; a real model does
            assert "after load_ext: None" in out


def _imports(*args: str, cwd: str) -> str:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "agent_kernel", *args],
                          capture_output=True, text=True, timeout=120, cwd=cwd)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stderr


@pytest.mark.parametrize("args", [["verify"], ["triggers", "--duration", "0"]],
                         ids=["verify", "triggers"])
def test_cli_subcommands_import_nothing_heavy(tmp_path, args):
    if args == ["verify"]:  # a folder with no ledger is no workspace to verify (exit 1)
        from agent_kernel.core.ledger import LEDGER_FILE, Ledger

        (tmp_path / "ws").mkdir()
        Ledger(tmp_path / "ws" / LEDGER_FILE).record_event("note", text="one record")
    text = _imports(*args, "--workspace", str(tmp_path / "ws"), cwd=str(tmp_path))
    modules = {line.rsplit("|", 1)[-1].strip() for line in text.splitlines() if "|" in line}
    assert "agent_kernel.cli.ledger" in modules or "agent_kernel" in modules  # it did report
    assert sorted(m for m in modules if m.split(".")[0] in HEAVY) == []


LOAD_EXT_IMPORTS = """
import json, sys, threading
from typing import Annotated
from IPython.core.interactiveshell import InteractiveShell

class Seen:
    \"\"\"Each module first imported on the main thread (the warm-up threads that
    ``%load_ext`` starts import the loop and pydantic on purpose, beside it).\"\"\"
    names = []
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if threading.current_thread() is threading.main_thread():
            cls.names.append(name)
        return None

shell = InteractiveShell.instance()
shell.config.AgentMagics.model = MODEL
sys.meta_path.insert(0, Seen)
shell.run_line_magic("load_ext", "agent_kernel")
sys.meta_path.remove(Seen)
loaded = sorted({n for n in Seen.names if n.split(".")[0] in HEAVY}
                | {n for n in Seen.names if n.startswith(("agent_kernel.engine.models.demo",
                                                          "agent_kernel.engine.models.llm"))})
from agent_kernel import Field, tool
from agent_kernel.engine.registry import ToolArgumentError
@tool
def count(n: Annotated[int, Field(ge=0)], step: int = Field(default=1, le=5)) -> int:
    \"\"\"Count up.\"\"\"
    return n + step
refused = []
for arguments in ({"n": -1}, {"n": 2, "step": 9}):
    try:
        count.validate(arguments)
    except ToolArgumentError as exc:
        refused.append(str(exc))
print(json.dumps({"loaded": loaded, "tool": count.validate({"n": 2}), "refused": refused,
                  "schema": count.parameters["properties"]}))
"""


@pytest.mark.parametrize("model", ["demo", "openai/some-model"])
def test_load_ext_imports_nothing_heavy(tmp_path, model):
    """``%load_ext`` imports neither pydantic (~60 ms) nor the demo's answers or the litellm
    seam on its own thread, whatever the model; a ``@tool`` made afterwards with ``Field``
    (the one re-exported by the package) validates as before, importing pydantic then."""
    code = f"HEAVY = {HEAVY!r}\nMODEL = {model!r}\n" + LOAD_EXT_IMPORTS
    env = {**os.environ, "AGENT_KERNEL_WORKSPACE": str(tmp_path / "ws"),
           "IPYTHONDIR": str(tmp_path / "ipython")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.splitlines()[-1])
    assert seen["loaded"] == []
    assert seen["tool"] == {"n": 2, "step": 1}
    assert ["n: Input should be greater than or equal to 0" in seen["refused"][0],
            "step: Input should be less than or equal to 5" in seen["refused"][1]] == [True, True]
    assert seen["schema"] == {"n": {"minimum": 0, "type": "integer"},
                              "step": {"default": 1, "maximum": 5, "type": "integer"}}


def test_cli_first_line_comes_before_the_library_loads(tmp_path):
    """The terminal shows the prompt, then what it waits for, then the answer."""
    with ScriptedServer() as server:
        server.script(Message(text="the scripted answer"))
        proc = subprocess.run(
            [sys.executable, "-m", "agent_kernel", "run", "hello", "--model",
             "openai/test-model", "--api-base", server.base_url, "--workspace",
             str(tmp_path / "ws")], stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=120, env={**os.environ, "OPENAI_API_KEY": "sk-test-0123456789abcdef"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == ">>> [openai/test-model] hello"
    assert lines[1] == "[info] loading the model library (first run)…"
    assert lines[2].startswith("[info] loaded the model library (first run) in ")
    assert lines[3] == "the scripted answer"


@pytest.mark.kernel
def test_first_real_model_run_in_a_kernel_says_it_is_loading(tmp_path, run_notebook,
                                                             output_text):
    """A first ``%agent --model openai/...`` run shows the loading notice, sent while litellm
    was still importing (the kernel records both moments); later runs show none."""
    with ScriptedServer() as server:
        server.script(Message(text="first scripted answer"), Message(text="second answer"))
        nb = run_notebook([
            f"get_ipython().config.AgentMagics.api_base = {server.base_url!r}\n"
            "%load_ext agent_kernel",
            "import json, sys\nfrom agent_kernel.engine.models import litellm_loader as llm\n"
            "from agent_kernel.core.events import Loading\n"
            "from agent_kernel.notebook.magics import current\n"
            "seen = []\n"
            "def on(event):\n"
            "    if isinstance(event, Loading):\n"
            "        seen.append({'at': event.at, 'seconds': event.seconds,\n"
            "                     'loaded': llm._litellm is not None})\n"
            "current().agent.bus.subscribe(on)\n"
            "print('before the run:', 'litellm' in sys.modules, llm._warm_thread)",
            "%agent --model openai/test-model hello",
            "%agent --model openai/test-model again",
            "print(json.dumps({'seen': seen, 'loaded_at': llm.loaded_at}))",
        ], cwd=tmp_path, timeout=120,
            env={"OPENAI_API_KEY": "sk-test-0123456789abcdef",
                 "AGENT_KERNEL_WORKSPACE": str(tmp_path / "ws")})
    cells = nb.cells
    assert "before the run: False None" in output_text(cells[1])  # a true first run
    first = output_text(cells[2])
    assert "loaded the model library (first run) in " in first
    assert "first scripted answer" in first
    assert "loaded the model library (first run) in " in output_text(cells[2], "text/html")
    second = output_text(cells[3])
    assert "second answer" in second and "model library" not in second
    record = json.loads(output_text(cells[4]).strip().splitlines()[-1])
    started, finished = record["seen"]
    assert started["seconds"] is None and started["loaded"] is False
    assert started["at"] < record["loaded_at"] <= finished["at"]
    assert finished["seconds"] > 0 and finished["loaded"] is True


PROBE_SPY = """%load_ext agent_kernel
from agent_kernel.notebook.magics import current
magics, waits = current(), []
real_result = magics.probe.result
async def counted(wait=1.0):
    waits.append(wait)
    return await real_result(wait)
magics.probe.result = counted"""


@pytest.mark.kernel
def test_a_headless_client_does_not_wait_for_the_frontend_probe(isolated_env, tmp_path):
    """Nobody answers the probe here. A cell sent with ``allow_stdin: true`` (as JupyterLab
    sends it) waits ``probe_wait`` for an answer; one sent with ``false`` (nbclient,
    papermill) does not wait at all, even with a ``probe_wait`` of ten minutes."""
    from jupyter_client.manager import start_new_kernel
    from kernel_runs import cell_text

    manager, client = start_new_kernel(
        kernel_name="python3", cwd=str(tmp_path),
        env={**os.environ, "AGENT_KERNEL_WORKSPACE": str(tmp_path / "ws")})
    try:
        def run(code: str, allow_stdin: bool) -> str:
            return cell_text(client, client.execute(code, allow_stdin=allow_stdin))

        assert "ERROR" not in run(PROBE_SPY, True)
        last = "print(magics.agent.messages[-1]['content'])"
        assert "ERROR" not in run("%agent echo one", True)
        assert "The echo tool returned: one" in run(last, True)
        assert run("print(waits, magics.probe.answered.is_set())", True) == "[1.0] False\n"
        run("magics.probe_wait = 600.0", True)
        assert "ERROR" not in run("%agent echo two", False)  # headless: blocks until done
        assert "The echo tool returned: two" in run(last, True)
        assert run("print(waits)", True) == "[1.0]\n"
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


WARM_FIRST_CALL = r"""
import json, sys
import litellm
from litellm.integrations.custom_logger import CustomLogger

class Seen(CustomLogger):
    calls = []
    def log_success_event(self, kwargs, response_obj, start_time, end_time):
        self.calls.append(kwargs.get("model"))
    async def async_log_success_event(self, kwargs, response_obj, start_time, end_time):
        self.calls.append(kwargs.get("model"))

litellm.callbacks = [Seen()]  # a person's own callback, configured before the warm-up
from agent_kernel.engine.models import litellm_loader as llm
llm.warm_up().join(300)
print(json.dumps({"encoding": "litellm.litellm_core_utils.default_encoding" in sys.modules,
                  "tiktoken": "tiktoken.load" in sys.modules, "callbacks": Seen.calls}))
"""


def test_the_warm_up_loads_what_the_first_call_would_and_logs_nowhere(tmp_path):
    """The background warm-up imports litellm and then makes one offline call, which loads
    tiktoken's encoding (and the rest a first call loads) without reaching a callback a
    person configured: nothing is sent, nothing is logged."""
    proc = subprocess.run([sys.executable, "-c", WARM_FIRST_CALL], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen == {"encoding": True, "tiktoken": True, "callbacks": []}


REDACT_PATTERNS = """
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
shell.config.AgentMagics.redact_patterns = ["ticket-[0-9]{4}", "("]
shell.run_line_magic("load_ext", "agent_kernel")
from agent_kernel.core.redaction import redact_text
print(redact_text("ticket-1234 and order-5678"))
from agent_kernel.notebook.magics import current
current(shell).redact_patterns = ["order-[0-9]{4}"]
print(redact_text("ticket-1234 and order-5678"))
"""


def test_redact_patterns_mask_from_load_ext_on(tmp_path):
    """The person's ``redact_patterns`` (configured before ``%load_ext``, or set after) mask
    from then on; one that is no regular expression is said and ignored. With none, the
    redaction module waits for its first use (not ``%load_ext``'s cost)."""
    env = {**os.environ, "AGENT_KERNEL_WORKSPACE": str(tmp_path / "ws"),
           "IPYTHONDIR": str(tmp_path / "ipython")}
    proc = subprocess.run([sys.executable, "-c", REDACT_PATTERNS], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()[-2:]
    assert "ticket-1234" not in first and "order-5678" in first
    assert "ticket-1234" not in second and "order-5678" not in second
    assert "redact_patterns: '(' is not a regular expression" in proc.stderr
