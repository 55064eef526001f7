"""The in-memory inverted index of one namespace: cue, tag and term postings.

Postings map a key to the sequence numbers of the memories that carry it (dicts, so iteration is
in insertion order). What was indexed for each memory is kept, so removing a memory removes every
posting, lexicon entry and statistic it contributed: nothing refers to a deleted memory afterwards.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from .text import CueLexicon

__all__ = ["IndexedDoc", "NamespaceIndex"]


@dataclass(frozen=True)
class IndexedDoc:
    """Exactly what one memory put into the index (kept for removal and explanations)."""

    cues: tuple[str, ...]
    tags: tuple[str, ...]
    terms: tuple[tuple[str, int], ...]
    length: int
    updated_ts: float = 0.0  # POSIX time of the memory's last update (for recency)
    type: str = "note"
    context: tuple[tuple[str, float], ...] = ()  # neighbouring turns' terms, weighted


class NamespaceIndex:
    """Postings and statistics for the memories of one namespace."""

    def __init__(self) -> None:
        self.cues: dict[str, dict[int, None]] = {}
        self.tags: dict[str, dict[int, None]] = {}
        self.terms: dict[str, dict[int, float]] = {}  # tf (own words) or weighted context
        self.docs: dict[int, IndexedDoc] = {}
        self.total_length = 0
        self.cue_lexicon = CueLexicon()
        self.tag_lexicon = CueLexicon()

    def __len__(self) -> int:
        return len(self.docs)

    @property
    def avg_length(self) -> float:
        """Mean content length in terms (BM25's ``avgdl``)."""
        return self.total_length / len(self.docs) if self.docs else 0.0

    def add(
        self,
        seq: int,
        cues: Iterable[str],
        tags: Iterable[str],
        terms: Iterable[str],
        *,
        updated_ts: float = 0.0,
        type: str = "note",
    ) -> None:
        """Index memory ``seq`` (replacing what it had indexed before, if anything)."""
        context = self.docs[seq].context if seq in self.docs else ()
        if seq in self.docs:
            self.remove(seq)
        counts = Counter(terms)
        doc = IndexedDoc(
            tuple(dict.fromkeys(cues)),
            tuple(dict.fromkeys(tags)),
            tuple(counts.items()),
            sum(counts.values()),
            updated_ts,
            type,
        )
        self.docs[seq] = doc
        self.total_length += doc.length
        _post(self.cues, self.cue_lexicon, doc.cues, seq)
        _post(self.tags, self.tag_lexicon, doc.tags, seq)
        for term, tf in doc.terms:
            self.terms.setdefault(term, {})[seq] = tf
        if context:
            self.set_context(seq, dict(context))

    def set_context(self, seq: int, context: Mapping[str, float]) -> None:
        """Replace the neighbour-context terms of memory ``seq`` (its own terms win)."""
        doc = self.docs[seq]
        own = {term for term, _ in doc.terms}
        for term, _ in doc.context:
            self._drop_posting(term, seq)
        kept = tuple((t, w) for t, w in context.items() if t not in own and w > 0)
        for term, weight in kept:
            self.terms.setdefault(term, {})[seq] = weight
        self.docs[seq] = replace(doc, context=kept)

    def _drop_posting(self, term: str, seq: int) -> None:
        postings = self.terms[term]
        del postings[seq]
        if not postings:
            del self.terms[term]

    def remove(self, seq: int) -> None:
        """Remove every trace of memory ``seq``; unknown ``seq`` is a no-op."""
        doc = self.docs.pop(seq, None)
        if doc is None:
            return
        self.total_length -= doc.length
        _unpost(self.cues, self.cue_lexicon, doc.cues, seq)
        _unpost(self.tags, self.tag_lexicon, doc.tags, seq)
        for term, _ in (*doc.terms, *doc.context):
            self._drop_posting(term, seq)


def _post(
    postings: dict[str, dict[int, None]], lexicon: CueLexicon, keys: tuple[str, ...], seq: int
) -> None:
    for key in keys:
        postings.setdefault(key, {})[seq] = None
        lexicon.add(key, normalized=True)  # the core normalizes every cue and tag


def _unpost(
    postings: dict[str, dict[int, None]], lexicon: CueLexicon, keys: tuple[str, ...], seq: int
) -> None:
    for key in keys:
        bucket = postings[key]
        del bucket[seq]
        lexicon.discard(key, normalized=True)
        if not bucket:
            del postings[key]
