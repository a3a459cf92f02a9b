"""Click-to-resume latency of ``ask_user`` in a real browser (target: under 100 ms).

Starts a private JupyterLab on 127.0.0.1, opens a notebook in Debian's Chromium
through playwright-core (the browser test's ``tests/browser/drive.mjs``) and
runs ``%agent ask me to choose between tea or coffee`` several times, half as
background runs and half with ``--wait`` (the click then travels over a kernel
subshell while the cell blocks). For each question it takes the time in the
page right before the button's click event and the time the agent resumed
with the answer (the ``QuestionAnswered`` event, emitted right after the
waiting ``ask`` returns), both on this machine's clock, and reports the
differences. Beside it, in the same page and interleaved (one before each question),
the floor: a bare ipywidgets button whose kernel handler only notes the time, clicked
with the kernel idle: a click's trip from the page to a kernel callback with nothing of
ours on the way. Run: ``python benchmarks/click_latency.py [--rounds 20]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))

from labserver import drive, missing_requirements, start_lab, write_notebook  # noqa: E402

SETUP = """
import json, agent_kernel.notebook.magics as m
from agent_kernel.core.events import QuestionAnswered
answered_at = []
m.current().agent.bus.subscribe(
    lambda e: answered_at.append(e.at) if isinstance(e, QuestionAnswered) else None)
"""


FLOOR = """
import time, ipywidgets
floor_at = []
_floor = ipywidgets.Button(description="floor")
_floor.add_class("bench-floor")
_floor.on_click(lambda _: floor_at.append(time.time()))
_floor
"""
FLOOR_CELL = 2


def cells(rounds: int) -> list[str]:
    """The benchmark notebook: load, subscribe, the floor's button, ``rounds`` questions,
    report."""
    asks = ["%agent ask me to choose between tea or coffee" if i % 2 == 0 else
            "%%agent --wait\nask me to choose between tea or coffee" for i in range(rounds)]
    return ["%load_ext agent_kernel", SETUP, FLOOR, *asks,
            "print('ANSWERED', json.dumps(answered_at)); print('FLOOR', json.dumps(floor_at))"]


def summarize(values: list[float]) -> dict[str, float]:
    """Median, 90th percentile and max of ``values`` (ms), rounded."""
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(round(0.9 * (len(ordered) - 1))))]
    return {"n": len(ordered), "median_ms": round(statistics.median(ordered), 1),
            "p90_ms": round(p90, 1), "max_ms": round(ordered[-1], 1),
            "min_ms": round(ordered[0], 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="questions to click (default 20)")
    args = parser.parse_args()
    problem = missing_requirements()
    if problem:
        print(f"cannot run: {problem}", file=sys.stderr)
        return 2
    base = Path(tempfile.mkdtemp(prefix="click-latency-"))
    lab = start_lab(base)
    try:
        write_notebook(lab, "latency.ipynb", cells(args.rounds))
        report = drive(lab, "latency.ipynb", "latency", base / "shots", rounds=args.rounds,
                       timeout=60 + 30 * args.rounds, floor_cell=FLOOR_CELL)
    finally:
        lab.stop()
    if report["errors"]:
        print("\n".join(report["errors"]), file=sys.stderr)
        return 1
    answered = json.loads(report["kernel"].split("ANSWERED ", 1)[1].splitlines()[0])
    if len(answered) != len(report["clicks"]):
        print(f"{len(report['clicks'])} clicks but {len(answered)} answers", file=sys.stderr)
        return 1
    by_mode: dict[str, list[float]] = {}
    for click, at in zip(report["clicks"], answered, strict=True):
        by_mode.setdefault(click["mode"], []).append(at * 1000 - click["clicked_at"])
    results = {mode: summarize(values) for mode, values in by_mode.items()}
    results["all"] = summarize([v for values in by_mode.values() for v in values])
    floor_at = json.loads(report["kernel"].split("FLOOR ", 1)[1].splitlines()[0])
    if len(floor_at) != len(report["floor_clicks"]):
        print(f"{len(report['floor_clicks'])} floor clicks but {len(floor_at)} handled",
              file=sys.stderr)
        return 1
    results["floor: bare widget click"] = summarize(
        [at * 1000 - clicked for clicked, at in zip(report["floor_clicks"], floor_at,
                                                    strict=True)])
    print(json.dumps({"click_to_resume": results, "target_ms": 100,
                      "lab_ready_s": round(lab.extra.get("ready_seconds", 0), 1)}, indent=2))
    print("\n| mode | n | median | p90 | max |\n|---|---|---|---|---|")
    for mode, row in results.items():
        print(f"| {mode} | {row['n']} | {row['median_ms']} ms | {row['p90_ms']} ms | "
              f"{row['max_ms']} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
