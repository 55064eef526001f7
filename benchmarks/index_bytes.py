"""Where the index bytes per memory of ``bench scale`` go: its traced build, by allocation line.

The same build as the bench's "index bytes per memory beyond text" (``scale._traced_cuemap_bytes``:
bench scale memories ``0..size-1`` added in batches to a new in-memory store under
``tracemalloc``), with a snapshot before and after: the total is the bench's figure, and each
row is one line of code's share of the growth, in bytes and blocks per memory (content strings
included: the total subtracts them, the rows do not). For planning memory work, not a target.

Example:
    .venv/bin/python benchmarks/index_bytes.py --size 100000 --top 20 \\
        --locomo /work/shared/locomo_dev.json
"""

from __future__ import annotations

import argparse
import json
from typing import Any


def measure(size: int, locomo: str, top: int) -> dict[str, Any]:
    """The bench's traced build of ``size`` memories, with its ``top`` growing lines."""
    from cuemap_integrations.bench.scale import _traced_cuemap_bytes, load_corpus

    return {"size": size, **_traced_cuemap_bytes(load_corpus(locomo), 7, size, sites=top)}


def table(figures: dict[str, Any]) -> str:
    """The figures as an aligned text table, the total first."""
    lines = [f"index bytes per memory beyond text: {figures['index_bytes_per_memory']:.1f} "
             f"(content str {figures['content_str_bytes'] / figures['size']:.1f})",
             f"{'B/memory':>9s} {'blocks':>7s}  site"]  # fmt: skip
    for row in figures["sites"]:
        lines.append(
            f"{row['bytes_per_memory']:9.1f} {row['blocks_per_memory']:7.2f}  {row['site']}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--locomo", default="../shared/locomo_dev.json")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()
    figures = measure(args.size, args.locomo, args.top)
    print(table(figures))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(figures, out, indent=2)


if __name__ == "__main__":
    main()
