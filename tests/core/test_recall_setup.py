"""What the passes of one recall rank with besides their lists (``ranking._setup``: who is
admitted, access counts, the query's bonuses, the fast scorer) is made once per recall and
shared by its passes: differential tests against a setup made again for every pass."""

from __future__ import annotations

from itertools import count
from typing import Any
from unittest import mock

import pytest

from cuemap_integrations import CueMap, ranking
from cuemap_integrations.config import RecallConfig

from .test_arrays import arrays_for_every_size
from .test_topk import _store, build, python_pass

pytest.importorskip("numpy")

# plain queries, a date (the date bonus), a speaker-free question, stop words only
QUERIES = ("order cache team", "what happened on 8 May 2023 with the team", "订单 超时", "the")


def _recalls(cm: CueMap, **options: Any) -> list[Any]:
    return [cm.recall(q, k=k, explain=True, **options) for q in QUERIES for k in (1, 5, 10)]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("arrays", [False, True])
@pytest.mark.parametrize(
    "options", [{}, {"min_score": 0.5}, {"types": ["fact", "event"]}, {"hybrid": False}]
)
def test_a_setup_shared_by_the_passes_ranks_as_one_made_per_pass(
    seed: int, arrays: bool, options: dict[str, Any]
) -> None:
    """The same hits, scores, breakdowns and traces as with a setup made for every pass (its
    key never matches), through the Python pass and the array path; and a recall makes it once
    (two stores built alike, so their access counts match too)."""
    fresh = count()
    made = 0
    real = ranking._boosts  # asked only when a setup is made

    def counted(*args: Any) -> Any:
        nonlocal made
        made += 1
        return real(*args)

    with arrays_for_every_size(narrow=True) if arrays else python_pass():
        with mock.patch.object(ranking, "_setup_key", lambda *_: (next(fresh),)):
            expected = _recalls(build(seed, 400), **options)
        with mock.patch.object(ranking, "_boosts", counted):
            got = _recalls(build(seed, 400), **options)
    assert got == expected
    assert made == len(QUERIES) * 3  # one a recall, for its two passes


def test_a_setup_is_made_again_for_another_ranking_or_period() -> None:
    """A memo asked by another ranking (other filters), or for a plan naming another period,
    gives a setup of its own."""
    cm = _store(0, 400)
    index, memo = cm._indexes["default"], ranking.RecallMemo()
    plain = ranking.plan_query("order cache", index, cm.aliases)
    dated = ranking.plan_query("order cache on 8 May 2023", index, cm.aliases)
    now, counts = cm.now(), {}
    first = ranking.Ranking(
        index, cm._records, counts, cm.config, ranking.Filters(), now, memo=memo
    )
    other = ranking.Ranking(
        index, cm._records, counts, cm.config, ranking.Filters.build(types=["fact"]), now, memo=memo
    )
    setup = ranking._setup(first, plain, memo)
    assert ranking._setup(first, plain, memo) is setup
    assert ranking._setup(other, plain, memo) is not setup
    assert ranking._setup(other, dated, memo).boosts != ranking._setup(other, plain, memo).boosts


def test_a_recall_asks_the_environment_for_the_kernel_once() -> None:
    """The feedback pass of an array recall takes its first pass's answer (the memo's), and
    ranks as a recall asking at every pass (a fresh memo's field each time)."""
    from cuemap_integrations import arrays

    seen: list[object] = []
    real = arrays.select

    def spy(index: Any, lists: Any, cfg: Any, scorer: Any, **options: Any) -> Any:
        seen.append(options["memo"].kernel)
        return real(index, lists, cfg, scorer, **options)

    def forgetful(index: Any, lists: Any, cfg: Any, scorer: Any, **options: Any) -> Any:
        options["memo"].kernel = None  # asked again
        return real(index, lists, cfg, scorer, **options)

    with arrays_for_every_size(narrow=True):
        with mock.patch.object(arrays, "select", forgetful):
            expected = build(2, 400).recall("order cache team", k=5, explain=True)
        with mock.patch.object(arrays, "select", spy):
            got = build(2, 400).recall("order cache team", k=5, explain=True)
    assert seen == [None, True]  # the first pass asked; the feedback pass read its answer
    assert got == expected


@pytest.mark.parametrize("arrays", [False, True])
def test_a_recall_decides_the_array_path_once(arrays: bool) -> None:
    """first_pass_hits and both passes' gather take the memo's answer (one _use_arrays a
    recall), which is _use_arrays' own, and the recall ranks as one asking every time."""
    from cuemap_integrations import topk

    asked: list[bool] = []
    real = topk._use_arrays

    def counted(index: Any, cfg: Any) -> bool:
        asked.append(real(index, cfg))
        return asked[-1]

    with arrays_for_every_size(narrow=True) if arrays else python_pass():
        with mock.patch.object(topk.RecallMemo, "uses_arrays", lambda self, i, c: real(i, c)):
            expected = build(3, 400).recall("order cache team", k=5, explain=True)
        with mock.patch.object(topk, "_use_arrays", counted):
            got = build(3, 400).recall("order cache team", k=5, explain=True)
    assert asked == [arrays]
    assert got == expected
    index, cfg = _store(3, 400)._indexes["default"], RecallConfig()
    with arrays_for_every_size(narrow=True) if arrays else python_pass():
        memo = topk.RecallMemo()
        for depth, k in ((5, 10), (5, 3), (8, 8)):
            alone = topk.first_pass_hits(index, cfg, k, depth)
            assert topk.first_pass_hits(index, cfg, k, depth, memo) == alone
