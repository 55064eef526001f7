"""CPU time per recall, and of its kernel calls, for several ``kernel.BLOCK_SEQS``, on one store.

The kernel sums every list a block of sequence numbers at a time; the sums are the same floats
for any block size (tests/core/test_kernel.py), so this only measures which size is cheaper,
which is how ``kernel.BLOCK_SEQS`` was chosen (a size of 2**40 is one block: each list added
whole, as before blocks). Every query is asked once per block size, the sizes in a rotated
order query by query (no size always runs on caches another left warm), timing process time;
the hits must be the same. Prints a table and, with ``--json``, writes the figures.

Example:
    .venv/bin/python benchmarks/kernel_blocks.py --size 1000000 --blocks 1099511627776,32768,8192
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cuemap_integrations import CueMap, kernel
from cuemap_integrations.bench.scale import _fixed_clock, batches, load_corpus, queries_for


@contextmanager
def kernel_timer() -> Iterator[list[float]]:
    """``[seconds]``: the process time of the kernel's accumulate calls made meanwhile (set it
    to 0.0 to start again); ``kernel.accumulate`` is timed until the block ends."""
    calls = [0.0]
    accumulate = kernel.accumulate

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return accumulate(*args, **kwargs)
        finally:
            calls[0] += time.process_time() - start

    kernel.accumulate = timed  # type: ignore[assignment]
    try:
        yield calls
    finally:
        kernel.accumulate = accumulate  # type: ignore[assignment]


def measure(store: CueMap, queries: list[str], blocks: list[int]) -> dict[int, dict[str, Any]]:
    """Per block size: process seconds of each recall and of the kernel calls within it."""
    seconds: dict[int, dict[str, list[float]]] = {b: {"recall": [], "kernel": []} for b in blocks}
    with kernel_timer() as calls:
        for n, query in enumerate(queries):
            hits = set()
            for block in blocks[n % len(blocks) :] + blocks[: n % len(blocks)]:
                kernel.BLOCK_SEQS, calls[0] = block, 0.0
                start = time.process_time()
                found = store.recall(query, k=10, hybrid=False)
                seconds[block]["recall"].append(time.process_time() - start)
                seconds[block]["kernel"].append(calls[0])
                hits.add(tuple(hit.memory_id for hit in found))
            if len(hits) != 1:
                raise SystemExit(f"different hits for {query!r} across block sizes")
    return {
        block: {
            f"{part}_ms_{stat}": getattr(statistics, stat)(values) * 1000.0
            for part, values in parts.items()
            for stat in ("median", "mean")
        }
        for block, parts in seconds.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=300_000)
    parser.add_argument("--blocks", default="1099511627776,32768,8192,2048")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--locomo", default="../shared/locomo_dev.json")
    parser.add_argument("--json")
    args = parser.parse_args()
    if not kernel.enabled():
        raise SystemExit("the compiled kernel is not available (python hatch_build.py builds it)")
    blocks = [int(block) for block in args.blocks.split(",")]
    corpus = load_corpus(args.locomo)
    store = CueMap(":memory:", clock=_fixed_clock)
    for batch in batches(corpus, 7, 0, args.size):
        store.add_many(batch)
    queries = queries_for(corpus, 7, args.queries)
    measure(store, queries[:20], blocks)  # warm the view, the scratch and the caches
    report = measure(store, queries, blocks)
    print(f"{args.size:,} memories, {len(queries)} queries, CPU ms per recall (median / mean)")
    print(f"{'block':>15} {'recall':>17} {'kernel calls':>17}")
    for block, row in report.items():
        print(f"{block:>15,} {row['recall_ms_median']:>8.2f} / {row['recall_ms_mean']:<6.2f} "
              f"{row['kernel_ms_median']:>8.2f} / {row['kernel_ms_mean']:<6.2f}")  # fmt: skip
    if args.json:
        out = {"size": args.size, "queries": len(queries), "blocks": report}
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
