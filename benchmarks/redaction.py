"""Benchmark: redaction per string, the guarded steps beside the plain sequence they replaced.

A process holds one registered key (its approval key: ``add_secret``, 46-47 patterns),
as a team's process does. Measured, interleaved round by round in one process:

- **before**: the plain sequence (every key form, the environment's values read afresh,
  every shape, the pairs), as ``redaction._redact`` and ``_env_value_pattern`` were
  before the guards; copied here and swapped into the module for its rounds;
- **after**: the module as it is (guards, short texts found clean kept, the environment
  read again only when it changed).

Texts: a team task record and a ledger record shaped like those a fan-out of 50 writes
(each round makes new ids and times, so only what repeats in a real fan-out repeats
here), through ``scrub``; and single strings through ``redact_text``: a task id, a
sentence, a 2 KB tool result and 17 KB of Python source (this module's: it holds every
shape's literal, so every guard lets its pattern run: the worst case for guards), each new
every call (a counter prepended) so no text is found clean from an earlier round. All
texts are made before the clock starts.
Figures: µs per string (a record's count is the strings ``_redact`` sees in it), best and
median of ``--rounds``; the ratio before / after of the medians.

With ``--fanouts N`` (in a venv with the peers, as ``benchmarks/peers.py``): N fan-outs of
50 through agent-kernel's Team (``max_workers`` 50) with the plain sequence and with the
guarded steps swapped in, beside openai-agents (agents as tools) and smolagents' managed
agent (``max_tool_threads=1``), interleaved round by round against one scripted server
(peers.py's), and for one more untimed fan-out each the share of the time spent in
redaction (the calls of ``_redact``, each string's, and ``_env_value_pattern``, timed).
The CPU time of this process a fan-out (the server runs in its own) says the same with
less of the machine's other work in it than the wall time.

Run: ``python benchmarks/redaction.py [--rounds 15] [--fanouts 5]``. Nothing is
asserted: the figures go to docs/performance.md ("Redaction per string").
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import re
import statistics
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from agent_kernel.core import redaction
from agent_kernel.core.redaction import REDACTED

_counter = itertools.count()


def plain_env_pattern() -> re.Pattern[str] | None:
    """``_env_value_pattern`` before: every variable read and judged on each call."""
    found = tuple(sorted((k, v) for k, v in os.environ.items()
                         if len(v) >= redaction._MIN_ENV_SECRET
                         and k not in redaction._NOT_SECRET_ENV and redaction.secret_name(k)))
    cache = plain_env_pattern.__dict__.setdefault("cache", ((), None))
    if found != cache[0]:
        values = sorted({v for _, v in found if not redaction._existing_path(v)},
                        key=len, reverse=True)
        pattern = re.compile("|".join(re.escape(v) for v in values)) if values else None
        cache = plain_env_pattern.__dict__["cache"] = (found, pattern)
    made: re.Pattern[str] | None = cache[1]
    return made


def plain_redact(text: str, env: re.Pattern[str] | None, extra: list[re.Pattern[str]]) -> str:
    """``_redact`` before: every pattern, one after another."""
    if not text:
        return text
    text = redaction.fix_text(text)
    for pattern in redaction._secrets:
        text = pattern.sub(REDACTED, text)
    if env is not None:
        text = env.sub(REDACTED, text)
    for pattern in redaction._compiled:
        text = pattern.sub(redaction._sub_keep, text)
    if "=" in text or ":" in text:
        text = redaction._redact_pairs(text)
    for pattern in extra:
        text = pattern.sub(REDACTED, text)
    return text


GUARDED = (redaction._redact, redaction._env_value_pattern)


def use(plain: bool) -> None:
    redaction._redact, redaction._env_value_pattern = (  # type: ignore[assignment]
        (plain_redact, plain_env_pattern) if plain else GUARDED)


def ids() -> tuple[str, str, str]:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d_%H%M%S")
    return tuple(f"{kind}_{stamp}_{uuid.uuid4().hex[:8]}"  # type: ignore[return-value]
                 for kind in ("task", "trace", "run"))


def task_record() -> dict[str, object]:
    task, trace, run = ids()
    now = datetime.now(timezone.utc).isoformat()
    number = next(_counter)
    return {"id": task, "kind": "task", "record_id": task, "task_id": task,
            "parent_task_id": ids()[0], "root_id": ids()[0], "parent_id": ids()[0],
            "prompt": f"Call echo with {number} and answer with exactly what it returns.",
            "status": "running", "worker": f"planner-{number % 4}", "type": "oneshot",
            "priority": 0, "depth": 1, "timeout": 120, "condition": None, "trigger_id": None,
            "created_at": now, "started_at": now, "ended_at": None, "children": [],
            "seq": number, "result": None, "error": None, "trace_id": trace, "run_id": run,
            "agent_id": f"worker-{number % 50}", "parent_agent_id": "planner-1",
            "role": "worker"}


def ledger_record() -> dict[str, object]:
    _, trace, run = ids()
    number = next(_counter)
    return {"kind": "tool_call", "run_id": run, "trace_id": trace,
            "agent_id": f"worker-{number % 50}", "parent_agent_id": "planner-1",
            "role": "worker", "seq": number, "at": datetime.now(timezone.utc).isoformat(),
            "tool_call": {"id": f"call_{uuid.uuid4().hex[:12]}", "tool_name": "echo",
                          "arguments": {"text": str(number)}},
            "success": True, "result": str(number), "error": None}


def strings_in(record: dict[str, object]) -> int:
    """How many strings ``_redact`` sees in ``record`` (its keys and its text values)."""
    seen = []
    real = redaction._redact
    redaction._redact = lambda text, env, extra: seen.append(text) or text  # type: ignore
    try:
        redaction.scrub(record)
    finally:
        redaction._redact = real
    return len(seen)


def texts() -> dict[str, Callable[[], str]]:
    source = Path(redaction.__file__).read_text()[:17_000]
    result = "\n".join(f"line {i}: value={i * 7}" for i in range(90))[:2048]
    return {
        "a task id": lambda: ids()[0],
        "a sentence": lambda: f"Worker {next(_counter)}: echo the number and report back",
        "2 KB tool result": lambda: f"{next(_counter)} {result}",
        "17 KB source": lambda: f"{next(_counter)} {source}",
    }


def timed(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def fanouts(rounds: int) -> None:
    """Fan-outs of 50, plain and guarded redaction, beside the two fastest peers."""
    import asyncio
    import sys
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import peers  # sets up its environment (no lookups beyond 127.0.0.1) on import

    contenders = peers.peers  # benchmarks/peer_contenders.py
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    peers.quiet()
    folder = Path(tempfile.mkdtemp(prefix="redaction-fanout-"))

    cpu: dict[str, list[float]] = {}

    def with_redaction(name: str, plain: bool, run: Callable[[int], object]
                       ) -> tuple[str, Callable[[], object]]:
        async def once() -> None:
            use(plain)
            started = time.process_time()
            await run(peers.FANOUT)  # type: ignore[misc]
            cpu.setdefault(name, []).append(time.process_time() - started)
        return name, once

    def timed_call(real: Callable[..., object], spent: list[float]) -> Callable[..., object]:
        def call(*args: object) -> object:
            started = time.perf_counter()
            try:
                return real(*args)
            finally:
                spent[0] += time.perf_counter() - started
        return call

    async def measure(base_url: str) -> list[str]:
        plain = contenders.ak_team(base_url, folder / "plain", 50)
        guarded = contenders.ak_team(base_url, folder / "guarded", 50)
        runs = [with_redaction("agent-kernel Team, max_workers 50, plain sequence (before)",
                               True, plain.run),
                with_redaction("agent-kernel Team, max_workers 50, guarded (after)",
                               False, guarded.run),
                with_redaction("openai-agents, agents as tools", False,
                               contenders.oa_as_tool(base_url).run),
                with_redaction("smolagents, managed agent (max_tool_threads=1)", False,
                               contenders.sm_managed(base_url, 1).run)]
        try:
            times = await peers.interleaved(runs, rounds, 1)  # type: ignore[arg-type]
            shares = {}
            for mode, team in ((True, plain), (False, guarded)):
                use(mode)
                spent = [0.0]
                real_redact, real_env = redaction._redact, redaction._env_value_pattern
                redaction._redact = timed_call(real_redact, spent)  # type: ignore[assignment]
                redaction._env_value_pattern = timed_call(  # type: ignore[assignment]
                    real_env, spent)
                try:
                    started = time.perf_counter()
                    await team.run(peers.FANOUT)
                    shares[mode] = (spent[0], time.perf_counter() - started)
                finally:
                    redaction._redact, redaction._env_value_pattern = real_redact, real_env
        finally:
            use(False)
            await contenders.close_clients()
        best = max(peers.FANOUT / statistics.median(times[name]) for name, _ in runs[2:])
        out = [f"fan-outs of {peers.FANOUT}, {rounds} rounds interleaved, "
               f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, load average {load} at "
               "start, " + " ".join(Path("/proc/loadavg").read_text().split()[:3]) + " at end",
               "| contender | tasks/s (median) | slowest round | × best peer "
               "| CPU ms a fan-out, this process (median) |",
               "|---|---:|---:|---:|---:|"]
        for name, _ in runs:
            rate = peers.FANOUT / statistics.median(times[name])
            out.append(f"| {name} | {rate:.1f} | {peers.FANOUT / max(times[name]):.1f} | "
                       f"{rate / best:.2f} | {statistics.median(cpu[name][1:]) * 1000:.0f} |")
        for mode, (spent_s, total) in shares.items():
            out.append(f"in _redact and _env_value_pattern during one more fan-out, "
                       f"{'plain' if mode else 'guarded'}: "
                       f"{spent_s * 1000:.0f} ms of {total * 1000:.0f} ms "
                       f"({spent_s / total:.0%})")
        return out

    with peers.server_process() as (base_url, _):
        print("\n".join(asyncio.run(measure(base_url))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--records", type=int, default=50, help="records of each kind a round")
    parser.add_argument("--fanouts", type=int, default=0,
                        help="fan-outs of 50 instead (a venv with the peers)")
    args = parser.parse_args()
    if args.fanouts:
        fanouts(args.fanouts)
        return
    redaction.add_secret(os.urandom(32))
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    cases: dict[str, tuple[Callable[[], object], int]] = {}
    for name, make in (("task record", task_record), ("ledger record", ledger_record)):
        count = strings_in(make())
        batches = [[make() for _ in range(args.records)] for _ in range(2 * args.rounds + 2)]
        feed = iter(batches)

        def scrub_all(feed: object = feed) -> None:
            for record in next(feed):  # type: ignore[call-overload]
                redaction.scrub(record)
        cases[f"{name} ({count} strings, scrub)"] = (scrub_all, count * args.records)
    for name, make_text in texts().items():
        many = 5 if "KB" in name else args.records
        made = iter([[make_text() for _ in range(many)] for _ in range(2 * args.rounds + 2)])

        def redact_all(made: object = made) -> None:
            for text in next(made):  # type: ignore[call-overload]
                redaction.redact_text(text)
        cases[f"{name} (redact_text)"] = (redact_all, many)
    results: dict[str, dict[bool, list[float]]] = {c: {True: [], False: []} for c in cases}
    for work, _ in cases.values():  # one warm-up each
        for plain in (True, False):
            use(plain)
            work()
    for _ in range(args.rounds):
        for case, (work, _) in cases.items():
            for plain in (True, False):
                use(plain)
                results[case][plain].append(timed(work))
    use(False)
    uname = platform.uname()
    print(f"benchmarks/redaction.py, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, "
          f"{uname.system} {uname.release}, {os.cpu_count()} CPUs, Python "
          f"{platform.python_version()}; load average {load} at start, "
          + " ".join(Path("/proc/loadavg").read_text().split()[:3]) + " at end; "
          f"{args.rounds} rounds, interleaved; one registered key.")
    print("| text | before: µs a string, best / median | after: best / median "
          "| before / after (medians) |")
    print("|---|---:|---:|---:|")
    for case, (_, count) in cases.items():
        before, after = (
            [t * 1e6 / count for t in results[case][plain]] for plain in (True, False))
        print(f"| {case} | {min(before):.1f} / {statistics.median(before):.1f} | "
              f"{min(after):.1f} / {statistics.median(after):.1f} | "
              f"{statistics.median(before) / statistics.median(after):.1f}× |")


if __name__ == "__main__":
    main()
