"""One key's postings: the memories that carry it, with a value each, in two typed arrays.

A dict ``{seq: value}`` costs about 100 bytes per posting (hash table slot, over-allocation, a
float object); a memory makes dozens of postings, so the index was most of the store's memory.
Here a posting is 8 bytes of sequence number and, unless every value is 1.0 (cues and tags),
8 bytes of value. Sequence numbers are kept ascending: new memories have the largest ones, so
adding is an append; lookups are binary searches. The class is a read-only
:class:`~collections.abc.Mapping` ``seq -> value`` for readers, with :meth:`put` and ``del`` for
the index.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from itertools import repeat

__all__ = ["Postings"]


class Postings(Mapping[int, float]):
    """Sequence numbers (ascending) and their values; ``values`` is None while all are 1.0.

    Example:
        >>> p = Postings()
        >>> p.put(7, 1.0); p.put(3, 2.0)
        >>> list(p.pairs()), 3 in p, p[7], len(p)
        ([(3, 2.0), (7, 1.0)], True, 1.0, 2)
    """

    __slots__ = ("_seqs", "_values")

    def __init__(self) -> None:
        self._seqs = array("q")
        self._values: array[float] | None = None

    def put(self, seq: int, value: float) -> None:
        """Post ``seq`` with ``value`` (replacing its value if already posted)."""
        seqs = self._seqs
        if not seqs or seq > seqs[-1]:
            at = len(seqs)
            seqs.append(seq)
        else:
            at = bisect_left(seqs, seq)
            if at < len(seqs) and seqs[at] == seq:
                self._set_value(at, value, inserted=False)
                return
            seqs.insert(at, seq)
        self._set_value(at, value, inserted=True)

    def extend(self, seqs: Sequence[int], values: Sequence[float] | None = None) -> None:
        """Post ascending ``seqs`` with their ``values`` (None: all 1.0), as ``put`` of each in
        turn would: when they all come after the last posted one (a batch of new memories),
        that is two C-level appends instead of one Python call per posting."""
        if self._seqs and seqs and seqs[0] <= self._seqs[-1]:
            for seq, value in zip(seqs, values or repeat(1.0, len(seqs)), strict=True):
                self.put(seq, value)
            return
        if values is not None and self._values is None and values.count(1.0) != len(values):
            self._values = array("d", repeat(1.0, len(self._seqs)))
        self._seqs.extend(seqs)
        if self._values is not None:
            self._values.extend(values or repeat(1.0, len(seqs)))

    def _set_value(self, at: int, value: float, *, inserted: bool) -> None:
        values = self._values
        if values is None:
            if value == 1.0:
                return
            values = self._values = array("d", repeat(1.0, len(self._seqs) - inserted))
        if inserted:
            values.insert(at, value)
        else:
            values[at] = value

    def _find(self, seq: int) -> int:
        seqs = self._seqs
        at = bisect_left(seqs, seq)
        return at if at < len(seqs) and seqs[at] == seq else -1

    def __delitem__(self, seq: int) -> None:
        at = self._find(seq)
        if at < 0:
            raise KeyError(seq)
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
        seqs = self._seqs
        try:
            at = bisect_left(seqs, seq)  # type: ignore[call-overload]  # any object may be asked
        except TypeError:  # not a number
            return False
        return at < len(seqs) and bool(seqs[at] == seq)

    def __iter__(self) -> Iterator[int]:
        return iter(self._seqs)

    def __len__(self) -> int:
        return len(self._seqs)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Postings):
            return self._seqs == other._seqs and list(self.weights()) == list(other.weights())
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
