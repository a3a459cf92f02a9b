"""``%agent`` flags (issue 25, item 10): an unknown flag, or ``--model`` without its model,
is a usage error and never reaches the model as the prompt. In-process: no kernel."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

from agent_kernel.engine.user_tools import UserTools, session_tools
from agent_kernel.notebook import magics as m


@pytest.fixture
def magics(tmp_path: Path) -> Iterator[m.AgentMagics]:
    shell = InteractiveShell()
    with session_tools(UserTools()):
        m.load_ipython_extension(shell)
    made = m.current(shell)
    made.workspace = str(tmp_path / "ws")
    started: list[str] = []
    made.start = lambda prompt, **options: started.append(prompt)  # type: ignore[method-assign]
    made.started = started  # type: ignore[attr-defined]
    yield made
    m.unload_ipython_extension(shell)


@pytest.mark.parametrize(("line", "said"), [
    ("--modle openai/x hello", "unknown option --modle."),
    ("--model", "--model needs a model, as in %agent --model ollama/llama3.2 PROMPT."),
    ("--model --wait hello", "--model needs a model"),
    ("--wait --model= hello", "--model needs a model"),
    ("--waiting hello", "unknown option --waiting."),
    ("--wait=yes hello", "--wait takes no value."),
    ("-v hello", "unknown option -v."),
])
def test_a_flag_that_cannot_be_read_is_a_usage_error(magics: m.AgentMagics, line: str,
                                                     said: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    magics.agent_magic(line)
    err = capsys.readouterr().err
    assert err.startswith(f"agent-kernel: {said}") and "Usage: %agent [--model MODEL]" in err
    assert magics.started == []  # type: ignore[attr-defined]
    assert magics._agent is None  # nothing was made, let alone asked


@pytest.mark.parametrize(("line", "prompt"), [
    ("--wait hello there", "hello there"),
    ("--new --model=demo what is -- this?", "what is -- this?"),
    ("-- --help is a flag; explain it", "--help is a flag; explain it"),
    ("--wait -- -v means verbose", "-v means verbose"),
    ("- list the files", "- list the files"),
])
def test_prompts_that_are_prompts_still_run(magics: m.AgentMagics, line: str,
                                            prompt: str) -> None:
    magics.agent_magic(line)
    assert magics.started == [prompt]  # type: ignore[attr-defined]
