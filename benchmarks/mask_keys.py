"""Benchmark: what masking a registered key costs (``redaction.mask_keys``).

A random 32-byte key is registered (``add_secret``: its 46-47 patterns, one per form it
could be printed in), then three texts are masked: a 2 KB JSON record, 17 KB of Python
source (this package's ``core/redaction.py``, cut) and 100 KB of hex digits (the worst
case: every character could start a hex form of the key). Beside it, in the same rounds
and interleaved: the floor, a plain ``str.find`` of the key's hex form (one pattern, no
regex), and ``redact_text``, the whole redaction every record goes through (which calls
the mask). Best and median of ``--rounds``.

Run: ``python benchmarks/mask_keys.py [--rounds 15]``. Nothing is asserted: the figures
go to docs/security.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from agent_kernel.core import redaction


def texts() -> dict[str, str]:
    record = json.dumps({"kind": "tool_result", "run": "r" * 12, "tool": "run_python",
                         "output": "\n".join(f"line {i}: value={i * 7}" for i in range(90))})
    source = Path(redaction.__file__).read_text()[:17_000]
    hexes = os.urandom(50_000).hex()
    return {"2 KB record": record[:2048], "17 KB source": source, "100 KB hex": hexes}


def timed(work: Callable[[str], object], text: str) -> float:
    started = time.perf_counter()
    work(text)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    key = os.urandom(32)
    redaction.add_secret(key)
    plain = key.hex()
    print(f"| text | mask_keys best / median ms | floor: str.find best / median ms "
          f"| redact_text best / median ms |  ({args.rounds} rounds, interleaved)")
    print("|---|---:|---:|---:|")
    for name, text in texts().items():
        mask: list[float] = []
        floor: list[float] = []
        whole: list[float] = []
        for _ in range(args.rounds):
            floor.append(timed(lambda t: t.find(plain), text))
            mask.append(timed(redaction.mask_keys, text))
            whole.append(timed(redaction.redact_text, text))
        cells = [f"{min(s):.3f} / {statistics.median(s):.3f}" for s in (mask, floor, whole)]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
