"""read_file, write_file and bash: confined to the workspace, with spec 003's guards."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
import time
from pathlib import Path
from typing import Any

import pytest

from agent_kernel import Agent, sandbox
from agent_kernel.tools import files
from agent_kernel.tools.base import ToolArgumentError, ToolContext


@pytest.fixture
def agent(tmp_path: Path) -> Agent:
    return Agent(workspace=tmp_path / "ws")


SANDBOXED = sandbox.find_bubblewrap() is not None


@pytest.fixture(autouse=True)
def commands_can_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without bubblewrap here, these bash tests run unsandboxed (test_sandbox.py needs it)."""
    if not SANDBOXED:
        monkeypatch.setattr(files.LIMITS, "allow_unsandboxed", True)


@pytest.fixture
def limits(monkeypatch: pytest.MonkeyPatch) -> files.FileToolLimits:
    fresh = files.FileToolLimits(allow_unsandboxed=not SANDBOXED)
    monkeypatch.setattr(files, "LIMITS", fresh)
    return fresh


async def call(agent: Agent, name: str, **arguments: Any) -> Any:
    tool = agent.registry.get(name)
    ctx = ToolContext(agent=agent, run_id="run_t", agent_id="agent", workspace=agent.workspace)
    return await tool.invoke(tool.validate(arguments), ctx)


def test_side_effect_marks(agent: Agent) -> None:
    assert agent.registry.get("read_file").side_effects is False
    assert agent.registry.get("write_file").side_effects is True
    assert agent.registry.get("bash").side_effects is True
    schema = agent.registry.get("bash").parameters
    assert set(schema["properties"]) == {"cmd", "cwd", "timeout_seconds"}
    assert schema["required"] == ["cmd"]
    assert agent.registry.get("write_file").parameters["properties"]["mode"]["enum"] == [
        "overwrite", "append"]


async def test_write_then_read_and_append(agent: Agent) -> None:
    wrote = await call(agent, "write_file", path="notes/today.txt", content="hello")
    assert wrote == {"path": "files/notes/today.txt", "bytes": 5, "mode": "overwrite"}
    await call(agent, "write_file", path="notes/today.txt", content=" world", mode="append")
    assert await call(agent, "read_file", path="notes/today.txt") == "hello world"
    assert await call(agent, "read_file", path="file_cache_dir/notes/today.txt") == "hello world"


async def test_state_alias(agent: Agent) -> None:
    wrote = await call(agent, "write_file", path="file_state_dir/plan.md", content="# plan")
    assert wrote["path"] == "state/plan.md"
    assert (agent.workspace.root / "state" / "plan.md").read_text() == "# plan"


@pytest.mark.parametrize("path", ["../../escape.txt", "/etc/passwd", "file_state_dir/../../x",
                                  "~/x.txt"])
async def test_paths_outside_the_workspace_are_refused(agent: Agent, path: str) -> None:
    with pytest.raises(ValueError, match="outside the workspace"):
        await call(agent, "read_file", path=path)
    with pytest.raises(ValueError, match="outside the workspace"):
        await call(agent, "write_file", path=path, content="x")


async def test_absolute_path_inside_the_workspace_is_fine(agent: Agent) -> None:
    target = agent.workspace.root / "files" / "abs.txt"
    await call(agent, "write_file", path=str(target), content="ok")
    assert target.read_text() == "ok"


async def test_alias_without_a_file_is_refused(agent: Agent) -> None:
    with pytest.raises(ValueError, match="needs a file path after it"):
        await call(agent, "read_file", path="file_cache_dir")


async def test_deny_paths(agent: Agent) -> None:
    with pytest.raises(PermissionError, match="denied"):
        await call(agent, "write_file", path="secrets/.env", content="KEY=1")
    with pytest.raises(PermissionError, match="denied"):
        await call(agent, "read_file", path="/" + str(agent.workspace.root / "ledger.jsonl"))


async def test_missing_file_and_folder(agent: Agent) -> None:
    with pytest.raises(FileNotFoundError, match="no such file: files/nope.txt"):
        await call(agent, "read_file", path="nope.txt")
    await call(agent, "write_file", path="dir/a.txt", content="a")
    with pytest.raises(IsADirectoryError):
        await call(agent, "read_file", path="dir")


async def test_byte_limits(agent: Agent, limits: files.FileToolLimits) -> None:
    limits.write_max_bytes = 10
    with pytest.raises(ValueError, match="at most 10"):
        await call(agent, "write_file", path="big.txt", content="x" * 11)
    limits.read_max_bytes = 4
    await call(agent, "write_file", path="small.txt", content="abcdefgh")
    text = await call(agent, "read_file", path="small.txt")
    assert text.startswith("abcd\n") and "truncated: showed 4 of 8 bytes" in text


async def test_bad_mode_is_a_clear_argument_error(agent: Agent) -> None:
    tool = agent.registry.get("write_file")
    with pytest.raises(ToolArgumentError, match="mode"):
        tool.validate({"path": "a", "content": "b", "mode": "truncate"})


async def test_bash_runs_in_the_workspace(agent: Agent) -> None:
    await call(agent, "write_file", path="here.txt", content="x")
    result = await call(agent, "bash", cmd="pwd; ls; echo oops >&2; exit 3")
    assert result["exit_code"] == 3
    lines = result["stdout"].splitlines()
    assert Path(lines[0]) == agent.workspace.root / "files"
    assert "here.txt" in lines
    assert result["stderr"] == "oops\n"
    (agent.workspace.root / "state").mkdir(exist_ok=True)
    where = await call(agent, "bash", cmd="pwd", cwd="file_state_dir/.")
    assert Path(where["stdout"].strip()) == agent.workspace.root / "state"


async def test_bash_cwd_outside_is_refused(agent: Agent) -> None:
    with pytest.raises(ValueError, match="outside the workspace"):
        await call(agent, "bash", cmd="ls", cwd="/tmp")


async def test_bash_timeout_kills_the_command(agent: Agent) -> None:
    started = time.perf_counter()
    result = await call(agent, "bash", cmd="echo start; sleep 20", timeout_seconds=0.5)
    assert time.perf_counter() - started < 5
    assert result["timed_out"] is True and result["stdout"] == "start\n"
    assert "killed after 0.5 s timeout" in result["stderr"]


async def test_bash_limits(agent: Agent, limits: files.FileToolLimits) -> None:
    with pytest.raises(ValueError, match="timeout_seconds must be at most 600"):
        await call(agent, "bash", cmd="true", timeout_seconds=601)
    limits.bash_output_max_bytes = 5
    result = await call(agent, "bash", cmd="echo 0123456789")
    assert result["stdout"] == "01234" and result["truncated"] is True
    limits.bash_enabled = False
    with pytest.raises(PermissionError, match="tool is disabled: bash"):
        await call(agent, "bash", cmd="true")


@pytest.mark.skipif(not SANDBOXED, reason="needs bubblewrap")
async def test_bash_cannot_reach_the_ledger(agent: Agent) -> None:
    ledger = agent.workspace.ensure() / "ledger.jsonl"
    ledger.write_text("secret history\n")
    result = await call(agent, "bash", cmd="cat ../ledger.jsonl; echo x >> ../ledger.jsonl")
    assert result["sandboxed"] is True and result["exit_code"] != 0
    assert "secret history" not in result["stdout"]
    assert ledger.read_text() == "secret history\n"


async def test_bash_cancel_kills_the_process_group(agent: Agent) -> None:
    task = asyncio.ensure_future(call(agent, "bash", cmd="sleep 2; touch done.txt"))
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(2.3)
    assert not (agent.workspace.root / "files" / "done.txt").exists()


async def test_errors_reach_the_model_as_tool_results(agent: Agent) -> None:
    agent.settings.headless_approval = "allow"
    result = await agent.arun("write file ../../outside.txt with nope")
    [record] = result.tool_calls
    assert not record.success
    assert "execution failed: path '../../outside.txt' is outside the workspace" in record.error
    assert result.ok


# Writes: only files/ and state/, on the fully resolved path.

@pytest.fixture
def runtime_files(agent: Agent) -> dict[str, bytes]:
    """The runtime's own files, with content to compare after an attack."""
    root = agent.workspace.root
    made = {"ledger.jsonl": b'{"seq": 1}\n', "triggers/t1.json": b'{"condition": "True"}',
            "memory.md": b"# memory\n", "lancedb/x.txt": b"table", "pending_question.json": b"{}"}
    for relative, data in made.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_bytes(data)
    (root / "files").mkdir(exist_ok=True)
    return made


def unchanged(agent: Agent, made: dict[str, bytes]) -> bool:
    root = agent.workspace.root
    return (all((root / rel).read_bytes() == data for rel, data in made.items())
            and not (root / "triggers" / "evil.json").exists())


@pytest.mark.parametrize("path", [
    "../triggers/evil.json", "file_state_dir/../triggers/evil.json", "../memory.md",
    "../lancedb/x.txt", "../lancedb/new.txt", "../ledger.jsonl", "../pending_question.json",
    "../new_file.txt", "ABS/triggers/evil.json", "ABS/memory.md"])
async def test_write_file_refuses_the_runtime_files(
        agent: Agent, runtime_files: dict[str, bytes], path: str) -> None:
    path = path.replace("ABS", str(agent.workspace.root))
    with pytest.raises(PermissionError) as caught:
        await call(agent, "write_file", path=path, content="pwned")
    assert "denied" in str(caught.value) or (
        "belongs to the runtime" in str(caught.value)
        and "files/ (file_cache_dir) or state/ (file_state_dir)" in str(caught.value))
    assert unchanged(agent, runtime_files)
    assert not (agent.workspace.root / "new_file.txt").exists()


async def test_write_file_refuses_symlinks_out_of_files(
        agent: Agent, runtime_files: dict[str, bytes]) -> None:
    cache = agent.workspace.root / "files"
    (cache / "led").symlink_to("../ledger.jsonl")
    (cache / "trig").symlink_to("../triggers")
    (cache / "mem").symlink_to(agent.workspace.root / "memory.md")
    for path in ("led", "trig/evil.json", "mem", "file_cache_dir/mem"):
        with pytest.raises(PermissionError):
            await call(agent, "write_file", path=path, content="pwned", mode="append")
    assert unchanged(agent, runtime_files)
    # A symlink that stays inside files/ is followed.
    (cache / "real.txt").write_text("a")
    (cache / "alias.txt").symlink_to("real.txt")
    await call(agent, "write_file", path="alias.txt", content="b", mode="append")
    assert (cache / "real.txt").read_text() == "ab"


async def test_relative_runtime_names_land_in_files(
        agent: Agent, runtime_files: dict[str, bytes]) -> None:
    wrote = await call(agent, "write_file", path="triggers/evil.json", content="{}")
    assert wrote["path"] == "files/triggers/evil.json"
    assert unchanged(agent, runtime_files)


async def test_write_file_refuses_hard_links(agent: Agent, runtime_files: dict[str, bytes]) -> None:
    os.link(agent.workspace.root / "memory.md", agent.workspace.root / "files" / "m.md")
    with pytest.raises(PermissionError, match="hard links"):
        await call(agent, "write_file", path="m.md", content="pwned")
    assert unchanged(agent, runtime_files)


async def test_files_folder_that_is_a_symlink_is_refused(
        agent: Agent, runtime_files: dict[str, bytes]) -> None:
    root = agent.workspace.root
    (root / "files").rmdir()
    (root / "files").symlink_to(root)
    for path in ("memory.md", "triggers/evil.json", "x.txt"):
        with pytest.raises(PermissionError):
            await call(agent, "write_file", path=path, content="pwned")
    with pytest.raises(PermissionError, match="not a plain folder"):
        await call(agent, "bash", cmd="echo pwned >> memory.md")
    assert unchanged(agent, runtime_files)


def test_a_folder_swapped_for_a_symlink_after_the_check_is_refused(
        agent: Agent, runtime_files: dict[str, bytes]) -> None:
    # What a command running at the same time could do between resolve() and the write.
    cache = agent.workspace.root / "files"
    (cache / "sub").symlink_to("../triggers")
    with (pytest.raises(PermissionError, match="'sub' changed or is not a folder"),
          files._folder_fd(cache, ["sub"], create=True)):
        pass
    assert unchanged(agent, runtime_files)


async def test_reads_stay_workspace_wide_with_deny_paths(
        agent: Agent, runtime_files: dict[str, bytes]) -> None:
    assert await call(agent, "read_file", path="../triggers/t1.json") == '{"condition": "True"}'
    (agent.workspace.root / "files" / "led").symlink_to("../ledger.jsonl")
    for path in ("../ledger.jsonl", "led"):
        with pytest.raises(PermissionError, match="denied"):
            await call(agent, "read_file", path=path)


async def test_bash_cwd_must_be_writable(agent: Agent) -> None:
    with pytest.raises(PermissionError, match="belongs to the runtime"):
        await call(agent, "bash", cmd="ls", cwd="../triggers")


# Reads and writes refuse FIFOs, sockets and devices without blocking.

@pytest.mark.timeout(10)
async def test_read_file_refuses_a_fifo_at_once(agent: Agent) -> None:
    cache = agent.workspace.root / "files"
    cache.mkdir(parents=True)
    os.mkfifo(cache / "pipe")
    started = time.perf_counter()
    with pytest.raises(PermissionError, match=r"files/pipe is a FIFO \(named pipe\); "
                                              r"read_file works only on regular files"):
        await call(agent, "read_file", path="pipe")
    with pytest.raises(PermissionError, match="socket or FIFO; write_file works only"):
        await call(agent, "write_file", path="pipe", content="x")
    assert time.perf_counter() - started < 2


@pytest.mark.timeout(10)
async def test_read_file_refuses_sockets_and_devices(agent: Agent) -> None:
    cache = agent.workspace.root / "files"
    cache.mkdir(parents=True)
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(cache / "sock"))
        with pytest.raises(PermissionError, match="files/sock is a socket or FIFO"):
            await call(agent, "read_file", path="sock")
    finally:
        server.close()
    (cache / "zero").symlink_to("/dev/zero")  # resolves outside the workspace
    with pytest.raises(ValueError, match="outside the workspace"):
        await call(agent, "read_file", path="zero")
    if os.geteuid() == 0:
        os.mknod(cache / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        with pytest.raises(PermissionError, match="files/null is a character device"):
            await call(agent, "read_file", path="null")


@pytest.mark.timeout(20)
async def test_fifo_through_a_run_is_a_tool_error(tmp_path: Path) -> None:
    from scripted_server import Call, Message, ScriptedServer

    from agent_kernel import Settings

    with ScriptedServer() as server:
        agent = Agent(model="openai/test-model", workspace=tmp_path / "ws",
                      settings=Settings(api_base=server.base_url, api_key="sk-test-0123456789ab"))
        (agent.workspace.root / "files").mkdir(parents=True)
        os.mkfifo(agent.workspace.root / "files" / "pipe")
        server.script(Message(calls=[Call("read_file", json.dumps({"path": "pipe"}))]),
                      Message(text="done"))
        result = await agent.arun("read the pipe")
    [record] = result.tool_calls
    assert not record.success and "is a FIFO (named pipe)" in record.error
    assert result.ok and result.reply == "done"
