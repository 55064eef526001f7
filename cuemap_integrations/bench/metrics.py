"""Retrieval metrics for one ranked list of dia ids against a question's evidence ids.

All functions are pure. ``ranking`` is a system's ranked list of memory ids (dia ids), best
first; ``evidence`` the question's usable evidence ids (see :mod:`.data`).

* **R@k** (:func:`recall_at_k`): share of the evidence turns found in the top ``k``.
* **H@k** (:func:`hit_at_k`): 1 if any evidence turn is in the top ``k``.
* **W@k** (:func:`window_hit_at_k`): 1 if any top-``k`` turn is within ``window`` (2) turns of an
  evidence turn of the same session; sessions and turn numbers come from ``"D{session}:{turn}"``.
* **RR** (:func:`reciprocal_rank`): 1 / rank of the first evidence turn, 0 if it is absent from the
  list (the harness passes the top ``max(k)``, so the mean is MRR@max(k)).

Example:
    >>> recall_at_k(["D1:5", "D1:2", "D2:1"], ["D1:2", "D2:7"], 2)
    0.5
    >>> window_hit_at_k(["D2:5"], ["D2:7"], 1)
    1.0
    >>> reciprocal_rank(["D1:1", "D1:9", "D1:2"], ["D1:2"])
    0.3333333333333333
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from .data import parse_dia_id

__all__ = [
    "QuestionScores",
    "aggregate",
    "counts",
    "hit_at_k",
    "mean",
    "percentile",
    "reciprocal_rank",
    "recall_at_k",
    "score_question",
    "window_hit_at_k",
]

WINDOW = 2


def recall_at_k(ranking: Sequence[str], evidence: Sequence[str], k: int) -> float:
    """Share of the evidence ids found in ``ranking[:k]`` (0.0 when there is no evidence)."""
    wanted = set(evidence)
    if not wanted:
        return 0.0
    return len(wanted.intersection(ranking[:k])) / len(wanted)


def hit_at_k(ranking: Sequence[str], evidence: Sequence[str], k: int) -> float:
    """1.0 if any evidence id is in ``ranking[:k]``, else 0.0."""
    wanted = set(evidence)
    return 1.0 if any(memory_id in wanted for memory_id in ranking[:k]) else 0.0


def window_hit_at_k(
    ranking: Sequence[str], evidence: Sequence[str], k: int, window: int = WINDOW
) -> float:
    """1.0 if any id in ``ranking[:k]`` is within ``window`` turns of an evidence turn.

    Both ids must parse as ``D{session}:{turn}`` and share the session; ids that do not parse only
    count on an exact match.
    """
    targets = [(e, parse_dia_id(e)) for e in evidence]
    for memory_id in ranking[:k]:
        here = parse_dia_id(memory_id)
        for raw, there in targets:
            if memory_id == raw:
                return 1.0
            if here and there and here[0] == there[0] and abs(here[1] - there[1]) <= window:
                return 1.0
    return 0.0


def reciprocal_rank(ranking: Sequence[str], evidence: Sequence[str]) -> float:
    """1 / (1-based rank of the first evidence id in ``ranking``), 0.0 if none is there."""
    wanted = set(evidence)
    for rank, memory_id in enumerate(ranking, start=1):
        if memory_id in wanted:
            return 1.0 / rank
    return 0.0


class QuestionScores:
    """R@k, H@k, W@k for several k and RR@max(k) of one question (plain dicts, JSON-safe)."""

    __slots__ = ("hit", "recall", "rr", "window")

    def __init__(self, ranking: Sequence[str], evidence: Sequence[str], ks: Sequence[int]) -> None:
        self.recall = {k: recall_at_k(ranking, evidence, k) for k in ks}
        self.hit = {k: hit_at_k(ranking, evidence, k) for k in ks}
        self.window = {k: window_hit_at_k(ranking, evidence, k) for k in ks}
        self.rr = reciprocal_rank(ranking[: max(ks)], evidence)


def score_question(
    ranking: Sequence[str], evidence: Sequence[str], ks: Sequence[int]
) -> QuestionScores:
    """All metrics of one question for the cut-offs ``ks``."""
    return QuestionScores(ranking, evidence, ks)


def mean(values: Iterable[float]) -> float | None:
    """Arithmetic mean, None for no values (so an empty category is visible, not 0)."""
    items = list(values)
    return math.fsum(items) / len(items) if items else None


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) with linear interpolation between ranks; None if empty."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def aggregate(scores: Sequence[QuestionScores], ks: Sequence[int]) -> dict[str, object]:
    """Mean metrics over ``scores``: ``{"n", "R@k", "H@k", "W@k", "MRR"}`` (None when empty)."""
    out: dict[str, object] = {"n": len(scores)}
    for k in ks:
        out[f"R@{k}"] = mean(s.recall[k] for s in scores)
        out[f"H@{k}"] = mean(s.hit[k] for s in scores)
        out[f"W@{k}"] = mean(s.window[k] for s in scores)
    out["MRR"] = mean(s.rr for s in scores)
    return out


def counts(items: Iterable[str], kinds: Sequence[str]) -> Mapping[str, int]:
    """How many of each kind (every kind listed, zeros included, in the given order)."""
    tally = dict.fromkeys(kinds, 0)
    for item in items:
        tally[item] = tally.get(item, 0) + 1
    return tally
