"""run_python's approval card in JupyterLab in Chromium (light and dark): the code the
model wrote is shown highlighted as Python, character for character, a secret-looking
part still marked, in the theme's colours with WCAG AA contrast. The model is the
scripted server; the person denies, and nothing runs. Then approved code that sleeps on
the kernel's main thread is ended by the run's Stop button."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from labserver import drive_notebook
from scripted_server import Call, Message, ScriptedServer

OUTPUT = Path(__file__).resolve().parents[2] / "test-output" / "browser" / "python"
CODE = ("import os\n"
        "def total(rows):\n"
        "    # the sum of the price column\n"
        "    return sum(r['price'] for r in rows)\n"
        "TOKEN = 'sk-live-0123456789abcdefghijklmnop'\n"
        "ran_it = True")
SLEEPER = "import time\ntime.sleep(60)\nslept = True"
AA = 4.5

pytestmark = [pytest.mark.browser, pytest.mark.kernel, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as made:
        yield made


@pytest.fixture(scope="module", params=["light", "dark"])
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
        server: ScriptedServer) -> tuple[str, dict[str, Any]]:
    mode = request.param
    server.script(Message(calls=[Call("run_python", json.dumps({"code": CODE}))]),
                  Message(text="not run"),
                  Message(calls=[Call("run_python", json.dumps({"code": SLEEPER}))]))
    cells = [f"get_ipython().config.AgentMagics.api_base = {server.base_url!r}\n"
             "%load_ext agent_kernel",
             "%agent --model openai/test-model add up the prices",
             "%agent --model openai/test-model take your time",
             "print('ALIVE', 'ran_it' in dir(), 'slept' in dir())"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
        result = drive_notebook(tmp_path_factory.mktemp(f"python-{mode}"), "python.ipynb",
                                cells, "code", OUTPUT / mode,
                                theme="JupyterLab Dark" if mode == "dark" else None)
    assert not result["errors"], "\n".join(result["errors"]) + "\n" + result["stderr"]
    return mode, result


def test_the_card_shows_the_code_highlighted_and_exact(run: tuple[str, dict[str, Any]]
                                                       ) -> None:
    mode, result = run
    step = result["steps"]["code"]
    assert step["dark"] == (mode == "dark")
    assert step["code"] == CODE  # every character, as the tool will get it
    assert step["keywords"][:4] == ["import", "def", "return", "for"]
    assert "'price'" in step["strings"]
    assert step["comments"] == ["# the sum of the price column"]
    assert any("sk-live-0123456789abcdefghijklmnop" in m for m in step["secret_marks"])
    low = [m for m in step["contrast"] if m["ratio"] < AA]
    assert step["contrast"] and not low, json.dumps(low, indent=1, ensure_ascii=False)


def test_denied_code_did_not_run_and_stop_ends_running_code(
        run: tuple[str, dict[str, Any]]) -> None:
    _, result = run
    assert result["steps"]["code"]["status"] == "denied"
    stop = result["steps"]["code_stop"]
    assert stop["running_status"] == "running" and stop["status"] == "stopped"
    assert stop["stop_to_stopped_ms"] < 10_000  # not the 60 s the code would sleep
    assert stop["after"] == "ALIVE False False"  # nothing ran; the kernel goes on
