"""The store's lookups from a memory's id or content to its sequence number, kept small.

Each holds one entry per memory, so a per-entry object shows in the store's memory per memory:
:class:`SeqOf` keeps ``(namespace, memory_id) -> seq`` as one dict per namespace (no key tuple
per memory, about 70 bytes), and :class:`SeqsByKey` keeps a key's one sequence number as the
number itself (a one-element tuple would cost about 60 bytes).

Example:
    >>> ids = SeqOf()
    >>> ids[("default", "m1")] = 7
    >>> ids.get(("default", "m1")), ("default", "m2") in ids, list(ids)
    (7, False, [('default', 'm1')])
    >>> same = SeqsByKey()
    >>> same.add(b"k", 3); same.add(b"k", 5); same.first(b"k"), same.seqs(b"k")
    (3, (3, 5))
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, MutableMapping
from typing import TypeVar, overload

__all__ = ["SeqOf", "SeqsByKey"]

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


class SeqsByKey:
    """``key -> the seqs holding it``, in insertion order; a single seq is kept as an int."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held: dict[Hashable, int | tuple[int, ...]] = {}

    def add(self, key: Hashable, seq: int) -> None:
        """Add ``seq`` after the seqs already holding ``key``."""
        held = self._held.get(key)
        self._held[key] = seq if held is None else (*self.seqs(key), seq)

    def discard(self, key: Hashable, seq: int) -> None:
        """Remove ``seq`` from ``key``'s seqs (the key goes when none is left)."""
        rest = tuple(other for other in self.seqs(key) if other != seq)
        if not rest:
            self._held.pop(key, None)
        else:
            self._held[key] = rest[0] if len(rest) == 1 else rest

    def seqs(self, key: Hashable) -> tuple[int, ...]:
        """The seqs holding ``key``, oldest first (none if unknown)."""
        held = self._held.get(key)
        if held is None:
            return ()
        return (held,) if isinstance(held, int) else held

    def first(self, key: Hashable) -> int | None:
        """The oldest seq holding ``key``, or None."""
        held = self._held.get(key)
        return held if held is None or isinstance(held, int) else held[0]

    def __len__(self) -> int:
        return len(self._held)
