"""Benchmark: a team's Worker tasks in the kernel and on a Dask LocalCluster.

The team is the real one (supervisor, queues, ledger, the channel of docs/scale.md);
the model is an in-process function (what is measured is the place the Workers run,
not a provider): the Teller delegates once, the Planner delegates N tasks in one
response, each Worker makes one tool call and answers. Two figures:

1. **Cost per remote hop.** N Worker tasks one after another (``max_workers=1``), each
   a trivial tool call (``echo``): in-process against a LocalCluster of one worker
   process. ``(remote - in-process) / N`` is what running a Worker task on the cluster
   adds: the Dask task, rebuilding the agent, and each model call and ledger record
   going to the kernel and back (two model calls and three records a task here).
2. **Throughput of CPU-bound Workers.** N tasks, each one ``burn`` call of ``--ms``
   milliseconds of pure Python (``bench_cluster_tools.burn``, run where the Worker
   runs), ``max_workers=4``: in-process, and on LocalClusters of 1 and 2 single-threaded
   worker processes.

3. **The rates 100 workers would meet** (``--rates``), for docs/scale.md's paper
   estimate: one round trip of the channel (a ``queue_put`` and a ``queue_get`` on the
   scheduler, as each model call, budget check and ledger record of a remote Worker
   makes), one at a time and 100 at once (the scheduler's queue operations a second);
   and the kernel's ledger, one record at a time and 100 appenders at once (group
   commit: records a second). The object store's commit rate is
   ``memory_object_store.py``'s.

Run: ``python benchmarks/cluster.py [--hops 40] [--rounds 1] [--tasks 200] [--ms 50]
[--json]`` (``--tasks 0``: the hops alone; ``--rounds N``: the hops N times, in-process and
remote in turn, each round's figure and the median), or
``python benchmarks/cluster.py --rates [--trips 400]``.
Nothing is asserted; the figures go to docs/scale.md (only ratios measured in one run
compare on a shared machine).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_cluster_tools import burn  # noqa: E402

from agent_kernel import Settings  # noqa: E402
from agent_kernel.engine.models import FunctionModel, ModelRequest, ModelTurn  # noqa: E402
from agent_kernel.engine.models.base import ToolCallRequest  # noqa: E402
from agent_kernel.team import Team, TeamLimits  # noqa: E402


def script(tasks: int, step: tuple[str, str]) -> FunctionModel:
    """Teller → Planner (``tasks`` delegations) → Workers (one ``step`` call each)."""
    name, arguments = step

    def answer(request: ModelRequest) -> ModelTurn:
        said = str(request.last.get("content") or "")
        if request.role == "teller":
            if request.last["role"] == "user" and "has ended" not in said:
                return ModelTurn(tool_calls=[ToolCallRequest(
                    "d0", "delegate", json.dumps({"prompt": "run the jobs"}))])
            return ModelTurn(text="done")
        if request.role == "planner":
            if request.last["role"] == "user":
                return ModelTurn(tool_calls=[ToolCallRequest(
                    f"p{i}", "delegate", json.dumps({"prompt": f"job {i}"}))
                    for i in range(tasks)])
            return ModelTurn(text="planned")
        if request.last["role"] == "user":
            return ModelTurn(tool_calls=[ToolCallRequest("w", name, arguments)])
        return ModelTurn(text="job done")

    return FunctionModel(answer, name="bench/function")


def run_team(tasks: int, step: tuple[str, str], workers: int, cluster: Any) -> float:
    """Seconds from the prompt to the team's answer; checks every task ended ok."""
    # a history writer's thread (here, or a worker's: the workspace is shared) may still be
    # appending when the team answers; what it leaves is not what is measured
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as folder:
        limits = TeamLimits(max_workers=workers, max_delegations=tasks + 5,
                            max_queued=tasks + 10)
        team = Team(model=script(tasks, step), workspace=folder, limits=limits,
                    settings=Settings(headless_approval="allow", max_tool_calls=tasks + 10),
                    tools=[burn],
                    cluster=cluster)
        started = time.perf_counter()
        result = asyncio.run(team.arun("run the jobs"))
        took = time.perf_counter() - started
        ended = [t["status"] for t in result.tasks() if t["role"] == "worker"]
        assert result.ok and ended == ["ok"] * tasks, (result.error, set(ended))
        assert team.ledger.verify().ok
        if cluster is not None:
            team.use_cluster(None)
        return took


def local_cluster(processes: int) -> tuple[Any, Any]:
    from distributed import Client, LocalCluster

    os.environ["PYTHONPATH"] = os.pathsep.join(  # the workers import bench_cluster_tools
        [str(HERE), *filter(None, [os.environ.get("PYTHONPATH")])])
    cluster = LocalCluster(processes=True, n_workers=processes, threads_per_worker=1,
                           host="127.0.0.1", dashboard_address=None)
    return cluster, Client(cluster, set_as_default=False)


async def channel_rates(trips: int) -> dict[str, float]:
    """Median ms of one put-and-get round trip on a scheduler queue, one at a time, and
    queue operations a second with 100 round trips at once (the channel's own cost)."""

    from distributed import Client, LocalCluster

    async with LocalCluster(processes=True, n_workers=1, threads_per_worker=1,
                            host="127.0.0.1", dashboard_address=None,
                            asynchronous=True) as cluster, \
            Client(cluster, asynchronous=True, set_as_default=False) as client:
        scheduler = client.scheduler
        await scheduler.queue_create(name="bench-one", maxsize=0)
        times = []
        for i in range(trips):
            started = time.perf_counter()
            await scheduler.queue_put(name="bench-one", data={"seq": i, "type": "ledger"})
            await scheduler.queue_get(name="bench-one", timeout=None)
            times.append((time.perf_counter() - started) * 1e3)
        names = [f"bench-{i}" for i in range(100)]
        for name in names:
            await scheduler.queue_create(name=name, maxsize=0)

        async def trip(name: str, rounds: int) -> None:
            for i in range(rounds):
                await scheduler.queue_put(name=name, data={"seq": i, "type": "ledger"})
                await scheduler.queue_get(name=name, timeout=None)

        rounds = max(1, trips // 100)
        started = time.perf_counter()
        await asyncio.gather(*(trip(name, rounds) for name in names))
        took = time.perf_counter() - started
    return {"channel_trip_ms": statistics.median(times),
            "scheduler_ops_per_s": 2 * 100 * rounds / took}


async def ledger_rates(records: int) -> dict[str, float]:
    """Ledger records a second: one appender awaiting each record, and 100 appenders at
    once (their records share writes and fsyncs: docs/ledger.md, "Group commit")."""
    from agent_kernel.core.ledger import Ledger

    def record(i: int) -> dict[str, object]:
        return {"type": "tool_call", "agent_id": f"worker-{i % 100}", "run_id": f"run_{i}",
                "tool_name": "burn", "arguments": {"ms": 50}, "result": "done",
                "success": True, "duration_ms": 50, "ran_on": "127.0.0.1:40123"}

    with tempfile.TemporaryDirectory() as folder:
        ledger = Ledger(Path(folder) / "ledger.jsonl")
        started = time.perf_counter()
        for i in range(records):
            await ledger.append_async([record(i)])
        one = records / (time.perf_counter() - started)

        async def appender(k: int) -> None:
            for i in range(records // 100):
                await ledger.append_async([record(k * 1000 + i)])

        started = time.perf_counter()
        await asyncio.gather(*(appender(k) for k in range(100)))
        many = 100 * (records // 100) / (time.perf_counter() - started)
        assert ledger.verify().ok
    return {"ledger_one_per_s": one, "ledger_100_per_s": many}


def rates(trips: int, as_json: bool) -> None:
    """Part 3: the per-record rates of docs/scale.md's estimate for 100 workers."""
    out: dict[str, Any] = {"loadavg": Path("/proc/loadavg").read_text().split()[:3]}
    out.update(asyncio.run(channel_rates(trips)))
    out.update(asyncio.run(ledger_rates(max(trips, 1000))))
    out["loadavg_after"] = Path("/proc/loadavg").read_text().split()[:3]
    if as_json:
        print(json.dumps(out, indent=2))
        return
    print(f"load average before {' '.join(out['loadavg'])}, after "
          f"{' '.join(out['loadavg_after'])}")
    print(f"channel round trip (queue_put + queue_get on the scheduler): median "
          f"{out['channel_trip_ms']:.2f} ms; 100 at once: "
          f"{out['scheduler_ops_per_s']:.0f} queue operations a second")
    print(f"ledger: {out['ledger_one_per_s']:.0f} records/s one at a time, "
          f"{out['ledger_100_per_s']:.0f} records/s with 100 appenders (group commit)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hops", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=1,
                        help="measure the hops this many times (in-process, remote in turn)")
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--ms", type=int, default=50)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--rates", action="store_true",
                        help="only the channel's and the ledger's rates (docs/scale.md)")
    parser.add_argument("--trips", type=int, default=400)
    args = parser.parse_args()
    if args.rates:
        rates(args.trips, args.json)
        return
    out: dict[str, Any] = {"loadavg": Path("/proc/loadavg").read_text().split()[:3]}

    echo = ("echo", json.dumps({"text": "hi"}))
    spin = ("burn", json.dumps({"ms": args.ms}))
    if args.tasks:
        out["tasks_in_process_s"] = run_team(args.tasks, spin, 4, None)
    for processes in (1, 2) if args.tasks else (1,):
        cluster, client = local_cluster(processes)
        try:
            if processes == 1:
                run_team(2, echo, 1, client)  # the worker's first imports are not a hop
                rounds = []
                for _ in range(args.rounds):
                    here = run_team(args.hops, echo, 1, None)
                    there = run_team(args.hops, echo, 1, client)
                    rounds.append((here, there, (there - here) / args.hops * 1e3))
                out["hops_rounds"] = rounds
                out["hops_in_process_s"] = statistics.median(r[0] for r in rounds)
                out["hops_cluster_s"] = statistics.median(r[1] for r in rounds)
                out["remote_hop_ms"] = statistics.median(r[2] for r in rounds)
            if args.tasks:
                out[f"tasks_{processes}_processes_s"] = run_team(args.tasks, spin, 4, client)
        finally:
            client.close()
            cluster.close()
    if args.tasks:
        out["speedup_1"] = out["tasks_in_process_s"] / out["tasks_1_processes_s"]
        out["speedup_2"] = out["tasks_in_process_s"] / out["tasks_2_processes_s"]
    out["loadavg_after"] = Path("/proc/loadavg").read_text().split()[:3]
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"load average before {' '.join(out['loadavg'])}, after "
          f"{' '.join(out['loadavg_after'])}")
    for here, there, hop in out["hops_rounds"]:
        print(f"  round: in-process {here:.2f} s, on 1 worker process {there:.2f} s: "
              f"{hop:.1f} ms more a task")
    print(f"{args.hops} Worker tasks one at a time (echo), median of {args.rounds}: in-process "
          f"{out['hops_in_process_s']:.2f} s, on 1 worker process {out['hops_cluster_s']:.2f} s"
          f": {out['remote_hop_ms']:.1f} ms more a task")
    if not args.tasks:
        return
    print(f"{args.tasks} Worker tasks of {args.ms} ms CPU each, max_workers=4: in-process "
          f"{out['tasks_in_process_s']:.2f} s; 1 process {out['tasks_1_processes_s']:.2f} s "
          f"(x{out['speedup_1']:.2f}); 2 processes {out['tasks_2_processes_s']:.2f} s "
          f"(x{out['speedup_2']:.2f})")


if __name__ == "__main__":
    main()
