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

from array import array
from collections.abc import Iterator, MutableMapping
from itertools import repeat
from typing import TypeVar, overload

__all__ = ["SeqOf", "SeqsByDigest"]

IdKey = tuple[str, str]  # (namespace, memory_id)
_T = TypeVar("_T")


class SeqOf(MutableMapping[IdKey, int]):
    """``(namespace, memory_id) -> seq``, stored as ``namespace -> memory_id -> seq``."""

    __slots__ = ("_by_namespace", "_count")

    def __init__(self) -> None:
        self._by_namespace: dict[str, dict[str, int]] = {}
        self._count = 0

    @overload
    def get(self, key: IdKey, /) -> int | None: ...
    @overload
    def get(self, key: IdKey, default: int, /) -> int: ...
    @overload
    def get(self, key: IdKey, default: _T, /) -> int | _T: ...
    def get(self, key: IdKey, default: object = None, /) -> object:
        """The seq of ``key``, or ``default`` (without raising and catching a KeyError)."""
        ids = self._by_namespace.get(key[0])
        return default if ids is None else ids.get(key[1], default)

    def __getitem__(self, key: IdKey) -> int:
        namespace, memory_id = key
        try:
            return self._by_namespace[namespace][memory_id]
        except KeyError:
            raise KeyError(key) from None

    def __setitem__(self, key: IdKey, seq: int) -> None:
        namespace, memory_id = key
        ids = self._by_namespace.get(namespace)
        if ids is None:
            ids = self._by_namespace[namespace] = {}
        self._count += memory_id not in ids
        ids[memory_id] = seq

    def __delitem__(self, key: IdKey) -> None:
        namespace, memory_id = key
        ids = self._by_namespace.get(namespace)
        if ids is None or memory_id not in ids:
            raise KeyError(key)
        del ids[memory_id]
        self._count -= 1
        if not ids:
            del self._by_namespace[namespace]

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, tuple) or len(key) != 2:
            return False
        ids = self._by_namespace.get(key[0])
        return ids is not None and key[1] in ids

    def __iter__(self) -> Iterator[IdKey]:
        for namespace, ids in self._by_namespace.items():
            for memory_id in ids:
                yield namespace, memory_id

    def __len__(self) -> int:
        return self._count


_EMPTY, _GONE = -1, -2  # slots of SeqsByDigest._slots that hold no seq


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
        self._slots = array("i", repeat(_EMPTY, 8))  # a seq, _EMPTY or _GONE ("q" past 2**31)
        self._held = 0  # slots holding a seq
        self._used = 0  # slots not _EMPTY (held or _GONE): probing needs an _EMPTY one
        self._many: dict[bytes, tuple[int, ...]] = {}  # digest -> its seqs, if more than one

    def _slot(self, digest: bytes) -> int:
        """The slot of ``digest``'s entry, or ``-1 - (the first free slot)`` if it has none."""
        slots, digests = self._slots, self._digests
        mask = len(slots) - 1
        at = int.from_bytes(digest[:8], "little") & mask
        while True:
            seq = slots[at]
            if seq == _EMPTY:
                return -1 - at
            if seq >= 0 and digests[16 * seq : 16 * seq + 16] == digest:
                return at
            at = (at + 1) & mask

    def add(self, digest: bytes, seq: int) -> None:
        """Add ``seq`` (holding no digest) after the seqs already holding ``digest``."""
        if len(digest) != 16 or seq < 0:
            raise ValueError(f"a 16-byte digest and a seq >= 0, not {digest!r}, {seq!r}")
        at = self._slot(digest)
        digests = self._digests
        if 16 * seq >= len(digests):  # room for seq and about an eighth more
            digests.extend(bytes(max(16 * seq + 16, len(digests) * 9 // 8 + 16384) - len(digests)))
        digests[16 * seq : 16 * seq + 16] = digest
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
        self._slots = array(self._slots.typecode, repeat(_EMPTY, size))
        self._held = self._used = len(held)
        slots, digests, mask = self._slots, self._digests, size - 1
        for seq in held:  # distinct digests: the first _EMPTY slot, without comparing any
            at = int.from_bytes(digests[16 * seq : 16 * seq + 8], "little") & mask
            while slots[at] != _EMPTY:
                at = (at + 1) & mask
            slots[at] = seq
