"""The compiled scoring kernel (``_kernel.c``) gives the NumPy path's and the exhaustive pass's
hits and scores (differential tests), keeps its scratch zeroed and per view, refuses input
out of step with the view, and its absence falls back to NumPy.

``CUEMAP_REQUIRE_KERNEL=1`` (CI) makes a missing kernel fail these tests instead of skipping
them."""

from __future__ import annotations

import ctypes
import dataclasses
import math
import os
import random
import struct
import threading
from array import array
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from cuemap_integrations import CueMap, arrays, kernel, topk
from cuemap_integrations.config import RecallConfig
from cuemap_integrations.errors import NotFoundError
from cuemap_integrations.ranking import plan_query
from cuemap_integrations.topk import _List

from ..conftest import T0, FakeClock
from .test_arrays import (
    arrays_for_every_size,
    assert_same,
    by_arrays,
)
from .test_arrays import (  # the NumPy path's differential tests, run here through the kernel
    test_a_bonus_can_lift_a_candidate_past_the_rare_words_leaders as test_kernel_bonus_lift,
)
from .test_arrays import (
    test_a_feedback_pass_pruned_from_the_first_pass_floor_ranks_exactly as test_kernel_floor,
)
from .test_arrays import (
    test_a_query_of_stop_words_or_unknown_words_finds_nothing as test_kernel_no_list,
)
from .test_arrays import (
    test_array_ranking_equals_exhaustive as test_kernel_ranking_equals_exhaustive,
)
from .test_arrays import (
    test_arrays_score_only_what_can_reach_the_top as test_kernel_scores_only_the_top,
)
from .test_arrays import (
    test_date_and_speaker_bonuses_rank_the_same_through_arrays as test_kernel_bonuses,
)
from .test_arrays import (
    test_min_score_never_lets_a_dropped_hit_hold_a_place as test_kernel_min_score,
)
from .test_arrays import (
    test_sessions_rank_the_same_through_arrays as test_kernel_sessions,
)
from .test_topk import KS, QUERIES, SEEDS, TYPE_FILTERS, WORDS, _store, build, ranked

pytest.importorskip("numpy")

__all__ = [
    "test_kernel_bonus_lift", "test_kernel_bonuses", "test_kernel_floor", "test_kernel_min_score",
    "test_kernel_no_list", "test_kernel_ranking_equals_exhaustive", "test_kernel_scores_only_the_top",
    "test_kernel_sessions",
]  # fmt: skip


@pytest.fixture(autouse=True, scope="module")
def through_the_kernel() -> Iterator[None]:
    """Every test here runs with the kernel on; without it they skip, or fail in CI."""
    if not kernel.available():
        if os.environ.get("CUEMAP_REQUIRE_KERNEL") == "1":
            pytest.fail("CUEMAP_REQUIRE_KERNEL=1 but the compiled kernel is not available")
        pytest.skip("the compiled kernel is not built (python hatch_build.py builds it)")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CUEMAP_KERNEL", "1")
        yield


def numpy_ranked(cm: CueMap, query: str, k: int, narrow: bool, **filters: object) -> list:
    """The NumPy path's ranking (``CUEMAP_KERNEL=0``)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CUEMAP_KERNEL", "0")
        return by_arrays(cm, query, k, narrow, **filters)


def edit_lists(most: int) -> st.SearchStrategy[list[tuple[str, int]]]:
    """Up to ``most`` edits ``(op, i)`` of the memories of a :func:`build` store (see
    :func:`_edit`)."""
    ops = st.sampled_from(["delete", "update", "readd", "add"])
    return st.lists(st.tuples(ops, st.integers(0, 299)), max_size=most)


def _edit(cm: CueMap, rnd: random.Random, op: str, i: int) -> None:
    """Delete, re-add, update or add memory ``m{i}`` (tag-only matches come from new tags)."""
    words = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(1, 6)))
    try:
        if op == "delete":
            cm.delete(f"m{i}")
        elif op == "update":
            cm.update(f"m{i}", content=words, tags=[rnd.choice(WORDS)])
        elif op == "readd":
            cm.delete(f"m{i}")
            cm.add(words, memory_id=f"m{i}")
        else:
            cm.add(words, memory_id=f"new{i}-{rnd.random()}", tags=[rnd.choice(WORDS)])
    except NotFoundError:  # deleted by an earlier edit
        pass


def _edited(
    seed: int, query: list[str], k: int, narrow: bool, edits: list[tuple[str, int]]
) -> tuple[CueMap, str]:
    """A built store, asked the query once (the view exists before the edits: it follows
    them), then edited; and the query's text."""
    cm = build(seed % 3, 300)
    text = " ".join(query)
    by_arrays(cm, text, k, narrow)
    rnd = random.Random(seed)
    for op, i in edits:
        _edit(cm, rnd, op, i)
    return cm, text


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=SEEDS,
    query=QUERIES,
    k=st.one_of(KS, st.just(1000)),  # 1000: more than the store holds
    types=TYPE_FILTERS,
    edits=edit_lists(12),
    narrow=st.booleans(),
)
@example(seed=0, query=["the"], k=3, types=None, edits=[], narrow=True)  # stop words only
@example(seed=1, query=["order"], k=1000, types=None, edits=[("delete", 1)], narrow=False)
def test_kernel_equals_numpy_and_exhaustive_after_edits(
    seed: int, query: list[str], k: int, types: list[str] | None,
    edits: list[tuple[str, int]], narrow: bool,
) -> None:  # fmt: skip
    cm, text = _edited(seed, query, k, narrow, edits)
    expected = ranked(cm, text, k, False, types=types)
    assert_same(by_arrays(cm, text, k, narrow, types=types), expected)
    assert_same(numpy_ranked(cm, text, k, narrow, types=types), expected)
    assert cm.check() == []


def _carried(cm: CueMap, rnd: random.Random) -> list[_List]:
    """Session lists of random cue concepts (one to three members), some with a source of
    their own whose gain differs (zero included: a memory held with no gain)."""
    index = cm._indexes["default"]
    cues, seqs = sorted(index.postings("cue")), list(index.docs)
    out = []
    for _ in range(rnd.randint(0, 6)):
        keys = tuple(("cue", cue) for cue in rnd.sample(cues, rnd.randint(1, 3)))
        gain = rnd.uniform(0.1, 3.0)
        own = rnd.choice([None, rnd.choice(seqs)])
        special = arrays._Gain(gain, own, rnd.choice([0.0, gain * 0.3]))
        postings = tuple(index.postings("cue")[cue] for _, cue in keys)
        out.append(_List("session", 0.5 * gain, postings, special, keys))
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=SEEDS, query=QUERIES, picked=st.lists(st.integers(0, 999), max_size=40))
def test_the_kernels_exact_evidence_is_the_python_pass_sums_bit_for_bit(
    seed: int, query: list[str], picked: list[int]
) -> None:
    cm = _store(seed % 3, 300)  # read only: a few stores, many queries
    index, rnd = cm._indexes["default"], random.Random(seed)
    plan = plan_query(" ".join(query), index, cm.aliases)
    lists = topk.RecallMemo().lists(index, plan, cm.config) + _carried(cm, rnd)
    lists.sort(key=lambda lst: -lst.bound)
    seqs = list(index.docs)
    chosen = dict.fromkeys(seqs[i % len(seqs)] for i in picked)
    reference = topk._Pass(cm.config, 5, None, 0.0, lambda seq: True)
    reference.survivors = reference.ev.survivors = chosen
    for lst in lists:
        reference.add(lst)
    described = arrays._described(lists, cm.config)
    assert described is not None
    exact = arrays._exact(index, described, lists, chosen)
    assert exact == reference.ev  # every signal's sums, the same floats, the same memories


def _dense_sums(
    cm: CueMap, lists: list[_List], block: int,
    weights: tuple[float, ...] = (1.0, 0.7, 0.4, 0.6, 2.0, 0.5),
) -> tuple[list[Any], ...]:  # fmt: skip
    """Every memory the lists reach, with its kernel sums, summed ``block`` seqs at a time."""
    view = arrays.view_of(cm._indexes["default"])
    described = kernel.describe(lists)
    assert described is not None
    with pytest.MonkeyPatch.context() as patch, view.scratch().lock:
        patch.setattr(kernel, "BLOCK_SEQS", block)
        found = kernel.accumulate(view, described, weights)
        sums = (found.slots, found.evidence, found.jump, found.tag_only)
        return tuple(values.tolist() for values in sums)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=SEEDS,
    query=QUERIES,
    edits=edit_lists(12),
    block=st.sampled_from([1, 2, 7, 64, 299]),
)
def test_dense_sums_block_by_block_are_the_whole_lists_sums_bit_for_bit(
    seed: int, query: list[str], edits: list[tuple[str, int]], block: int
) -> None:
    cm = build(seed % 3, 300)
    by_arrays(cm, "order", 1)  # the view exists before the edits (swap-deleted slots)
    rnd = random.Random(seed)
    for op, i in edits:
        _edit(cm, rnd, op, i)
    index = cm._indexes["default"]
    plan = plan_query(" ".join(query), index, cm.aliases)
    lists = topk.RecallMemo().lists(index, plan, cm.config) + _carried(cm, rnd)
    whole = _dense_sums(cm, lists, 1 << 40)  # one block: each list added whole
    assert _dense_sums(cm, lists, block) == whole  # the same slots, the same floats
    assert not arrays.view_of(index).scratch().cells.any()


def _tag_lists(cm: CueMap, rnd: random.Random) -> list[_List]:
    """Tag lists of random cue concepts (constant gains): a memory only they reach is tag-only
    (unless a session list reaches it too)."""
    index = cm._indexes["default"]
    cues = sorted(index.postings("cue"))
    out = []
    for _ in range(rnd.randint(0, 3)):
        keys = tuple(("cue", cue) for cue in rnd.sample(cues, rnd.randint(1, 2)))
        gain = rnd.uniform(0.1, 2.0)
        postings = tuple(index.postings("cue")[cue] for _, cue in keys)
        out.append(_List("tag", gain, postings, arrays._Gain(gain), keys))
    return out


def _reference_sums(cm: CueMap, lists: list[_List]) -> tuple[list[Any], ...]:
    """What the kernel's dense call gives (slots, evidence, jump, tag-only), from NumPy's raw
    per-memory sums (arrays._dense: linear, session, lists matched and tagged) with the kernel's
    evidence_of arithmetic in Python (math.exp is libm's exp, as C's)."""
    view, cfg = arrays.view_of(cm._indexes["default"]), cm.config
    w_session, cap, only = cfg.weights["session"], cfg.session_saturation, cfg.session_only_factor
    entries = arrays._entries(view, lists, topk.RecallMemo())
    reached, sums, positions = arrays._dense(view, entries, cfg)
    rows: list[tuple[float, float, bool]] = []
    for at in positions.tolist():
        linear, matched = float(sums.linear[at]), int(sums.matched[at])
        session = 0.0 if sums.session is None else float(sums.session[at])
        tagged = 0 if sums.tagged is None else int(sums.tagged[at])
        score, jump = linear, 0.0
        if w_session != 0.0 and session > 0:
            boost = w_session * (cap * (1.0 - math.exp(-session / cap)))
            score += boost * (1.0 if matched > 0 else only)
            jump = 0.0 if matched > 0 else boost * (1.0 - only)
        rows.append((score, jump, tagged > 0 and matched == tagged and session == 0))
    return reached.tolist(), *(list(column) for column in zip(*rows, strict=True))


def _mixed_lists(seed: int, query: list[str]) -> tuple[Any, Any, list[Any]]:
    """A store of 300 memories (by ``seed``), its index, and the query's lists with tag and
    carried (session) lists added, shuffled: every kind of list the kernel sums."""
    cm, rnd = _store(seed % 3, 300), random.Random(seed)
    index = cm._indexes["default"]
    plan = plan_query(" ".join(query), index, cm.aliases)
    lists = topk.RecallMemo().lists(index, plan, cm.config) + _tag_lists(cm, rnd)
    lists += _carried(cm, rnd)
    rnd.shuffle(lists)
    return cm, index, lists


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=SEEDS, query=QUERIES, block=st.sampled_from([7, 1 << 40]))
def test_dense_sums_are_numpys_raw_sums_scored_bit_for_bit(
    seed: int, query: list[str], block: int
) -> None:
    # what the kernel's cells keep of a memory (however laid out) must score as NumPy's raw
    # sums do: every memory's evidence, jump and tag-only flag, the same floats (session-only,
    # tag-only, tag and session, and plain memories)
    cm, index, lists = _mixed_lists(seed, query)
    assume(lists)
    cfg = cm.config
    weights = (*(cfg.weights[s] for s in ("cue", "tag", "content", "session")),
               cfg.session_saturation, cfg.session_only_factor)  # fmt: skip
    assert _dense_sums(cm, lists, block, weights) == _reference_sums(cm, lists)
    assert not arrays.view_of(index).scratch().cells.any()


def test_a_store_that_grows_after_its_first_query_gets_a_larger_scratch() -> None:
    cm = build(2, 300)
    assert_same(by_arrays(cm, "order cache", 5), ranked(cm, "order cache", 5, False))
    view = cm._indexes["default"].view
    assert view is not None
    first = view.scratch()
    rnd = random.Random(2)
    cm.add_many(
        [{"content": " ".join(rnd.choice(WORDS) for _ in range(5)), "memory_id": f"g{i}"}
         for i in range(2500)]
    )  # fmt: skip
    for query in ("order cache", "caroline painting festival", "redis"):
        assert_same(by_arrays(cm, query, 7), ranked(cm, query, 7, False))
    assert view.scratch() is not first and view.scratch().size >= view.size > first.size


def test_the_scratch_is_left_zeroed_and_no_mirror_is_made() -> None:
    cm = build(3, 400)
    for query in ("order cache redis", "caroline the", "订单 超时"):
        by_arrays(cm, query, 5)
        by_arrays(cm, query, 5, narrow=False)
    view = cm._indexes["default"].view
    assert view is not None
    scratch = view.scratch()
    assert not scratch.cells.any() and not scratch.bits.any()
    assert not view.lists and view.mirrored == 0  # the kernel reads the index's own buffers


def _viewed(seed: int, query: str = "order") -> tuple[CueMap, Any, arrays.ArrayView]:
    """A store of 400 memories (by ``seed``) asked ``query`` once, its index and its view."""
    cm = build(seed, 400)
    by_arrays(cm, query, 1)
    index = cm._indexes["default"]
    assert index.view is not None
    return cm, index, index.view


def test_union_size_is_the_union_of_the_members() -> None:
    _, index, view = _viewed(4)
    keys = (("term", "order"), ("term", "cache"), ("cue", "caroline"), ("term", "order"))
    keys = tuple((kind, key) for kind, key in keys if key in index.postings(kind))
    postings = tuple(index.postings(kind)[key] for kind, key in keys)
    expected = len(set().union(*postings))
    assert kernel.union_size(view, postings) == expected == len(view.union(keys)[0])
    assert not view.scratch().bits.any()


def test_input_out_of_step_with_the_view_raises_and_leaves_the_scratch_zeroed() -> None:
    cm = build(5, 400)
    by_arrays(cm, "order cache", 3)
    view = cm._indexes["default"].view
    assert view is not None
    seq = next(iter(cm._indexes["default"].terms["order"]))
    slot, base = int(view.slot_by_seq[seq]), view.seq_base
    view.slot_by_seq[seq], view.seq_base = -1, -1  # as if the memory had no slot
    try:
        with pytest.raises(kernel.KernelError, match="without that slot"):
            by_arrays(cm, "order cache", 3, narrow=False)
    finally:
        view.slot_by_seq[seq], view.seq_base = slot, base
    assert not view.scratch().cells.any() and not view.scratch().bits.any()
    assert_same(by_arrays(cm, "order cache", 3), ranked(cm, "order cache", 3, False))


# A direct map (view.seq_base: slot = seq - seq_base) set out of step three ways: the view's
# attribute, its value from the view and the seqs the query reaches, and the error's words.
_OUT_OF_STEP = {
    "a base above every seq": ("seq_base", lambda view, seqs: max(seqs) + 1, "without that slot"),
    "slots past the view's": ("size", lambda view, seqs: 1, "without that slot"),
    "a map shorter than the seqs": ("slot_by_seq", lambda view, seqs: view.slot_by_seq[:1], "outside"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(_OUT_OF_STEP))
def test_a_dense_pass_over_a_direct_map_out_of_step_raises_and_leaves_the_scratch_zeroed(
    case: str,
) -> None:
    """The dense loop tests a posting's seq against one range (below the block's end, in the
    map, at a slot of the scratch) and tells the three apart only outside it: each mistake
    still raises its own error."""
    cm, index, view = _viewed(5, "order cache")
    assert view.seq_base >= 0  # the map's slots are its seqs less a base
    name, value, message = _OUT_OF_STEP[case]
    saved = getattr(view, name)
    setattr(view, name, value(view, list(index.terms["order"])))
    try:
        with pytest.raises(kernel.KernelError, match=message):
            by_arrays(cm, "order cache", 3, narrow=False)
    finally:
        setattr(view, name, saved)
    assert not view.scratch().cells.any() and not view.scratch().bits.any()
    assert_same(by_arrays(cm, "order cache", 3), ranked(cm, "order cache", 3, False))


def test_union_size_of_a_posting_without_a_slot_raises_and_leaves_the_bitmap_zeroed() -> None:
    _, index, view = _viewed(4)
    cue = sorted(index.postings("cue"))[0]
    postings = (index.postings("term")["order"], index.postings("cue")[cue])
    seq = max(postings[0])
    slot = int(view.slot_by_seq[seq])
    view.slot_by_seq[seq] = -1
    try:
        with pytest.raises(kernel.KernelError, match="without that slot"):
            kernel.union_size(view, postings)
    finally:
        view.slot_by_seq[seq] = slot
    assert not view.scratch().bits.any()
    assert kernel.union_size(view, postings) == len(set().union(*postings))


def test_candidates_that_are_not_the_views_are_refused() -> None:
    cm = build(5, 400)
    by_arrays(cm, "order", 3)
    view = cm._indexes["default"].view
    assert view is not None
    np = arrays._np()
    lists = [_List("content", 1.0, (cm._indexes["default"].terms["order"],), arrays._Gain(1.0), ())]
    described = kernel.describe(lists)
    assert described is not None
    weights = (1.0, 1.0, 1.0, 1.0, 1.0, 0.5)
    wrong = (np.array([0], dtype=np.int64), np.array([len(view.slot_by_seq) + 5], dtype=np.int64))
    with view.scratch().lock, pytest.raises(kernel.KernelError):
        kernel.accumulate(view, described, weights, cand=wrong)
    with pytest.raises(kernel.KernelError, match="contiguous int64"):
        kernel.accumulate(view, described, weights, cand=(np.zeros(2), np.zeros(2)))
    with pytest.raises(kernel.KernelError, match="6 weights"):
        kernel.accumulate(view, described, weights[:3])
    with pytest.raises(kernel.KernelError, match="unknown type code"):
        kernel.evidence(described, [1], [0], [3.0])  # one list described: no list 1
    with pytest.raises(kernel.KernelError, match="lengths"):
        kernel.evidence(described, [0], [0, 1], [3.0])
    assert not view.scratch().cells.any()


def test_a_gain_the_kernel_does_not_know_is_left_to_numpy() -> None:
    lists = [_List("cue", 1.0, (), lambda seq: 1.0, ())]  # type: ignore[arg-type]
    assert kernel.describe(lists) is None


def test_two_stores_and_several_threads_rank_as_one_thread_alone() -> None:
    stores = [build(6, 500), build(7, 500)]
    queries = ["order cache", "caroline painting", "redis timeout port", "the", "订单 team"]
    with arrays_for_every_size():
        expected = [[cm.recall(q, k=5).memory_ids for q in queries] for cm in stores]
        got: dict[tuple[int, int], list[list[str]]] = {}

        def worker(n: int, t: int) -> None:
            got[(n, t)] = [stores[n].recall(q, k=5).memory_ids for q in queries * 3]

        threads = [threading.Thread(target=worker, args=(n, t)) for n in (0, 1) for t in (0, 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    for (n, _), results in got.items():
        assert results == expected[n] * 3
    views = [cm._indexes["default"].view for cm in stores]
    assert views[0] is not None and views[1] is not None
    assert views[0].scratch() is not views[1].scratch()


# ------------------------------------------------------------------------------- the loader
def test_no_library_means_not_available(tmp_path: Path) -> None:
    assert kernel.load(tmp_path) is None
    (tmp_path / "_kernel.so").write_bytes(b"not a shared library")
    assert kernel.load(tmp_path) is None


def test_without_the_kernel_recall_uses_numpy_and_ranks_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cm = build(8, 400)
    monkeypatch.setattr(kernel, "_lib", None)
    monkeypatch.setattr(kernel, "_loaded", True)
    assert not kernel.available() and not kernel.enabled()
    for query in ("order cache redis", "caroline festival", "the"):
        assert_same(by_arrays(cm, query, 6), ranked(cm, query, 6, False))
    view = cm._indexes["default"].view
    assert view is not None and view.lists  # the NumPy path's mirrors


def test_the_environment_variable_turns_the_kernel_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert kernel.enabled()
    monkeypatch.setenv("CUEMAP_KERNEL", "0")
    assert kernel.available() and not kernel.enabled()


@pytest.fixture(scope="module")
def long_lists() -> CueMap:
    """A store where some lists are far longer than a few candidates (so they are probed)."""
    cm = CueMap(clock=FakeClock(T0))
    rnd = random.Random(5)
    cm.add_many(
        [
            {"content": f"m{i} alpha {'beta ' * (i % 3)}{rnd.choice(WORDS)} {rnd.choice(WORDS)}"}
            for i in range(3000)
        ]
    )
    return cm


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(picked=st.lists(st.integers(0, 10**6), min_size=1, max_size=60), ascending=st.booleans())
def test_candidates_probed_in_long_lists_get_the_dense_sums(
    long_lists: CueMap, picked: list[int], ascending: bool
) -> None:
    """Candidates far fewer than a list's postings are looked up in it (galloping from the
    previous candidate when the seqs ascend, else a binary search): each gets exactly the
    dense pass's sums, whatever their order."""
    cm, np = long_lists, pytest.importorskip("numpy")
    index = cm._indexes["default"]
    by_arrays(cm, "alpha", 1)  # the view exists
    plan = plan_query("alpha beta " + " ".join(WORDS[:3]), index, cm.aliases)
    lists = topk.RecallMemo().lists(index, plan, cm.config)
    slots, evidence, _, _ = _dense_sums(cm, lists, kernel.BLOCK_SEQS)
    dense = dict(zip(slots, evidence, strict=True))
    view = arrays.view_of(index)
    chosen = list(dict.fromkeys(slots[i % len(slots)] for i in picked))
    chosen.sort(key=lambda slot: int(view.seq_at[slot]), reverse=not ascending)
    cand = np.array(chosen, dtype=np.int64)
    described = kernel.describe(lists)
    assert described is not None and max(
        map(len, (p for lst in lists for p in lst.postings))
    ) > 8 * len(cand)
    with view.scratch().lock:
        found = kernel.accumulate(
            view, described, (1.0, 0.7, 0.4, 0.6, 2.0, 0.5), cand=(cand, view.seq_at[cand])
        )
        got = dict(zip(found.slots.tolist(), found.evidence.tolist(), strict=True))
    assert got == {slot: dense[slot] for slot in chosen}


@pytest.mark.parametrize("direct", [True, False])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    share=st.floats(0.15, 1.0),
    seed=st.integers(0, 10**6),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
)
def test_candidates_of_lists_read_whole_get_the_dense_sums(
    long_lists: CueMap, direct: bool, share: float, seed: int, query: list[str]
) -> None:
    """Candidates at least an eighth of every list's postings: each list is read whole and
    its postings tested against the candidates (with a direct map, ``seq_base`` set, in the
    scratch's bitmap of their slots; else in a bitmap of their seqs, the map read for theirs
    only), so each candidate gets exactly the dense pass's sums, whatever the candidates'
    order, and no other memory is written."""
    cm, np = long_lists, pytest.importorskip("numpy")
    index = cm._indexes["default"]
    by_arrays(cm, "alpha", 1)  # the view exists
    plan = plan_query("alpha beta " + " ".join(query), index, cm.aliases)
    lists = topk.RecallMemo().lists(index, plan, cm.config)
    slots, evidence, _, _ = _dense_sums(cm, lists, kernel.BLOCK_SEQS)
    dense = dict(zip(slots, evidence, strict=True))
    view = arrays.view_of(index)
    rnd = random.Random(seed)
    reached = [int(slot) for slot in slots]
    chosen = rnd.sample(reached, max(1, int(share * len(reached))))
    longest = max(len(p) for lst in lists for p in lst.postings)
    assert longest <= 8 * len(chosen)  # no list is probed: every one is read whole
    cand = np.array(chosen, dtype=np.int64)
    described = kernel.describe(lists)
    assert described is not None
    assert view.seq_base >= 0  # the store's one namespace: a direct map
    with view.scratch().lock, pytest.MonkeyPatch.context() as patch:
        if not direct:
            patch.setattr(view, "seq_base", -1)
        found = kernel.accumulate(
            view, described, (1.0, 0.7, 0.4, 0.6, 2.0, 0.5), cand=(cand, view.seq_at[cand])
        )
        got = dict(zip(found.slots.tolist(), found.evidence.tolist(), strict=True))
    assert got == {slot: dense[slot] for slot in chosen}
    assert not view.scratch().cells.any() and not view.scratch().bits.any()


# ------------------------------------------------------------------ refining the candidates
def _weighted_carried(cm: CueMap, rnd: random.Random) -> list[_List]:
    """:func:`_carried`'s session lists with the bounds recall gives them (the session weight
    times the gain), which refining relies on."""
    w_session = cm.config.weights["session"]
    return [lst._replace(bound=w_session * lst.gain.value) for lst in _carried(cm, rnd)]


def _candidate_sums(
    view: arrays.ArrayView, described: arrays._Described, weights: tuple[float, ...], cand: Any,
    refine: kernel.Refine | None = None,
) -> dict[int, tuple[float, float, bool]]:  # fmt: skip
    """Slot -> (evidence, jump, tag-only) of the candidates ``cand`` from the candidate mode."""
    with view.scratch().lock:
        found = kernel.accumulate(
            view, described.lists, weights, cand=(cand, view.seq_at[cand]), refine=refine
        )
        sums = (found.evidence.tolist(), found.jump.tolist(), found.tag_only.tolist())
        return dict(zip(found.slots.tolist(), zip(*sums, strict=True), strict=True))


def _described_pass(cm: CueMap, query: list[str], rnd: random.Random) -> tuple[Any, Any, Any]:
    """The index, lists and kernel description of a pass over ``long_lists`` for ``query``,
    with weighted carried lists drawn from ``rnd``."""
    index = cm._indexes["default"]
    by_arrays(cm, "alpha", 1)  # the view exists
    plan = plan_query("alpha beta " + " ".join(query), index, cm.aliases)
    lists = topk.RecallMemo().lists(index, plan, cm.config) + _weighted_carried(cm, rnd)
    described = arrays._described(lists, cm.config)
    assert described is not None
    return index, lists, described


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=SEEDS,
    query=QUERIES,
    picked=st.lists(st.integers(0, 10**6), min_size=1, max_size=80),
    share=st.floats(0.0, 1.0),
    start=st.integers(0, 8),
)
def test_refining_drops_only_candidates_that_cannot_reach_the_cut(
    long_lists: CueMap, seed: int, query: list[str], picked: list[int], share: float, start: int
) -> None:
    """Differential: the candidate mode with refining against it without. A candidate refining
    drops has a final evidence plus base below the cut (it could not reach theta); every other
    one keeps exactly the floats it has without refining, whatever lists were taken (start)."""
    cm, np, rnd = long_lists, arrays._np(), random.Random(seed)
    index, lists, described = _described_pass(cm, query, rnd)
    w, cfg = cm.config.weights, cm.config
    weights = (w["cue"], w["tag"], w["content"], w["session"], cfg.session_saturation,
               cfg.session_only_factor)  # fmt: skip
    view = arrays.view_of(index)
    reached, _, _, _ = _dense_sums(cm, lists, kernel.BLOCK_SEQS)
    cand = np.array(sorted({reached[i % len(reached)] for i in picked}), dtype=np.int64)
    full = _candidate_sums(view, described, weights, cand)
    base = np.array([rnd.uniform(0.0, 2.0) for _ in cand])
    final = sorted(full[int(slot)][0] + b for slot, b in zip(cand, base, strict=True))
    cut = final[min(int(share * len(final)), len(final) - 1)] - arrays._EPSILON
    rest = topk.rest_bounds(described.ordered, w["session"] * cfg.session_saturation)
    refine = kernel.Refine(base, rest, cut, min(start, described.lists.lists))
    refined = _candidate_sums(view, described, weights, cand, refine)
    assert refined == {slot: full[slot] for slot in refined}  # the same floats
    for slot, b in zip(cand.tolist(), base.tolist(), strict=True):
        if slot not in refined:
            assert full[slot][0] + b < cut + 1e-12
    assert not view.scratch().cells.any() and not view.scratch().bits.any()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=SEEDS,
    query=QUERIES,
    picked=st.lists(st.integers(0, 10**6), min_size=0, max_size=80),
    taken=st.integers(1, 8),
    refined=st.booleans(),
)
def test_resumed_candidates_get_every_lists_sums_bit_for_bit(
    long_lists: CueMap, seed: int, query: list[str], picked: list[int], taken: int, refined: bool
) -> None:
    """Differential: a candidate call resuming from a held call's sums of the first lists
    (``hold``, then ``resume``) against the candidate call summing every list itself: the same
    rows, the same floats, whichever candidates (some the held lists never reached), with
    refining or without; and the scratch is zero afterwards."""
    cm, np, rnd = long_lists, arrays._np(), random.Random(seed)
    index, lists, described = _described_pass(cm, query, rnd)
    assert described.lists.lists >= 2
    taken = min(taken, described.lists.lists - 1)
    cfg = cm.config
    weights = (1.0, 0.7, 0.4, 0.6, 2.0, 0.5)
    view = arrays.view_of(index)
    reached = _dense_sums(cm, lists, kernel.BLOCK_SEQS)[0]
    cand = np.array(sorted({reached[i % len(reached)] for i in picked}), dtype=np.int64)
    refine = None
    if refined:
        base = np.array([rnd.uniform(0.0, 2.0) for _ in cand])
        rest = topk.rest_bounds(described.ordered, cfg.weights["session"] * cfg.session_saturation)
        refine = kernel.Refine(base, rest, rnd.uniform(0.0, 6.0), taken)
    full = _candidate_sums(view, described, weights, cand, refine)
    scratch = view.scratch()
    with scratch.lock:
        kernel.accumulate(view, described.lists, weights, lists=taken, hold=True)
        assert scratch.holds(described.lists, taken) and scratch.bits.any()
        found = kernel.accumulate(
            view, described.lists, weights, cand=(cand, view.seq_at[cand]), refine=refine,
            resume=taken,
        )  # fmt: skip
        sums = (found.evidence.tolist(), found.jump.tolist(), found.tag_only.tolist())
        resumed = dict(zip(found.slots.tolist(), zip(*sums, strict=True), strict=True))
    assert resumed == full
    assert scratch.held is None and not scratch.cells.any() and not scratch.bits.any()


def test_held_sums_are_reset_by_any_other_call_and_resumed_only_when_held() -> None:
    cm = build(5, 400)
    by_arrays(cm, "order", 3)
    index = cm._indexes["default"]
    view, np = arrays.view_of(index), arrays._np()
    order = index.terms["order"]
    lists = [_List("content", 1.0, (order,), arrays._Gain(1.0), ())] * 2
    described = kernel.describe(lists)
    assert described is not None
    cand = view.slot_by_seq[np.array(sorted(order)[:3])].astype(np.int64)
    pair = (cand, view.seq_at[cand].astype(np.int64))
    weights = (1.0, 1.0, 1.0, 1.0, 1.0, 0.5)
    scratch = view.scratch()
    with scratch.lock:
        with pytest.raises(kernel.KernelError, match="resuming"):
            kernel.accumulate(view, described, weights, cand=pair, resume=1)
        with pytest.raises(kernel.KernelError, match="holds"):
            kernel.accumulate(view, described, weights, cand=pair, hold=True)
        kernel.accumulate(view, described, weights, lists=1, hold=True)
        with pytest.raises(kernel.KernelError, match="resuming"):
            kernel.accumulate(view, described, weights, cand=pair, resume=2)  # not what it holds
        assert kernel.union_size(view, [order]) == len(order)  # after a reset
        assert scratch.held is None and not scratch.bits.any() and not scratch.cells.any()
        kernel.accumulate(view, described, weights, lists=1, hold=True)
        dense = kernel.accumulate(view, described, weights)  # resets, then sums every list
        assert len(dense.slots) == len(order) and scratch.held is None
    assert not scratch.cells.any() and not scratch.bits.any()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=SEEDS, query=QUERIES, taken=st.integers(1, 8))
def test_a_held_calls_sums_never_reach_a_call_that_does_not_resume_them(
    seed: int, query: list[str], taken: int
) -> None:
    # what a held call leaves in the scratch (session sums included: a layout keeping them
    # apart from the cells must reset them too) is reset before any call that does not resume
    # it, whatever the view's size against the scratch's: those calls get a fresh scratch's sums
    cm, index, lists = _mixed_lists(seed, query)
    described = kernel.describe(lists)
    assume(described is not None and lists)
    assert described is not None
    view, np = arrays.view_of(index), arrays._np()
    scratch, weights = view.scratch(), (1.0, 0.7, 0.4, 0.6, 2.0, 0.5)

    def sums(**given: Any) -> tuple[list[Any], ...]:
        found = kernel.accumulate(view, described, weights, **given)
        return tuple(v.tolist() for v in (found.slots, found.evidence, found.jump, found.tag_only))

    with scratch.lock:
        dense = sums()
        cand = np.array(dense[0][::3], dtype=np.int64)
        alone = sums(cand=(cand, view.seq_at[cand].astype(np.int64)))
        sums(lists=taken, hold=True)
        assert sums(cand=(cand, view.seq_at[cand].astype(np.int64))) == alone
        sums(lists=taken, hold=True)
        assert sums() == dense
        sums(lists=taken, hold=True)
        scratch.reset()
    assert scratch.size > view.size  # the scratch has slots to spare
    assert not scratch.cells.any() and not scratch.bits.any()


def test_refining_is_refused_without_a_base_per_candidate() -> None:
    cm = build(5, 400)
    by_arrays(cm, "order", 3)
    view, np = arrays.view_of(cm._indexes["default"]), arrays._np()
    lists = [_List("content", 1.0, (cm._indexes["default"].terms["order"],), arrays._Gain(1.0), ())]
    described = kernel.describe(lists)
    assert described is not None
    cand = view.slot_by_seq[np.array(sorted(cm._indexes["default"].terms["order"])[:3])]
    cand = (cand.astype(np.int64), view.seq_at[cand].astype(np.int64))
    weights = (1.0, 1.0, 1.0, 1.0, 1.0, 0.5)
    with view.scratch().lock:
        wrong = [
            (np.zeros(2), [1.0, 0.0], 0),  # a base per candidate
            (np.zeros(3, dtype=np.int64), [1.0, 0.0], 0),
            (np.zeros(3), [1.0], 0),  # a rest bound per list and one more
            (np.zeros(3), [1.0, 0.0], -1),  # C reads rest[start]
        ]
        for base, rest, start in wrong:
            with pytest.raises(kernel.KernelError, match="refining"):
                refine = kernel.Refine(base, rest, 0.0, start)
                kernel.accumulate(view, described, weights, cand=cand, refine=refine)
        with pytest.raises(kernel.KernelError, match="refining"):
            kernel.accumulate(
                view, described, weights, refine=kernel.Refine(np.zeros(3), [1.0, 0.0], 0.0, 0)
            )
    assert not view.scratch().cells.any()


_RARE_WITH_LONG = [(["hiking", "group"], 2), (["recall", "melanie", "api"], 1),
                   (["tyre", "redis", "friday"], 2)]  # fmt: skip
_PROBED = [(["port"], 11), (["timeout", "support", "order"], 2)]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4), k=KS)
@example(query=_RARE_WITH_LONG[0][0], k=_RARE_WITH_LONG[0][1])
@example(query=_RARE_WITH_LONG[1][0], k=_RARE_WITH_LONG[1][1])
@example(query=_RARE_WITH_LONG[2][0], k=_RARE_WITH_LONG[2][1])
@example(query=_PROBED[0][0], k=_PROBED[0][1])
@example(query=_PROBED[1][0], k=_PROBED[1][1])
def test_refined_candidates_rank_as_the_exhaustive_pass(
    long_lists: CueMap, query: list[str], k: int
) -> None:
    """Rare words beside two lists holding most memories: narrowing takes the rare words'
    lists, then refining drops candidates before probing the long ones; or the rare words'
    lists alone give too low a theta, and the best few candidates' exact scores a higher one
    (the _PROBED examples). The ranking is the exhaustive pass's (the _RARE_WITH_LONG examples
    ranked otherwise when refining left out the bound of the lists still to read)."""
    text = "alpha beta " + " ".join(query)
    assert_same(by_arrays(long_lists, text, k), ranked(long_lists, text, k, False))


def test_refining_drops_candidates_and_probing_raises_theta(
    long_lists: CueMap, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The test above is not vacuous: its examples refine, refining drops candidates, and
    the probed theta decides where the lists taken alone did not."""
    calls: list[tuple[int, int]] = []  # (candidates, kept) of each refined call
    probed: list[bool] = []  # per check that probed: whether it then decided
    accumulate, reachable, probe = kernel.accumulate, arrays._compiled_reach, arrays._probed_theta

    def counted(*args: Any, refine: kernel.Refine | None = None, **kwargs: Any) -> Any:
        found = accumulate(*args, refine=refine, **kwargs)
        if refine is not None:
            calls.append((len(kwargs["cand"][0]), len(found.slots)))
        return found

    def probing(*args: Any) -> float:
        probed.append(False)
        return probe(*args)

    def decided(*args: Any, **kwargs: Any) -> Any:
        asked, reach = len(probed), reachable(*args, **kwargs)
        if len(probed) > asked and reach is not None:
            probed[-1] = True
        return reach

    monkeypatch.setattr(kernel, "accumulate", counted)
    monkeypatch.setattr(arrays, "_probed_theta", probing)
    monkeypatch.setattr(arrays, "_compiled_reach", decided)
    for query, k in _RARE_WITH_LONG + _PROBED:
        by_arrays(long_lists, "alpha beta " + " ".join(query), k)
    assert calls and sum(given - kept for given, kept in calls) > 0
    assert any(probed)


@pytest.fixture(scope="module")
def lenders() -> CueMap:
    """Memories each with a rare cue (``m{i}``) and two cues a few dozen others share
    (``topic``, ``area``): a feedback pass carries those, more postings together than the
    query's rare cue holds, so its first narrowing check takes the first pass's lists again."""
    cm = CueMap(clock=FakeClock(T0))
    rnd = random.Random(5)
    cm.add_many(
        [
            {"content": f"m{i} alpha {'beta ' * (i % 3)}{rnd.choice(WORDS)} {rnd.choice(WORDS)} "
                        f"topic{i % 53} area{i % 71}"}
            for i in range(3000)
        ]
    )  # fmt: skip
    return cm


def _whole_recall(cm: CueMap, query: str, k: int) -> Any:
    """The whole result (hits, scores, breakdowns, trace) of a recall through narrowing, with
    access counts left as they are (so two recalls of one store compare)."""
    quiet = dataclasses.replace(cm.config, track_access=False)
    with arrays_for_every_size(), pytest.MonkeyPatch.context() as patch:
        patch.setattr(cm, "config", quiet)
        return cm.recall(query, k=k, explain=True)


def _without_memo(*args: Any) -> Any:
    """:func:`arrays._taken` without the recall's memo: every check sums its lists."""
    return _TAKEN(*args[:-1], None)


_TAKEN = arrays._taken
_LENT = [("alpha beta m17 caroline", 5), ("recall melanie api m99", 5), ("port m1000 hiking", 3),
         ("timeout support order m2", 8), ("alpha m300 m301", 5), ("m5 tyre redis friday", 1)]  # fmt: skip


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rare=st.lists(st.integers(0, 2999), min_size=1, max_size=2),
    query=st.lists(st.sampled_from(WORDS), max_size=3),
    k=st.integers(1, 12),
)
@example(rare=[99], query=["recall", "melanie", "api"], k=5)
@example(rare=[1000], query=["port", "hiking"], k=3)
@example(rare=[2], query=["timeout", "support", "order"], k=2)
@example(rare=[300, 301], query=["alpha"], k=2)
@example(rare=[17], query=["alpha", "beta", "caroline"], k=1)
def test_a_later_pass_reading_back_the_lists_taken_recalls_the_same(
    lenders: CueMap, rare: list[int], query: list[str], k: int
) -> None:
    """The feedback pass's narrowing check reads back what the first pass's check found for
    the same lists of the query's own (arrays._taken): the whole recall is the one that sums
    them again."""
    text = " ".join([*query, *(f"m{i}" for i in rare)])
    got = _whole_recall(lenders, text, k)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(arrays, "_taken", _without_memo)
        expected = _whole_recall(lenders, text, k)
    assert got == expected


def test_the_feedback_pass_reads_back_the_first_pass_lists(
    lenders: CueMap, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The test above is not vacuous: the feedback passes of the _LENT queries read back what
    their first passes' checks found, instead of a held call over the same lists each."""
    held = [0]
    accumulate = kernel.accumulate

    def counted(*args: Any, hold: bool = False, **kwargs: Any) -> Any:
        held[0] += hold
        return accumulate(*args, hold=hold, **kwargs)

    def calls(memo: bool) -> int:
        held[0] = 0
        with pytest.MonkeyPatch.context() as patch:
            if not memo:
                patch.setattr(arrays, "_taken", _without_memo)
            for query, k in _LENT:
                _whole_recall(lenders, query, k)
        return held[0]

    monkeypatch.setattr(kernel, "accumulate", counted)
    assert calls(memo=True) <= calls(memo=False) - 4


@pytest.fixture(scope="module")
def viewed() -> tuple[CueMap, arrays.ArrayView]:
    """A store of 400 memories of several types and ages, and its array view."""
    cm = _store(2, 400)
    return cm, arrays.view_of(cm._indexes["default"])


def _lexsorted(view: arrays.ArrayView, slots: Any, key: Any, skip: Any) -> tuple[list, list]:
    """The seqs and keys of the rows not skipped, as NumPy orders them (the reference)."""
    np = arrays._np()
    kept = np.flatnonzero(~skip) if skip is not None else np.arange(len(slots))
    seqs = view.seq_at[slots[kept]]
    order = np.lexsort((seqs, -key[kept]))
    return seqs[order].tolist(), key[kept][order].tolist()


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    keys=st.lists(st.sampled_from([-math.inf, -1.0, 0.0, 0.5, 1.0, 1.0 + 1e-12, 2.0, 3.5]),
                  max_size=120),
    m=st.integers(0, 130),
    skipping=st.booleans(),
    seed=st.integers(0, 2**16),
)  # fmt: skip
def test_top_is_the_best_rows_in_lexsort_order(
    viewed: tuple[CueMap, arrays.ArrayView], keys: list[float], m: int, skipping: bool, seed: int
) -> None:
    """kernel.top gives the first m rows of np.lexsort((seqs, -key)) of the rows not skipped
    (ties, and only ties, ordered by sequence number)."""
    _, view = viewed
    np, rnd = arrays._np(), random.Random(seed)
    slots = np.array(rnd.sample(range(view.size), len(keys)), dtype=np.int64)
    key = np.array(keys, dtype=np.float64)
    skip = np.array([rnd.random() < 0.3 for _ in keys], dtype=bool) if skipping else None
    seqs, ordered = _lexsorted(view, slots, key, skip)
    best = kernel.top(view, slots, key, m, skip)
    assert (list(best.seqs), list(best.keys)) == (seqs[:m], ordered[:m])


def test_top_refuses_slots_outside_the_view_and_other_types(
    viewed: tuple[CueMap, arrays.ArrayView],
) -> None:
    _, view = viewed
    np = arrays._np()
    with pytest.raises(kernel.KernelError, match="slot"):
        kernel.top(view, np.array([0, view.size]), np.zeros(2), 2)
    with pytest.raises(kernel.KernelError, match="contiguous"):
        kernel.top(view, np.array([0, 1], dtype=np.int32), np.zeros(2), 2)
    with pytest.raises(kernel.KernelError, match="slots but"):
        kernel.top(view, np.array([0, 1]), np.zeros(3), 2)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    keys=st.lists(st.sampled_from([-2.0, 0.0, 0.5, 0.5 - 1e-10, 0.5 + 1e-10, 1.0, 1.0 - 5e-10, 3.0]),
                  max_size=150),
    k=st.integers(1, 12),
    admitted_share=st.sampled_from([0.0, 0.05, 0.3, 1.0]),
    skipping=st.booleans(),
    seed=st.integers(0, 2**16),
)  # fmt: skip
def test_the_kernels_walk_and_kth_are_numpys(
    viewed: tuple[CueMap, arrays.ArrayView], keys: list[float], k: int, admitted_share: float,
    skipping: bool, seed: int,
) -> None:  # fmt: skip
    """arrays._walk and arrays._kth through the kernel (the best block ordered in C, blocks
    grown until the k-th admitted and its near-ties) give the NumPy path's survivors, in
    order, and k-th best value, whatever share of the candidates is admitted."""
    _, view = viewed
    np, rnd = arrays._np(), random.Random(seed)
    slots = np.array(rnd.sample(range(view.size), len(keys)), dtype=np.int64)
    key = np.array(keys, dtype=np.float64)
    skip = np.array([rnd.random() < 0.3 for _ in keys], dtype=bool) if skipping else None
    allowed = {int(view.seq_at[s]) for s in slots if rnd.random() < admitted_share}

    def admitted(seq: int) -> bool:
        return seq in allowed

    walked, kth = (
        arrays._walk(view, slots, key, k, admitted),
        arrays._kth(view, slots, key, k, admitted, skip),
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CUEMAP_KERNEL", "0")
        expected_walk = arrays._walk(view, slots, key, k, admitted)
        expected_kth = arrays._kth(view, slots, key, k, admitted, skip)
    assert list(walked) == list(expected_walk)
    assert kth == expected_kth


def _scorer(
    view: arrays.ArrayView, recency: float, type_weight: float, days: float, frequency: float = 0.0
) -> Any:
    """A fast scorer of the view's memories ``days`` after T0 (no bonus; with ``frequency``,
    each memory's access count is its seq modulo 7)."""
    weights = {"recency": recency, "type": type_weight, "frequency": frequency}
    cfg = RecallConfig.from_dict({"weights": weights, "half_life_days": 3.0})
    when = T0.timestamp() + 86400.0 * days
    return topk.FastScorer(cfg, view.index.docs, when, lambda seq: seq % 7)


# near-ties, and a score exactly at the cut of min_score 0.6 (without recency or type bonus)
_EVIDENCE = st.sampled_from(
    [0.0, 0.3, 0.5, 0.5 - 1e-10, 0.5 + 1e-10, 0.6 - arrays._EPSILON, 1.0, 1.0 - 5e-10, 2.0]
)


def test_many_matches_are_ranked_in_one_call_without_the_reach_checks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The NumPy path's test_many_matches_keep_only_those_within_reach_of_the_kth through the
    kernel: thousands of candidates are ranked by kernel.rank (their priors computed in C only
    for those that can enter the best block), not narrowed by _within_reach first."""
    cm = build(6, 3000)
    ranks: list[int] = []
    real = kernel.rank

    def spy(view: Any, slots: Any, *rest: Any) -> Any:
        ranks.append(len(slots))
        return real(view, slots, *rest)

    monkeypatch.setattr(kernel, "rank", spy)
    monkeypatch.setattr(arrays, "_within_reach", None)  # never called
    for query in ("order cache caroline redis", "order", "cache festival painting"):
        for k in (1, 10):
            assert_same(by_arrays(cm, query, k, narrow=False), ranked(cm, query, k, False))
    assert ranks and max(ranks) > 1000  # where _within_reach would have narrowed them


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    evidence=st.lists(_EVIDENCE, max_size=120),
    m=st.integers(0, 130),
    skip_share=st.sampled_from([0.0, 0.3]),
    recency=st.sampled_from([0.0, 0.2, 1.0]),
    type_weight=st.sampled_from([0.0, 0.1]),
    days=st.floats(-2.0, 400.0),
    min_score=st.sampled_from([None, 0.6, 1.5]),
    seed=st.integers(0, 2**16),
)  # fmt: skip
@example(  # ties at the heap's edge: a tied row of a smaller seq must still enter
    evidence=[1.0] * 40, m=10, skip_share=0.0, recency=0.0, type_weight=0.0, days=1.0,
    min_score=None, seed=3,
)  # fmt: skip
@example(  # rows exactly at the cut are kept
    evidence=[0.6 - arrays._EPSILON] * 5, m=10, skip_share=0.0, recency=0.0, type_weight=0.0,
    days=1.0, min_score=0.6, seed=3,
)  # fmt: skip
def test_rank_orders_by_the_numpy_scores_bit_for_bit(
    viewed: tuple[CueMap, arrays.ArrayView], evidence: list[float], m: int, skip_share: float,
    recency: float, type_weight: float, days: float, min_score: float | None, seed: int,
) -> None:  # fmt: skip
    """Differential: kernel.rank gives the first m rows of np.lexsort((seqs, -score)) of the
    rows not skipped scoring at least the cut, where score is arrays._priors plus the
    evidence, bit for bit (the prior computed in C, passed over where it cannot enter)."""
    _, view = viewed
    np, rnd = arrays._np(), random.Random(seed)
    slots = np.array(rnd.sample(range(view.size), len(evidence)), dtype=np.int64)
    ev = np.array(evidence, dtype=np.float64)
    skip = np.array([rnd.random() < skip_share for _ in evidence], dtype=bool)
    scorer = _scorer(view, recency, type_weight, days)
    by = arrays._ranking(view, scorer, min_score)
    score = ev + arrays._priors(view, slots, scorer, with_bonus=True)
    seqs, ordered = _lexsorted(view, slots, score, skip | (score < by.cut))
    best = kernel.rank(view, slots, ev, skip, by, m)
    assert (list(best.seqs), list(best.keys)) == (seqs[:m], ordered[:m])


@pytest.mark.parametrize("days", [-1.0, 0.5, 5.25, 8.21875, 40.0, 399.0])
def test_the_numpy_paths_priors_are_libms_exp2_of_each_row_bit_for_bit(
    viewed: tuple[CueMap, arrays.ArrayView], days: float
) -> None:
    """arrays._priors takes the kernel's prior (cm_priors) whenever the kernel is built, so its
    floats are those of cm_rank and cm_bounds on any CPU: the reference is each row's prior in
    Python with math.exp2 (libm's, as C's). NumPy's own exp2 on an AVX-512 CPU differed by an
    ulp on ~5% of inputs, and the differential test of cm_rank found a row ranked apart by it."""
    _, view = viewed
    np = arrays._np()
    scorer = _scorer(view, 0.2, 0.1, days)
    slots = np.arange(view.size, dtype=np.int64)
    bonus = [scorer.type_bonus.get(name, 0.0) for name in view.type_codes]
    expected = [
        math.exp2(max(scorer.now_ts - view.updated[slot], 0.0) * -scorer.per_second)
        * scorer.w_recency + bonus[view.type_code[slot]]
        for slot in range(view.size)
    ]  # fmt: skip
    assert len(set(bonus)) > 1  # several type bonuses: the per-slot read of the type code
    assert arrays._priors(view, slots, scorer).tolist() == expected
    none = np.zeros(view.size)
    bounds = kernel.bounds(
        view, slots, none, none.astype(bool), arrays._ranking(view, scorer, None), 0
    )
    assert bounds.prior.tolist() == expected  # cm_bounds: the same function


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    evidence=st.lists(_EVIDENCE, max_size=150),
    tag_share=st.sampled_from([0.0, 0.2, 0.9]),
    k=st.integers(1, 12),
    admitted_share=st.sampled_from([0.05, 0.3, 1.0]),
    recency=st.sampled_from([0.0, 0.2]),
    type_weight=st.sampled_from([0.0, 0.1]),
    min_score=st.sampled_from([None, 0.6]),
    reach=st.booleans(),
    seed=st.integers(0, 2**16),
)  # fmt: skip
@example(  # more near-ties than a block: the walk must ask for a larger one
    evidence=[1.0] * 60, tag_share=0.0, k=3, admitted_share=1.0, recency=0.0, type_weight=0.0,
    min_score=None, reach=False, seed=5,
)  # fmt: skip
@example(  # a tag-only memory just above min_score, every other cut by it: it ranks (stop 27)
    evidence=[0.0] * 21 + [0.599999999, 0.0], tag_share=0.2, k=1, admitted_share=0.3,
    recency=0.0, type_weight=0.0, min_score=0.6, reach=True, seed=65531,
)  # fmt: skip
def test_the_kernels_ranked_walk_is_numpys(
    viewed: tuple[CueMap, arrays.ArrayView], evidence: list[float], tag_share: float, k: int,
    admitted_share: float, recency: float, type_weight: float, min_score: float | None,
    reach: bool, seed: int,
) -> None:  # fmt: skip
    """Differential: arrays._ranked_walk through kernel.rank (every candidate scored in C, the
    tag-only ones left to the NumPy walk) gives the survivors of the NumPy walk, in order;
    with ``reach``, the NumPy walk first drops what _within_reach drops (from 8 candidates on,
    not from thousands), which the walk through the kernel never does."""
    _, view = viewed
    np, rnd = arrays._np(), random.Random(seed)
    slots = np.array(sorted(rnd.sample(range(view.size), len(evidence))), dtype=np.int64)
    only = np.array([rnd.random() < tag_share for _ in evidence], dtype=bool)
    n = len(evidence)
    found = kernel.KernelSums(slots, np.array(evidence, dtype=np.float64), np.zeros(n), only)
    sums, scorer = arrays._Sums.of(found), _scorer(view, recency, type_weight, 30.0)
    allowed = {int(view.seq_at[s]) for s in slots if rnd.random() < admitted_share}
    cfg = scorer.cfg

    def walked() -> list[int]:
        return list(
            arrays._ranked_walk(view, sums, slots, np.arange(n), cfg, scorer, k,
                                allowed.__contains__, min_score, -math.inf)
        )  # fmt: skip

    assert arrays._kernel_ranks(sums, scorer)
    got = walked()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(arrays, "_kernel_ranks", lambda sums, scorer: False)
        if reach:
            patch.setattr(arrays, "_reach_from", lambda scorer, k: 8)
        assert got == walked()


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    keys=st.lists(st.sampled_from([-1.0, 0.0, 0.5, 0.5 + 1e-12, 1.0, 2.0, 3.5]), max_size=120),
    block=st.integers(1, 130),
    skipping=st.booleans(),
    seed=st.integers(0, 2**16),
)  # fmt: skip
def test_the_kernels_best_block_is_numpys(
    viewed: tuple[CueMap, arrays.ArrayView], keys: list[float], block: int, skipping: bool,
    seed: int,
) -> None:  # fmt: skip
    """arrays._best_block through the kernel gives the rows NumPy's argpartition gives: the
    same keys, each with its own slot, none skipped; the same slots unless keys tie at the
    block's edge (either way may take any of the tied ones)."""
    _, view = viewed
    np, rnd = arrays._np(), random.Random(seed)
    slots = np.array(sorted(rnd.sample(range(view.size), len(keys))), dtype=np.int64)
    key = np.array(keys, dtype=np.float64)
    skip = np.array([rnd.random() < 0.3 for _ in keys], dtype=bool) if skipping else None
    got_slots, got_keys = arrays._best_block(view, slots, key, block, skip)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CUEMAP_KERNEL", "0")
        want_slots, want_keys = arrays._best_block(view, slots, key, block, skip)
    assert sorted(got_keys.tolist()) == sorted(want_keys.tolist())
    own = dict(zip(slots.tolist(), key.tolist(), strict=True))
    skipped = set() if skip is None else set(slots[skip].tolist())
    assert len(set(got_slots.tolist())) == len(got_slots)
    pairs = zip(got_slots.tolist(), got_keys.tolist(), strict=True)
    assert all(own[s] == v and s not in skipped for s, v in pairs)
    wanted = set(want_slots.tolist())
    left = [v for s, v in own.items() if s not in skipped and s not in wanted]
    if not len(want_keys) or min(want_keys) not in left:  # no tie at the edge
        assert set(got_slots.tolist()) == set(want_slots.tolist())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=SEEDS,
    query=QUERIES,
    share=st.floats(0.0, 1.0),
    prior_max=st.sampled_from([0.0, 0.2, 1.5]),
)
def test_a_floor_leaves_out_only_the_rows_below_it_bit_for_bit(
    long_lists: CueMap, seed: int, query: list[str], share: float, prior_max: float
) -> None:
    """Differential: the call over every memory with a floor against it without one: the rows
    whose evidence plus prior_max reaches the cut (as arrays._within_reach tests it, a cut at
    a row's own value kept), in order, with the same floats; none other; the scratch zero."""
    cm, rnd = long_lists, random.Random(seed)
    index, _, described = _described_pass(cm, query, rnd)
    weights = (1.0, 0.7, 0.4, 0.6, 2.0, 0.5)
    view = arrays.view_of(index)

    def rows(floor: kernel.Floor | None) -> list[tuple[int, float, float, bool]]:
        with view.scratch().lock:
            found = kernel.accumulate(view, described.lists, weights, floor=floor)
            sums = (found.slots, found.evidence, found.jump, found.tag_only)
            return list(zip(*(values.tolist() for values in sums), strict=True))

    every = rows(None)
    ordered = sorted(row[1] + prior_max for row in every)
    cut = ordered[min(int(share * len(ordered)), len(ordered) - 1)] if ordered else 0.0
    expected = [row for row in every if row[1] + prior_max >= cut]
    assert rows(kernel.Floor(prior_max, cut)) == expected
    assert rows(kernel.Floor(prior_max, -math.inf)) == every
    assert not view.scratch().cells.any() and not view.scratch().bits.any()


def test_only_a_call_over_every_memory_not_held_takes_a_floor() -> None:
    cm = build(5, 400)
    by_arrays(cm, "order", 3)
    index = cm._indexes["default"]
    plan = plan_query("order shipping", index, cm.aliases)
    described = arrays._described(topk.RecallMemo().lists(index, plan, cm.config), cm.config)
    assert described is not None
    view, floor = arrays.view_of(index), kernel.Floor(0.2, 1.0)
    weights = (1.0, 0.7, 0.4, 0.6, 2.0, 0.5)
    cand = arrays._np().array([0], dtype="int64")
    with pytest.raises(kernel.KernelError, match="floor"):
        kernel.accumulate(view, described.lists, weights, hold=True, floor=floor)
    with pytest.raises(kernel.KernelError, match="floor"):
        kernel.accumulate(view, described.lists, weights, cand=(cand, cand), floor=floor)


def _members_reference(postings: list[Any]) -> tuple[list[int], int]:
    """``kernel._Members.of`` as it was written first (the descriptors' own ``member``)."""
    described = kernel._Descriptors()
    for member in postings:
        described.member(member)
    return described.members.tolist(), described.postings


def _unaddressed(members: list[int]) -> list[int]:
    """Member descriptors without their buffers' addresses (a one-posting list makes its
    arrays anew when asked: see ``_OnePosting.buffers``)."""
    return [v for at, v in enumerate(members) if at % 5 not in (0, 3) or (at % 5 == 3 and v == 0)]


@settings(max_examples=80, deadline=None)
@given(
    lists=st.lists(
        st.dictionaries(st.integers(0, 2**40), st.sampled_from([1.0, 2.0, 0.5, 3.25, 300.0]),
                        max_size=5),
        min_size=1, max_size=3,
    )
)  # fmt: skip
def test_one_lists_member_descriptors_are_the_descriptors_own(lists: list[dict]) -> None:
    """``_Members.of`` of one posting list (written out: a feedback pass describes ~15 new
    ones) describes its buffers as ``_Descriptors.member`` does: seq width, count, value type,
    and the addresses of the buffers it keeps alive; several lists take the descriptors' way."""
    from cuemap_integrations.postings import Postings

    postings = [Postings() for _ in lists]
    for held, values in zip(postings, lists, strict=True):
        for seq, value in sorted(values.items()):
            held.put(seq, value)
    got = kernel._Members.of(postings)
    members, count = _members_reference(postings)
    assert (_unaddressed(got.members.tolist()), got.postings) == (_unaddressed(members), count)
    kept = {buffer.buffer_info()[0] for buffer in got.keep}
    described = got.members.tolist()
    assert {described[at] for at in range(0, len(described), 5)} <= kept
    assert {described[at] for at in range(3, len(described), 5) if described[at]} <= kept


@pytest.mark.parametrize("count", [0, 1, 1000, 300_000])
@pytest.mark.parametrize("dtype", ["float64", "int64", "int32", "uint64"])
def test_huge_zeros_are_zeros_on_a_huge_page_boundary(count: int, dtype: str) -> None:
    """``huge_zeros`` is ``np.zeros``, contiguous and writable; one of 1 MiB or more starts at
    a 2 MiB boundary, where Linux may back it with huge pages."""
    np = arrays._np()
    held = kernel.huge_zeros(np, count, np.dtype(dtype))
    assert held.dtype == np.dtype(dtype) and held.shape == (count,) and not held.any()
    assert held.flags.c_contiguous and held.flags.writeable
    if held.nbytes >= 1 << 20:
        assert held.ctypes.data % (2 << 20) == 0
    held[:] = 7
    assert (held == 7).all()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=SEEDS, query=QUERIES, k=KS, edits=edit_lists(12), narrow=st.booleans(),
    interleaved=st.booleans(),
)  # fmt: skip
def test_the_views_seq_base_ranks_as_its_maps_do_bit_for_bit(
    seed: int, query: list[str], k: int, edits: list[tuple[str, int]], narrow: bool,
    interleaved: bool,
) -> None:  # fmt: skip
    """With ``seq_base`` set the kernel takes a slot's seq as ``seq_base + slot`` (and back)
    instead of reading the view's maps: the same rankings and scores, float for float, as with
    it unset; and it is set exactly while every slot's seq is that (a memory of another
    namespace between two of this one's ends it)."""
    cm, text = _edited(seed, query, k, narrow, edits)
    if interleaved:
        cm.add("order cache elsewhere", memory_id="there", namespace="other")
        cm.add("order cache here", memory_id="here")
    view = arrays.view_of(cm._indexes["default"])
    seqs = view.seq_at[: view.size].tolist()
    assert view.seq_base == (-1 if seqs != list(range(seqs[0], seqs[0] + len(seqs))) else seqs[0])
    assert (view.seq_base == -1) == interleaved
    mapped = by_arrays(cm, text, k, narrow)
    base, view.seq_base = view.seq_base, -1
    try:
        assert by_arrays(cm, text, k, narrow) == mapped  # the same floats
    finally:
        view.seq_base = base
    assert_same(mapped, ranked(cm, text, k, False))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=SEEDS, query=QUERIES, carried=st.integers(0, 999))
def test_units_count_postings_by_member_descriptors_as_by_list_lengths(
    seed: int, query: list[str], carried: int
) -> None:
    """``arrays._units`` counts a list's postings by its member descriptors (memoized), which
    it hands to ``kernel.describe``: the same order and units as counting the lists' lengths,
    and the same descriptors as describing the ordered lists afresh."""
    cm = _store(seed % 3, 300)
    index = cm._indexes["default"]
    plan = plan_query(" ".join(query), index, cm.aliases)
    lists = topk.RecallMemo().lists(index, plan, cm.config) + _carried(cm, random.Random(carried))
    memo: dict[Any, Any] = {}
    for _ in range(2):  # the memo made, then read
        ordered, units, members = arrays._units(lists, memo)
        sizes = [sum(map(len, lst.postings)) for lst in ordered]
        own = [lst for lst in lists if lst.signal != "session" and sum(map(len, lst.postings))]
        ses = [lst for lst in lists if lst.signal == "session" and sum(map(len, lst.postings))]
        assert sorted(map(id, ordered)) == sorted(map(id, own + ses))
        assert [u for u, _ in units] == sorted(u for u, _ in units)  # shortest unit first
        assert sum(u for u, _ in units) == sum(sizes)
        assert [m.postings for m in members] == sizes
        fresh, given = kernel.describe(ordered), kernel.describe(ordered, memo, members)
        assert fresh is not None and given is not None
        assert (given.ints, given.doubles, given.lists, given.postings) == (
            fresh.ints, fresh.doubles, fresh.lists, fresh.postings
        )  # fmt: skip
        # the members' addresses differ where a one-posting list's buffers are made on the
        # spot: what they describe is the same
        seqs = list(index.docs)
        lengths = [index.docs[seq].length for seq in seqs]
        expected = kernel.evidence(fresh, range(fresh.lists), seqs, lengths)
        assert kernel.evidence(given, range(given.lists), seqs, lengths) == expected


@pytest.mark.parametrize("count", [0, 1, 5000, 9000, 3])
def test_positions_are_a_read_only_arange(count: int) -> None:
    """The kernel's row positions are ``np.arange(count)`` that no caller can write into (one
    array serves every call)."""
    np = arrays._np()
    held = arrays._positions(count)
    assert held.dtype == np.arange(1).dtype and held.tolist() == list(range(count))
    assert not held.flags.writeable
    with pytest.raises(ValueError):
        held[:1] = 7


def test_a_ranking_is_packed_once_and_each_new_one_again() -> None:
    """``kernel._params`` packs a Ranking's numbers once and gives the pack back while it is
    asked the same Ranking; another (even with equal numbers) is packed anew, and a type bonus
    array the kernel cannot read is refused."""
    np = arrays._np()
    by = kernel.Ranking(100.0, 0.5, 0.3, np.array([0.0, 0.2]), 1.3, -math.inf)
    packed = kernel._params(by)
    assert kernel._params(by) is packed and packed.by is by
    assert list(packed.numbers) == [100.0, -0.5, 0.3, 1.3, -math.inf]
    assert packed.address == packed.numbers.buffer_info()[0]
    assert packed.bonus == by.type_bonus.ctypes.data
    again = kernel.Ranking(*by)
    assert kernel._params(again) is not packed and kernel._params(again).by is again
    with pytest.raises(kernel.KernelError, match="contiguous"):
        kernel._params(by._replace(type_bonus=np.array([1, 2])))


def test_a_pass_asks_its_kernel_ranking_once() -> None:
    """``arrays._ranking`` gives a scorer the same Ranking for the same view and cut (the
    kernel packs it once), and a new one for another cut or once the view has a new type."""
    cm = _store(0, 300)
    index = cm._indexes["default"]
    view = arrays.view_of(index)
    scorer = topk.FastScorer(cm.config, index.docs, T0, lambda seq: 0)
    first = arrays._ranking(view, scorer, None)
    assert arrays._ranking(view, scorer, None) is first
    cut = arrays._ranking(view, scorer, 0.5)
    assert cut is not first and cut.cut == 0.5 - arrays._EPSILON and first.cut == -math.inf
    view.type_codes.setdefault("a type never seen", len(view.type_codes))
    assert arrays._ranking(view, scorer, 0.5) is not cut


def test_member_descriptors_are_memoized_by_their_keys() -> None:
    """``kernel.members_of`` keeps a list's descriptors in the memo by its keys and gives the
    ones made first for equal keys; without a memo it makes them anew, describing the same
    postings."""
    cm = _store(1, 300)
    index = cm._indexes["default"]
    cues = sorted(index.postings("cue"))[:2]
    keys = tuple(("cue", cue) for cue in cues)
    postings = tuple(index.postings("cue")[cue] for cue in cues)
    memo: dict[Any, Any] = {}
    first = kernel.members_of(postings, keys, memo)
    assert memo == {keys: first}
    assert kernel.members_of(postings, tuple(list(keys)), memo) is first
    fresh = kernel.members_of(postings, keys, None)  # no memo: made anew
    assert fresh is not first
    assert (fresh.members[1::5], fresh.members[2::5], fresh.postings) == (
        first.members[1::5], first.members[2::5], first.postings
    )  # fmt: skip


def _descriptor_bytes(described: Any) -> tuple[bytes, bytes, bytes, int, int, list[Any]]:
    return (
        described.ints.tobytes(), described.doubles.tobytes(), described.members.tobytes(),
        described.postings, described.lists, described.keep,
    )  # fmt: skip


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=SEEDS, query=QUERIES)
def test_compiled_descriptors_pack_what_the_python_ones_pack(seed: int, query: list[str]) -> None:
    """``_textc.describe_lists`` packs the same integers, doubles and member descriptors as
    :func:`kernel._py_describe` (BM25 and constant gains, a carried list's own source), and
    leaves a gain of another type (a subclass, a function) to it."""
    if kernel._textc is None:
        pytest.skip("the text extension is not built")
    cm = build(seed % 3, 400)
    _, lists, _ = _described_pass(cm, query, random.Random(seed))
    ordered, _, members = arrays._units(lists)
    described = kernel.describe(ordered, None, members)
    reference = kernel._py_describe(ordered, None, members)
    assert described is not None and reference is not None
    assert _descriptor_bytes(described) == _descriptor_bytes(reference)
    assert kernel._textc.describe_lists([], [], topk._TermGain, topk._Gain, kernel._SIGNALS) == (
        b"",
        b"",
        b"",
        0,
    )

    class Subclass(topk._Gain):
        pass

    if ordered:  # a subclass of a known gain: the Python way, by isinstance
        first = ordered[0]._replace(gain=Subclass(1.5, 3, 0.25))
        got = kernel.describe([first, *ordered[1:]], None, members)
        want = kernel._py_describe([first, *ordered[1:]], None, members)
        assert got is not None and want is not None
        assert _descriptor_bytes(got) == _descriptor_bytes(want)
        unknown = first._replace(gain=lambda seq: 1.0)
        assert kernel.describe([unknown], None, members[:1]) is None
        with pytest.raises(ValueError, match="a member descriptor per list"):
            kernel.describe(ordered, None, members[:-1] if len(members) > 1 else [])
        with pytest.raises(KeyError):
            kernel.describe(
                [first._replace(signal="nope", gain=topk._Gain(1.0))], None, members[:1]
            )


@settings(max_examples=50, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.integers(0, 10**12),
            st.integers(0, 15),
            st.lists(st.floats(allow_nan=False), min_size=4, max_size=4),
        ),
        max_size=30,
    )
)
def test_compiled_spread_of_evidence_fills_what_the_python_one_fills(
    rows: list[tuple[int, int, list[float]]],
) -> None:
    """``_textc.spread_evidence`` puts each memory's raw sums in the dicts its bits name, as
    :func:`arrays._py_spread_evidence` does (the same floats, the same dict order)."""
    if arrays._textc is None:
        pytest.skip("the text extension is not built")
    seqs = [seq for seq, _, _ in rows]
    held = bytes(bits for _, bits, _ in rows)
    raw = array("d", [value for _, _, sums in rows for value in sums])
    got: list[dict[int, float]] = [{}, {}, {}, {}]
    want: list[dict[int, float]] = [{}, {}, {}, {}]
    arrays._textc.spread_evidence(raw, held, seqs, *got)
    arrays._py_spread_evidence(raw, held, seqs, *want)
    assert [list(d.items()) for d in got] == [list(d.items()) for d in want]
    with pytest.raises(ValueError, match="4 sums and a byte per memory"):
        arrays._textc.spread_evidence(raw, held, [*seqs, 1], *got)


@settings(max_examples=100, deadline=None)
@given(
    bounds=st.lists(
        st.tuples(
            st.sampled_from(["cue", "tag", "content", "session"]),
            st.floats(min_value=0.0, max_value=1e9, allow_nan=False),
        ),
        max_size=80,
    ),
    cap=st.floats(min_value=0.0, max_value=1e9, allow_nan=False),
)
def test_compiled_rest_bounds_are_the_python_ones(
    bounds: list[tuple[str, float]], cap: float
) -> None:
    """``_textc.rest_bounds`` gives the same floats as :func:`topk._py_rest_bounds`."""
    if topk._textc is None:
        pytest.skip("the text extension is not built")
    lists = [_List(signal, bound, (), topk._Gain(1.0), ()) for signal, bound in bounds]
    got = topk._textc.rest_bounds(lists, cap)
    assert list(map(repr, got)) == list(map(repr, topk._py_rest_bounds(lists, cap)))
    assert topk.rest_bounds is topk._textc.rest_bounds
    # anything with a signal and a bound, as topk reads them (arrays._rest_bounds' tests)
    plain = [SimpleNamespace(signal=signal, bound=bound) for signal, bound in bounds]
    assert list(map(repr, topk._textc.rest_bounds(plain, cap))) == list(map(repr, got))
    with pytest.raises(AttributeError):
        topk._textc.rest_bounds([SimpleNamespace(signal="cue")], cap)


def test_buffer_addresses_are_the_ctypes_ones() -> None:
    """``_textc.buffer_address`` gives the address :func:`kernel._py_data` gives, for the
    arrays the kernel reads (written, read-only, empty, views from an offset), and refuses a
    strided one, which :func:`kernel._address` then refuses as before."""
    if kernel._textc is None:
        pytest.skip("the text extension is not built")
    np = arrays._np()
    whole = np.arange(64, dtype=np.int64)
    frozen = np.ones(5)
    frozen.flags.writeable = False
    held = [whole, whole[3:17], np.empty(0), frozen, np.zeros(9, dtype=np.bool_), np.zeros(3)]
    for array_ in held:
        assert kernel._textc.buffer_address(array_) == kernel._py_data(array_)
        assert kernel._data(array_) == kernel._py_data(array_)
    with pytest.raises((BufferError, ValueError)):  # NumPy's ValueError
        kernel._textc.buffer_address(whole[::2])
    assert kernel._data(whole[::2]) == kernel._py_data(whole[::2])  # ctypes' way, as before
    assert kernel._address(whole[3:17], "<i8") == kernel._py_data(whole[3:17])
    with pytest.raises(kernel.KernelError, match="not a strided <i8 one"):
        kernel._address(whole[::2], "<i8")
    with pytest.raises(kernel.KernelError, match="not a <f8 one"):
        kernel._address(np.zeros(3), "<i8")
    with pytest.raises(kernel.KernelError, match="contiguous int64"):
        kernel._int64s((whole[::2], whole[::2]), 32)
    refine = kernel.Refine(np.zeros(8)[::2], [0.0, 0.0], 0.0, 0)
    with pytest.raises(kernel.KernelError, match="contiguous float64 base"):
        kernel._refined(refine, 4, 1)
    assert kernel._refined(kernel.Refine(np.zeros(4), [0.0, 0.0], 0.0, 0), 4, 1)[0] > 0


class _Unpacking:
    """The kernel library, whose packed accumulate unpacks its buffer in Python and passes the
    arguments to ``cm_accumulate`` itself, in that function's order."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self.calls = 0
        self.called: dict[str, int] = {}

    def __getattr__(self, name: str) -> Any:
        for plain, packed in kernel._PACKED_CALLS.items():
            if name == packed:  # the others': int64 arguments, in their order
                return partial(self._unpacked, plain)
        return getattr(self._real, name)

    def _unpacked(self, name: str, packed: bytes) -> int:
        self.called[name] = self.called.get(name, 0) + 1
        return int(getattr(self._real, name)(*struct.unpack(f"={len(packed) // 8}q", packed)))

    def cm_accumulate_packed(self, packed: bytes) -> int:
        self.calls += 1
        given = kernel._ACCUMULATE_ARGUMENTS.unpack(packed)
        ints, (cut, floor_cut, prior_max) = given[:26], given[26:]
        return int(
            self._real.cm_accumulate(
                *ints[:18], cut, *ints[18:21], floor_cut, prior_max, *ints[21:]
            )
        )


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=SEEDS, query=QUERIES, k=KS, narrow=st.booleans())
def test_the_packed_accumulate_passes_what_cm_accumulate_takes(
    seed: int, query: list[str], k: int, narrow: bool
) -> None:
    """``cm_accumulate_packed`` reads its buffer as ``cm_accumulate``'s arguments in order,
    and so do the packed rank, bounds, keep and evidence: recalls through them (held,
    resumed, refined and floored calls) give what the same arguments passed one by one give."""
    real = kernel._library()
    if real is None:
        pytest.skip("the compiled kernel is not built")
    cm = build(seed % 3, 400)
    text = " ".join(query)
    expected = by_arrays(cm, text, k, narrow)
    unpacking = _Unpacking(real)
    kernel._lib = unpacking
    try:
        got = by_arrays(cm, text, k, narrow)
    finally:
        kernel._lib = real
    assert got == expected
    assert unpacking.calls or not expected
    assert unpacking.called.get("cm_evidence") or not expected


def test_the_packed_calls_are_declared() -> None:
    lib = kernel._library()
    if lib is None:
        pytest.skip("the compiled kernel is not built")
    for name in ("cm_accumulate_packed", *kernel._PACKED_CALLS.values()):
        assert getattr(lib, name).argtypes == [ctypes.c_char_p]
