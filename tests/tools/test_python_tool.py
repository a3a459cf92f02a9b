"""run_python through the loop (in-process: a scripted model, a real ``InteractiveShell``).

The approval rules: always asked, with the code's digest on record; "Always allow" is a
standing permission, except for a trigger's run, a team member or nobody to click; the
headless policy never approves it. What the model reads is bounded, images as words.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from scripted_model import ScriptedModel
from scripted_server import Call, Message

from agent_kernel import Agent
from agent_kernel.core.events import Question
from agent_kernel.engine.approvals import ALWAYS, APPROVE, DENY
from agent_kernel.notebook.python import KernelPython
from agent_kernel.tools.python import TEXT_LIMIT, code_digest, cut


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    made = InteractiveShell.instance()
    made.reset()
    yield made
    made.reset()


def _agent(tmp_path: Path, shell: InteractiveShell | None, *codes: str,
           **settings: Any) -> tuple[Agent, ScriptedModel]:
    script = [Message(calls=[Call("run_python", json.dumps({"code": code}))])
              for code in codes]
    model = ScriptedModel(*script, Message(text="done"))
    agent = Agent(model=model, workspace=tmp_path / "ws")
    for key, value in settings.items():
        setattr(agent.settings, key, value)
    if shell is not None:
        agent.services.python = KernelPython(shell)
    return agent, model


def _answer(agent: Agent, answer: str) -> list[Question]:
    seen: list[Question] = []

    def on_event(event: object) -> None:
        if isinstance(event, Question):
            seen.append(event)
            threading.Timer(0.02, agent.questions.answer,
                            args=(event.question_id, answer)).start()

    agent.questions.attach_answerer()
    agent.bus.subscribe(on_event)
    return seen


def _approvals(agent: Agent) -> list[dict[str, Any]]:
    return [r for r in agent.ledger.records() if r.get("kind") == "approval"]


async def test_approved_code_runs_with_its_digest_on_record(tmp_path: Path,
                                                            shell: InteractiveShell) -> None:
    code = "total = sum(range(5))\nprint('sum', total)\ntotal * 2"
    agent, model = _agent(tmp_path, shell, code)
    asked = _answer(agent, APPROVE)
    result = await agent.arun("compute")
    assert len(asked) == 1 and asked[0].details is not None
    assert asked[0].details["arguments"] == {"code": code, "timeout_seconds": 30}
    call = result.tool_calls[0]
    assert call.success and call.result["status"] == "done"
    assert call.result["stdout"] == "sum 10\n" and call.result["value"] == "20"
    assert call.result["names"]["created"] == ["total"] and shell.user_ns["total"] == 10
    approval = _approvals(agent)[-1]
    assert approval["decision"] == "approved"
    assert approval["digest"] == hashlib.sha256(code.encode()).hexdigest() == code_digest(code)
    assert approval["mac"]
    told = json.loads(model.tool_messages(1)[0]["content"])
    assert told["value"] == "20" and told["ok"] is True


async def test_denied_code_does_not_run(tmp_path: Path, shell: InteractiveShell) -> None:
    agent, _ = _agent(tmp_path, shell, "ran = True")
    _answer(agent, DENY)
    result = await agent.arun("do it")
    assert not result.tool_calls[0].success and "ran" not in shell.user_ns
    assert _approvals(agent)[-1]["decision"] == "denied"
    assert _approvals(agent)[-1]["digest"] == code_digest("ran = True")


async def test_headless_allow_policy_never_runs_it(tmp_path: Path,
                                                   shell: InteractiveShell) -> None:
    marker = tmp_path / "made-by-code"
    code = f"open({str(marker)!r}, 'w').write('x')"
    agent, model = _agent(tmp_path, shell, code, headless_approval="allow")
    result = await agent.arun("do it")  # nobody attached: nobody can click
    call = result.tool_calls[0]
    assert not call.success and "never by a policy" in (call.error or "")
    assert not marker.exists()
    approval = _approvals(agent)[-1]
    assert approval["decision"] == "denied" and approval["source"] == "policy"
    assert "Error:" in model.tool_messages(1)[0]["content"]


async def test_always_allow_is_standing_but_not_for_a_trigger_or_a_member(
        tmp_path: Path, shell: InteractiveShell) -> None:
    agent, model = _agent(tmp_path, shell, "a = 1", "b = 2")
    asked = _answer(agent, ALWAYS)
    await agent.arun("first")
    await agent.arun("second")
    assert len(asked) == 1  # the second ran under the standing permission
    assert _approvals(agent)[-1]["answer"] == ALWAYS and _approvals(agent)[-1]["source"] == (
        "always")
    assert shell.user_ns["b"] == 2
    model.script(Message(calls=[Call("run_python", json.dumps({"code": "c = 3"}))]),
                 Message(text="done"))
    await agent.arun("from a trigger", trigger={"trigger_id": "t1", "kind": "once"})
    assert len(asked) == 2  # a trigger's run is asked again
    agent.role = "worker"
    model.script(Message(calls=[Call("run_python", json.dumps({"code": "d = 4"}))]),
                 Message(text="done"))
    await agent.arun("as a team member")
    assert len(asked) == 3 and shell.user_ns["d"] == 4


async def test_standing_permission_does_not_reach_a_run_with_nobody_to_click(
        tmp_path: Path, shell: InteractiveShell) -> None:
    agent, _ = _agent(tmp_path, shell, "e = 5", headless_approval="allow")
    agent.approvals.grant("run_python", "earlier_run")
    result = await agent.arun("headless")
    assert not result.tool_calls[0].success and "e" not in shell.user_ns


async def test_not_in_a_kernel_says_why(tmp_path: Path) -> None:
    agent, _ = _agent(tmp_path, None, "x = 1")
    _answer(agent, APPROVE)
    result = await agent.arun("do it")
    call = result.tool_calls[0]
    assert not call.success and "needs a Jupyter kernel" in call.result["error"]


async def test_the_model_reads_images_as_words_and_cut_text(tmp_path: Path,
                                                            shell: InteractiveShell) -> None:
    import matplotlib

    matplotlib.use("agg")
    code = ("import matplotlib.pyplot as plt\nplt.figure()\nplt.plot([1, 2])\n"
            f"print('x' * {TEXT_LIMIT * 3})")
    agent, model = _agent(tmp_path, shell, code)
    _answer(agent, APPROVE)
    result = await agent.arun("plot")
    shown = result.tool_calls[0].result
    image = next(o for o in shown["outputs"] if o["mime"] == "image/png")
    assert base64.b64decode(image["data"]).startswith(b"\x89PNG")  # the view draws it
    told = model.tool_messages(1)[0]["content"]
    assert "[image: 640×480 PNG" in told and image["data"][:40] not in told
    assert "characters left out" in told and len(told) < TEXT_LIMIT + 2000


async def test_a_model_that_reads_images_sees_the_figure(tmp_path: Path,
                                                        shell: InteractiveShell) -> None:
    """The tool message says it in words; the next message shows the PNG itself."""
    import matplotlib

    matplotlib.use("agg")
    code = "import matplotlib.pyplot as plt\nplt.figure()\nplt.plot([1, 2])"
    agent, model = _agent(tmp_path, shell, code, model_images=True)
    _answer(agent, APPROVE)
    result = await agent.arun("plot")
    image = next(o for o in result.tool_calls[0].result["outputs"] if o["mime"] == "image/png")
    sent = model.requests[1]["messages"]
    assert sent[-2]["role"] == "tool" and image["data"] not in sent[-2]["content"]
    parts = sent[-1]["content"]
    assert sent[-1]["role"] == "user" and parts[-1]["type"] == "image_url"
    assert parts[-1]["image_url"]["url"] == f"data:image/png;base64,{image['data']}"


async def test_a_raising_call_is_a_failed_call_in_words(tmp_path: Path,
                                                       shell: InteractiveShell) -> None:
    agent, model = _agent(tmp_path, shell, "int('nope')")
    _answer(agent, APPROVE)
    result = await agent.arun("do it")
    call = result.tool_calls[0]
    assert not call.success and call.result["status"] == "error"
    assert call.summary == "ValueError: invalid literal for int() with base 10: 'nope'"
    told = json.loads(model.tool_messages(1)[0]["content"])
    assert told["error"]["type"] == "ValueError" and "<run_python>" in told["error"]["traceback"]


def test_cut_keeps_both_ends() -> None:
    text = "a" * 50_000 + "END"
    kept = cut(text, 1000)
    assert kept.startswith("a" * 100) and kept.endswith("END") and "left out" in kept
    assert cut("short", 1000) == "short"


async def test_stop_reaches_code_that_holds_the_loop(tmp_path: Path,
                                                     shell: InteractiveShell) -> None:
    """Stop pressed while the code runs (the click arrives on another thread, as on a
    kernel subshell): the code ends at once and the run ends as stopped."""
    import time

    agent, _ = _agent(tmp_path, shell, "import time\ntime.sleep(30)\nafter = 1")
    asked = _answer(agent, APPROVE)

    def press_stop() -> None:
        while not asked:
            time.sleep(0.02)
        time.sleep(0.5)  # approved, and the code sleeps now
        agent.stop()

    threading.Thread(target=press_stop, daemon=True).start()
    started = time.monotonic()
    result = await agent.arun("sleep")
    assert result.status == "cancelled" and time.monotonic() - started < 10
    assert "after" not in shell.user_ns
    assert any(r.get("kind") == "run_cancelled" for r in agent.ledger.records())
