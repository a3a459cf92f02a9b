"""bash and run_command: one runner, two shapes, dangerous commands refused before approval.

Commands run for real (bash in the real bubblewrap sandbox); the calls that must be
refused go through the real tool-call path (``tool_calls.execute``) with a person
attached to answer, so a question that should never be asked would be seen. The
network tests serve on 127.0.0.1 in this process and check the command's side.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from scripted_server import Call, Message, ScriptedServer
from tool_helpers import call_tool, person, through_the_loop

from agent_kernel import Agent, Settings
from agent_kernel.engine.tool_calls import tool_message
from agent_kernel.guards import sandbox
from agent_kernel.guards.dangerous import find_danger
from agent_kernel.tools import commands

SANDBOXED = sandbox.find_bubblewrap() is not None


def needs_bubblewrap() -> None:
    if not SANDBOXED:
        if os.environ.get("CI"):
            pytest.fail(f"CI must test the sandbox: {sandbox.unavailable_reason()}")
        pytest.skip(sandbox.unavailable_reason())


@pytest.fixture(autouse=True)
def limits(monkeypatch: pytest.MonkeyPatch) -> commands.CommandLimits:
    """Fresh limits; without bubblewrap here the plain tests run unsandboxed."""
    fresh = commands.CommandLimits(allow_unsandboxed=not SANDBOXED)
    monkeypatch.setattr(commands, "LIMITS", fresh)
    return fresh


@pytest.fixture
def agent(tmp_path: Path) -> Agent:
    return Agent(workspace=tmp_path / "ws")


call = call_tool




# The two faces.

def test_argument_shapes(agent: Agent) -> None:
    bash, run_command = agent.registry.get("bash"), agent.registry.get("run_command")
    assert bash.side_effects is True and run_command.side_effects is True
    assert set(bash.parameters["properties"]) == {"cmd", "cwd", "timeout_seconds"}
    assert bash.parameters["required"] == ["cmd"]
    props = run_command.parameters["properties"]
    assert set(props) == {"command", "timeoutMs"} and run_command.parameters["required"] == [
        "command"]
    assert props["timeoutMs"]["type"] == "number" and props["timeoutMs"]["default"] == 60000
    assert bash.precheck is not None and run_command.precheck is not None


async def test_bash_runs_in_the_workspace(agent: Agent) -> None:
    await call(agent, "write_file", path="here.txt", content="x")
    result = await call(agent, "bash", cmd="pwd; ls; echo oops >&2; exit 3")
    assert result["exit_code"] == 3
    lines = result["stdout"].splitlines()
    assert Path(lines[0]) == agent.workspace.root / "files"
    assert "here.txt" in lines
    assert result["stderr"] == "oops\n"
    assert result["sandboxed"] is SANDBOXED
    assert result["sandbox"] == ("bubblewrap, no network" if SANDBOXED else
                                 f"not sandboxed: {sandbox.unavailable_reason()}")
    (agent.workspace.root / "state").mkdir(exist_ok=True)
    where = await call(agent, "bash", cmd="pwd", cwd="file_state_dir/.")
    assert Path(where["stdout"].strip()) == agent.workspace.root / "state"


async def test_run_command_answers_in_spec_004s_shape(agent: Agent) -> None:
    await call(agent, "write_file", path="here.txt", content="x")
    done = await call(agent, "run_command", command="pwd; ls")
    state = done.pop("sandbox")
    assert done == {"ok": True, "stdout": f"{agent.workspace.root / 'files'}\nhere.txt\n",
                    "stderr": "", "exitCode": 0}
    assert state == ("bubblewrap, no network" if SANDBOXED else
                     f"not sandboxed: {sandbox.unavailable_reason()}")
    failed = await call(agent, "run_command", command="echo partial; echo why >&2; exit 3")
    assert failed["ok"] is False and failed["exitCode"] == 3
    assert failed["error"] == "the command exited with code 3"
    assert failed["stdout"] == "partial\n" and failed["stderr"] == "why\n"


async def test_run_command_honours_timeout_ms(agent: Agent) -> None:
    started = time.perf_counter()
    done = await call(agent, "run_command", command="echo start; sleep 20", timeoutMs=500)
    assert time.perf_counter() - started < 5
    assert done["ok"] is False and done["timedOut"] is True and done["exitCode"] is None
    assert done["stdout"] == "start\n"
    assert done["error"] == "the command was killed after 500 ms (timeoutMs)"
    quick = await call(agent, "run_command", command="sleep 0.3; echo done", timeoutMs=5000)
    assert quick["ok"] is True and quick["stdout"] == "done\n"


async def test_run_command_refusals_are_envelopes(
        agent: Agent, limits: commands.CommandLimits) -> None:
    too_long = await call(agent, "run_command", command="true", timeoutMs=600001)
    assert too_long == {"ok": False, "error": "timeoutMs must be at most 600000, got 600001"}
    limits.enabled = False
    off = await call(agent, "run_command", command="true")
    assert off == {"ok": False, "error": "run_command tool is disabled"}


async def test_bash_cwd_outside_or_in_the_runtime_is_refused(agent: Agent) -> None:
    with pytest.raises(ValueError, match="outside the workspace"):
        await call(agent, "bash", cmd="ls", cwd="/tmp")
    with pytest.raises(PermissionError, match="belongs to the runtime"):
        await call(agent, "bash", cmd="ls", cwd="../triggers")


async def test_a_symlinked_files_folder_is_refused(agent: Agent) -> None:
    root = agent.workspace.ensure()
    (root / "memory.md").write_text("# memory\n")
    (root / "files").symlink_to(root)
    with pytest.raises(PermissionError, match="not a plain folder"):
        await call(agent, "bash", cmd="echo pwned >> memory.md")
    assert (root / "memory.md").read_text() == "# memory\n"


async def test_bash_timeout_kills_the_command(agent: Agent) -> None:
    started = time.perf_counter()
    result = await call(agent, "bash", cmd="echo start; sleep 20", timeout_seconds=0.5)
    assert time.perf_counter() - started < 5
    assert result["timed_out"] is True and result["stdout"] == "start\n"
    assert "killed after 0.5 s timeout" in result["stderr"]


async def test_bash_limits(agent: Agent, limits: commands.CommandLimits) -> None:
    with pytest.raises(ValueError, match="timeout_seconds must be at most 600"):
        await call(agent, "bash", cmd="true", timeout_seconds=601)
    limits.output_max_bytes = 5
    result = await call(agent, "bash", cmd="echo 0123456789")
    assert result["stdout"] == "01234" and result["truncated"] is True
    limits.enabled = False
    with pytest.raises(PermissionError, match="^bash tool is disabled$"):  # spec 003's words
        await call(agent, "bash", cmd="true")


@pytest.mark.timeout(60)
async def test_a_flood_of_output_is_dropped_as_it_comes(
        agent: Agent, limits: commands.CommandLimits) -> None:
    # 300 MB of output: kept whole it would cost the kernel that much memory.
    limits.output_max_bytes = 1000
    done = await call(agent, "run_command", command="head -c 300000000 /dev/zero | tr '\\0' x; "
                                                    "echo end >&2")
    assert done["ok"] is True and done["stdout"] == "x" * 1000 and done["truncated"] is True
    assert done["stderr"] == "end\n"


async def test_bash_cancel_kills_the_process_group(agent: Agent) -> None:
    task = asyncio.ensure_future(call(agent, "bash", cmd="sleep 2; touch done.txt"))
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(2.3)
    assert not (agent.workspace.root / "files" / "done.txt").exists()


# Dangerous commands: refused before anyone is asked, for both faces.

DANGEROUS = [
    "sudo touch MARK", "/usr/bin/sudo touch MARK", "env sudo touch MARK",
    "env -i LANG=C sudo touch MARK", "\\sudo touch MARK", "touch MARK; sudo ls",
    "touch MARK && su -c ls", "bash -c 'sudo touch MARK'", "sh -lc \"doas touch MARK\"",
    "bash -c \"bash -c 'pkexec ls'\"", "echo $(sudo ls) > MARK", "echo `sudo ls` > MARK",
    "touch MARK\nsudo ls", "nohup sudo ls &", "timeout 5 sudo ls", "xargs sudo rm < MARK",
    "eval 'sudo ls'", "env -S 'sudo ls'", "find . -exec sudo rm {} \\;",
    "rm -rf /", "rm -fr /", "rm -rf --no-preserve-root /", "rm -rf /*", "rm -r -f -- /",
    "rm -Rf ~", "rm -rf $HOME/", "rm -rf /usr/../", "rm -rf /u*",
    "mkfs.ext4 /dev/sda1", "mkfs -t ext4 /dev/sdb", "wipefs -a /dev/sda",
    "dd if=/dev/zero of=/dev/sda bs=1M", "cat /dev/urandom > /dev/nvme0n1",
    ":(){ :|:& };:", "bomb() { bomb | bomb & }; bomb",
    "shutdown -h now", "reboot", "/sbin/poweroff", "systemctl reboot", "init 0",
    "chmod -R 777 /", "chown -R nobody /", "kill -9 -1", "find / -delete",
]
HARMLESS = [
    "ls -la", "echo sudo", "echo 'rm -rf /'", "grep -r sudo .", "command -v sudo",
    "rm -rf build ./node_modules /tmp/x", "rm -rf /tmp/build*", "chmod -R 755 .",
    "dd if=/dev/zero of=out.img bs=1k count=1", "echo x > /dev/null 2>&1", "fdisk -l",
    "kill -9 12345", "mv a.txt ~/", "find . -name '*.pyc' -delete", "systemctl status",
    "cat <<EOF\nit's fine\nEOF", "python3 -c 'print(1)'",
]


@pytest.mark.parametrize("cmd", HARMLESS)
def test_ordinary_commands_are_not_on_the_list(cmd: str) -> None:
    assert find_danger(cmd) is None


@pytest.mark.parametrize("name,key", [("bash", "cmd"), ("run_command", "command")])
@pytest.mark.parametrize("cmd", DANGEROUS)
async def test_dangerous_commands_are_refused_without_asking(
        agent: Agent, name: str, key: str, cmd: str) -> None:
    asked = person(agent)
    record = await through_the_loop(agent, name, **{key: cmd})
    assert not record.success
    # bash (spec 003) has no failure shape; run_command answers in spec 004's {ok: false, error}
    assert record.result == (None if name == "bash" else {
        "ok": False, "error": record.error.removeprefix(f"Tool '{name}' was not run: ")})
    assert "on the list of dangerous commands" in (record.error or "")
    assert record.error.startswith(f"Tool '{name}' was not run: ")
    assert (record.summary or "").startswith("Refused without asking you: ")
    assert "Do not retry" in (record.guidance or "")
    assert asked == []
    assert not (agent.workspace.root / "files" / "MARK").exists()
    kinds = [(r["kind"], r.get("success")) for r in agent.ledger.records()]
    assert ("approval", None) not in kinds and ("tool_call", False) in kinds
    told = tool_message(record, 10000)["content"]
    assert "dangerous" in told and "Do not retry" in told


async def test_an_ordinary_command_is_asked_about_with_its_sandbox(agent: Agent) -> None:
    asked = person(agent)
    record = await through_the_loop(agent, "run_command", command="echo hi")
    assert record.success and record.result["stdout"] == "hi\n"
    [question] = asked
    assert question.kind == "approval" and question.details is not None
    assert question.details["tool"] == "run_command"
    assert question.details["arguments"] == {"command": "echo hi", "timeoutMs": 60000}
    assert question.details["sandbox"] == record.result["sandbox"]


async def test_without_a_sandbox_the_card_says_so(
        agent: Agent, limits: commands.CommandLimits, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "find_bubblewrap", lambda: None)
    monkeypatch.setattr(sandbox, "unavailable_reason",
                        lambda: "bubblewrap (bwrap) is not installed")
    asked = person(agent)
    limits.allow_unsandboxed = False
    refused = await through_the_loop(agent, "bash", cmd="touch made.txt")
    assert not refused.success and asked == []
    assert "apt-get install bubblewrap" in (refused.error or "")
    assert "allow_unsandboxed = True" in (refused.error or "")
    assert refused.summary == ("Commands cannot run here: bubblewrap (bwrap) is not installed; "
                               "install Debian's `bubblewrap` (apt-get install bubblewrap).")
    assert not (agent.workspace.root / "files" / "made.txt").exists()
    limits.allow_unsandboxed = True
    ran = await through_the_loop(agent, "bash", cmd="touch made.txt")
    [question] = asked
    assert question.details is not None
    assert question.details["sandbox"] == "not sandboxed: bubblewrap (bwrap) is not installed"
    assert ran.success and ran.result["sandboxed"] is False
    assert ran.result["sandbox"] == question.details["sandbox"]
    assert (agent.workspace.root / "files" / "made.txt").exists()


async def test_a_denied_command_does_not_run(agent: Agent) -> None:
    asked = person(agent, "Deny")
    record = await through_the_loop(agent, "run_command", command="touch made.txt")
    assert not record.success and len(asked) == 1
    assert not (agent.workspace.root / "files" / "made.txt").exists()


# The sandbox around both faces: network, secrets, the runtime's files, processes.

@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server on 127.0.0.1 in this process; yields its port and what it received."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    received: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    received.append(conn.recv(100))
                    conn.sendall(b"pong")
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], received
    finally:
        stop.set()
        thread.join(2)
        server.close()


PROBE = ("python3 -c \"import socket; s = socket.create_connection(('127.0.0.1', {port}), "
         "timeout=3); s.sendall(b'ping'); print(s.recv(4).decode())\"")


@pytest.mark.parametrize("name,key", [("bash", "cmd"), ("run_command", "command")])
async def test_the_network_is_closed_unless_the_person_opens_it(
        agent: Agent, limits: commands.CommandLimits, listener: tuple[int, list[bytes]],
        name: str, key: str) -> None:
    needs_bubblewrap()
    port, received = listener
    closed = await call(agent, name, **{key: PROBE.format(port=port)})
    assert closed["sandbox"] == "bubblewrap, no network"
    assert "pong" not in closed["stdout"] and "Connection refused" in closed["stderr"]
    assert received == []
    # Its own loopback works: a server inside the command is reachable from inside.
    inside = await call(agent, name, **{key: "python3 -c \"import socket; s = "
                                        "socket.create_server(('127.0.0.1', 0)); "
                                        "c = socket.create_connection(s.getsockname()); "
                                        "print('loopback ok')\""})
    assert inside["stdout"] == "loopback ok\n"
    limits.network = True
    opened = await call(agent, name, **{key: PROBE.format(port=port)})
    assert opened["sandbox"] == "bubblewrap, network allowed"
    assert opened["stdout"] == "pong\n" and received == [b"ping"]


async def test_run_command_cannot_reach_the_runtime_or_the_keys(
        agent: Agent, monkeypatch: pytest.MonkeyPatch) -> None:
    needs_bubblewrap()
    key = "sk-proj-abcdefghijklmnop0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    root = agent.workspace.ensure()
    (root / "ledger.jsonl").write_text('{"seq": 1}\n')
    outside = root.parent / "outside.txt"
    done = await call(agent, "run_command", command=(
        "cat ../ledger.jsonl; env; cat /proc/*/environ; echo x >> ../ledger.jsonl; "
        f"echo x > {outside}; echo x > ../new.txt; echo fine > ok.txt"))
    assert key not in done["stdout"] and "OPENAI_API_KEY" not in done["stdout"]
    assert '"seq"' not in done["stdout"]
    assert (root / "ledger.jsonl").read_text() == '{"seq": 1}\n'
    assert not outside.exists() and not (root / "new.txt").exists()
    assert (root / "files" / "ok.txt").read_text() == "fine\n"
    assert done["ok"] is True  # the last command succeeded; the others failed quietly


async def test_one_agent_run_with_run_command(tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.script(
            Message(calls=[Call("run_command", json.dumps({"command": "echo hi; exit 4"}))]),
            Message(calls=[Call("run_command", json.dumps({"command": "sudo ls /root"}))]),
            Message(text="done"))
        agent = Agent(model="openai/test-model", workspace=tmp_path / "ws",
                      settings=Settings(api_base=server.base_url, api_key="sk-x",
                                        headless_approval="allow"))
        result = await agent.arun("run the tests")
        assert result.ok and result.reply == "done", result.error
        first, second = result.tool_calls
        assert not first.success and first.result["ok"] is False and first.result["exitCode"] == 4
        assert first.result["stdout"] == "hi\n"
        assert not second.success and "dangerous" in (second.error or "")
        tool_messages = [m for m in server.requests[2]["messages"] if m["role"] == "tool"]
        assert '"exitCode": 4' in tool_messages[0]["content"]
        assert "Do not retry" in tool_messages[1]["content"]
        approvals = [r for r in agent.ledger.records() if r.get("kind") == "approval"]
        assert [a["tool_name"] for a in approvals] == ["run_command"]  # only the first asked
        assert agent.services.history_writer.flush(30)
