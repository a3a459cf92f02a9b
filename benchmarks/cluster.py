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

Run: ``python benchmarks/cluster.py [--hops 40] [--tasks 200] [--ms 50] [--json]``.
Nothing is asserted; the figures go to docs/scale.md (only ratios measured in one run
compare on a shared machine).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
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
    with tempfile.TemporaryDirectory() as folder:
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hops", type=int, default=40)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--ms", type=int, default=50)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out: dict[str, Any] = {"loadavg": Path("/proc/loadavg").read_text().split()[:3]}

    echo = ("echo", json.dumps({"text": "hi"}))
    spin = ("burn", json.dumps({"ms": args.ms}))
    out["hops_in_process_s"] = run_team(args.hops, echo, 1, None)
    out["tasks_in_process_s"] = run_team(args.tasks, spin, 4, None)
    for processes in (1, 2):
        cluster, client = local_cluster(processes)
        try:
            if processes == 1:
                out["hops_cluster_s"] = run_team(args.hops, echo, 1, client)
            out[f"tasks_{processes}_processes_s"] = run_team(args.tasks, spin, 4, client)
        finally:
            client.close()
            cluster.close()
    out["remote_hop_ms"] = (out["hops_cluster_s"] - out["hops_in_process_s"]) / args.hops * 1e3
    out["speedup_1"] = out["tasks_in_process_s"] / out["tasks_1_processes_s"]
    out["speedup_2"] = out["tasks_in_process_s"] / out["tasks_2_processes_s"]
    out["loadavg_after"] = Path("/proc/loadavg").read_text().split()[:3]
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"load average before {' '.join(out['loadavg'])}, after "
          f"{' '.join(out['loadavg_after'])}")
    print(f"{args.hops} Worker tasks one at a time (echo): in-process "
          f"{out['hops_in_process_s']:.2f} s, on 1 worker process {out['hops_cluster_s']:.2f} s"
          f": {out['remote_hop_ms']:.1f} ms more a task")
    print(f"{args.tasks} Worker tasks of {args.ms} ms CPU each, max_workers=4: in-process "
          f"{out['tasks_in_process_s']:.2f} s; 1 process {out['tasks_1_processes_s']:.2f} s "
          f"(x{out['speedup_1']:.2f}); 2 processes {out['tasks_2_processes_s']:.2f} s "
          f"(x{out['speedup_2']:.2f})")


if __name__ == "__main__":
    main()
