"""The store's lookups from a memory's id or content to its sequence number, kept small.

Each holds one entry per memory, so a per-entry object shows in the store's memory per memory:
:class:`SeqOf` keeps ``(namespace, memory_id) -> seq`` as one dict per namespace (no key tuple
per memory, about 70 bytes), and :class:`SeqsByDigest` keeps the store's content keys
(16-byte digests) with no object per memory at all.

Example:
    >>> ids = SeqOf()
    >>> ids[("default", "m1")] = 7
    >>> ids.get(("default", "m1")), ("default", "m2") in ids, list(ids)
    (7, False, [('default', 'm1')])
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from functools import partial
from itertools import groupby, repeat
from operator import and_, itemgetter
from typing import TypeVar, overload

from .text import _C as _textc

__all__ = ["SeqOf", "SeqsByDigest"]

IdKey = tuple[str, str]  # (namespace, memory_id)
_T = TypeVar("_T")


_EMPTY, _GONE = -1, -2  # slots of SeqOf's and SeqsByDigest's tables that hold no seq


def _empty_slots(typecode: str, size: int) -> array[int]:
    """A table of ``size`` ``_EMPTY`` slots: one slot repeated by the array itself (a copy
    of memory), where ``array(typecode, repeat(_EMPTY, size))`` stores the slots one Python
    int at a time (3.4 ms for 65,536 slots, against 4 us)."""
    return array(typecode, (_EMPTY,)) * size


class _IdSlots:
    """One namespace's open-addressing table of :class:`SeqOf`: seqs, ``_EMPTY`` or ``_GONE``."""

    __slots__ = ("held", "slots", "used")

    def __init__(self) -> None:
        self.slots = _empty_slots("i", 8)  # "q" once a seq is past 2**31 - 1
        self.held = 0  # slots holding a seq
        self.used = 0  # slots not _EMPTY: probing needs an _EMPTY one


class SeqOf(MutableMapping[IdKey, int]):
    """``(namespace, memory_id) -> seq``, without a dict entry per memory.

    A dict ``memory_id -> seq`` per namespace cost 38 bytes a memory at 100,000 bench memories
    (2^18 slots of 4 bytes and entries of 16 for 100,000 keys: benchmarks/index_bytes.py).
    Here each namespace has an open-addressing table of seqs (``array("i")``, linear probing
    on ``hash(memory_id)``, at most two thirds full, half after growing), and one list by seq
    holds the memory id each seq stands for, which a probe compares: about 15 bytes a memory.
    A key given a seq that another key already stands for (never, from the store: a seq is one
    memory) or a negative one is kept in a small dict instead. Iteration is not in insertion
    order (namespace by namespace, in table order).
    """

    __slots__ = ("_count", "_ids", "_others", "_tables")

    def __init__(self) -> None:
        self._tables: dict[str, _IdSlots] = {}
        self._ids: list[str | None] = []  # by seq: the memory id it stands for, or None
        self._others: dict[IdKey, int] = {}  # keys whose seq is not theirs alone
        self._count = 0

    def _slot(self, table: _IdSlots, memory_id: str) -> int:
        """The slot of ``memory_id``'s seq in ``table``, or ``-1 - (the first free slot)``."""
        return _ID_SLOT(table.slots, self._ids, memory_id)

    @overload
    def get(self, key: IdKey, /) -> int | None: ...
    @overload
    def get(self, key: IdKey, default: int, /) -> int: ...
    @overload
    def get(self, key: IdKey, default: _T, /) -> int | _T: ...
    def get(self, key: IdKey, default: object = None, /) -> object:
        """The seq of ``key``, or ``default`` (without raising and catching a KeyError)."""
        table = self._tables.get(key[0])
        if table is not None:  # the store asks this twice per memory it adds
            at = _ID_SLOT(table.slots, self._ids, key[1])
            if at >= 0:
                return table.slots[at]
        return self._others.get(key, default) if self._others else default

    def get_many(self, keys: Sequence[IdKey]) -> list[int | None]:
        """:meth:`get` of each key (a bulk batch's ids, which planning checks are not stored):
        each namespace's run of keys probed by one C-level map, where a :meth:`get` call
        per key (and the store view's call around it) was ~1.2 us a bench memory."""
        if self._others:  # (keys whose seq is not theirs alone: rare, and get knows them)
            return list(map(self.get, keys))
        found: list[int | None] = []
        for namespace, run in groupby(keys, itemgetter(0)):
            memory_ids = [memory_id for _, memory_id in run]
            table = self._tables.get(namespace)
            if table is None:
                found += repeat(None, len(memory_ids))
                continue
            slots = table.slots
            at_of = map(partial(_ID_SLOT, slots, self._ids), memory_ids)
            found += [slots[at] if at >= 0 else None for at in at_of]
        return found

    def __getitem__(self, key: IdKey) -> int:
        seq = self.get(key)
        if seq is None:
            raise KeyError(key)
        return seq

    def __setitem__(self, key: IdKey, seq: int) -> None:
        namespace, memory_id = key
        table = self._tables.get(namespace)
        at = -1 if table is None else _ID_SLOT(table.slots, self._ids, memory_id)  # see get
        if at >= 0 or (self._others and key in self._others):  # held: replaced (rare)
            del self[key]
            table = self._tables.get(namespace)  # gone if that was its last key
            at = -1 if table is None else self._slot(table, memory_id)
        ids = self._ids
        if seq < 0 or (seq < len(ids) and ids[seq] is not None):
            self._others[key] = seq
            self._count += 1
            return
        if table is None:
            table = self._tables[namespace] = _IdSlots()
            at = self._slot(table, memory_id)
        if seq < len(ids):
            ids[seq] = memory_id
        else:  # a new seq: usually the next one
            ids.extend(repeat(None, seq - len(ids)))
            ids.append(memory_id)
        self._occupy(table, -1 - at, seq)  # the first free slot of the probe

    def _occupy(self, table: _IdSlots, free: int, seq: int) -> None:
        """Hold ``seq`` (its id written) in ``table``'s free slot ``free``."""
        try:
            table.slots[free] = seq
        except OverflowError:  # a seq past 2**31 - 1: widen, once
            table.slots = array("q", table.slots)
            table.slots[free] = seq
        table.held += 1
        table.used += 1
        self._count += 1
        if 3 * table.used >= 2 * len(table.slots):
            self._rehash(table)

    def set_many(self, namespace: str, memory_ids: Sequence[str], seqs: Sequence[int]) -> None:
        """``self[(namespace, memory_id)] = seq`` for each pair in turn (a bulk batch's new
        memories): the id list grown once and each new id's seq written straight into its free
        slot, where one :meth:`__setitem__` per memory looked up the table and checked the
        rare cases again (a replaced key, a shared seq), which still take that path."""
        ids = self._ids
        top = max(seqs, default=-1)
        if top >= len(ids):  # a new seq is None here until its id is written, as it would be
            ids.extend(repeat(None, top + 1 - len(ids)))
        if _IDS_PLACE is None or len(memory_ids) != len(seqs):
            for memory_id, seq in zip(memory_ids, seqs, strict=True):
                self._set_new(namespace, memory_id, seq)
            return
        _in_runs(
            len(seqs), partial(self._place_run, namespace, memory_ids, seqs),
            lambda i: self._set_new(namespace, memory_ids[i], seqs[i]),
        )  # fmt: skip

    def _place_run(
        self, namespace: str, memory_ids: Sequence[str], seqs: Sequence[int], start: int
    ) -> int:
        """:meth:`_set_new` of the ids from ``start`` on in one C call (``_textc.ids_place``)
        until one needs more than a free slot (or the table is full enough to rehash): where
        it stopped. A Python step per memory was ~6,700 instructions a bench memory."""
        table = self._tables.get(namespace)
        if table is None or self._others:
            return start
        room = (2 * len(table.slots) - 3 * table.used + 2) // 3  # then _occupy rehashes
        placed: int = _IDS_PLACE(table.slots, self._ids, memory_ids, seqs, start, room)  # type: ignore[misc]  # not None
        table.held += placed - start
        table.used += placed - start
        self._count += placed - start
        if 3 * table.used >= 2 * len(table.slots):
            self._rehash(table)
        return placed

    def _set_new(self, namespace: str, memory_id: str, seq: int) -> None:
        """``self[(namespace, memory_id)] = seq`` for :meth:`set_many`, ``seq`` in range of
        the id list: the id written straight into its free slot, unless held already, in a
        new table, or with a seq not this key's alone (then :meth:`__setitem__`)."""
        ids, table = self._ids, self._tables.get(namespace)
        at = 0 if table is None or self._others or seq < 0 or ids[seq] is not None else (
            _ID_SLOT(table.slots, ids, memory_id))  # fmt: skip
        if at >= 0:
            self[(namespace, memory_id)] = seq
            return
        ids[seq] = memory_id
        self._occupy(table, -1 - at, seq)  # type: ignore[arg-type]  # at < 0: a table

    def __delitem__(self, key: IdKey) -> None:
        namespace, memory_id = key
        table = self._tables.get(namespace)
        at = -1 if table is None else self._slot(table, memory_id)
        if at < 0:
            if key not in self._others:
                raise KeyError(key)
            del self._others[key]
        else:
            self._ids[table.slots[at]] = None  # type: ignore[union-attr]  # at >= 0: found
            table.slots[at] = _GONE  # type: ignore[union-attr]
            table.held -= 1  # type: ignore[union-attr]
            if not table.held:  # type: ignore[union-attr]
                del self._tables[namespace]
        self._count -= 1

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, tuple) or len(key) != 2:
            return False
        return self.get(key) is not None  # a pair

    def __iter__(self) -> Iterator[IdKey]:
        ids = self._ids
        for namespace, table in list(self._tables.items()):
            for seq in table.slots.tolist():
                if seq >= 0:
                    yield namespace, ids[seq]  # type: ignore[misc]  # held: a memory id
        yield from list(self._others)

    def __len__(self) -> int:
        return self._count

    def _rehash(self, table: _IdSlots) -> None:
        """``table`` at most half full of its seqs, without the _GONE slots: built whole
        before it replaces the old one (``CueMap.__contains__`` reads without the lock)."""
        held = [seq for seq in table.slots if seq >= 0]
        size = 8
        while size < 2 * len(held):
            size *= 2
        slots = _empty_slots(table.slots.typecode, size)
        _PLACE(slots, held, list(map(hash, map(self._ids.__getitem__, held))))
        table.slots = slots
        table.held = table.used = len(held)


class SeqsByDigest:
    """``digest -> the seqs holding it``, the earliest inserted first, for 16-byte digests
    where each seq holds one digest at a time (a memory's content key).

    A dict keyed by the digest cost about 87 bytes per memory (membreak.py 100000: the 49-byte
    ``bytes`` object and its dict entry). Here the digest is 16 bytes of a ``bytearray`` indexed
    by seq, found from an open-addressing table of seqs (``array("i")``, linear probing on the
    digest's first 8 bytes, which are uniformly random; at most half full): about 27 bytes.
    Slower than the dict (first, then add: 3.2-4.0 us per new digest against 0.4, 100k
    blake2b digests; about 1% of a memory's ingest), so kept to content keys.
    A digest held by more than one seq (a repeated text given explicit ids: rare) also has its
    seqs, in insertion order, in a small dict; the table then holds the first of them.

    Example:
        >>> same = SeqsByDigest()
        >>> same.add(b"k" * 16, 3); same.add(b"k" * 16, 5); same.add(b"j" * 16, 4)
        >>> same.first(b"k" * 16), same.seqs(b"k" * 16), same.first(b"x" * 16), len(same)
        (3, (3, 5), None, 2)
    """

    __slots__ = ("_digests", "_held", "_many", "_slots", "_used")

    def __init__(self) -> None:
        self._digests = bytearray()  # by seq: the digest it holds (16 bytes)
        self._slots = _empty_slots("i", 8)  # a seq, _EMPTY or _GONE ("q" past 2**31)
        self._held = 0  # slots holding a seq
        self._used = 0  # slots not _EMPTY (held or _GONE): probing needs an _EMPTY one
        self._many: dict[bytes, tuple[int, ...]] = {}  # digest -> its seqs, if more than one

    def _slot(self, digest: bytes) -> int:
        """The slot of ``digest``'s entry, or ``-1 - (the first free slot)`` if it has none."""
        return _DIGEST_SLOT(self._slots, self._digests, digest)

    def add(self, digest: bytes, seq: int) -> None:
        """Add ``seq`` (holding no digest) after the seqs already holding ``digest``."""
        self.add_many((digest,), (seq,))

    def add_many(self, digests: Sequence[bytes], seqs: Sequence[int]) -> None:
        """:meth:`add` each digest with its seq, in turn (a bulk batch's content keys: the
        digests' bytearray grown once for the batch, the table and the probe looked up
        without a method call per memory)."""
        top = max(seqs, default=-1)
        held = self._digests
        if 16 * top >= len(held):  # room for the largest seq and about an eighth more
            held.extend(bytes(max(16 * top + 16, len(held) * 9 // 8 + 16384) - len(held)))
        if _DIGESTS_PLACE is None or len(digests) != len(seqs):
            for digest, seq in zip(digests, seqs, strict=True):
                self._add_one(digest, seq)
            return
        _in_runs(
            len(seqs), partial(self._place_run, digests, seqs),
            lambda i: self._add_one(digests[i], seqs[i]),
        )  # fmt: skip

    def _place_run(self, digests: Sequence[bytes], seqs: Sequence[int], start: int) -> int:
        """:meth:`_add_one` of the digests from ``start`` on in one C call
        (``_textc.digests_place``) until one needs more than a free slot (or the table is
        full enough to rehash): where it stopped. A Python step per memory was ~9,200
        instructions a bench memory (of its 16-byte digest, the bytearray's slice, the
        probe and the counts)."""
        room = (len(self._slots) - 2 * self._used + 1) // 2  # then _add_one rehashes
        placed: int = _DIGESTS_PLACE(self._slots, self._digests, digests, seqs, start, room)  # type: ignore[misc]  # not None
        self._held += placed - start
        self._used += placed - start
        if 2 * self._used >= len(self._slots):
            self._rehash()
        return placed

    def _add_one(self, digest: bytes, seq: int) -> None:
        """:meth:`add` for :meth:`add_many`, the digests' bytearray long enough for ``seq``."""
        if len(digest) != 16 or seq < 0:
            raise ValueError(f"a 16-byte digest and a seq >= 0, not {digest!r}, {seq!r}")
        held = self._digests
        at = _DIGEST_SLOT(self._slots, held, digest)
        held[16 * seq : 16 * seq + 16] = digest
        if at >= 0:
            self._many[digest] = (*self.seqs(digest), seq)
            return
        try:
            self._slots[-1 - at] = seq
        except OverflowError:  # a seq past 2**31 - 1: widen, once
            self._slots = array("q", self._slots)
            self._slots[-1 - at] = seq
        self._held += 1
        self._used += 1
        if 2 * self._used >= len(self._slots):
            self._rehash()

    def discard(self, digest: bytes, seq: int) -> None:
        """Remove ``seq`` from ``digest``'s seqs (the digest goes when none is left)."""
        at = self._slot(digest)
        if at < 0:
            return
        rest = tuple(other for other in self.seqs(digest) if other != seq)
        if len(rest) <= 1:
            self._many.pop(digest, None)
        else:
            self._many[digest] = rest
        if rest:
            self._slots[at] = rest[0]
        else:
            self._slots[at] = _GONE  # _used unchanged: the slot is not _EMPTY again
            self._held -= 1

    def seqs(self, digest: bytes) -> tuple[int, ...]:
        """The seqs holding ``digest``, the earliest inserted first (none if unknown)."""
        if self._many and digest in self._many:
            return self._many[digest]
        first = self.first(digest)
        return () if first is None else (first,)

    def first(self, digest: bytes) -> int | None:
        """The earliest inserted seq holding ``digest``, or None."""
        at = self._slot(digest)
        return None if at < 0 else self._slots[at]

    def __len__(self) -> int:
        return self._held

    def _rehash(self) -> None:
        """A table at most a quarter full of its seqs (half with later ones: about 11 bytes per
        seq on average; two thirds made a first-then-add 4.9 us instead of 3.2-4.0: probing),
        without the _GONE slots; the same seqs in the same order."""
        held = [seq for seq in self._slots if seq >= 0]
        size = 8
        while size < 4 * len(held):
            size *= 2
        self._slots = _empty_slots(self._slots.typecode, size)
        self._held = self._used = len(held)
        # each digest's first 8 bytes as a little-endian number, read in C-level passes
        words, digests = array("Q"), self._digests
        words.frombytes(memoryview(digests)[: len(digests) // 8 * 8])
        if sys.byteorder == "big":
            words.byteswap()
        _PLACE(self._slots, held, list(map(words[::2].__getitem__, held)))


def _place(slots: array[int], seqs: list[int], hashes: list[int]) -> None:
    """Put each of ``seqs`` (distinct keys, ``hashes`` theirs) in the first ``_EMPTY`` slot of
    the new table ``slots`` from its hash on, without comparing any key: a table's rehash
    (the hashes found in C-level passes, where a Python expression per seq made rehashing
    about half of SeqsByDigest.add_many at 50,000 bench memories). The reference of
    ``_textc.place``."""
    mask = len(slots) - 1
    for seq, at in zip(seqs, map(and_, hashes, repeat(mask)), strict=True):
        while slots[at] != _EMPTY:
            at = (at + 1) & mask
        slots[at] = seq


def _id_slot(slots: array[int], ids: list[str | None], memory_id: str) -> int:
    """The slot of :class:`SeqOf`'s table ``slots`` holding the seq whose id in ``ids`` is
    ``memory_id``, or ``-1 - (the first free slot)``: linear probing from its hash. The
    reference of ``_textc.id_slot``, which the tables use when built (a probe in Python was
    about a third of a new id's 2.2 us)."""
    mask = len(slots) - 1
    at = hash(memory_id) & mask
    while True:
        seq = slots[at]
        if seq == _EMPTY:
            return -1 - at
        if seq >= 0 and ids[seq] == memory_id:
            return at
        at = (at + 1) & mask


def _digest_slot(slots: array[int], digests: bytearray, digest: bytes) -> int:
    """The slot of :class:`SeqsByDigest`'s table ``slots`` holding the seq whose 16 bytes in
    ``digests`` are ``digest``, or ``-1 - (the first free slot)``: linear probing from its
    first 8 bytes. The reference of ``_textc.digest_slot``."""
    mask = len(slots) - 1
    at = int.from_bytes(digest[:8], "little") & mask
    while True:
        seq = slots[at]
        if seq == _EMPTY:
            return -1 - at
        if seq >= 0 and digests[16 * seq : 16 * seq + 16] == digest:
            return at
        at = (at + 1) & mask


_ID_SLOT: Callable[[array[int], list[str | None], str], int] = (
    _id_slot if _textc is None else _textc.id_slot
)
_DIGEST_SLOT: Callable[[array[int], bytearray, bytes], int] = (
    _digest_slot if _textc is None else _textc.digest_slot
)
_PLACE: Callable[[array[int], list[int], list[int]], None] = (
    _place if _textc is None else _textc.place
)


def _in_runs(n: int, run: Callable[[int], int], one: Callable[[int], None]) -> None:
    """Keys ``0..n-1`` of a batch placed by ``run`` (from a position on, in one compiled call:
    where it stopped), each key a run stops at by ``one`` (the general step)."""
    done = 0
    while done < n:
        placed = run(done)
        if placed == done:  # one the compiled run leaves to the general step
            one(done)
            placed += 1
        done = placed


# SeqOf.set_many's and SeqsByDigest.add_many's step for a run of new keys (None: one by one)
_IDS_PLACE: Callable[..., int] | None = None if _textc is None else _textc.ids_place
_DIGESTS_PLACE: Callable[..., int] | None = None if _textc is None else _textc.digests_place
