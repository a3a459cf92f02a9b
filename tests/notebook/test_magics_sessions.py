"""Two IPython shells in one process, each with ``%load_ext agent_kernel``: each has its own
magics (``current(shell)``), its own ``@tool`` functions and its own background runs.
In-process: no kernel is started."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

import agent_kernel
from agent_kernel.engine.user_tools import UserTools, session_tools
from agent_kernel.notebook import magics as m


@pytest.fixture
def two_shells(tmp_path: Path) -> Iterator[tuple[m.AgentMagics, m.AgentMagics]]:
    shells = []
    for name in ("a", "b"):
        shell = InteractiveShell()
        with session_tools(UserTools()):
            m.load_ipython_extension(shell)
        m.current(shell).workspace = str(tmp_path / name)
        shells.append(shell)
    yield m.current(shells[0]), m.current(shells[1])
    for shell in shells:
        m.unload_ipython_extension(shell)


def test_each_shell_has_its_own_magics_and_tools(two_shells) -> None:
    first, second = two_shells
    assert first is not second and first.user_tools is not second.user_tools
    with session_tools(first.user_tools):
        @agent_kernel.tool
        def magics_first_only(words: str) -> str:
            """Only the first shell's agent has it."""
            return words

    assert "magics_first_only" in first.agent.registry
    assert "magics_first_only" not in second.agent.registry


def test_each_shell_waits_for_its_own_runs(two_shells) -> None:
    first, second = two_shells

    async def scenario() -> tuple[list[object], list[object], bool]:
        release = asyncio.Event()

        async def run() -> str:
            await release.wait()
            return "first's run"

        task = asyncio.get_running_loop().create_task(run())
        first.track(task)
        others = await second.wait_all(timeout=5)  # returns at once: none of its own
        still = not task.done()
        release.set()
        mine = await first.wait_all(timeout=5)
        return others, mine, still

    others, mine, still = asyncio.run(scenario())
    assert others == [] and still
    assert mine == ["first's run"] and not first.tasks and not second.tasks


def test_unloading_one_shell_leaves_the_other(two_shells) -> None:
    first, second = two_shells
    shell = first.shell
    m.unload_ipython_extension(shell)
    with pytest.raises(RuntimeError, match="not loaded"):
        m.current(shell)
    assert m.current(second.shell) is second
    m.load_ipython_extension(shell)  # the fixture unloads it again


def test_each_shell_wires_its_own_schedulers(two_shells, tmp_path: Path) -> None:
    """A scheduler made for a shell's agent reads that shell's namespace, whichever shell
    loaded the extension last; an agent of no notebook session gets no namespace."""
    from agent_kernel import Agent
    from agent_kernel.triggers import scheduler_for
    from agent_kernel.triggers.conditions import Condition, ConditionWatch

    first, second = two_shells
    first.shell.user_ns["rows_only_in_first"] = [1, 2, 3, 4]
    condition = {"kind": "expression", "expression": "len(rows_only_in_first) > 3"}

    schedulers = [scheduler_for(first.agent), scheduler_for(second.agent)]
    assert schedulers[0].namespace is first.shell.user_ns
    assert schedulers[1].namespace is second.shell.user_ns
    seen = []
    for scheduler in schedulers:
        watch = ConditionWatch(Condition.parse(condition))
        seen.append((watch.check(scheduler.namespace), watch.last_error))
    assert seen[0] == (True, None)
    assert seen[1][0] is False and "rows_only_in_first" in str(seen[1][1])
    for scheduler in schedulers:  # each shows its new triggers in its own shell's cell
        assert sum(getattr(h, "_agent_kernel_card", False) for h in scheduler.on_created) == 1

    loose = Agent(workspace=tmp_path / "script", user_tools=UserTools())
    assert scheduler_for(loose).namespace is None and not scheduler_for(loose).on_created
