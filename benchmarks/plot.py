"""Plot R@k (categories 1-4) and W@k (categories 1-5) against k from a ``bench locomo`` JSON report.

Usage:
    python benchmarks/plot.py benchmarks/results/locomo_dev.json benchmarks/results/locomo_dev.png

Needs matplotlib (extra ``[bench]``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


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
    parser.add_argument("report", type=Path, help="JSON written by `cuemap bench locomo --json`")
    parser.add_argument("out", type=Path, help="image file to write (e.g. .png)")
    args = parser.parse_args()
    plot(json.loads(args.report.read_text(encoding="utf-8")), args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
