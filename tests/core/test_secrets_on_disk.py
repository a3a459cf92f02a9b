"""Secrets never reach disk or a saved notebook, searched for as an attacker would: ``grep``.

Twenty secret shapes go through a prompt, tool arguments, tool results of every kind
(text, dict, object, bytes), a remembered memory, a trigger's prompt, command output
and the model's reply, over litellm's real HTTP path to the scripted server. Then every
byte under the workspace, and a notebook saved after the same run in a real kernel, is
searched for each secret. Canary words sent the same way prove the search sees the
LanceDB tables and the mirrors at all.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from scripted_server import Call, Message, ScriptedServer

from agent_kernel import Agent, Settings, Tool
from agent_kernel.core.events import EventBus
from agent_kernel.core.workspace import Workspace
from agent_kernel.engine.questions import PENDING_FILE, QuestionChannel

PROVIDER_KEY = "provider-key-value-0a1b2c3d4e"  # a value with no known shape: the env rule
SECRETS = [
    "sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2",
    "sk-ant-api03-" + "Qw9" * 14,
    "AIza" + "SyD3" * 8 + "abc",
    "ghp_" + "a1B2" * 9,
    "github_pat_" + "11ABCDEFG0" * 3,
    "xoxb-1234567890-0987654321-AbCdEfGh",
    "AKIAIOSFODNN7EXAMPLE",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLE",
    "abcDEF123456ghiJKL789",
    "c2lnbmF0dXJlLXZhbHVl",
    "b3BlbnNzaC1rZXktdjEAAAA",
    "S3cr3tPassw0rd",
    "hunter2hunter2",
    "cs-9f8e7d6c5b4a",
    "k-11223344556677",
    "4eC39HqLyjWDarjtT1zdp7dc",
    "AbCdEfGhIjKlMnOpQrStUvWxYz0123",
    "tok_live_884422",
    "XXXXYYYYZZZZ",
    PROVIDER_KEY,
]
TEXT = "\n".join([
    f"key {SECRETS[0]} and {SECRETS[1]} and {SECRETS[2]}",
    f"{SECRETS[3]} {SECRETS[4]} {SECRETS[5]} {SECRETS[6]}",
    f"aws_secret_access_key = {SECRETS[7]}",
    f"Authorization: Bearer {SECRETS[8]}",
    f"jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.{SECRETS[9]}",
    "-----BEGIN OPENSSH PRIVATE KEY-----", SECRETS[10], "-----END OPENSSH PRIVATE KEY-----",
    f"postgres://app:{SECRETS[11]}@db.internal:5432/x",
    f"DB_PASSWORD={SECRETS[12]}",
    f'{{"client_secret": "{SECRETS[13]}"}}',
    f"api_key: {SECRETS[14]}",
    f"sk_live_{SECRETS[15]}",
    f"hf_{SECRETS[16]}",
    f"token={SECRETS[17]}",
    f"https://hooks.slack.com/services/T000/B000/{SECRETS[18]}",
    f"the provider key is {PROVIDER_KEY}",
])


class Holder:
    """A result object whose repr carries the secrets."""

    def __repr__(self) -> str:
        return f"Holder({TEXT!r})"


def secret_text() -> str:
    """Return the secrets as text."""
    return TEXT


def secret_dict() -> dict[str, Any]:
    """Return the secrets in a dict."""
    return {"text": TEXT, "password": SECRETS[12], "nested": [{"token": SECRETS[17]}]}


def secret_object() -> Holder:
    """Return an object."""
    return Holder()


def secret_bytes() -> bytes:
    """Return bytes."""
    return TEXT.encode("utf-8")


def secret_set() -> set[str]:
    """Return a set."""
    return {TEXT, "another item"}


def found_in(folder: Path, needles: list[str]) -> dict[str, list[str]]:
    """``grep -ral`` for each needle: which files under ``folder`` hold it."""
    hits: dict[str, list[str]] = {}
    for needle in needles:
        done = subprocess.run(["grep", "-ral", "--", needle, str(folder)],
                              capture_output=True, text=True)
        files = [line for line in done.stdout.splitlines() if line]
        if files:
            hits[needle] = files
    return hits


@pytest.fixture
def server():
    with ScriptedServer() as srv:
        yield srv


def turn_with_every_sink() -> Message:
    calls = [Call("echo", json.dumps({"value": TEXT})), Call("secret_text", "{}"),
             Call("secret_dict", "{}"), Call("secret_object", "{}"),
             Call("secret_bytes", "{}"), Call("secret_set", "{}"),
             Call("remember", json.dumps({"content": "CANARYMEMORY " + TEXT[:1500]})),
             Call("schedule", json.dumps({"prompt": "CANARYTRIGGER " + TEXT, "type": "recurring",
                                          "interval": 3600})),
             Call("bash", json.dumps({"cmd": "printf '%s\\n' " + " ".join(
                 f"'{line}'" for line in TEXT.replace("'", "").splitlines())}))]
    return Message(calls=calls, pieces=2)


@pytest.mark.timeout(240)
async def test_no_secret_reaches_the_workspace(server, tmp_path, monkeypatch):
    monkeypatch.setenv("MY_PROVIDER_API_KEY", PROVIDER_KEY)
    server.script(turn_with_every_sink(), Message(text="CANARYREPLY here it is:\n" + TEXT,
                                                  pieces=7))
    agent = Agent(model="openai/test-model", workspace=tmp_path / "ws",
                  tools=[Tool(f) for f in (secret_text, secret_dict, secret_object,
                                           secret_bytes, secret_set)],
                  settings=Settings(api_base=server.base_url, api_key="sk-x",
                                    headless_approval="allow"))
    result = await agent.arun("CANARYPROMPT please look at this:\n" + TEXT)
    assert result.ok, result.error
    failed = [(c.tool_name, c.error) for c in result.tool_calls if not c.success]
    assert not failed
    ran = next(c for c in result.tool_calls if c.tool_name == "bash").result
    assert ran["exit_code"] == 0 and SECRETS[12] in ran["stdout"]  # the command saw them
    assert agent.services.history_writer.flush(30)
    # History reaches LanceDB when it is read: read it, so the table is searched too.
    assert agent.services.memory.history(agent_id=agent.agent_id, count=2)
    from agent_kernel.triggers import scheduler_for

    await scheduler_for(agent).close()
    assert found_in(tmp_path / "ws", SECRETS) == {}
    # The search does see what each sink wrote: the canaries are there.
    canaries = found_in(tmp_path / "ws", ["CANARYPROMPT", "CANARYREPLY", "CANARYMEMORY",
                                          "CANARYTRIGGER"])
    assert any("lancedb" in f for f in canaries.get("CANARYPROMPT", [])), canaries
    assert any(f.endswith("history.jsonl") for f in canaries.get("CANARYPROMPT", [])), canaries
    assert any("lancedb" in f for f in canaries.get("CANARYREPLY", [])), canaries
    assert any(f.endswith(".md") for f in canaries.get("CANARYMEMORY", [])), canaries
    assert any("triggers" in f for f in canaries.get("CANARYTRIGGER", [])), canaries


async def test_a_pending_question_is_redacted_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_PROVIDER_API_KEY", PROVIDER_KEY)
    channel = QuestionChannel(EventBus(), Workspace(tmp_path))
    asked = asyncio.ensure_future(channel.ask(run_id="r", question="Use " + TEXT + "?",
                                              options=["yes", SECRETS[0]], timeout=30,
                                              interactive=True))
    for _ in range(100):
        await asyncio.sleep(0.01)
        if (tmp_path / PENDING_FILE).exists():
            break
    text = (tmp_path / PENDING_FILE).read_text(encoding="utf-8")
    assert "Use " in text
    assert not [s for s in SECRETS if s in text]
    question = next(iter(channel.pending))
    channel.answer(question, "yes")
    assert (await asyncio.wait_for(asked, 5))["answer"] == "yes"


@pytest.mark.kernel
@pytest.mark.timeout(300)
def test_no_secret_reaches_the_saved_notebook(server, tmp_path, run_notebook):
    import nbformat

    prompt = "CANARYPROMPT " + TEXT.replace("\n", " ").replace("{", "(").replace("}", ")")
    cells = [
        f"get_ipython().config.AgentMagics.api_base = {server.base_url!r}\n"
        "%load_ext agent_kernel",
        "import os\nfrom agent_kernel import tool\n\n"
        "@tool\ndef leak_env() -> str:\n    \"\"\"Read the provider key.\"\"\"\n"
        "    return 'key: ' + os.environ['OPENAI_API_KEY']\n\n"
        "class Holder:\n    def __repr__(self):\n"
        f"        return {TEXT!r}\n\n"
        "@tool\ndef secret_object() -> object:\n    \"\"\"An object.\"\"\"\n    return Holder()",
        "%agent_config --model openai/test-model",
        f"%%agent --wait\n{prompt}",
        f"%agent --wait {prompt}",
    ]
    env = {"OPENAI_API_KEY": PROVIDER_KEY, "AGENT_KERNEL_WORKSPACE": str(tmp_path / "ws")}
    server_script = [Message(calls=[Call("echo", json.dumps({"value": TEXT})),
                                    Call("leak_env", "{}"), Call("secret_object", "{}")]),
                     Message(text="CANARYREPLY done:\n" + TEXT, pieces=9),
                     Message(text="CANARYREPLY again " + TEXT, pieces=4)]
    server.script(*server_script)
    nb = run_notebook(cells, timeout=120, cwd=tmp_path, env=env)
    for cell in nb.cells:  # the cells' own text is the person's; their outputs are ours
        cell.source = ""
    saved = tmp_path / "saved.ipynb"
    nbformat.write(nb, str(saved))
    text = saved.read_text(encoding="utf-8")
    assert "CANARYREPLY" in text and "CANARYPROMPT" in text
    assert len(server.requests) == 3
    leaks = [s for s in SECRETS if s in text or json.dumps(s)[1:-1] in text]
    assert leaks == []
    assert found_in(tmp_path / "ws", SECRETS) == {}
    assert os.environ.get("OPENAI_API_KEY") != PROVIDER_KEY
