"""``%agent_team``: the team board from a real team on the scripted server, and in a kernel.

The team is real (supervisor, queues, tools, ledger) and its agents talk to
litellm's real HTTP path on a local :class:`RoleServer`: a Planner makes a
role and delegates three jobs with priorities and a conditional watch, the
first job's Worker puts an artifact and then stays inside a model call, so
the board is read while one task runs and two wait. The controls are driven
the way our extension drives them, through the probe's ``team`` action.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from scripted_server import Call, Message
from test_team import RoleModel, delegate, first_prompt, last, make_team, until

from agent_kernel.team.roles import PLANNER, TELLER

BOARD_MIME = "application/vnd.agent-kernel.board.v1+json"
RAW_ID = re.compile(r"\b(?:task|trg|run|rec)_\w+|\b(?:worker|planner|helper)-\d+|team-desk")
HINT = re.compile(r" — to (stop|cancel) it: %agent_team (stop|cancel) \S+$")


def assert_words_only(text: str) -> None:
    """Each line a person reads names the work and the role in words: a raw task, trigger or
    agent id shows only at the end of a line, in the magic a person types to act on it."""
    for line in text.splitlines():
        words, hint = HINT.split(line)[0], HINT.search(line)
        assert not RAW_ID.search(words), line
        if hint is not None:
            assert hint.group(1) == hint.group(2) and RAW_ID.fullmatch(line.rsplit(" ", 1)[1])


class Handle:
    """Stands in for a display handle: keeps every bundle it was updated with."""

    def __init__(self) -> None:
        self.bundles: list[Any] = []

    def update(self, bundle: Any, raw: bool = False) -> None:
        self.bundles.append(bundle)


def script(release: threading.Event) -> Any:
    def respond(role: str, body: dict[str, Any]) -> Message:
        said = last(body)
        if role == TELLER:
            if said["role"] == "user" and not said["content"].startswith("The work"):
                return Message(calls=[delegate("three jobs <and> a watch")])
            return Message(text="all ended")
        if role == PLANNER:
            if said["role"] == "user":
                return Message(calls=[
                    Call("create_role", json.dumps({"name": "Fact checker",
                                                    "rolePrompt": "You check facts.",
                                                    "tools": ["echo"]})),
                    delegate("job A", priority=9), delegate("job B", priority=5),
                    delegate("job C", priority=1),
                    delegate("when flag.txt appears, report", type="conditional", priority=4,
                             condition={"kind": "file", "path": "flag.txt"})])
            return Message(text="planned")
        if first_prompt(body) == "job A":
            if said["role"] == "user":
                return Message(calls=[Call("put_artifact", json.dumps(
                    {"type": "document", "content": "notes on A"}))])
            release.wait(30)
        return Message(text=f"{first_prompt(body)} done")

    return respond


async def test_board_shows_the_team_and_its_controls_cancel_and_stop(tmp_path: Path) -> None:
    from agent_kernel.notebook.board import TeamBoard
    from agent_kernel.notebook.frontend import FrontendProbe

    release = threading.Event()
    with RoleModel(script(release)) as server:
        team = make_team(server, tmp_path / "ws", max_workers=1)
        running = asyncio.create_task(team.arun("go"))
        sup = team.supervisor
        artifacts = tmp_path / "ws" / "team" / "artifacts"
        job_a = await until(lambda: next((t for t in sup.running.values()
                                          if t.prompt == "job A"), None))
        await until(lambda: artifacts.is_dir() and any(artifacts.glob("*.json")))
        await until(lambda: team.triggers.active())
        queued = {t.prompt: t for t in sup.queues["worker"].waiting()}
        job_b, job_c = queued["job B"], queued["job C"]

        board = TeamBoard(team)
        probe = FrontendProbe()
        board.show(controls=True, channel=probe)  # outside a kernel: no display handle
        board.output.handle = Handle()
        assert board.controls is not None
        assert board.controls.handle is None  # no output apart: the rows are the board's

        state = board.state()
        assert [(r["prompt"], r["agent"], r["priority"]) for r in state["running"]] == [
            ("job A", job_a.agent_id, 9)]
        assert [(r["prompt"], r["priority"], r["status"]) for r in state["queues"]["worker"]] \
            == [("job B", 5, "queued"), ("job C", 1, "queued")]
        assert state["queues"]["planner"] == [] and state["queues"]["held"] == []
        agents = {r["id"]: r for r in state["agents"]}
        assert agents["teller"]["task"] == "go"
        assert agents[job_a.agent_id]["task"] == "job A"
        assert agents["team-desk"]["task"] == "holds 1 trigger(s)"
        roles = {r["name"]: r for r in state["roles"]}
        assert {"Teller", "Planner", "Worker"} <= set(roles)
        assert roles["Fact checker"]["createdBy"].startswith("planner-")
        assert not roles["Fact checker"]["builtin"] and roles["Worker"]["builtin"]
        [artifact] = state["artifacts"]
        assert artifact["type"] == "document" and artifact["createdBy"] == job_a.agent_id
        assert artifact["ref"].startswith("artifact:")
        [watch] = state["triggers"]
        assert watch["priority"] == 4 and watch["status"] == "active"

        html = board.bundle()["text/html"]
        text = board.bundle()["text/plain"]
        assert html.index("job B") < html.index("job C")
        assert f"data-task-id='{job_a.id}' data-status='running'" in html
        assert "three jobs &lt;and&gt; a watch" not in html  # the Planner's task has ended
        assert "Fact checker" in html and artifact["ref"] in html and "<script" not in html
        assert "[data-jp-theme-light='false'] .agent-kernel-team-board .ak-ok" in html
        assert text.startswith("Team: 1 running, 2 queued, 1 trigger(s)")
        assert text.index("job B · Worker (priority 5, queued, from a Planner) — to cancel it: "
                          f"%agent_team cancel {job_b.id}") < text.index("job C · Worker")
        assert "  job A · Worker (priority 9, started " in text
        assert f") — to stop it: %agent_team stop {job_a.id}" in text
        assert "Agents: go · Teller; job A · Worker; Trigger desk (holds 1 trigger(s))" in text
        assert "Fact checker (made by a Planner)" in text
        assert f"  document by a Worker: {artifact['ref']}" in text
        assert_words_only(text)

        controls = board.controls
        bundle = board.bundle()
        record = bundle[BOARD_MIME]  # the extension draws each row's button in the row
        assert record["version"] == 1 and record["controls"] == "extension"
        assert record["state"]["running"][0]["id"] == job_a.id
        rows = {r["id"]: r for r in record["rows"]}
        assert (rows[job_a.id]["op"], rows[job_b.id]["op"], rows[watch["id"]]["op"]) == (
            "stop", "cancel", "cancel")
        assert rows[job_a.id]["label"] == "Worker · running: job A"
        import jsonschema

        schema = json.loads((Path(__file__).resolve().parents[2] / "labextension" / "schema"
                             / "board.v1.json").read_text(encoding="utf-8"))
        jsonschema.Draft202012Validator(schema).validate(json.loads(json.dumps(record)))

        assert probe.handle({"action": "team", "op": "cancel", "id": "task_nope"}) == (
            False, "This row has no live controls in this kernel any more.")
        assert probe.handle({"action": "team", "op": "rm", "id": job_b.id})[0] is False
        assert probe.handle({"action": "team", "op": "cancel", "id": job_b.id}) == (True, "")
        assert job_b.status == "cancelled" and job_b.id not in sup.queues["worker"]
        assert job_b.id not in controls.rows
        assert controls.outcomes[-1].startswith(
            "Cancelled: job B (queued for a Worker, priority 5) · ")
        assert probe.handle({"action": "team", "op": "cancel", "id": watch["id"]}) == (True, "")
        assert controls.outcomes[-1].startswith(
            "Cancelled: when flag.txt appears, report (a trigger, when file ")
        assert not team.triggers.active()
        assert probe.handle({"action": "team", "op": "stop", "id": job_a.id}) == (True, "")
        result = await asyncio.wait_for(running, 30)
        release.set()
        await asyncio.sleep(0.6)  # the throttled last update
        await team.triggers.close()

    assert result.status == "ok", result.error
    assert job_a.status == "cancelled" and job_c.status == "ok"
    shown = board.output.handle.bundles[-1]
    assert "Running: nothing" in shown["text/plain"]
    assert "Worker queue: empty" in shown["text/plain"]
    assert "job C" not in shown["text/html"].split("Agents")[0]
    final = shown[BOARD_MIME]  # nothing live left: no rows; what was done, in the board
    jsonschema.Draft202012Validator(schema).validate(json.loads(json.dumps(final)))
    assert final["controls"] == "none" and final["rows"] == []
    said = shown["text/plain"].splitlines()
    assert said[1].startswith("Cancelled: job B (queued for a Worker, priority 5) · ")
    assert any(line.startswith("Stopped: job A (a Worker) · ") for line in said)
    assert "Stopped: job A (a Worker) · " in shown["text/html"]
    assert_words_only(shown["text/plain"])
    for line in final["state"]["outcomes"]:  # the extension draws these lines as they are
        assert_words_only(line)
    assert team.ledger.verify().ok


async def test_without_the_extension_the_controls_are_words_and_the_magic_acts(
        tmp_path: Path) -> None:
    """Without the extension no widget (a saved notebook would reopen as "model not
    found"): each live row names the magic; the magic acts and says so there."""
    from agent_kernel.notebook import board as board_module
    from agent_kernel.notebook.board import TeamBoard, TextBoardControls, agent_team

    release = threading.Event()
    with RoleModel(script(release)) as server:
        team = make_team(server, tmp_path / "ws", max_workers=1)
        running = asyncio.create_task(team.arun("go"))
        sup = team.supervisor
        await until(lambda: any(t.prompt == "job A" for t in sup.running.values()))
        job_a = next(t for t in sup.running.values() if t.prompt == "job A")
        job_c = next(t for t in sup.queues["worker"].waiting() if t.prompt == "job C")
        board = TeamBoard(team)
        board.show(controls=True)
        controls = board.controls
        assert isinstance(controls, TextBoardControls)
        controls.handle = Handle()
        controls.redraw()
        live = controls.handle.bundles[-1]
        assert set(live) == {"text/plain", "text/html"}  # no widget view, ever
        assert (f"job A (a Worker) — to stop it: %agent_team stop {job_a.id}"
                in live["text/plain"].splitlines())
        assert (f"job C (queued for a Worker, priority 1) — to cancel it: %agent_team cancel "
                f"{job_c.id}" in live["text/plain"].splitlines())
        assert_words_only(live["text/plain"])
        magics = SimpleNamespace(_team=SimpleNamespace(team=team))
        agent_team(magics, f"cancel {job_c.id}")  # type: ignore[arg-type]
        assert job_c.status == "cancelled" and job_c.id not in controls.rows
        assert controls.outcomes[-1].startswith("Cancelled: job C (queued for a Worker, "
                                                "priority 1) · ")
        update = controls.handle.bundles[-1]
        assert set(update) == {"text/plain", "text/html"}
        assert update["text/plain"].splitlines()[0].startswith("Cancelled: job C (")
        assert_words_only(update["text/plain"])
        assert f"%agent_team cancel {job_c.id}" not in update["text/plain"]
        team.triggers.cancel(team.triggers.active()[0].id)
        release.set()
        await asyncio.wait_for(running, 30)
        await team.triggers.close()
        board.retire()
        board_module._LIVE = None


def test_messages_are_shown_when_the_supervisor_keeps_them() -> None:
    from agent_kernel.views.board import _messages

    assert _messages(SimpleNamespace()) == []
    assert _messages(SimpleNamespace(messages="not a list")) == []
    kept = [{"from": "worker-2", "to": "teller", "content": {"text": "half done"},
             "createdAt": "2026-01-05T09:00:00+00:00"},
            SimpleNamespace(sender="planner-1", to="worker-2", content="go on", createdAt=None)]
    rows = _messages(SimpleNamespace(messages=kept))
    assert [(r["from"], r["to"], r["text"]) for r in rows] == [
        ("worker-2", "teller", '{"text": "half done"}'), ("planner-1", "worker-2", "go on")]
    society = SimpleNamespace(society=SimpleNamespace(messages=kept[:1]))
    assert [r["from"] for r in _messages(society)] == ["worker-2"]


# -- in a real kernel ------------------------------------------------------------------------


def _no_errors(nb: Any) -> None:
    for cell in nb.cells:
        for out in cell.outputs:
            assert out.output_type != "error", out
            assert "Traceback" not in out.get("text", ""), out


@pytest.mark.kernel
@pytest.mark.timeout(240)
def test_agent_team_in_a_headless_kernel(run_notebook, output_text, tmp_path: Path) -> None:
    from test_team_entry import KEY, MODEL, TeamServer, respond

    ws = tmp_path / "ws"
    with TeamServer(respond) as server:
        nb = run_notebook([
            "%load_ext agent_kernel\n%agent_team\nimport sys\n"
            "print('board loaded:', 'agent_kernel.notebook.board' in sys.modules)",
            "import agent_kernel.notebook.magics as m\n"
            f"m.current().api_base = {server.base_url!r}\n"
            f"%config AgentMagics.headless_approval = 'allow'\n"
            f"%agent_config --model {MODEL} --workspace {ws}",
            "%agent --team compare two cities for my trip",
            "%agent_team",
            "%agent_team --text\n%agent_team cancel task_nope\n%agent_team bogus",
        ], cwd=tmp_path, timeout=120, env=KEY)
        assert not server.hook_errors, server.hook_errors
    _no_errors(nb)
    first, _config, _run, board, words = nb.cells
    said = output_text(first)
    assert said.splitlines()[0] == ("No team in this session yet: start one with %agent --team "
                                    "PROMPT (or %agent_config --team on).")
    assert "board loaded: False" in said
    [shown] = [o for o in board.outputs if o.output_type == "display_data"]  # no controls
    html, text = shown["data"]["text/html"], shown["data"]["text/plain"]
    assert "class='agent-kernel-team-board'" in html
    assert text.startswith("Team: 0 running, 0 queued, ended: 3 ok")
    assert "Agents: Teller; Trigger desk" in text
    assert_words_only(text)
    assert "Roles: Teller, Planner, Worker" in text
    assert "Worker queue: empty" in text and "Artifacts: none yet" in text
    printed = output_text(words)
    assert printed.startswith("Team: 0 running, 0 queued")
    errors = "".join(o.get("text", "") for o in words.outputs if o.get("name") == "stderr")
    assert ("Nothing to cancel: this team has no task or trigger 'task_nope' (%agent_team "
            "--text lists the live ones, with the line that acts on each)." in errors)
    assert "usage: %agent_team [--text]" in errors


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.mark.kernel
@pytest.mark.timeout(240)
def test_a_board_saved_while_work_runs_without_the_extension_holds_no_widget(
        run_notebook, output_text, tmp_path: Path) -> None:
    """Someone can click, our extension is absent (ipywidgets' ground), a Worker runs
    (waiting for its approval on the offline demo model): the board's controls are words
    naming the magic, so the saved file holds no widget view of the board's to reopen as
    "Error displaying widget: model not found"; the magic stops the Worker and says so."""
    import nbformat

    ws = tmp_path / "ws"
    nb = run_notebook([
        "%load_ext agent_kernel\n%config AgentMagics.interactive = True",
        "%agent --team run command sleep 30",
        "import asyncio\nimport agent_kernel.notebook.magics as m\n"
        "team = m.current()._team.team\n"
        "for _ in range(600):\n"
        "    workers = [t for t in team.supervisor.running.values() if t.role == 'worker']\n"
        "    if workers:\n"
        "        break\n"
        "    await asyncio.sleep(0.1)\n"
        "[task] = workers\nprint('RUNNING', task.id)",
        "%agent_team",
        "%agent_team stop $task.id",
        "for _ in range(300):\n"
        "    if not team.supervisor.running:\n"
        "        break\n"
        "    await asyncio.sleep(0.1)\n"
        "print('STILL RUNNING', len(team.supervisor.running))\n"
        "from agent_kernel.notebook import board\n"
        "print(board._LIVE.controls.bundle()['text/plain'])",
    ], cwd=tmp_path, timeout=120, env={"AGENT_KERNEL_WORKSPACE": str(ws)})
    _no_errors(nb)
    task_id = output_text(nb.cells[2]).split("RUNNING ")[1].split()[0]
    saved = tmp_path / "saved.ipynb"
    nbformat.write(nb, saved)
    reopened = nbformat.read(saved, as_version=4)
    board_cell = reopened.cells[3]
    outputs = [o for o in board_cell.outputs if o.output_type in ("display_data",
                                                                    "update_display_data")]
    assert not [o for o in outputs if WIDGET_VIEW in o.get("data", {})], outputs
    assert len(outputs) == 2  # the controls' words and the board
    controls, board = (o["data"] for o in outputs)
    assert set(controls) == {"text/plain", "text/html"}
    assert "agent-kernel-team-board" in board["text/html"]
    text = controls["text/plain"]  # as saved while the Worker ran: the magic that stops it
    assert text == ("run command sleep 30 (a Worker) — to stop it: "
                    f"%agent_team stop {task_id}")
    assert f"%agent_team stop {task_id}" in controls["text/html"]
    assert "Running:" in board["text/plain"] and "sleep 30" in board["text/plain"]
    # the magic stopped it, and the controls (updated in place in Lab) say so first
    assert output_text(nb.cells[4]).strip() == "Stopped: run command sleep 30 (a Worker)."
    after = output_text(nb.cells[5])
    assert "STILL RUNNING 0" in after
    assert "\nStopped: run command sleep 30 (a Worker) · " in after, after
    assert_words_only(after.split("STILL RUNNING 0", 1)[1])
    assert_words_only(board["text/plain"])
