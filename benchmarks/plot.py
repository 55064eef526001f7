"""Plot a ``bench locomo`` report (R@k and W@k per system) or a ``bench scale`` report (recall
latency and ingest rate against store size, CueMap and bm25s).

Usage:
    python benchmarks/plot.py benchmarks/results/locomo_dev.json benchmarks/results/locomo_dev.png
    python benchmarks/plot.py benchmarks/results/scale.json benchmarks/results/scale.png
    python benchmarks/plot.py results/scale.json results/scale_1m.json results/scale.png  # one plot

Needs matplotlib (extra ``[bench]``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def plot_scale(report: dict[str, Any], out: Path) -> None:
    """Recall p50/p95 and ingest rate against store size (log-log), CueMap and bm25s."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [row for row in report["sizes"] if "cuemap" in row]
    sizes = [row["size"] for row in rows]
    # bm25s at the sizes measured with it (a run may leave it out: --no-bm25s)
    both = [row for row in rows if "bm25s" in row]
    bm_sizes = [row["size"] for row in both]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for label, key in (("p50", "p50"), ("p95", "p95")):
        left.plot(
            sizes,
            [r["cuemap"]["recall_ms"][key] for r in rows],
            marker="o",
            label=f"cuemap {label}",
        )
        left.plot(bm_sizes, [r["bm25s"]["query_ms"][key] for r in both], marker="s",
                  linestyle="--", label=f"bm25s {label}")  # fmt: skip
    right.plot(
        sizes, [r["cuemap"]["ingest_per_s"] for r in rows], marker="o", label="cuemap (memory)"
    )
    right.plot(sizes, [r["cuemap"]["durable_file"]["ingest_per_s"] for r in rows], marker="o",
               label="cuemap (SQLite, durable)")  # fmt: skip
    right.plot(bm_sizes, [r["bm25s"]["build_per_s"] for r in both], marker="s",
               linestyle="--", label="bm25s (index build)")  # fmt: skip
    left.set_title("recall latency, k=10 (ms)")
    right.set_title("bulk ingest (memories/s)")
    for axis in (left, right):
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("memories in the store")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    fig.suptitle("cuemap vs bm25s by store size (each size: both measured in one run, when both)")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)


def plot(report: dict[str, Any], out: Path) -> None:
    """Two panels, one line per system, written to ``out`` (PNG, SVG... by extension)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = report["config"]["ks"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for name, res in report["systems"].items():
        left.plot(ks, [res["overall"][f"R@{k}"] for k in ks], marker="o", label=name)
        right.plot(ks, [res["with_adversarial"]["W"][str(k)] for k in ks], marker="o", label=name)
    left.set_title("R@k, categories 1-4")
    right.set_title("W@k (±2 turns), categories 1-5")
    for axis in (left, right):
        axis.set_xlabel("k")
        axis.set_xticks(ks)
        axis.grid(alpha=0.3)
    left.set_ylabel("score")
    left.legend(loc="lower right")
    fig.suptitle(f"LoCoMo retrieval ({len(report['config']['conversations'])} conversations)")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "reports", type=Path, nargs="+",
        help="JSON of `cuemap bench locomo|scale --json`; several scale reports are drawn as one",
    )  # fmt: skip
    parser.add_argument("out", type=Path, help="image file to write (e.g. .png)")
    args = parser.parse_args()
    reports = [json.loads(path.read_text(encoding="utf-8")) for path in args.reports]
    if all("sizes" in report for report in reports):
        sizes = sorted((row for r in reports for row in r["sizes"]), key=lambda row: row["size"])
        plot_scale({**reports[0], "sizes": sizes}, args.out)
    elif len(reports) == 1:
        plot(reports[0], args.out)
    else:
        parser.error("several reports can only be scale reports")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
