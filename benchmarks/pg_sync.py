"""What sharing a store through PostgreSQL costs, against SQLite measured in the same run.

Loads one LoCoMo conversation (every turn a memory) into an in-memory SQLite store (the baseline)
and into a fresh PostgreSQL schema, then times recall (median over the conversation's questions)
with ``sync="each_recall"`` and ``sync="interval"``, and the time from instance A's ``add`` to
instance B recalling that memory.

Usage (from the project root; the schema is created and dropped)::

    .venv/bin/python benchmarks/pg_sync.py postgresql://postgres@127.0.0.1:5432/test \\
        --locomo ../shared/locomo_dev.json --json benchmarks/results/pg_sync.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cuemap_integrations import CueMap


def _conversation(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    sample = json.loads(path.read_text(encoding="utf-8"))[0]
    turns = [
        turn
        for key, value in sample["conversation"].items()
        if key.startswith("session_") and isinstance(value, list)
        for turn in value
    ]
    items = [{"content": f"{t['speaker']}: {t['text']}", "memory_id": t["dia_id"]} for t in turns]
    return items, [q["question"] for q in sample["qa"]]


def _median_ms(calls: list[Callable[[], object]]) -> float:
    times = []
    for call in calls:
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def _recall_ms(cm: CueMap, queries: list[str]) -> float:
    cm.recall("warm up")
    return _median_ms([lambda q=q: cm.recall(q, k=10) for q in queries])


def _propagation_ms(url: str, n: int = 50) -> float:
    with CueMap(url) as a, CueMap(url) as b:

        def add_then_recall(i: int) -> None:
            a.add(f"fresh note {i} about zebra{i}", memory_id=f"z{i}")
            assert b.recall(f"zebra{i}", k=1).memory_ids == [f"z{i}"]

        return _median_ms([lambda i=i: add_then_recall(i) for i in range(n)])


def run(server: str, locomo: Path, queries: int) -> dict[str, float]:
    import psycopg

    items, questions = _conversation(locomo)
    questions = questions[:queries]
    schema = f"cuemap_bench_{os.getpid()}"
    url = f"{server}{'&' if '?' in server else '?'}options=-csearch_path%3D{schema}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        try:
            with CueMap() as lite, CueMap(url) as pg:
                figures = {
                    "memories": float(len(items)),
                    "queries": float(len(questions)),
                    "add_many_s_sqlite": _median_ms([lambda: lite.add_many(items)]) / 1000,
                    "add_many_s_postgres": _median_ms([lambda: pg.add_many(items)]) / 1000,
                    "recall_p50_ms_sqlite": _recall_ms(lite, questions),
                    "recall_p50_ms_pg_each_recall": _recall_ms(pg, questions),
                }
            with CueMap(url, sync="interval", sync_interval=60) as pg:
                figures["recall_p50_ms_pg_interval"] = _recall_ms(pg, questions)
            figures["a_add_to_b_recall_p50_ms"] = _propagation_ms(url)
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")
    base = figures["recall_p50_ms_sqlite"]
    figures["ratio_each_recall_vs_sqlite"] = figures["recall_p50_ms_pg_each_recall"] / base
    figures["ratio_interval_vs_sqlite"] = figures["recall_p50_ms_pg_interval"] / base
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("server", help="postgresql:// URL of a database to make a schema in")
    parser.add_argument("--locomo", type=Path, default=Path("../shared/locomo_dev.json"))
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    figures = run(args.server, args.locomo, args.queries)
    for name, value in figures.items():
        print(f"{name:32} {value:10.3f}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
