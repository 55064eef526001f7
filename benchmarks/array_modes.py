"""CPU time per recall of the core's three ranking paths on one store, in one process.

The paths rank identically (tests/core/test_arrays.py); this measures which is cheaper at a given
size, which is how ``arrays.ARRAY_MIN_MEMORIES`` and ``arrays.NARROW_MIN_MEMORIES`` were chosen.
Process time, not wall time: the machine is shared, and all paths run on the same store and
queries (the bench scale corpus). Prints a table and, with ``--json``, writes the figures.

Example:
    .venv/bin/python benchmarks/array_modes.py --size 100000 --locomo ../shared/locomo_dev.json
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from cuemap_integrations import CueMap, arrays
from cuemap_integrations.bench.scale import _fixed_clock, batches, load_corpus, queries_for


def cpu_ms(store: CueMap, queries: list[str]) -> dict[str, float]:
    """Median and p95 of process time per recall, in ms."""
    times = []
    for query in queries:
        start = time.process_time()
        store.recall(query, k=10)
        times.append((time.process_time() - start) * 1000.0)
    times.sort()
    return {"p50": times[len(times) // 2], "p95": times[int(len(times) * 0.95)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--locomo", default="../shared/locomo_dev.json")
    parser.add_argument("--json")
    args = parser.parse_args()
    corpus = load_corpus(args.locomo)
    store = CueMap(":memory:", clock=_fixed_clock)
    for batch in batches(corpus, 7, 0, args.size):
        store.add_many(batch)
    queries = queries_for(corpus, 7, args.queries)

    def use(array_min: int, narrow_min: int) -> Callable[[], None]:
        return lambda: (
            (
                setattr(arrays, "ARRAY_MIN_MEMORIES", array_min),
                setattr(arrays, "NARROW_MIN_MEMORIES", narrow_min),
            )
            and None
        )

    modes = {
        "arrays, narrowed": use(0, 0),
        "arrays, dense": use(0, 10**12),
        "python (MaxScore)": use(10**12, 10**12),
    }
    report: dict[str, Any] = {"size": args.size, "queries": args.queries, "cpu_ms": {}}
    for name, switch in modes.items():
        switch()
        cpu_ms(store, queries)  # warm: the array view mirrors the lists these queries touch
        report["cpu_ms"][name] = cpu_ms(store, queries)
    print(f"{'path':<20} {'p50 ms':>8} {'p95 ms':>8}   ({args.size:,} memories, CPU time)")
    for name, figures in report["cpu_ms"].items():
        print(f"{name:<20} {figures['p50']:>8.2f} {figures['p95']:>8.2f}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(report, out, indent=2)


if __name__ == "__main__":
    main()
