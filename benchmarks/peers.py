"""Beside the peers: agent-kernel, a hand loop on the openai SDK (the floor) and the peers.

Run on purpose, in a venv with the peers (``pip install -e .[bench]``)::

    python benchmarks/peers.py              # 300 rounds, 7-8 minutes on a loaded 2-core VM
    python benchmarks/peers.py --quick      # 30 rounds, 1-2 minutes, to try it

One scripted OpenAI-compatible server on 127.0.0.1 (``peer_server``, in a process of
its own) answers every contender; the contenders run interleaved round by round
(A B C ... A B C ...), so drift and the machine's other work land on all alike.

a. **One tool round trip**: the model asks for ``echo``, gets its result, answers
   (2 model calls, 1 tool). Median and p90 ms, × the floor, model calls a run and the
   bytes of tool schemas each sends a request (counted by the server). Beside the floor,
   the same loop not streamed and the same loop on the SDK's aiohttp client
   (``DefaultAioHttpClient``, the transport agent-kernel's fast path uses).
b. **20 concurrent runs**: the same round trip 20 at once (asyncio.gather; threads for
   smolagents, which is synchronous); runs/s, × the floor's.
c. **A delegated task**: a top agent hands the job to a worker agent, which calls echo,
   and the answer comes back; median ms, × openai-agents' handoff. **Fan-out**: 50 child
   tasks from one top-level request; tasks/s, × the best peer's.

Each framework's own retries are off (``max_retries=0``), tracing and telemetry are off,
and no name but 127.0.0.1 may be looked up: the script refuses any other DNS lookup and
says so at the end. Nothing is asserted: the tables go to docs/performance.md.
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import sys
import tempfile

_HOME = tempfile.mkdtemp(prefix="peers-home-")
atexit.register(shutil.rmtree, _HOME, ignore_errors=True)
os.environ.update({
    "OPENAI_API_KEY": "sk-bench-0123456789abcdef", "OPENAI_AGENTS_DISABLE_TRACING": "1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False",
    "HF_HUB_OFFLINE": "1", "OTEL_SDK_DISABLED": "true", "DO_NOT_TRACK": "1",
    "LOGFIRE_IGNORE_NO_CONFIG": "1", "AGENT_KERNEL_WORKSPACE": _HOME,
    "IPYTHONDIR": os.path.join(_HOME, "ipython"),
    "JUPYTER_CONFIG_DIR": os.path.join(_HOME, "jupyter")})

LOOKUPS: list[str] = []
"""Names anything tried to look up beyond this machine (refused)."""
_getaddrinfo = socket.getaddrinfo


def _local_only(host: object, *args: object, **kwargs: object) -> object:
    name = host.decode() if isinstance(host, bytes) else str(host)
    if name not in ("127.0.0.1", "localhost", "::1", "None"):
        LOOKUPS.append(name)
        raise OSError(f"benchmarks/peers.py: no lookups beyond 127.0.0.1 ({name})")
    return _getaddrinfo(host, *args, **kwargs)  # type: ignore[arg-type]


socket.getaddrinfo = _local_only  # type: ignore[assignment]

import argparse  # noqa: E402
import asyncio  # noqa: E402
import multiprocessing  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Awaitable, Callable, Iterator  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from datetime import datetime, timezone  # noqa: E402
from importlib.metadata import PackageNotFoundError, version  # noqa: E402
from multiprocessing.connection import Connection  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peer_contenders as peers  # noqa: E402
import peer_server  # noqa: E402

CONCURRENT = 20
FANOUT = 50
LIBRARIES = ("openai", "openai-agents", "pydantic-ai-slim", "smolagents", "litellm", "httpx",
             "httpx2", "agent-kernel")


def percentile(values: list[float], share: float) -> float:
    """The ``share`` quantile (0-1) by nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


@contextmanager
def server_process() -> Iterator[tuple[str, Connection]]:
    """The scripted server in its own process: its base URL and the pipe to ask its counts."""
    context = multiprocessing.get_context("spawn")
    mine, theirs = context.Pipe()
    process = context.Process(target=peer_server.serve, args=(theirs,), daemon=True)
    process.start()
    port = mine.recv()
    try:
        yield f"http://127.0.0.1:{port}/v1", mine
    finally:
        mine.send("stop")
        process.join(5)


def quiet() -> None:
    """Tracing, telemetry and chatty logs off in every framework."""
    import logging

    import litellm
    from agents import set_tracing_disabled

    set_tracing_disabled(True)
    litellm.telemetry = False
    litellm.suppress_debug_info = True
    for name in ("LiteLLM", "litellm", "httpx", "openai", "smolagents", "agents"):
        logging.getLogger(name).setLevel(logging.ERROR)


async def interleaved(runs: list[tuple[str, Callable[[], Awaitable[None]]]], rounds: int,
                      warmup: int) -> dict[str, list[float]]:
    """Seconds of each run, round by round in the same order (A B C ... A B C ...)."""
    times: dict[str, list[float]] = {name: [] for name, _ in runs}
    for index in range(warmup + rounds):
        for name, run in runs:
            started = time.perf_counter()
            await run()
            if index >= warmup:
                times[name].append(time.perf_counter() - started)
    return times


def ms_row(values: list[float]) -> tuple[float, float]:
    return statistics.median(values) * 1000, percentile(values, 0.9) * 1000


async def round_trips(base_url: str, counts: Connection, folder: Path, rounds: int,
                      batches: int, warmup: int) -> list[str]:
    """Parts a and b."""
    contenders = peers.round_trip_contenders(base_url, folder)
    _counted(counts)
    times = await interleaved([(c.family, c.run) for c in contenders], rounds, warmup)
    sent = _counted(counts)
    floor = statistics.median(times["floor"])
    plain = statistics.median(times["floorjson"])
    out = ["| one tool round trip (2 model calls + 1 tool) | calls the model | median ms | "
           "p90 ms | × floor | × not-streamed loop | requests a run | tools a request | "
           "tool schema bytes a request |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for c in contenders:
        median, p90 = ms_row(times[c.family])
        row = sent.get(c.family, {"requests": 0, "tool_bytes": 0, "tools": 0})
        requests = max(1, row["requests"])
        label = f"**{c.name}** (the floor)" if c.family == "floor" else c.name
        call = ("streamed" if row.get("streamed") == row["requests"] else
                "not streamed" if not row.get("streamed") else "partly streamed")
        out.append(f"| {label} | {call} | {median:.1f} | {p90:.1f} | "
                   f"{median / (floor * 1000):.2f} | {median / (plain * 1000):.2f} | "
                   f"{row['requests'] / (rounds + warmup):.1f} | "
                   f"{row['tools'] / requests:.0f} | {row['tool_bytes'] / requests:,.0f} |")
    out += ["", f"| {CONCURRENT} concurrent runs of the round trip | how | median runs/s | "
            "slowest batch runs/s | × floor's throughput | × not-streamed loop's |",
            "|---|---|---:|---:|---:|---:|"]
    batch_times = await interleaved(
        [(c.family, _batch(c)) for c in contenders], batches, min(warmup, 1))
    best = CONCURRENT / statistics.median(batch_times["floor"])
    unstreamed = CONCURRENT / statistics.median(batch_times["floorjson"])
    for c in contenders:
        rate = CONCURRENT / statistics.median(batch_times[c.family])
        worst = CONCURRENT / max(batch_times[c.family])
        how = "threads, an agent each" if c.family == "sm" else "asyncio.gather"
        if c.family.startswith("ak"):
            how += ", `arun(isolated=True)` on one agent"
        out.append(f"| {c.name} | {how} | {rate:.0f} | {worst:.0f} | {rate / best:.2f} | "
                   f"{rate / unstreamed:.2f} |")
    return out


def _batch(contender: peers.Contender) -> Callable[[], Awaitable[None]]:
    async def run() -> None:
        await contender.batch(CONCURRENT)
    return run


def _counted(counts: Connection) -> dict[str, dict[str, int]]:
    """The server's counts since it was last asked."""
    counts.send("counts")
    answer: dict[str, dict[str, int]] = counts.recv()
    return answer


async def delegations(base_url: str, counts: Connection, folder: Path, rounds: int,
                      fanouts: int, warmup: int) -> list[str]:
    """Part c: the delegated task, then the fan-out of 50."""
    teams = peers.delegation_contenders(base_url, folder)
    _counted(counts)
    times = await interleaved([(d.name, _once(d, 1)) for d in teams], rounds, warmup)
    sent = _counted(counts)
    handoff = statistics.median(times[teams[0].name])
    out = ["| a delegated task (top → worker → echo → answer back) | model calls a task | "
           "median ms | p90 ms | × openai-agents handoff |", "|---|---|---:|---:|---:|"]
    for d in teams:
        median, p90 = ms_row(times[d.name])
        calls = sent.get(d.family, {}).get("requests", 0) / (rounds + warmup)
        out.append(f"| {d.name} | {calls:.1f} ({d.calls}) | {median:.1f} | {p90:.1f} | "
                   f"{median / (handoff * 1000):.2f} |")
    wide = [d for d in teams if d.family != "oa-h"] + [peers.sm_managed(base_url, 1),
                                                       peers.ak_team(base_url, folder, FANOUT)]
    fanned = min(warmup, 1) + fanouts
    times = await interleaved([(d.name, _once(d, FANOUT)) for d in wide], fanouts,
                              min(warmup, 1))
    sent = _counted(counts)
    rates = {d.name: FANOUT / statistics.median(times[d.name]) for d in wide}
    made = {d.name: sent.get(d.family, {}).get("requests", 0) / fanned for d in wide}
    due = {d.name: d.overhead + 2 * FANOUT for d in wide}
    # A run that made fewer model calls than its children need did not do the same work
    # (smolagents' default pool runs one managed agent from several threads at once).
    best = max(rates[d.name] for d in wide
               if not d.family.startswith("ak-") and made[d.name] >= due[d.name])
    out += ["", f"| fan-out: {FANOUT} child tasks (each: worker → echo → answer) from one "
            "request | model calls a fan-out | tasks/s (median) | slowest round tasks/s | "
            "× best peer |", "|---|---:|---:|---:|---:|"]
    for d in wide:
        worst = FANOUT / max(times[d.name])
        short = "" if made[d.name] >= due[d.name] else f", **{due[d.name]} due: wrong**"
        out.append(f"| {d.name} | {made[d.name]:.1f}{short} | {rates[d.name]:.1f} | "
                   f"{worst:.1f} | {rates[d.name] / best:.2f} |")
    out.append("| openai-agents, handoff | — | — (a handoff passes the run to one agent) | | |")
    return out


def _once(d: peers.Delegation, fanout: int) -> Callable[[], Awaitable[None]]:
    async def run() -> None:
        await d.run(fanout)
    return run


async def measure(args: argparse.Namespace, base_url: str, counts: Connection,
                  folder: Path) -> list[str]:
    """The parts asked for, on one event loop; the clients closed on it at the end."""
    lines: list[str] = []
    try:
        if "a" not in args.skip:
            lines += await round_trips(base_url, counts, folder, args.rounds, args.batches,
                                       args.warmup) + [""]
        if "c" not in args.skip:
            lines += await delegations(base_url, counts, folder, args.delegations,
                                       args.fanouts, args.warmup) + [""]
    finally:
        await peers.close_clients()
    return lines


def header(args: argparse.Namespace, load: str) -> list[str]:
    uname = platform.uname()
    libraries = ", ".join(f"{name} {_version(name)}" for name in LIBRARIES)
    return [f"benchmarks/peers.py, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC: "
            f"{args.rounds} rounds (round trips), {args.batches} batches of {CONCURRENT}, "
            f"{args.delegations} delegated tasks, {args.fanouts} fan-outs of {FANOUT}, "
            f"interleaved; {args.warmup} warm-up rounds not counted.",
            f"Machine: {uname.system} {uname.release} {uname.machine}, "
            f"{os.cpu_count()} CPUs, Python {platform.python_version()} "
            f"({platform.python_implementation()}); load average at start {load}.",
            f"Libraries: {libraries}.", ""]


def _version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    """Run parts a, b and c and print their tables as Markdown."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300, help="timed round trips of each")
    parser.add_argument("--quick", action="store_true", help="30 rounds: to try it")
    parser.add_argument("--batches", type=int, help=f"batches of {CONCURRENT} (rounds / 10)")
    parser.add_argument("--delegations", type=int, help="delegated tasks (rounds / 3)")
    parser.add_argument("--fanouts", type=int, help=f"fan-outs of {FANOUT} (rounds / 30)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed rounds first")
    parser.add_argument("--skip", default="", help="parts to leave out: a, c (a includes b)")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds = 30
    args.batches = args.batches or max(3, args.rounds // 10)
    args.delegations = args.delegations or max(5, args.rounds // 3)
    args.fanouts = args.fanouts or max(3, args.rounds // 30)
    load = loadavg()
    quiet()
    lines = header(args, load)
    folder = Path(tempfile.mkdtemp(prefix="peers-", dir=_HOME))
    with server_process() as (base_url, counts):
        lines += asyncio.run(measure(args, base_url, counts, folder))
    lines.append(f"Load average at end: {loadavg()}. Lookups beyond 127.0.0.1: "
                 + (", ".join(sorted(set(LOOKUPS))) + " (refused)" if LOOKUPS else "none") + ".")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
