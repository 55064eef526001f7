"""Gathering the query's evidence per memory, exhaustively or with exact top-k pruning.

Every query cue concept, carried session concept, tag and content term is a *list*: the memories
that carry it and what it adds to their score. The lists are processed from the largest possible
contribution (rarest) to the smallest. Once the k-th best *lower bound* among the memories seen so
far (``theta``) exceeds what all unprocessed lists together could still add to a memory never
seen, no new candidate can reach the top k: the remaining lists, usually the long ones of common
words, are only probed for the few memories that still could (MaxScore, Turtle & Flood 1995).
Survivors get exactly the evidence the exhaustive pass would give them, so the ranking is the
same; ``tests/core/test_topk.py`` checks that against the exhaustive pass on random stores.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import accumulate
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from .index import DocTable, NamespaceIndex
from .postings import Postings
from .scoring import RULES, bm25_idf, bm25_term, saturate
from .text import _C as _textc

if TYPE_CHECKING:
    from .arrays import Selected
    from .config import RecallConfig
    from .ranking import Concept, QueryPlan

__all__ = ["Evidence", "FastScorer", "RecallMemo", "can_prune", "first_pass_hits", "gather"]

_SIGNALS = ("cue", "session", "tag", "content")
_EPSILON = 1e-9  # bounds and final scores are summed in different orders: leave a margin
_PRUNABLE_RULES = frozenset({*_SIGNALS, "recency", "frequency", "type"})


@dataclass
class Evidence:
    """Per-signal raw values (before weights) for the candidate memories of one query."""

    cue: dict[int, float] = field(default_factory=dict)
    session: dict[int, float] = field(default_factory=dict)
    tag: dict[int, float] = field(default_factory=dict)
    content: dict[int, float] = field(default_factory=dict)

    survivors: dict[int, None] | None = None  # set when pruning dropped the other candidates

    def candidates(self) -> dict[int, None]:
        """The memories to score: every one with evidence, or the pruning's survivors."""
        if self.survivors is not None:
            return self.survivors
        return dict.fromkeys([*self.cue, *self.session, *self.tag, *self.content])


class _List(NamedTuple):
    """One evidence list (a NamedTuple: a recall builds dozens, cheaper than a dataclass)."""

    signal: str
    bound: float  # the most this list adds to one memory's (weighted) score
    postings: tuple[Postings, ...]
    gain: _Gain | _TermGain | Callable[[int], float]  # a NamedTuple is no Callable to mypy
    keys: tuple[tuple[str, str], ...]  # (kind, key) of each posting list, for the array view

    def members(self) -> Iterable[int]:
        if len(self.postings) == 1:
            return self.postings[0]
        return dict.fromkeys(seq for p in self.postings for seq in p)

    def holds(self, seq: int) -> bool:
        return any(seq in p for p in self.postings)


class _Gain(NamedTuple):
    """A list's constant gain, except for one memory (a session cue's own source)."""

    value: float
    special: int | None = None
    special_value: float = 0.0

    def __call__(self, seq: int) -> float:
        return self.special_value if seq == self.special else self.value


class _TermGain(NamedTuple):
    """BM25 gain of one content term for the memories that contain it."""

    idf: float
    bucket: Postings  # seq -> term frequency (or weighted context frequency)
    lengths: Sequence[int]  # seq -> the memory's term count (DocColumns.lengths)
    avg: float
    k1: float
    b: float

    def __call__(self, seq: int) -> float:
        return self.of(seq, self.bucket[seq])

    def of(self, seq: int, tf: float) -> float:
        """The gain of ``seq``, which holds the term ``tf`` times (or with that weight)."""
        return self.idf * bm25_term(tf, self.lengths[seq], self.avg, self.k1, self.b)

    def add_all(self, values: dict[int, float]) -> None:
        """Add the gain to every memory holding the term (inlined: the hottest loop)."""
        idf, k1, b, avg, lengths = self.idf, self.k1, self.b, self.avg, self.lengths
        get = values.get
        for seq, tf in self.bucket.pairs():
            norm = k1 * (1.0 - b + b * lengths[seq] / avg) if avg > 0 else k1
            values[seq] = get(seq, 0.0) + idf * (tf * (k1 + 1.0) / (tf + norm))


def _union_size(
    index: NamespaceIndex, keys: tuple[tuple[str, str], ...], postings: tuple[Postings, ...]
) -> int:
    """How many memories carry at least one of these keys (a concept's document frequency)."""
    if len(postings) == 1:
        return len(postings[0])
    if index.view is not None:  # a large namespace: count in the array view
        return index.view.union_size(keys, postings)
    return len(set().union(*postings))


class _Found(NamedTuple):
    """A concept's posting lists in the index, and how many memories hold any of them."""

    keys: tuple[tuple[str, str], ...]  # (kind, member) of each list the index has
    postings: tuple[Postings, ...]
    df: int  # the concept's document frequency (0 without keys)


# the lists, gains and concepts found a recall makes by tuple.__new__: a NamedTuple's own
# __new__ is a Python function (a frame each, ~2,000 instructions), and a recall makes some
# twenty of each (a cold one finds ~17 concepts not memoized)
_new = tuple.__new__
_DERIVED_MAX = 16384  # many distinct concepts and no write: start the index's memo over


def _found(index: NamespaceIndex, kinds: tuple[str, ...], members: tuple[str, ...]) -> _Found:
    """The lists of ``members`` in the tables of ``kinds`` (kind by kind, members in order).

    Memoized in ``index.derived`` (cleared by every posting change): the feedback pass
    carries some fifty concepts, each needing its document frequency (a union of lists), and
    the same concepts come back in pass after pass and recall after recall. A bench query's
    feedback pass still brings ~15 concepts never asked before (its lenders' own names and
    numbers): each table is read once per member (``get``), and one list's document frequency
    is its length (the generators, the dict of tables and two reads per member were ~14 us of
    a new concept's ~20)."""
    held: _Found | None = index.derived.get((kinds, members))
    if held is None:
        keys: list[tuple[str, str]] = []
        postings: list[Postings] = []
        for kind in kinds:
            get = index.postings(kind).get
            for member in members:
                found = get(member)
                if found is not None:
                    keys.append((kind, member))
                    postings.append(found)
        if len(postings) > 1:
            df = _union_size(index, tuple(keys), tuple(postings))
        else:  # one list's document frequency is its length
            df = len(postings[0]) if postings else 0
        held = _new(_Found, (tuple(keys), tuple(postings), df))
        if len(index.derived) >= _DERIVED_MAX:
            index.derived.clear()
        index.derived[(kinds, members)] = held
    return held


@dataclass
class RecallMemo:
    """What every pass of one recall (the first and the feedback pass) computes alike.

    The passes share the index, the time, the access counts, the filters and the query's own
    cues, tags and terms; only the carried concepts differ. So the priors, which memories the
    filters admit, the query's own lists and their array entries are made once per recall.
    Never reuse one across recalls (the index may change).

    It also keeps the last pass's k-th best score: a later pass that only adds carried concepts
    starts pruning from it (:meth:`floor`).
    """

    priors: dict[int, float] = field(default_factory=dict)
    bonuses: dict[int, float] = field(default_factory=dict)  # the date/speaker bonus
    # seq -> whether the filters admit it: the narrowing checks and the walk of both passes ask
    # it of the same best candidates
    admitted: dict[int, bool] = field(default_factory=dict)
    query_lists: list[_List] | None = None  # the query's own cue, tag and term lists
    own: frozenset[int] = frozenset()  # their ids (alive in the memo: unique while it is)
    entries: dict[int, Any] = field(default_factory=dict)  # id(list) -> its array entry
    # the last pass's carried concepts, its k, and its k-th best score (see floor)
    last: tuple[tuple[Concept, ...], int, float] | None = None
    # (k, ids of the query's own lists a narrowing check took) -> what they gave the memories
    # they reach (arrays._taken): the feedback pass's first check often takes them again
    taken: dict[tuple[int, ...], Any] = field(default_factory=dict)
    # a pass over the query's own lists alone that read them whole: the memories they reach
    # and their evidence (arrays._Dense), where a later pass may start from
    dense: Any = None
    # whether the passes take the array path (_use_arrays: asked once per recall, not in each
    # pass and by first_pass_hits, each time reading the environment and the weights)
    arrays: bool | None = None
    # what a pass ranks with besides its lists (ranking._Setup): made by the first pass
    setup: Any = None
    # whether the kernel is on (kernel.enabled, read by arrays.select once per recall: it reads
    # the environment, a KeyError raised and caught when the variable is not set: ~2 us)
    kernel: bool | None = None

    def uses_arrays(self, index: NamespaceIndex, cfg: RecallConfig) -> bool:
        """:func:`_use_arrays` of the recall's index and config, found on the first ask."""
        if self.arrays is None:
            self.arrays = _use_arrays(index, cfg)
        return self.arrays

    def lists(self, index: NamespaceIndex, plan: QueryPlan, cfg: RecallConfig) -> list[_List]:
        """Every list of ``plan``: the query's own ones (made on the first pass), then the
        carried concepts' ones (made each pass)."""
        if self.query_lists is None:
            self.query_lists = _cue_lists(index, plan, cfg) + _term_lists(index, plan, cfg)
            self.own = frozenset(map(id, self.query_lists))
        return self.query_lists + _carried_lists(index, plan, cfg)

    def shared(self, lst: _List) -> bool:
        """True for the query's own lists."""
        return id(lst) in self.own

    def passed(self, plan: QueryPlan, k: int, rows: Sequence[tuple[bool, float, int]]) -> None:
        """Remember a pass's best ``rows`` (``(tag-only, -score, seq)``, best first): its k-th
        score counts only when its ``k`` best all matched more than tags."""
        kth = -rows[k - 1][1] if len(rows) >= k and not rows[k - 1][0] else -math.inf
        # the concepts as they are: a set of them is made only if a later pass asks (the final
        # pass carries some fifty, each hashed in full)
        self.last = (plan.expanded_concepts, k, kth)

    def floor(self, plan: QueryPlan, k: int) -> float:
        """A lower bound of this pass's k-th best score (-inf when none is known).

        The last pass's k-th best is one when this pass keeps every concept of it unchanged and
        only adds carried ones (evidence weights are >= 0, so no memory's score drops: its k
        best still score at least that) and asks for no more hits."""
        if self.last is None:
            return -math.inf
        concepts, asked, kth = self.last
        if k > asked or (concepts and not set(plan.expanded_concepts).issuperset(concepts)):
            return -math.inf
        return kth


def _cue_lists(index: NamespaceIndex, plan: QueryPlan, cfg: RecallConfig) -> list[_List]:
    n, w = len(index), cfg.weights
    out: list[_List] = []
    for members in plan.cues:
        keys, postings, df = _found(index, ("cue",), members)
        if keys:
            idf = bm25_idf(n, df)
            # by tuple.__new__: the NamedTuples' own __new__ is a Python function
            gain = _new(_Gain, (idf, None, 0.0))
            out.append(_new(_List, ("cue", w["cue"] * idf, postings, gain, keys)))
    return out


def _carried_lists(index: NamespaceIndex, plan: QueryPlan, cfg: RecallConfig) -> list[_List]:
    """The session lists of the plan's carried concepts (:func:`_py_carried_lists`)."""
    n = len(index)
    most = max(cfg.carry_min_df, int(cfg.carry_max_share * n))
    return _carried_lists_of(
        _List, _Gain, "session", plan.expanded_concepts, index.derived, _CARRIED_KINDS,
        partial(_found, index, _CARRIED_KINDS), n, most, cfg.weights["session"],
        cfg.session_self_factor,
    )  # fmt: skip


def _py_carried_lists(
    list_type: type[_List],
    gain_type: type[_Gain],
    signal: str,
    concepts: Sequence[Concept],
    derived: dict[Any, Any],
    kinds: tuple[str, ...],
    found: Callable[[tuple[str, ...]], _Found],
    n: int,
    most: int,
    w_session: float,
    own_factor: float,
) -> list[_List]:
    """The evidence list (``list_type``, of ``signal``) of each carried concept whose
    document frequency among the ``n`` memories is in ``1..most`` (a carried cue too common
    to tell memories apart is not carried): its gain (``gain_type``) is the concept's weight
    times its BM25 idf, and ``own_factor`` (or the concept's own self factor) of that for its
    one source. The concept's lists are read from the index's memo ``derived`` (keyed by
    ``(kinds, members)``), else ``found`` (which memoizes them)."""
    out: list[_List] = []
    new = tuple.__new__  # a NamedTuple's own __new__ is a Python function: some fifty a pass
    known, log = derived.get, math.log
    for members, weight, sources, self_factor in concepts:
        # the memo read here first: a call per concept was a third of this loop
        keys, postings, df = known((kinds, members)) or found(members)
        if 0 < df <= most:
            gain = weight * log(1.0 + (n - df + 0.5) / (df + 0.5))  # bm25_idf(n, df), inlined
            only = next(iter(sources)) if len(sources) == 1 else None
            mine = gain * (own_factor if self_factor is None else self_factor)
            own = new(gain_type, (gain, only, mine))
            out.append(new(list_type, (signal, w_session * gain, postings, own, keys)))
    return out


# the compiled twin when built (a feedback pass carries some sixty concepts, a loop step each
# in Python)
_carried_lists_of: Callable[..., list[_List]] = (
    _py_carried_lists if _textc is None else _textc.carried_lists
)


_CARRIED_KINDS = ("cue", "tag")  # the tables a carried concept's members are looked up in


def _term_lists(index: NamespaceIndex, plan: QueryPlan, cfg: RecallConfig) -> list[_List]:
    n, w, lengths, avg = len(index), cfg.weights, index.docs.columns.lengths, index.avg_length
    k1, b = cfg.bm25_k1, cfg.bm25_b
    out: list[_List] = []
    for tag in plan.tags:
        if tag in index.tags:
            idf = bm25_idf(n, len(index.tags[tag]))
            gain = _new(_Gain, (idf, None, 0.0))
            out.append(
                _new(_List, ("tag", w["tag"] * idf, (index.tags[tag],), gain, (("tag", tag),)))
            )
    for term in plan.terms:
        bucket = index.terms.get(term)
        if bucket:
            idf = bm25_idf(n, len(bucket))

            term_gain = _new(_TermGain, (idf, bucket, lengths, avg, k1, b))
            bound = w["content"] * idf * (k1 + 1.0)
            out.append(_new(_List, ("content", bound, (bucket,), term_gain, (("term", term),))))
    return out


class FastScorer:
    """The score of a memory from its evidence, without building :class:`Features`.

    Equal (up to float rounding) to :func:`~cuemap_integrations.scoring.combine` for the
    built-in rules; used to rank, while the hits' breakdowns come from ``combine`` or its
    rules written out (``ranking._builtin_parts``, the same floats).
    """

    def __init__(
        self,
        cfg: RecallConfig,
        docs: DocTable,
        now_ts: float,
        access: Callable[[int], int],
        bonus: Callable[[int], float] | None = None,
        bonus_max: float = 0.0,
        priors: dict[int, float] | None = None,
        bonuses: dict[int, float] | None = None,
        bonus_all: Callable[[list[int]], list[float]] | None = None,
        bonus_array: Callable[[Any], Any | None] | None = None,
    ) -> None:
        w = cfg.weights
        self.cfg, self.now_ts, self.access = cfg, now_ts, access
        self.columns = docs.columns  # the memories' type and last update, by seq
        self.bonus = bonus  # the query's date/speaker bonus of a memory (>= 0), or None
        self.bonus_max = bonus_max  # the most ``bonus`` gives one memory
        self.bonus_all = bonus_all  # ``bonus`` of many memories at once, or None
        # ``bonus_all`` of a NumPy array of seqs as a float64 array (None: not for this query;
        # its result None: not for this store)
        self.bonus_array = bonus_array
        self.w_cue, self.w_session, self.w_tag = w["cue"], w["session"], w["tag"]
        self.w_content, self.w_recency, self.w_freq = w["content"], w["recency"], w["frequency"]
        self.type_bonus = {name: w["type"] * p for name, p in cfg.type_priority.items()}
        self.per_second = 1.0 / (86400.0 * cfg.half_life_days)
        # the most the prior adds (recency is at most 1; the frequency penalty only subtracts)
        self.prior_max = self.w_recency + max([0.0, *self.type_bonus.values()]) + bonus_max
        self._priors: dict[int, float] = {} if priors is None else priors
        self._bonuses: dict[int, float] = {} if bonuses is None else bonuses
        # (key, kernel.Ranking) of arrays._ranking: its last, kept for the pass's next asks
        self.ranked: tuple[Any, Any] | None = None

    @staticmethod
    def usable(cfg: RecallConfig) -> bool:
        """True when only built-in rules have a weight (custom rules need ``combine``)."""
        return all(name in _PRUNABLE_RULES for name, w in cfg.weights.items() if w != 0.0)

    def prior(self, seq: int) -> float:
        """The part that does not depend on the query's words: recency, type priority, frequency
        penalty, and the query's date/speaker bonus (memoized)."""
        cached = self._priors.get(seq)
        if cached is None:
            cached = self._priors[seq] = self._prior(seq)
        return cached

    def bonus_of(self, seq: int) -> float:
        """The query's bonus of ``seq`` (0 without one), memoized: every pass of a recall asks
        it of the same candidates, and a date bonus reads the memory's row."""
        if self.bonus is None:
            return 0.0
        cached = self._bonuses.get(seq)
        if cached is None:
            cached = self._bonuses[seq] = self.bonus(seq)
        return cached

    def bonuses(self, seqs: list[int]) -> list[float]:
        """:meth:`bonus_of` of each of ``seqs``: in one call when the query gives ``bonus_all``
        (the array path asks it of every candidate it scores in full)."""
        if self.bonus_all is None or self.bonus is None:
            return list(map(self.bonus_of, seqs))
        return self.bonus_all(seqs)

    def _prior(self, seq: int) -> float:
        return self._new_priors([seq])[0]

    def _new_priors(self, seqs: list[int]) -> list[float]:
        """:meth:`prior` of each of ``seqs`` (none memoized yet), memoized now: one loop with
        the columns and weights at hand (a method call per memory was ~15% of a small
        namespace's recall)."""
        columns, type_bonus, priors = self.columns, self.type_bonus, self._priors
        types, codes, updated = columns.types, columns.codes, columns.updated
        now_ts, per_second = self.now_ts, self.per_second
        w_recency, w_freq = self.w_recency, self.w_freq
        access, bonus = self.access, self.bonus
        out = []
        for seq in seqs:
            value = type_bonus.get(types[codes[seq]], 0.0)
            if w_recency:
                age = max(now_ts - updated[seq], 0.0)
                value += w_recency * 0.5 ** (age * per_second)
            if w_freq:
                value -= w_freq * math.log1p(access(seq))
            if bonus is not None:
                value += bonus(seq)
            priors[seq] = value
            out.append(value)
        return out

    def scores(self, seqs: Iterable[int], ev: Evidence) -> list[float]:
        """The full score of each of ``seqs`` for the evidence ``ev``: a small namespace scores
        every candidate, and this is most of its recall time. The query's words by one
        comprehension, then the session evidence of the few memories that have some."""
        seqs = seqs if isinstance(seqs, list) else list(seqs)
        cue, tag, content, session = ev.cue, ev.tag, ev.content, ev.session
        w_cue, w_tag, w_content, w_session = self.w_cue, self.w_tag, self.w_content, self.w_session
        priors = self._priors
        missing = [seq for seq in seqs if seq not in priors]
        if missing:
            self._new_priors(list(dict.fromkeys(missing)))
        cue_get, tag_get, content_get = cue.get, tag.get, content.get
        out = [
            w_cue * cue_get(seq, 0.0) + w_tag * tag_get(seq, 0.0)
            + w_content * content_get(seq, 0.0) + priors[seq]
            for seq in seqs
        ]  # fmt: skip
        if not session or not w_session:
            return out
        cap, only = self.cfg.session_saturation, self.cfg.session_only_factor
        for at in [at for at, seq in enumerate(seqs) if seq in session]:
            seq = seqs[at]
            raw = session[seq]
            if raw > 0.0:
                boost = saturate(raw, cap)
                explicit = seq in cue or seq in content or seq in tag
                out[at] += w_session * (boost if explicit else boost * only)
        return out

    def rows(self, ev: Evidence, min_score: float | None) -> list[tuple[bool, float, int]]:
        """``(tag-only, -score, seq)`` of every candidate scoring at least ``min_score``."""
        seqs = list(ev.candidates())
        cue, content, session = ev.cue, ev.content, ev.session
        floor = -math.inf if min_score is None else min_score
        return [
            (seq not in cue and seq not in content and seq not in session, -value, seq)
            for seq, value in zip(seqs, self.scores(seqs, ev), strict=True)
            if value >= floor
        ]


def can_prune(cfg: RecallConfig) -> bool:
    """Pruning is exact only when every evidence weight is >= 0 and every rule is known."""
    active = {name for name, weight in cfg.weights.items() if weight != 0.0}
    if not active <= _PRUNABLE_RULES or not all(name in RULES for name in active):
        return False
    return all(cfg.weights[name] >= 0 for name in (*_SIGNALS, "recency", "frequency"))


@dataclass
class _Pass:
    """State of one gathering pass."""

    cfg: RecallConfig
    k: int
    scorer: FastScorer | None  # scores partial evidence (a lower bound); None: no pruning
    prior_max: float
    admitted: Callable[[int], bool]
    ev: Evidence = field(default_factory=Evidence)
    survivors: dict[int, None] | None = None  # set once pruning starts

    def add(self, lst: _List) -> None:
        values = getattr(self.ev, lst.signal)
        if self.survivors is not None:
            self._add_survivors(lst, values)
            return
        gain, get = lst.gain, values.get
        if isinstance(gain, _Gain):  # constant gain: the hot loop without a call per posting
            value = gain.value
            for seq in lst.members():
                values[seq] = get(seq, 0.0) + value
            if gain.special is not None and lst.holds(gain.special):  # its own, lower gain
                values[gain.special] += gain.special_value - value
            return
        if isinstance(gain, _TermGain):
            gain.add_all(values)
            return
        for seq in lst.members():
            values[seq] = get(seq, 0.0) + gain(seq)

    def _add_survivors(self, lst: _List, values: dict[int, float]) -> None:
        """Add the list's gains of the survivors it holds."""
        survivors, gain, get = self.survivors or {}, lst.gain, values.get
        if len(lst.postings) == 1:  # the common case: one call for every survivor
            held = lst.postings[0].among(survivors)
            if isinstance(gain, _TermGain):  # the value found is the term frequency
                for seq, tf in held:
                    values[seq] = get(seq, 0.0) + gain.of(seq, tf)
                return
            seqs = [seq for seq, _ in held]
        else:
            seqs = [seq for seq in survivors if lst.holds(seq)]
        for seq in seqs:
            values[seq] = get(seq, 0.0) + gain(seq)

    def lower(self, seqs: list[int]) -> list[float]:
        """A lower bound of each memory's final score: its score on the evidence so far."""
        if self.scorer is None:
            return [-math.inf] * len(seqs)
        return self.scorer.scores(seqs, self.ev)

    def jump(self, seq: int) -> float:
        """What a session-only memory gains if a later list matches the query itself."""
        ev = self.ev
        if seq in ev.cue or seq in ev.content or seq in ev.tag or seq not in ev.session:
            return 0.0
        cfg = self.cfg
        session = saturate(ev.session[seq], cfg.session_saturation)
        return cfg.weights["session"] * session * (1.0 - cfg.session_only_factor)

    def theta(self) -> float:
        """The k-th best lower bound among admitted memories that matched more than tags."""
        ev = self.ev
        pool = [s for s in ev.candidates() if s in ev.cue or s in ev.session or s in ev.content]
        if len(pool) < self.k:
            return -math.inf
        lower = self.lower(pool)
        best = heapq.nlargest(4 * self.k, range(len(pool)), key=lower.__getitem__)
        admitted = [at for at in best if self.admitted(pool[at])]
        return lower[admitted[self.k - 1]] if len(admitted) >= self.k else -math.inf

    def start_pruning(self, rest: float, theta: float) -> None:
        seqs = list(self.ev.candidates())
        lower = self.lower(seqs)
        self.survivors = {
            seq: None
            for seq, value in zip(seqs, lower, strict=True)
            if value + rest + self.jump(seq) >= theta - _EPSILON
        }
        self.ev.survivors = self.survivors


def gather(
    index: NamespaceIndex,
    plan: QueryPlan,
    cfg: RecallConfig,
    *,
    k: int,
    scorer: FastScorer | None,
    admitted: Callable[[int], bool],
    min_score: float | None = None,
    memo: RecallMemo | None = None,
) -> Evidence:
    """The evidence of the query for every memory that can still be in the top ``k``.

    Args:
        index: the namespace's index.
        plan: the query, read.
        cfg: weights and parameters.
        k: how many hits the caller will keep.
        scorer: scores a memory's evidence so far (a lower bound of its final score); None
            gathers every candidate (the reference the pruned pass must equal).
        admitted: True when a memory passes the recall's filters.
        min_score: hits below it will be dropped (the array path keeps them out of the top k).
        memo: what the passes of one recall share (None: this pass shares nothing).
    """
    memo = RecallMemo() if memo is None else memo
    lists = memo.lists(index, plan, cfg)
    floor = memo.floor(plan, k) if scorer is not None else -math.inf
    lists.sort(key=_bound, reverse=True)  # stable: equal bounds keep the plan's order
    if scorer is not None and memo.uses_arrays(index, cfg):
        chosen: Selected = _arrays_module().select(
            index, lists, cfg, scorer, k=k, admitted=admitted, min_score=min_score, memo=memo,
            floor=floor,
        )  # fmt: skip
        if chosen.evidence is not None:  # the kernel summed it already, in the same order
            return chosen.evidence  # (no _Pass made: its Evidence and four dicts unused)
        run = _Pass(cfg, k, scorer, scorer.prior_max, admitted)
        run.survivors = run.ev.survivors = chosen.survivors
        for lst in lists:
            run.add(lst)  # exact evidence, for the chosen memories only
        return run.ev
    run = _Pass(cfg, k, scorer, scorer.prior_max if scorer is not None else 0.0, admitted)
    cap = cfg.weights["session"] * cfg.session_saturation
    rest = rest_bounds(lists, cap)  # what lists i.. can still add to one memory
    done = rest_bounds(lists[::-1], cap)[::-1]  # done[i + 1]: the most lists ..i have given one
    prune = scorer is not None and can_prune(cfg)
    for i, lst in enumerate(lists):
        # theta is at most done[i] + prior_max: computing it pays only once rest < done
        if prune and run.survivors is None and rest[i] < done[i] and _worth_checking(run, lst):
            theta = max(run.theta(), floor)
            if rest[i] + run.prior_max < theta - _EPSILON:
                run.start_pruning(rest[i], theta)
        run.add(lst)
    return run.ev


def first_pass_hits(
    index: NamespaceIndex, cfg: RecallConfig, k: int, depth: int, memo: RecallMemo | None = None
) -> int:
    """How many hits a first pass asks for when its top ``depth`` feed a feedback pass
    (``memo``: the recall's, which keeps whether its passes take the array path).

    Where the array path ranks it asks for ``k`` too: its k-th best score lets the feedback
    pass prune from the start (:meth:`RecallMemo.floor`; 100k A/B x0.97). On the Python path
    (small namespaces) the wider first pass costs more than that saves (LoCoMo stores, k=20:
    x1.06), so it asks ``depth``.
    """
    arrays = _use_arrays(index, cfg) if memo is None else memo.uses_arrays(index, cfg)
    return max(depth, k) if arrays else depth


def _py_rest_bounds(lists: Sequence[_List], session_cap: float) -> list[float]:
    """``rest[i]``: the most that lists ``i..`` can add to one memory's score. Session lists
    add their raw values through a saturation, so together they add at most ``session_cap``
    (a conversation carries dozens of cues: summing their bounds would never let them go).

    Both sums run from the last list back, by :func:`itertools.accumulate` from 0.0, each list
    adding 0.0 to the sum it is not part of: the same floats as adding to its own sum alone (a
    sum from 0.0 is never -0.0), without a Python loop step per list (a feedback pass has some
    sixty, and a recall asks this twice)."""
    linear = accumulate(
        [0.0 if lst.signal == "session" else lst.bound for lst in reversed(lists)], initial=0.0
    )
    session = accumulate(
        [lst.bound if lst.signal == "session" else 0.0 for lst in reversed(lists)], initial=0.0
    )
    next(linear), next(session)  # the sums of no list: rest[len(lists)] stays 0.0
    # min(ses, session_cap) as min() decides it, without the call
    rest = [
        lin + (session_cap if session_cap < ses else ses)
        for lin, ses in zip(linear, session, strict=True)
    ]
    rest.reverse()
    rest.append(0.0)
    return rest


# the compiled twin when built (the same floats; every bound a float): the comprehensions and
# sums above were ~1% of a recall at 100k, each pass's ~25-60 lists read three times
rest_bounds: Callable[[Sequence[_List], float], list[float]] = (
    _py_rest_bounds if _textc is None else _textc.rest_bounds
)


_bound = itemgetter(1)  # a _List's bound


def _worth_checking(run: _Pass, lst: _List) -> bool:
    """Compute theta only before a list longer than what we have: that is what pruning saves."""
    size = sum(len(p) for p in lst.postings)
    return size > 64 and size > len(run.ev.cue) + len(run.ev.content) + len(run.ev.session)


def _use_arrays(index: NamespaceIndex, cfg: RecallConfig) -> bool:
    """The vectorized selection is exact where pruning is, and pays off in large namespaces."""
    arrays = _arrays_module()
    return len(index) >= arrays.ARRAY_MIN_MEMORIES and can_prune(cfg) and arrays.usable()


_arrays: Any = None  # the arrays module, once imported (see _arrays_module)


def _arrays_module() -> Any:
    """:mod:`.arrays`, imported on first use (it imports this module): ``from . import
    arrays`` in a function runs importlib's ``_handle_fromlist`` in Python at every call, and
    a recall asked three times (~1% of its samples at 100k, py-spy)."""
    global _arrays
    if _arrays is None:
        from . import arrays

        _arrays = arrays
    return _arrays
