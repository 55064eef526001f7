"""The NumPy candidate selection gives exactly the exhaustive ranking, and its mirror of the
postings stays in step with every change to the index (a differential test)."""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cuemap_integrations import CueMap, arrays
from cuemap_integrations.index import NamespaceIndex
from cuemap_integrations.ranking import (
    Carried,
    Filters,
    Ranking,
    plan_query,
    rank,
    with_carried,
)
from cuemap_integrations.topk import FastScorer, RecallMemo

from ..conftest import T0, FakeClock
from .test_topk import (
    KS,
    QUERIES,
    SEEDS,
    TYPE_FILTERS,
    TYPES,
    _store,
    build,
    python_pass,
    ranked,
)

pytest.importorskip("numpy")


@pytest.fixture(autouse=True, scope="module")
def numpy_reference() -> Iterator[None]:
    """These tests are of the NumPy path, the compiled kernel's reference and fallback:
    ``tests/core/test_kernel.py`` runs the differential ones again through the kernel."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CUEMAP_KERNEL", "0")
        yield


@contextmanager
def arrays_for_every_size(narrow: bool = True) -> Iterator[None]:
    """Arrays (and, with ``narrow``, MaxScore narrowing) whatever the namespace's size."""
    with (
        mock.patch.object(arrays, "ARRAY_MIN_MEMORIES", 0),
        mock.patch.object(arrays, "NARROW_MIN_MEMORIES", 0 if narrow else 10**12),
    ):
        yield


def fixed_store(config: dict[str, Any]) -> CueMap:
    """A store whose clock stands still: two stores (or two calls) compared for equal scores
    must not see recency move between them."""
    return CueMap(clock=FakeClock(T0), config=config)


def by_arrays(
    cm: CueMap, query: str, k: int, narrow: bool = True, **filters: object
) -> list[tuple[str, float]]:
    with arrays_for_every_size(narrow):
        return ranked(cm, query, k, True, **filters)


def assert_same(got: list[tuple[str, float]], expected: list[tuple[str, float]]) -> None:
    """Same memories in the same order; scores equal up to summation-order rounding."""
    assert [i for i, _ in got] == [i for i, _ in expected]
    assert all(abs(a - b) <= 2e-9 for (_, a), (_, b) in zip(got, expected, strict=True))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=SEEDS,
    query=QUERIES,
    k=KS,
    types=TYPE_FILTERS,
    since_day=st.one_of(st.none(), st.integers(1, 28)),
    narrow=st.booleans(),
)
@example(seed=0, query=["the"], k=1, types=None, since_day=None, narrow=True)  # no list at all
@example(seed=1, query=["the"], k=1, types=None, since_day=None, narrow=False)
def test_array_ranking_equals_exhaustive(seed, query, k, types, since_day, narrow) -> None:
    cm = _store(seed % 5, 400)
    text = " ".join(query)
    since = None if since_day is None else T0.replace(day=since_day)
    expected = ranked(cm, text, k, False, types=types, since=since)
    assert_same(by_arrays(cm, text, k, narrow, types=types, since=since), expected)


@pytest.mark.parametrize("narrow", [True, False])
def test_a_query_of_stop_words_or_unknown_words_finds_nothing(narrow: bool) -> None:
    """No evidence list at all (every word a stop word, or none indexed): no hit, no error."""
    cm = _store(0, 400)
    for query in ("the", "the of and", "zzzqx"):
        assert by_arrays(cm, query, 1, narrow) == ranked(cm, query, 1, False) == []


def test_min_score_never_lets_a_dropped_hit_hold_a_place() -> None:
    cm = _store(2, 400)
    for query in ("order cache", "caroline painting festival", "订单 超时 team"):
        full = cm.recall(query, k=8, min_score=2.0)
        with arrays_for_every_size():
            fast = cm.recall(query, k=8, min_score=2.0)
        assert fast.memory_ids == full.memory_ids
        assert all(hit.score >= 2.0 for hit in fast.hits)


def test_the_mirror_follows_adds_updates_deletes_and_context() -> None:
    cm = build(4, 600)
    with arrays_for_every_size():
        cm.recall("order cache redis caroline", k=5)  # mirrors these lists
        cm.add("order cache for caroline", memory_id="new-1")
        cm.update("m3", content="redis painting order")
        cm.delete("m5")
        cm.forget(["m7"])
        for i in range(6):  # transcript turns: each new turn re-indexes its neighbours' context
            cm.add(f"turn {i} about order cache", memory_id=f"t{i}", type="event",
                   metadata={"session_id": "s1"})  # fmt: skip
        cm.delete("t2")
        index = cm._indexes["default"]
        assert index.view is not None and index.view.errors() == []
        assert cm.check() == []
        for mirrored in index.view.lists.values():  # narrowing binary-searches them
            slots, _ = mirrored.arrays()
            assert list(slots) == sorted(slots)
    for query in ("order cache redis caroline", "turn about order", "painting"):
        assert_same(by_arrays(cm, query, 6), ranked(cm, query, 6, False))


def test_sessions_rank_the_same_through_arrays() -> None:
    turns = ["order cache redis", "how did we fix it", "caroline painting", "订单超时", "festival"]
    fast, full = build(3, 800), build(3, 800)
    full.config = full.config.with_changes(prune=False)
    with arrays_for_every_size():
        a = fast.session("s", skip_shown=True)
        b = full.session("s", skip_shown=True)
        for query in turns:
            assert a.recall(query, k=5).memory_ids == b.recall(query, k=5).memory_ids


def test_arrays_score_only_what_can_reach_the_top() -> None:
    fast, full = build(1, 400), build(1, 400)
    full.config = full.config.with_changes(prune=False)
    query = "caroline order cache support"
    with arrays_for_every_size():
        chosen = fast.recall(query, k=3, explain=True).trace
    everyone = full.recall(query, k=3, explain=True).trace
    assert chosen is not None and everyone is not None
    assert chosen.order == everyone.order
    assert chosen.candidate_count < 20 < everyone.candidate_count


def test_check_reports_a_mirror_out_of_step() -> None:
    cm = build(5, 300)
    with arrays_for_every_size():
        cm.recall("order cache", k=3)
    view = cm._indexes["default"].view
    assert view is not None and cm.check() == []
    seq = next(iter(cm._indexes["default"].terms["order"]))
    view.lists[("term", "order")].drop(view.slot_by_seq[seq])
    assert any("array postings of term 'order'" in problem for problem in cm.check())


def test_long_lists_are_read_only_for_the_short_lists_candidates() -> None:
    # "caroline" and "order" reach most memories; the counter words reach a handful: MaxScore
    # must narrow to those, and the narrowed ranking must still be the exhaustive one.
    cm = fixed_store({"dedupe": False})
    cm.add_many(
        {"content": f"caroline order {'cache' if i % 3 else 'redis'} note{i % 200}",
         "memory_id": f"m{i}", "type": TYPES[i % len(TYPES)]}
        for i in range(3000)
    )  # fmt: skip
    narrowed: list[bool] = []
    real = arrays._narrowed

    def spy(*args: object) -> object:
        result = real(*args)  # type: ignore[arg-type]
        narrowed.append(result is not None)
        return result

    with mock.patch.object(arrays, "_narrowed", spy):
        for query in ("caroline order note17", "note5 note6 cache", "caroline order"):
            assert_same(by_arrays(cm, query, 5), ranked(cm, query, 5, False))
    assert narrowed[0] and narrowed[1]  # the rare counter words decide
    assert not narrowed[-1]  # only common words: every memory they reach is scored


def test_carried_cues_together_add_at_most_the_session_cap() -> None:
    # A session turn carries dozens of cues, each list with a large bound; through the
    # saturation they add at most weight x cap together, which lets rare query words decide.
    kinds = [("content", 5.0), ("session", 3.0), ("session", 3.0), ("cue", 2.0)]
    entries = [SimpleNamespace(lst=SimpleNamespace(signal=s, bound=b)) for s, b in kinds]
    rest = arrays._rest_bounds(entries, session_cap=4.0)  # type: ignore[arg-type]
    assert rest == [5.0 + 2.0 + 4.0, 2.0 + 4.0, 2.0 + 3.0, 2.0, 0.0]


def test_many_matches_keep_only_those_within_reach_of_the_kth() -> None:
    # Common words reach thousands of memories of varied type and age: the prior is computed
    # only for those whose evidence plus the largest prior can reach the k-th exact score.
    cm = build(6, 3000)
    kept: list[tuple[int, int]] = []
    real = arrays._within_reach

    def spy(view: object, sums: object, cand: Any, *rest: object) -> Any:
        result = real(view, sums, cand, *rest)  # type: ignore[arg-type]
        kept.append((len(cand), len(result[0])))
        return result

    with mock.patch.object(arrays, "_within_reach", spy):
        for query in ("order cache caroline redis", "order", "cache festival painting"):
            for k in (1, 10):
                assert_same(by_arrays(cm, query, k, narrow=False), ranked(cm, query, k, False))
    assert kept and all(after < before for before, after in kept)


def test_date_and_speaker_bonuses_rank_the_same_through_arrays() -> None:
    # The bonuses are part of each candidate's prior: lower bounds leave them out, upper bounds
    # add the largest, the final scores include them exactly.
    rnd = random.Random(8)
    words = ["order", "cache", "redis", "painting", "festival", "pottery", "timeout", "deploy"]
    start = datetime(2023, 5, 1, 9, 0, tzinfo=timezone.utc)
    items = [
        {"content": f"{who}: " + " ".join(rnd.choice(words) for _ in range(rnd.randint(2, 7))),
         "memory_id": f"t{i}", "type": "event", "created_at": start + timedelta(hours=7 * i),
         "metadata": {"session_id": f"s{i // 25}", "speaker": who}}
        for i, who in enumerate(rnd.choice(["Ana", "Ben", "Cy"]) for _ in range(1500))
    ]  # fmt: skip
    fast, full = fixed_store({"dedupe": False}), fixed_store({"dedupe": False})
    fast.add_many(items)
    full.add_many(items)
    full.config = full.config.with_changes(prune=False)
    queries = ("what did Ben say about the cache on 3 May 2023", "Ana painting in June 2023",
               "order timeout", "Cy and Ben festival deploy")  # fmt: skip
    bonuses = set()
    for narrow in (True, False):
        for query in queries:
            for k in (1, 5, 12):
                with arrays_for_every_size(narrow):
                    got = fast.recall(query, k=k)
                expected = full.recall(query, k=k)
                assert got.memory_ids == expected.memory_ids
                assert [h.score for h in got.hits] == pytest.approx(
                    [h.score for h in expected.hits], abs=2e-9
                )
                bonuses |= {name for h in expected.hits for name, _ in h.breakdown.contributions}
    assert {"date", "speaker"} <= bonuses


def test_with_a_bonus_a_few_hundred_candidates_are_kept_within_reach_exactly() -> None:
    # A date bonus is asked candidate by candidate in Python: with one, _within_reach narrows
    # from a few hundred candidates already (without one, from over a thousand).
    rnd = random.Random(5)
    words = [f"w{i}" for i in range(24)]
    start = datetime(2023, 5, 1, 9, 0, tzinfo=timezone.utc)
    items = [
        {"content": " ".join(rnd.sample(words, 3)), "memory_id": f"d{i}",
         "created_at": start + timedelta(hours=3 * i)}
        for i in range(3000)
    ]  # fmt: skip
    fast, full = fixed_store({"dedupe": False}), fixed_store({"dedupe": False, "prune": False})
    fast.add_many(items)
    full.add_many(items)
    reached: list[int] = []
    real = arrays._within_reach

    def spy(view: Any, sums: Any, cand: Any, at: Any, cfg: Any, scorer: Any, *rest: Any) -> Any:
        reached.extend([len(cand)] if scorer.bonus is not None else [])
        return real(view, sums, cand, at, cfg, scorer, *rest)

    for k in (1, 10):
        with arrays_for_every_size(False), mock.patch.object(arrays, "_within_reach", spy):
            got = fast.recall("w3 on 4 May 2023", k=k)
        expected = full.recall("w3 on 4 May 2023", k=k)
        assert got.memory_ids == expected.memory_ids
        assert any(name == "date" for name, _ in expected.hits[0].breakdown.contributions)
    assert reached and min(reached) <= 16 * 64


def test_a_bonus_can_lift_a_candidate_past_the_rare_words_leaders() -> None:
    # Ann's turns say "zeta" twice and lead on evidence; Bob's says it once, but the query names
    # Bob and his speaker bonus puts his turn first. Narrowing computes theta without bonuses
    # (a lower bound), so a candidate's upper bound must add the largest bonus.
    def turn(i: int, who: str, text: str) -> dict[str, object]:
        return {"content": text, "memory_id": f"t{i}", "type": "event",
                "metadata": {"session_id": "s", "speaker": who}}  # fmt: skip

    items = [turn(i, "Ann", "zeta zeta extra") for i in range(10)]
    items += [
        turn(10, "Bob", "zeta"),
        *(turn(i, "Cy", f"common filler{i}") for i in range(11, 600)),
    ]
    fast = fixed_store({"dedupe": False, "speaker_bonus": 5.0})
    full = fixed_store({"dedupe": False, "speaker_bonus": 5.0, "prune": False})
    fast.add_many(items)
    full.add_many(items)
    with arrays_for_every_size():
        got = fast.recall("what did Bob say about zeta common", k=5)
    expected = full.recall("what did Bob say about zeta common", k=5)
    assert expected.memory_ids[0] == "t10"
    assert got.memory_ids == expected.memory_ids


@pytest.mark.parametrize("size", [40, 4000])  # sorted merge, and a pass over the namespace
def test_carried_lists_merge_into_one_entry_with_summed_gains(size: int) -> None:
    # A feedback pass carries dozens of cues: one entry holds each memory once, with the sum
    # of what every carried list gives it, and a list's own source gets its own (lower) gain.
    view = SimpleNamespace(size=size, slot=lambda seq: seq)
    lists = [
        ([1, 4, 9], arrays._Gain(2.0)),
        ([4, 7], arrays._Gain(0.5, special=7, special_value=0.0)),
        ([0, 4, 9, 30], arrays._Gain(1.25)),
    ]
    np = arrays._np()
    entries = [
        arrays._Entry(
            arrays._List("session", g.value, (), g, ()), np.array(slots), np.ones(len(slots))
        )
        for slots, g in lists
    ]
    lists_, slots = [e.lst for e in entries], [e.slots for e in entries]
    merged = arrays._merged(view, lists_, slots)  # type: ignore[arg-type]
    assert merged.slots.tolist() == [0, 1, 4, 7, 9, 30]
    assert merged.values.tolist() == [1.25, 2.0, 3.75, 0.0, 3.25, 1.25]
    assert merged.lst.signal == "session" and merged.lst.bound == 3.75
    assert merged.gains(view, merged.slots, merged.values) is merged.values  # type: ignore[arg-type]


@pytest.mark.parametrize("size", [40, 4000])  # sorted together, and marked in the namespace
@pytest.mark.parametrize(
    "lists", [[], [[]], [[3]], [[1, 4, 9], [], [4, 7], [0, 4, 9, 30]], [[5, 6], [5, 6]]]
)
def test_joined_gives_distinct_slots_and_each_lists_positions(
    size: int, lists: list[list[int]]
) -> None:
    # No list at all (a query of stop words only) must give an empty integer array, not fail.
    np = arrays._np()
    distinct, where = arrays._joined([np.array(s, dtype=np.int64) for s in lists], size)
    expected = sorted({slot for s in lists for slot in s})
    assert distinct.dtype.kind == "i" and distinct.tolist() == expected
    assert [distinct[at].tolist() for at in where] == lists


def test_mirrors_stay_within_their_budget_and_rank_the_same() -> None:
    # Every word ever queried would stay mirrored: the least recently read go past a budget,
    # are made again when needed, and no union outlives a member a later write changes.
    cm = build(8, 600)
    queries = ["order cache redis", "caroline painting", "festival support", "note3 order"]
    with (
        arrays_for_every_size(),
        mock.patch.object(arrays, "MIRROR_MIN_POSTINGS", 0),
        mock.patch.object(arrays, "MIRROR_POSTINGS_PER_MEMORY", 1),
    ):
        read: set[tuple[str, str]] = set()
        for round_ in range(3):
            for query in queries:
                assert_same(by_arrays(cm, query, 5), ranked(cm, query, 5, False))
                view = cm._indexes["default"].view
                assert view is not None
                read |= set(view.lists)
                assert view.mirrored == sum(g.size for g in view.lists.values())
                assert view.mirrored <= view.size or len(view.lists) == 1
            cm.add(f"order cache caroline painting {round_}", memory_id=f"new-{round_}")
            cm.delete(f"m{round_}")
        assert cm.check() == []
        assert len(view.lists) < len(read)  # some were dropped (and made again when read)


def test_a_union_outlives_its_evicted_members_until_any_write() -> None:
    # Evicting a mirror no longer ends the unions made of it (they were made again query after
    # query); a write to any list does, so a union never misses a posting of a member whose
    # mirror is gone (that write reaches no mirror).
    index = NamespaceIndex()
    for seq in range(1, 7):
        index.add(seq, [f"c{seq % 3}"], [], [])
    view = arrays.view_of(index)
    keys = (("cue", "c1"), ("cue", "c2"))
    union = view.union(keys)[0]
    assert sorted(view.seq_at[union].tolist()) == [1, 2, 4, 5]
    with mock.patch.object(arrays, "MIRROR_MIN_POSTINGS", 0):
        with mock.patch.object(arrays, "MIRROR_POSTINGS_PER_MEMORY", 0):
            view._evict()
    assert len(view.lists) == 1 and view.union(keys)[0] is union
    index.add(7, ["c1"], [], [])
    assert sorted(view.seq_at[view.union(keys)[0]].tolist()) == [1, 2, 4, 5, 7]


def test_mirrors_of_all_one_lists_keep_no_values() -> None:
    cm = build(9, 300)
    with arrays_for_every_size():
        cm.recall("order cache", k=3)
        view = cm._indexes["default"].view
        assert view is not None
        cue_lists = [g for (kind, _), g in view.lists.items() if kind == "cue"]
        assert cue_lists and all(g.values is None for g in cue_lists)
        grown = cue_lists[0]
        grown.append(view.size, 2.5)  # a value other than 1.0 brings the values back
        assert grown.values is not None and grown.arrays()[1][-1] == 2.5
        assert set(grown.arrays()[1][:-1]) == {1.0}


@pytest.mark.parametrize("size", [60, 400])
@pytest.mark.parametrize("through_arrays", [True, False])
def test_passes_sharing_a_recall_memo_rank_as_fresh_passes(size: int, through_arrays: bool) -> None:
    """The feedback pass reuses the first pass's lists and entries (RecallMemo): the same hits
    and scores as a pass that builds its own, and the query's own lists are not built again."""
    cm = _store(3, size)
    index, now = cm._indexes["default"], cm.now()
    read = plan_query("order cache team the", index, cm.aliases)
    top = next(iter(index.docs))
    carried = [Carried(cue, 0.8, frozenset({top})) for cue in index.docs[top].cues]
    plans = (read, with_carried(read, carried, cm.aliases))

    def passes(memos: list[RecallMemo]) -> list[list[tuple[str, float]]]:
        out = []
        for plan, memo in zip(plans, memos, strict=True):
            hits, _ = rank(
                index, cm._records, {}, plan, cm.config, k=5, filters=Filters(), now=now,
                memo=memo,
            )  # fmt: skip
            out.append([(h.memory_id, h.score) for h in hits])
        return out

    shared = RecallMemo()
    with arrays_for_every_size() if through_arrays else python_pass():
        fresh, reused = passes([RecallMemo(), RecallMemo()]), passes([shared, shared])
    assert reused == fresh
    assert shared.query_lists and len(shared.own) == len(shared.query_lists)
    assert bool(shared.entries) == through_arrays


@pytest.mark.parametrize("k", [1, 3, 10])
def test_a_feedback_pass_pruned_from_the_first_pass_floor_ranks_exactly(k: int) -> None:
    """The feedback pass starts pruning at the first pass's k-th score (RecallMemo.floor): the
    recall still equals the unpruned one, through arrays and the Python pass alike."""
    cm = _store(4, 400)
    for query in ("order cache team", "caroline painting festival", "the", "订单 超时 team"):
        with mock.patch.object(cm, "config", dataclasses.replace(cm.config, prune=False)):
            expected = cm.recall(query, k=k)
        for context in (arrays_for_every_size(), python_pass()):
            with context:
                got = cm.recall(query, k=k)
            assert_same(
                [(h.memory_id, h.score) for h in got.hits],
                [(h.memory_id, h.score) for h in expected.hits],
            )


def test_the_floor_holds_only_for_a_pass_that_keeps_the_last_ones_concepts() -> None:
    cm = _store(0, 60)
    index = cm._indexes["default"]
    plan = plan_query("order cache", index, cm.aliases)
    first = with_carried(plan, [Carried("team", 1.0)], cm.aliases)
    memo = RecallMemo()
    assert memo.floor(plan, 3) == -math.inf  # no pass yet
    memo.passed(first, 5, [(False, -2.0, 1)] * 5)
    more = with_carried(plan, [Carried("team", 1.0), Carried("redis", 0.5)], cm.aliases)
    assert memo.floor(more, 3) == memo.floor(more, 5) == 2.0
    assert memo.floor(more, 6) == -math.inf  # more hits than the last pass had
    assert memo.floor(plan, 3) == -math.inf  # the carried "team" is gone: scores may drop
    memo.passed(first, 5, [(False, -2.0, 1)] * 4 + [(True, -1.0, 2)])
    assert memo.floor(more, 5) == -math.inf  # its 5th best matched only tags


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=SEEDS, query=QUERIES, k=KS, types=TYPE_FILTERS, prune=st.booleans(),
    through_arrays=st.booleans(),
)  # fmt: skip
def test_ranking_scored_is_rank_without_hits(
    seed: int, query: list[str], k: int, types, prune: bool, through_arrays: bool
) -> None:
    """A first pass ranks with Ranking.scored: the same memories, scores (exact floats) and
    candidate count as rank's hits and trace, through arrays and the Python pass alike."""
    cm = _store(seed % 5, 400)
    index = cm._indexes["default"]
    plan = plan_query(" ".join(query), index, cm.aliases)
    asked = {"k": k, "filters": Filters.build(types=types), "now": cm.now(), "prune": prune}
    with arrays_for_every_size() if through_arrays else python_pass():
        hits, trace = rank(index, cm._records, {}, plan, cm.config, **asked)
        ranking = Ranking(index, cm._records, {}, cm.config, asked["filters"], asked["now"],
                          prune=prune)  # fmt: skip
        scored = ranking.scored(plan, k)
    assert scored.best == [(cm._seq_of["default", h.memory_id], h.score) for h in hits]
    assert scored.scored == trace.candidate_count


@pytest.mark.parametrize("types", [None, {}, {"fact": 0.5, "task": -0.2}])
@pytest.mark.parametrize("recency", [0.0, 0.2])
def test_array_priors_equal_the_scorers_memory_by_memory(types, recency: float) -> None:
    """arrays._priors (computed in place) gives each candidate FastScorer.prior's value (one
    type bonus for all, or one per type; recency on or off), up to NumPy's exp2 rounding."""
    cm = _store(2, 400)
    changes = {"weights": {**cm.config.weights, "recency": recency}}
    cfg = dataclasses.replace(cm.config, **changes)
    if types is not None:
        cfg = dataclasses.replace(cfg, type_priority=types)
    index = cm._indexes["default"]
    view, np = arrays.view_of(index), arrays._np()
    now = cm.now() + timedelta(days=40)
    scorer = FastScorer(cfg, index.docs, now.timestamp(), lambda seq: 0)
    cand = np.arange(view.size)[::3]
    got = arrays._priors(view, cand, scorer)
    expected = [scorer.prior(int(view.seq_at[slot])) for slot in cand]
    assert got.tolist() == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_checks_try_the_floors_check_last_within_its_share() -> None:
    """_checks yields its doubling checks first; then, last, the first list whose rest the
    floor alone beats (it cannot fail) if the lists up to it hold at most 1/_FLOOR_SHARE of the
    namespace's size; nothing once the lists pass the share."""
    view, scorer = SimpleNamespace(size=1600), SimpleNamespace(prior_max=0.5)
    sizes = [5, 6, 20, 21, 22, 30, 50]
    rest = [30.0, 28.0, 12.0, 9.0, 6.0, 4.0, 2.0, 0.0]

    def checks(floor: float) -> list[int]:
        return list(arrays._checks(view, sizes, rest, scorer, floor, last=False))

    assert checks(-math.inf) == [1]  # 20 >= 2 * 6, and 30 - 12 + 0.5 beats 12 + 0.5
    assert checks(8.0) == [1, 3]  # 6 + 0.5 < 8: lists ..3 decide, 52 <= 1600 // 16 postings
    assert checks(5.0) == [1, 4]  # 4 + 0.5 < 5: ..4, 74 postings
    view.size = 1000  # 74 > 1000 // 16: too many postings for the floor's check
    assert checks(5.0) == [1]
    view.size = 40  # lists ..1 hold 11 > 40 // 4 postings: no check at all
    assert checks(16.0) == []


@pytest.mark.parametrize("through_kernel", [False, True])
def test_a_bulk_batch_into_a_recalled_store_keeps_the_view_in_step(
    through_kernel: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Plain docs added in bulk after a recall made the view take the column-wise path: the
    view records their values in one step and drops its mirrors (made again as queries need
    them), and ranks as a view made after the batch does, and as the exhaustive ranking."""
    if through_kernel:
        monkeypatch.setenv("CUEMAP_KERNEL", "1")
    batch = [{"content": f"order cache note {i} for caroline", "memory_id": f"bulk-{i}"}
             for i in range(40)]  # fmt: skip
    early, late = build(6, 600), build(6, 600)
    with arrays_for_every_size():
        early.recall("order cache redis caroline", k=5)  # the view and its mirrors exist
        index = early._indexes["default"]
        assert index.view is not None
        put = mock.patch.object(arrays.ArrayView, "put", side_effect=AssertionError("per posting"))
        with put:
            early.add_many(batch)
        late.add_many(batch)
        assert index.view.lists == {} and index.view.errors() == []
        assert early.check() == []
        for query in ("order cache redis caroline", "note caroline", "painting"):
            got = by_arrays(early, query, 6)
            assert_same(got, by_arrays(late, query, 6))
            assert_same(got, ranked(early, query, 6, False))
        fresh = arrays.ArrayView(index)  # what a view made now would hold
        size = fresh.size
        assert index.view.size == size and index.view.seq_base == fresh.seq_base
        for name in ("seq_at", "length", "updated", "type_code"):
            assert list(getattr(index.view, name)[:size]) == list(getattr(fresh, name)[:size])


class _DocByDoc(arrays.ArrayView):
    """The view made as it was before it read the columns: :meth:`set_doc` of each doc."""

    def _set_all(self, docs: Any) -> None:
        for seq, doc in docs.items():
            self.set_doc(seq, doc)


def _view_state(view: arrays.ArrayView) -> tuple[Any, ...]:
    return (
        view.size, view.seq_base, view.type_codes, view.slot_by_seq.tolist(),
        *(getattr(view, name)[: view.size].tolist()
          for name in ("seq_at", "length", "updated", "type_code")),
    )  # fmt: skip


@pytest.mark.parametrize("edited", [False, True])
def test_a_new_view_reads_every_doc_as_setting_each_would(edited: bool) -> None:
    """A view made for a namespace holds the same slots, values, type codes and seq base as
    setting each doc in turn: docs added in bulk and one by one, of several types, tagged
    and transcript turns (docs not plain), and, when ``edited``, updated ones (re-indexed out
    of order), deleted ones and another namespace's memories between them."""
    cm = fixed_store({})
    cm.add_many([{"content": f"order cache note {i}", "memory_id": f"b{i}",
                  "type": ("fact", "event", "task")[i % 3]} for i in range(30)])  # fmt: skip
    cm.add("tagged painting note", memory_id="tagged", tags=["art"], type="preference")
    for i in range(4):
        cm.add(f"turn {i} about redis", memory_id=f"t{i}", type="event",
               metadata={"session_id": "s1"})  # fmt: skip
    if edited:
        cm.add("another namespace's note", memory_id="x", namespace="other")
        cm.update("b3", content="redis painting order")
        cm.delete("b7")
        cm.add("a late note about caroline", memory_id="late", type="fact")
    for namespace in ("default", "other") if edited else ("default",):
        index = cm._indexes[namespace]
        assert _view_state(arrays.ArrayView(index)) == _view_state(_DocByDoc(index))
    view = arrays.ArrayView(cm._indexes["default"])
    assert view.size == len(cm._indexes["default"].docs)
    assert (view.seq_base == -1) is edited  # an update re-indexes out of seq order
