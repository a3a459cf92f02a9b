"""The team's entry points: ``%agent --team`` in a real kernel and ``run --team`` on the CLI.

A :class:`RoleServer` (see ``test_team.py``) plays the Teller, the Planner and
the Workers over litellm's real HTTP path; a request from the single agent gets
its own answer. The kernel is real (nbclient, headless), and so are the
supervisor, the tools and the ledger.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from scripted_server import Call, Message
from test_team import RoleServer, role_of

from agent_kernel.__main__ import build_parser
from agent_kernel.cli.grammar import reorder
from agent_kernel.core.events import RunStarted
from agent_kernel.team.roles import PLANNER, TELLER, WORKER

MODEL = "openai/test-model"
KEY = {"OPENAI_API_KEY": "sk-test-0123456789abcdef"}
REPLY = "Paris and Rome: compared."


def who(body: dict[str, Any]) -> str:
    """The role of the agent asking, or ``single`` for the session's single agent."""
    try:
        return role_of(body)
    except StopIteration:
        return "single"


def respond(role: str, body: dict[str, Any]) -> Message:
    """Teller delegates a comparison, the Planner splits it, Workers write notes."""
    said = body["messages"][-1]
    first = next(m["content"] for m in body["messages"] if m["role"] == "user")
    if role == "single":
        return Message(text=f"single agent here: {first}")
    if role == TELLER:
        if said["role"] == "user" and said["content"].startswith("The work you delegated"):
            return Message(calls=[Call("reply", json.dumps({"text": REPLY}))])
        if said["role"] == "user" and "compare" in said["content"]:
            return Message(calls=[Call("delegate", json.dumps(
                {"prompt": "compare Paris and Rome for a trip"}))])
        if said["role"] == "user":
            return Message(text=f"Teller by itself: {said['content']}")
        return Message(text="Delegated.")
    if role == PLANNER:
        if said["role"] == "user":  # delegations alone: the Planner's run ends with them
            return Message(text="Plan: one Worker per city.",
                           calls=[Call("delegate", json.dumps({"prompt": f"research {c}",
                                                               "priority": p}))
                                  for c, p in (("Rome", 3), ("Paris", 7))])
        return Message(text="a second Planner call, which a delegations-only turn never needs")
    city = first.split()[-1]
    if said["role"] == "user":
        return Message(calls=[Call("write_file", json.dumps(
            {"path": f"{city.lower()}.md", "content": f"{city} notes"}))])
    return Message(text=f"{city}: notes written\nmore detail that the summary leaves out")


class TeamServer(RoleServer):
    """The role server, also answering the single agent, with the ``respond`` it is given
    (so a test's own script holds, such as :func:`slow_worker`'s minute-long Worker call)."""

    def _fill(self, number: int, body: dict[str, Any]) -> None:
        self._open.pop(number).__dict__.update(self.respond(who(body), body).__dict__)

    def asked_by(self, role: str) -> list[dict[str, Any]]:
        return [b for b in self.requests if who(b) == role]


@pytest.fixture
def server():
    with TeamServer(respond) as srv:
        yield srv
        assert not srv.hook_errors, srv.hook_errors


def _no_traceback(nb: Any) -> None:
    for cell in nb.cells:
        for out in cell.outputs:
            assert out.output_type != "error", out
            assert "Traceback" not in out.get("text", ""), out


def _runs(cell: Any) -> list[dict[str, Any]]:
    return [o for o in cell.outputs if o.get("output_type") in ("display_data", "execute_result")
            and any(k.startswith("application/vnd.agent-kernel") for k in o.get("data", {}))]


@pytest.mark.kernel
@pytest.mark.timeout(240)
def test_team_from_a_headless_kernel(server, run_notebook, output_text, tmp_path):
    ws = tmp_path / "ws"
    nb = run_notebook([
        "%load_ext agent_kernel\nimport sys\nprint('team loaded:', 'agent_kernel.team.team' "
        "in sys.modules)",
        f"import agent_kernel.notebook.magics as m\nm.current().api_base = {server.base_url!r}\n"
        f"%config AgentMagics.headless_approval = 'allow'\n"
        f"%agent_config --model {MODEL} --workspace {ws}",
        "%agent --team compare two cities for my trip",
        "%agent_config --team on",
        "%agent what did you find?",
        "%agent --single hello there\n%agent --team --model openai/other hi",
        "%agent_config --team off\nprint(m.current().last_result.status)\n"
        "print(m.current().agent.ledger.verify())",
        "%config AgentMagics.interactive = True\n%agent --team compare them again\n"
        "print('returned while busy:', m.current()._team.busy)",
        "%agent_wait\nprint(m.current().last_result.reply)\n"
        "print('view:', m.current().views[-1].status, 'busy:', m.current()._team.busy)",
    ], cwd=tmp_path, timeout=120, env=KEY)
    cells = nb.cells
    _no_traceback(nb)
    assert "team loaded: False" in output_text(cells[0])  # %load_ext stays cheap
    # one run output for the Teller's runs, the tree below it
    team_cell = cells[2]
    [run] = _runs(team_cell)
    html = output_text(team_cell, "text/html")
    assert REPLY in html and "The delegated work has ended" in html
    assert "data-status='done'" in html
    tree = "".join(team_cell.outputs[-1]["data"]["text/plain"]) + "\n"  # the summary below
    assert "Tasks (3):" in tree
    assert "- planner · ok · priority 5: Plan: one Worker per city." in tree
    assert "    - worker · ok · priority 7: Paris: notes written\n" in tree
    assert "    - worker · ok · priority 3: Rome: notes written\n" in tree
    assert "more detail" not in tree  # one line of each result
    assert "agent-kernel-team-tree" in html and "data-role='worker'" not in html
    assert html.count('data-role="worker"') == 2
    assert team_cell.outputs.index(run) < len(team_cell.outputs) - 1  # the tree is below
    # the Planner's and Workers' runs are nested in the run, each with its tool cards
    assert html.count("data-agent-role='worker'") == 2
    assert "write_file" in run["data"]["text/plain"] and "research Paris · Worker · done" in html
    assert (ws / "files" / "paris.md").read_text() == "Paris notes"
    assert (ws / "files" / "rome.md").read_text() == "Rome notes"
    # team mode on: plain %agent goes to the same Teller, which remembers the conversation
    assert "team mode: on" in output_text(cells[3])
    asked = output_text(cells[4], "text/html")
    assert "Teller by itself: what did you find?" in asked
    assert "Tasks: none (the Teller answered by itself)." in output_text(cells[4])
    teller_last = server.asked_by(TELLER)[-1]["messages"]
    assert any(m["role"] == "user" and m["content"] == "compare two cities for my trip"
               for m in teller_last)
    assert any(REPLY in json.dumps(m) for m in teller_last)
    # --single still reaches the single agent; --model is refused for the team
    single = output_text(cells[5], "text/html")
    assert "single agent here: hello there" in single
    assert "Tasks" not in output_text(cells[5])
    assert "--model is for a single-agent run" in output_text(cells[5])
    assert [who(b) for b in server.requests].count("single") == 1
    end = output_text(cells[6])
    assert "team mode: off" in end and "ledger ok:" in end
    assert "\nok\n" in end  # the last result is the team's
    # live: the cell returns at once, the run goes on in the background to its end
    assert "returned while busy: True" in output_text(cells[7])
    assert "Tasks: the team is working…" in output_text(cells[7])
    assert REPLY in output_text(cells[8]) and "view: done busy: False" in output_text(cells[8])
    records = [json.loads(line) for line in (ws / "ledger.jsonl").read_text().splitlines()]
    roles = {r.get("role") for r in records if r.get("kind") == "tool_call"}
    assert {"teller", "planner", "worker"} <= roles


def _cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **KEY}
    return subprocess.run([sys.executable, "-m", "agent_kernel", *argv], capture_output=True,
                          text=True, timeout=120, cwd=cwd, env=env, stdin=subprocess.DEVNULL)


@pytest.mark.timeout(180)
def test_cli_run_team_against_the_scripted_server(server, tmp_path):
    ws = tmp_path / "ws"
    done = _cli("run", "compare two cities for my trip", "--team", "--model", MODEL,
                "--api-base", server.base_url, "--headless-approval", "allow",
                "--workspace", str(ws), "--max-workers", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.count(">>> ") == 1 and REPLY in out  # one transcript for the Teller's runs
    assert "The delegated work has ended" in out
    assert out.index(REPLY) < out.index("Tasks (3):")
    assert "- planner · ok · priority 5: Plan: one Worker per city." in out
    assert "    - worker · ok · priority 7: Paris: notes written\n" in out
    assert (ws / "files" / "rome.md").read_text() == "Rome notes"
    # with max_workers=1 the higher priority ran first
    records = [json.loads(line) for line in (ws / "ledger.jsonl").read_text().splitlines()]
    written = [r["arguments"]["path"] for r in records
               if r.get("kind") == "tool_call" and r.get("tool_name") == "write_file"]
    assert written == ["paris.md", "rome.md"]
    bad = _cli("run", "hi", "--team", "--max-workers", "0", "--workspace", str(ws),
               cwd=tmp_path)
    assert bad.returncode == 1 and "--max-workers must be at least 1, got 0" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_cli_team_options_follow_the_grammar():
    parser = build_parser()
    for argv in (["run", "hi", "--team", "--max-workers", "2"],
                 ["--team", "run", "--max-workers", "2", "hi"],
                 ["--max-workers", "2", "--team", "run", "hi"]):
        args = parser.parse_args(reorder(list(argv), parser))
        assert (args.command, args.prompt, args.team, args.max_workers) == ("run", "hi", True, 2)
    args = parser.parse_args(reorder(["run", "hi"], parser))
    assert (args.team, args.max_workers) == (False, 4)


def test_the_team_server_answers_with_the_script_it_is_given():
    """A test's own ``respond`` is what the server answers (the stop test's slow Worker
    once got the default script's instant answer, so its Worker was seldom seen running)."""
    import urllib.request

    def ask(srv: TeamServer, first: str) -> str:
        body = {"model": "test-model", "messages": [{"role": "system", "content": first},
                                                    {"role": "user", "content": "hi"}]}
        request = urllib.request.Request(f"{srv.base_url}/chat/completions",
                                         data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            return str(json.load(answer)["choices"][0]["message"]["content"])

    with TeamServer(lambda role, body: Message(text=f"scripted for {role}")) as srv:
        assert ask(srv, "You are a Worker of a team.") == "scripted for worker"
        assert ask(srv, "You are a helpful assistant.") == "scripted for single"
        assert not srv.hook_errors, srv.hook_errors


def slow_worker(role: str, body: dict[str, Any]) -> Message:
    """Like ``respond``, but a Worker's model call takes a minute."""
    made = respond(role, body)
    if role == WORKER:
        made.delay = 60.0
    return made


async def test_stop_ends_the_teller_and_every_open_task_of_the_prompt(tmp_path):
    from agent_kernel import Settings
    from agent_kernel.team import Team
    from agent_kernel.team.relay import TellerRelay
    from agent_kernel.views.team_summary import tree_text

    with TeamServer(slow_worker) as srv:
        settings = Settings(api_base=srv.base_url, api_key=KEY["OPENAI_API_KEY"],
                            retry_base_delay=0.01, headless_approval="allow")
        team = Team(model=MODEL, workspace=tmp_path / "ws", settings=settings)
        relay = TellerRelay(team, "run_one")
        seen: list[Any] = []
        relay.bus.subscribe(seen.append)
        relay.task = asyncio.ensure_future(team.arun("compare two cities for my trip"))
        for _ in range(400):
            if any(t.role == WORKER and t.status == "running" for t in relay.new_tasks()):
                break
            await asyncio.sleep(0.05)
        else:
            pytest.fail("no Worker started")
        assert relay.stop() >= 2
        try:
            result = await asyncio.wait_for(relay.task, 20)
        except asyncio.CancelledError:
            result = None
        relay.close(result)
        assert await relay.settle(20)
        assert not [t for t in relay.new_tasks() if t.open]
        tree = tree_text(relay.tree(result))
        assert tree.count("worker · cancelled") == 2  # both stopped in their minute-long call
        # stopped mid-call: no Worker wrote its notes, no results went back to the Teller
        assert not list((tmp_path / "ws").rglob("*.md"))
        assert not [b for b in srv.asked_by(TELLER)
                    if "The work you delegated" in json.dumps(b["messages"][-1])]
        assert {e.run_id for e in seen} == {"run_one"}
        assert sum(isinstance(e, RunStarted) for e in seen) == 1
