"""Alias groups: terms that mean the same cue (``超时`` and ``timeout``, ``db`` and ``database``).

Applied on write (a memory whose text mentions any member of a group is indexed under every member)
and on read (a query mentioning a member asks for every member), so a table changed after memories
were stored still works for queries, and a memory stored before works after a reopen.

Example:
    >>> table = AliasTable([("timeout", "超时"), ("db", "database")])
    >>> table.find("上次订单超时了")
    ['超时']
    >>> table.expand(["超时"])
    ['超时', 'timeout']
"""

from __future__ import annotations

from collections.abc import Iterable

from .text import CueLexicon, normalize

__all__ = ["AliasTable"]


class AliasTable:
    """Equivalence groups of normalized terms, with longest-match lookup in free text."""

    def __init__(self, groups: Iterable[Iterable[str]] = ()) -> None:
        self._groups: list[tuple[str, ...]] = []
        self._group_of: dict[str, list[int]] = {}
        self._lexicon = CueLexicon()
        for group in groups:
            self.add_group(group)

    def add_group(self, group: Iterable[str]) -> None:
        """Declare the terms of ``group`` equivalent (normalized; duplicates dropped)."""
        terms = tuple(dict.fromkeys(normalize(t) for t in group if normalize(t)))
        index = len(self._groups)
        self._groups.append(terms)
        for term in terms:
            self._group_of.setdefault(term, []).append(index)
            self._lexicon.add(term)

    def __len__(self) -> int:
        return len(self._groups)

    def find(self, text: str) -> list[str]:
        """The alias terms that occur in ``text`` (word-aligned for Latin, anywhere for CJK)."""
        return self._lexicon.match(text)

    def group_of(self, term: str) -> int | None:
        """The index of the first group containing ``term``, or None."""
        groups = self._group_of.get(term)
        return groups[0] if groups else None

    def members(self, group: int) -> tuple[str, ...]:
        """The terms of group number ``group``."""
        return self._groups[group]

    def expand(self, terms: Iterable[str]) -> list[str]:
        """``terms`` followed by every equivalent term, in a stable order, without duplicates."""
        out = dict.fromkeys(terms)
        for term in list(out):
            for index in self._group_of.get(term, ()):
                out.update(dict.fromkeys(self._groups[index]))
        return list(out)
