"""Recall CPU time of two source trees in one process, query by query (A/B), identical hits asserted.

Each tree's ``cuemap_integrations`` is copied under its own package name (``cm_old``, ``cm_new``;
the package imports itself relatively only), so both load in one interpreter. Each builds its own
store from the same items (the bench scale memories ``0..size-1``, or with ``--locomo-stores``
one store per LoCoMo conversation, as ``bench locomo`` builds them); then every query is asked of
both, alternately (the old tree first on even queries, the new one on odd ones), timing the
process time of each ``recall``. A busy shared machine slows both alike. The hits of the two must
be the same memories in the same order, or the script fails. Prints a line per tree (median, mean
and 90th percentile: a change may save most in slow queries, which the median hardly shows) and
the ratio of each, and with ``--json`` writes the figures. The tree whose store is built first can
run a few percent apart from the same code built second (where its memory lands):
``--new-first`` builds the new tree's first, so a change can be measured in both orders.

Example:
    git worktree add ../old main
    .venv/bin/python benchmarks/recall_ab.py --old ../old --new . --size 100000
    .venv/bin/python benchmarks/recall_ab.py --old ../old --new . --locomo-stores
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

NAMES = {"old": "cm_old", "new": "cm_new"}


def load(tree: str, name: str, folder: Path) -> Any:
    """The tree's package, imported as ``name`` from a copy in ``folder``."""
    shutil.copytree(Path(tree) / "cuemap_integrations", folder / name)
    return importlib.import_module(name)


def scale_stores(name: str, size: int, locomo: str, queries: int) -> list[tuple[Any, list[str]]]:
    """One store of ``size`` bench scale memories, and the bench's queries."""
    scale = importlib.import_module(f"{name}.bench.scale")
    core = importlib.import_module(f"{name}.core")
    corpus = scale.load_corpus(locomo)
    store = core.CueMap(":memory:", clock=scale._fixed_clock)
    for batch in scale.batches(corpus, 7, 0, size):
        store.add_many(batch)
    return [(store, scale.queries_for(corpus, 7, queries))]


def locomo_stores(name: str, locomo: str) -> list[tuple[Any, list[str]]]:
    """One store per LoCoMo conversation (as ``bench locomo`` builds it), and its questions."""
    data = importlib.import_module(f"{name}.bench.data")
    systems = importlib.import_module(f"{name}.bench.systems")
    return [
        (systems.build_store(c), [q.text for q in c.questions]) for c in data.load_locomo(locomo)
    ]


def recall_ids(store: Any, query: str, k: int, namespace: str) -> tuple[float, list[str]]:
    """Process seconds of one recall, and its hit ids."""
    start = time.process_time()
    hits = store.recall(query, k=k, namespace=namespace, hybrid=False)
    return time.process_time() - start, [hit.memory_id for hit in hits]


def _p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1]


STATS = {"median": statistics.median, "mean": statistics.fmean, "p90": _p90}


def compare(
    stores: dict[str, list[tuple[Any, list[str]]]], k: int, namespace: str
) -> dict[str, Any]:
    """Every query asked of both trees in turn; the medians and their ratio."""
    times: dict[str, list[float]] = {"old": [], "new": []}
    for (old, queries), (new, _) in zip(stores["old"], stores["new"], strict=True):
        for query in queries[:20]:  # warm both (mirrors, caches)
            recall_ids(old, query, k, namespace), recall_ids(new, query, k, namespace)
        for i, query in enumerate(queries):
            if i % 2:  # the one asked second may find the query's words in the caches warm
                seconds_new, ids_new = recall_ids(new, query, k, namespace)
                seconds_old, ids_old = recall_ids(old, query, k, namespace)
            else:
                seconds_old, ids_old = recall_ids(old, query, k, namespace)
                seconds_new, ids_new = recall_ids(new, query, k, namespace)
            if ids_old != ids_new:
                raise SystemExit(f"different hits for {query!r}: {ids_old} vs {ids_new}")
            times["old"].append(seconds_old)
            times["new"].append(seconds_new)
    report: dict[str, Any] = {"queries": len(times["old"]), "same_hits": True}
    for stat, of in STATS.items():
        ms = {name: of(values) * 1000.0 for name, values in times.items()}
        report[f"cpu_ms_{stat}"] = ms
        report[f"new_over_old_{stat}"] = ms["new"] / ms["old"]
    report["new_over_old"] = report["new_over_old_median"]  # the headline figure, as before
    # each query's pair, to see which queries move a mean the median does not
    report["cpu_ms_each"] = [[o * 1000.0, n * 1000.0] for o, n in zip(*times.values(), strict=True)]
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, help="source tree A (e.g. a worktree of main)")
    parser.add_argument("--new", default=".", help="source tree B")
    parser.add_argument("--size", type=int, default=10_000, help="bench scale memories")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--locomo", default="../shared/locomo_dev.json")
    parser.add_argument("--locomo-stores", action="store_true",
                        help="one store per LoCoMo conversation (k=20) instead of --size")  # fmt: skip
    parser.add_argument("--new-first", action="store_true",
                        help="build the new tree's store(s) first (default: the old tree's)")  # fmt: skip
    parser.add_argument("--json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="recall-ab-") as folder:
        sys.path.insert(0, folder)
        stores = {}
        order = ("new", "old") if args.new_first else ("old", "new")
        for side, name in ((side, NAMES[side]) for side in order):
            load(getattr(args, side), name, Path(folder))
            stores[side] = (
                locomo_stores(name, args.locomo)
                if args.locomo_stores
                else scale_stores(name, args.size, args.locomo, args.queries)
            )
        namespace = "locomo" if args.locomo_stores else "default"
        # The process's first full collection walks every object both stores hold (~0.2 s at
        # 100k memories); left to chance it lands in one recall of one tree, and the means say
        # more about where it landed than about the code. A server pays it once too. (A later
        # full collection can still land in a recall, rarely: the median is the headline.)
        # Then the stores' objects are frozen (left out of every later collection): stop 23
        # saw a later full collection (~0.1 s at 100k) land in one recall of one tree in each
        # of three runs, moving the mean by 5 % either way. Frozen, a full collection walks
        # only what the recalls themselves made, so it costs both trees alike and little.
        gc.collect()
        gc.freeze()
        report = compare(stores, 20 if args.locomo_stores else args.k, namespace)
        gc.unfreeze()
    report["workload"] = "locomo conversations" if args.locomo_stores else f"scale {args.size:,}"
    report["built_first"] = order[0]
    for side in NAMES:
        figures = ", ".join(f"{stat} {report[f'cpu_ms_{stat}'][side]:.2f}" for stat in STATS)
        print(f"{side}: {report['workload']}, recall CPU ms: {figures}")
    ratios = ", ".join(f"{stat} {report[f'new_over_old_{stat}']:.3f}" for stat in STATS)
    print(f"new/old {ratios} over {report['queries']} queries, same hits "
          f"({order[0]} tree built first)")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
