"""The extension's channel: who is connected, and answers that come back over the probe comm."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from agent_kernel.notebook.frontend import PROBE_TARGET, FrontendProbe

RUN_MIME = "application/vnd.agent-kernel.run.v1+json"


class FakeComm:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send(self, data: dict[str, Any]) -> None:
        self.sent.append(data)


class Run:
    def __init__(self, run_id: str, waiting: set[str]) -> None:
        self.run_id = run_id
        self.waiting = waiting
        self.answers: list[tuple[str, str]] = []
        self.stopped = False

    def answer(self, question_id: str, text: str) -> bool:
        if question_id not in self.waiting:
            return False
        self.waiting.discard(question_id)
        self.answers.append((question_id, text))
        return True

    def request_stop(self) -> bool:
        if self.stopped:
            return False
        self.stopped = True
        return True

    def bundle(self) -> dict[str, Any]:
        status = "stopped" if self.stopped else "running"
        return {RUN_MIME: {"run_id": self.run_id, "status": status}, "text/plain": status}


def _probe_with(run: Run | None = None) -> tuple[FrontendProbe, FakeComm]:
    probe, comm = FrontendProbe(), FakeComm()
    probe._comm = comm
    if run is not None:
        probe.add_run(run)
    return probe, comm


def _msg(data: Any) -> dict[str, Any]:
    return {"content": {"comm_id": "c", "data": data}}


def test_hello_means_the_extension_draws_the_controls() -> None:
    probe, comm = _probe_with()
    assert not probe.answered.is_set() and not probe.extension
    probe._on_msg(_msg({"action": "hello", "protocol": 1}))
    assert probe.answered.is_set() and probe.extension
    assert comm.sent == []


def test_an_answer_reaches_its_run_and_the_reply_names_the_request() -> None:
    run = Run("run_1", {"q1"})
    probe, comm = _probe_with(run)
    probe._on_msg(_msg({"action": "answer", "run_id": "run_1", "question_id": "q1",
                        "answer": "Approve", "request_id": "r1"}))
    assert run.answers == [("q1", "Approve")]
    assert comm.sent == [{"request_id": "r1", "ok": True, "message": ""}]
    probe._on_msg(_msg({"action": "answer", "run_id": "run_1", "question_id": "q1",
                        "answer": "Deny", "request_id": "r2"}))
    assert comm.sent[-1] == {"request_id": "r2", "ok": False,
                             "message": "This question is no longer waiting."}
    assert run.answers == [("q1", "Approve")]


@pytest.mark.parametrize(("data", "said"), [
    ({"action": "answer", "run_id": "run_gone", "question_id": "q1", "answer": "x"},
     "This run is no longer live in the kernel."),
    ({"action": "answer", "run_id": "run_1", "question_id": 7, "answer": "x"},
     "an answer needs question_id and answer as text"),
    ({"action": "answer", "run_id": "run_1", "question_id": "q1", "answer": None},
     "an answer needs question_id and answer as text"),
    ({"action": "answer", "run_id": "run_1", "question_id": "q1", "answer": "x" * 20001},
     "That answer is too long (more than 20000 characters)."),
    ({"action": "rm -rf", "run_id": "run_1"}, "unknown action 'rm -rf'"),
    ({"action": "answer", "run_id": ["run_1"], "question_id": "q1", "answer": "x"},
     "This run is no longer live in the kernel."),
])
def test_bad_messages_are_refused_in_words(data: dict[str, Any], said: str) -> None:
    run = Run("run_1", {"q1"})
    probe, comm = _probe_with(run)
    probe._on_msg(_msg({**data, "request_id": "r9"}))
    assert comm.sent == [{"request_id": "r9", "ok": False, "message": said}]
    assert run.answers == [] and not run.stopped


@pytest.mark.parametrize("data", [None, "hello", ["hello"], 42, {}])
def test_messages_that_are_not_requests_are_ignored(data: Any) -> None:
    run = Run("run_1", {"q1"})
    probe, comm = _probe_with(run)
    probe._on_msg(_msg(data))
    probe._on_msg({"content": None})
    assert comm.sent == []
    assert not probe.extension and run.answers == []


@pytest.mark.parametrize(("data", "said"), [
    ({"op": "rm", "id": "task_1"}, "a team action needs op (cancel or stop) and id"),
    ({"op": "cancel", "id": 7}, "a team action needs op (cancel or stop) and id"),
    ({"op": "cancel"}, "a team action needs op (cancel or stop) and id"),
])
def test_a_registered_action_reads_its_request_before_its_handler_runs(
        data: dict[str, Any], said: str) -> None:
    from agent_kernel.notebook.requests import TeamRequest

    probe, comm = _probe_with()
    seen: list[TeamRequest] = []

    def handler(request: TeamRequest) -> tuple[bool, str]:
        seen.append(request)
        return True, ""

    probe.on_action("team", TeamRequest, handler)
    probe._on_msg(_msg({"action": "team", **data, "request_id": "t1"}))
    assert comm.sent == [{"request_id": "t1", "ok": False, "message": said}]
    assert seen == []
    probe._on_msg(_msg({"action": "team", "op": "stop", "id": "task_1", "request_id": "t2"}))
    assert comm.sent[-1] == {"request_id": "t2", "ok": True, "message": ""}
    assert [(r.op, r.id) for r in seen] == [("stop", "task_1")]


def test_stop_once_then_the_run_is_gone() -> None:
    run = Run("run_1", set())
    probe, comm = _probe_with(run)
    probe._on_msg(_msg({"action": "stop", "run_id": "run_1", "request_id": "s1"}))
    probe._on_msg(_msg({"action": "stop", "run_id": "run_1", "request_id": "s2"}))
    probe.drop_run("run_1")
    probe._on_msg(_msg({"action": "stop", "run_id": "run_1", "request_id": "s3"}))
    assert run.stopped
    assert [m["ok"] for m in comm.sent] == [True, False, False]
    assert comm.sent[1]["message"] == "The run has already ended."
    assert comm.sent[2]["message"] == "This run is no longer live in the kernel."


def test_a_reloaded_page_gets_the_live_run_and_then_its_final_form() -> None:
    """``state`` answers a page that lost its updates: while the run lives, and once it
    ended (its final form); a run the kernel never had is refused in words."""
    run = Run("run_1", {"q1"})
    probe, comm = _probe_with(run)
    probe._on_msg(_msg({"action": "state", "run_id": "run_1", "request_id": "a1"}))
    assert comm.sent[-1]["ok"] and comm.sent[-1]["state"]["status"] == "running"
    assert comm.sent[-1]["bundle"]["text/plain"] == "running"
    run.request_stop()
    probe.drop_run("run_1")
    probe._on_msg(_msg({"action": "state", "run_id": "run_1", "request_id": "a2"}))
    assert comm.sent[-1]["ok"] and comm.sent[-1]["state"]["status"] == "stopped"
    probe._on_msg(_msg({"action": "answer", "run_id": "run_1", "question_id": "q1",
                        "answer": "Approve", "request_id": "a3"}))
    assert not comm.sent[-1]["ok"] and run.answers == []  # ended: nothing is answered
    for request in ({"run_id": "run_9"}, {"run_id": 9}, {}):
        probe._on_msg(_msg({"action": "state", **request, "request_id": "a4"}))
        assert comm.sent[-1] == {"request_id": "a4", "ok": False,
                                 "message": "This run is no longer live in the kernel."}


# -- a real kernel, played the way the extension talks to it ---------------------------

def _wait_for(client: Any, want: Any, timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msg = client.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
        if want(msg):
            return dict(msg)
    raise AssertionError("the kernel never sent the message waited for")


def _run_state(msg: dict[str, Any]) -> dict[str, Any] | None:
    if msg["msg_type"] not in ("display_data", "update_display_data"):
        return None
    state = msg["content"].get("data", {}).get(RUN_MIME)
    return state if isinstance(state, dict) else None


@pytest.mark.kernel
def test_the_extension_answers_an_approval_in_a_real_kernel(
        isolated_env: dict[str, str]) -> None:
    """Hello on the probe comm, then Approve sent on it: the run goes on, no widget is made."""
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3")
    seen: list[dict[str, Any]] = []

    def send(comm_id: str, data: dict[str, Any]) -> None:
        client.shell_channel.send(client.session.msg("comm_msg", {"comm_id": comm_id,
                                                                   "data": data}))

    def record(msg: dict[str, Any]) -> dict[str, Any]:
        seen.append(msg)
        return msg

    try:
        client.execute("%load_ext agent_kernel")
        opened = _wait_for(client, lambda m: record(m)["msg_type"] == "comm_open"
                           and m["content"]["target_name"] == PROBE_TARGET)
        comm_id = opened["content"]["comm_id"]
        send(comm_id, {"action": "hello", "protocol": 1})
        client.execute("%agent write file notes.txt with hi from the extension")
        waiting = _wait_for(client, lambda m: bool(
            (s := _run_state(record(m))) and s.get("controls") == "extension"
            and any(e.get("kind") == "tool" and e.get("approval")
                    and e["approval"].get("source") is None for e in s["entries"])))
        state = _run_state(waiting)
        assert state is not None
        card = next(e for e in state["entries"] if e.get("kind") == "tool")
        assert isinstance(card["approval"]["seconds_left"], int)
        assert 0 < card["approval"]["seconds_left"] <= card["approval"]["timeout"]
        send(comm_id, {"action": "answer", "run_id": "run_not_here", "question_id": "q",
                       "answer": "Approve", "request_id": "r0"})
        send(comm_id, {"action": "answer", "run_id": state["run_id"],
                       "question_id": card["approval"]["question_id"], "answer": "Approve",
                       "request_id": "r1"})
        replies: dict[str, Any] = {}

        def replied(msg: dict[str, Any]) -> bool:
            record(msg)
            if msg["msg_type"] == "comm_msg" and msg["content"]["comm_id"] == comm_id:
                data = msg["content"]["data"]
                replies[data["request_id"]] = data
            return len(replies) == 2

        _wait_for(client, replied)
        final = _wait_for(client, lambda m: bool(
            (s := _run_state(record(m))) and s["status"] != "running"))
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert replies["r0"] == {"request_id": "r0", "ok": False,
                             "message": "This run is no longer live in the kernel."}
    assert replies["r1"] == {"request_id": "r1", "ok": True, "message": ""}
    end = _run_state(final)
    assert end is not None and end["status"] == "done"
    assert "controls" not in end  # the saved form has nothing live left in it
    tool = next(e for e in end["entries"] if e.get("kind") == "tool")
    assert tool["state"] == "ok" and tool["approval"]["answer"] == "Approve"
    assert "seconds_left" not in tool["approval"]
    workspace = Path(isolated_env["AGENT_KERNEL_WORKSPACE"])
    assert (workspace / "files" / "notes.txt").read_text() == "hi from the extension"
    widgets = [m for m in seen if m["msg_type"] == "comm_open"
               and m["content"]["target_name"] != PROBE_TARGET]
    assert widgets == []  # no ipywidgets model: nothing in the file can need one
    assert not any("application/vnd.jupyter.widget-view+json" in m["content"].get("data", {})
                   for m in seen if m["msg_type"] in ("display_data", "update_display_data"))


def test_a_queued_run_says_it_waits_then_starts() -> None:
    from agent_kernel.core.events import RunStarted
    from agent_kernel.views.mime import Transcript
    from agent_kernel.views.run_html import html_of

    t = Transcript(run_id="run_2")
    t.queued = True
    assert t.state()["queued"] is True
    assert "waiting for the run above to finish" in html_of(t.state())
    t.feed(RunStarted("run_2", prompt="go", model="m", agent_id="a"))
    assert "queued" not in t.state()
    assert "waiting for the run above" not in html_of(t.state())


def test_agent_stop_stops_every_live_run_of_the_session(capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    from types import SimpleNamespace

    from agent_kernel.notebook.magics import AgentMagics

    class View:
        def __init__(self, done: bool) -> None:
            self.done, self.stopped = done, False

        def request_stop(self) -> bool:
            self.stopped = True
            return True

    views = [View(True), View(False), View(False)]
    AgentMagics.agent_stop(SimpleNamespace(views=views), "")  # type: ignore[arg-type]
    assert [v.stopped for v in views] == [False, True, True]
    assert capsys.readouterr().out.strip() == "Stopping 2 runs."
    AgentMagics.agent_stop(SimpleNamespace(views=[View(True)]), "")  # type: ignore[arg-type]
    assert capsys.readouterr().out.strip() == "No run of this session is live."
