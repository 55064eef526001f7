"""Array-backed postings and vectorized candidate selection for large namespaces.

In a namespace of many thousand memories, a query's common words reach a large share of them, and
scoring each candidate in Python costs about a microsecond. :class:`ArrayView` mirrors the postings
queries touch as NumPy arrays (slot numbers and values, appended to and swap-deleted in step with
every index change), scores every candidate of a query at once, and keeps only those that can be
in the top ``k``. The Python pass (:mod:`.topk`) then gathers exactly those memories' evidence (or
the compiled kernel does, summing in the same order), so hits, scores and explanations are the
ones the exhaustive pass gives (the kernel adds a session's carried lists as one unit: their sum
may differ in its last bits); ``tests/core/test_arrays.py`` checks that against it on random
stores.

NumPy is a dependency of the package but is imported only here, on the first query of a namespace
holding at least :data:`ARRAY_MIN_MEMORIES` memories: ``import cuemap_integrations`` stays light, and
small stores never pay for it.
"""

from __future__ import annotations

import functools
import math
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import repeat
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from . import kernel
from .postings import Postings
from .text import _C as _textc
from .topk import (  # topk imports this lazily: no cycle
    Evidence,
    RecallMemo,
    _Gain,
    _List,
    _TermGain,
    rest_bounds,
)

if TYPE_CHECKING:
    from array import array

    from .config import RecallConfig
    from .index import DocTable, IndexedDoc, NamespaceIndex
    from .topk import FastScorer

__all__ = [
    "ARRAY_MIN_MEMORIES", "NARROW_MIN_MEMORIES", "ArrayView", "Selected", "select", "usable",
    "view_of",
]  # fmt: skip

# Below this many memories the Python pass is as fast as the array path's fixed costs. It was
# 2,000 when the array path was NumPy's (2.2 vs 2.3 ms at 1,000 memories); with the compiled
# kernel, CPU medians per recall, array path (dense) vs Python, the paths in turn query by query
# on one store (benchmarks/array_modes.py, 300 bench queries): 1.13 vs 1.18 ms at 100 memories,
# 1.03 vs 1.33 at 300, 1.44 vs 2.52 at 1,000, 1.50 vs 3.63 at 2,000, the same hits in every
# query. The view is created the first time a query finds a namespace this large.
ARRAY_MIN_MEMORIES = 300

# MaxScore narrowing (``_narrowed``) skips work proportional to the namespace size but adds a
# few checks per query: CPU medians (p95) per recall, narrowed vs dense, on the `cuemap bench
# scale` corpus, both interleaved query by query in one process: 3k 2.06 (2.92) vs 1.97 (3.13) ms,
# 10k 2.56 (3.88) vs 2.53 (4.28), 30k 3.20 (4.48) vs 3.03 (6.63), 100k 6.62 (12.3) vs 7.63 (18.0).
NARROW_MIN_MEMORIES = 50_000

# The mirrors of the posting lists queries read are kept up to this many postings per memory
# (8 bytes of slot each, 8 more of value for term lists), least recently read dropped first.
# Unbounded, the bench's varied queries mirrored 23 postings per memory of the index's 39 after
# 200 queries and 29 after 1,000. Same-process CPU medians per recall at 100k, bounded vs not
# (300 queries, identical hits): 16 per memory x0.98, 8 per memory x1.10 (lists made again).
MIRROR_POSTINGS_PER_MEMORY = 16
MIRROR_MIN_POSTINGS = 1 << 16

# NamedTuples made on the hot path by tuple.__new__ (their own __new__ is a Python function)
_new = tuple.__new__
_BONUS_ARRAY_MIN = 64  # candidates from which a date bonus is found by NumPy (see _priors)
_EPSILON = 1e-9  # NumPy and Python sum a memory's parts in different orders: keep near-ties
_BIG_SHIFT = 1.0  # tag-only matches rank after every other match (see ranking.rank)
# Narrowing reads the rare lists sparsely (sorting their union); once they hold more than
# 1/_SPARSE_SHARE of the namespace's size in postings, one dense pass over it is cheaper.
_SPARSE_SHARE = 4
# A pass no doubling check decided (see _checks) scored every memory its lists reach: 75 of 400
# passes of 200 queries at 100k. The first lists whose rest an earlier pass's floor beats then
# decide instead, if they hold at most 1/_FLOOR_SHARE of the namespace's size in postings (their
# union is probed in the long lists). Same process, the variants in turn query by query, min of
# 2, select() CPU ms per recall, 200 queries at 100k / 150 at 1M: no floor check 1.624 / 15.32;
# share 1/16 1.415 / 14.98; 1/4 1.448 / 15.31; 1/4 and, when no floor decides, a check of the
# lists within the share with the best candidates' exact scores 1.418 / 16.09. In its turn
# (not last) the floor's check came before a doubling check whose theta, from more lists, left
# ten times fewer candidates to probe: some queries 1 ms slower at 100k.
_FLOOR_SHARE = 16

_numpy: Any = None


def _np() -> Any:
    global _numpy
    if _numpy is None:
        import numpy

        _numpy = numpy
    return _numpy


def _filled(count: int, value: int, dtype: Any) -> Any:
    """``np.full(count, value, dtype)`` on huge pages (see :func:`kernel.huge_zeros`)."""
    held = kernel.huge_zeros(_np(), count, dtype)
    held.fill(value)
    return held


def _column(np: Any, column: array[Any], seqs: Any) -> Any:
    """The items of a by-seq ``column`` (an array) at ``seqs``: a copy (no view of the column
    is kept, so the column can still grow in place)."""
    return np.frombuffer(column, dtype=column.typecode)[seqs]


def usable() -> bool:
    """True when NumPy can be imported (it is a dependency; a broken install falls back)."""
    try:
        _np()
    except ImportError:
        return False
    return True


class _Growable:
    """One posting list as parallel arrays ``slots`` / ``values`` with spare capacity;
    ``values`` is None while every value is 1.0 (cue and tag lists), as in :class:`Postings`.

    Slots are kept in ascending order: new memories get ever larger slots, so appending keeps
    it; a re-indexed memory (its old, smaller slot) marks the list unsorted and the next read
    sorts it once. Sorted lists let a query probe a long list for a few candidates by binary
    search instead of reading all of it (:meth:`_Entry.probe`).
    """

    __slots__ = ("ordered", "size", "slots", "values")

    def __init__(self, slots: Any, values: Any) -> None:
        self.size = len(slots)
        self.slots, self.values = slots, values
        self.ordered = False

    def append(self, slot: int, value: float) -> None:
        np = _np()
        if self.size == len(self.slots):
            capacity = max(8, 2 * self.size)
            self.slots = np.resize(self.slots, capacity)
            if self.values is not None:
                self.values = np.resize(self.values, capacity)
        if self.values is None and value != 1.0:
            self.values = np.ones(len(self.slots))
        if self.size and slot < self.slots[self.size - 1]:
            self.ordered = False
        self.slots[self.size] = slot
        if self.values is not None:
            self.values[self.size] = value
        self.size += 1

    def drop(self, slot: int) -> None:
        """Remove ``slot``, shifting the entries after it (the order is kept)."""
        where = _np().flatnonzero(self.slots[: self.size] == slot)
        if len(where):
            at, last = int(where[0]), self.size - 1
            self.slots[at:last] = self.slots[at + 1 : self.size]
            if self.values is not None:
                self.values[at:last] = self.values[at + 1 : self.size]
            self.size = last

    def arrays(self) -> tuple[Any, Any]:
        """``(slots, values)``, slots ascending (values None when all are 1.0)."""
        slots = self.slots[: self.size]
        values = None if self.values is None else self.values[: self.size]
        if not self.ordered:
            order = _np().argsort(slots, kind="stable")
            slots[:] = slots[order]
            if values is not None:
                values[:] = values[order]
            self.ordered = True
        return slots, values


class ArrayView:
    """NumPy mirror of one namespace's documents and of the posting lists queries have used.

    Every memory has a *slot* (its position in the per-memory arrays); a deleted memory keeps its
    slot (with no postings left, it is never a candidate) and gets it back if re-indexed.
    """

    def __init__(self, index: NamespaceIndex) -> None:
        np = _np()
        self.index = index
        # seq -> slot (-1: none), an array so a posting list's seqs map to slots in one step
        self.slot_by_seq = _filled(max(1024, 2 * max(index.docs, default=0) + 2), -1, np.int64)
        self.type_codes: dict[str, int] = {}
        capacity = max(1024, 2 * len(index.docs))
        self.seq_at = kernel.huge_zeros(np, capacity, np.int64)
        self.length = kernel.huge_zeros(np, capacity, np.float64)
        self.updated = kernel.huge_zeros(np, capacity, np.float64)
        self.type_code = kernel.huge_zeros(np, capacity, np.int32)
        self.size = 0
        # the seq of slot 0 while every slot's seq is it plus the slot (-1: not so), true of a
        # store built in order as add_many builds one (a slot is never given another seq): the
        # kernel then maps seqs and slots without reading seq_at or slot_by_seq (recall CPU ms
        # at 1M memories, median, x0.92 and x0.96 new tree first, benchmarks/recall_ab.py)
        self.seq_base = -1
        # mirrored lists, least recently read first, and how many postings they hold
        self.lists: OrderedDict[tuple[str, str], _Growable] = OrderedDict()
        self.mirrored = 0
        # concept unions, asked for the idf and again for the selection; any change clears it
        self._unions: dict[tuple[tuple[str, str], ...], Any] = {}
        self._union_slots = 0  # how many slots the unions hold together
        self._scratch: kernel.Scratch | None = None  # the compiled kernel's, made on first use
        self._set_all(index.docs)

    # -------------------------------------------------------------- kept in step by the index
    def set_doc(self, seq: int, doc: IndexedDoc) -> None:
        """Record (or refresh) the per-memory values of ``seq``."""
        self._set(seq, doc.length, doc.updated_ts, doc.type)

    def _set_all(self, docs: DocTable) -> None:
        """:meth:`set_doc` of every doc of an empty view, in the table's order, in array steps
        from the store's columns, which hold every doc's values (the view's first use: building
        each doc, its cues unpacked from its record, took 0.7 s at 100k bench memories, now
        0.02). The same slots, values, type codes and ``seq_base`` as :meth:`set_doc` of each
        in turn."""
        np = _np()
        seqs = np.fromiter(docs, dtype=np.int64, count=len(docs))
        if not len(seqs):
            return
        columns = docs.columns
        slots = np.arange(len(seqs), dtype=np.int64)
        self.slot_by_seq[seqs] = slots
        self.seq_at[: len(seqs)] = seqs
        self.length[: len(seqs)] = _column(np, columns.lengths, seqs)
        self.updated[: len(seqs)] = _column(np, columns.updated, seqs)
        types = [columns.types[code] for code in _column(np, columns.codes, seqs).tolist()]
        for type in dict.fromkeys(types):  # coded in the order set_doc meets them
            self.type_codes.setdefault(type, len(self.type_codes))
        codes = map(self.type_codes.__getitem__, types)
        self.type_code[: len(seqs)] = np.fromiter(codes, dtype=np.int32, count=len(seqs))
        self.size = len(seqs)
        base = int(seqs[0])
        self.seq_base = base if bool((seqs - slots == base).all()) else -1

    def add_plain_many(
        self, seqs: Sequence[int], lengths: Sequence[int], updated: Sequence[float],
        types: Sequence[str],
    ) -> None:  # fmt: skip
        """A bulk batch of new plain docs joined the index (:meth:`NamespaceIndex.add_plain_many`,
        their postings pending): their per-memory values recorded, and every mirrored list and
        union forgotten instead of each posting mirrored as it comes (:meth:`put`, a Python
        call per posting, about forty a memory: ingest into a store already recalled at 100k
        memories took ~2x the instructions of a fresh store's). Mirrors serve only the NumPy
        path (the kernel reads the index's own buffers); a query makes the ones it needs again,
        each in one array step."""
        set_one = self._set
        for seq, length, stamp, type in zip(seqs, lengths, updated, types, strict=True):
            set_one(seq, length, stamp, type)
        self.lists.clear()
        self.mirrored = 0
        self._forget_unions()

    def _set(self, seq: int, length: float, updated_ts: float, type: str) -> None:
        slot = self.slot(seq)
        if slot is None:
            slot = self.size
            self.size += 1
            if slot == len(self.seq_at):
                self._grow()
            if seq >= len(self.slot_by_seq):
                grown = _filled(2 * seq + 2, -1, self.slot_by_seq.dtype)
                grown[: len(self.slot_by_seq)] = self.slot_by_seq
                self.slot_by_seq = grown
            self.slot_by_seq[seq] = slot
            self.seq_base = seq - slot if slot == 0 or self.seq_base == seq - slot else -1
        code = self.type_codes.setdefault(type, len(self.type_codes))
        self.seq_at[slot], self.length[slot] = seq, length
        self.updated[slot], self.type_code[slot] = updated_ts, code

    def slot(self, seq: int) -> int | None:
        """The slot of memory ``seq``, or None when it has none."""
        if 0 <= seq < len(self.slot_by_seq):
            slot = int(self.slot_by_seq[seq])
            return slot if slot >= 0 else None
        return None

    def _grow(self) -> None:
        np = _np()
        capacity = 2 * len(self.seq_at)
        for name in ("seq_at", "length", "updated", "type_code"):
            held = getattr(self, name)
            grown = kernel.huge_zeros(np, capacity, held.dtype)
            grown[:] = np.resize(held, capacity)  # as np.resize makes it, huge pages or not
            setattr(self, name, grown)

    def put(self, kind: str, key: str, seq: int, value: float) -> None:
        """A posting was added to the index: mirror it if this list is mirrored."""
        if self._unions:  # tested here: ingest calls this for every posting
            self._forget_unions()
        mirrored = self.lists.get((kind, key))
        if mirrored is not None:
            mirrored.append(self.slot_by_seq[seq], value)
            self.mirrored += 1

    def drop(self, kind: str, key: str, seq: int) -> None:
        """A posting was removed from the index."""
        if self._unions:
            self._forget_unions()
        mirrored = self.lists.get((kind, key))
        if mirrored is not None:
            before = mirrored.size
            mirrored.drop(self.slot_by_seq[seq])
            self.mirrored -= before - mirrored.size

    def _forget_unions(self) -> None:
        """Any posting change, of a mirrored list or not, ends every union: so a union may
        outlive the mirrors it was made of (evicting a mirror used to clear them all, and at
        100k the bench's queries then made 1,059 unions of 434 distinct concepts)."""
        self._unions.clear()
        self._union_slots = 0

    # -------------------------------------------------------------- read by queries
    def postings(self, kind: str, key: str) -> tuple[Any, Any]:
        """``(slots, values)`` of one posting list, mirrored on first use."""
        mirrored = self.lists.get((kind, key))
        if mirrored is None:
            np = _np()
            bucket = self.index.postings(kind).get(key) or Postings()
            seqs, weights = bucket.buffers()
            slots = self.slot_by_seq[np.frombuffer(seqs, dtype=seqs.typecode)]
            values = None if weights is None else np.array(weights, dtype=np.float64)
            mirrored = self.lists[(kind, key)] = _Growable(slots, values)
            # seqs ascend; so do their slots unless an older memory was re-indexed
            mirrored.ordered = bool(np.all(slots[1:] > slots[:-1]))
            self.mirrored += len(slots)
            self._evict()
        else:
            self.lists.move_to_end((kind, key))
        return mirrored.arrays()

    def _evict(self) -> None:
        """Forget the least recently read mirrors beyond the budget (they are made again, in
        one array step, if a query needs them): without it the mirrors of every word ever
        queried would come to double the index's memory."""
        budget = self._budget()
        while self.mirrored > budget and len(self.lists) > 1:
            _, dropped = self.lists.popitem(last=False)
            self.mirrored -= dropped.size

    def _budget(self) -> int:
        """How many postings the mirrors may hold."""
        return max(MIRROR_MIN_POSTINGS, MIRROR_POSTINGS_PER_MEMORY * self.size)

    def union(self, keys: Sequence[tuple[str, str]]) -> tuple[Any, Any]:
        """``(slots, values)`` of one list, or of several (a concept) with each memory once
        (then ``values`` is None: a concept's gain does not depend on which member matched)."""
        if len(keys) == 1:
            return self.postings(*keys[0])
        held = self._unions.get(tuple(keys))
        if held is None:
            held = self._union(keys)
            self._union_slots += len(held)
            # many distinct concepts and no write: start over (bounded like the mirrors, as
            # the eviction of a member no longer ends a union)
            if len(self._unions) >= 1024 or self._union_slots > self._budget() // 4:
                self._unions.clear()
                self._union_slots = len(held)
            self._unions[tuple(keys)] = held
        return held, None

    def union_size(self, keys: Sequence[tuple[str, str]], postings: Sequence[Postings]) -> int:
        """How many memories hold at least one of the lists ``keys`` (``postings``): counted by
        the kernel when it is on (no mirror or union made), else the union's length."""
        if kernel.enabled():
            return kernel.union_size(self, postings)
        return len(self.union(keys)[0])

    def scratch(self) -> kernel.Scratch:
        """The kernel's zeroed per-slot arrays, made again larger once the view has grown (an
        eighth to spare: 32 bytes a slot, so not the per-memory arrays' doubled capacity)."""
        held = self._scratch
        if held is None or held.size < self.size:
            held = self._scratch = kernel.Scratch(_np(), self.size + self.size // 8 + 1024)
        return held

    def _union(self, keys: Sequence[tuple[str, str]]) -> Any:
        return _joined([self.postings(kind, key)[0] for kind, key in keys], self.size)[0]

    def errors(self) -> list[str]:
        """Differences between the mirrored lists and the index (empty when in step)."""
        problems = []
        for (kind, key), mirrored in self.lists.items():
            slots, values = mirrored.arrays()
            weights = repeat(1.0, len(slots)) if values is None else values
            got = {int(self.seq_at[s]): float(v) for s, v in zip(slots, weights, strict=True)}
            if got != self.index.postings(kind).get(key, {}):
                problems.append(f"array postings of {kind} {key!r} differ from the index")
        return problems


def view_of(index: NamespaceIndex) -> ArrayView:
    """The index's array view, created on first use."""
    if index.view is None:
        index.view = ArrayView(index)
    return index.view


# ------------------------------------------------------------------ vectorized selection
class _Entry:
    """One evidence list as arrays: the slots it reaches, its raw values, and its gains.

    ``summed`` entries stand for several lists at once (:func:`_merged`): their values are the
    lists' gains already added up per memory."""

    __slots__ = ("_full", "lst", "slots", "summed", "values")

    def __init__(self, lst: _List, slots: Any, values: Any, *, summed: bool = False) -> None:
        self.lst, self.slots, self.values, self.summed = lst, slots, values, summed
        self._full: Any = None

    def full(self, view: ArrayView) -> Any:
        """The gains of all its slots, made once: narrowing checks and passes ask again."""
        if self._full is None:
            self._full = self.gains(view, self.slots, self.values)
        return self._full

    def gains(self, view: ArrayView, slots: Any, values: Any) -> Any:
        """The list's gain for these of its slots, as the Python pass computes it."""
        np = _np()
        if self.summed:
            return values
        gain = self.lst.gain
        if isinstance(gain, _TermGain):
            k1, b, avg = gain.k1, gain.b, gain.avg
            if values is None:  # every memory holds the term once
                values = np.ones(len(slots))
            norm = k1 * (1.0 - b + b * view.length[slots] / avg) if avg > 0 else k1
            return gain.idf * (values * (k1 + 1.0) / (values + norm))
        if isinstance(gain, _Gain):
            gains = np.full(len(slots), gain.value)
            special = view.slot(gain.special) if gain.special is not None else None
            if special is not None:
                gains[slots == special] = gain.special_value
            return gains
        seqs = view.seq_at[slots]  # an unknown gain: ask it memory by memory
        return np.fromiter((gain(int(s)) for s in seqs), dtype=np.float64, count=len(slots))

    def within(self, view: ArrayView, cand: Any) -> tuple[Any, Any]:
        """``(positions in cand, gains)`` of the candidates this list holds.

        ``cand`` and the list's slots are both ascending, so either side is binary-searched in
        the other, whichever is shorter: a long list costs only the few candidates probed.
        """
        np = _np()
        slots, values = self.slots, self.values
        if not len(slots) or not len(cand):
            return np.empty(0, dtype=np.int64), np.empty(0)
        if len(cand) < len(slots):
            at = np.minimum(np.searchsorted(slots, cand), len(slots) - 1)
            found = np.flatnonzero(slots[at] == cand)
            held = cand[found]
            values = None if values is None else values[at[found]]
        else:
            at = np.minimum(np.searchsorted(cand, slots), len(cand) - 1)
            inside = cand[at] == slots
            found, held = at[inside], slots[inside]
            values = None if values is None else values[inside]
        return found, self.gains(view, held, values)


class _Sums:
    """Per-position sums of a query's lists: the weighted linear part (cue, tag, content), the
    raw session part, and how many cue/tag/content lists reach each position."""

    def __init__(self, parts: Sequence[tuple[str, Any, Any]], size: int, cfg: RecallConfig):
        np = _np()
        w = cfg.weights
        own = [(at, w[signal] * g) for signal, at, g in parts if signal != "session"]
        ses = [(at, g) for signal, at, g in parts if signal == "session"]
        tags = [at for signal, at, _ in parts if signal == "tag"]
        at = np.concatenate([a for a, _ in own]) if own else np.empty(0, dtype=np.int64)
        gains = np.concatenate([g for _, g in own]) if own else np.empty(0)
        self.linear = np.bincount(at, gains, minlength=size)
        self.matched = np.bincount(at, minlength=size)  # presence, whatever the weights
        self.session = None
        if ses:
            ses_at = np.concatenate([a for a, _ in ses])
            self.session = np.bincount(ses_at, np.concatenate([g for _, g in ses]), minlength=size)
        self.tagged = np.bincount(np.concatenate(tags), minlength=size) if tags else None
        # the kernel's (see of): what _evidence, tag_only and _jump compute, made in C already
        self.evidence: Any = None
        self.only: Any = None
        self.jump: Any = None

    @classmethod
    def of(cls, found: kernel.KernelSums) -> _Sums:
        """What the kernel found (by position among ``found.slots``): the evidence and tag-only
        flags, all that ranking reads; the raw sums stay in C (None here)."""
        sums = cls.__new__(cls)
        sums.linear = sums.matched = sums.session = sums.tagged = None
        sums.evidence, sums.only, sums.jump = found.evidence, found.tag_only, found.jump
        return sums

    def present(self) -> Any:
        """Positions any list reaches."""
        np = _np()
        reached = self.matched > 0
        return np.flatnonzero(reached if self.session is None else reached | (self.session > 0))

    def explicit(self, at: Any) -> Any:
        """Whether each position matched the query itself (a cue, tag or content list)."""
        return self.matched[at] > 0

    def tag_only(self, at: Any) -> Any:
        """Whether each position matched tags and nothing else (no cue, content or session)."""
        np = _np()
        if self.only is not None:
            return self.only[at]
        if self.tagged is None:
            return np.zeros(len(at), dtype=bool)
        only = self.matched[at] == self.tagged[at]
        if self.session is not None:
            only &= self.session[at] == 0
        return only & (self.tagged[at] > 0)


class Selected(NamedTuple):
    """What :func:`select` chose: the memories that can be among the top ``k``, and, when the
    compiled kernel chose them, their exact evidence (else None: the caller gathers it)."""

    survivors: dict[int, None]
    evidence: Evidence | None


def select(
    index: NamespaceIndex,
    lists: Sequence[_List],
    cfg: RecallConfig,
    scorer: FastScorer,
    *,
    k: int,
    admitted: Callable[[int], bool],
    min_score: float | None,
    memo: RecallMemo,
    floor: float = -math.inf,
) -> Selected:
    """The memories that can be among the top ``k`` admitted hits (best first, with near-ties).

    First the short lists (rare cues and words) alone give a set of candidates and a k-th best
    *lower bound* ``theta``; when the long lists together could not lift a memory outside that
    set above ``theta`` (MaxScore, Turtle & Flood 1995), they are only read for the candidates.
    Otherwise every memory any list reaches is scored. Then admitted candidates are walked best
    first until ``k`` are found, and every candidate within :data:`_EPSILON` of the k-th is kept
    too, so rounding in a different summation order never drops one the exact scores rank in.
    ``floor`` is a known lower bound of the k-th best score (an earlier pass's): theta starts
    there. ``lists`` are in the order the Python pass adds them (the kernel's exact evidence
    adds them in that order too).
    """
    view = view_of(index)
    # The kernel at every size: on one store, query by query in turn with the NumPy path, its
    # CPU per recall was x0.937 of NumPy's at 500k memories and x0.888 at 1M (it had been kept
    # to 300k after an A/B against an older tree, which differed in more than the kernel).
    if memo.kernel is None:
        memo.kernel = kernel.enabled()
    described = _described(lists, cfg, _members(index)) if memo.kernel else None
    if described is not None:
        with view.scratch().lock:  # the kernel's output is the scratch's, until we return
            found = _compiled(view, described, cfg, scorer, k, admitted, floor, memo)
            chosen = _walked(view, found, cfg, scorer, k, admitted, min_score, floor)
        return _new(Selected, (chosen, _exact(index, described, lists, chosen)))
    found = _vectorized(view, lists, cfg, scorer, k, admitted, memo, floor)
    return Selected(_walked(view, found, cfg, scorer, k, admitted, min_score, floor), None)


class _Described(NamedTuple):
    """A pass's lists for the kernel: in narrowing's order, their units, their descriptors."""

    ordered: list[_List]
    units: list[tuple[int, int]]
    lists: kernel._Descriptors


def _described(
    lists: Sequence[_List], cfg: RecallConfig, memo: dict[Any, Any] | None = None
) -> _Described | None:
    """The lists described for the kernel; None when a list's gain is one the kernel does not
    know (the NumPy path handles it). ``memo``: see :func:`kernel.describe`."""
    ordered, units, members = _units(lists, memo)
    described = kernel.describe(ordered, memo, members)
    if described is None or not cfg.session_saturation > 0:
        return None
    return _new(_Described, (ordered, units, described))


_MEMBERS_MAX = 16384  # lists whose member descriptors an index keeps (see _members)


def _members(index: NamespaceIndex) -> dict[Any, Any]:
    """The index's memo of the kernel's member descriptors, kept in ``index.derived`` so that
    any posting change drops it (a posting buffer may move then); started over past
    :data:`_MEMBERS_MAX` lists."""
    memo: dict[Any, Any] = index.derived.setdefault(_MEMBERS_KEY, {})
    if len(memo) >= _MEMBERS_MAX:
        memo.clear()
    return memo


_MEMBERS_KEY = ("kernel", "members")


def _exact(
    index: NamespaceIndex, described: _Described, lists: Sequence[_List], chosen: dict[int, None]
) -> Evidence:
    """The evidence of the ``chosen`` memories, the same floats as the Python pass's
    (:meth:`~cuemap_integrations.topk._Pass.add` of each list, in ``lists``' order), summed by
    the kernel in one call instead of a binary search per list and memory in Python."""
    ordered = described.ordered
    number = dict(zip(map(id, ordered), range(len(ordered)), strict=True))
    # no postings: not described, adds nothing
    order = [at for at in map(number.get, map(id, lists)) if at is not None]
    seqs = list(chosen)
    # by map, not a comprehension: the loop in C (a feedback pass asks ~100 memories)
    found = kernel.evidence(
        described.lists, order, seqs, list(map(index.docs.columns.lengths.__getitem__, seqs))
    )
    ev = Evidence(survivors=chosen)
    _spread_evidence(found.raw, found.held, seqs, ev.cue, ev.tag, ev.content, ev.session)
    return ev


def _py_spread_evidence(
    raw: Sequence[float], held: bytes, seqs: Sequence[int], cue: dict[int, float],
    tag: dict[int, float], content: dict[int, float], session: dict[int, float],
) -> None:  # fmt: skip
    """Each of ``seqs``' raw sums (4 of ``raw`` a memory: cue, tag, content, session, the
    kernel's order) put in the dicts of the signals its ``held`` bits name (cue 1, tag 2,
    content 4, session 8)."""
    for i, seq in enumerate(seqs):  # unrolled: a loop over the four signals cost twice this
        bits, at = held[i], 4 * i
        if bits & 1:
            cue[seq] = raw[at]
        if bits & 2:
            tag[seq] = raw[at + 1]
        if bits & 4:
            content[seq] = raw[at + 2]
        if bits & 8:
            session[seq] = raw[at + 3]


# the compiled twin when built: a feedback pass spreads ~100 memories' sums, a loop step and
# four tests each in Python (~1.5% of a recall at 100k)
_spread_evidence: Callable[..., None] = (
    _py_spread_evidence if _textc is None else _textc.spread_evidence
)


def _walked(
    view: ArrayView, found: tuple[Any, _Sums, Any], cfg: RecallConfig, scorer: FastScorer,
    k: int, admitted: Callable[[int], bool], min_score: float | None, floor: float,
) -> dict[int, None]:  # fmt: skip
    """:func:`_ranked_walk` of the candidates ``found`` (none: no survivor)."""
    cand, sums, positions = found
    if not len(cand):
        return {}
    return _ranked_walk(view, sums, cand, positions, cfg, scorer, k, admitted, min_score, floor)


def _compiled(
    view: ArrayView, described: _Described, cfg: RecallConfig, scorer: FastScorer, k: int,
    admitted: Callable[[int], bool], floor: float, memo: RecallMemo | None = None,
) -> tuple[Any, _Sums, Any]:  # fmt: skip
    """Candidates and their evidence from the compiled kernel, reading the index's own posting
    buffers (no mirror or union made): narrowed as :func:`_narrowed` does in a large namespace,
    else every memory any list reaches."""
    w = cfg.weights
    weights = (w["cue"], w["tag"], w["content"], w["session"], cfg.session_saturation,
               cfg.session_only_factor)  # fmt: skip
    ordered, units, lists = described
    if view.size >= NARROW_MIN_MEMORIES:
        narrowed = _compiled_narrowed(
            view, lists, ordered, units, weights, cfg, scorer, k, admitted, floor, memo
        )
        if narrowed is not None:
            return narrowed
    # what cannot reach an earlier pass's k-th best is not written: _within_reach would drop
    # it, and at 10k memories a feedback pass's ~3,700 rows became ~110 (none left to check)
    least = None if floor == -math.inf else kernel.Floor(scorer.prior_max, floor - _EPSILON)
    if least is not None and memo is not None and memo.dense is not None:
        after = _after_dense(view, described, weights, cfg, scorer, floor, memo.dense)
        if after is not None:
            return after
    found = kernel.accumulate(view, lists, weights, floor=least)
    if least is None and memo is not None and all(map(memo.shared, ordered)):
        # the query's own lists alone, over every memory they reach: a later pass may start
        # from these sums (the scratch's output: copied, the next call overwrites it)
        memo.dense = _Dense(frozenset(map(id, ordered)), found.slots.copy(), found.evidence.copy())
    return _from_kernel(found)


# the feedback pass probes every list for the memories within reach of the floor only when they
# are at most 1/_DENSE_SHARE of those the first pass read (else it reads every list whole)
_DENSE_SHARE = 4


class _Dense(NamedTuple):
    """What a pass over the query's own lists alone (``lists``, their ids: alive in the recall's
    memo, unique while it is) found when it read them whole: every memory they reach (its slot,
    ascending) and its evidence."""

    lists: frozenset[int]
    slots: Any
    evidence: Any


def _after_dense(
    view: ArrayView, described: _Described, weights: tuple[float, ...], cfg: RecallConfig,
    scorer: FastScorer, floor: float, dense: _Dense,
) -> tuple[Any, _Sums, Any] | None:  # fmt: skip
    """The rows of a pass over every list for the memories that can reach ``floor`` (an earlier
    pass's k-th best), when that pass read the query's own lists whole (``dense``) and this
    one only adds carried (session) lists to them: the same rows as the call over every memory
    with that floor (:class:`kernel.Floor`), without reading the query's long lists whole again.

    A memory the carried lists do not reach has the same evidence as in ``dense`` (the same
    lists added in the same order); one they reach gains at most the session weight times the
    saturation (times the session-only factor, when above 1). So the memories that can reach
    the floor are those of ``dense`` within that much of it (a margin of two epsilons more than
    the floor's own test), unless a memory the carried lists alone reach could: then, or when
    they are more than 1/:data:`_DENSE_SHARE` of ``dense`` (probing each list for them would
    not pay), None.
    Their evidence is summed in one candidate call (every list, in the same order: the same
    floats as over every memory), and those below the floor's test dropped as that call drops
    them. 100 cold bench questions at 100k memories: 19 feedback passes read every memory
    (0.5-1.2 ms of kernel each), 2 now; 11.82M -> 10.65M instructions a recall (instr.sh)."""
    ordered = described.ordered
    own = frozenset(id(lst) for lst in ordered if lst.signal != "session")
    if own != dense.lists:
        return None
    most = cfg.weights["session"] * cfg.session_saturation * max(1.0, cfg.session_only_factor)
    reach, cut = scorer.prior_max + most, floor - 2 * _EPSILON
    if reach >= cut:  # a memory only the carried lists reach could make it
        return None
    np = _np()
    near = np.flatnonzero(dense.evidence + reach >= cut)
    if _DENSE_SHARE * len(near) > len(dense.slots) or not len(near):
        return None
    slots = dense.slots[near]  # ascending: the kernel probes
    found = kernel.accumulate(view, described.lists, weights, cand=(slots, view.seq_at[slots]))
    # the floor's test (kernel.Floor: evidence + prior_max >= cut, the same floats)
    rows = np.flatnonzero(found.evidence + scorer.prior_max >= floor - _EPSILON)
    return _from_kernel(kernel.KernelSums(*(column[rows] for column in found)))


def _from_kernel(found: kernel.KernelSums) -> tuple[Any, _Sums, Any]:
    return found.slots, _Sums.of(found), _positions(len(found.slots))


_COUNTING: Any = None  # 0, 1, 2, ... read-only, grown as needed (see _positions)


def _positions(n: int) -> Any:
    """``np.arange(n)``, as a read-only view of one array made once (and again when a call
    needs more): the kernel's rows are their own positions, and an arange of a dense pass's
    ~30k rows cost ~30 us, twice a recall, for positions that are only read."""
    global _COUNTING
    held = _COUNTING
    if held is None or len(held) < n:
        held = _np().arange(max(n, 4096, 0 if held is None else 2 * len(held)))
        held.flags.writeable = False  # a caller writing to it would change every later pass's
        _COUNTING = held
    return held[:n]


def _units(
    lists: Sequence[_List], memo: dict[Any, Any] | None = None
) -> tuple[list[_List], list[tuple[int, int]], list[Any]]:
    """The lists with postings in the order narrowing takes them, each *unit*'s
    ``(postings, lists up to and including it)``, and each ordered list's member descriptors
    (:func:`kernel.members_of`, by ``memo``). As :func:`_entries` merges them, the carried
    (session) lists are one unit, placed by their postings together: each is short, but taken
    one by one they would fill the share of the namespace narrowing may read before the query's
    own rare words. A list's postings are counted by its member descriptors, which
    :func:`kernel.describe` reads next (a memo hit, where summing its lists' lengths was a
    call per list)."""
    units: list[tuple[int, list[_List], list[Any]]] = []  # (postings, lists, members) of each
    carried: list[_List] = []
    carried_members: list[Any] = []
    held = 0  # the carried lists' postings
    members_of = kernel.members_of
    for lst in lists:
        found = members_of(lst.postings, lst.keys, memo)
        size = found.postings
        if not size:
            continue
        if lst.signal == "session":
            carried.append(lst)
            carried_members.append(found)
            held += size
        else:
            units.append((size, [lst], [found]))
    if carried:
        units.append((held, carried, carried_members))
    units.sort(key=_first)  # stable: ties keep list order
    ordered: list[_List] = []
    members: list[Any] = []
    bounds = []
    for size, unit, found_members in units:
        ordered += unit
        members += found_members
        bounds.append((size, len(ordered)))
    return ordered, bounds, members


_first = itemgetter(0)


def _compiled_narrowed(
    view: ArrayView, described: Any, ordered: Sequence[_List], units: Sequence[tuple[int, int]],
    weights: tuple[float, ...], cfg: RecallConfig, scorer: FastScorer, k: int,
    admitted: Callable[[int], bool], floor: float, memo: RecallMemo | None = None,
) -> tuple[Any, _Sums, Any] | None:  # fmt: skip
    """:func:`_narrowed` by the kernel: the same checks (before a unit at least twice as long
    as the last, while the units taken hold at most 1/_SPARSE_SHARE of the namespace's size in
    postings), each summing the lists taken in C; once the lists not taken cannot lift a
    memory outside the candidates to ``theta``, one more call sums every list for the
    candidates within reach (long lists binary-searched for them). Where the lists taken
    alone give too low a theta, the best few candidates' exact scores may give a higher one
    (:func:`_probed_theta`). None: score densely.

    What a check finds before its floor and rest come in (:class:`_Taken`) depends on the
    lists taken and k alone: a later pass of the recall (``memo``) that takes the same lists
    of the query's own first reads it back instead of summing them again."""
    every = rest_bounds(ordered, cfg.weights["session"] * cfg.session_saturation)
    rest = [every[0]] + [every[taken] for _, taken in units]  # rest[u]: units u.. add at most
    probe = functools.partial(_probed_theta, view, described, weights, scorer, k, admitted)
    # the same share of the namespace as NumPy's: 1 instead of 4 measured x1.009 (100k A/B)
    for u in _checks(view, [size for size, _ in units], rest, scorer, floor, last=False):
        taken = units[u][1]
        # the sums are held in the scratch: the last call goes on from them for the candidates
        # instead of reading the lists taken again (unless the probe's call came between, or
        # an earlier pass's check found them)
        sums = _taken(view, described, ordered, taken, weights, cfg, scorer, k, admitted, memo)
        reach = _compiled_reach(view, sums, scorer, floor, rest[u + 1], probe)
        if reach is not None:
            kept, theta = reach  # arrays of their own: the next call reuses the scratch's output
            # each list not taken then drops the candidates it leaves out of reach of theta,
            # so the longer lists after it are probed for fewer
            refine = _new(kernel.Refine, (kept.base, every, theta - _EPSILON, taken))
            resume = taken if view.scratch().holds(described, taken) else 0
            found = kernel.accumulate(
                view, described, weights, cand=(kept.slots, kept.seqs), refine=refine,
                resume=resume,
            )  # fmt: skip
            return _from_kernel(found)
    return None


class _Taken(NamedTuple):
    """What the lists a narrowing check takes give the memories they reach (``cand``, their
    ``partial`` sums): each one's tag-only flag, prior (without the bonus) and lower bound,
    and ``kth``, the k-th best lower bound among the admitted ones (-inf: fewer)."""

    cand: Any
    partial: _Sums
    tag_only: Any
    prior: Any
    lower: Any
    kth: float


class _Bounds(NamedTuple):
    """Each candidate's prior (without the bonus) and lower bound, and the k-th best lower
    bound among the admitted ones that matched more than tags (-inf: fewer than k)."""

    prior: Any
    lower: Any
    kth: float


def _bounds(
    view: ArrayView, cand: Any, evidence: Any, tag_only: Any, scorer: FastScorer, k: int,
    admitted: Callable[[int], bool],
) -> _Bounds:  # fmt: skip
    """:class:`_Bounds` of the kernel's rows ``cand`` (their ``evidence`` and ``tag_only``
    flags): in one C call (:func:`kernel.bounds`: the priors, lower bounds and the best block,
    whose admitted ones Python asks about), where NumPy made some ten arrays of the rows; by
    :func:`_priors` and :func:`_kth` when the prior asks Python for access counts (frequency).
    The same floats either way (``tests/core/test_narrow_bounds.py``)."""
    if scorer.w_freq:
        prior = _priors(view, cand, scorer)  # without the bonus: :func:`_scores`' lower bound
        lower = evidence + prior  # evidence only adds
        return _new(_Bounds, (prior, lower, _kth(view, cand, lower, k, admitted, tag_only)))
    block = max(2 * k, k + 16)
    found = kernel.bounds(view, cand, evidence, tag_only, _ranking(view, scorer, None), block)
    kth = _kth_of(found.best, k, admitted, len(found.best.seqs) < block or block >= len(cand))
    if kth is None:  # too few admitted among the best: _compiled_kth looks further on
        kth = _compiled_kth(view, cand, found.lower, k, admitted, tag_only, block * 4)
    return _new(_Bounds, (found.prior, found.lower, kth))


def _taken(
    view: ArrayView, described: Any, ordered: Sequence[_List], taken: int,
    weights: tuple[float, ...], cfg: RecallConfig, scorer: FastScorer, k: int,
    admitted: Callable[[int], bool], memo: RecallMemo | None,
) -> _Taken:  # fmt: skip
    """:class:`_Taken` of the first ``taken`` of ``ordered``, summed with ``hold`` (so the last
    call may resume from them); or, when these are all the query's own lists (the same objects
    in every pass of a recall: their ids stand for them while ``memo`` lives) and an earlier
    pass of the recall summed them for the same ``k``, read back from ``memo``. The same
    lists, weights, clock and filters give the same floats: the feedback pass's first check
    usually takes the first pass's rare words again (~250 of 300 bench queries at 100k)."""
    prefix = ordered[:taken]
    key = None
    if memo is not None and all(map(memo.shared, prefix)):
        key = (k, *map(id, prefix))
        held: _Taken | None = memo.taken.get(key)
        if held is not None:
            return held
    found = kernel.accumulate(view, described, weights, lists=taken, hold=True)
    cand, partial, _ = _from_kernel(found)
    if key is not None:  # kept past the next call, which reuses the scratch's output arrays
        cand = cand.copy()
        partial = _Sums.of(_new(kernel.KernelSums, (cand, *(a.copy() for a in found[1:]))))
    tag_only = partial.only  # ranked after every other match: never the k-th
    bounds = _bounds(view, cand, partial.evidence, tag_only, scorer, k, admitted)
    held = _new(_Taken, (cand, partial, tag_only, *bounds))
    if memo is not None and key is not None:
        memo.taken[key] = held
    return held


def _compiled_reach(
    view: ArrayView, found: _Taken, scorer: FastScorer, floor: float, rest: float,
    probe: Callable[[Any, Any, Any], float],
) -> tuple[kernel.Kept, float] | None:  # fmt: skip
    """:func:`_reachable` of what the lists taken found (:func:`_taken`), by the kernel: the
    candidates that can reach theta (:func:`kernel.keep`, as :func:`_upper` bounds them) and
    theta; None when a memory outside them still could.

    ``probe(cand, lower, tag_only)`` is asked for another lower bound of the k-th best when
    the k-th best lower bound (or ``floor``) does not beat ``rest``: its kernel call reuses
    the scratch's output arrays, which the candidates and their jumps may be views of (so
    they are copied first)."""
    cand, partial, tag_only, prior, lower, kth = found
    theta, jump, reach = max(kth, floor), partial.jump, rest + scorer.prior_max
    if reach >= theta - _EPSILON:
        cand, jump = cand.copy(), jump.copy()
        theta = max(theta, probe(cand, lower, tag_only))
        if reach >= theta - _EPSILON:
            return None
    cut = theta - _EPSILON
    return kernel.keep(view, cand, lower, jump, prior, rest, scorer.bonus_max, cut), theta


def _vectorized(
    view: ArrayView, lists: Sequence[_List], cfg: RecallConfig, scorer: FastScorer, k: int,
    admitted: Callable[[int], bool], memo: RecallMemo, floor: float,
) -> tuple[Any, _Sums, Any]:  # fmt: skip
    """Candidates and their sums by NumPy (the kernel's reference): narrowed in a large
    namespace when the short lists decide, else every memory any list reaches."""
    entries = _entries(view, lists, memo)
    narrowed = None
    if view.size >= NARROW_MIN_MEMORIES:
        narrowed = _narrowed(view, entries, cfg, scorer, k, admitted, floor)
    return narrowed if narrowed is not None else _dense(view, entries, cfg)


def _dense(view: ArrayView, entries: Sequence[_Entry], cfg: RecallConfig) -> tuple[Any, _Sums, Any]:
    """Every memory any list reaches, with its sums: summed by position among those memories,
    not by slot (arrays of the namespace's size cost more than the few lists' total)."""
    reached, where = _joined([e.slots for e in entries], view.size)
    parts = [(e.lst.signal, at, e.full(view)) for e, at in zip(entries, where, strict=True)]
    sums = _Sums(parts, len(reached), cfg)
    positions = sums.present()  # a list may give some memories nothing (a zero self factor)
    return reached[positions], sums, positions


def _entries(view: ArrayView, lists: Sequence[_List], memo: RecallMemo) -> list[_Entry]:
    """The query's lists as entries, its carried (session) lists merged into one.

    A session or feedback pass carries dozens of cues; each would cost a few array operations
    at every narrowing check, while together they only ever add a saturated sum (the session
    cap bounds them as one list anyway, see :func:`_rest_bounds`). The query's own lists'
    entries are made once per recall (``memo``): the feedback pass reads the same arrays."""
    carried = [lst for lst in lists if lst.signal == "session"]
    if len(carried) < 2:
        return [_entry(view, lst, memo) for lst in lists]
    own = [_entry(view, lst, memo) for lst in lists if lst.signal != "session"]
    return [*own, _merged(view, carried, [view.union(lst.keys)[0] for lst in carried])]


def _entry(view: ArrayView, lst: _List, memo: RecallMemo) -> _Entry:
    """The entry of ``lst``, from ``memo`` when it is one of the query's own lists."""
    if not memo.shared(lst):
        return _Entry(lst, *view.union(lst.keys))
    held: _Entry | None = memo.entries.get(id(lst))
    if held is None:
        held = memo.entries[id(lst)] = _Entry(lst, *view.union(lst.keys))
    return held


def _merged(view: ArrayView, lists: Sequence[_List], each: Sequence[Any]) -> _Entry:
    """One entry for several session lists (their slots ``each``): each memory they reach once
    (ascending), with the sum of its gains from them, in list order.

    The gains of all lists are made in one step, not list by list (a feedback pass carries
    some fifty): each list's constant gain repeated over its slots, and its own, lower gain
    where the slot is its single source's (as :meth:`_Entry.gains` gives them)."""
    np = _np()
    slots, where = _joined(each, view.size)
    gains = _session_gains(view, lists, each)
    gains = np.bincount(np.concatenate(where), gains, minlength=len(slots))  # in input order
    bound = sum(lst.bound for lst in lists)
    # no postings, keys or gain of its own: a summed entry's values are its gains (see gains())
    merged = _List("session", bound, (), _Gain(math.nan), ())
    return _Entry(merged, slots, gains, summed=True)


def _session_gains(view: ArrayView, lists: Sequence[_List], each: Sequence[Any]) -> Any:
    """The gain of every posting of these session lists (slots ``each``), concatenated."""
    np = _np()
    lengths = [len(slots) for slots in each]
    gain: list[_Gain] = [lst.gain for lst in lists]  # type: ignore[misc]  # session: _Gain
    gains = np.repeat([g.value for g in gain], lengths)
    own = [_slot_or_none(view, g.special) for g in gain]  # -1: none (slots are >= 0)
    if max(own) >= 0:
        mine = np.concatenate(each) == np.repeat(own, lengths)
        gains[mine] = np.repeat([g.special_value for g in gain], lengths)[mine]
    return gains


def _slot_or_none(view: ArrayView, seq: int | None) -> int:
    """The slot of ``seq``, or -1 when it is None or has none."""
    slot = None if seq is None else view.slot(seq)
    return -1 if slot is None else slot


def _ranked_walk(
    view: ArrayView, sums: _Sums, cand: Any, positions: Any, cfg: RecallConfig,
    scorer: FastScorer, k: int, admitted: Callable[[int], bool], min_score: float | None,
    floor: float,
) -> dict[int, None]:  # fmt: skip
    np = _np()
    if _kernel_ranks(sums, scorer):
        chosen = _kernel_walk(view, sums, cand, positions, scorer, k, admitted, min_score)
        if chosen is not None:
            return chosen
    if len(cand) > _reach_from(scorer, k):
        cand, positions = _within_reach(
            view, sums, cand, positions, cfg, scorer, k, admitted, floor, min_score
        )
    score = _scores(view, sums, cand, positions, cfg, scorer)
    tag_only = sums.tag_only(positions)
    if min_score is not None:  # the caller drops these; they must not take a place in the top k
        keep = score >= min_score - _EPSILON
        cand, score, tag_only = cand[keep], score[keep], tag_only[keep]
        if not len(cand):
            return {}
    if not tag_only.any():
        return _walk(view, cand, score, k, admitted)
    shift = float(score.max() - score.min()) + _BIG_SHIFT
    return _walk(view, cand, np.where(tag_only, score - shift, score), k, admitted)


def _kernel_ranks(sums: _Sums, scorer: FastScorer) -> bool:
    """Whether :func:`_kernel_walk` may rank these candidates: the kernel summed their evidence
    and their score needs nothing asked in Python (no date/speaker bonus, no frequency)."""
    return sums.evidence is not None and scorer.bonus is None and not scorer.w_freq


def _kernel_walk(
    view: ArrayView, sums: _Sums, cand: Any, positions: Any, scorer: FastScorer, k: int,
    admitted: Callable[[int], bool], min_score: float | None,
) -> dict[int, None] | None:  # fmt: skip
    """The survivors of :func:`_ranked_walk` from the kernel's order of the candidates by full
    score (:func:`kernel.rank`: priors, scores and order in one call, where
    :func:`_within_reach`, :func:`_scores` and :func:`_walk` made some twenty NumPy and
    kernel calls). The memories that matched only tags are left out: they rank after every
    other, so a walk that finds k others stops before them; None when it does not (fewer
    than k others), and the NumPy walk, which ranks them by shifted scores, decides.

    The same survivors: a candidate :func:`_within_reach` drops scores below its theta less
    the margin, and theta (the best block's k-th lower bound, or an earlier pass's k-th best
    score, which this pass's k-th best reaches: it only adds concepts) is at most the k-th
    best score, where the walk stops anyway."""
    np = _np()
    whole = len(positions) == len(sums.evidence)
    evidence = sums.evidence if whole else sums.evidence[positions]
    only = sums.only if whole else sums.only[positions]
    by = _ranking(view, scorer, min_score)
    cand, evidence, only = (np.ascontiguousarray(a) for a in (cand, evidence, only))
    block = max(2 * k, k + 16)
    while True:
        best = kernel.rank(view, cand, evidence, only, by, block)
        survivors, _, stopped = _walked_order(zip(best.seqs, best.keys, strict=True), k, admitted)
        if stopped or len(survivors) >= k and len(best.seqs) < block:
            return survivors  # stopped, or every other candidate walked: the tag-only after
        if len(best.seqs) < block:  # every other candidate walked, fewer than k admitted
            return survivors if not only.any() else None
        block *= 4


def _ranking(view: ArrayView, scorer: FastScorer, min_score: float | None) -> kernel.Ranking:
    """What :func:`kernel.rank` scores by: ``scorer``'s prior (as :func:`_priors` computes it,
    by the view's type codes; one bonus for all when they all have the same, so the kernel
    reads no type code), and ``min_score`` less the margin (as :func:`_ranked_walk` cuts)."""
    # made once per pass and view (the same numbers each time): a pass asked ~4 times, each
    # a list of bonuses and a NumPy array made
    key = (view, len(view.type_codes), min_score)
    held = scorer.ranked
    if held is not None and held[0] == key:
        return held[1]  # type: ignore[no-any-return]
    bonus = _type_bonuses(view, scorer)
    ranking = _new(kernel.Ranking, (
        scorer.now_ts, scorer.per_second, scorer.w_recency, _np().array(bonus), scorer.prior_max,
        -math.inf if min_score is None else min_score - _EPSILON,
    ))  # fmt: skip
    scorer.ranked = (key, ranking)
    return ranking


def _type_bonuses(view: ArrayView, scorer: FastScorer) -> list[float]:
    """``scorer``'s bonus of each of the view's type codes (the codes number the types in the
    order the dict holds them), or the one bonus of all when they all have the same."""
    bonus = [scorer.type_bonus.get(name, 0.0) for name in view.type_codes] or [0.0]
    return bonus[:1] if bonus.count(bonus[0]) == len(bonus) else bonus


def _reach_from(scorer: FastScorer, k: int) -> int:
    """How many candidates make :func:`_within_reach` worth its checks. Scoring one in the
    array costs a fraction of a microsecond, so only thousands pay; but a query's date or
    speaker bonus is asked memory by memory in Python (about 1 us each, reading its row), so
    with one, a few blocks already do (the bench's date queries scored ~1,000 candidates)."""
    block = max(4 * k, 64)
    return 16 * block if scorer.bonus is None else 4 * block


def _within_reach(
    view: ArrayView, sums: _Sums, cand: Any, positions: Any, cfg: RecallConfig,
    scorer: FastScorer, k: int, admitted: Callable[[int], bool], floor: float,
    min_score: float | None = None,
) -> tuple[Any, Any]:  # fmt: skip
    """The candidates whose score can reach the k-th best, when many memories matched.

    The prior (recency, type, frequency, the query's bonus) is the costly part to compute and
    adds at most ``scorer.prior_max``; the scores of the best few by evidence give a k-th best
    lower bound, and only candidates whose evidence plus that maximum reaches it are kept (memories
    that matched only tags go too once k others are certain: they rank after every other).
    With ``min_score``, k others are certain only when theta reaches its cut: below it, the
    k best others may all be cut, and a tag-only memory scoring above it then ranks (stop 27
    found this by the differential test of the kernel's walk, which keeps it).
    """
    np = _np()
    # the kernel's rows are every position (see _from_kernel): its sums are read whole (views)
    whole = sums.evidence is not None and len(positions) == len(sums.evidence)
    at: Any = slice(None) if whole else positions
    evidence = _evidence(sums, at, cfg, scorer)
    tag_only = sums.tag_only(at)  # ranked after every other match: never the k-th
    slots, best = _best_block(view, cand, evidence, max(4 * k, 64), tag_only)
    lower = best + _priors(view, slots, scorer)  # without the bonus: a lower bound
    theta = max(_kth(view, slots, lower, k, admitted), floor)
    if theta == -math.inf:
        return cand, positions
    reach = evidence + scorer.prior_max >= theta - _EPSILON
    if min_score is None or theta >= min_score - _EPSILON:  # k others certain: the cut keeps them
        reach = np.logical_and(reach, ~tag_only, out=reach)
    keep = np.flatnonzero(reach)
    return cand[keep], keep if whole else positions[keep]


def _narrowed(
    view: ArrayView, entries: Sequence[_Entry], cfg: RecallConfig, scorer: FastScorer,
    k: int, admitted: Callable[[int], bool], floor: float,
) -> tuple[Any, _Sums, Any] | None:  # fmt: skip
    """Candidates from the shortest lists, with every list's evidence for them, once the other
    lists provably cannot bring in anyone else; None when that needs too much of the index.

    Lists are taken shortest (rarest) first. At each check, the candidates so far get a k-th best
    *lower bound* ``theta`` from the lists taken; when the lists not taken could add less than
    ``theta`` to a memory outside the candidates, those lists are only probed for the candidates
    (binary search: their length hardly matters). Checks happen only before a list at least twice
    as long as the last, so a query costs a few checks on few candidates when its rare words
    decide.
    """
    np = _np()
    order = sorted((e for e in entries if len(e.slots)), key=lambda e: len(e.slots))
    sizes = [len(e.slots) for e in order]
    rest = _rest_bounds(order, cfg.weights["session"] * cfg.session_saturation)
    for i in _checks(view, sizes, rest, scorer, floor, last=True):
        taken_now = order[: i + 1]
        cand, where = _joined([e.slots for e in taken_now], view.size)
        parts = [(e.lst.signal, at, e.full(view)) for e, at in zip(taken_now, where, strict=True)]
        partial = _Sums(parts, len(cand), cfg)
        if i == len(order) - 1:
            return cand, partial, np.arange(len(cand))
        reach = _reachable(view, partial, cand, cfg, scorer, k, admitted, floor, rest[i + 1])
        if reach is None:
            continue
        keep, cand = reach.keep, reach.cand
        parts = _kept(parts, keep) + [(e.lst.signal, *e.within(view, cand)) for e in order[i + 1 :]]
        return cand, _Sums(parts, len(cand), cfg), np.arange(len(cand))
    return None


def _checks(
    view: ArrayView, sizes: Sequence[int], rest: Sequence[float], scorer: FastScorer,
    floor: float, *, last: bool,
) -> Iterator[int]:  # fmt: skip
    """The numbers ``i`` of the lists (by ascending ``sizes``) after which narrowing checks
    whether lists ``..i`` decide: before a list at least twice as long as the last, once a
    theta could beat what the rest adds (and, with ``last``, after the last list); until the
    lists taken hold more than 1/_SPARSE_SHARE of the namespace's size in postings (then
    scoring every memory the lists reach is cheaper; the caller finds the generator ended).

    Last, when none of those decided: the first ``i`` whose rest the ``floor`` alone beats
    (an earlier pass's k-th best), a check that cannot fail, if lists ``..i`` hold at most
    1/_FLOOR_SHARE of the namespace's size (see there)."""
    prior_max, taken, fallback = scorer.prior_max, 0, None
    for i, size in enumerate(sizes):
        taken += size
        if taken > view.size // _SPARSE_SHARE:
            break
        if i == len(sizes) - 1:
            if last:
                yield i
            break
        if fallback is None and taken <= view.size // _FLOOR_SHARE:
            if rest[i + 1] + prior_max < floor - _EPSILON:
                fallback = i
        if sizes[i + 1] >= 2 * size and rest[i + 1] + prior_max < max(
            rest[0] - rest[i + 1] + prior_max, floor
        ):  # a longer list next, and theta could beat the rest
            yield i
    if fallback is not None:
        yield fallback


class _Reach(NamedTuple):
    """What :func:`_reachable` found: which candidates can reach ``theta`` (a mask) and those
    candidates (a copy), the prior of every candidate (without the bonus) and the k-th best
    lower bound ``theta``."""

    keep: Any
    cand: Any
    prior: Any
    theta: float


def _reachable(
    view: ArrayView, partial: _Sums, cand: Any, cfg: RecallConfig, scorer: FastScorer, k: int,
    admitted: Callable[[int], bool], floor: float, rest: float,
) -> _Reach | None:  # fmt: skip
    """Which of ``cand`` (their ``partial`` sums from the lists taken) can still reach the k-th
    best once the lists not taken (adding at most ``rest``) are read; None when a memory outside
    the candidates still could (the k-th best lower bound theta does not beat ``rest``)."""
    at = _np().arange(len(cand))
    prior = _priors(view, cand, scorer)  # without the bonus: :func:`_scores`' lower bound
    lower = _evidence(partial, at, cfg, scorer) + prior  # evidence only adds
    tag_only = partial.tag_only(at)  # ranked after every other match: never the k-th
    theta = max(_kth(view, cand, lower, k, admitted, tag_only), floor)
    if rest + scorer.prior_max >= theta - _EPSILON:
        return None
    keep = _upper(partial, at, lower, rest, cfg, scorer) >= theta - _EPSILON
    return _Reach(keep, cand[keep], prior, theta)


def _upper(
    partial: _Sums, at: Any, lower: Any, rest: float, cfg: RecallConfig, scorer: FastScorer
) -> Any:
    """An upper bound of each candidate's score (``lower``, from its ``partial`` sums at
    ``at``) once the lists not taken (adding at most ``rest``) are read, with the largest
    bonus (``lower`` left it out): those below theta are dropped too, so the long lists are
    probed for the few that remain (:func:`kernel.keep` adds the same in C)."""
    upper = lower + rest  # then added to in place: the same sums, in the same order
    upper += _jump(partial, at, cfg, scorer)
    upper += scorer.bonus_max
    return upper


def _probed_theta(
    view: ArrayView, described: Any, weights: tuple[float, ...], scorer: FastScorer, k: int,
    admitted: Callable[[int], bool], cand: Any, lower: Any, tag_only: Any,
) -> float:  # fmt: skip
    """The k-th best exact lower bound of the best few of ``cand`` by ``lower``, those
    ``tag_only`` marks left out (-inf when fewer than k rank): every list summed for them in
    one kernel call (each long list probed for those few), plus their priors (without the
    bonus). The lists taken alone may give the leaders too little, where the long lists give
    them most of their score."""
    best = kernel.top(view, cand, lower, max(2 * k, k + 16), tag_only)
    if len(best.seqs) < k:
        return -math.inf
    np = _np()
    seqs = np.frombuffer(best.seqs, dtype=np.int64)
    slots = np.sort(view.slot_by_seq[seqs])  # ascending: the kernel probes
    found = kernel.accumulate(view, described, weights, cand=(slots, view.seq_at[slots]))
    return _bounds(view, found.slots, found.evidence, found.tag_only, scorer, k, admitted).kth


def _best_block(
    view: ArrayView, cand: Any, key: Any, block: int, skip: Any = None
) -> tuple[Any, Any]:
    """The slots of the best ``block`` of ``cand`` by ``key`` (those ``skip`` marks left out)
    and their keys, in no promised order. Among keys tied at the block's edge the kernel's and
    NumPy's way may take different ones: callers only take a lower bound of the k-th best from
    the block, which any of them gives.

    By the kernel's heap when it is on (:func:`kernel.top`: one pass over the keys, where
    ``argpartition`` of a dense pass's ~30k rows at 100k memories took ~370 us), else by NumPy.
    """
    np = _np()
    if _compiled_top(cand, key, skip):
        best = kernel.top(view, np.ascontiguousarray(cand), np.ascontiguousarray(key), block,
                          None if skip is None else np.ascontiguousarray(skip))  # fmt: skip
        seqs = np.frombuffer(best.seqs, dtype=np.int64)
        return view.slot_by_seq[seqs], np.frombuffer(best.keys, dtype=np.float64)
    neg = np.negative(key)  # best first; skipped ones last
    if skip is not None:
        neg[skip] = np.inf
    top = np.argpartition(neg, block - 1)[:block] if block < len(cand) else np.arange(len(cand))
    if skip is not None:
        top = top[~skip[top]]
    return cand[top], key[top]


def _joined(lists: Sequence[Any], size: int) -> tuple[Any, list[Any]]:
    """The distinct slots of ``lists`` (ascending) and each list's positions among them.

    Short lists are sorted together (one argsort gives both); long ones are marked in an
    array of the namespace's size. Crossover at 100k memories: sorting 3k slots 41 us vs
    marking 50, 8k 132 vs 142, 25k 473 vs 138 (benchmarks on the shared 2-core machine)."""
    np = _np()
    if not lists:  # e.g. a query of stop words only: no list at all
        return np.empty(0, dtype=np.int64), []
    joined = np.concatenate(lists)
    if len(joined) * 10 < size:
        order = np.argsort(joined, kind="stable")
        ordered = joined[order]
        first = np.ones(len(ordered), dtype=bool)
        np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
        where = np.empty(len(joined), dtype=np.int64)
        where[order] = np.cumsum(first) - 1
        distinct = ordered[first]
    else:
        seen = np.zeros(size, dtype=bool)
        seen[joined] = True
        distinct = np.flatnonzero(seen)
        rank = np.empty(size, dtype=np.int64)  # only the marked slots' ranks are read
        rank[distinct] = np.arange(len(distinct))
        where = rank[joined]
    return distinct, np.split(where, np.cumsum([len(slots) for slots in lists[:-1]]))


def _kept(parts: Sequence[tuple[str, Any, Any]], keep: Any) -> list[tuple[str, Any, Any]]:
    """``parts`` (positions and gains) for the positions ``keep`` marks, renumbered."""
    renumbered = _np().cumsum(keep) - 1
    out = []
    for signal, at, gains in parts:
        inside = keep[at]
        out.append((signal, renumbered[at[inside]], gains[inside]))
    return out


def _jump(sums: _Sums, at: Any, cfg: RecallConfig, scorer: FastScorer) -> Any:
    """What matching the query itself later would add to session-only memories (else 0)."""
    if sums.jump is not None:  # the kernel computed it
        return sums.jump[at]
    if sums.session is None or not scorer.w_session:
        return 0.0
    gain = scorer.w_session * _saturated(sums.session[at], cfg) * (1.0 - cfg.session_only_factor)
    return _np().where(sums.explicit(at), 0.0, gain)


def _rest_bounds(order: Sequence[_Entry], session_cap: float) -> list[float]:
    """``rest[i]``: the most that entries ``i..`` can add to one memory's score."""
    return rest_bounds([e.lst for e in order], session_cap)


def _kth(
    view: ArrayView, cand: Any, lower: Any, k: int, admitted: Callable[[int], bool],
    skip: Any = None,
) -> float:  # fmt: skip
    """The k-th best lower bound among admitted candidates (-inf when fewer than k), leaving
    out those ``skip`` marks (a bool array, or None)."""
    np = _np()
    if _compiled_top(cand, lower, skip):
        return _compiled_kth(view, cand, lower, k, admitted, skip)
    if skip is not None:
        cand, lower = cand[~skip], lower[~skip]
    block = min(len(cand), max(2 * k, k + 16))
    while len(cand) >= k:
        top = np.argpartition(-lower, block - 1)[:block] if block < len(cand) else np.arange(block)
        found, seqs = 0, view.seq_at[cand[top]]
        order = np.lexsort((seqs, -lower[top]))
        for at, seq in zip(top[order].tolist(), seqs[order].tolist(), strict=True):
            if admitted(seq):
                found += 1
                if found == k:
                    return float(lower[at])
        if block == len(cand):
            break
        block = min(len(cand), 4 * block)  # too few admitted among the best: look further
    return -math.inf


def _compiled_top(cand: Any, key: Any, skip: Any = None) -> bool:
    """Whether the kernel orders these candidates (:func:`kernel.top`): it is on, and they
    are arrays of its types (they always are; anything else takes the NumPy way)."""
    np = _np()
    return (
        kernel.enabled()
        and cand.dtype == np.int64
        and key.dtype == np.float64
        and (skip is None or skip.dtype == np.bool_)
    )


def _compiled_kth(
    view: ArrayView, cand: Any, lower: Any, k: int, admitted: Callable[[int], bool], skip: Any,
    block: int = 0,
) -> float:  # fmt: skip
    """:func:`_kth` by the kernel: it orders the best block (:func:`kernel.top`), Python asks
    only those few whether they are admitted; the same value, that of the k-th admitted
    candidate in the order by ``(-lower, seq)``. ``block``: the first block's size, when a
    caller has already asked a smaller one (0: the usual first size)."""
    np = _np()
    cand, lower = np.ascontiguousarray(cand), np.ascontiguousarray(lower)
    skip = None if skip is None else np.ascontiguousarray(skip)
    block = block or max(2 * k, k + 16)
    while True:
        best = kernel.top(view, cand, lower, block, skip)
        kth = _kth_of(best, k, admitted, len(best.seqs) < block or block >= len(cand))
        if kth is not None:
            return kth
        block *= 4  # too few admitted among the best: look further


def _kth_of(best: kernel.Top, k: int, admitted: Callable[[int], bool], every: bool) -> float | None:
    """The key of the k-th admitted row of ``best`` (best first); when there are fewer, -inf
    if ``every`` row was asked, else None (a larger block may hold it)."""
    found = 0
    for seq, value in zip(best.seqs, best.keys, strict=True):
        if admitted(seq):
            found += 1
            if found == k:
                return value
    return -math.inf if every else None


def _scores(
    view: ArrayView, sums: _Sums, slots: Any, at: Any, cfg: RecallConfig, scorer: FastScorer,
    *, with_bonus: bool = True,
) -> Any:  # fmt: skip
    """:meth:`FastScorer.scores` of the memories in ``slots`` (their sums at ``at``), vectorized;
    without the query's date/speaker bonus, a lower bound of it (bonuses are >= 0)."""
    return _evidence(sums, at, cfg, scorer) + _priors(view, slots, scorer, with_bonus=with_bonus)


def _evidence(sums: _Sums, at: Any, cfg: RecallConfig, scorer: FastScorer) -> Any:
    """The query-dependent part of the score (without recency, type and frequency)."""
    if sums.evidence is not None:  # the kernel computed it, with the same weights
        return sums.evidence[at]
    np = _np()
    score = sums.linear[at]
    if scorer.w_session and sums.session is not None:
        factor = np.where(sums.explicit(at), 1.0, cfg.session_only_factor)
        score = score + scorer.w_session * _saturated(sums.session[at], cfg) * factor
    return score


def _saturated(raw: Any, cfg: RecallConfig) -> Any:
    """:func:`~cuemap_integrations.scoring.saturate` of raw session sums, vectorized."""
    np = _np()
    cap = cfg.session_saturation
    return np.where(raw > 0, cap * (1.0 - np.exp(-raw / cap)), 0.0)


def _priors(view: ArrayView, cand: Any, scorer: FastScorer, *, with_bonus: bool = False) -> Any:
    np = _np()
    if scorer.w_recency and kernel.available():
        # the kernel's prior (libm's exp2) whenever it is built, not only when recall takes the
        # kernel path: NumPy's exp2 is 1 ulp apart on ~5% of inputs on an AVX-512 CPU, and a
        # bound or a tie must be the same float whichever path computed it (cm_priors)
        cand = np.ascontiguousarray(cand, dtype=np.int64)
        prior: Any = kernel.priors(view, cand, _ranking(view, scorer, None))
    else:
        bonus = _type_bonuses(view, scorer)
        # one type bonus for all: no per-slot read, a number added to an array
        prior = bonus[0] if len(bonus) == 1 else np.array(bonus)[view.type_code[cand]]
        if scorer.w_recency:  # without the kernel
            # computed in place in one array: with a few thousand candidates each temporary array
            # cost as much as its operation (in place: x0.36 of the time, the same floats)
            recency = scorer.now_ts - view.updated[cand]
            np.maximum(recency, 0.0, out=recency)
            recency *= -scorer.per_second
            np.exp2(recency, out=recency)  # 0.5 ** x, faster
            recency *= scorer.w_recency
            recency += prior
            prior = recency
    if not isinstance(prior, np.ndarray):  # recency off: the one bonus, for each candidate
        prior = np.full(len(cand), prior)
    if scorer.w_freq:
        seqs = view.seq_at[cand]
        access = np.fromiter((scorer.access(int(s)) for s in seqs), np.float64, len(seqs))
        prior = prior - scorer.w_freq * np.log1p(access)
    if with_bonus and scorer.bonus is not None:  # asked only for the few candidates left at the end
        seqs = view.seq_at[cand]
        # by NumPy from some sixty candidates (its fixed cost, a few array calls, is the list
        # way's for about that many)
        many = scorer.bonus_array is not None and len(seqs) >= _BONUS_ARRAY_MIN
        given = scorer.bonus_array(seqs) if many else None  # type: ignore[misc]
        if given is None:
            given = np.array(scorer.bonuses(seqs.tolist()), dtype=np.float64)
        prior = prior + given
    return prior


def _walk(
    view: ArrayView, cand: Any, key: Any, k: int, admitted: Callable[[int], bool]
) -> dict[int, None]:
    """Admitted candidates best first (ties by sequence number) until the k-th and its near-ties."""
    np = _np()
    if _compiled_top(cand, key):
        return _compiled_walk(view, cand, key, k, admitted)
    block = min(len(cand), max(2 * k, k + 16))
    while True:
        cut = -math.inf
        if block < len(cand):
            cut = np.partition(key, len(key) - block)[len(key) - block]
            chosen = np.flatnonzero(key >= cut - _EPSILON)
        else:
            chosen = np.arange(len(cand))
        seqs = view.seq_at[cand[chosen]]
        order = np.lexsort((seqs, -key[chosen]))
        values = key[chosen[order]].tolist()  # Python floats and ints: read one by one
        survivors, kth, stopped = _walked_order(
            zip(seqs[order].tolist(), values, strict=True), k, admitted
        )
        if stopped or len(chosen) == len(cand) or (len(survivors) >= k and kth >= cut):
            return survivors  # nothing outside the block is within reach of the k-th
        block *= 4


def _compiled_walk(
    view: ArrayView, cand: Any, key: Any, k: int, admitted: Callable[[int], bool]
) -> dict[int, None]:
    """:func:`_walk` by the kernel: the best block in order (:func:`kernel.top`), walked until
    the k-th admitted candidate and its near-ties; a block walked to its end without that
    stop is asked again four times as large (a memory past it may tie with the last). The
    same walk of the order by ``(-key, seq)``, so the same survivors."""
    np = _np()
    cand, key = np.ascontiguousarray(cand), np.ascontiguousarray(key)
    block = max(2 * k, k + 16)
    while True:
        best = kernel.top(view, cand, key, block)
        survivors, _, stopped = _walked_order(zip(best.seqs, best.keys, strict=True), k, admitted)
        if stopped or len(best.seqs) < block or block >= len(cand):  # or every candidate walked
            return survivors
        block *= 4


def _walked_order(
    order: Iterable[tuple[int, float]], k: int, admitted: Callable[[int], bool]
) -> tuple[dict[int, None], float, bool]:
    """The admitted of ``order`` (``(seq, key)``, best first) until the k-th and its near-ties:
    those memories, the k-th's key (-inf before k), and whether the walk stopped before the
    end of ``order`` (a memory past it is out of reach of the k-th)."""
    survivors: dict[int, None] = {}
    kth = -math.inf
    for seq, value in order:
        if len(survivors) >= k and value < kth - _EPSILON:
            return survivors, kth, True
        if admitted(seq):
            survivors[seq] = None
            if len(survivors) == k:
                kth = value
    return survivors, kth, False
