"""A narrowing check's steps in C (``kernel.bounds``, ``kernel.keep`` and ``arrays._bounds``,
``arrays._compiled_reach``) give what NumPy gives (differential tests): each candidate's prior
and lower bound bit for bit, the best block in order, the k-th best admitted lower bound, the
same kept candidates with the same base, and the same theta.

``CUEMAP_REQUIRE_KERNEL=1`` (CI) makes a missing kernel fail these tests instead of skipping
them."""

from __future__ import annotations

import math
import random
from typing import Any, NamedTuple

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cuemap_integrations import CueMap, arrays, kernel

from .test_kernel import _EVIDENCE, _scorer, through_the_kernel, viewed

pytest.importorskip("numpy")

__all__ = ["through_the_kernel", "viewed"]  # fixtures: the kernel on, a store of 400 memories


def _rows(view: arrays.ArrayView, count: int, rnd: random.Random, ascending: bool = True) -> Any:
    """``count`` distinct slots of the view, ascending (as the kernel's rows are) or not (then
    a later row may tie with an earlier one of a larger seq)."""
    np = arrays._np()
    slots = rnd.sample(range(view.size), count)
    return np.array(sorted(slots) if ascending else slots, dtype=np.int64)


class _Case(NamedTuple):
    """Random rows of the view: their slots (ascending), evidence, tag-only flags, the seqs the
    filters admit, and the random source that drew them (for more)."""

    slots: Any
    evidence: Any
    only: Any
    allowed: set[int]
    rnd: random.Random


def _case(
    view: arrays.ArrayView, evidence: list[float], tag_share: float, admitted_share: float,
    seed: int,
) -> _Case:  # fmt: skip
    np, rnd = arrays._np(), random.Random(seed)
    slots = _rows(view, len(evidence), rnd)
    only = np.array([rnd.random() < tag_share for _ in evidence], dtype=bool)
    allowed = {int(view.seq_at[s]) for s in slots if rnd.random() < admitted_share}
    return _Case(slots, np.array(evidence, dtype=np.float64), only, allowed, rnd)


def _numpy(name: str, *args: Any) -> Any:
    """``arrays.<name>(*args)`` with the kernel off (the NumPy reference)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CUEMAP_KERNEL", "0")
        return getattr(arrays, name)(*args)


# hypothesis's settings of every test here (the fixture's store is shared, never changed)
_EXAMPLES = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
_DAYS = st.sampled_from([-2.0, 0.0, 0.5, 1.0, 30.0, 400.0])  # before T0: ages clamped at 0


@_EXAMPLES
@given(
    evidence=st.lists(_EVIDENCE, max_size=150),
    m=st.integers(0, 160),
    tag_share=st.sampled_from([0.0, 0.3, 1.0]),
    ascending=st.booleans(),
    recency=st.sampled_from([0.0, 0.2, 1.0]),
    type_weight=st.sampled_from([0.0, 0.1]),
    days=_DAYS,
    seed=st.integers(0, 2**16),
)  # fmt: skip
@example(  # ties at the heap's edge, rows not in seq order: a tied row of a smaller seq enters
    evidence=[1.0] * 40, m=10, tag_share=0.0, ascending=False, recency=0.0, type_weight=0.0,
    days=1.0, seed=3,
)  # fmt: skip
def test_bounds_are_the_numpy_priors_lower_bounds_and_order_bit_for_bit(
    viewed: tuple[CueMap, arrays.ArrayView], evidence: list[float], m: int, tag_share: float,
    recency: float, type_weight: float, days: float, ascending: bool, seed: int,
) -> None:  # fmt: skip
    """Differential: kernel.bounds gives arrays._priors (without the bonus) and the evidence
    plus it, bit for bit, and the first m rows of np.lexsort((seqs, -lower)) of the rows not
    skipped (in any order)."""
    _, view = viewed
    np, rnd = arrays._np(), random.Random(seed)
    slots = _rows(view, len(evidence), rnd, ascending)
    ev = np.array(evidence, dtype=np.float64)
    skip = np.array([rnd.random() < tag_share for _ in evidence], dtype=bool)
    scorer = _scorer(view, recency, type_weight, days)
    prior = arrays._priors(view, slots, scorer)
    lower = ev + prior
    found = kernel.bounds(view, slots, ev, skip, arrays._ranking(view, scorer, None), m)
    assert found.prior.tobytes() == np.asarray(prior, dtype=np.float64).tobytes()
    assert found.lower.tobytes() == lower.tobytes()
    kept = np.flatnonzero(~skip)
    seqs = view.seq_at[slots[kept]]
    order = np.lexsort((seqs, -lower[kept]))
    expected = (seqs[order].tolist()[:m], lower[kept][order].tolist()[:m])
    assert (list(found.best.seqs), list(found.best.keys)) == expected


@_EXAMPLES
@given(
    evidence=st.lists(_EVIDENCE, max_size=150),
    k=st.integers(1, 12),
    tag_share=st.sampled_from([0.0, 0.3]),
    admitted_share=st.sampled_from([0.0, 0.05, 0.3, 1.0]),
    recency=st.sampled_from([0.0, 0.2]),
    type_weight=st.sampled_from([0.0, 0.1]),
    frequency=st.sampled_from([0.0, 0.0, 0.05]),
    days=_DAYS,
    seed=st.integers(0, 2**16),
)  # fmt: skip
@example(  # few admitted among many ties: the best block is asked again, larger
    evidence=[1.0] * 120, k=3, tag_share=0.0, admitted_share=0.05, recency=0.0, type_weight=0.0,
    frequency=0.0, days=1.0, seed=5,
)  # fmt: skip
def test_a_checks_bounds_and_kth_are_numpys(
    viewed: tuple[CueMap, arrays.ArrayView], evidence: list[float], k: int, tag_share: float,
    admitted_share: float, recency: float, type_weight: float, frequency: float, days: float,
    seed: int,
) -> None:  # fmt: skip
    """Differential: arrays._bounds (kernel.bounds, the best block's admitted asked in Python;
    with a frequency weight, NumPy's priors) gives the priors and lower bounds of
    arrays._priors, and the k-th best admitted lower bound of the NumPy arrays._kth, whatever
    share of the candidates is admitted."""
    _, view = viewed
    np = arrays._np()
    slots, ev, only, allowed, _ = _case(view, evidence, tag_share, admitted_share, seed)
    scorer = _scorer(view, recency, type_weight, days, frequency)
    got = arrays._bounds(view, slots, ev, only, scorer, k, allowed.__contains__)
    prior = np.asarray(arrays._priors(view, slots, scorer), dtype=np.float64)
    lower = ev + prior
    kth = _numpy("_kth", view, slots, lower, k, allowed.__contains__, only)
    assert got.prior.tobytes() == prior.tobytes() and got.lower.tobytes() == lower.tobytes()
    assert got.kth == kth


def _sums(slots: Any, evidence: Any, jump: Any, only: Any) -> arrays._Sums:
    return arrays._Sums.of(kernel.KernelSums(slots, evidence, jump, only))


@_EXAMPLES
@given(
    evidence=st.lists(_EVIDENCE, max_size=150),
    jumps=st.sampled_from([0.0, 0.25, 0.5 + 1e-10]),
    rest=st.sampled_from([0.0, 0.1, 0.7]),
    bonus_max=st.sampled_from([0.0, 0.3]),
    share=st.floats(0.0, 1.0),
    recency=st.sampled_from([0.0, 0.2]),
    seed=st.integers(0, 2**16),
)  # fmt: skip
def test_kept_candidates_are_those_numpys_upper_bounds_keep(
    viewed: tuple[CueMap, arrays.ArrayView], evidence: list[float], jumps: float, rest: float,
    bonus_max: float, share: float, recency: float, seed: int,
) -> None:  # fmt: skip
    """Differential: kernel.keep keeps the rows whose arrays._upper reaches the cut (a cut at a
    row's own upper bound kept), in order, with their seqs and base (prior plus the largest
    bonus) bit for bit."""
    _, view = viewed
    np, rnd = arrays._np(), random.Random(seed)
    slots = _rows(view, len(evidence), rnd)
    n = len(evidence)
    jump = np.array([jumps * rnd.randint(0, 1) for _ in range(n)], dtype=np.float64)
    scorer = _scorer(view, recency, 0.1, 2.0)
    scorer.bonus_max = bonus_max
    prior = np.asarray(arrays._priors(view, slots, scorer), dtype=np.float64)
    lower = np.array(evidence, dtype=np.float64) + prior
    partial = _sums(slots, lower - prior, jump, np.zeros(n, dtype=bool))
    upper = arrays._upper(partial, slice(None), lower, rest, scorer.cfg, scorer)
    ordered = sorted(upper.tolist())
    cut = ordered[min(int(share * n), n - 1)] if n else 0.0
    keep = upper >= cut
    got = kernel.keep(view, slots, lower, jump, prior, rest, bonus_max, cut)
    assert got.slots.tolist() == slots[keep].tolist()
    assert got.seqs.tolist() == view.seq_at[slots[keep]].tolist()
    assert got.base.tobytes() == (prior[keep] + bonus_max).tobytes()


@_EXAMPLES
@given(
    evidence=st.lists(_EVIDENCE, max_size=150),
    k=st.integers(1, 12),
    tag_share=st.sampled_from([0.0, 0.3]),
    admitted_share=st.sampled_from([0.05, 1.0]),
    rest=st.sampled_from([0.0, 0.1, 0.4, 3.0]),
    floor=st.sampled_from([-math.inf, 0.5, 1.2]),
    probed=st.sampled_from([-math.inf, 1.9]),
    seed=st.integers(0, 2**16),
)  # fmt: skip
def test_a_compiled_check_keeps_what_the_numpy_check_keeps(
    viewed: tuple[CueMap, arrays.ArrayView], evidence: list[float], k: int, tag_share: float,
    admitted_share: float, rest: float, floor: float, probed: float, seed: int,
) -> None:  # fmt: skip
    """Differential: a narrowing check through the kernel (arrays._bounds, then
    arrays._compiled_reach) decides as the NumPy check (arrays._reachable) does, with the same
    theta and the same kept candidates; when a probe raises theta, as the NumPy check with
    that theta as its floor."""
    _, view = viewed
    np = arrays._np()
    slots, ev, only, allowed, rnd = _case(view, evidence, tag_share, admitted_share, seed)
    jump = np.array([0.25 * rnd.randint(0, 1) for _ in evidence], dtype=np.float64)
    scorer = _scorer(view, 0.2, 0.1, 2.0)
    scorer.bonus_max = 0.1
    partial = _sums(slots, ev, jump, only)
    taken = arrays._Taken(
        slots, partial, only, *arrays._bounds(view, slots, ev, only, scorer, k, allowed.__contains__)
    )  # fmt: skip
    asked: list[int] = []

    def probe(cand: Any, lower: Any, tag_only: Any) -> float:
        asked.append(len(cand))
        return probed

    got = arrays._compiled_reach(view, taken, scorer, floor, rest, probe)
    expected = _numpy("_reachable", view, partial, slots, scorer.cfg, scorer, k,
                      allowed.__contains__, max(floor, probed) if asked else floor, rest)  # fmt: skip
    if expected is None:
        assert got is None
        return
    assert got is not None
    kept, theta = got
    assert theta == expected.theta
    assert kept.slots.tolist() == expected.cand.tolist()
    assert kept.base.tobytes() == (expected.prior[expected.keep] + scorer.bonus_max).tobytes()


def test_bounds_and_keep_refuse_rows_out_of_step_with_the_view(
    viewed: tuple[CueMap, arrays.ArrayView],
) -> None:
    _, view = viewed
    np = arrays._np()
    by = arrays._ranking(view, _scorer(view, 0.2, 0.1, 1.0), None)
    rows, values, flags = np.array([0, view.size]), np.zeros(2), np.zeros(2, dtype=bool)
    with pytest.raises(kernel.KernelError, match="slot"):
        kernel.bounds(view, rows, values, flags, by, 2)
    with pytest.raises(kernel.KernelError, match="slot"):
        kernel.keep(view, rows, values, values, values, 0.0, 0.0, -math.inf)
    with pytest.raises(kernel.KernelError, match="contiguous"):
        kernel.bounds(view, rows.astype(np.int32), values, flags, by, 2)
    with pytest.raises(kernel.KernelError, match="contiguous"):
        kernel.keep(view, rows, np.zeros(4)[::2], values, values, 0.0, 0.0, 0.0)
    with pytest.raises(kernel.KernelError, match="slots but"):
        kernel.bounds(view, rows, np.zeros(3), flags, by, 2)
    with pytest.raises(kernel.KernelError, match="slots but"):
        kernel.keep(view, rows, values, np.zeros(3), values, 0.0, 0.0, 0.0)
    with pytest.raises(kernel.KernelError, match="type code"):
        kernel.bounds(view, rows[:1], values[:1], flags[:1], by._replace(type_bonus=np.zeros(0)), 1)
