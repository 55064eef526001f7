"""The shortcuts recall takes per query equal the plain computations they replace (differential
tests against reference implementations written out here): explanations' session cues,
carried concepts, feedback cues, date/speaker bonuses of many memories at once, the
kernel's memoized list descriptors (which must follow every posting change), and access counts
written into packed rows in place."""

from __future__ import annotations

import dataclasses
import random
from datetime import datetime, timedelta, timezone
from functools import partial

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cuemap_integrations import CueMap, arrays, core, kernel, ranking, scoring, text, topk
from cuemap_integrations.aliases import AliasTable
from cuemap_integrations.config import RecallConfig
from cuemap_integrations.ranking import QUERY_SOURCE, Carried, Concept, QueryPlan, plan_query
from cuemap_integrations.records import MemoryRecord, MemoryType
from cuemap_integrations.recordtable import RecordTable
from cuemap_integrations.results import Hit, ScoreBreakdown
from cuemap_integrations.text import _C as _textc

from ..conftest import T0, FakeClock
from .test_kernel import _carried, _edit, edit_lists
from .test_recordtable import _instants
from .test_recordtable import records as packed_records
from .test_topk import QUERIES, SEEDS, _store, build

VOCABULARY = ["meeting", "meetings", "meet", "会议", "cache", "caches", "redis", "team", "lunch"]
SOURCES = st.frozensets(st.sampled_from([QUERY_SOURCE, 1, 2, 3]), min_size=1, max_size=2)
FACTORS = st.sampled_from([None, 0.0, 0.5])


def _carried_cues(weights: list[float]) -> st.SearchStrategy[list[Carried]]:
    """Up to ten carried cues of :data:`VOCABULARY`, each weighing one of ``weights``."""
    return st.lists(
        st.builds(Carried, st.sampled_from(VOCABULARY), st.sampled_from(weights), SOURCES, FACTORS),
        max_size=10,
    )


def _reference_session_cues(plan: QueryPlan, carried: set[str], seq: int) -> tuple[str, ...]:
    """Each carried concept the memory matches, in plan order, by its first member the memory
    carries, except a concept only this memory gave with no self help (the first-member search
    per concept that ``ranking._carriers`` replaced)."""
    out = []
    for concept in plan.expanded_concepts:
        if carried.isdisjoint(concept.members):
            continue
        alone = concept.self_factor == 0.0 and concept.sources == frozenset({seq})
        if not alone:
            out.append(next(cue for cue in concept.members if cue in carried))
    return tuple(out)


# each test of ``ranking._firsts`` runs on the Python reference and on the compiled twin
FIRSTS = pytest.mark.parametrize(
    "firsts",
    [ranking._py_firsts, getattr(_textc, "firsts", None)],
    ids=["python", "textc"],
)


def _skip_unbuilt(firsts: object) -> None:
    if firsts is None:
        pytest.skip("_textc is not built (or CUEMAP_TEXTC=0)")


def _session_cues(
    firsts: ranking._FirstsFn, plan: QueryPlan, cues: list[str], tags: list[str], seq: int
) -> tuple[str, ...]:
    """A hit's session cues as :meth:`ranking._Explainer.breakdown` finds them."""
    concepts = plan.expanded_concepts
    table = ranking._members([concept.members for concept in concepts])
    return firsts(table, tuple(cues), tuple(tags), ranking._alone(concepts).get(seq))


@FIRSTS
@settings(max_examples=200, deadline=None)
@given(
    concepts=st.lists(
        st.tuples(st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=4), SOURCES, FACTORS),
        max_size=8,
    ),
    cues=st.lists(st.sampled_from(VOCABULARY), max_size=6),
    tags=st.lists(st.sampled_from(VOCABULARY), max_size=2),
    seq=st.sampled_from([1, 2, 3]),
)
def test_session_cues_by_rank_equal_the_first_member_search(
    firsts: ranking._FirstsFn,
    concepts: list[tuple[list[str], frozenset[int], float | None]],
    cues: list[str],
    tags: list[str],
    seq: int,
) -> None:
    _skip_unbuilt(firsts)
    plan = QueryPlan(
        query="", normalized="", cues=(), expanded=(), tags=(), terms=(),
        expanded_concepts=tuple(Concept(tuple(m), 1.0, src, f) for m, src, f in concepts),
    )  # fmt: skip
    got = _session_cues(firsts, plan, cues, tags, seq)
    assert got == _reference_session_cues(plan, set(cues) | set(tags), seq)


@FIRSTS
@settings(max_examples=200, deadline=None)
@given(
    concepts=st.lists(
        st.tuples(st.sampled_from(VOCABULARY).map(lambda cue: [cue]), SOURCES, FACTORS),
        max_size=8,
    ),
    cues=st.lists(st.sampled_from(VOCABULARY), max_size=6),
    seq=st.sampled_from([1, 2, 3]),
)
def test_session_cues_of_one_member_concepts_equal_the_first_member_search(
    firsts: ranking._FirstsFn,
    concepts: list[tuple[list[str], frozenset[int], float | None]],
    cues: list[str],
    seq: int,
) -> None:
    """Concepts of one cue each (nearly every carried concept), some sharing it."""
    _skip_unbuilt(firsts)
    plan = QueryPlan(
        query="", normalized="", cues=(), expanded=(), tags=(), terms=(),
        expanded_concepts=tuple(Concept(tuple(m), 1.0, src, f) for m, src, f in concepts),
    )  # fmt: skip
    got = _session_cues(firsts, plan, cues, [], seq)
    assert got == _reference_session_cues(plan, set(cues), seq)


@FIRSTS
@settings(max_examples=200, deadline=None)
@given(
    groups=st.lists(
        st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=4, unique=True), max_size=6
    ),
    cues=st.lists(st.sampled_from(VOCABULARY), max_size=8),
)
def test_matched_cues_by_rank_equal_the_first_member_search(
    firsts: ranking._FirstsFn, groups: list[list[str]], cues: list[str]
) -> None:
    """A hit's matched cues: of each explicit concept it carries (in plan order), the concept's
    first member it carries (the set test per concept that ``_members`` replaced)."""
    _skip_unbuilt(firsts)
    present = set(cues)
    expected = tuple(
        next(cue for cue in group if cue in present)
        for group in groups
        if not present.isdisjoint(group)
    )
    table = ranking._members([tuple(group) for group in groups])
    assert firsts(table, tuple(cues), (), None) == expected


@settings(max_examples=300, deadline=None)
@given(
    concepts=st.lists(
        st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=4).map(tuple), max_size=10
    )
)
def test_compiled_members_equal_the_python_ones(concepts: list[tuple[str, ...]]) -> None:
    """Concepts by member (repeated members within and across concepts included)."""
    if _textc is None:
        pytest.skip("_textc is not built (or CUEMAP_TEXTC=0)")
    assert ranking._Members._make(_textc.members(concepts)) == ranking._py_members(concepts)


@settings(max_examples=300, deadline=None)
@given(
    query=st.lists(st.sampled_from(VOCABULARY), max_size=3),
    lenders=st.lists(
        st.tuples(
            st.lists(st.sampled_from(VOCABULARY), max_size=6),
            st.sampled_from([1.0, 0.5, 0.333333, 0.75, 0.0]),
        ),
        max_size=5,
    ),
)
def test_compiled_lend_equals_the_python_one(
    query: list[str], lenders: list[tuple[list[str], float]]
) -> None:
    """Lenders' cues taken in turn (repeated cues, lower and higher shares) give the same
    cues, shares, source lists and order."""
    if _textc is None:
        pytest.skip("_textc is not built (or CUEMAP_TEXTC=0)")
    held: list[dict[str, tuple[float, list[int]]]] = []
    for lend in (core._py_lend, _textc.lend):
        cues: dict[str, tuple[float, list[int]]] = {cue: (1.0, [-1]) for cue in query}
        for source, (lent, share) in enumerate(lenders):
            lend(cues, tuple(lent), share, source)
        held.append(cues)
    assert list(held[0].items()) == list(held[1].items())


@settings(max_examples=300, deadline=None)
@given(
    items=st.lists(
        st.tuples(
            st.sampled_from(VOCABULARY),
            st.lists(st.sampled_from(VOCABULARY), max_size=3).map(tuple),
            st.floats(-1.0, 2.0),
            SOURCES.map(lambda s: s if len(s) % 2 else set(s)),  # a set too: made frozen
            FACTORS,
        ),
        max_size=8,
    )
)
def test_compiled_single_concepts_equal_the_python_ones(
    items: list[tuple[str, tuple[str, ...], float, frozenset[int] | set[int], float | None]],
) -> None:
    """Each carried cue as its own concept: its names (the cue first, then its concept's
    members, each once), weight, sources as a frozenset, and self factor."""
    if _textc is None:
        pytest.skip("_textc is not built (or CUEMAP_TEXTC=0)")
    carried = [Carried(cue, weight, sources, factor) for cue, _, weight, sources, factor in items]  # type: ignore[arg-type]
    weights = [max(item.weight, 0.0) for item in carried]
    found: list[tuple[object, tuple[str, ...]]] = [("key", members) for _, members, *_ in items]
    got = _textc.single_concepts(Concept, carried, weights, found)
    expected = ranking._py_single_concepts(Concept, carried, weights, found)
    assert got == expected
    assert all(type(c) is Concept and type(c.sources) is frozenset for c in got)


@settings(max_examples=300, deadline=None)
@given(
    cues=st.dictionaries(
        st.sampled_from(VOCABULARY),
        st.tuples(
            st.sampled_from([1.0, 0.5, 0.333333]),
            st.lists(st.sampled_from([QUERY_SOURCE, 1, 2, 3]), min_size=1, max_size=3),
        ),
        max_size=8,
    ),
    explicit=st.sets(st.sampled_from(VOCABULARY), max_size=3),
    scale=st.sampled_from([0.5, 0.3, 1]),
)
def test_compiled_lent_carried_equal_the_python_ones(
    cues: dict[str, tuple[float, list[int]]], explicit: set[str], scale: float
) -> None:
    """The feedback pass's carried cues: each lent cue but the explicit ones, in order, its
    weight scaled, its sources the shared set of one for one memory (the same object)."""
    if _textc is None:
        pytest.skip("_textc is not built (or CUEMAP_TEXTC=0)")
    alone = {seq: frozenset((seq,)) for seq in (QUERY_SOURCE, 1, 2, 3)}
    got = _textc.lent_carried(Carried, cues, explicit, scale, alone)
    expected = core._py_lent_carried(Carried, cues, explicit, scale, alone)
    assert got == expected
    assert [type(c) for c in got] == [Carried] * len(got)
    assert all(c.sources is alone[seqs[0]] for c, (_, seqs) in
               zip(got, (cues[c.cue] for c in got), strict=True) if len(seqs) == 1)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    expanded=st.lists(
        st.builds(
            Carried,
            st.sampled_from(VOCABULARY),
            st.sampled_from([-0.5, 0.0, 0.25, 1.0, 2]),
            SOURCES,
            FACTORS,
        ),
        max_size=8,
    ),
    explicit=st.sets(st.sampled_from(VOCABULARY), max_size=3),
)
def test_compiled_carried_parts_equal_the_python_ones(
    expanded: list[Carried], explicit: set[str]
) -> None:
    """The carried cues but the explicit ones, their cues, and their weights from 0.0 (the
    same objects: a weight kept is the one carried)."""
    if _textc is None:
        pytest.skip("_textc is not built (or CUEMAP_TEXTC=0)")
    got = _textc.carried_parts(expanded, explicit)
    expected = ranking._py_carried_parts(expanded, explicit)
    assert got == expected
    assert [type(w) for w in got[2]] == [type(w) for w in expected[2]]


_FOUND_KEYS = (("cue", "meeting"), ("tag", "team"))


def _found_lists(members: tuple[str, ...]) -> topk._Found:
    """Made-up lists of a concept: its document frequency from its members (0 for some)."""
    df = sum(len(m) for m in members) % 7 * 3
    return topk._Found(_FOUND_KEYS[: len(members) % 3], (topk.Postings(),) * (df % 2), df)


def _memoized_lists(
    derived: dict[object, object], asked: list[tuple[str, ...]], members: tuple[str, ...]
) -> topk._Found:
    """``topk._found`` made up: the concept's lists, memoized in ``derived``; ``asked`` keeps
    the concepts asked."""
    asked.append(members)
    made = derived[(topk._CARRIED_KINDS, members)] = _found_lists(members)
    return made


@settings(max_examples=300, deadline=None)
@given(
    concepts=st.lists(
        st.builds(
            Concept,
            st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=3).map(tuple),
            st.sampled_from([0.0, 0.25, 1.0, 0.333333, 2, 1e-300]),
            SOURCES,
            FACTORS,
        ),
        max_size=10,
    ),
    held=st.sets(st.sampled_from(VOCABULARY), max_size=4),
    n=st.integers(1, 2_000_000),
    most=st.integers(0, 30),
    w_session=st.sampled_from([0.0, 0.5, 1, 0.7]),
    own_factor=st.sampled_from([0.0, 0.5, 1]),
)
def test_compiled_carried_lists_equal_the_python_ones(
    concepts: list[Concept],
    held: set[str],
    n: int,
    most: int,
    w_session: float,
    own_factor: float,
) -> None:
    """Each carried concept's list: the memo read first, the lists found (and memoized) only
    for a concept not held, a concept of document frequency 0 or above ``most`` left out,
    and the same floats, bit for bit (the gain, its own source's gain, the bound)."""
    if _textc is None:
        pytest.skip("_textc is not built (or CUEMAP_TEXTC=0)")
    kinds = topk._CARRIED_KINDS
    outcomes = []
    for carried_lists in (topk._py_carried_lists, _textc.carried_lists):
        # the memo holds the concepts of one member in ``held``, with lists unlike found ones
        derived: dict[object, object] = {
            (kinds, (cue,)): topk._Found((("cue", cue),), (topk.Postings(),), len(cue) * 2)
            for cue in sorted(held)
        }
        asked: list[tuple[str, ...]] = []
        got = carried_lists(
            topk._List, topk._Gain, "session", concepts, derived, kinds,
            partial(_memoized_lists, derived, asked), n, most, w_session, own_factor,
        )  # fmt: skip
        outcomes.append((got, asked, derived))
    (expected, asked, derived), (got, got_asked, got_derived) = outcomes
    assert got == expected and got_asked == asked and got_derived == derived
    assert [(type(lst), type(lst.gain)) for lst in got] == [(topk._List, topk._Gain)] * len(got)
    floats = [(lst.bound, *lst.gain[::2]) for lst in got]
    assert [tuple(map(float.hex, f)) for f in floats] == [
        tuple(map(float.hex, (lst.bound, *lst.gain[::2]))) for lst in expected
    ]


def test_compiled_carried_lists_reject_what_they_cannot_read() -> None:
    """Bad concepts or found lists raise (as the Python twin's unpacking would), and an error
    from ``found`` propagates."""
    if _textc is None:
        pytest.skip("_textc is not built (or CUEMAP_TEXTC=0)")
    kinds = topk._CARRIED_KINDS

    def lists(concepts: object, found: object, derived: dict[object, object]) -> object:
        return _textc.carried_lists(
            topk._List, topk._Gain, "session", concepts, derived, kinds, found, 100, 20, 1.0, 0.5
        )

    def fails(members: tuple[str, ...]) -> object:
        raise LookupError(members)

    one = Concept(("a",), 1.0, frozenset({1}), None)
    with pytest.raises(LookupError):
        lists([one], fails, {})
    with pytest.raises(TypeError):
        lists([("a",)], fails, {})
    with pytest.raises(TypeError):
        lists([one], lambda members: (1, 2), {})
    with pytest.raises(TypeError):
        lists(7, fails, {})
    with pytest.raises(TypeError):
        lists([one._replace(weight="heavy")], fails, {(kinds, ("a",)): topk._Found((), (), 3)})
    no_source = lists([one._replace(sources=[])], fails, {(kinds, ("a",)): topk._Found((), (), 3)})
    assert no_source[0].gain.special is None  # as len() != 1 gives in Python
    assert lists([one], fails, {(kinds, ("a",)): topk._Found((), (), 0)}) == []


@settings(max_examples=300, deadline=None)
@given(
    concepts=st.lists(
        st.builds(
            Concept,
            st.just(("meeting",)),
            st.just(1.0),
            st.frozensets(st.sampled_from([QUERY_SOURCE, 1, 2, 3]), max_size=2)
            | st.sampled_from([[2], (3,), {1}]),
            st.sampled_from([None, 0.0, 0, 0.5, 1, -0.0]),
        ),
        max_size=12,
    )
)
def test_compiled_alone_equals_the_python_one(concepts: list[Concept]) -> None:
    """Memory -> the positions of the concepts it alone gave with self factor 0 (any source
    container of one, a factor of int 0 or -0.0 too), in the same order."""
    if _textc is None:
        pytest.skip("_textc is not built (or CUEMAP_TEXTC=0)")
    got, expected = _textc.alone(concepts), ranking._py_alone(concepts)
    assert got == expected and list(got) == list(expected)
    assert all(type(positions) is set for positions in got.values())


def test_compiled_alone_rejects_what_it_cannot_read() -> None:
    """Items that are no concepts, and unsized sources, raise (as in Python)."""
    if _textc is None:
        pytest.skip("_textc is not built (or CUEMAP_TEXTC=0)")
    with pytest.raises(TypeError):
        _textc.alone([("a", 1.0)])
    with pytest.raises(TypeError):
        _textc.alone(7)
    with pytest.raises(TypeError):
        _textc.alone([Concept(("a",), 1.0, 5, 0.0)])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ranking._py_alone([Concept(("a",), 1.0, 5, 0.0)])  # type: ignore[arg-type]
    assert _textc.alone([Concept(("a",), 1.0, 5, None)]) == {}  # the factor is read first


@settings(max_examples=300, deadline=None)
@given(
    keys=st.lists(
        st.sampled_from([("stem", "meet"), ("stem", "cach"), ("alias", 0), ("alias", 1), "x"]),
        max_size=300,
    )
)
def test_compiled_shared_positions_equal_the_python_ones(keys: list[object]) -> None:
    """Each concept key's first position -> its later ones, for keys met once, twice or many
    times (positions past the small ints CPython keeps too), in the same order."""
    if _textc is None:
        pytest.skip("_textc is not built (or CUEMAP_TEXTC=0)")
    found: list[tuple[object, tuple[str, ...]]] = [(key, ("m",)) for key in keys]
    got, expected = _textc.shared_positions(found), ranking._py_shared_positions(found)
    assert list(got.items()) == list(expected.items())


def test_compiled_shared_positions_reject_what_they_cannot_read() -> None:
    """A found entry that is no pair, a found that is no list, an unhashable key: errors."""
    if _textc is None:
        pytest.skip("_textc is not built (or CUEMAP_TEXTC=0)")
    for shared_positions in (_textc.shared_positions, ranking._py_shared_positions):
        with pytest.raises(TypeError):
            shared_positions([(["a"], ("a",))])
        with pytest.raises((TypeError, ValueError)):
            shared_positions([("a",)])
    with pytest.raises(TypeError):
        _textc.shared_positions((("a", ("a",)),))


def test_compiled_firsts_rejects_what_it_cannot_read() -> None:
    """Bad tables raise instead of reading past a list (the Python twin would raise too)."""
    if _textc is None:
        pytest.skip("_textc is not built (or CUEMAP_TEXTC=0)")
    table = ranking._members([("a", "b")])
    with pytest.raises(TypeError):
        _textc.firsts(table, ("a",), (), [0])
    with pytest.raises(IndexError):
        _textc.firsts(table._replace(member_at=[]), ("a",), (), None)
    with pytest.raises(ValueError):
        _textc.firsts(table._replace(width=0), ("a",), (), None)
    with pytest.raises(TypeError):
        _textc.members([["a"]])
    with pytest.raises(TypeError):
        _textc.lend({"a": (1.0, ())}, ("a",), 0.5, 1)
    with pytest.raises(ValueError):
        _textc.single_concepts(Concept, [Carried("a", 1.0)], [], [])
    with pytest.raises(KeyError):
        _textc.lent_carried(Carried, {"a": (1.0, [7])}, set(), 0.5, {})


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=SEEDS, query=QUERIES, picks=st.lists(st.integers(0, 399), max_size=12, unique=True))
def test_matched_terms_of_all_hits_equal_a_test_per_hit(
    seed: int, query: list[str], picks: list[int]
) -> None:
    """The terms each hit's text holds, found term by term for all the hits at once, are
    ``holds`` asked per hit and term, in plan order."""
    cm = _store(seed % 3, 400)  # few distinct stores, many queries
    index = cm._indexes["default"]
    plan = plan_query(" ".join(query), index, cm.aliases)
    seqs = [seq for seq in (cm._seq_of.get(("default", f"m{i}")) for i in picks) if seq]
    got = ranking._matched_terms(index, plan.terms, seqs)
    for seq in seqs:
        expected = tuple(t for t in plan.terms if index.terms.holds(t, seq))
        assert got.get(seq, ()) == expected


def _reference_weighted_concepts(
    carried: list[Carried], aliases: AliasTable
) -> tuple[Concept, ...]:
    """The grouping ``ranking._weighted_concepts`` replaced (a new set of sources per cue)."""
    groups: dict[object, tuple[dict[str, None], float, frozenset[int], float | None]] = {}
    for item in carried:
        key, members = aliases.concept(item.cue)
        names, best, sources, factor = groups.get(key, ({}, 0.0, frozenset(), item.self_factor))
        names.update(dict.fromkeys((item.cue, *members)))
        if item.weight > best:
            factor = item.self_factor
        groups[key] = (names, max(best, item.weight), sources | item.sources, factor)
    return tuple(Concept(tuple(n), w, src, f) for n, w, src, f in groups.values())


@settings(max_examples=200, deadline=None)
@given(carried=_carried_cues([0.0, 0.3, 0.5, 1.0]))
def test_carried_concepts_equal_the_reference_grouping(carried: list[Carried]) -> None:
    aliases = AliasTable([*RecallConfig().aliases, ("cache", "redis")])
    assert ranking._weighted_concepts(carried, aliases) == _reference_weighted_concepts(
        carried, aliases
    )


@settings(max_examples=200, deadline=None)
@given(
    carried=_carried_cues([-0.5, 0.0, 0.3, 0.5, 1.0]),
    explicit=st.lists(st.sampled_from(VOCABULARY), max_size=3),
)
def test_with_carried_equals_the_reference(carried: list[Carried], explicit: list[str]) -> None:
    """The plan's carried cues read in one pass equal each cue's strongest weight (from 0.0)
    and the reference grouping, explicit cues left out."""
    aliases = AliasTable([*RecallConfig().aliases, ("cache", "redis")])
    plan = QueryPlan(
        query="", normalized="", cues=tuple((cue,) for cue in explicit), expanded=(),
        expanded_concepts=(), tags=(), terms=(),
    )  # fmt: skip
    kept = [item for item in carried if item.cue not in explicit]
    strongest: dict[str, float] = {}
    for item in kept:
        strongest[item.cue] = max(strongest.get(item.cue, 0.0), item.weight)
    got = ranking.with_carried(plan, carried, aliases)
    assert got.expanded == tuple(strongest.items())
    assert got.expanded_concepts == _reference_weighted_concepts(kept, aliases)


def _reference_carry(
    cm: CueMap, query_cues: tuple[str, ...], hits: list[ranking.Hit], depth: int
) -> dict[str, tuple[float, list[str]]]:
    """The cues a turn passes on, cue by cue (``CueMap._carry`` goes hit by hit): each one's
    weight is the best of the query's 1.0 and the rounded shares of the hits carrying it, its
    ids the query's and those hits', in order."""
    best = hits[0].score if hits else 0.0
    lending = []  # (id, rounded share, cues) of each hit that lends its cues
    for hit in hits[:depth]:
        share = hit.score / best if best > 0 else 0.0
        if share < cm.config.session_min_share:
            break
        lending.append((hit.memory_id, round(share, 6), cm._indexed_cues("default", hit.memory_id)))
    out = {}
    for cue in dict.fromkeys([*query_cues, *(c for _, _, cues in lending for c in cues)]):
        asked = [(1.0, "")] if cue in query_cues else []
        given = [(share, mid) for mid, share, cues in lending for c in cues if c == cue]
        out[cue] = (max([0.0] + [w for w, _ in asked + given]), [mid for _, mid in asked + given])
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_feedback_cues_equal_the_reference(seed: int) -> None:
    cm = build(seed, 200)
    for query in ("order cache team", "caroline painting festival", "订单 超时", "the beach"):
        result = cm.recall(query, k=8, explain=True)
        trace, hits = result.trace, list(result.hits)
        assert trace is not None
        depth = cm.config.feedback_hits
        expected = _reference_carry(cm, trace.query_cues, hits, depth)
        assert cm._carry("default", trace.query_cues, hits, depth) == expected
        first = ranking.Scored([(cm._seq_of["default", h.memory_id], h.score) for h in hits], 0)
        every = [  # the query's cues too, as the feedback pass lent them before
            cm._carried("default", cue, weight * cm.config.feedback_weight, ids)._replace(
                self_factor=0.0
            )
            for cue, (weight, ids) in expected.items()
        ]
        lent = cm._feedback(cm._indexes["default"], trace.query_cues, first)
        assert lent == [item for item in every if item.cue not in trace.query_cues]
        # the final plan drops carried cues equal to explicit ones: leaving them out changes none
        read = plan_query(query, cm._indexes["default"], cm.aliases)
        assert read.flat_cues == trace.query_cues
        assert ranking.with_carried(read, lent, cm.aliases) == ranking.with_carried(
            read, every, cm.aliases
        )


def _dated_store(seed: int, folds: float = 0.2) -> CueMap:
    """Memories created over two months, some (``folds`` of them) at moments that stay
    datetimes in their rows (a fold), and transcript turns of two speakers."""
    rnd = random.Random(seed)
    cm = CueMap(clock=FakeClock(T0), config={"dedupe": False})
    start = datetime(2023, 5, 1, tzinfo=timezone.utc)
    items = []
    for i in range(120):
        created = start + timedelta(hours=rnd.randint(0, 24 * 60))
        if rnd.random() < folds:
            created = created.replace(fold=1)
        speaker = rnd.choice(["Caroline", "Melanie"])
        words = " ".join(rnd.choice(VOCABULARY[4:]) for _ in range(4))
        items.append(
            {"content": f"{speaker}: {words}", "memory_id": f"m{i}", "created_at": created}
        )
    cm.add_many(items)
    return cm


@pytest.mark.parametrize("folds", [0.2, 0.0])  # some datetime stamps, or every one a float
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("query", ["what did Caroline say on 8 May 2023", "team in May 2023"])
def test_bonuses_of_many_memories_equal_the_bonus_of_each(
    seed: int, query: str, folds: float
) -> None:
    cm = _dated_store(seed, folds)
    index = cm._indexes["default"]
    plan = plan_query(query, index, cm.aliases)
    seqs = list(index.docs)
    turns = (frozenset(seqs[::3]),), (frozenset(seqs[::3]), frozenset(seqs[1::4]))
    for speaker_turns in ((), *turns):
        asked = dataclasses.replace(plan, speaker_turns=speaker_turns)
        for records in (cm._records, {seq: cm._records[seq] for seq in seqs}):
            boosts = ranking._boosts(asked, cm.config, records)
            one, many = ranking._bonus(boosts), ranking._bonus_all(boosts)
            assert (one is None) == (many is None) == (not boosts)
            if one is not None and many is not None:
                assert many(seqs) == [one(seq) for seq in seqs]
                assert list(map(repr, many(seqs))) == [repr(one(seq)) for seq in seqs]
                assert any(many(seqs))
            # the NumPy way (arrays._priors): the same floats, or None (the list way then)
            vectorized = ranking._bonus_array(boosts)
            dated_only = bool(boosts) and not speaker_turns and records is cm._records
            assert (vectorized is not None) == dated_only
            if vectorized is not None and many is not None:
                got = vectorized(np.array(seqs, dtype=np.int64))
                if folds:  # some stamp is a datetime
                    assert got is None
                else:
                    assert got.dtype == np.float64
                    assert list(map(repr, got.tolist())) == list(map(repr, map(float, many(seqs))))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=SEEDS,
    query=QUERIES,
    edits=edit_lists(6),
)
def test_memoized_list_descriptors_read_what_fresh_ones_read_after_edits(
    seed: int, query: list[str], edits: list[tuple[str, int]]
) -> None:
    """The member descriptors kept in ``index.derived`` give the kernel the same postings as
    descriptors made anew, and every posting change drops them (a buffer may move)."""
    if not kernel.available():
        pytest.skip("the compiled kernel is not built")
    cm = build(seed % 3, 300)
    rnd = random.Random(seed)
    for op, i in [("", 0), *edits]:
        if op:
            _edit(cm, rnd, op, i)  # a memo that survives it must still read the same postings
        index = cm._indexes["default"]
        plan = plan_query(" ".join(query), index, cm.aliases)
        lists = topk.RecallMemo().lists(index, plan, cm.config) + _carried(cm, rnd)
        seqs = list(index.docs)
        lengths = [index.docs[seq].length for seq in seqs]
        fresh = kernel.describe(lists)
        assert fresh is not None
        expected = kernel.evidence(fresh, range(fresh.lists), seqs, lengths)
        for _ in range(2):  # made into the memo, then read from it
            held = kernel.describe(lists, arrays._members(index))
            assert held is not None
            assert (held.ints, held.doubles, held.lists, held.postings) == (
                fresh.ints, fresh.doubles, fresh.lists, fresh.postings
            )  # fmt: skip
            assert kernel.evidence(held, range(held.lists), seqs, lengths) == expected
    cm.add("order cache redis and a word never seen", memory_id="fresh")  # new postings
    assert arrays._MEMBERS_KEY not in cm._indexes["default"].derived


@settings(max_examples=300, deadline=None)
@given(
    record=packed_records(),
    count=st.integers(1, 5),
    when=_instants,
    cached=st.booleans(),
    flushes=st.integers(1, 2),
)
def test_counting_an_access_in_place_packs_the_row_a_new_record_would(
    record: MemoryRecord, count: int, when: datetime, cached: bool, flushes: int
) -> None:
    """``RecordTable.accessed`` (the flush of recall counts) leaves the row that packing the
    record with that count and time gives, and a read sees the new record, whether one was
    kept built or not (and a second flush of the same row, whose extra fields are then the
    two access fields, too)."""
    when = record.evolve(last_accessed=when).last_accessed  # in UTC, as the store's clock
    table, reference = RecordTable(), RecordTable()
    table[3] = record
    if cached:
        table[3]  # noqa: B018  # a record built before the change must not be read after it
    for _ in range(flushes - 1):
        table.accessed(3, count + 1, T0)
    table.accessed(3, count, when)
    reference[3] = record.evolve(access_count=count, last_accessed=when)
    assert table.row(3) == reference.row(3)
    assert repr(table[3]) == repr(reference[3])
    assert table[3] == reference[3]


_WEIGHTS = st.fixed_dictionaries(
    {name: st.sampled_from([0.0, 0.25, 1.0, 1.7]) for name in RecallConfig().weights}
)
_SIGNAL = st.dictionaries(st.sampled_from([1, 2, 3]), st.floats(0.0, 20.0), max_size=3)


@settings(max_examples=300, deadline=None)
@given(
    weights=_WEIGHTS,
    signals=st.tuples(_SIGNAL, _SIGNAL, _SIGNAL, _SIGNAL),
    seq=st.sampled_from([1, 2, 3, 4]),
    age_days=st.floats(-3.0, 400.0),
    access=st.integers(0, 50),
    type_=st.sampled_from(list(MemoryType)),
    only_factor=st.sampled_from([0.0, 0.5, 1.0]),
)
def test_builtin_breakdown_equals_combine(
    weights: dict[str, float],
    signals: tuple[dict[int, float], ...],
    seq: int,
    age_days: float,
    access: int,
    type_: MemoryType,
    only_factor: float,
) -> None:
    """A hit's breakdown by the built-in rules written out (``ranking._builtin_parts``) is
    ``combine``'s, float for float, whatever the weights, evidence, age, count and type."""
    cfg = RecallConfig(weights=weights, session_only_factor=only_factor)
    sig = topk.Evidence(*(dict(s) for s in signals))
    when = T0 - timedelta(days=age_days)
    record = MemoryRecord(memory_id="m", content="x", type=type_, created_at=when, updated_at=when)
    parts = ranking._builtin_parts(cfg, sig, T0)
    assert parts is not None
    expected = ranking._combined_parts(sig, cfg, T0, seq, record, access)
    # one pass's hits at once: each hit's parts are its own, whatever the others are
    other = dataclasses.replace(record, type=MemoryType.NOTE, updated_at=T0)
    assert parts([seq, 4, seq], [record, other, record], [access, 0, access]) == [
        expected, ranking._combined_parts(sig, cfg, T0, 4, other, 0), expected,
    ]  # fmt: skip
    assert parts([], [], []) == []


def test_a_replaced_builtin_rule_is_explained_by_combine() -> None:
    """``register_rule`` may replace a built-in rule by name: the written-out breakdown then
    stands aside (None), and ``combine`` explains every hit."""
    cfg, sig = RecallConfig(), topk.Evidence()
    assert ranking._builtin_parts(cfg, sig, T0) is not None
    held = scoring.RULES["cue"]
    try:
        scoring.register_rule("cue", lambda f, c: 2.0 * f.cue)
        assert ranking._builtin_parts(cfg, sig, T0) is None
    finally:
        scoring.RULES["cue"] = held
    assert ranking._builtin_parts(cfg, sig, T0) is not None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=SEEDS, query=QUERIES)
def test_hits_built_without_init_are_the_dataclasses_own(seed: int, query: list[str]) -> None:
    """A recall builds its hits and their breakdowns by ``results._built`` (no ``__init__``):
    each equals, hashes and reads as the one its dataclass builds from the same fields, with
    its fields in the same order."""
    for hit in _store(seed % 5, 400).recall(" ".join(query), k=10, hybrid=False):
        b = hit.breakdown
        made = ScoreBreakdown(b.contributions, b.matched_cues, b.session_cues, b.matched_tags,
                              b.matched_terms)  # fmt: skip
        again = Hit(hit.memory, hit.score, made, conflicts=hit.conflicts)  # source: "cue"
        for built, reference in ((b, made), (hit, again)):
            assert built == reference and hash(built) == hash(reference)
            assert repr(built) == repr(reference)
            assert list(vars(built).items()) == list(vars(reference).items())


@settings(max_examples=200, deadline=None)
@given(
    stored=st.lists(packed_records(), min_size=1, max_size=8),
    bulk=st.booleans(),
    dropped=st.sets(st.integers(0, 7), max_size=3),
    replaced=st.lists(st.tuples(st.integers(0, 7), packed_records()), max_size=3),
    accessed=st.sets(st.integers(0, 7), max_size=4),
    now=_instants,
)
def test_fallible_rows_are_those_the_default_filters_can_turn_away(
    stored: list[MemoryRecord],
    bulk: bool,
    dropped: set[int],
    replaced: list[tuple[int, MemoryRecord]],
    accessed: set[int],
    now: datetime,
) -> None:
    """``RecordTable.fallible`` holds exactly the rows with an expiry or a supersession,
    through bulk and single puts, replacements, deletions and access flushes; every other row
    passes the default filters at any time, and ``access_count`` reads what the row does."""
    table = RecordTable()
    seqs = list(range(1, len(stored) + 1))
    if bulk:
        table.put_many(seqs, stored, ())
    else:
        for seq, record in zip(seqs, stored, strict=True):
            table[seq] = record
    for at, record in replaced:
        table[1 + at % len(seqs)] = record
    for at in dropped:
        table.pop(1 + at % len(seqs), None)
    for at in accessed:
        if 1 + at % len(seqs) in table:
            table.accessed(1 + at % len(seqs), at + 1, T0)
    expected = {
        seq for seq in table if table[seq].expires_at is not None or table[seq].superseded_by
    }
    assert set(table.fallible()) == expected
    now = now.astimezone(timezone.utc)
    for seq in table:
        row = table.row(seq)
        assert table.access_count(seq) == row.access_count == table[seq].access_count
        if seq not in expected:
            assert ranking.Filters().admits(row, now)


@pytest.mark.parametrize("exclude", [frozenset(), frozenset({"m1"})])
@pytest.mark.parametrize("filters", [ranking.Filters(), ranking.Filters(include_expired=True)])
def test_admission_shortcut_equals_the_filters_as_time_passes(
    filters: ranking.Filters, exclude: frozenset[str]
) -> None:
    """``ranking._admission`` answers what ``Filters.admits`` and ``exclude`` say of every
    memory, before and after expiries pass and after a supersession; with the default filters
    and no expiry or supersession at all, it is the C-level :data:`ranking._EVERY`."""
    clock = FakeClock(T0)
    with CueMap(clock=clock) as cm:
        cm.add_many([{"content": f"note number {i} about caches", "memory_id": f"m{i}"}
                     for i in range(6)])  # fmt: skip
        records = cm._records
        plain = ranking._admission(records, filters, exclude, clock(), {})
        assert (plain is ranking._EVERY) == (not exclude and filters == ranking.Filters())
        cm.add("the cache expires soon", memory_id="soon", expires_at=T0 + timedelta(days=1))
        cm.update("m2", content="note number 2 about caches, revised")
        cm.add("note number 3, replaced", memory_id="m3b", supersedes="m3")
        for days in (0, 1, 2):
            now = T0 + timedelta(days=days)
            admitted = ranking._admission(records, filters, exclude, now, {})
            assert admitted is not ranking._EVERY
            for seq in records:
                row = records.row(seq)
                expected = row.memory_id not in exclude and filters.admits(row, now)
                assert admitted(seq) == expected, (days, row.memory_id)


def test_recall_with_expiries_and_supersessions_equals_the_general_admission(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whole recalls are the same whether admission takes the shortcut for rows that cannot
    fail or asks the filters of every memory (every row made fallible), as expiries pass."""
    clock = FakeClock(T0)
    with CueMap(clock=clock, config={"track_access": False}) as cm:
        cm.add_many([{"content": f"the cache note {i} of team {i % 3}", "memory_id": f"m{i}"}
                     for i in range(30)])  # fmt: skip
        for i in range(0, 30, 4):
            cm.update(f"m{i}", expires_at=T0 + timedelta(days=i % 3 + 1))
        cm.add("the cache note of team 1, newer", memory_id="new1", supersedes="m1")

        def recalls() -> list[object]:
            out = []
            for days in (0, 1, 2, 4):
                clock.now = T0 + timedelta(days=days)
                for query in ("cache note", "team 1", "cache team 2"):
                    result = cm.recall(query, k=8, explain=True)
                    out.append([(h.memory_id, h.score, h.breakdown) for h in result.hits])
            return out

        shortcut = recalls()
        monkeypatch.setattr(RecordTable, "fallible", lambda table: set(table))
        assert recalls() == shortcut
        expiring = {f"m{i}" for i in range(0, 30, 4)}
        found = [{hit[0] for hit in hits} for hits in shortcut]  # type: ignore[attr-defined]
        assert expiring & set().union(*found[:3])  # found before they expire, not after
        assert not expiring & set().union(*found[-3:])
        assert "m1" not in set().union(*found)  # superseded


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=SEEDS)
def test_held_cues_and_tags_equal_the_checked_ones(seed: int) -> None:
    """``DocTable.held_cues_and_tags`` (a recall's hits and feedback memories) reads what
    ``cues_and_tags`` does of every memory the namespace holds, plain docs and tagged ones,
    after updates and deletions; the checked one still refuses a seq it does not hold."""
    cm = build(seed, 120)  # a store of its own: it is changed
    cm.update("m3", tags=["redis"])
    cm.update("m4", content="a new text about the cache")
    cm.delete("m5")
    docs = cm._indexes["default"].docs
    assert len(docs) > 100
    for seq in docs:
        assert docs.held_cues_and_tags(seq) == docs.cues_and_tags(seq)
        assert core._cues_and_tags(docs, seq) == core._lent_cues(docs.held_cues_and_tags, seq)
    with pytest.raises(KeyError):
        docs.cues_and_tags(max(docs) + 1)


def test_default_filters_are_one_shared_instance() -> None:
    """``Filters.build`` of no filter gives the shared default (which ``_admission`` knows by
    identity); any filter, even an empty type list or a falsy non-bool, builds its own."""
    assert ranking.Filters.build() is ranking._DEFAULT_FILTERS == ranking.Filters()
    assert ranking.Filters.build(types=[]).types == frozenset()
    assert ranking.Filters.build(include_superseded=True) != ranking._DEFAULT_FILTERS
    built = ranking.Filters.build(include_expired=0)  # type: ignore[arg-type]
    assert built is not ranking._DEFAULT_FILTERS and built.include_expired == 0


def test_recalls_count_each_hit_once_by_the_rankings_seqs() -> None:
    """A recall counts its hits' accesses by the seqs its ranking returned (no id looked up
    again): after many recalls, with flushes in between, each memory's count is the number of
    recalls that returned it, and a recall whose extension changes the hits counts those."""
    with CueMap(clock=FakeClock(T0), config={"dedupe": False}) as cm:
        cm.add_many([{"content": f"cache note {i} for team {i % 7}", "memory_id": f"m{i}"}
                     for i in range(60)])  # fmt: skip
        returned: dict[str, int] = {}
        for round_ in range(30):  # past the flush of every 256 pending counts
            for hit in cm.recall(f"cache team {round_ % 7}", k=9):
                returned[hit.memory_id] = returned.get(hit.memory_id, 0) + 1

        class _Reverse:  # an extension returning the hits reversed, the last one dropped
            def extend(self, request: object, hits: tuple[Hit, ...]) -> tuple[Hit, ...]:
                return hits[::-1][1:]

        cm.extension = _Reverse()  # type: ignore[assignment]
        for hit in cm.recall("cache team 3", k=5):
            returned[hit.memory_id] = returned.get(hit.memory_id, 0) + 1
        assert len(returned) > 20
        for i in range(60):
            assert cm.get(f"m{i}").access_count == returned.get(f"m{i}", 0)


@settings(max_examples=200, deadline=None)
@given(
    cue=st.one_of(
        st.sampled_from([*VOCABULARY, "the", "on", "2023", "2023-05-08", "ice cream", "x-y"]),
        st.text(st.sampled_from("abcxyz019 -/Ü"), max_size=10),
    )
)
def test_concept_key_of_a_cue_of_no_group_is_its_stem_units(cue: str) -> None:
    """A cue of no alias group keys its concept by its query units, whether found by the
    plain-word shortcut (text.word_unit) or the general path."""
    aliases = AliasTable([("meeting", "会议"), ("cache", "redis")])
    if aliases.group_of(cue) is None:
        assert aliases.concept(cue) == (("stem", *text.query_units(cue)), (cue,))
