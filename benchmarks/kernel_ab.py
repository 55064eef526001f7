"""CPU time of two builds of the compiled kernel in one process, query by query (A/B).

Both libraries (same ABI) are loaded into one process with this tree's Python code; one store
of ``--size`` bench scale memories is built, and every query is asked once with each library,
in alternating order, timing the process time of the recall and of its kernel calls. The hits,
scores and breakdowns of the two must be the same, or the script fails. A busy shared machine
slows both alike; only the kernel differs, so this isolates a change to ``_kernel.c`` better than
``recall_ab.py`` (which also compares the Python of two trees).

Example (the old build from a worktree of main, the new one from this checkout):
    git worktree add --detach ../base main && (cd ../base && python hatch_build.py)
    python hatch_build.py
    .venv/bin/python benchmarks/kernel_ab.py --old ../base/cuemap_integrations \\
        --new cuemap_integrations --size 300000
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cuemap_integrations import CueMap, kernel
from cuemap_integrations.bench.scale import _fixed_clock, batches, load_corpus, queries_for

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel_blocks import kernel_timer  # noqa: E402  # the block benchmark's timer, beside this


def library(folder: str) -> Any:
    """The kernel built in ``folder``, loaded from a copy (two loads of one path share one)."""
    built = next((p for p in kernel._candidates(Path(folder)) if p.is_file()), None)
    if built is None:
        raise SystemExit(f"no kernel library in {folder}: run hatch_build.py there")
    copy = Path(tempfile.mkdtemp()) / built.name
    shutil.copy(built, copy)
    lib = kernel.load(copy.parent)
    if lib is None:
        raise SystemExit(f"{built} does not load or has another ABI than {kernel.ABI_VERSION}")
    return lib


def measure(store: CueMap, queries: list[str], libs: dict[str, Any]) -> dict[str, Any]:
    """Per library: process seconds of each recall and of the kernel calls within it."""
    seconds: dict[str, dict[str, list[float]]] = {n: {"recall": [], "kernel": []} for n in libs}
    try:
        with kernel_timer() as calls:
            for n, query in enumerate(queries):
                hits = {}
                for name in ("old", "new") if n % 2 else ("new", "old"):
                    kernel._lib, kernel._loaded, calls[0] = libs[name], True, 0.0
                    start = time.process_time()
                    found = store.recall(query, k=10, hybrid=False)
                    seconds[name]["recall"].append(time.process_time() - start)
                    seconds[name]["kernel"].append(calls[0])
                    hits[name] = [(h.memory_id, h.score, repr(h.breakdown)) for h in found]
                if hits["old"] != hits["new"]:
                    raise SystemExit(f"different results for {query!r}")
    finally:
        kernel._lib, kernel._loaded = None, False
    return seconds


def summary(seconds: dict[str, dict[str, list[float]]], warm: int) -> dict[str, Any]:
    """Medians and means (ms) after the first ``warm`` queries, and new/old ratios."""
    out: dict[str, Any] = {}
    for part in ("recall", "kernel"):
        for stat in ("median", "mean"):
            old, new = (getattr(statistics, stat)(seconds[n][part][warm:]) for n in ("old", "new"))
            out[f"{part}_ms_{stat}"] = {"old": old * 1e3, "new": new * 1e3, "ratio": new / old}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--old", required=True, help="folder with the old kernel build")
    parser.add_argument("--new", required=True, help="folder with the new kernel build")
    parser.add_argument("--size", type=int, default=300_000)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--locomo", default="../shared/locomo_dev.json")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    libs = {"old": library(args.old), "new": library(args.new)}
    corpus = load_corpus(args.locomo)
    store = CueMap(":memory:", clock=_fixed_clock)
    for batch in batches(corpus, 7, 0, args.size):
        store.add_many(batch)
    seconds = measure(store, queries_for(corpus, 7, args.queries), libs)
    figures = summary(seconds, warm=10)
    for name, row in figures.items():
        print(f"{name:18s} old {row['old']:8.3f}  new {row['new']:8.3f}  x{row['ratio']:.3f}")
    if args.json:
        report = {"size": args.size, "queries": args.queries, "figures": figures}
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
