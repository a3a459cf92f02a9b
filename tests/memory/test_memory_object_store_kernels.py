"""Two real kernels share memory on a local S3-compatible server: what one remembers, the
other recalls. Each kernel has its own workspace (ledger, mirrors, history journal) and
both are pointed at the same ``s3://`` URI with ``%agent_config --memory``; the model is
the scripted OpenAI-compatible server on 127.0.0.1, so the tool calls are real ones.
The saved notebooks and both workspaces are then searched for the secret key the
kernels had in their environment: it is in none of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from s3_server import FAKE_ENV, S3Server, serving
from scripted_server import Call, Message, ScriptedServer

MODEL = "openai/test-model"
KEY = {"OPENAI_API_KEY": "sk-test-0123456789abcdef"}
FACT = "The person's cat is called Miso and eats only salmon."
URI = "s3://memory/kernels"
TYPED = "hunter2-typed-in-a-cell"


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with serving("memory") as server:
        yield server


def _setup(url: str, ws: Path, s3: S3Server) -> str:
    options = " ".join(f"--memory-option {k}={v}" for k, v in s3.options.items())
    return (f"%load_ext agent_kernel\nimport agent_kernel.notebook.magics as m\n"
            f"m.current().api_base = {url!r}\n"
            f"%agent_config --model {MODEL} --workspace {ws} --memory {URI} {options}")


@pytest.mark.kernel
@pytest.mark.cluster
@pytest.mark.timeout(300)
def test_what_one_kernel_remembers_the_other_recalls(
        run_notebook: Any, output_text: Any, tmp_path: Path, s3: S3Server) -> None:
    env = {**KEY, **FAKE_ENV}
    with ScriptedServer() as model:
        model.script(Message(calls=[Call("remember", json.dumps({"content": FACT,
                                                                 "longTerm": True}))]),
                     Message(text="Remembered."),
                     Message(calls=[Call("recall", json.dumps({"query": "what is the cat "
                                                                        "called"}))]),
                     Message(text="Miso."))
        first = run_notebook([_setup(model.base_url, tmp_path / "ws-a", s3),
                              "%agent --wait Please remember my cat's name: Miso."],
                             cwd=tmp_path, timeout=180, env=env)
        second = run_notebook([_setup(model.base_url, tmp_path / "ws-b", s3),
                               "%agent --wait What is my cat called?",
                               "%agent_memory status",
                               f"%agent_config --memory-option aws_secret_access_key={TYPED}",
                               f"%agent_config --memory s3://AKIAX:{TYPED}@memory/other"],
                              cwd=tmp_path, timeout=180, env=env)
        recalled = json.loads(model.tool_messages(3)[0]["content"])
    assert f"memory: {URI} (allow_http=true, endpoint={s3.endpoint}" in output_text(
        first.cells[0])
    assert [m["content"] for m in recalled["memories"]] == [FACT]
    assert "Miso." in output_text(second.cells[1])
    assert f"Memory in {URI}" in output_text(second.cells[2])
    # A credential typed into %agent_config is refused, and the answer does not repeat it.
    refused = [output_text(second.cells[i]) for i in (3, 4)]
    assert "'aws_secret_access_key' is refused" in refused[0]
    assert "may not carry user or password" in refused[1]
    assert all(TYPED not in text for text in refused)
    assert any(k.startswith("kernels/memories.lance/") for k in s3.keys("memory"))
    # Each kernel mirrors what it wrote in its own workspace; the table is on the store.
    assert FACT in (tmp_path / "ws-a" / "memory.md").read_text()
    assert not (tmp_path / "ws-a" / "lancedb").exists()
    # The secret key the kernels held reaches no saved notebook, ledger or other file.
    secret = FAKE_ENV["AWS_SECRET_ACCESS_KEY"]
    assert secret not in nbformat.writes(first) + nbformat.writes(second)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name.endswith(".jsonl") for p in files)  # the ledgers are among them
    assert not [p for p in files if secret.encode() in p.read_bytes()]
