"""A delegated team task's critical path, call by call, beside openai-agents' handoff.

One delegated task (``benchmarks/peers.py``'s: Teller → Planner → Worker → echo → the
result back to the Teller) makes five model calls one after another: Teller 1 (delegate;
delegations alone end its run), Planner 1 (the same), Worker 2 (echo, then its answer),
Teller 1 (the answer from the results). openai-agents' handoff makes three. This script
times each of our calls where the model is called (``LitellmModel.complete``: the
request, the stream read to its end) and the kernel's time between them on the critical
path, and runs the handoff interleaved with it on the same scripted server (in its own
process), so the floor that spec 000's routing sets can be read beside both:

    floor = 5 calls at our measured cost a call + nothing between them

    python benchmarks/team_path.py --rounds 100     # needs the bench extra (openai-agents)

Prints Markdown: the date, the machine, its load, and the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peer_contenders as peers  # noqa: E402
from peers import header, interleaved, loadavg, quiet, server_process  # noqa: E402

CALLS: list[tuple[str, float, float]] = []
"""(role, start, end) of every model call of the team, in ``perf_counter`` seconds."""


def instrument() -> None:
    """Time every call of agent-kernel's model seam (the fast path and litellm alike)."""
    from agent_kernel.engine.models.llm import LitellmModel

    real = LitellmModel.complete

    async def timed(self: LitellmModel, *args: Any, role: str | None = None,
                    **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await real(self, *args, role=role, **kwargs)
        finally:
            CALLS.append((role or "?", started, time.perf_counter()))

    LitellmModel.complete = timed  # type: ignore[method-assign]


def path_of(calls: list[tuple[str, float, float]], started: float, ended: float
            ) -> dict[str, float] | None:
    """One task's critical path in ms: each call's time and the kernel's time before it."""
    teller = [c for c in calls if c[0] == "teller"]
    planner = [c for c in calls if c[0] == "planner"]
    worker = [c for c in calls if c[0] == "worker"]
    if len(planner) != 1 or len(worker) != 2 or len(teller) < 2:
        return None
    chain = [("Teller 1", teller[0]), ("Planner", planner[0]), ("Worker 1", worker[0]),
             ("Worker 2", worker[1]), ("Teller last", teller[-1])]
    out: dict[str, float] = {}
    previous = started
    for name, (_, begin, end) in chain:
        out[f"before {name}"] = (begin - previous) * 1000
        out[name] = (end - begin) * 1000
        previous = end
    out["after Teller last"] = (ended - previous) * 1000
    out["total"] = (ended - started) * 1000
    out["calls"] = sum(out[name] for name, _ in chain)
    out["between"] = out["total"] - out["calls"]
    return out


async def measure(base_url: str, rounds: int, warmup: int) -> list[str]:
    folder = Path(tempfile.mkdtemp(prefix="team-path-"))
    team = peers.ak_team(base_url, folder, 4)
    handoff = peers.oa_handoff(base_url)
    paths: list[dict[str, float]] = []

    async def ours() -> None:
        CALLS.clear()
        started = time.perf_counter()
        await team.run(1)
        made = path_of(sorted(CALLS, key=lambda c: c[1]), started, time.perf_counter())
        if made is not None:
            paths.append(made)

    async def theirs() -> None:
        await handoff.run(1)

    try:
        times = await interleaved([("handoff", theirs), ("team", ours)], rounds, warmup)
    finally:
        await peers.close_clients()
    paths = paths[warmup:]
    med = {key: statistics.median(p[key] for p in paths) for key in paths[0]}
    hand = statistics.median(times["handoff"]) * 1000
    team_ms = statistics.median(times["team"]) * 1000
    per_call = med["calls"] / 5
    lines = [f"| a delegated task, {len(paths)} of {rounds} timed (medians, ms) | ms |",
             "|---|---:|"]
    for key in ("before Teller 1", "Teller 1", "before Planner", "Planner", "before Worker 1",
                "Worker 1", "before Worker 2", "Worker 2", "before Teller last",
                "Teller last", "after Teller last"):
        lines.append(f"| {key} | {med[key]:.2f} |")
    lines += [f"| the 5 calls | {med['calls']:.1f} |",
              f"| the kernel between them (team, tools, records) | {med['between']:.1f} |",
              f"| **the task (median of its own total)** | **{med['total']:.1f}** |", "",
              "| figure | ms | × handoff |", "|---|---:|---:|",
              f"| openai-agents handoff (3 calls) | {hand:.1f} | 1.00 |",
              f"| agent-kernel Team, delegated task | {team_ms:.1f} | {team_ms / hand:.2f} |",
              f"| spec 000's floor: 5 calls at the handoff's cost a call, nothing between | "
              f"{hand * 5 / 3:.1f} | {5 / 3:.2f} |",
              f"| 5 calls at our cost a call ({per_call:.1f} ms), nothing between | "
              f"{med['calls']:.1f} | {med['calls'] / hand:.2f} |"]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=100, help="timed delegated tasks")
    parser.add_argument("--warmup", type=int, default=5, help="untimed rounds first")
    args = parser.parse_args(argv)
    load = loadavg()
    quiet()
    instrument()
    header_args = argparse.Namespace(rounds=0, batches=0, delegations=args.rounds, fanouts=0,
                                     warmup=args.warmup)
    lines = header(header_args, load)[1:]
    with server_process() as (base_url, _counts):
        lines += asyncio.run(measure(base_url, args.rounds, args.warmup))
    lines.append(f"\nLoad average at end: {loadavg()}.")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
