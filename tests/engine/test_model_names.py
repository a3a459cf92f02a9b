"""Model strings are checked when they are set: offline, fast, without importing litellm.

litellm's own files decide, so these tests hold the check to litellm itself (every
provider and model it routes is accepted, what we refuse it refuses too) and to every
entry point: ``Agent(model=)``, ``agent.model``, ``arun(model=)``, the magics and the CLI.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from agent_kernel import Agent
from agent_kernel.engine.models.names import check_model

REFUSED = ("opnai/gpt-4o", "nonsense", "gpt4o-mini", "openai", "OpenAI/gpt-4o")


def python(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; it prints one JSON object as its last line."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_everything_litellm_routes_is_accepted_and_what_we_refuse_it_refuses():
    found = python(f"""
import json, litellm
from litellm.litellm_core_utils.get_llm_provider_logic import declared_authenticating_provider
from litellm.llms.openai_like.json_loader import JSONProviderRegistry
from agent_kernel.engine.models.names import check_model
litellm.suppress_debug_info = True

def ours(model):
    try:
        check_model(model)
        return True
    except ValueError:
        return False

def routes(model):
    # For github_copilot/... and chatgpt/... get_llm_provider starts an OAuth device login
    # (the network, seconds of retries); litellm's answer for such a name is what it declares.
    if declared_authenticating_provider(model) is not None:
        return True
    try:
        litellm.get_llm_provider(model)
        return True
    except Exception:
        return False

providers = [str(getattr(p, "value", p)) for p in litellm.provider_list]
providers += list(JSONProviderRegistry.list_providers())
models = [m for m in {{*litellm.model_list, *litellm.model_cost}} if routes(m)]
print(json.dumps({{
    "providers": len(providers), "models": len(models),
    "providers_refused": [p for p in providers if not ours(p + "/some-model")],
    "models_refused": [m for m in models if not ours(m)],
    "litellm_routes": [m for m in {list(REFUSED)!r} if routes(m)],
}}))
""")
    assert found["providers"] > 100 and found["models"] > 1000
    assert found["providers_refused"] == []
    assert found["models_refused"] == []
    assert found["litellm_routes"] == []


@pytest.mark.parametrize("model", ["demo", "openai/gpt-4o", "gpt-4o-mini", "claude-sonnet-4-5",
                                   "anthropic/any-name", "ollama/llama3", "meta/llama-4",
                                   "vertex_ai_beta/gemini-x", "openrouter/openai/gpt-4o"])
def test_known_models_pass(model):
    assert check_model(model) == model


@pytest.mark.parametrize(("model", "said"), [
    ("opnai/gpt-4o", "unknown provider 'opnai' in model 'opnai/gpt-4o'; did you mean openai?"),
    ("OpenAI/gpt-4o", "did you mean openai?"),
    ("antropic/claude-sonnet-4-5", "did you mean anthropic"),
    ("gpt4o-mini", "did you mean openai/gpt-4o-mini"),
    ("nonsense", "as provider/model (e.g. openai/nonsense"),
    ("openai", "'openai' is a provider, not a model; write openai/MODEL"),
    ("openai/", "names no model after the provider"),
    ("", "must be a non-empty string"),
])
def test_unknown_models_are_refused_with_the_closest_names(model, said):
    with pytest.raises(ValueError) as refused:
        check_model(model)
    assert said in str(refused.value)


def test_the_check_is_fast_and_does_not_import_litellm(tmp_path):
    found = python(f"""
import json, sys, time
started = time.perf_counter()
from agent_kernel.engine.models.names import check_model
from agent_kernel import Agent
refused = 0
for model in ("openai/gpt-4o", "anthropic/claude-x", "gpt-4o-mini", "demo", *{REFUSED!r}):
    try:
        check_model(model)
    except ValueError:
        refused += 1
Agent(model="openai/gpt-4o", workspace={str(tmp_path / "ws")!r})
print(json.dumps({{"litellm": "litellm" in sys.modules, "refused": refused,
                  "seconds": time.perf_counter() - started}}))
""")
    assert found["refused"] == len(REFUSED)
    assert found["litellm"] is False
    assert found["seconds"] < 2.0  # litellm's import alone takes seconds


def test_the_agent_refuses_an_unknown_model_everywhere_it_is_set(tmp_path):
    with pytest.raises(ValueError, match="did you mean openai"):
        Agent(model="opnai/gpt-4o", workspace=tmp_path / "refused")
    assert not (tmp_path / "refused").exists()  # refused before anything was made
    agent = Agent(workspace=tmp_path / "ws")
    with pytest.raises(ValueError, match="openai/gpt-4o-mini"):
        agent.model = "gpt4o-mini"
    assert agent.model == "demo"
    agent.model = "openai/gpt-4o"
    assert agent.model == "openai/gpt-4o"
    with pytest.raises(ValueError, match="unknown model 'nonsense'"):
        agent.run("hi", model="nonsense")
    assert agent.ledger.records() == [] and agent.messages == []


def test_the_cli_refuses_an_unknown_model_before_running(tmp_path):
    for command in (["run", "hi"], ["triggers", "--duration", "1"]):
        proc = subprocess.run(
            [sys.executable, "-m", "agent_kernel", *command, "--model", "opnai/gpt-4o",
             "--workspace", str(tmp_path / "ws")],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 1, command
        assert proc.stderr.strip() == ("error: unknown provider 'opnai' in model "
                                       "'opnai/gpt-4o'; did you mean openai?"), command
        assert proc.stdout == ""
    assert not (tmp_path / "ws" / "ledger.jsonl").exists()


@pytest.mark.kernel
def test_the_magics_refuse_an_unknown_model_and_keep_the_old_one(run_notebook, output_text,
                                                                 tmp_path):
    nb = run_notebook([
        "%load_ext agent_kernel",
        "%agent_config --model opnai/gpt-4o",
        "%agent --model gpt4o-mini hi",
        "%agent_config\nimport sys\nprint('litellm' in sys.modules)",
    ], cwd=tmp_path, timeout=60)
    for cell in nb.cells:
        assert all(out.output_type != "error" for out in cell.outputs)
        assert "Traceback" not in output_text(cell)
    config = output_text(nb.cells[1])
    assert config.strip() == ("agent-kernel: unknown provider 'opnai' in model "
                              "'opnai/gpt-4o'; did you mean openai?")
    assert [o.get("name") for o in nb.cells[1].outputs] == ["stderr"]
    run = output_text(nb.cells[2])
    assert run.startswith("agent-kernel: unknown model 'gpt4o-mini'")
    assert "did you mean openai/gpt-4o-mini" in run
    assert [o.output_type for o in nb.cells[2].outputs] == ["stream"]  # no run was shown
    after = output_text(nb.cells[3])
    assert "model: demo" in after
    assert after.rstrip().endswith("False")  # nothing above needed litellm
