"""Sync tools run on daemon threads that wait for the next call instead of ending.

Starting a thread per call made the loop wait until the new thread ran (a millisecond or
more on a loaded machine, once per sync tool call; a team's fan-out of 50 makes 50). A
thread whose call has ended is handed the next one; a thread whose tool outlives its
timeout is left behind as before and never handed another call.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from agent_kernel import Agent
from agent_kernel.engine import tool_calls
from agent_kernel.engine.models.llm import ToolCallRequest
from agent_kernel.engine.registry import Tool, ToolContext


def test_a_sync_tool_reuses_a_waiting_thread_but_never_a_stuck_one(tmp_path: Path) -> None:
    ran_on: list[threading.Thread] = []
    release = threading.Event()

    def where(ctx: ToolContext) -> str:
        """Says which thread ran it."""
        ran_on.append(threading.current_thread())
        return "here"

    def stuck(ctx: ToolContext) -> str:
        """Outlives its timeout."""
        ran_on.append(threading.current_thread())
        release.wait(10)
        return "late"

    agent = Agent(workspace=tmp_path, tools=[Tool(where), Tool(stuck, timeout=0.2)],
                  builtin_tools=False)

    async def calls() -> list[tool_calls.ToolCallRecord]:
        made = []
        for number, name in enumerate(["where", "where", "stuck", "where"]):
            made.append(await tool_calls.execute(
                agent, ToolCallRequest(f"c{number}", name, "{}"), "run_threads"))
        return made

    try:
        records = asyncio.run(calls())
        first, second, left, after = ran_on
        assert [r.success for r in records] == [True, True, False, True]
        assert "still running in the background" in (records[2].error or "")
        assert first is second, "a waiting thread was not reused"
        assert left.is_alive() and after is not left, "a stuck thread was handed a call"
        assert all(t.daemon for t in ran_on) and threading.current_thread() not in ran_on
        assert after.name == "agent-tool-where" and left.name == "agent-tool-stuck"
    finally:
        release.set()
