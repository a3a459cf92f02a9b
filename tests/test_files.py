"""read_file, write_file and bash: confined to the workspace, with spec 003's guards."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from agent_kernel import Agent
from agent_kernel.tools import files
from agent_kernel.tools.base import ToolArgumentError, ToolContext


@pytest.fixture
def agent(tmp_path: Path) -> Agent:
    return Agent(workspace=tmp_path / "ws")


@pytest.fixture
def limits(monkeypatch: pytest.MonkeyPatch) -> files.FileToolLimits:
    fresh = files.FileToolLimits()
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
    (agent.workspace.root / "state").mkdir()
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


async def test_bash_refuses_denied_paths(agent: Agent) -> None:
    with pytest.raises(PermissionError, match="denied path"):
        await call(agent, "bash", cmd="cat ../ledger.jsonl")


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
