"""Whole recall results of two source trees side by side: hits, exact scores, breakdowns, traces.

``recall_ab.py`` asserts the same hit ids while timing; this compares everything a recall returns
(each hit's record with its access count, its score as ``repr`` of the float, its
``ScoreBreakdown``, the ``RecallTrace`` and the notes), for a plain top-k and a ``min_score``
recall of every query, in two rounds (the second sees the access counts the first wrote, and
flushed). Both trees load as in ``recall_ab.py`` (a copy each under its own package name).

Example:
    .venv/bin/python benchmarks/recall_same.py --old ../old --new . --size 10000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import recall_ab  # noqa: E402  # the loaders of the timing script, beside this one

ROUNDS = 2
ASKED = ({"k": 10}, {"k": 3, "min_score": 1.0})  # each query's recalls


def dump(result: Any) -> str:
    """Everything ``result`` holds, with the package names made equal."""
    hits = [
        (repr(hit.memory), repr(hit.score), repr(hit.breakdown), hit.source, hit.conflicts)
        for hit in result.hits
    ]
    text = repr((hits, result.trace, result.notes))
    return text.replace(recall_ab.NAMES["old"], "cm").replace(recall_ab.NAMES["new"], "cm")


def differences(old: Any, new: Any, queries: list[str]) -> tuple[int, int]:
    """``(recalls compared, recalls that differ)``; the first few differences are printed."""
    compared = differing = 0
    for _ in range(ROUNDS):
        for query in queries:
            for options in ASKED:
                a, b = (dump(s.recall(query, hybrid=False, explain=True, **options))
                        for s in (old, new))  # fmt: skip
                compared += 1
                if a != b:
                    differing += 1
                    if differing <= 2:
                        print(f"differs for {query!r} {options}:\n  old {a}\n  new {b}")
    return compared, differing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, help="source tree A (e.g. a worktree of main)")
    parser.add_argument("--new", default=".", help="source tree B")
    parser.add_argument("--size", type=int, default=10_000, help="bench scale memories")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--locomo", default="../shared/locomo_dev.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="recall-same-") as folder:
        sys.path.insert(0, folder)
        stores = {}
        for side, name in recall_ab.NAMES.items():
            recall_ab.load(getattr(args, side), name, Path(folder))
            stores[side] = recall_ab.scale_stores(name, args.size, args.locomo, args.queries)[0]
        (old, queries), (new, _) = stores["old"], stores["new"]
        compared, differing = differences(old, new, queries)
    print(f"scale {args.size:,}: {compared} recalls compared, {differing} differ")
    if differing:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
