"""The contenders of ``benchmarks/peers.py``: each framework doing the same work its own way.

Every contender answers one scripted server (``peer_server``), and names itself in the
request's ``model`` (``family.role``) so the server knows who asks and counts the bytes
of tool schemas each family sends. A contender is built once, as a program would build
its agent, and then run many times; each run checks its answer, so a framework that
stopped early or looped is an error, not a fast figure.

The frameworks are imported here only, by ``benchmarks/peers.py``, in a venv
that has them (``pip install -e .[bench]``): agent-kernel itself never imports them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from peer_server import TOP_DONE, WORKER_DONE

PROMPT = "echo the token, then say you are done"
TEAM_PROMPT = "get the job done"
API_KEY = "sk-bench-0123456789abcdef"
ECHO_SCHEMA = {"type": "function", "function": {
    "name": "echo", "description": "Echo a string back; useful for debugging.",
    "parameters": {"type": "object", "properties": {
        "value": {"type": "string", "description": "The text to echo."}},
        "required": ["value"]}}}


CLIENTS: list[Any] = []
"""Every openai client made here, closed by :func:`close_clients` while the loop still runs."""


def openai_client(base_url: str, aiohttp: bool = False) -> Any:
    """An ``AsyncOpenAI`` at the server with its retries off (``aiohttp``: on the SDK's
    ``DefaultAioHttpClient``, the transport agent-kernel's fast path uses)."""
    from openai import AsyncOpenAI, DefaultAioHttpClient

    client = AsyncOpenAI(base_url=base_url, api_key=API_KEY, max_retries=0,
                         http_client=DefaultAioHttpClient() if aiohttp else None)
    CLIENTS.append(client)
    return client


async def close_clients() -> None:
    """Close the clients on the loop that used them (left to ``__del__``, they complain)."""
    await asyncio.gather(*(client.close() for client in CLIENTS))
    CLIENTS.clear()


def echo(value: str) -> str:
    """Echo a string back; useful for debugging.

    Args:
        value: The text to echo.
    """
    return value


def check(answer: object, needle: str, who: str) -> None:
    """Raise unless ``answer`` says ``needle`` (the run reached its scripted end)."""
    if needle not in str(answer):
        raise RuntimeError(f"{who}: unexpected answer {str(answer)[:300]!r}")


Run = Callable[[], Awaitable[None]]


@dataclass
class Contender:
    """One framework's way of doing the work.

    ``run`` does it once; ``batch(n)`` does it ``n`` times at once (asyncio.gather, or
    threads for a synchronous framework, each thread with its own agent).
    """

    name: str
    family: str
    run: Run
    batch: Callable[[int], Awaitable[None]]


def gathered(run: Run) -> Callable[[int], Awaitable[None]]:
    async def batch(n: int) -> None:
        await asyncio.gather(*(run() for _ in range(n)))
    return batch


def threaded(make: Callable[[], Callable[[], None]]) -> Callable[[int], Awaitable[None]]:
    """``n`` runs in ``n`` threads, each on an agent of its own (made once, kept)."""
    made: list[Callable[[], None]] = []
    pool: list[ThreadPoolExecutor] = []

    async def batch(n: int) -> None:
        while len(made) < n:
            made.append(make())
        if not pool:
            pool.append(ThreadPoolExecutor(n, thread_name_prefix="peer"))
        loop = asyncio.get_running_loop()
        await asyncio.gather(*(loop.run_in_executor(pool[0], made[i]) for i in range(n)))
    return batch


def blocking(make: Callable[[], Callable[[], None]]) -> Run:
    """One sequential run of a synchronous framework, in the timing loop's own thread."""
    sync = make()

    async def run() -> None:
        sync()
    return run


# -- the hand loops: the openai SDK (the floor) and raw litellm ----------------------------

async def _turn(stream: Any) -> tuple[str, dict[int, dict[str, str]]]:
    """Text and tool calls of one streamed answer (openai's and litellm's chunks alike)."""
    text = ""
    calls: dict[int, dict[str, str]] = {}
    async for chunk in stream:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        text += delta.content or ""
        for part in delta.tool_calls or []:
            slot = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
            slot["id"] = part.id or slot["id"]
            if part.function is not None:
                slot["name"] += part.function.name or ""
                slot["arguments"] += part.function.arguments or ""
    return text, calls


async def hand_loop(create: Callable[..., Awaitable[Any]], model: str, stream: bool) -> str:
    """The loop anyone writes by hand: call, run the tools asked for, call again."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
    for _ in range(4):
        response = await create(model=model, messages=messages, tools=[ECHO_SCHEMA],
                                stream=stream)
        if stream:
            text, calls = await _turn(response)
        else:
            message = response.choices[0].message
            text = message.content or ""
            calls = {i: {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                     for i, c in enumerate(message.tool_calls or [])}
        if not calls:
            return text
        messages.append({"role": "assistant", "content": text or None, "tool_calls": [
            {"id": c["id"], "type": "function",
             "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls.values()]})
        messages += [{"role": "tool", "tool_call_id": c["id"],
                      "content": echo(**json.loads(c["arguments"]))} for c in calls.values()]
    raise RuntimeError("the hand loop did not end")


def openai_loop(base_url: str, family: str, stream: bool, aiohttp: bool = False) -> Contender:
    client = openai_client(base_url, aiohttp)

    async def run() -> None:
        check(await hand_loop(client.chat.completions.create, f"{family}.solo", stream),
              WORKER_DONE, family)
    label = ("hand loop on the openai SDK" + ("" if stream else ", not streamed")
             + (", aiohttp client (`DefaultAioHttpClient`)" if aiohttp else ""))
    return Contender(label, family, run, gathered(run))


def litellm_loop(base_url: str) -> Contender:
    import litellm

    async def create(**kwargs: Any) -> Any:
        kwargs["model"] = "openai/" + kwargs["model"]
        return await litellm.acompletion(api_base=base_url, api_key=API_KEY, num_retries=0,
                                         **kwargs)

    async def run() -> None:
        check(await hand_loop(create, "litellm.solo", True), WORKER_DONE, "litellm")
    return Contender("raw litellm loop (`litellm.acompletion`)", "litellm", run,
                     gathered(run))


# -- the peers ------------------------------------------------------------------------------

def _oa_model(client: Any, name: str) -> Any:
    from agents import OpenAIChatCompletionsModel

    return OpenAIChatCompletionsModel(model=name, openai_client=client)


def openai_agents(base_url: str) -> Contender:
    from agents import Agent, Runner, function_tool
    client = openai_client(base_url)
    agent = Agent(name="solo", instructions="You are a helpful assistant.",
                  model=_oa_model(client, "oa.solo"), tools=[function_tool(echo)])

    async def run() -> None:
        check((await Runner.run(agent, PROMPT)).final_output, WORKER_DONE, "openai-agents")
    return Contender("openai-agents (`Runner.run`)", "oa", run, gathered(run))


def _pa_model(client: Any, name: str) -> Any:
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    return OpenAIChatModel(name, provider=OpenAIProvider(openai_client=client))


def pydantic_ai(base_url: str) -> Contender:
    from pydantic_ai import Agent

    client = openai_client(base_url)
    agent = Agent(_pa_model(client, "pa.solo"), tools=[echo],
                  instructions="You are a helpful assistant.")

    async def run() -> None:
        check((await agent.run(PROMPT)).output, WORKER_DONE, "pydantic-ai")
    return Contender("pydantic-ai (`Agent.run`)", "pa", run, gathered(run))


def _sm_model(base_url: str, name: str) -> Any:
    from smolagents import OpenAIServerModel

    return OpenAIServerModel(model_id=name, api_base=base_url, api_key=API_KEY,
                             client_kwargs={"max_retries": 0})


def _sm_echo() -> Any:
    from smolagents import tool

    @tool
    def echo(value: str) -> str:
        """Echo a string back; useful for debugging.

        Args:
            value: The text to echo.
        """
        return value
    return echo


def smolagents(base_url: str) -> Contender:
    from smolagents import LogLevel, ToolCallingAgent

    def make() -> Callable[[], None]:
        agent = ToolCallingAgent(tools=[_sm_echo()], model=_sm_model(base_url, "sm.solo"),
                                 verbosity_level=LogLevel.OFF, max_steps=4)

        def run() -> None:
            check(agent.run(PROMPT), WORKER_DONE, "smolagents")
        return run
    return Contender("smolagents (`ToolCallingAgent`, `OpenAIServerModel`)", "sm",
                     blocking(make), threaded(make))


# -- agent-kernel -----------------------------------------------------------------------------

def _ak_settings(base_url: str, family: str) -> Any:
    """Each contender with a key of its own: agent-kernel keeps one connection pool per
    base URL and key in a process (``fast_path.client``), and each peer contender has a
    client of its own, so ours get a pool each too. Shared, a Team of four Workers paid
    for the idle connections the 50-Worker Team left (httpcore probes every idle
    connection each time it hands one out: ~6,300 probes, ~35 ms, a fan-out)."""
    from agent_kernel import Settings

    return Settings(api_base=base_url, api_key=f"{API_KEY}-{family}", max_retries=0,
                    max_tool_calls=1000)


def agent_kernel(base_url: str, default_tools: bool, folder: Path) -> Contender:
    """``engine.Agent`` with echo alone, or ``app.Agent`` with its default tools (``%agent``)."""
    family = "akd" if default_tools else "ak1"
    if default_tools:
        from agent_kernel.app import Agent

        agent: Any = Agent(model=f"openai/{family}.solo", workspace=folder / family,
                           settings=_ak_settings(base_url, family))
    else:
        from agent_kernel.engine.agent import Agent as EngineAgent
        from agent_kernel.tools.core import echo as ak_echo

        agent = EngineAgent(model=f"openai/{family}.solo", workspace=folder / family,
                            tools=[ak_echo], settings=_ak_settings(base_url, family))

    async def run() -> None:
        result = await agent.arun(PROMPT, new=True)
        check(result.reply if result.ok else result, WORKER_DONE, family)

    async def isolated() -> None:
        result = await agent.arun(PROMPT, isolated=True)
        check(result.reply if result.ok else result, WORKER_DONE, family)
    label = ("agent-kernel, default tools (`app.Agent`, as `%agent`)" if default_tools
             else "agent-kernel, one tool (`engine.Agent` + echo)")
    return Contender(label, family, run, gathered(isolated))


def round_trip_contenders(base_url: str, folder: Path) -> list[Contender]:
    """Part a and b: one agent, one tool, one round trip."""
    return [openai_loop(base_url, "floor", True), openai_loop(base_url, "floorjson", False),
            openai_loop(base_url, "flooraio", True, aiohttp=True), openai_agents(base_url),
            smolagents(base_url), pydantic_ai(base_url),
            litellm_loop(base_url), agent_kernel(base_url, False, folder),
            agent_kernel(base_url, True, folder)]


# -- delegation: a top agent hands the job to a worker, which calls echo -------------------

@dataclass
class Delegation:
    """One framework's delegated task; ``run(fanout)`` with fanout > 1 hands out that many."""

    name: str
    family: str
    calls: str
    """Who makes the model calls of one delegated task."""
    run: Callable[[int], Awaitable[None]]
    overhead: int = 2
    """Model calls of a fan-out besides its children's two each (the top agent's)."""


def _prompt(fanout: int) -> str:
    return (f"FANOUT={fanout} " if fanout > 1 else "") + TEAM_PROMPT


def oa_handoff(base_url: str) -> Delegation:
    from agents import Agent, Runner, function_tool
    client = openai_client(base_url)
    worker = Agent(name="worker", instructions="You do the job.",
                   model=_oa_model(client, "oa-h.worker"), tools=[function_tool(echo)])
    top = Agent(name="top", instructions="Hand the job to the worker.",
                model=_oa_model(client, "oa-h.top"), handoffs=[worker])

    async def run(fanout: int) -> None:
        if fanout > 1:
            raise NotImplementedError("a handoff hands the run to one agent")
        check((await Runner.run(top, _prompt(fanout))).final_output, WORKER_DONE, "oa-h")
    return Delegation("openai-agents, handoff", "oa-h", "top 1, worker 2", run)


def oa_as_tool(base_url: str) -> Delegation:
    from agents import Agent, Runner, function_tool
    client = openai_client(base_url)
    worker = Agent(name="worker", instructions="You do the job.",
                   model=_oa_model(client, "oa-t.worker"), tools=[function_tool(echo)])
    top = Agent(name="top", instructions="Hand the job to the worker.",
                model=_oa_model(client, "oa-t.top"),
                tools=[worker.as_tool(tool_name="worker", tool_description="Does a job.")])

    async def run(fanout: int) -> None:
        check((await Runner.run(top, _prompt(fanout))).final_output, TOP_DONE, "oa-t")
    return Delegation("openai-agents, agents as tools", "oa-t", "top 2, worker 2", run)


def sm_managed(base_url: str, threads: int | None = None) -> Delegation:
    """``threads``: the manager's ``max_tool_threads`` (None: smolagents' default pool)."""
    from smolagents import LogLevel, ToolCallingAgent

    family = "sm-m" if threads is None else f"sm-m{threads}"

    worker = ToolCallingAgent(tools=[_sm_echo()], model=_sm_model(base_url, f"{family}.worker"),
                              name="worker", description="Does a job.",
                              verbosity_level=LogLevel.OFF, max_steps=4)
    top = ToolCallingAgent(tools=[], model=_sm_model(base_url, f"{family}.top"),
                           managed_agents=[worker], verbosity_level=LogLevel.OFF,
                           max_steps=4, max_tool_threads=threads)

    async def run(fanout: int) -> None:
        check(top.run(_prompt(fanout)), TOP_DONE, family)
    label = "smolagents, managed agent" + ("" if threads is None else
                                            f" (max_tool_threads={threads})")
    return Delegation(label, family, "top 2, worker 2", run)


def pa_delegation(base_url: str) -> Delegation:
    from pydantic_ai import Agent

    client = openai_client(base_url)
    worker = Agent(_pa_model(client, "pa-d.worker"), tools=[echo],
                   instructions="You do the job.")
    top = Agent(_pa_model(client, "pa-d.top"), instructions="Hand the job to the worker.")

    @top.tool_plain
    async def delegate(task: str) -> str:
        """Hand a job to the worker agent and return its answer.

        Args:
            task: The job.
        """
        return (await worker.run(task)).output

    async def run(fanout: int) -> None:
        check((await top.run(_prompt(fanout))).output, TOP_DONE, "pa-d")
    return Delegation("pydantic-ai, agent delegation (an agent called from a tool)", "pa-d",
                      "top 2, worker 2", run)


def ak_team(base_url: str, folder: Path, max_workers: int, stream: bool = True) -> Delegation:
    """agent-kernel's Team: Teller → Planner → Worker (echo) → results back to the Teller.
    Streamed, as ``%agent --team`` runs (each turn's text shown as it comes); ``stream``
    False: each model call answered whole, as every peer's delegation here runs
    (``Runner.run``, ``Agent.run``, smolagents' ``run``)."""
    from agent_kernel.team import Team, TeamLimits

    family = ("ak-team" if max_workers == 4 else f"ak-team{max_workers}") + (
        "" if stream else "-whole")
    settings = _ak_settings(base_url, family)
    settings.stream = stream
    team = Team(model=f"openai/{family}.team", workspace=folder / family, settings=settings,
                limits=TeamLimits(max_workers=max_workers, max_delegations=100))

    async def run(fanout: int) -> None:
        # Each request from a fresh Teller conversation (`%agent --team --new`), as every peer
        # answers it (a run of its own, no history): kept, the Teller would send back every
        # earlier fan-out's 50 results with each call, ~11 KB more a round (230 KB by the
        # 30th), which is not the work the peers are asked to do.
        team.teller.new_conversation()
        result = await team.arun(_prompt(fanout))
        done = [t for t in result.tasks() if t["role"] == "worker" and t["status"] == "ok"]
        if not result.ok or len(done) != fanout:
            raise RuntimeError(f"ak-team: {result.status}, {len(done)} of {fanout} workers ok: "
                               f"{result.error or result.reply}")
        check(result.reply, TOP_DONE, "ak-team")
    return Delegation(f"agent-kernel Team (Teller → Planner → Worker, max_workers={max_workers}"
                      f"{'' if stream else ', not streamed, as the peers run'})",
                      family, "Teller 2, Planner 1, Worker 2", run, overhead=3)


def delegation_contenders(base_url: str, folder: Path) -> list[Delegation]:
    """Part c: the same delegated task in each framework's own way."""
    return [oa_handoff(base_url), oa_as_tool(base_url), sm_managed(base_url),
            pa_delegation(base_url), ak_team(base_url, folder, 4),
            ak_team(base_url, folder, 4, stream=False)]

