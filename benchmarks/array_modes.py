"""CPU time per recall of the core's three ranking paths on one store, in one process.

The paths rank identically (tests/core/test_arrays.py); this measures which is cheaper at a given
size, which is how ``arrays.ARRAY_MIN_MEMORIES`` and ``arrays.NARROW_MIN_MEMORIES`` were chosen.
Process time, not wall time: the machine is shared. All paths run on the same store (access
counting off, so no recall changes what the next one sees) and queries (the bench scale corpus),
each query in every path in turn. Prints a table (p50, p95 and mean, and how many queries each
path ranked the same memories as the Python path) and, with ``--json``, writes the figures.

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


def _summary(times: list[float]) -> dict[str, float]:
    """Median, p95 and mean of ``times`` (seconds), in ms."""
    ordered = sorted(t * 1000.0 for t in times)
    return {"p50": ordered[len(ordered) // 2], "p95": ordered[int(len(ordered) * 0.95)],
            "mean": sum(ordered) / len(ordered)}  # fmt: skip


def _switch(array_min: int, narrow_min: int) -> Callable[[], None]:
    def switch() -> None:
        arrays.ARRAY_MIN_MEMORIES, arrays.NARROW_MIN_MEMORIES = array_min, narrow_min

    return switch


MODES = {
    "arrays, narrowed": _switch(0, 0),
    "arrays, dense": _switch(0, 10**12),
    "python (MaxScore)": _switch(10**12, 10**12),
}


def measure(store: CueMap, queries: list[str]) -> dict[str, Any]:
    """Every query asked in every mode, the modes in turn query by query (their order rotated),
    so a busy machine slows them alike; each mode's CPU figures, and how many queries it ranked
    the same memories as the Python path."""
    times: dict[str, list[float]] = {name: [] for name in MODES}
    same = dict.fromkeys(MODES, 0)
    names = list(MODES)
    for i, query in enumerate(queries):
        ids = {}
        for name in names[i % len(names) :] + names[: i % len(names)]:
            MODES[name]()
            start = time.process_time()
            hits = store.recall(query, k=10).hits
            times[name].append(time.process_time() - start)
            ids[name] = [hit.memory_id for hit in hits]
        for name in names:
            same[name] += ids[name] == ids["python (MaxScore)"]
    return {name: {**_summary(times[name]), "same_hits": same[name]} for name in names}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--locomo", default="../shared/locomo_dev.json")
    parser.add_argument("--json")
    args = parser.parse_args()
    corpus = load_corpus(args.locomo)
    # no access counting: every recall, in every mode, sees the same store
    store = CueMap(":memory:", clock=_fixed_clock, config={"track_access": False})
    for batch in batches(corpus, 7, 0, args.size):
        store.add_many(batch)
    queries = queries_for(corpus, 7, args.queries)
    for switch in MODES.values():  # warm: the array view and the lists these queries touch
        switch()
        for query in queries:
            store.recall(query, k=10)
    figures = measure(store, queries)
    report: dict[str, Any] = {"size": args.size, "queries": args.queries, "cpu_ms": figures}
    print(f"{'path':<20} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8} {'same hits':>10}"
          f"   ({args.size:,} memories, CPU time)")  # fmt: skip
    for name, row in figures.items():
        print(f"{name:<20} {row['p50']:>8.2f} {row['p95']:>8.2f} {row['mean']:>8.2f} "
              f"{row['same_hits']:>10}")  # fmt: skip
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(report, out, indent=2)


if __name__ == "__main__":
    main()
