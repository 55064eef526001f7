"""Where bulk ingest's time goes: each stage of ``add_many`` alone, per memory, against the whole.

The bench scale memories ``0..size-1`` go through one stage each, every stage in a fresh process
(the text module's per-token caches start cold, as they do for a bulk ingest): the cue rules
(``derive_cues``), the index's text keys (``text_keys``: terms, aliases), both as ``add_many``
runs them (keys right after cues, sharing the token caches), the secret screen (``redact``), and
the whole ``add_many`` into an in-memory store. Each stage runs ``--runs`` times; the median
process time per memory is printed with its share of ``add_many``, and ``--json`` writes them.
The stages overlap (``add_many`` includes the others), so the shares do not add up to 1.

Example:
    .venv/bin/python benchmarks/ingest_parts.py --size 20000 --runs 3 \
        --locomo /work/shared/locomo_dev.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

STAGES = ("derive_cues", "text_keys", "cues_then_keys", "redact", "add_many")


def _stage(name: str, batches: Sequence[list[dict[str, Any]]]) -> Callable[[], object]:
    """The work of stage ``name`` over ``batches`` (imports done before the clock starts)."""
    from cuemap_integrations import CueMap
    from cuemap_integrations.bench.scale import _fixed_clock
    from cuemap_integrations.redact import redact
    from cuemap_integrations.text import derive_cues
    from cuemap_integrations.textkeys import text_keys

    store = CueMap(":memory:", clock=_fixed_clock)
    contents = [item["content"] for batch in batches for item in batch]
    aliases = store.aliases
    work: dict[str, Callable[[], object]] = {
        "derive_cues": lambda: [derive_cues(c) for c in contents],
        "text_keys": lambda: [text_keys(c, aliases) for c in contents],
        "cues_then_keys": lambda: [(derive_cues(c), text_keys(c, aliases)) for c in contents],
        "redact": lambda: [redact(c) for c in contents],
        "add_many": lambda: [store.add_many(batch) for batch in batches],
    }
    return work[name]


def measure(name: str, size: int, locomo: str) -> float:
    """Process seconds per memory of stage ``name`` on the first ``size`` bench memories."""
    from cuemap_integrations.bench.scale import batches, load_corpus

    work = _stage(name, list(batches(load_corpus(locomo), 7, 0, size)))
    start = time.process_time()
    work()
    return (time.process_time() - start) / size


def run_child(name: str, args: argparse.Namespace) -> float:
    """:func:`measure` in a fresh interpreter (cold caches)."""
    command = [sys.executable, __file__, "--child", name, "--size", str(args.size),
               "--locomo", args.locomo]  # fmt: skip
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return float(json.loads(out))


def summary(seconds: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    """Each stage's median microseconds per memory and its share of ``add_many``'s median."""
    median = {name: statistics.median(values) for name, values in seconds.items()}
    whole = median["add_many"]
    return {name: {"us_per_memory": m * 1e6, "share_of_add_many": m / whole}
            for name, m in median.items()}  # fmt: skip


def table(figures: dict[str, dict[str, float]]) -> str:
    """The figures as an aligned text table."""
    lines = [f"{'stage':16s} {'us/memory':>10s} {'share of add_many':>18s}"]
    for name, row in figures.items():
        lines.append(f"{name:16s} {row['us_per_memory']:10.1f} {row['share_of_add_many']:18.2f}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--locomo", default="../shared/locomo_dev.json")
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--child", choices=STAGES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.size, args.locomo)))
        return
    seconds: dict[str, list[float]] = {name: [] for name in STAGES}
    for _ in range(args.runs):  # stage by stage within a round: a slow spell hits every stage
        for name in STAGES:
            seconds[name].append(run_child(name, args))
    figures = summary(seconds)
    print(table(figures))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"size": args.size, "runs": args.runs, "stages": figures}, out, indent=2)


if __name__ == "__main__":
    main()
