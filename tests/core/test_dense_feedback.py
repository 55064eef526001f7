"""The feedback pass after a first pass that read the query's own lists whole
(``arrays._after_dense``): differential tests against the call over every memory it replaces."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest

from cuemap_integrations import CueMap, arrays, kernel

from .test_arrays import arrays_for_every_size
from .test_kernel import through_the_kernel
from .test_topk import _store

pytest.importorskip("numpy")

__all__ = ["through_the_kernel"]  # its autouse fixture: every test here runs through the kernel

QUERIES = ("order cache team", "caroline painting festival", "the", "订单 超时 team", "team team")


def _recalls(cm: CueMap, **options: Any) -> list[Any]:
    return [cm.recall(q, k=k, explain=True, **options) for q in QUERIES for k in (1, 5, 10)]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("narrow", [False, True])
@pytest.mark.parametrize("options", [{}, {"min_score": 0.5}, {"types": ["fact", "event"]}])
def test_the_feedback_pass_after_a_dense_first_pass_ranks_as_over_every_memory(
    seed: int, narrow: bool, options: dict[str, Any]
) -> None:
    """The same rows (memories, evidence to the bit) as the feedback pass's call over every
    memory with the first pass's floor, so the same hits, scores, breakdowns and traces (two
    stores built alike, so their access counts match too)."""
    taken: list[bool] = []
    real = arrays._after_dense

    def spy(view: Any, described: Any, weights: Any, cfg: Any, scorer: Any, floor: float,
            dense: Any) -> Any:  # fmt: skip
        found = real(view, described, weights, cfg, scorer, floor, dense)
        taken.append(found is not None)
        if found is not None:  # the rows of the call over every memory with that floor
            least = kernel.Floor(scorer.prior_max, floor - arrays._EPSILON)
            every = kernel.accumulate(view, described.lists, weights, floor=least)
            assert found[0].tolist() == every.slots.tolist()
            for got, want in ((found[1].evidence, every.evidence), (found[1].jump, every.jump),
                              (found[1].only, every.tag_only)):  # fmt: skip
                assert got.tobytes() == want.tobytes()
        return found

    # any share of the first pass's memories probed (at 400 memories the session weight keeps
    # most of them within reach of the floor)
    with arrays_for_every_size(narrow=narrow), mock.patch.object(arrays, "_DENSE_SHARE", 1):
        with mock.patch.object(arrays, "_after_dense", lambda *args: None):
            expected = _recalls(_store(seed, 400), **options)
        with mock.patch.object(arrays, "_after_dense", spy):
            got = _recalls(_store(seed, 400), **options)
    assert got == expected
    if not narrow:  # every first pass reads its lists whole: the shortcut runs
        assert any(taken)


def test_a_pass_that_also_carried_session_cues_keeps_no_dense_sums() -> None:
    """Only a pass over the query's own lists alone leaves its sums for a later pass: a session
    turn's first pass also carries the last turn's cues, and its feedback pass reads whole."""
    cm = _store(0, 400)
    calls: list[Any] = []
    with (
        arrays_for_every_size(narrow=False),
        mock.patch.object(arrays, "_after_dense", lambda *args: calls.append(args[-1])),
    ):
        session = cm.session("s1")
        session.recall("order cache team", k=5)
        assert calls  # the first turn carries nothing: its feedback pass may start from them
        calls.clear()
        session.recall("caroline painting festival", k=5)
    assert calls == []
