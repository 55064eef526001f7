"""Instructions per cold recall, or per memory ingested, counted by callgrind (not seconds).

A shared machine moves timings by tens of percent from one run to the next; callgrind's count of
executed instructions is the same for the same binary and inputs whatever else runs, so two trees
compare by it. This script runs itself under ``valgrind --tool=callgrind`` with collection off,
builds a store of ``--size`` bench scale memories (not counted), asks 10 questions (the first
recall builds the namespace's array view: not counted), then switches collection on
(``callgrind_control``) only around what it measures:

* ``recall``: 100 distinct LoCoMo questions, each asked once (cold, as ``cuemap bench scale``
  asks its queries);
* ``ingest``: ``add_many`` of the next 2,000 bench memories into that store (after a recall,
  so through the array view's path: a live store's ingest, not the bench's fresh one).

It prints the instructions per operation and the callgrind file (``callgrind_annotate FILE``).
Calls into the kernel go through libffi; callgrind books most of their cost to libffi's call
trampoline, not to the ``cm_*`` functions.

Example (needs valgrind):
    .venv/bin/python benchmarks/instr.py recall --size 100000 --locomo ../shared/locomo_dev.json
    PYTHONPATH=../old .venv/bin/python benchmarks/instr.py recall --size 100000 --locomo ...
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

QUESTIONS = 100
INGESTED = 2000


def _switch(flag: str) -> None:
    """Turn callgrind's collection on or off for this process (it polls for the command)."""
    subprocess.run(["callgrind_control", "-i", flag, str(os.getpid())], check=True,
                   capture_output=True)  # fmt: skip
    time.sleep(0.5)


def measured(mode: str, size: int, locomo: str, warm: int = 10) -> int:
    """Inside valgrind: build the store and ask ``warm`` questions, then run the counted part
    between switching collection on and off; returns how many operations it counted."""
    from cuemap_integrations.bench import scale
    from cuemap_integrations.core import CueMap

    corpus = scale.load_corpus(locomo)
    store = CueMap(":memory:", clock=scale._fixed_clock)
    for batch in scale.batches(corpus, 7, 0, size):
        store.add_many(batch)
    questions = list(dict.fromkeys(corpus.questions))
    for question in questions[:warm]:
        store.recall(question, k=10)
    asked = questions[warm : warm + QUESTIONS]
    added = list(scale.batches(corpus, 7, size, size + INGESTED))
    _switch("on")
    if mode == "recall":
        for question in asked:
            store.recall(question, k=10)
    else:
        for batch in added:
            store.add_many(batch)
    _switch("off")
    return len(asked) if mode == "recall" else INGESTED


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("recall", "ingest"))
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--locomo", default="../shared/locomo_dev.json")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside:
        print(f"operations {measured(args.mode, args.size, args.locomo)}", file=sys.stderr)
        return
    out = tempfile.mkstemp(prefix="callgrind.", suffix=".out")[1]
    ran = subprocess.run(
        ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
         sys.executable, __file__, args.mode, "--size", str(args.size), "--locomo", args.locomo,
         "--inside"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    total = int(re.search(r"Collected : (\d+)", ran.stderr).group(1))  # type: ignore[union-attr]
    count = int(re.search(r"operations (\d+)", ran.stderr).group(1))  # type: ignore[union-attr]
    print(f"{args.mode} at {args.size:,} memories: {total / count:,.0f} instructions per "
          f"{'recall' if args.mode == 'recall' else 'memory'} ({total:,} over {count:,}); "
          f"profile: {out}")  # fmt: skip


if __name__ == "__main__":
    main()
