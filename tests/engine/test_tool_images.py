"""Images a tool makes (a figure of run_python, inspect_variable's) reach a model that reads
images, in one message after the tool results, and no model that does not.

Over real HTTP: litellm sends the image parts to a scripted OpenAI-compatible server on
127.0.0.1 exactly as a provider would get them. In-process: the demo never gets one,
compaction never reads base64, and the estimate counts an image as an image.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from scripted_server import Call, Message, ScriptedServer

from agent_kernel import Agent, Settings, Tool
from agent_kernel.engine.context import transcript
from agent_kernel.engine.models import resolve
from agent_kernel.engine.models.base import IMAGE_TOKENS, ChatMessage, estimate_tokens
from agent_kernel.engine.models.llm import LitellmModel
from agent_kernel.tools.variables import figure_for_model, figure_images

MODEL = "openai/test-model"
# The 1×1 PNG every browser draws: real bytes, not a placeholder string.
PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63000100000500010d0a2db40000000049454e44ae426082")
).decode("ascii")


def draw(title: str) -> dict[str, Any]:
    """A tool whose result holds a PNG, as run_python's outputs do."""
    return {"ok": True, "outputs": [{"mime": "image/png", "data": PNG, "width": 1,
                                     "height": 1}], "title": title}


def pngs(result: object) -> list[str]:
    outputs = result.get("outputs", []) if isinstance(result, dict) else []
    return [o["data"] for o in outputs if o.get("mime") == "image/png"]


def words(result: object) -> object:
    if not isinstance(result, dict):
        return result
    return {**result, "outputs": ["[image: 1×1 PNG]"]}


@pytest.fixture
def server():
    with ScriptedServer() as srv:
        yield srv
        assert not srv.hook_errors, srv.hook_errors


def agent_on(server: ScriptedServer, workspace: Path, **settings: Any) -> Agent:
    return Agent(model=MODEL, workspace=workspace,
                 tools=[Tool(draw, images=pngs, for_model=words)],
                 settings=Settings(api_base=server.base_url, api_key="sk-test-0123456789abcdef",
                                   retry_base_delay=0.01, **settings))


async def test_a_model_that_reads_images_is_shown_the_figure(server, tmp_path):
    agent = agent_on(server, tmp_path, model_images=True)
    server.script(Message(calls=[Call("draw", json.dumps({"title": "sales"}), id="call_1")]),
                  Message(text="The bars rise every month."))
    result = await agent.arun("plot it and tell me what you see")
    assert result.status == "ok", result.error
    sent = server.requests[1]["messages"]
    tool_at = next(i for i, m in enumerate(sent) if m["role"] == "tool")
    assert PNG not in json.dumps(sent[tool_at])  # the tool message holds words only
    assert "[image: 1×1 PNG]" in sent[tool_at]["content"]
    shown = sent[tool_at + 1]
    assert shown["role"] == "user" and isinstance(shown["content"], list)
    kinds = [part["type"] for part in shown["content"]]
    assert kinds == ["text", "text", "image_url"]
    assert "not words of the person" in shown["content"][0]["text"]
    assert shown["content"][2]["image_url"]["url"] == f"data:image/png;base64,{PNG}"
    assert result.tool_calls[0].result["outputs"][0]["data"] == PNG  # the views keep it


async def test_a_model_that_does_not_is_told_in_words_only(server, tmp_path):
    agent = agent_on(server, tmp_path, model_images=False)
    server.script(Message(calls=[Call("draw", json.dumps({"title": "sales"}), id="call_1")]),
                  Message(text="done"))
    assert (await agent.arun("plot it")).status == "ok"
    sent = server.requests[1]["messages"]
    assert PNG not in json.dumps(sent)
    assert sent[-1]["role"] == "tool" and "[image: 1×1 PNG]" in sent[-1]["content"]


def test_litellm_says_which_models_read_images() -> None:
    assert LitellmModel("openai/gpt-4o").accepts_images(Settings()) is True
    assert LitellmModel("openai/test-model").accepts_images(Settings()) is False
    assert LitellmModel("openai/test-model").accepts_images(Settings(model_images=True))


def test_the_demo_never_gets_an_image() -> None:
    """It reads the last user message as the prompt: an images message must never be it."""
    assert resolve("demo").accepts_images(Settings(model_images=True)) is False


def test_compaction_and_the_estimate_never_read_base64() -> None:
    messages: list[ChatMessage] = [
        {"role": "user", "content": "plot it"},
        {"role": "user", "content": [{"type": "text", "text": "The images:"},
                                     {"type": "image_url",
                                      "image_url": {"url": f"data:image/png;base64,{PNG * 50}"}}]},
    ]
    said = transcript(messages, 10_000)
    assert "[image]" in said and PNG not in said
    text_only = estimate_tokens([messages[0], {"role": "user", "content": "The images:"}])
    assert estimate_tokens(messages) == text_only + IMAGE_TOKENS + 2  # "\n[image]": 2 tokens


def test_inspect_variable_hands_a_figure_over_as_an_image() -> None:
    result = {"ok": True, "name": "fig", "image": {"mime_type": "image/png", "width": 400,
                                                   "height": 300,
                                                   "data_url": f"data:image/png;base64,{PNG}"}}
    assert figure_images(result) == [PNG]
    read = figure_for_model(result)
    assert PNG not in json.dumps(read)
    assert read["image"]["image"] == "[image: 400×300 PNG of the figure]"
    assert figure_images({"ok": True, "image": {"data_url": "data:image/svg+xml;base64,AAAA"}}
                         ) == []
