"""Exact top-k pruning: the pruned ranking equals the exhaustive one (a differential test)."""

from __future__ import annotations

import contextlib
import functools
import random
from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cuemap_integrations import CueMap, arrays, topk
from cuemap_integrations.index import NamespaceIndex
from cuemap_integrations.ranking import Filters, plan_query, rank
from cuemap_integrations.topk import can_prune

from ..conftest import T0, FakeClock

WORDS = (
    "order cache redis timeout port api schema backup deploy friday team lunch bike tyre coffee "
    "python rust tests login chrome pinned memory session cue recall caroline melanie painting "
    "camping beach family school music guitar adoption support group festival hiking"
).split()
CJK = "订单超时缓存修复端口接口部署周五团队午饭自行车咖啡测试登录"
TYPES = ["note", "fact", "event", "convention", "preference", "task"]


@contextmanager
def python_pass() -> Iterator[None]:
    """The Python top-k pass whatever the namespace's size (the array path takes namespaces of
    ``arrays.ARRAY_MIN_MEMORIES`` memories and more)."""
    with mock.patch.object(arrays, "ARRAY_MIN_MEMORIES", 10**12):
        yield


# each path a store of a few hundred memories may take: the Python pass, and the default
PATHS = {"python": python_pass, "default": contextlib.nullcontext}


@functools.lru_cache(maxsize=8)
def _store(seed: int, size: int) -> CueMap:
    return build(seed, size)


def build(seed: int, size: int) -> CueMap:
    rnd = random.Random(seed)
    clock = FakeClock(T0)
    cm = CueMap(clock=clock, config={"dedupe": False})
    zipf = [w for i, w in enumerate(WORDS) for _ in range(max(1, 12 - i // 3))]
    items = []
    for i in range(size):
        words = [rnd.choice(zipf) for _ in range(rnd.randint(3, 12))]
        if rnd.random() < 0.3:
            words.append("".join(rnd.choice(CJK) for _ in range(rnd.randint(2, 6))))
        items.append({
            "content": " ".join(words), "memory_id": f"m{i}", "type": rnd.choice(TYPES),
            "tags": [rnd.choice(WORDS)] if rnd.random() < 0.2 else [],
            "created_at": T0.replace(day=1 + i % 28),
        })  # fmt: skip
    cm.add_many(items)
    return cm


def ranked(cm: CueMap, query: str, k: int, prune: bool, **filter_args) -> list[tuple[str, float]]:
    index = cm._indexes["default"]
    plan = plan_query(query, index, cm.aliases)
    hits, _ = rank(
        index, cm._records, {}, plan, cm.config, k=k, filters=Filters.build(**filter_args),
        now=cm.now(), prune=prune,
    )  # fmt: skip
    return [(h.memory_id, round(h.score, 9)) for h in hits]


SEEDS = st.integers(0, 10_000)
QUERIES = st.lists(
    st.sampled_from([*WORDS, "订单", "超时", "缓存", "the", "what"]), min_size=1, max_size=6
)
KS = st.integers(1, 12)
TYPE_FILTERS = st.one_of(st.none(), st.lists(st.sampled_from(TYPES), min_size=1, max_size=3))


@pytest.mark.parametrize("path", sorted(PATHS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=SEEDS, query=QUERIES, k=KS, types=TYPE_FILTERS)
def test_pruned_ranking_equals_exhaustive(
    path: str, seed: int, query: list[str], k: int, types
) -> None:
    cm = _store(seed % 5, 400)  # few distinct stores, many queries
    text = " ".join(query)
    with PATHS[path]():
        assert ranked(cm, text, k, True, types=types) == ranked(cm, text, k, False, types=types)


def test_pruning_actually_skips_candidates() -> None:
    cm = build(1, 2000)
    index = cm._indexes["default"]
    plan = plan_query("adoption festival caroline order", index, cm.aliases)
    _, pruned = rank(index, cm._records, {}, plan, cm.config, k=5, filters=Filters(), now=cm.now())
    _, full = rank(
        index, cm._records, {}, plan, cm.config, k=5, filters=Filters(), now=cm.now(), prune=False
    )
    assert pruned.order == full.order
    assert pruned.candidate_count < full.candidate_count / 2


@pytest.mark.parametrize("path", sorted(PATHS))
def test_sessions_and_skip_shown_rank_the_same_with_pruning(path: str) -> None:
    with PATHS[path]():
        _sessions_rank_the_same_with_pruning()


def _sessions_rank_the_same_with_pruning() -> None:
    pruned, full = build(3, 1500), build(3, 1500)
    full.config = full.config.with_changes(prune=False)
    turns = ["order cache redis", "how did we fix it", "caroline painting", "订单超时", "festival"]
    for skip in (False, True):
        a, b = (
            pruned.session(f"s{skip}", skip_shown=skip),
            full.session(f"s{skip}", skip_shown=skip),
        )
        for query in turns:
            assert a.recall(query, k=5).memory_ids == b.recall(query, k=5).memory_ids


@pytest.mark.parametrize(
    "weights",
    [{"frequency": -1.0}, {"cue": -0.5}, {"recency": -0.1}],
)
def test_negative_weights_turn_pruning_off(weights) -> None:
    cm = CueMap(config={"weights": weights})
    assert not can_prune(cm.config)
    assert can_prune(CueMap().config)


def test_a_concepts_memoized_document_frequency_follows_every_posting_change() -> None:
    # Every pass of every recall asks a concept's lists and document frequency: the index
    # memoizes them, and an add, a deferred add (at its flush), a context change and a removal
    # must each be seen by the next recall.
    index = NamespaceIndex()
    index.add(1, ["lake"], ["trip"], ["lake"])
    concept = ("lake", "trip")

    def df() -> int:
        return topk._found(index, ("cue", "tag"), concept).df

    assert df() == 1
    index.add(2, [], ["trip"], ["boat"])
    assert df() == 2
    index.add(3, ["lake"], [], [], defer=True)
    index.flush()
    assert df() == 3
    index.set_context(3, {"lake": 0.5})  # term postings: not this concept's, still a change
    assert df() == 3 and topk._found(index, ("cue",), ("lake",)).keys == (("cue", "lake"),)
    index.remove(1)
    assert df() == 2
    assert topk._found(index, ("cue",), ("nowhere",)) == ((), (), 0)


def _found_reference(index: NamespaceIndex, kinds: tuple[str, ...], members: tuple[str, ...]):
    """``topk._found`` as it was written first (two reads of a table per member, the union of
    several lists by the array view or as a set): the reference of the shortcut."""
    tables = {kind: index.postings(kind) for kind in kinds}
    keys = tuple((kind, m) for kind, table in tables.items() for m in members if m in table)
    postings = tuple(tables[kind][m] for kind, m in keys)
    if not keys:
        return keys, postings, 0
    if len(postings) == 1:
        return keys, postings, len(postings[0])
    if index.view is not None:
        return keys, postings, index.view.union_size(keys, postings)
    return keys, postings, len(set().union(*postings))


_KINDS = st.sampled_from([("cue",), ("tag",), ("term",), ("cue", "tag"), ("tag", "cue")])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 3),
    kinds=_KINDS,
    members=st.lists(st.sampled_from([*WORDS, "订单", "unknown", "", "order cache"]), max_size=4),
    viewed=st.booleans(),
)
def test_a_concepts_lists_are_read_as_the_reference_reads_them(
    seed: int, kinds: tuple[str, ...], members: list[str], viewed: bool
) -> None:
    """``_found`` (one read of a table per member) gives the first way's keys, the same
    posting lists and the same document frequency (counted by the array view when there is
    one); read back from the memo, the same again."""
    from cuemap_integrations import arrays

    index = _store(seed, 300)._indexes["default"]
    if viewed and arrays.usable():
        arrays.view_of(index)
    index.derived.clear()
    keys, postings, df = _found_reference(index, kinds, tuple(members))
    for _ in range(2):  # made, then memoized
        found = topk._found(index, kinds, tuple(members))
        assert found.keys == keys and found.df == df
        assert [dict(p.pairs()) for p in found.postings] == [dict(p.pairs()) for p in postings]
