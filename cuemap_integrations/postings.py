"""One key's postings: the memories that carry it, with a value each, in two typed arrays.

A dict ``{seq: value}`` costs about 100 bytes per posting (hash table slot, over-allocation, a
float object); a memory makes dozens of postings, so the index was most of the store's memory.
Here a posting is 4 bytes of sequence number (8 once one exceeds 2**31 - 1: SQLite's rowids
count up from 1, so that takes two billion writes) and, unless every value is 1.0 (cues and
tags), 1 byte of value while every value is a whole number 0-255 (term frequencies), widened
to 4 bytes (a C float) once one is not, and to 8 once one is not exact in 4 (a neighbour-context
weight). Sequence numbers are kept
ascending: new memories have the largest ones, so adding is an append; lookups are binary
searches.

A key held by one memory (most keys of a large store: names, numbers, rare words) keeps that
memory's sequence number and value in the object's own two slots instead of two arrays (80 bytes
less): the object switches to the :class:`_OnePosting` class on its first posting and back to
:class:`Postings` on its second, so it stays the same object wherever it is referenced and
neither form tests for the other on its read paths.

The class is a read-only :class:`~collections.abc.Mapping` ``seq -> value`` for readers, with
:meth:`put` and ``del`` for the index.

A :class:`PostingsTable` maps keys to postings. It stores a key held by one memory with value
1.0 (a cue, a tag, a word used once: most keys of a large store) as that memory's bare sequence
number, without a postings object (about 56 bytes less each), and reads it back as a one-posting
:class:`Postings` made on the spot. Writes therefore go through the table's own methods.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import chain, repeat
from typing import Any

from .text import _C as _textc

__all__ = ["Postings", "PostingsTable", "position", "share_equal_seqs", "sorted_holds"]

_SMALL_MAX = 2**31 - 1  # the largest sequence number array("i") holds

# A batch's postings make a key's arrays new ones of exactly the size (old + new: no room to
# spare, 10 bytes a memory less at 100,000 than the sixteenth more that extending keeps), but
# arrays of at least this many seqs, not shared (Postings.share_seqs), grow in place: copying
# a long array at every batch costs what the store's size does (bench scale, the flush at 1M
# took 13 us a memory against 7 at 100k), while the room kept is a sixteenth of few arrays.
GROW_IN_PLACE = 1024


def position(seqs: Sequence[int], seq: int) -> int:
    """The index of ``seq`` in the ascending ``seqs``; KeyError if it is not there."""
    at = bisect_left(seqs, seq)
    if at == len(seqs) or seqs[at] != seq:
        raise KeyError(seq)
    return at


def _py_holding(held: Sequence[int], seqs: Sequence[int]) -> list[int]:
    """Those of ``seqs`` that the ascending ``held`` holds, in their order: every search in one
    C-level pass, only the comparisons in Python (the reference of ``_textc.holding``, which
    searches in C: bisect_left made an int object per probe of an array, some forty searches
    of long term lists a recall, ~1.5% of its instructions at 100k)."""
    size = len(held)
    return [
        seq
        for seq, at in zip(seqs, map(bisect_left, repeat(held), seqs), strict=True)
        if at < size and held[at] == seq
    ]


def sorted_holds(seqs: Sequence[int], seq: object) -> bool:
    """Whether the ascending ``seqs`` hold ``seq`` (any object may be asked: no KeyError raised
    and caught, which membership tests on hot paths would pay for)."""
    try:
        at = bisect_left(seqs, seq)  # type: ignore[call-overload]
    except TypeError:  # not a number
        return False
    return at < len(seqs) and bool(seqs[at] == seq)


class Postings(Mapping[int, float]):
    """Sequence numbers (ascending) and their values; ``values`` is None while all are 1.0.

    Example:
        >>> p = Postings()
        >>> p.put(7, 1.0); p.put(3, 2.0)
        >>> list(p.pairs()), 3 in p, p[7], len(p)
        ([(3, 2.0), (7, 1.0)], True, 1.0, 2)
    """

    __slots__ = ("_seqs", "_shared", "_values")

    def __init__(self) -> None:
        self._seqs = array("i")
        self._values: array[Any] | None = None
        # whether _seqs may be another Postings' array too (see share_seqs): copied before
        # it is changed in place
        self._shared = False

    def put(self, seq: int, value: float) -> None:
        """Post ``seq`` with ``value`` (replacing its value if already posted)."""
        seqs = self._seqs
        if not seqs:
            _OnePosting.become(self, seq, value)
            return
        if self._shared:
            seqs = self._own_seqs()
        if seq > seqs[-1]:
            at = len(seqs)
            try:
                seqs.append(seq)
            except OverflowError:  # past 2**31 - 1 (only ever appended): widen, once
                seqs = self._seqs = array("q", seqs)
                seqs.append(seq)
        else:
            at = bisect_left(seqs, seq)
            if seqs[at] == seq:
                self._set_value(at, value, inserted=False)
                return
            seqs.insert(at, seq)
        self._set_value(at, value, inserted=True)

    def extend(self, seqs: Sequence[int], values: Sequence[float] | None = None) -> None:
        """Post ascending ``seqs`` with their ``values`` (None: all 1.0), as ``put`` of each in
        turn would. ``put`` makes the first postings (the one-posting form and the switch back)
        and any not above the last one posted; the rest, a batch of new memories, are appended
        with two C-level array extends instead of one Python call per posting."""
        start = 0
        while start < len(seqs) and (
            type(self) is not Postings or not self._seqs or seqs[start] <= self._seqs[-1]
        ):
            self.put(seqs[start], 1.0 if values is None else values[start])
            start += 1
        if start == len(seqs):
            return
        rest = seqs[start:]
        try:
            new_seqs = array(self._seqs.typecode, rest)
        except OverflowError:  # past 2**31 - 1: widen, once
            self._seqs = array("q", self._seqs)
            new_seqs = array("q", rest)
        more: Sequence[float] = [1] * len(rest) if values is None else values[start:]
        if values is not None and self._values is None and more.count(1.0) != len(more):
            self._values = array("B", repeat(1, len(self._seqs)))
            # put keeps the values 1.0 before the first other one implicit, as the 1-bytes
            # the array starts with: a float 1.0 among them must not widen it as it would later
            lead = next(at for at, value in enumerate(more) if value != 1.0)
            more = [*repeat(1, lead), *more[lead:]]
        more_values = None if self._values is None else _narrowest(more, self._values.typecode)
        if self._shared or len(self._seqs) < GROW_IN_PLACE or not self._grow(new_seqs, more_values):
            self._seqs, self._shared = self._seqs + new_seqs, False
            if more_values is not None:
                self._values_extend(more_values)

    def _grow(self, seqs: array[int], values: array[Any] | None) -> bool:
        """Append ``seqs`` and ``values`` to the arrays themselves (:data:`GROW_IN_PLACE`;
        values of a wider type make a new array); False, with nothing changed, when an array
        exports its buffer (a reader's view must not move)."""
        held, grown = self._values, 0  # grown: values appended in place
        if held is not None and values is not None and held.typecode == values.typecode:
            if not _appended(held, values):
                return False
            grown = len(values)
        if not _appended(self._seqs, seqs):
            if held is not None and grown:
                del held[len(held) - grown :]
            return False
        if values is not None and not grown:  # of a wider type
            self._values_extend(values)
        return True

    def _values_extend(self, more: array[Any]) -> None:
        """Append ``more`` to the values, widened first to ``more``'s type if it is wider."""
        values = self._values
        if values is None or values.typecode != more.typecode:  # wider: widen, once
            values = array(more.typecode, values or ())
        self._values = values + more  # exactly the size, as extend's seqs

    def _set_value(self, at: int, value: float, *, inserted: bool) -> None:
        values = self._values
        if values is None:
            if value == 1.0:
                return
            values = self._values = array("B", repeat(1, len(self._seqs) - inserted))
        one = _narrowest((value,), values.typecode)
        if one.typecode != values.typecode:  # not exact in this type: widen, once
            values = self._values = array(one.typecode, values)
        if inserted:
            values.insert(at, one[0])
        else:
            values[at] = one[0]

    def share_seqs(self, other: Postings) -> bool:
        """Read ``other``'s seqs array instead of this one's own when they hold the same seqs
        (a word's cue and term postings, posted by the same memories: bench scale 100k, a
        fifth of all postings); returns whether they do. Each copies the array before
        changing it in place, which ends the sharing."""
        mine, theirs = self._seqs, other._seqs
        if type(self) is not Postings or type(other) is not Postings or mine is theirs:
            return False
        if mine.typecode != theirs.typecode or len(mine) != len(theirs) or mine != theirs:
            return False
        self._seqs = theirs
        self._shared = other._shared = True
        return True

    def _own_seqs(self) -> array[int]:
        """The seqs array, copied first if it may be shared (see :meth:`share_seqs`)."""
        if self._shared:
            self._seqs, self._shared = self._seqs[:], False
        return self._seqs

    def _find(self, seq: int) -> int:
        seqs = self._seqs
        at = bisect_left(seqs, seq)
        return at if at < len(seqs) and seqs[at] == seq else -1

    def __delitem__(self, seq: int) -> None:
        at = self._find(seq)
        if at < 0:
            raise KeyError(seq)
        if self._shared:
            self._own_seqs()
        del self._seqs[at]
        if self._values is not None:
            del self._values[at]

    def __getitem__(self, seq: int) -> float:
        seqs = self._seqs  # inlined search: the scorer asks this per candidate
        at = bisect_left(seqs, seq)
        if at == len(seqs) or seqs[at] != seq:
            raise KeyError(seq)
        return 1.0 if self._values is None else self._values[at]

    def __contains__(self, seq: object) -> bool:
        return sorted_holds(self._seqs, seq)

    def __iter__(self) -> Iterator[int]:
        return iter(self._seqs)

    def among(self, seqs: Iterable[int]) -> list[tuple[int, float]]:
        """``(seq, value)`` of those of ``seqs`` held here, in their order: one call for the
        few memories pruning keeps, instead of a test and a lookup for each."""
        held, values, size = self._seqs, self._values, len(self._seqs)
        out = []
        for seq in seqs:
            at = bisect_left(held, seq)
            if at < size and held[at] == seq:
                out.append((seq, 1.0 if values is None else values[at]))
        return out

    def holding(self, seqs: Sequence[int]) -> list[int]:
        """Those of ``seqs`` held here, in their order (:meth:`among` without the values): by
        ``_textc.holding`` when built (each search in C), else :func:`_py_holding`."""
        found = None if _textc is None else _textc.holding(self._seqs, seqs)
        return _py_holding(self._seqs, seqs) if found is None else found

    def __len__(self) -> int:
        return len(self._seqs)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Postings):  # either form
            return list(self) == list(other) and list(self.weights()) == list(other.weights())
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]  # mutable, like a dict

    def __repr__(self) -> str:
        return f"Postings({dict(self.pairs())!r})"

    def pairs(self) -> Iterator[tuple[int, float]]:
        """``(seq, value)`` in ascending ``seq`` order (``items()`` without a search per item)."""
        return zip(self._seqs, self.weights(), strict=True)

    def weights(self) -> Iterator[float]:
        """The values in ascending ``seq`` order."""
        return iter(self._values) if self._values is not None else repeat(1.0, len(self._seqs))

    def buffers(self) -> tuple[array[int], array[float] | None]:
        """The raw arrays (values None when all are 1.0), for a zero-copy NumPy view."""
        return self._seqs, self._values


def _appended(held: array[Any], more: array[Any]) -> bool:
    """``held += more`` in place (a sixteenth more room kept); False, with nothing changed,
    when ``held`` exports its buffer (it cannot be resized then)."""
    try:
        held.extend(more)
    except BufferError:
        return False
    return True


def _narrowest(values: Sequence[float], typecode: str = "B") -> array[Any]:
    """``values`` as an array of the narrowest type, from ``typecode`` on, that holds each of
    them exactly: ``B`` (whole numbers 0-255 given as ``int``: term counts, 1 byte), ``f`` (4
    bytes), ``d``."""
    if typecode == "B":
        try:
            return array("B", values)  # ints, or it raises
        except (TypeError, OverflowError):  # a float, or a count past 255
            typecode = "f"
    if typecode == "f":
        packed = array("f", values)
        if packed.tolist() == list(map(float, values)):
            return packed
    return array("d", values)


class _OnePosting(Postings):
    """A :class:`Postings` holding one posting: ``_seqs`` is its sequence number and ``_values``
    its value (None for 1.0). Same slots as :class:`Postings`, so an object can switch class."""

    __slots__ = ()

    @classmethod
    def of(cls, seq: int) -> Postings:
        """A new :class:`Postings` holding ``seq`` with value 1.0."""
        postings = Postings.__new__(cls)
        postings._seqs, postings._values = seq, None  # type: ignore[assignment]  # see become
        postings._shared = False
        return postings

    @staticmethod
    def become(postings: Postings, seq: int, value: float) -> None:
        """Make the empty ``postings`` hold ``seq`` with ``value``, in this form."""
        postings.__class__ = _OnePosting
        postings._seqs = seq  # type: ignore[assignment]  # this form's meaning of the slot
        postings._values = None if value == 1.0 else value  # type: ignore[assignment]

    def _one(self) -> tuple[int, float]:
        held: Any = self._values
        return self._seqs, 1.0 if held is None else held  # type: ignore[return-value]

    def _widen(self, seqs: array[int], values: array[float] | None) -> None:
        """Switch back to the array form, holding ``seqs`` and ``values``."""
        self.__class__ = Postings  # type: ignore[assignment]  # back to the array form
        self._seqs, self._values, self._shared = seqs, values, False

    def put(self, seq: int, value: float) -> None:
        """Post ``seq`` with ``value``: a second posting switches to the array form."""
        own, held = self._one()
        if seq == own:
            self._values = None if value == 1.0 else value  # type: ignore[assignment]
            return
        self._widen(array("q" if own > _SMALL_MAX else "i", (own,)), None)
        if held != 1.0:
            self._values = _narrowest((held,))
        self.put(seq, value)

    def __delitem__(self, seq: int) -> None:
        if seq != self._one()[0]:
            raise KeyError(seq)
        self._widen(array("i"), None)

    def __getitem__(self, seq: int) -> float:
        own, value = self._one()
        if seq != own:
            raise KeyError(seq)
        return value

    def __contains__(self, seq: object) -> bool:
        return bool(seq == self._one()[0])

    def __iter__(self) -> Iterator[int]:
        return iter((self._one()[0],))

    def among(self, seqs: Iterable[int]) -> list[tuple[int, float]]:
        """``[(seq, value)]`` when ``seqs`` holds the one seq, else empty."""
        own = self._one()
        return [own] if own[0] in seqs else []

    def holding(self, seqs: Sequence[int]) -> list[int]:
        """``[seq]`` when ``seqs`` holds the one seq, else empty."""
        own: int = self._seqs  # type: ignore[assignment]  # this form's meaning of the slot
        return [own] if own in seqs else []

    def __len__(self) -> int:
        return 1

    def pairs(self) -> Iterator[tuple[int, float]]:
        """The one ``(seq, value)``."""
        return iter((self._one(),))

    def weights(self) -> Iterator[float]:
        """The one value."""
        return iter((self._one()[1],))

    def buffers(self) -> tuple[array[int], array[float] | None]:
        """Arrays made for the one posting (values None when it is 1.0)."""
        own, value = self._one()
        seqs = array("q" if own > _SMALL_MAX else "i", (own,))
        return seqs, None if value == 1.0 else array("d", (value,))


def share_equal_seqs(held: Iterable[Postings | int]) -> None:
    """Let those of ``held`` (what tables store for keys: bare seqs are skipped) that hold the
    same seqs read one array (:meth:`Postings.share_seqs`). A batch's flush asks this of the
    postings it extended: a word's cue and term postings are mostly posted by the same
    memories, and some other keys' too (a word and the two-word cue it always starts); bench
    scale 100k, index bytes per memory 636.5 -> 618.2 for a key's cue and term postings, and
    about 11 more for the others. Candidates are found by their length and three seqs, then
    compared whole."""
    first: dict[tuple[Any, ...], Postings] = {}
    for postings in held:
        if type(postings) is Postings and postings._seqs:
            seqs = postings._seqs
            mark = (seqs.typecode, len(seqs), seqs[0], seqs[len(seqs) // 2], seqs[-1])
            other = first.setdefault(mark, postings)
            if other is not postings:
                postings.share_seqs(other)


def _as_postings(held: Postings | int) -> Postings:
    """What a :class:`PostingsTable` stores for a key, as a :class:`Postings`. A table holds a
    bare seq or a Postings: the int is tested for, as ``isinstance`` of the Mapping ABC asks
    ``ABCMeta.__instancecheck__`` in Python for any other type (0.36 us against 0.06, where a
    cold recall reads some forty keys)."""
    return _OnePosting.of(held) if isinstance(held, int) else held


class PostingsTable(Mapping[str, Postings]):
    """``key -> Postings``; a key held once with value 1.0 is stored as the bare ``seq``.

    Two tables made by :meth:`pair` (a namespace's cues and terms) share one more dict: a key
    each of them holds once, with value 1.0, for the same memory is kept there once instead of
    in both tables' own dicts. That is a word used by one memory only (a name, a number, a
    made-up word: most keys of a large store) being both its cue and its term: a dict entry
    and its slots cost 16-44 bytes per key per table (bench scale 100k: each table's dict
    2^18 slots, 3.8 MB, for about 100,000 keys of which about 80,000 are such keys).

    Example:
        >>> table = PostingsTable()
        >>> table.put("port", 7, 1.0); table.put("lake", 3, 2.0)
        >>> table.held("port"), table["port"], "port" in table, len(table)
        (7, Postings({7: 1.0}), True, 2)
        >>> table.put("port", 9, 1.0); table.drop("port", 7); table.drop("port", 9)
        >>> sorted(table)
        ['lake']
    """

    __slots__ = ("_both", "_held", "_twin")

    def __init__(self) -> None:
        self._held: dict[str, Postings | int] = {}
        # key -> seq held once with value 1.0 by this table and its twin (see pair): in
        # neither's _held then; empty and never filled for a table without a twin
        self._both: dict[str, int] = {}
        self._twin: PostingsTable | None = None

    @classmethod
    def pair(cls) -> tuple[PostingsTable, PostingsTable]:
        """Two tables that keep the keys each holds once for the same seq in one shared dict."""
        first, second = cls(), cls()
        second._both = first._both
        first._twin, second._twin = second, first
        return first, second

    def dicts(self) -> tuple[dict[str, Any], dict[str, int], dict[str, Any] | None, Any]:
        """Its own dict, the shared one, its twin's own dict (None without a twin) and its
        :meth:`extend`: what ``_textc.flush_postings`` posts a batch into, as :meth:`extend`
        of each key would."""
        twin = None if self._twin is None else self._twin._held
        return self._held, self._both, twin, self.extend

    def held(self, key: str) -> Postings | int:
        """What the table stores for ``key`` (a bare ``seq`` or a :class:`Postings`)."""
        held = self._held.get(key)
        return self._both[key] if held is None else held

    def __getitem__(self, key: str) -> Postings:
        held = self._held.get(key)
        return _as_postings(self._both[key] if held is None else held)

    def get(self, key: str, default: Any = None) -> Any:
        """``self[key]``, or ``default`` if absent (one probe, two for a key held by one
        memory: readers ask this per query key)."""
        held = self._held.get(key)
        if held is None:
            held = self._both.get(key)
            if held is None:
                return default
        return _as_postings(held)

    def __contains__(self, key: object) -> bool:
        return key in self._held or key in self._both

    def holding(self, key: str, seqs: Sequence[int]) -> list[int]:
        """Those of ``seqs`` posted under ``key``, in their order (none when ``key`` is not
        held; no postings object made for a bare seq): what explaining a recall's hits asks
        of each query term."""
        held = self._held.get(key)
        if held is None:
            held = self._both.get(key)
            if held is None:
                return []
        if isinstance(held, int):  # a bare seq (not the ABC's check: see _as_postings)
            return [held] if held in seqs else []
        return held.holding(seqs)

    def holds(self, key: str, seq: int) -> bool:
        """True when ``seq`` is posted under ``key`` (no postings object made for a bare seq)."""
        held = self._held.get(key)
        if held is None:
            return self._both.get(key) == seq
        return held == seq if isinstance(held, int) else seq in held

    def __iter__(self) -> Iterator[str]:
        """The keys: those of this table's own dict in the order they were first posted, then
        the shared ones (in the order they became shared)."""
        return chain(self._held, self._both) if self._both else iter(self._held)

    def __len__(self) -> int:
        return len(self._held) + len(self._both)

    def _bucket(self, key: str) -> Postings:
        """The stored :class:`Postings` of ``key``, made (from a bare ``seq``) if need be."""
        held = self._held.get(key)
        if type(held) is int or held is None:
            bucket = Postings() if held is None else _OnePosting.of(held)
            self._held[key] = bucket
            return bucket
        return held  # type: ignore[return-value]

    def put_shared(self, key: str, seq: int) -> bool:
        """Post ``seq`` with value 1.0 under ``key`` in this table and its twin at once, as a
        ``put`` in each would, if neither holds ``key`` yet (a batch's flush posts new keys
        so); returns whether it did."""
        twin = self._twin
        if twin is None or key in self._held or key in self._both or key in twin._held:
            return False
        self._both[key] = seq
        return True

    def _unshare(self, key: str) -> None:
        """Move ``key`` from the shared dict back to this table's and its twin's own dicts, if
        it is there (before either changes its postings)."""
        seq = self._both.pop(key, None)
        if seq is not None:
            self._held[key] = seq
            self._twin._held[key] = seq  # type: ignore[union-attr]  # shared: paired

    def _share(self, key: str, seq: int) -> None:
        """Move ``key``, held here as the bare ``seq``, to the shared dict if the twin holds it
        as the same bare seq."""
        twin = self._twin
        if twin is not None:
            other = twin._held.get(key)
            if type(other) is int and other == seq:
                del self._held[key], twin._held[key]
                self._both[key] = seq

    def put(self, key: str, seq: int, value: float) -> None:
        """Post ``seq`` under ``key`` with ``value`` (replacing its value if already posted)."""
        if key in self._both:
            self._unshare(key)
        held = self._held.get(key)
        if held is None and value == 1.0:
            self._held[key] = seq
            if self._twin is not None:
                self._share(key, seq)
        elif held != seq or value != 1.0:
            bucket = self._bucket(key)
            bucket.put(seq, value)
            if len(bucket) == 1:  # its one value may be back to 1.0 (in either form)
                self._compact(key, bucket)
        else:
            self._share(key, seq)  # unshared above: shared again

    def extend(self, key: str, seqs: Sequence[int], values: Sequence[float] | None) -> None:
        """Post ascending ``seqs`` under ``key``, as :meth:`Postings.extend`."""
        if len(seqs) == 1 and key not in self._held and key not in self._both:
            self.put(key, seqs[0], 1.0 if values is None else values[0])
        else:
            if key in self._both:
                self._unshare(key)
            self._bucket(key).extend(seqs, values)

    def drop(self, key: str, seq: int) -> None:
        """Remove the posting of ``seq`` under ``key`` (and ``key`` once it has none)."""
        if key in self._both:
            self._unshare(key)
        held = self._held[key]
        if type(held) is int:
            if held != seq:
                self._share(key, held)  # unshared above: shared again
                raise KeyError(seq)
            del self._held[key]
            return
        del held[seq]  # type: ignore[union-attr]
        if not held:
            del self._held[key]
        else:
            self._compact(key, held)  # type: ignore[arg-type]

    def _compact(self, key: str, bucket: Postings) -> None:
        """Store ``key``'s ``bucket`` as a bare ``seq`` if it is one posting of value 1.0 (in
        the shared dict if the twin holds the same)."""
        if len(bucket) == 1:
            ((seq, value),) = bucket.pairs()
            if value == 1.0:
                self._held[key] = seq
                self._share(key, seq)
