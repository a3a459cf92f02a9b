"""Benchmark: three small costs the docs quote, each beside its floor or what it saves.

1. **litellm's import**: ``import litellm`` in a fresh interpreter (wall time and the
   process's peak resident memory), beside the floor, a fresh interpreter that imports
   nothing; one process each, in turn (docs/loop.md, "The first run").
2. **the model name check** (``names.check_model``) in a fresh interpreter: a bare name
   (``gpt-4o-mini``) checked the first time and again (cached), and a ``provider/model``
   name; beside the floor, reading and parsing the same litellm data file
   (``model_prices_and_context_window_backup.json``) in a fresh interpreter; in turn
   (docs/loop.md, "Errors").
3. **the context window's cheap bound** (``context.upper_bound``) on twenty messages and
   every built-in tool's schema, beside what it spares most calls: litellm's token count of
   the same request (gpt-4o-mini's tokenizer); interleaved (docs/loop.md, "Context care").

Run: ``python benchmarks/small_costs.py [--rounds 5]``. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

IMPORT = """
import resource, sys, time
t = time.perf_counter()
if sys.argv[1] == "litellm":
    import litellm
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""

NAMES = """
import json, sys, time
from agent_kernel.engine.models import names
if sys.argv[1] == "floor":
    t = time.perf_counter()
    json.loads((names._litellm_dir() / "model_prices_and_context_window_backup.json")
               .read_text())
    print(json.dumps([time.perf_counter() - t]))
else:
    out = []
    for model in ("gpt-4o-mini", "gpt-4o-mini", "openai/gpt-4o-mini"):
        t = time.perf_counter()
        names.check_model(model)
        out.append(time.perf_counter() - t)
    print(json.dumps(out))
"""


def fresh(code: str, arg: str) -> list[float]:
    done = subprocess.run([sys.executable, "-c", code, arg], capture_output=True, text=True,
                          check=True, timeout=300)
    return [float(x) for x in done.stdout.split()] if arg in ("none", "litellm") else \
        json.loads(done.stdout)


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.2f} ms (min {min(values) * 1000:.2f})"


def window_bound(rounds: int) -> None:
    import tempfile

    from agent_kernel import Agent
    from agent_kernel.engine.context import upper_bound
    from agent_kernel.engine.models.llm import LitellmModel

    with tempfile.TemporaryDirectory() as folder:
        agent = Agent(workspace=folder)
        tools = agent.registry.schemas()
        messages = [{"role": "user" if i % 2 == 0 else "assistant",
                     "content": f"message {i}: " + "some words of a conversation " * 8}
                    for i in range(20)]
        model = LitellmModel("gpt-4o-mini")
        model.count_tokens(messages, tools)  # type: ignore[arg-type]  # first load not timed
        bound, count = [], []
        for _ in range(rounds * 20):
            t = time.perf_counter()
            upper_bound(messages, tools)  # type: ignore[arg-type]
            bound.append(time.perf_counter() - t)
            t = time.perf_counter()
            model.count_tokens(messages, tools)  # type: ignore[arg-type]
            count.append(time.perf_counter() - t)
        print(f"context bound, 20 messages + {len(tools)} tool schemas: {ms(bound)}; "
              f"litellm's token count of the same request: {ms(count)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    bare, heavy = [], []
    for _ in range(args.rounds):
        bare.append(fresh(IMPORT, "none"))
        heavy.append(fresh(IMPORT, "litellm"))
    rss_bare = statistics.median(b[1] for b in bare) / 1024
    rss_heavy = statistics.median(h[1] for h in heavy) / 1024
    print(f"import litellm, fresh interpreter: {ms([h[0] for h in heavy])}, peak RSS "
          f"{rss_heavy:.0f} MiB; floor, a fresh interpreter importing nothing: peak RSS "
          f"{rss_bare:.0f} MiB (+{rss_heavy - rss_bare:.0f} MiB)  ({args.rounds} each, in turn)")
    floor, checks = [], []
    for _ in range(args.rounds):
        floor.append(fresh(NAMES, "floor")[0])
        checks.append(fresh(NAMES, "check"))
    print(f"check_model, fresh interpreter: bare name first {ms([c[0] for c in checks])}, "
          f"again {ms([c[1] for c in checks])}, provider/model {ms([c[2] for c in checks])}; "
          f"floor, reading and parsing litellm's model list: {ms(floor)}")
    window_bound(args.rounds)


if __name__ == "__main__":
    main()
