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
from itertools import chain

from .text import CueLexicon, is_cjk, normalize, query_units, stem, word_unit

__all__ = ["AliasTable"]

_CONCEPT_MEMO = 1 << 16  # cues whose concept is remembered (a vocabulary's worth)


class AliasTable:
    """Equivalence groups of normalized terms, with longest-match lookup in free text."""

    def __init__(self, groups: Iterable[Iterable[str]] = ()) -> None:
        self._groups: list[tuple[str, ...]] = []
        self._group_of: dict[str, list[int]] = {}
        self._lexicon = CueLexicon()
        self._probe_cache: list[tuple[str, str | None, str | None]] | None = None
        self._firsts: frozenset[str] = frozenset()  # set with _probe_cache (see _summarize)
        self._at_first: dict[str, list[int]] = {}  # likewise
        self._read: frozenset[str] = frozenset()  # likewise (see stems_read)
        self._needs: dict[str, frozenset[str]] = {}
        self._has_cjk = self._always = False
        self._concepts: dict[str, tuple[object, tuple[str, ...]]] = {}  # see concept()
        for group in groups:
            self.add_group(group)

    def add_group(self, group: Iterable[str]) -> None:
        """Declare the terms of ``group`` equivalent (normalized; duplicates dropped)."""
        terms = tuple(dict.fromkeys(normalize(t) for t in group if normalize(t)))
        index = len(self._groups)
        self._probe_cache = None
        self._concepts.clear()
        self._groups.append(terms)
        for term in terms:
            self._group_of.setdefault(term, []).append(index)
            self._lexicon.add(term)

    def __len__(self) -> int:
        return len(self._groups)

    def find_in(self, normalized: str, stems: set[str]) -> list[str]:
        """:meth:`find` for a long text already normalized, given its Latin word stems.

        One-word Latin terms are a set lookup, CJK terms a substring test, and Latin phrases are
        compared as stemmed unit sequences only when their first word occurs, so indexing a
        memory does not scan all of it with the lexicon. Same terms as :meth:`find`."""
        found: list[str] = []
        units: str | None = None
        cjk_possible = not normalized.isascii()  # a CJK term is never inside ASCII text
        probes = self._probes()
        if not self._always and not (cjk_possible and self._has_cjk):
            firsts = stems & self._firsts
            if not firsts:
                return found  # most texts: no term's word, nor a phrase's first word, occurs
            # only the probes a stem of the text starts can hit (each needs its first word),
            # in their order: a loop over all ~60 default probes was ~18,000 instructions a
            # memory holding "time" or "back" (a third of the bench memories)
            at = self._at_first
            probes = [probes[i] for i in sorted(chain.from_iterable(map(at.__getitem__, firsts)))]
        for term, key, phrase in probes:
            if key is not None:
                hit = key in stems
            elif phrase is None:
                hit = cjk_possible and term in normalized
            elif self._needs[phrase] <= stems:
                if units is None:
                    units = " " + " ".join(query_units(normalized)) + " "
                hit = f" {phrase} " in units
            else:
                hit = False
            if hit:
                found.append(term)
        return found

    def stems_read(self) -> frozenset[str]:
        """The stems :meth:`find_in` reads: the one-word terms' and each phrase's words'.
        ``find_in(text, stems & stems_read())`` is ``find_in(text, stems)``, so ingest derives
        a memory's stems among these alone (:func:`~cuemap_integrations.text.derive_cues_and_keys`'s
        ``vocab``)."""
        self._probes()
        return self._read

    def _probes(self) -> list[tuple[str, str | None, str | None]]:
        """Per term: its stem if it is one Latin word; else its stemmed unit sequence if it is
        a Latin phrase; else (CJK) neither, and it is matched as a substring."""
        if self._probe_cache is None:
            probes: list[tuple[str, str | None, str | None]] = []
            for group in self._groups:
                for term in group:
                    units = query_units(term)
                    if any(is_cjk(ch) for ch in term):
                        probes.append((term, None, None))
                    elif len(units) == 1 and not units[0].startswith("\x00"):
                        probes.append((term, units[0], None))
                    else:
                        probes.append((term, None, " ".join(units)))
            self._probe_cache = list(dict.fromkeys(probes))
            self._summarize(self._probe_cache)
        return self._probe_cache

    def _summarize(self, probes: list[tuple[str, str | None, str | None]]) -> None:
        """What lets :meth:`find_in` rule a text out at once: the stems that start a Latin term
        (``_firsts``), and whether some term is CJK or a phrase starting with a stop word (both
        are tested whatever the stems are)."""
        firsts = [key for _, key, _ in probes if key is not None]
        firsts += [phrase.split()[0] for _, _, phrase in probes if phrase is not None]
        self._firsts = frozenset(firsts)
        self._at_first = {}  # a first word -> the positions of the probes it starts
        for position, (_, key, phrase) in enumerate(probes):
            first = key if phrase is None else phrase.split()[0]
            if first is not None:  # a CJK term: none
                self._at_first.setdefault(first, []).append(position)
        # A phrase's units occur in a text only if each of its words does (a stop word is
        # marked in the units, but its stem is among the text's stems all the same): a
        # necessary test that spares the unit scan of most texts with "time" or "back" in them.
        self._needs = {
            phrase: frozenset(stem(u[1:]) if u.startswith("\x00") else u for u in phrase.split())
            for _, _, phrase in probes
            if phrase is not None
        }
        self._read = self._firsts.union(*self._needs.values())
        self._has_cjk = any(key is None and phrase is None for _, key, phrase in probes)
        self._always = any(first.startswith("\x00") for first in firsts)

    def find(self, text: str) -> list[str]:
        """The alias terms that occur in ``text`` (word-aligned for Latin, anywhere for CJK)."""
        return self._lexicon.match(text)

    def group_of(self, term: str) -> int | None:
        """The index of the first group containing ``term``, or None."""
        groups = self._group_of.get(term)
        return groups[0] if groups else None

    def concept(self, cue: str) -> tuple[object, tuple[str, ...]]:
        """The key of the concept ``cue`` belongs to (its alias group, else its stem units) and
        the concept's terms. Memoized: every pass of every recall asks it for each carried cue;
        a change of groups starts the memo over."""
        known = self._concepts.get(cue)
        if known is None:
            if len(self._concepts) >= _CONCEPT_MEMO:  # many distinct cues: start over
                self._concepts.clear()
            group = self.group_of(cue)
            known = (
                (("alias", group), self._groups[group])
                if group is not None
                else (_stem_key(cue), (cue,))
            )
            self._concepts[cue] = known
        return known

    def concepts(self, cues: list[str]) -> list[tuple[object, tuple[str, ...]]]:
        """:meth:`concept` of each of ``cues``: the memo read in one comprehension, so the
        fifty cues a feedback pass carries cost no method call each when known."""
        get, concept = self._concepts.get, self.concept
        # a memo entry is a pair (never false): only a cue not in the memo costs a call; a
        # recall's new cues are few among its fifty (computing all again when one was new was
        # ~2% of a recall of new queries at 10k memories)
        return [get(cue) or concept(cue) for cue in cues]

    def members(self, group: int) -> tuple[str, ...]:
        """The terms of group number ``group``."""
        return self._groups[group]

    def terms(self) -> frozenset[str]:
        """Every term of a group: ``holds_any(terms)`` is ``not terms().isdisjoint(terms)``."""
        return frozenset(self._group_of)

    def holds_any(self, terms: Iterable[str]) -> bool:
        """Whether some of ``terms`` is a term of a group (else :meth:`expand` adds nothing)."""
        return not self._group_of.keys().isdisjoint(terms)

    def expand(self, terms: Iterable[str]) -> list[str]:
        """``terms`` followed by every equivalent term, in a stable order, without duplicates."""
        out = dict.fromkeys(terms)
        if not self.holds_any(out):  # most cue lists: no alias term at all
            return list(out)
        for term in list(out):
            for index in self._group_of.get(term, ()):
                out.update(dict.fromkeys(self._groups[index]))
        return list(out)


def _stem_key(cue: str) -> tuple[str, ...]:
    """The concept key of a cue of no alias group: ``("stem", *query_units(cue))``. A plain
    word's one unit is found directly (:func:`word_unit`): a cold recall's feedback pass
    carries ~20 cues never seen before, nearly all plain words, each of which took the
    general path's normalize, token scan and two memo entries."""
    unit = word_unit(cue)
    return ("stem", unit) if unit is not None else ("stem", *query_units(cue))
