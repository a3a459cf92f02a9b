"""Measure the tool schemas a request carries: tokens and bytes, by role, before and after.

*Before* is every tool the role may use (what each request carried until the core and
``find_tools``); *after* is what a run's first request offers now
(``ToolRegistry.offered``), and, for the single agent, after ``find_tools`` brought in one
group. Tokens are litellm's counter with gpt-4o-mini's tokenizer (a real one,
``litellm.token_counter(model="gpt-4o-mini", messages=..., tools=...)``), counted as the
request with the tools minus the same messages alone. No model is called and nothing
reaches the network (litellm's cost map is read from its local copy).

With ``--before-tree PATH`` (a checkout of main) the same roles are also counted there,
in a child process, as main offers them (every tool, main's wording), and the per-request
cost of building the list as main does (every schema rebuilt each model call) is timed
beside the cached list's.

Run: ``python benchmarks/schemas.py [--per-tool] [--before-tree PATH]``.
docs/performance.md quotes it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

MESSAGES = [{"role": "system", "content": "You are agent-kernel."},
            {"role": "user", "content": "What's in df?"}]


def tokens(schemas: list[Any]) -> int:
    """The tokens ``schemas`` add to a request, as litellm counts them for gpt-4o-mini."""
    import litellm

    with_tools = litellm.token_counter(model="gpt-4o-mini", messages=MESSAGES, tools=schemas)
    return int(with_tools - litellm.token_counter(model="gpt-4o-mini", messages=MESSAGES))


BEFORE = r"""
import json, os, tempfile
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
import litellm
from agent_kernel.app import Agent
MESSAGES = MESSAGES_JSON
def tokens(schemas):
    with_tools = litellm.token_counter(model="gpt-4o-mini", messages=MESSAGES, tools=schemas)
    return int(with_tools - litellm.token_counter(model="gpt-4o-mini", messages=MESSAGES))
out = {}
with tempfile.TemporaryDirectory() as folder:
    for role in (None, "teller", "planner", "worker"):
        agent = Agent(workspace=folder, role=role)
        schemas = agent.registry.schemas(role)
        out[role or "single agent"] = [len(schemas), tokens(schemas), len(json.dumps(schemas))]
print(json.dumps(out))
"""


def before_tree(path: str) -> dict[str, list[int]]:
    """Tools, tokens and bytes per role as the tree at ``path`` offers them."""
    env = {**os.environ, "PYTHONPATH": path}
    code = BEFORE.replace("MESSAGES_JSON", json.dumps(MESSAGES))
    done = subprocess.run([sys.executable, "-c", code], cwd=path, env=env, text=True,
                          capture_output=True, check=True)
    result: dict[str, list[int]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    """Print the table (and, with --per-tool, each offered tool's cost)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--per-tool", action="store_true", help="each tool's tokens too")
    parser.add_argument("--before-tree", help="a checkout of main, counted as it offers")
    args = parser.parse_args()
    from agent_kernel.app import Agent
    from agent_kernel.tools.find import find

    print(f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()}, "
          f"{os.cpu_count()} cores, load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    rows = []
    costs: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as folder:
        for role in (None, "teller", "planner", "worker"):
            agent = Agent(workspace=folder, role=role, agent_id=role or "agent")
            registry = agent.registry
            before = [s for s in registry.schemas(role) if s["function"]["name"] != "find_tools"]
            started = time.perf_counter()
            after = registry.offered(role, "run-1", [])
            first_ms = (time.perf_counter() - started) * 1000
            started = time.perf_counter()
            for _ in range(1000):
                registry.offered(role, "run-1", [])
            cached_us = (time.perf_counter() - started) * 1000
            started = time.perf_counter()
            for _ in range(1000):  # as main builds them: every schema, every model call
                [t.schema() for t in registry if registry.allowed(role, t)]
            rebuilt_us = (time.perf_counter() - started) * 1000
            rows.append((role or "single agent", before, after, first_ms, cached_us))
            costs[role or "single agent"] = rebuilt_us
            if role is None:
                find(agent, "run-1", "schedule")
                rows.append(("single agent + schedule", before, registry.offered(None, "run-1"),
                             None, None))
    print("| request of | tools before | tokens before | bytes before | tools after | "
          "tokens after | bytes after | tokens after / before |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, before, after, _, _ in rows:
        tb, ta = tokens(before), tokens(after)
        print(f"| {name} | {len(before)} | {tb:,} | {len(json.dumps(before)):,} | "
              f"{len(after)} | {ta:,} | {len(json.dumps(after)):,} | {ta / tb:.2f} |")
    if args.before_tree:
        print()
        print(f"main ({args.before_tree}), every tool as it offers them:")
        print("| request of | tools | tokens | bytes | this tree's first request: tokens |")
        print("|---|---:|---:|---:|---:|")
        mine = {name: tokens(after) for name, _, after, first, _ in rows if first is not None}
        for name, (count, tok, size) in before_tree(args.before_tree).items():
            print(f"| {name} | {count} | {tok:,} | {size:,} | {mine[name]:,} "
                  f"({mine[name] / tok:.2f}x) |")
    print()
    for name, _, _, first_ms, cached_us in rows:
        if first_ms is not None:
            print(f"{name}: first build {first_ms:.1f} ms, then {cached_us:.1f} us a request "
                  f"(cached); every schema rebuilt, as main does: {costs[name]:.1f} us")
    if args.per_tool:
        print()
        for schema in rows[0][2]:
            print(f"{schema['function']['name']:24} {tokens([schema]):5} tokens "
                  f"{len(json.dumps(schema)):6} bytes")


if __name__ == "__main__":
    main()
