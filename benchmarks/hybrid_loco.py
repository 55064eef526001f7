"""Choose the hybrid fallback's parameters by leave-one-conversation-out, and score them held out.

Each conversation of a LoCoMo-format file is one user's store. For every fold, the parameters
(``min_coverage``, ``min_results``, ``max_fill`` of
:class:`~cuemap_integrations.hybrid.HybridRecall`) are chosen on the other conversations and
scored on the held-out one; the estimate for conversations we have not seen is the mean of the
held-out scores (one per conversation).

* Quality is R@10 over categories 1-4 (strict), as in ``cuemap bench locomo``; a fold's choice
  maximises the training conversations' R@10 over all their questions; ties go to the lower fire
  rate (fewer query embeddings), then to the earlier grid point.
* The ranking of every grid point goes through the real ``HybridRecall.extend`` on the store's
  own deterministic hits (computed once per question at ``--depth``, the bench's depth) and its
  FAISS index; query vectors are computed once and reused across grid points.
* The bench memories have no expiry or supersession, so every dense match is admitted by the
  recall's filters here (``admits`` is constant True).

Usage (from the project root, extra ``[hybrid]``; about 5 minutes on 2 busy cores)::

    .venv/bin/python benchmarks/hybrid_loco.py ../shared/locomo_dev.json \\
        --json benchmarks/results/hybrid_loco.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from cuemap_integrations.bench.data import STRICT_CATEGORIES, Conversation, load_locomo
from cuemap_integrations.bench.locomo import scored
from cuemap_integrations.bench.metrics import hit_at_k, recall_at_k
from cuemap_integrations.bench.systems import NAMESPACE, build_store
from cuemap_integrations.events import RecallRequest
from cuemap_integrations.hybrid import HybridRecall
from cuemap_integrations.results import Hit

COVERAGES = (0.5, 0.6, 0.67, 0.75, 1.0)
MIN_RESULTS: tuple[int | None, ...] = (1, 2, 3, 5, 10, None)
MAX_FILLS = (1, 2, 3, 5, 10)
Point = tuple[float, int | None, int]
Table = dict[str, dict[Point, list[tuple[float, float, bool]]]]  # sample -> point -> per question
Baseline = dict[str, list[tuple[float, float]]]  # sample -> the rules' (R@10, H@10) per question


def mean(values: Iterable[float]) -> float:
    """The mean (0.0 for nothing: a conversation without strict questions)."""
    items = list(values)
    return sum(items) / len(items) if items else 0.0


class MemoEmbedder:
    """Wraps an embedder: each distinct query is embedded once for the whole grid."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name: str = inner.name
        self.dimension: int = inner.dimension
        self._queries: dict[str, list[float]] = {}

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """The inner embedder's vectors (memories: once per store, no cache needed)."""
        vectors: list[list[float]] = self.inner.embed(texts)
        return vectors

    def embed_query(self, text: str) -> list[float]:
        """The query's vector, computed on first use."""
        if text not in self._queries:
            from cuemap_integrations.embeddings import embed_query

            self._queries[text] = embed_query(self.inner, text)
        return self._queries[text]


@dataclass(frozen=True)
class Asked:
    """One scored question with its deterministic hits."""

    sample_id: str
    query: str
    evidence: tuple[str, ...]
    hits: tuple[Hit, ...]


def _always(_record: object) -> bool:
    return True


def deterministic(
    conversation: Conversation, embedder: MemoEmbedder, depth: int
) -> tuple[HybridRecall, list[Asked]]:
    """The conversation's hybrid store and every strict question's deterministic hits."""
    store = build_store(conversation, hybrid={"embedder": embedder, "progress": False})
    extension = store.extension
    assert isinstance(extension, HybridRecall)
    asked = [
        Asked(conversation.sample_id, q.text, tuple(q.evidence),
              tuple(store.recall(q.text, k=depth, namespace=NAMESPACE, hybrid=False)))
        for q in conversation.questions if scored(q, STRICT_CATEGORIES)
    ]  # fmt: skip
    return extension, asked


def run_point(
    extension: HybridRecall, asked: Sequence[Asked], point: Point, depth: int
) -> list[tuple[float, float, bool]]:
    """(R@10, H@10, fired) of every question with the fallback set to ``point``."""
    extension.min_coverage, extension.min_results, extension.max_fill = point
    rows = []
    for question in asked:
        before = extension.stats().fired
        request = RecallRequest(question.query, depth, NAMESPACE, None, _always)
        ids = [hit.memory_id for hit in extension.extend(request, question.hits)]
        fired = extension.stats().fired > before
        rows.append((recall_at_k(ids, question.evidence, 10),
                     hit_at_k(ids, question.evidence, 10), fired))  # fmt: skip
    return rows


def pooled(table: Table, samples: Sequence[str],
           point: Point) -> tuple[float, float, float]:  # fmt: skip
    """Mean R@10, H@10 and fire rate over every question of ``samples``."""
    rows = [row for s in samples for row in table[s][point]]
    return (mean(r for r, _, _ in rows), mean(h for _, h, _ in rows),
            mean(1.0 if f else 0.0 for _, _, f in rows))  # fmt: skip


def choose(table: Table, samples: Sequence[str],
           grid: Sequence[Point]) -> Point:  # fmt: skip
    """Highest R@10 on ``samples``; ties: lower fire rate, then grid order."""
    scores = {p: pooled(table, samples, p) for p in grid}
    return min(grid, key=lambda p: (-round(scores[p][0], 12), round(scores[p][2], 12),
                                    grid.index(p)))  # fmt: skip


def loco(path: str, depth: int, model: Any = None) -> dict[str, Any]:
    """The whole procedure; returns the JSON report (see :func:`measure` for the arguments)."""
    table, baseline, grid = measure(path, depth, model)
    return report(table, baseline, grid, path, depth)


def measure(path: str, depth: int, model: Any = None) -> tuple[Table, Baseline, list[Point]]:
    """(R@10, H@10, fired) per conversation, grid point and question; the rules' own scores.

    Args:
        path: a LoCoMo-format file with at least two conversations.
        depth: hits per recall.
        model: an embedder (``as_embedder`` accepts it); None for all-MiniLM-L6-v2.
    """
    from cuemap_integrations.embeddings import as_embedder

    embedder = MemoEmbedder(as_embedder(model))
    grid: list[Point] = list(itertools.product(COVERAGES, MIN_RESULTS, MAX_FILLS))
    table: Table = {}
    baseline: Baseline = {}
    conversations = load_locomo(path)
    if len(conversations) < 2:
        raise SystemExit(f"hybrid_loco.py: {path} has {len(conversations)} conversation(s); "
                         "leaving one out needs at least 2")  # fmt: skip
    for conversation in conversations:
        extension, asked = deterministic(conversation, embedder, depth)
        sample = conversation.sample_id
        baseline[sample] = [(recall_at_k([h.memory_id for h in q.hits], q.evidence, 10),
                             hit_at_k([h.memory_id for h in q.hits], q.evidence, 10))
                            for q in asked]  # fmt: skip
        table[sample] = {p: run_point(extension, asked, p, depth) for p in grid}
        print(f"hybrid loco: {sample} done", file=sys.stderr, flush=True)
    return table, baseline, grid


def report(table: Table,
           baseline: Baseline, grid: Sequence[Point], path: str,
           depth: int) -> dict[str, Any]:  # fmt: skip
    """Per-fold picks and held-out scores, their means, and the pick on every conversation."""
    samples = list(table)
    folds: list[tuple[str, Point, dict[str, float]]] = []
    for held in samples:
        point = choose(table, [s for s in samples if s != held], grid)
        r, h, fire = pooled(table, [held], point)
        base = baseline[held]
        scores = {
            "R@10": r,
            "H@10": h,
            "fire_rate": fire,
            "cuemap_R@10": mean(x for x, _ in base),
            "cuemap_H@10": mean(y for _, y in base),
        }
        folds.append((held, point, scores))  # fmt: skip
    everything = choose(table, samples, grid)
    return {
        "benchmark": "hybrid-fallback-loco",
        "file": path,
        "depth": depth,
        "metric": "R@10 strict (categories 1-4), chosen on the other conversations",
        "grid": {"min_coverage": list(COVERAGES), "min_results": list(MIN_RESULTS),
                 "max_fill": list(MAX_FILLS)},  # fmt: skip
        "folds": [{"held_out": held, "chosen": _named(point), **scores}
                  for held, point, scores in folds],
        "held_out_mean": {key: mean(scores[key] for _, _, scores in folds)
                          for key in ("R@10", "H@10", "fire_rate", "cuemap_R@10", "cuemap_H@10")},
        "chosen_on_all": _named(everything),
        "all_points": [{**_named(p), **dict(zip(("R@10", "H@10", "fire_rate"),
                                                 pooled(table, samples, p), strict=True))}
                       for p in grid],
    }  # fmt: skip


def _named(point: Point) -> dict[str, Any]:
    return dict(zip(("min_coverage", "min_results", "max_fill"), point, strict=True))


def main(argv: Sequence[str] | None = None) -> int:
    """``hybrid_loco.py FILE [--depth 20] [--json OUT]``: prints the folds and the mean."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", help="a LoCoMo-format JSON file (e.g. ../shared/locomo_dev.json)")
    parser.add_argument("--depth", type=int, default=20, help="hits per recall (bench: max k)")
    parser.add_argument("--json", help="write the full report here")
    args = parser.parse_args(argv)
    result = loco(args.path, args.depth)
    for fold in result["folds"]:
        print(f"{fold['held_out']}: chosen {fold['chosen']} -> R@10 {fold['R@10']:.4f} "
              f"H@10 {fold['H@10']:.4f} fire {fold['fire_rate']:.3f} "
              f"(cuemap {fold['cuemap_R@10']:.4f})")  # fmt: skip
    means = result["held_out_mean"]
    print(f"held-out mean: R@10 {means['R@10']:.4f} H@10 {means['H@10']:.4f} fire "
          f"{means['fire_rate']:.3f} (cuemap {means['cuemap_R@10']:.4f}); "
          f"chosen on all: {result['chosen_on_all']}")  # fmt: skip
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(result, out, indent=1)
            out.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
