"""Bulk-ingest CPU time of two source trees, measured in turn (A/B), in fresh processes.

Each run imports one tree (``PYTHONPATH``) in a new process, generates the bench scale memories
``0..size-1`` (not timed) and feeds them to ``add_many`` in batches of 10,000, summing the
process time of the ``add_many`` calls (and their wall time, which includes the fsyncs of a
durable file). Runs alternate between the trees (ABBA...), so a busy shared machine slows both
alike; the medians and the median of the paired ratios are printed.

Example:
    git worktree add ../old-ingest main
    .venv/bin/python benchmarks/ingest_ab.py --old ../old-ingest --new . --mode file --runs 7
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def measure(mode: str, size: int, locomo: str) -> dict[str, float]:
    """Process and wall seconds of ``add_many`` over ``size`` memories (this process's tree)."""
    from cuemap_integrations import CueMap
    from cuemap_integrations.bench.scale import _fixed_clock, batches, load_corpus

    items = list(batches(load_corpus(locomo), 7, 0, size))
    cpu = wall = 0.0
    with tempfile.TemporaryDirectory(prefix="ingest-ab-") as folder:
        path = ":memory:" if mode == "memory" else Path(folder) / "ab.db"
        with CueMap(path, clock=_fixed_clock, durable=True) as store:
            for batch in items:
                cpu0, wall0 = time.process_time(), time.perf_counter()
                store.add_many(batch)
                cpu += time.process_time() - cpu0
                wall += time.perf_counter() - wall0
    return {"cpu": cpu, "wall": wall}


def run_child(tree: str, args: argparse.Namespace) -> dict[str, float]:
    """:func:`measure` in a new process that imports ``tree``."""
    root = str(Path(tree).resolve())
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, str(Path(root) / "adapters")]))
    command = [sys.executable, __file__, "--child", "--mode", args.mode, "--size", str(args.size),
               "--locomo", str(Path(args.locomo).resolve())]  # fmt: skip
    done = subprocess.run(command, env=env, cwd=root, capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", help="source tree A (e.g. a worktree of main)")
    parser.add_argument("--new", default=".", help="source tree B")
    parser.add_argument("--mode", choices=("memory", "file"), default="memory")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--locomo", default="../shared/locomo_dev.json")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.mode, args.size, args.locomo)))
        return
    if not args.old:
        parser.error("--old is required")
    runs: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
    for number in range(args.runs):
        order = ("old", "new") if number % 2 == 0 else ("new", "old")
        for name in order:
            runs[name].append(run_child(getattr(args, name), args))
    for name, rows in runs.items():
        cpu = statistics.median(r["cpu"] for r in rows)
        wall = statistics.median(r["wall"] for r in rows)
        print(f"{name}: {args.mode}, {args.size:,} memories, {args.runs} runs: CPU median "
              f"{cpu:.3f} s ({args.size / cpu:,.0f}/s), wall median {wall:.3f} s "
              f"({args.size / wall:,.0f}/s)")  # fmt: skip
    paired = [a["cpu"] / b["cpu"] for a, b in zip(runs["old"], runs["new"], strict=True)]
    print(f"old/new CPU: {statistics.median(paired):.2f}x (median of paired runs)")


if __name__ == "__main__":
    main()
