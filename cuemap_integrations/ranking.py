"""Reading a query into cues and terms, and ranking one namespace's memories for it.

Everything here is a pure function of (index, records, plan, config, now): no clock, no I/O, no
iteration over sets. Ties break on the memory's sequence number (insertion order), so the same
store and query give the same ranking under any ``PYTHONHASHSEED``.
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import partial
from itertools import chain
from operator import is_, is_not
from typing import Any, NamedTuple

from .aliases import AliasTable
from .config import RecallConfig
from .errors import ValidationError
from .index import NamespaceIndex
from .records import MemoryRecord, MemoryType, coerce_timestamp
from .recordtable import RecordHead, RecordTable
from .results import Hit, RecallTrace, ScoreBreakdown, _built
from .scoring import RULES, Features, combine, recency_value, session_value
from .text import _C as _textc
from .text import content_terms, derive_cues, joined_pairs, normalize, query_units, stem
from .topk import Evidence, FastScorer, RecallMemo, _new, gather  # _new: tuple.__new__

__all__ = [
    "Carried",
    "Concept",
    "Filters",
    "Period",
    "QueryPlan",
    "Ranking",
    "Scored",
    "named_period",
    "plan_query",
    "rank",
    "trace",
    "with_carried",
]

_SECONDS_PER_DAY = 86400.0


@dataclass(frozen=True)
class Filters:
    """Which memories may be returned. Built by :meth:`build` from the public keyword arguments."""

    types: frozenset[MemoryType] | None = None
    sources: frozenset[str] | None = None
    since: datetime | None = None
    until: datetime | None = None
    include_expired: bool = False
    include_superseded: bool = False

    @classmethod
    def build(
        cls,
        *,
        types: Iterable[MemoryType | str] | None = None,
        sources: Iterable[str] | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        include_expired: bool = False,
        include_superseded: bool = False,
    ) -> Filters:
        """Validate the public filter arguments (a bad one raises ValidationError)."""
        if (types is None and sources is None and since is None and until is None
                and include_expired is False and include_superseded is False):  # fmt: skip
            return _DEFAULT_FILTERS  # most recalls: one shared instance (it is frozen)
        if isinstance(types, (str, MemoryType)):
            types = [types]
        if isinstance(sources, str):
            sources = [sources]
        return cls(
            types=None
            if types is None
            else frozenset(MemoryType.coerce(t, "types") for t in types),
            sources=None if sources is None else frozenset(_check_source(s) for s in sources),
            since=None if since is None else coerce_timestamp(since, "since"),
            until=None if until is None else coerce_timestamp(until, "until"),
            include_expired=include_expired,
            include_superseded=include_superseded,
        )

    def admits(self, record: RecordHead, now: datetime) -> bool:
        """True when ``record`` passes every filter at time ``now``."""
        if self.types is not None and record.type not in self.types:
            return False
        if self.sources is not None and record.source not in self.sources:
            return False
        if self.since is not None and record.created_at < self.since:
            return False
        if self.until is not None and record.created_at > self.until:
            return False
        if not self.include_expired and record.is_expired(now):
            return False
        return self.include_superseded or record.superseded_by is None


_DEFAULT_FILTERS = Filters()


def _check_source(source: object) -> str:
    if not isinstance(source, str):
        raise ValidationError("sources", source, "strings")
    return source


QUERY_SOURCE = -1  # the "memory" a cue came from when it came from a query, not a hit


class Carried(NamedTuple):
    """A cue a session carries into the next turn, and the memories (seqs) it came from."""

    cue: str
    weight: float
    sources: frozenset[int] = frozenset({QUERY_SOURCE})
    self_factor: float | None = None  # None: the config's session_self_factor


class Concept(NamedTuple):
    """Equivalent cue strings that count once, with a weight and (for carried cues) sources."""

    members: tuple[str, ...]
    weight: float = 1.0
    sources: frozenset[int] = frozenset({QUERY_SOURCE})
    self_factor: float | None = None


@dataclass(frozen=True)
class QueryPlan:
    """A query read by rule: explicit cues, carried-over cues, tag matches and content terms.

    ``cues`` holds concepts: each is a tuple of equivalent cue strings (an alias group, or cues
    with the same stem such as ``order``/``orders``) that counts once, however many of its
    members a memory carries.
    """

    @property
    def flat_cues(self) -> tuple[str, ...]:
        """Every explicit cue string, concept by concept (chained in C: a generator's resume
        per cue, some thirty a recall, was most of its cost)."""
        return tuple(chain.from_iterable(self.cues))

    query: str
    normalized: str
    cues: tuple[tuple[str, ...], ...]
    expanded: tuple[tuple[str, float], ...]
    expanded_concepts: tuple[Concept, ...]
    tags: tuple[str, ...]
    terms: tuple[str, ...]
    period: Period | None = None
    speakers: tuple[str, ...] = ()  # speakers of transcript turns the query names
    # their turns (the store's live sets, read during this recall only): the speaker bonus
    speaker_turns: tuple[AbstractSet[int], ...] = ()


class Period(NamedTuple):
    """The time a query names ("on 8 May 2023", "in May 2023"): ``start`` up to ``end`` (excluded)."""

    start: datetime
    end: datetime

    def holds(self, moment: datetime, days_after: float) -> bool:
        """True when ``moment`` falls in the period or within ``days_after`` days after it."""
        return self.stretched(days_after).covers(moment)

    def stretched(self, days_after: float) -> Period:
        """The period with ``days_after`` days added at its end."""
        return Period(self.start, self.end + timedelta(days=days_after))

    def covers(self, moment: datetime) -> bool:
        """True when ``moment`` falls in the period."""
        return self.start <= moment < self.end


_DATE_CUE = re.compile(r"(\d{4})-(\d{2})(?:-(\d{2}))?")


def named_period(cues: Iterable[str]) -> Period | None:
    """The span of the days and months among ``cues`` (date cues as :func:`derive_cues` writes
    them: ``2023-05-08``, ``2023-05``), or None when they name none. Bare years are too coarse
    to tell one memory from another and are ignored."""
    spans = [span for span in map(_date_span, cues) if span is not None]
    if not spans:
        return None
    return Period(min(s.start for s in spans), max(s.end for s in spans))


def _date_span(cue: str) -> Period | None:
    match = _DATE_CUE.fullmatch(cue)
    if match is None:
        return None
    year, month, day = (int(g) if g else 0 for g in match.groups())
    try:
        if day:
            start = datetime(year, month, day, tzinfo=timezone.utc)
            return Period(start, start + timedelta(days=1))
        start = datetime(year, month, 1, tzinfo=timezone.utc)
        following = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=timezone.utc)
    except ValueError:  # "2023-13" or "2023-02-30": not a date after all
        return None
    return Period(start, following)


def plan_query(
    query: str,
    index: NamespaceIndex,
    aliases: AliasTable,
    *,
    extra_cues: Sequence[str] = (),
    expanded: Sequence[Carried] = (),
) -> QueryPlan:
    """Find the query's cues by rule: lexicon matches, alias equivalents, and ``extra_cues``.

    ``expanded`` are the cues a session carries over, each with the memories it came from.
    """
    normalized = normalize(query)
    found = index.cue_lexicon.match(normalized) + aliases.find(normalized)
    # Dates and numbers with units are written many ways ("8 May 2023", "5 ms"): read the
    # query with the same rules as memories, and keep what the index knows.
    derived = derive_cues(query)
    found += [cue for cue in derived if cue in index.cues]
    found += [normalize(c) for c in extra_cues if normalize(c)]
    # "ice cream" also asks for "icecream", where a memory wrote it so (see joined_pairs)
    terms = content_terms(normalized)
    for unit in map(stem, joined_pairs(normalized)):
        found += index.cue_lexicon.unit_cues(unit)
        terms += [unit] if unit in index.terms else []  # a table holds no empty key
    plan = QueryPlan(
        query=query,
        normalized=normalized,
        cues=_concepts(found, aliases),
        expanded=(),
        expanded_concepts=(),
        tags=tuple(index.tag_lexicon.match(normalized)),
        terms=tuple(dict.fromkeys(terms)),
        period=named_period(derived),
    )
    return with_carried(plan, expanded, aliases)


def with_carried(plan: QueryPlan, expanded: Sequence[Carried], aliases: AliasTable) -> QueryPlan:
    """``plan`` with these carried cues (the query itself is not read again; explicit cues win)."""
    if not expanded and not plan.expanded and not plan.expanded_concepts:
        return plan  # nothing carried, before or now (a first pass): the plan as it is
    # the cues and their weights read once for both the strongest weights and the concepts
    # (the feedback pass carries some sixty: each loop over them is a few us of a recall)
    carried, cues, weights = _carried_parts(expanded, set(plan.flat_cues))
    strongest = dict(zip(cues, weights, strict=True))
    if len(strongest) < len(cues):  # a cue carried twice (by a session turn and feedback)
        strongest = dict(_strongest(carried))
    return _replaced(
        plan,
        expanded=tuple(strongest.items()),
        expanded_concepts=_concepts_of(carried, cues, weights, aliases),
    )


def _replaced(plan: QueryPlan, **changes: object) -> QueryPlan:
    """``dataclasses.replace(plan, **changes)``: the plan's field dict copied and changed, held
    by a new plan as its own (see :func:`~.results._built`), without ``replace``'s generic
    field walk and the generated ``__init__`` (~3x faster: once or twice a recall)."""
    values = plan.__dict__.copy()
    values.update(changes)
    return _built(type(plan), values)


def _py_carried_parts(
    expanded: Sequence[Carried], explicit: set[str]
) -> tuple[list[Carried], list[str], list[float]]:
    """The carried cues of ``expanded`` that are not ``explicit`` (explicit cues win), their
    cues, and their weights each as its strongest of one (from 0.0)."""
    carried = [item for item in expanded if item[0] not in explicit]
    cues = [item[0] for item in carried]
    return carried, cues, [w if w > 0.0 else 0.0 for _, w, _, _ in carried]


# the compiled twin when built (three Python loops over some sixty cues per feedback pass)
_carried_parts: Callable[
    [Sequence[Carried], set[str]], tuple[list[Carried], list[str], list[float]]
] = _py_carried_parts if _textc is None else _textc.carried_parts


def _strongest(carried: Iterable[Carried]) -> tuple[tuple[str, float], ...]:
    """Each carried cue once (a session turn and the feedback pass may both carry it)."""
    best: dict[str, float] = {}
    get = best.get
    for cue, weight, _, _ in carried:
        held = get(cue, 0.0)
        best[cue] = weight if weight > held else held  # max(held, weight), without the call
    return tuple(best.items())


def _concepts(found: list[str], aliases: AliasTable) -> tuple[tuple[str, ...], ...]:
    """Group cues that mean the same thing: an alias group and every cue sharing a stem key
    with one of its members ("meeting", "meetings", "meet", "会议") count as one concept."""
    groups: list[dict[str, None]] = []
    owner: dict[object, int] = {}  # a stem key or an alias group -> its concept's index
    # memoized, read in one call (two method calls per cue were ~0.5% of a recall at 100k):
    # (("stem", *units), (cue,)) for a cue of no alias group, else (("alias", group), terms)
    for cue, (key, names) in zip(found, aliases.concepts(found), strict=True):
        if key[0] == "stem":  # type: ignore[index]  # a concept key is a tuple: in no group
            # most cues: their own stem key is their only key (the general path below would
            # compute it twice, for the cue and for its one name) and they are their only name
            target = owner.get(key)
            if target is None:
                owner[key] = len(groups)
                groups.append({cue: None})
            else:
                groups[target][cue] = None
            continue
        keys: list[object] = [("stem", *query_units(n)) for n in (cue, *names)]
        keys += [key]  # ("alias", group): the cue is in a group
        known = [owner[k] for k in keys if k in owner]
        target = known[0] if known else len(groups)
        if not known:
            groups.append({})
        groups[target].update(dict.fromkeys((cue, *names)))
        for k in keys:
            owner.setdefault(k, target)
    return tuple(tuple(members) for members in groups)


def _weighted_concepts(carried: Iterable[Carried], aliases: AliasTable) -> tuple[Concept, ...]:
    """Carried cues grouped like explicit ones; a concept keeps its members' highest weight and
    the union of their sources (:func:`_concepts_of`)."""
    items = tuple(carried)
    cues = [item.cue for item in items]
    return _concepts_of(items, cues, [w if w > 0.0 else 0.0 for _, w, _, _ in items], aliases)


def _concepts_of(
    items: Sequence[Carried], cues: list[str], weights: list[float], aliases: AliasTable
) -> tuple[Concept, ...]:
    """:func:`_weighted_concepts` of ``items``, given their ``cues`` and their ``weights`` (as
    the strongest of one: from 0.0).

    A feedback pass carries some sixty cues, nearly all alone in their concept: every cue
    becomes its own concept in one call (:func:`_py_single_concepts`, as
    :func:`_single_concept`), and only cues sharing a concept are merged
    (:func:`_weighted_concept`), where the first of them stood."""
    found = aliases.concepts(cues)  # (key, members) of each
    # each cue as its own concept first: a feedback pass carries some sixty cues, nearly all
    # alone in their concept
    concepts = _single_concepts(Concept, list(items), weights, found)
    shared = _shared_positions(found)  # a first occurrence -> its concept's later cues
    if not shared:  # no two cues share a concept
        return tuple(concepts)
    for first, later in shared.items():  # merged where the first of them stood
        concepts[first] = _weighted_concept([(items[j], found[j][1]) for j in (first, *later)])
    for at in sorted([at for later in shared.values() for at in later], reverse=True):
        del concepts[at]  # a later cue of a shared concept (a few a pass)
    return tuple(concepts)


def _py_shared_positions(found: list[tuple[object, tuple[str, ...]]]) -> dict[int, list[int]]:
    """The position of each concept key of ``found`` (``(key, members)`` pairs) that occurs
    more than once -> the later positions of the same key, ascending (each key hashed once:
    a key is a tuple, which keeps no hash)."""
    owner: dict[object, int] = {}
    shared: dict[int, list[int]] = {}
    for at, (key, _) in enumerate(found):
        first = owner.setdefault(key, at)
        if first != at:
            shared.setdefault(first, []).append(at)
    return shared


# the compiled twin when built (two Python loop steps per carried cue, some sixty a pass)
_shared_positions: Callable[[list[tuple[object, tuple[str, ...]]]], dict[int, list[int]]] = (
    _py_shared_positions if _textc is None else _textc.shared_positions
)


def _py_single_concepts(
    concept: type[Concept],
    items: list[Carried],
    weights: list[float],
    found: list[tuple[object, tuple[str, ...]]],
) -> list[Concept]:
    """Each carried cue of ``items`` as its own ``concept`` (as :func:`_single_concept`),
    given its weight (as the strongest of one) and its concept's ``(key, members)``."""
    new = tuple.__new__  # a NamedTuple's own __new__ is a Python function
    return [
        new(concept, (members if members == (item.cue,) else _names(item.cue, members), weight,
                      frozenset(item.sources), item.self_factor))
        for item, weight, (_, members) in zip(items, weights, found, strict=True)
    ]  # fmt: skip


# the compiled twin when built (a Python step per cue was ~2% of a recall at 10k memories)
_single_concepts: Callable[
    [type[Concept], list[Carried], list[float], list[tuple[object, tuple[str, ...]]]],
    list[Concept],
] = _py_single_concepts if _textc is None else _textc.single_concepts


def _names(cue: str, members: tuple[str, ...]) -> tuple[str, ...]:
    """A carried cue's concept's names: the cue, then its concept's other terms."""
    return tuple(dict.fromkeys((cue, *members)))


def _single_concept(item: Carried, members: tuple[str, ...]) -> Concept:
    """:func:`_weighted_concept` of one carried cue: its sources are taken as they are."""
    names = members if members == (item.cue,) else _names(item.cue, members)
    weight = item.weight if item.weight > 0.0 else 0.0  # as the strongest of one, from 0.0
    return Concept(names, weight, frozenset(item.sources), item.self_factor)


def _weighted_concept(items: list[tuple[Carried, tuple[str, ...]]]) -> Concept:
    """One concept of its carried cues (each with its concept's terms), in the order carried."""
    if len(items) == 1:  # nearly every concept: see _single_concept
        return _single_concept(*items[0])
    names: dict[str, None] = {}
    best, factor = 0.0, items[0][0].self_factor
    for item, members in items:
        names.update(dict.fromkeys((item.cue, *members)))
        if item.weight > best:  # the strongest carrier decides how much a memory helps itself
            best, factor = item.weight, item.self_factor
    sources = frozenset().union(*(item.sources for item, _ in items))
    return Concept(tuple(names), best, sources, factor)


def _features(
    seq: int, record: MemoryRecord, sig: Evidence, now: datetime, access: int
) -> Features:
    return Features(
        cue=sig.cue.get(seq, 0.0),
        session=sig.session.get(seq, 0.0),
        tag=sig.tag.get(seq, 0.0),
        content=sig.content.get(seq, 0.0),
        age_days=(now - record.updated_at).total_seconds() / _SECONDS_PER_DAY,
        access_count=access,
        type=record.type,
        answers_query=seq in sig.cue or seq in sig.content or seq in sig.tag,
    )


class _Explainer(NamedTuple):
    """What explaining the hits of one ranking pass reads, made once per pass: the plan's
    explicit and carried concepts by member (:func:`_members`), and which of the plan's
    content terms each hit's text holds."""

    plan: QueryPlan
    explicit: _Members
    carried: _Members
    # memory -> the positions of the carried concepts that came from it alone and may not help
    # it (self factor 0: feedback); such a concept is no session cue of it
    alone: dict[int, set[int]]
    terms: dict[int, tuple[str, ...]]  # a hit -> the plan's terms its text holds, in plan order
    cues_and_tags: Callable[[int], tuple[tuple[str, ...], tuple[str, ...]]]

    @classmethod
    def of(cls, index: NamespaceIndex, plan: QueryPlan, seqs: Sequence[int]) -> _Explainer:
        """The explainer of the hits ``seqs`` of ``plan``."""
        concepts = plan.expanded_concepts
        return _new(cls, (
            plan, _members(plan.cues), _members([concept.members for concept in concepts]),
            _alone(concepts), _matched_terms(index, plan.terms, seqs),
            index.docs.held_cues_and_tags,  # the hits: memories the namespace holds
        ))  # fmt: skip

    def breakdown(self, seq: int, parts: _Parts) -> ScoreBreakdown:
        """Why hit ``seq`` scored its ``parts``: which of the plan's cues, carried cues, tags
        and terms it matched. The hit's doc cues are read once for all of them."""
        doc_cues, doc_tags = self.cues_and_tags(seq)  # no doc built
        return _built(ScoreBreakdown, {
            "contributions": parts,
            "matched_cues": _firsts(self.explicit, doc_cues, (), None),
            "session_cues": _firsts(self.carried, doc_cues, doc_tags, self.alone.get(seq)),
            "matched_tags": tuple(t for t in self.plan.tags if t in doc_tags) if doc_tags else (),
            "matched_terms": self.terms.get(seq, ()),
        })  # fmt: skip


def _matched_terms(
    index: NamespaceIndex, terms: Sequence[str], seqs: Sequence[int]
) -> dict[int, tuple[str, ...]]:
    """Memory -> those of ``terms`` its text holds (by the term postings, not the doc's terms:
    those are derived again from its content), for the hits ``seqs``: each term's postings
    asked once about all the hits, not once per hit."""
    found: dict[int, list[str]] = {}
    holding = index.terms.holding  # no postings object made for a term of one memory
    for term in terms:
        for seq in holding(term, seqs):
            found.setdefault(seq, []).append(term)
    return {seq: tuple(held) for seq, held in found.items()}


class _Members(NamedTuple):
    """Concepts (tuples of member cues, in plan order) by member, so that a hit looks up its
    own few cues instead of testing every concept (:func:`_firsts`). ``_textc.firsts`` reads
    these four fields in this order."""

    # each member's first entry: ``at * width + order`` for the first concept it is in (``at``
    # the concept's position, ``order`` the member's rank among that concept's members): one
    # int sorts as the pair would, without a tuple made or compared
    members: dict[str, int]
    more: dict[str, list[int]]  # a member of several concepts -> its other entries (rare)
    member_at: list[str | None]  # an entry -> its member
    width: int  # more than any concept's member count


def _members(concepts: Sequence[tuple[str, ...]]) -> _Members:
    """The concepts by member (see :class:`_Members`): the member a hit carries of least entry
    is its concept's first (searching each matched concept's members for it instead: 24 vs
    17 us per explained hit, 400 hits of bench queries at 30k memories). By ``_textc.members``
    when built (a feedback pass carries some sixty concepts, a loop step each in Python)."""
    if _textc is None:
        return _py_members(concepts)
    return _Members._make(_textc.members(concepts))


def _py_members(concepts: Sequence[tuple[str, ...]]) -> _Members:
    """:func:`_members` in Python (the reference of the compiled one)."""
    width = 1 + max(map(len, concepts), default=0)
    members: dict[str, int] = {}
    more: dict[str, list[int]] = {}
    member_at: list[str | None] = [None] * (width * len(concepts))
    for at, names in enumerate(concepts):
        base = at * width
        # most concepts are one cue: no loop over members
        for order, member in enumerate(names if len(names) == 1 else dict.fromkeys(names)):
            if member in members:
                more.setdefault(member, []).append(base + order)
            else:
                members[member] = base + order
            member_at[base + order] = member
    return _Members(members, more, member_at, width)


def _py_alone(concepts: Sequence[Concept]) -> dict[int, set[int]]:
    """Memory -> the positions of the carried ``concepts`` that came from it alone with no
    self help (self factor 0: feedback)."""
    alone: dict[int, set[int]] = {}
    ones = [(at, sources) for at, (_, _, sources, factor) in enumerate(concepts)
            if factor == 0.0 and len(sources) == 1]  # fmt: skip
    for at, (source,) in ones:  # a set of one unpacked: no iterator made
        mine = alone.get(source)  # not setdefault: no empty set made for a known source
        if mine is None:
            alone[source] = {at}
        else:
            mine.add(at)
    return alone


# the compiled twin when built (a feedback pass carries some sixty concepts, nearly all from
# one memory: a loop step each in Python)
_alone: Callable[[Sequence[Concept]], dict[int, set[int]]] = (
    _py_alone if _textc is None else _textc.alone
)


def _py_firsts(
    table: _Members, cues: tuple[str, ...], tags: tuple[str, ...], skip: AbstractSet[int] | None
) -> tuple[str, ...]:
    """The first member a memory carries (``cues`` and ``tags``: its cues and tags) of each
    concept of ``table`` it matches, in concept order, but for the concepts ``skip`` holds.

    Each entry (concept, rank) the memory carries, sorted: a concept's first entry is its
    member of least rank."""
    members, more, member_at, width = table
    held = members.keys() & cues  # a set: sorting below gives the order
    if tags:
        held |= members.keys() & tags
    found = [members[cue] for cue in held]
    if more:
        found += [entry for cue in held.intersection(more) for entry in more[cue]]
    found.sort()
    ats = [entry // width for entry in found]  # each entry's concept, ascending
    mine = skip or ()
    # a concept's first entry is where the concept changes (comprehensions: a hit of a feedback
    # pass carries some twenty of its concepts, a loop step each was ~40% of explaining it);
    # [-1, *ats] is each entry's predecessor's concept, one longer (not strict)
    return tuple(
        [member_at[entry] for entry, at, before in zip(found, ats, [-1, *ats], strict=False)  # type: ignore[misc]  # held entries' members are never None
         if at != before and at not in mine]
    )  # fmt: skip


_FirstsFn = Callable[
    [_Members, tuple[str, ...], tuple[str, ...], AbstractSet[int] | None], tuple[str, ...]
]
# the compiled twin when built (a hit's two calls were ~a third of explaining it)
_firsts: _FirstsFn = _py_firsts if _textc is None else _textc.firsts


def rank(
    index: NamespaceIndex,
    records: Mapping[int, MemoryRecord],
    access_counts: Mapping[int, int],
    plan: QueryPlan,
    cfg: RecallConfig,
    *,
    k: int,
    filters: Filters,
    now: datetime,
    min_score: float | None = None,
    exclude: frozenset[str] = frozenset(),
    prune: bool = True,
    memo: RecallMemo | None = None,
) -> tuple[list[Hit], RecallTrace]:
    """Score every candidate memory and return the top ``k`` hits with the query trace.

    Candidates are the union over all cue, tag and term postings of the query (wide); the ranking
    then puts memories that matched a cue or the text ahead of tag-only matches (strict). With
    ``prune`` (the default), candidates that provably cannot reach the top ``k`` are skipped
    (:mod:`.topk`); the hits are the same as without it. ``memo`` holds what the passes of one
    recall share (same time, access counts, bonuses and query words): each memory's
    query-independent prior and the query's own evidence lists, so the second pass does not
    compute them again. :meth:`Ranking.scored` is the same ranking without hits (a pass whose
    best memories only feed the next pass).

    A query naming a day or a month, or the speaker of transcript turns, gives the memories
    created then, or that speaker's turns, a bonus (:func:`_boosts`). It is part of each
    candidate's query-independent prior in the scorer, so one pass ranks exactly; a bonus never
    makes a memory a candidate by itself.
    """
    ranking = Ranking(index, records, access_counts, cfg, filters, now, min_score, exclude, prune,
                      memo)  # fmt: skip
    return ranking.hits(plan, k)


class Scored(NamedTuple):
    """A pass's best memories as ``(seq, score)``, best first, and how many it scored."""

    best: list[tuple[int, float]]
    scored: int


@dataclass(frozen=True, slots=True)
class Ranking:
    """What the passes of one recall share (the namespace's index, the records, the access
    counts, the config, the filters, the clock, the score floor, the ids left out, pruning,
    and the memo of what the passes compute once); each pass brings its plan and its k."""

    index: NamespaceIndex
    records: Mapping[int, MemoryRecord]
    access_counts: Mapping[int, int]
    cfg: RecallConfig
    filters: Filters
    now: datetime
    min_score: float | None = None
    exclude: frozenset[str] = frozenset()
    prune: bool = True
    memo: RecallMemo | None = None

    def hits(self, plan: QueryPlan, k: int) -> tuple[list[Hit], RecallTrace]:
        """The top ``k`` hits of ``plan``, explained, with the query trace (:func:`rank`)."""
        hits, _, trace = self.ranked_hits(plan, k)
        return hits, trace

    def ranked_hits(self, plan: QueryPlan, k: int) -> tuple[list[Hit], list[int], RecallTrace]:
        """:meth:`hits` with the hits' seqs, in the same order (the store counts their
        accesses without looking their ids up again)."""
        ranked, access, boosts = _ranked(self, plan, k)
        records, cfg, now, sig = self.records, self.cfg, self.now, ranked.sig
        seqs = [seq for _, _, seq in ranked.rows]
        found, counts = [records[seq] for seq in seqs], list(map(access, seqs))
        builtin = _builtin_parts(cfg, sig, now)
        parts = (
            builtin(seqs, found, counts)
            if builtin is not None
            else list(map(partial(_combined_parts, sig, cfg, now), seqs, found, counts))
        )
        if boosts:
            parts = [p + _given(boosts, seq) for p, seq in zip(parts, seqs, strict=True)]
        explain = _Explainer.of(self.index, plan, seqs).breakdown
        hits = [
            _built(Hit, {"memory": record, "score": -neg, "breakdown": explain(seq, p),
                         "source": "cue", "conflicts": ()})
            for (_, neg, seq), record, p in zip(ranked.rows, found, parts, strict=True)
        ]  # fmt: skip
        return hits, seqs, trace(plan, ranked.scored, hits)

    def scored(self, plan: QueryPlan, k: int) -> Scored:
        """:meth:`hits`'s memories and scores without their hits: a first pass only lends its
        top memories' cues to the feedback pass, so no record is read and nothing explained
        (ten records built per recall were ~2% of it at 100k memories)."""
        ranked = _ranked(self, plan, k).ranked
        return _new(Scored, ([(seq, -neg) for _, neg, seq in ranked.rows], ranked.scored))


class _Ranked(NamedTuple):
    """A ranking pass's best rows, and what explaining them reads."""

    ranked: _Pass
    access: Callable[[int], int]  # seq -> its access count
    boosts: tuple[_Boost, ...]


def _ranked(ranking: Ranking, plan: QueryPlan, k: int) -> _Ranked:
    """The best ``k`` rows of one pass (see :func:`rank`), by the fast scorer when the rules
    allow it."""
    index, cfg, min_score = ranking.index, ranking.cfg, ranking.min_score
    memo = RecallMemo() if ranking.memo is None else ranking.memo
    setup = _setup(ranking, plan, memo)
    if setup.fast is None:
        ranked = _pass_with_rules(
            index, ranking.records, setup.access, plan, cfg, k, setup.admitted, ranking.now,
            min_score, _bonus(setup.boosts),
        )  # fmt: skip
    else:
        ranked = _pass(
            index, plan, cfg, k, setup.fast, ranking.prune, setup.admitted, min_score, memo
        )
    return _new(_Ranked, (ranked, setup.access, setup.boosts))


class _Setup(NamedTuple):
    """What a pass ranks with besides its plan's lists: who is admitted, each memory's access
    count, the query's bonuses and the fast scorer (None: some weighted rule is not a built-in
    one). The same for every pass of one ``ranking`` whose plans name the same period and
    speakers (a recall's: both plans are its query's, with other carried cues)."""

    key: tuple[object, ...]  # what it was made of (see _setup_key)
    admitted: Callable[[int], bool]
    access: Callable[[int], int]
    boosts: tuple[_Boost, ...]
    fast: FastScorer | None


def _setup(ranking: Ranking, plan: QueryPlan, memo: RecallMemo) -> _Setup:
    """:class:`_Setup` of ``plan``'s pass, kept in ``memo`` for the recall's next pass (made
    again for every pass, the scorer, its kernel ranking numbers, the bonuses and the closures
    cost some ten calls and a NumPy array a pass)."""
    key = _setup_key(ranking, plan)
    held: _Setup | None = memo.setup
    if held is not None and all(map(is_, held.key, key)):
        return held
    records, cfg, now = ranking.records, ranking.cfg, ranking.now
    access_counts = ranking.access_counts
    head = _heads(records)
    admitted = _admission(records, ranking.filters, ranking.exclude, now, memo.admitted)
    counted = records.access_count if isinstance(records, RecordTable) else None

    def access(seq: int) -> int:
        count = access_counts.get(seq)
        if count is not None:
            return count
        return head(seq).access_count if counted is None else counted(seq)

    boosts = _boosts(plan, cfg, records)
    fast = None
    if FastScorer.usable(cfg):
        fast = FastScorer(
            cfg, ranking.index.docs, now.timestamp(), access, _bonus(boosts),
            sum(b.value for b in boosts), memo.priors, memo.bonuses, _bonus_all(boosts),
            _bonus_array(boosts),
        )  # fmt: skip
    held = memo.setup = _new(_Setup, (key, admitted, access, boosts, fast))
    return held


def _setup_key(ranking: Ranking, plan: QueryPlan) -> tuple[object, ...]:
    """What a :class:`_Setup` depends on, compared by identity: the ranking's fields but its
    memo (which holds the setup: no reference cycle), and the plan's period and speakers."""
    return (
        ranking.index, ranking.records, ranking.access_counts, ranking.cfg, ranking.filters,
        ranking.now, ranking.exclude, plan.period, plan.speaker_turns,
    )  # fmt: skip


# every memory is admitted: a C-level callable that is True for any seq (no Python frame per
# candidate; admission is asked of some sixty candidates a recall at 100k memories). With the
# hits' access counts read from their extra fields (RecordTable.access_count): 8.01M -> 7.78M
# instructions a recall at 10k memories (recinstr.sh)
_EVERY: Callable[[int], bool] = partial(is_not, None)


def _admission(
    records: Mapping[int, MemoryRecord],
    filters: Filters,
    exclude: frozenset[str],
    now: datetime,
    known: dict[int, bool],
) -> Callable[[int], bool]:
    """``seq ->`` does the memory pass ``filters`` at ``now`` and is it not ``exclude``d,
    each answer kept in ``known`` (the recall's memo).

    With the default filters and nothing excluded, only a memory with an expiry or a
    supersession can fail (:meth:`RecordTable.fallible`): when no memory has either (most
    stores), every memory is admitted and nothing is asked (:data:`_EVERY`), else only those
    few are read."""
    default = not exclude and (filters is _DEFAULT_FILTERS or filters == _DEFAULT_FILTERS)
    if default and isinstance(records, RecordTable):
        fallible = records.fallible()
        if not fallible:
            return _EVERY
        row = records.row

        def admitted_unless_fallible(seq: int) -> bool:
            return seq not in fallible or _DEFAULT_FILTERS.admits(row(seq), now)

        return admitted_unless_fallible
    head = _heads(records)

    def admitted(seq: int) -> bool:
        held = known.get(seq)
        if held is None:
            record = head(seq)
            held = known[seq] = record.memory_id not in exclude and filters.admits(record, now)
        return held

    return admitted


_Row = tuple[bool, float, int]  # (tag-only match, -score, seq): rows sort best first


class _Pass(NamedTuple):
    """One ranking pass: its best rows, the evidence they were scored on, how many were scored."""

    rows: list[_Row]
    sig: Evidence
    scored: int


def _tag_only(seq: int, sig: Evidence) -> bool:
    return seq not in sig.cue and seq not in sig.session and seq not in sig.content


def _pass(
    index: NamespaceIndex,
    plan: QueryPlan,
    cfg: RecallConfig,
    k: int,
    fast: FastScorer,
    prune: bool,
    admitted: Callable[[int], bool],
    min_score: float | None,
    memo: RecallMemo,
) -> _Pass:
    """The best ``k`` admitted rows by the built-in rules (``fast``), pruned when ``prune``."""
    sig = gather(
        index, plan, cfg, k=k, scorer=fast if prune else None, admitted=admitted,
        min_score=min_score, memo=memo,
    )  # fmt: skip
    rows = fast.rows(sig, min_score)
    best = _top_admitted(rows, k, admitted)
    memo.passed(plan, k, best)  # a later pass of the recall may start pruning from it
    return _new(_Pass, (best, sig, len(rows)))


def _pass_with_rules(
    index: NamespaceIndex,
    records: Mapping[int, MemoryRecord],
    access: Callable[[int], int],
    plan: QueryPlan,
    cfg: RecallConfig,
    k: int,
    admitted: Callable[[int], bool],
    now: datetime,
    min_score: float | None,
    bonus: Callable[[int], float] | None,
) -> _Pass:
    """The general path for user-registered rules: every candidate through ``combine``."""
    sig = gather(index, plan, cfg, k=k, scorer=None, admitted=admitted)
    rows = []
    for seq in sig.candidates():
        if not admitted(seq):
            continue
        score, _ = combine(_features(seq, records[seq], sig, now, access(seq)), cfg)
        score += bonus(seq) if bonus is not None else 0.0
        if min_score is None or score >= min_score:
            rows.append((_tag_only(seq, sig), -score, seq))
    return _Pass(heapq.nsmallest(k, rows), sig, len(rows))


def _top_admitted(rows: list[_Row], k: int, admitted: Callable[[int], bool]) -> list[_Row]:
    """The best ``k`` admitted rows; filters are checked best rows first."""
    if admitted is _EVERY:
        return heapq.nsmallest(k, rows)  # as below: the first k of the best 2k
    best = heapq.nsmallest(2 * k, rows)
    chosen = [row for row in best if admitted(row[2])][:k]
    if len(chosen) == k or len(best) == len(rows):
        return chosen
    return heapq.nsmallest(k, (r for r in rows if admitted(r[2])))


class _Boost(NamedTuple):
    """A bonus for the memories a query singles out by something other than their words."""

    name: str  # its name among a hit's score contributions
    value: float
    holds: Callable[[int], bool]  # seq -> does the bonus apply
    held: Callable[[list[int]], list[bool]]  # ``holds`` of many memories at once
    # ``held`` of a NumPy array of seqs, as a bool array (None: not for every store)
    mask: Callable[[Any], Any | None] | None = None


def _given(boosts: Sequence[_Boost], seq: int) -> tuple[tuple[str, float], ...]:
    """``(name, value)`` of each bonus memory ``seq`` gets (most queries give none)."""
    return tuple((b.name, b.value) for b in boosts if b.holds(seq)) if boosts else ()


def _heads(records: Mapping[int, MemoryRecord]) -> Callable[[int], RecordHead]:
    """``seq ->`` the fields filters and bonuses read: a packed row when the records are a
    :class:`RecordTable` (so scoring candidates builds no records), else the record."""
    return records.row if isinstance(records, RecordTable) else records.__getitem__


def _boosts(
    plan: QueryPlan, cfg: RecallConfig, records: Mapping[int, MemoryRecord]
) -> tuple[_Boost, ...]:
    """The bonuses this query gives: ``date`` when it names a day or a month (memories created
    then, or up to ``date_days_after`` days later), ``speaker`` when it names the speaker of
    transcript turns (that speaker's turns)."""
    boosts = []
    if plan.period is not None and cfg.date_bonus:
        period = plan.period.stretched(cfg.date_days_after)  # once, not per candidate
        holds = _created_within(period, _heads(records))
        held = _all_created_within(period, records, holds)
        mask = _created_mask(period, records) if isinstance(records, RecordTable) else None
        boosts.append(_Boost("date", cfg.date_bonus, holds, held, mask))
    if plan.speaker_turns and cfg.speaker_bonus:
        turns = plan.speaker_turns
        spoke = turns[0].__contains__ if len(turns) == 1 else lambda s: any(s in t for t in turns)
        boosts.append(_Boost("speaker", cfg.speaker_bonus, spoke, lambda s: list(map(spoke, s))))
    return tuple(boosts)


def _created_within(period: Period, head: Callable[[int], RecordHead]) -> Callable[[int], bool]:
    """``seq ->`` was the memory created in ``period``. Packed rows keep the creation time as
    POSIX seconds (exact: see :class:`~cuemap_integrations.recordtable.Row`), compared as they
    are: building a datetime per candidate was most of the date bonus's cost."""
    start, end = period.start.timestamp(), period.end.timestamp()

    def holds(seq: int) -> bool:
        row = head(seq)
        stamp = getattr(row, "stamp", None)
        if stamp is None or isinstance(stamp, datetime):  # a record, or a row's exact datetime
            return period.covers(row.created_at)
        return bool(start <= stamp < end)

    return holds


def _all_created_within(
    period: Period, records: Mapping[int, MemoryRecord], holds: Callable[[int], bool]
) -> Callable[[list[int]], list[bool]]:
    """``holds`` (:func:`_created_within`) of many memories at once: from packed rows, their
    creation stamps read in one pass (:meth:`RecordTable.stamps`) instead of a few calls per
    memory (a date query asks it of ~1,000 candidates at 100k memories)."""
    if not isinstance(records, RecordTable):
        return lambda seqs: list(map(holds, seqs))
    start, end, stamps = period.start.timestamp(), period.end.timestamp(), records.stamps

    def held(seqs: list[int]) -> list[bool]:
        found = stamps(seqs)
        try:  # every stamp a float (nearly every store): no type test per memory
            return [start <= stamp < end for stamp in found]  # type: ignore[operator]
        except TypeError:  # a datetime stamp (compared with a float)
            return [
                period.covers(stamp) if isinstance(stamp, datetime) else start <= stamp < end
                for stamp in found
            ]

    return held


def _created_mask(period: Period, records: RecordTable) -> Callable[[Any], Any | None]:
    """``held`` of :func:`_all_created_within` for a NumPy array of seqs, as a bool array: the
    creation stamps read and compared by NumPy (:meth:`RecordTable.stamps_array`), where a
    date query's array path asked it of up to ~14,000 candidates at 100k memories, a float
    and a bool made per memory. None when some stamp is a ``datetime`` (the list way then)."""
    start, end = period.start.timestamp(), period.end.timestamp()

    def mask(seqs: Any) -> Any | None:
        stamps = records.stamps_array(seqs)
        if stamps is None:
            return None
        return (stamps >= start) & (stamps < end)  # start <= stamp < end, as held compares

    return mask


def _bonus_array(boosts: Sequence[_Boost]) -> Callable[[Any], Any | None] | None:
    """:func:`_bonus_all` of a NumPy array of seqs, as a float64 array (the same floats: one
    boost's value or 0.0, several added boost by boost from 0); None when a boost has no
    ``mask``, and the function's result None when a mask is (the list way then)."""
    if not boosts or any(boost.mask is None for boost in boosts):
        return None
    masks = [(boost.value, boost.mask) for boost in boosts]

    def total(seqs: Any) -> Any | None:
        import numpy as np  # the array path's: loaded already when it asks

        sums = None
        for value, mask in masks:
            held = mask(seqs)  # type: ignore[misc]
            if held is None:
                return None
            # 0.0 + value is value: the same floats as _bonus_all's sums from int 0
            if sums is None:
                sums = np.where(held, value, 0.0)
            else:
                sums = np.where(held, sums + value, sums)
        return sums

    return total


def _bonus_all(boosts: Sequence[_Boost]) -> Callable[[list[int]], list[float]] | None:
    """:func:`_bonus` of many memories at once (None when the query gives no bonus)."""
    if not boosts:
        return None
    if len(boosts) == 1:
        value, held = boosts[0].value, boosts[0].held
        return lambda seqs: [value if h else 0.0 for h in held(seqs)]

    def total(seqs: list[int]) -> list[float]:
        # boost by boost over all the seqs: the sums :func:`_bonus` makes, added in the same
        # order from sum()'s int 0 (a generator per memory was ~5 % of a LoCoMo store's recall,
        # whose questions name a speaker and a date)
        sums: list[float] = [0] * len(seqs)
        for boost in boosts:
            value = boost.value
            sums = [s + value if h else s for s, h in zip(sums, boost.held(seqs), strict=True)]
        return sums

    return total


def _bonus(boosts: Sequence[_Boost]) -> Callable[[int], float] | None:
    """A memory's total bonus, or None when the query gives none. Asked once per candidate
    (the scorer memoizes it), so the usual case, one bonus, is a single test."""
    if not boosts:
        return None
    if len(boosts) == 1:
        value, holds = boosts[0].value, boosts[0].holds
        return lambda seq: value if holds(seq) else 0.0
    return lambda seq: sum(b.value for b in boosts if b.holds(seq))


_Parts = tuple[tuple[str, float], ...]


def _combined_parts(
    sig: Evidence, cfg: RecallConfig, now: datetime, seq: int, record: MemoryRecord, access: int
) -> _Parts:
    """A hit's weighted rule values by :func:`combine` (any rules: the general path)."""
    return combine(_features(seq, record, sig, now, access), cfg)[1]


_BUILTIN = dict(RULES)  # the rules as shipped: register_rule may replace one of them by name


def _builtin_parts(
    cfg: RecallConfig, sig: Evidence, now: datetime
) -> Callable[[list[int], list[MemoryRecord], list[int]], list[_Parts]] | None:
    """:func:`_combined_parts` of every hit of a pass (their seqs, records and access counts)
    for the built-in rules, without a :class:`Features` made and each rule called per hit (a
    frozen dataclass of eight fields and seven calls were a third of explaining a hit), one
    rule at a time over all the hits (a rule's branch taken once per pass, not per hit and
    rule). Each value is the same expression as the rule's (recency and session by the rules'
    own helpers), times its weight, in the weights' order, so the floats are the same
    (``tests/core/test_recall_shortcuts.py`` compares the two). None when some weighted rule
    is not a built-in one."""
    weighted = [(name, w) for name, w in cfg.weights.items() if w != 0.0]
    if any(name not in _BUILTIN or RULES.get(name) is not _BUILTIN[name] for name, _ in weighted):
        return None
    cue, session, tag, content = sig.cue, sig.session, sig.tag, sig.content
    half_life, priority = cfg.half_life_days, cfg.type_priority
    names = [name for name, _ in weighted]

    def column(
        name: str, w: float, seqs: list[int], records: list[MemoryRecord], counts: list[int]
    ) -> list[float]:
        if name == "cue":
            return [w * cue.get(seq, 0.0) for seq in seqs]
        if name == "session":  # answers: the memory matched the query itself too
            answers = (seq in cue or seq in content or seq in tag for seq in seqs)
            return [
                w * session_value(session.get(seq, 0.0), answer, cfg)
                for seq, answer in zip(seqs, answers, strict=True)
            ]  # fmt: skip
        if name == "tag":
            return [w * tag.get(seq, 0.0) for seq in seqs]
        if name == "content":
            return [w * content.get(seq, 0.0) for seq in seqs]
        if name == "recency":
            days = ((now - r.updated_at).total_seconds() / _SECONDS_PER_DAY for r in records)
            return [w * recency_value(age, half_life) for age in days]
        if name == "frequency":
            return [w * -math.log1p(count) for count in counts]
        # type (an enum member's _value_: its .value is a property, ~4x slower)
        return [w * priority.get(r.type._value_, 0.0) for r in records]

    def parts(seqs: list[int], records: list[MemoryRecord], counts: list[int]) -> list[_Parts]:
        columns = [column(name, w, seqs, records, counts) for name, w in weighted]
        if not columns:
            return [()] * len(seqs)
        return [tuple(zip(names, values, strict=True)) for values in zip(*columns, strict=True)]

    return parts


def trace(plan: QueryPlan, candidates: int, hits: Sequence[Hit]) -> RecallTrace:
    """The query trace of a pass that scored ``candidates`` memories and returned ``hits``."""
    # every field in declaration order, without the generated __init__ (see _built)
    return _built(RecallTrace, {
        "query": plan.query,
        "normalized_query": plan.normalized,
        "query_cues": plan.flat_cues,
        "expanded_cues": plan.expanded,
        "query_tags": plan.tags,
        "query_terms": plan.terms,
        "candidate_count": candidates,
        "order": tuple([hit.memory.memory_id for hit in hits]),
    })  # fmt: skip
