"""The in-memory inverted index of one namespace: cue, tag and term postings.

Postings map a key to the sequence numbers of the memories that carry it, ascending, with a
value each (:class:`~cuemap_integrations.postings.Postings`: typed arrays, not dicts). What was
indexed for each memory is kept, so removing a memory removes every posting, lexicon entry and
statistic it contributed: nothing refers to a deleted memory afterwards.

Large namespaces also get an :class:`~cuemap_integrations.arrays.ArrayView`: NumPy copies of the
postings queries touch, created on first use and then kept in step by every change below (each
posting change goes through :meth:`NamespaceIndex._put` / :meth:`NamespaceIndex._drop`).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Callable, Container, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import chain, repeat
from operator import is_, lt
from typing import TYPE_CHECKING, Any, Protocol

from . import postings as postings_module
from .postings import Postings, PostingsTable, _OnePosting, position, share_equal_seqs, sorted_holds
from .recordtable import drain as _drain
from .recordtable import insertion_numbers, interned, put_all, run_of
from .text import _C, CueKeys, content_terms

if TYPE_CHECKING:
    from .arrays import ArrayView

__all__ = ["DocColumns", "DocTable", "IndexedDoc", "NamespaceIndex", "SharedText"]


class _Pending:
    """Postings waiting for :meth:`NamespaceIndex.flush`, per kind, as each memory left them:
    its seq and keys (cues, tags), or its seq, keys and values (terms). They are grouped by
    key only at the flush, in one pass over the whole batch (in C: ``_textc.flush_postings``):
    a per-memory pass cost a few map and zip objects and a call each, for about 20 postings
    (the deferred postings are the index's main share of bulk ingest)."""

    def __init__(self, cues_posted: bool = True) -> None:
        kinds = ("cue", "tag", "term")
        self.plain: dict[str, tuple[list[int], list[Sequence[str]]]] = {k: ([], []) for k in kinds}
        self.valued: dict[
            str, tuple[list[int], list[Sequence[str]], list[Sequence[Any] | None]]
        ] = {k: ([], [], []) for k in kinds}
        # every cue waiting, kept only for an index with no cue posted yet (see
        # NamespaceIndex.held_cues): a batch into a new namespace (or a store being loaded);
        # later batches find their common cues posted, and skip the set's cost (ingest 0.96x)
        self.cues: set[str] | None = None if cues_posted else set()

    def add(self, kind: str, seq: int, keys: Sequence[str], values: Sequence[Any] | None) -> None:
        """Keep memory ``seq``'s postings of ``kind`` (``values`` None: without values)."""
        if kind == "cue" and self.cues is not None:
            self.cues.update(keys)
        if values is None:
            seqs, keys_of = self.plain[kind]
        else:
            seqs, keys_of, values_of = self.valued[kind]
            values_of.append(values)
        seqs.append(seq)
        keys_of.append(keys)

    def count(self, kind: str, seq: int, keys: Sequence[str]) -> None:
        """Keep memory ``seq``'s postings of ``kind`` with values: each distinct key of ``keys``
        and how often it occurs (:func:`_counted`, left to the flush: in C, a batch's keys are
        looked up there anyway, and counting them costs nearly nothing more; ingest of 10,000
        bench memories: _counted was about 4 us a memory)."""
        seqs, keys_of, values_of = self.valued[kind]
        seqs.append(seq)
        keys_of.append(keys)
        values_of.append(None)

    def extend(self, kind: str, seqs: Sequence[int], keys_of: Sequence[Sequence[str]]) -> None:
        """:meth:`add` of each memory's postings of ``kind`` without values, except that the
        waiting cues are not updated: a bulk batch's rows joined them as they were stored
        (:meth:`NamespaceIndex.add_plain_many`)."""
        plain_seqs, plain_keys = self.plain[kind]
        plain_seqs += seqs
        plain_keys += keys_of

    def count_many(self, kind: str, seqs: Sequence[int], keys_of: Sequence[Sequence[str]]) -> None:
        """:meth:`count` of each memory's keys of ``kind``."""
        valued_seqs, valued_keys, values_of = self.valued[kind]
        valued_seqs += seqs
        valued_keys += keys_of
        values_of += repeat(None, len(seqs))

    def by_key(self, kind: str) -> tuple[dict[str, list[int]], dict[str, list[Any]]]:
        """Key -> seqs (ascending) of the postings without values, and key -> ``[seq, value,
        seq, value, ...]`` of those with values; keys in the order they were first posted."""
        seqs_of: defaultdict[str, list[int]] = defaultdict(list)
        seqs, keys_of = self.plain[kind]
        # each memory's seq repeated once per key of it, beside the keys chained end to end
        _drain(map(list.append, map(seqs_of.__getitem__, chain.from_iterable(keys_of)),
                   _each_repeated(seqs, keys_of)))  # fmt: skip
        pairs_of: defaultdict[str, list[Any]] = defaultdict(list)
        seqs, keys_of, maybe_values = self.valued[kind]
        keys_of, values_of = _with_counts(keys_of, maybe_values)
        pairs = zip(_each_repeated(seqs, keys_of), chain.from_iterable(values_of), strict=True)
        _drain(map(list.extend, map(pairs_of.__getitem__, chain.from_iterable(keys_of)), pairs))
        return seqs_of, pairs_of


def _with_counts(
    keys_of: list[Sequence[str]], values_of: list[Sequence[Any] | None]
) -> tuple[list[Sequence[str]], list[Sequence[Any]]]:
    """Each memory's keys and values, the keys left to count (values None: see
    :meth:`_Pending.count`) counted: their distinct keys and counts."""
    pairs = [_counted(keys) if values is None else (keys, values)
             for keys, values in zip(keys_of, values_of, strict=True)]  # fmt: skip
    return [keys for keys, _ in pairs], [values for _, values in pairs]


class _Either:
    """A container holding what either of two containers holds."""

    __slots__ = ("_first", "_second")

    def __init__(self, first: Container[str], second: Container[str]) -> None:
        self._first, self._second = first, second

    def __contains__(self, key: object) -> bool:
        return key in self._first or key in self._second


def _held(posted: Container[str], waiting: set[str] | None) -> Container[str]:
    """What holds the cues ``posted`` or ``waiting`` (None: none kept) hold: the set itself
    while nothing is posted (as when its pending postings began: see :class:`_Pending`),
    whose ``in`` is C-level where :class:`_Either`'s is a Python call per cue looked up
    (the first batch into a namespace asks it of each cue without a code)."""
    if waiting is None:
        return posted
    return waiting if not posted else _Either(posted, waiting)


def _each_repeated(seqs: list[int], keys_of: list[Sequence[str]]) -> Iterator[int]:
    """Each of ``seqs`` repeated as many times as its keys have items, end to end."""
    return chain.from_iterable(map(repeat, seqs, map(len, keys_of)))


@dataclass(frozen=True, slots=True)
class IndexedDoc:
    """Exactly what one memory put into the index (kept for removal and explanations).

    ``words`` is the memory's content when its terms are the content's own (the string the
    record already holds: the terms, dozens of pointers, are derived again on the rare removal
    or explanation), else ``(term names, term counts)`` as parallel tuples (transcript turns:
    their neighbours' context reads the terms at every refresh). Term counts are ``bytes`` when
    all are below 256 (one byte each instead of an 8-byte pointer), and the cues are the
    record's own cue tuple when they are the same cues (see :meth:`NamespaceIndex.add`).
    """

    cues: tuple[str, ...]
    tags: tuple[str, ...]
    words: str | tuple[tuple[str, ...], bytes | tuple[int, ...]]
    length: int
    updated_ts: float = 0.0  # POSIX time of the memory's last update (for recency)
    type: str = "note"
    context_names: tuple[str, ...] = ()  # neighbouring turns' terms ...
    context_weights: tuple[float, ...] = ()  # ... and their weights

    @property
    def term_names(self) -> tuple[str, ...]:
        """The memory's own distinct terms, in first-occurrence order."""
        return _words_of(self.words)[0]

    @property
    def term_counts(self) -> bytes | tuple[int, ...]:
        """The frequency of each of :attr:`term_names`."""
        return _words_of(self.words)[1]

    @property
    def terms(self) -> tuple[tuple[str, int], ...]:
        """``(term, frequency)`` of the memory's own words."""
        return tuple(zip(*_words_of(self.words), strict=True))

    @property
    def context(self) -> tuple[tuple[str, float], ...]:
        """``(term, weight)`` of the neighbouring turns' words (transcripts only)."""
        return tuple(zip(self.context_names, self.context_weights, strict=True))


def _counted(terms: Iterable[str]) -> tuple[tuple[str, ...], bytes | tuple[int, ...]]:
    """Distinct ``terms`` (interned, first occurrence first) and their packed counts."""
    terms = terms if isinstance(terms, (list, tuple)) else list(terms)
    distinct = dict.fromkeys(terms)
    if distinct and len(distinct) == len(terms):
        # each term once (most memories): the counts are all ones, known without a Counter
        # (whose Python-level set-up cost more than counting); shared as _packed_counts does
        ones = b"\x01" * len(terms)
        return interned(distinct), _ALL_ONES.setdefault(ones, ones)
    counts = Counter(terms)
    return interned(counts), _packed_counts(counts.values())


def _words_of(
    words: str | tuple[tuple[str, ...], bytes | tuple[int, ...]],
) -> tuple[tuple[str, ...], bytes | tuple[int, ...]]:
    """Term names and counts of an :attr:`IndexedDoc.words` (derived again from content)."""
    return _counted(content_terms(words)) if isinstance(words, str) else words


def _distinct(keys: Iterable[str]) -> tuple[str, ...]:
    """``keys`` without repeats, first occurrence first, as interned strings. A tuple that has
    no repeats is kept as it is: the caller's tuple (a record's cues, interned by
    :func:`~cuemap_integrations.recordtable.pack`) is then shared, not copied."""
    unique = dict.fromkeys(keys)
    if isinstance(keys, tuple) and len(unique) == len(keys):
        return keys
    return interned(unique)


def _packed_counts(counts: Iterable[int]) -> bytes | tuple[int, ...]:
    """Term frequencies as ``bytes`` (they are almost always below 256), else as a tuple. Half
    of all memories use each of their words once: those share one ``bytes`` per length."""
    values = tuple(counts)
    top = max(values, default=0)
    if top >= 256:
        return values
    packed = bytes(values)
    return _ALL_ONES.setdefault(packed, packed) if top == 1 else packed


_ALL_ONES: dict[bytes, bytes] = {}  # b"\x01" * n -> itself: as many as distinct lengths


class DocColumns:
    """The per-memory values of every namespace index of one store, as columns indexed by
    ``seq``: term count (``array("I")``), last update (``array("d")``), type (a 2-byte code),
    the content a plain doc's terms are derived from and its cues, and when it was indexed
    (``order``: an indexing number, for :class:`DocTable`'s iteration order, kept only once a
    memory was indexed again).

    Why columns: an :class:`IndexedDoc` per memory cost 96 bytes (membreak.py 20000: index
    1,544 -> 1,473 B/mem); these cost 15 bytes (23 with ``order``), and the scorer's hot loops
    read a length or a timestamp by ``seq`` without an object in between. Why one table per
    store, not one per namespace: sequence numbers are the store's rowids, dense across all
    namespaces, so a namespace's columns indexed by ``seq`` would be as long as the whole
    store; shared, each ``seq`` has one entry. A ``seq`` no index holds any more (a deleted
    memory) keeps its 15 (23) bytes, after reopening too (rowids stay).

    A plain doc's content and cues are nearly always the very string its record holds and
    cues equal to its record's (the store indexes the record's own objects; a row keeps its
    cues packed, so reading them makes a new tuple): ``records`` (the store's
    :class:`~cuemap_integrations.recordtable.RecordTable`) has them, so a byte of flags
    (``shared``) says which ones to read from it, where two list columns of pointers to the
    same objects cost 18 bytes a memory (bench scale 100k: 891 -> 873). Content that is
    another object, other cues (or no ``records``) are kept in two dicts by seq. The store
    therefore removes a memory from its index before its record, and stores the record before
    indexing it.

    Example:
        >>> columns = DocColumns()
        >>> columns.set(3, 5, 1.5, "fact"); columns.hold(3, "five words of content here", ())
        >>> columns.lengths[3], columns.updated[3], columns.type_of(3), columns.words_of(3)
        (5, 1.5, 'fact', 'five words of content here')
    """

    __slots__ = ("_code_of", "_cues", "_words", "codes", "indexed", "lengths", "order",
                 "records", "shared", "types", "updated")  # fmt: skip

    def __init__(self, records: SharedText | None = None) -> None:
        """``records``: where a plain doc's content and cues may be read (see above)."""
        self.lengths = array("I")
        self.updated = array("d")
        self.codes = array("H")  # index into ``types``
        self.types: list[str] = []
        self._code_of: dict[str, int] = {}
        self.records = records
        self.shared = array("B")  # by seq: _SHARED_WORDS | _SHARED_CUES, read from records
        self._words: dict[int, str] = {}  # a plain doc's content, where not shared
        self._cues: dict[int, tuple[str, ...]] = {}  # a plain doc's cues, where not shared
        # the indexing number of each seq's last indexing, kept once a DocTable indexes a seq
        # below its largest (see DocTable._hold); then the next indexing number
        self.order: array[int] | None = None
        self.indexed = 0

    def set(self, seq: int, length: int, updated_ts: float, type: str) -> None:
        """Write the values of memory ``seq`` (growing the columns to hold it)."""
        if seq >= len(self.shared):
            self._grow(seq)
        code = self._code_of.get(type)
        if code is None:
            code = self._code_of[type] = len(self.types)
            self.types.append(type)
        self.lengths[seq], self.updated[seq], self.codes[seq] = length, updated_ts, code

    def hold(self, seq: int, words: str | None, cues: tuple[str, ...] | None) -> None:
        """Keep memory ``seq``'s plain doc content and cues (None: it has no plain doc)."""
        records, flags = self.records, 0
        if words is not None and records is not None and records.content_at(seq) is words:
            flags = _SHARED_WORDS
        _set_held(self._words, seq, None if flags else words)
        if cues is not None and records is not None and records.cues_at(seq) == cues:
            flags |= _SHARED_CUES
            cues = None
        _set_held(self._cues, seq, cues)
        self.shared[seq] = flags

    def set_many(
        self, seqs: Sequence[int], lengths: Sequence[int], updated: Sequence[float],
        types: Sequence[str],
    ) -> None:  # fmt: skip
        """:meth:`set` of each memory (a bulk batch's): the columns grown once, each written
        in one C-level pass."""
        if not seqs:
            return
        top = max(seqs)
        if top >= len(self.shared):
            self._grow(top)
        code_of = self._code_of
        for type in dict.fromkeys(types):  # each new type coded in the order set would code it
            if type not in code_of:
                code_of[type] = len(self.types)
                self.types.append(type)
        run = run_of(seqs)
        put_all(self.lengths, run, seqs, lengths)
        put_all(self.updated, run, seqs, updated)
        put_all(self.codes, run, seqs, map(code_of.__getitem__, types))

    def hold_many(
        self, seqs: Sequence[int], words: Sequence[str], cues: Sequence[tuple[str, ...]],
        row_cues: Sequence[tuple[str, ...]],
    ) -> None:  # fmt: skip
        """:meth:`hold` of each new plain doc of a bulk batch, whose records' rows are stored
        and hold ``row_cues`` (``RecordTable.put_many``'s): a doc's cues are compared with
        those (the same tuple, usually), not read back from its row (unpacked from the
        row's bytes but for the last row stored)."""
        records = self.records
        if records is None:
            _drain(map(self.hold, seqs, words, cues))
            return
        same_words = list(map(is_, records.contents_at(seqs), words))
        same_cues = [kept is row or kept == row for kept, row in zip(cues, row_cues, strict=True)]
        shared, own_words, own_cues = self.shared, self._words, self._cues
        if not own_words and not own_cues and all(same_words) and all(same_cues):
            # every doc reads both from its record (bulk ingest's): the flags in one pass
            put_all(shared, run_of(seqs), seqs, repeat(_SHARED_WORDS | _SHARED_CUES, len(seqs)))
            return
        for seq, content, kept, words_same, cues_same in zip(
            seqs, words, cues, same_words, same_cues, strict=True
        ):
            if words_same:
                flags = _SHARED_WORDS
                if own_words:
                    own_words.pop(seq, None)
            else:
                flags = 0
                own_words[seq] = content
            if cues_same:
                flags |= _SHARED_CUES
                if own_cues:
                    own_cues.pop(seq, None)
            else:
                own_cues[seq] = kept
            shared[seq] = flags

    def words_of(self, seq: int) -> str | None:
        """Memory ``seq``'s plain doc content (None: no plain doc)."""
        if self.shared[seq] & _SHARED_WORDS:
            return self.records.content_at(seq)  # type: ignore[union-attr]  # flagged: set
        return self._words.get(seq)

    def cues_of(self, seq: int) -> tuple[str, ...] | None:
        """Memory ``seq``'s plain doc cues (None: no plain doc)."""
        if self.shared[seq] & _SHARED_CUES:
            return self.records.cues_at(seq)  # type: ignore[union-attr]  # flagged: set
        return self._cues.get(seq)

    def type_of(self, seq: int) -> str:
        """The type of memory ``seq``."""
        return self.types[self.codes[seq]]

    def _grow(self, seq: int) -> None:
        """Room for ``seq``, and for about an eighth more (arrays grow in place: readers that
        hold one keep reading the same object)."""
        more = max(seq + 1, len(self.shared) + len(self.shared) // 8 + 1024) - len(self.shared)
        for column in (self.lengths, self.updated, self.codes, self.order, self.shared):
            if column is not None:
                column.frombytes(bytes(more * column.itemsize))


_SHARED_WORDS, _SHARED_CUES = 1, 2  # DocColumns.shared: what a plain doc reads from its record
_INT32_MAX = 2**31 - 1  # the largest seq an array("i") of DocTable seqs holds


class SharedText(Protocol):
    """Where :class:`DocColumns` reads a plain doc's content and cues by ``seq`` (the store's
    record table)."""

    def content_at(self, seq: int) -> str | None: ...
    def contents_at(self, seqs: Sequence[int]) -> list[str | None]: ...
    def cues_at(self, seq: int) -> tuple[str, ...] | None: ...


def _set_held(held: dict[int, Any], seq: int, value: Any) -> None:
    """Keep ``value`` for ``seq`` in the sparse column ``held`` (None: nothing kept)."""
    if value is not None:
        held[seq] = value
    elif held:
        held.pop(seq, None)


class DocTable(Mapping[int, IndexedDoc]):
    """``seq -> IndexedDoc`` of one namespace, in the order memories were (last) indexed.

    A *plain* doc (its words are the content, no tags, no neighbour context: every memory but
    transcript turns and tagged ones) keeps nothing of its own: its cue tuple (the record's
    own) and its other fields are in the store's :class:`DocColumns`, and reading it builds an
    :class:`IndexedDoc` on the spot (explanations and removal read a handful). Other docs are
    kept as they are, in a dict.

    Which seqs the table holds is an ascending array of them (4 bytes each, found by binary
    search), not a dict keyed by seq (52 bytes per memory at 100,000 bench memories: membreak.py
    100000). Their order is the ascending order of seqs until a seq is indexed below the
    largest one held (a re-indexed memory goes last); only then does iterating sort, by
    indexing numbers (:attr:`DocColumns.order`, kept by the store's columns from the first such
    seq of any namespace on: until then every table was indexed in ascending order).

    Example:
        >>> docs = DocTable(DocColumns())
        >>> docs.put(7, IndexedDoc(("port",), (), "The API uses port 8001", 5, 2.0, "fact"))
        >>> docs[7].cues, docs[7].length, docs.cues(7), docs.tags(7), list(docs), 8 in docs
        (('port',), 5, ('port',), (), [7], False)
        >>> docs.cues_and_tags(7), docs.held_cues_and_tags(7)
        ((('port',), ()), (('port',), ()))
    """

    __slots__ = ("_ascending", "_others", "_seqs", "columns")

    def __init__(self, columns: DocColumns) -> None:
        self._seqs = array("i")  # the seqs held, ascending ("q" once one is past 2**31 - 1)
        self._others: dict[int, IndexedDoc] = {}  # the docs that are not plain
        self._ascending = True  # False once a seq was indexed below the largest: iterating sorts
        self.columns = columns

    def __getitem__(self, seq: int) -> IndexedDoc:
        held = self._others.get(seq)
        if held is not None:
            return held
        position(self._seqs, seq)
        columns = self.columns
        words: Any = columns.words_of(seq)  # a plain doc's content
        return IndexedDoc(
            columns.cues_of(seq),  # type: ignore[arg-type]  # a plain doc's: not None
            (), words, columns.lengths[seq], columns.updated[seq], columns.type_of(seq),
        )  # fmt: skip

    def __contains__(self, seq: object) -> bool:
        return sorted_holds(self._seqs, seq)  # ingest asks this of each new seq

    def __iter__(self) -> Iterator[int]:
        order = self.columns.order
        if self._ascending or order is None:  # a copy, as sorted's: the caller may remove some
            return iter(self._seqs.tolist())
        return iter(sorted(self._seqs, key=order.__getitem__))

    def __len__(self) -> int:
        return len(self._seqs)

    def cues(self, seq: int) -> tuple[str, ...]:
        """The cues memory ``seq`` indexed (without building its doc)."""
        held = self._others.get(seq)
        if held is not None:
            return held.cues
        position(self._seqs, seq)
        return self.columns.cues_of(seq)  # type: ignore[return-value]  # a plain doc's: not None

    def tags(self, seq: int) -> tuple[str, ...]:
        """The tags memory ``seq`` indexed (without building its doc)."""
        held = self._others.get(seq)
        if held is not None:
            return held.tags
        position(self._seqs, seq)
        return ()

    def cues_and_tags(self, seq: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``(cues(seq), tags(seq))`` with the doc found once: explaining a hit and lending
        its cues to the feedback pass read both."""
        held = self._others.get(seq)
        if held is not None:
            return held.cues, held.tags
        position(self._seqs, seq)
        return self.columns.cues_of(seq), ()  # type: ignore[return-value]  # a plain doc's

    def held_cues_and_tags(self, seq: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """:meth:`cues_and_tags` of a memory this table holds (one a ranking of its namespace
        returned), without the binary search that tells any other seq apart with a KeyError:
        a recall reads its hits' and its feedback memories' (the search was ~1% of a recall
        at 100k memories). Another seq gives whatever the shared columns hold for it."""
        held = self._others.get(seq)
        if held is not None:
            return held.cues, held.tags
        return self.columns.cues_of(seq), ()  # type: ignore[return-value]  # a plain doc's

    def put(self, seq: int, doc: IndexedDoc) -> None:
        """Index ``doc`` as memory ``seq``: a new seq goes last, one already held keeps its
        place (as in a dict: :meth:`NamespaceIndex.add` pops a re-indexed memory first)."""
        plain = isinstance(doc.words, str) and not doc.tags and not doc.context_names
        words = doc.words if isinstance(doc.words, str) and plain else None
        self._put_columns(seq, doc.length, doc.updated_ts, doc.type)
        self.columns.hold(seq, words, doc.cues if plain else None)
        if plain:
            self._others.pop(seq, None)
        else:
            self._others[seq] = doc

    def put_plain(
        self, seq: int, cues: tuple[str, ...], content: str, length: int, updated_ts: float,
        type: str,
    ) -> None:  # fmt: skip
        """:meth:`put` of the plain doc ``IndexedDoc(cues, (), content, length, updated_ts,
        type)``, without building it (bulk ingest: it would only be read back here)."""
        self._put_columns(seq, length, updated_ts, type)
        self.columns.hold(seq, content, cues)
        if self._others:
            self._others.pop(seq, None)

    def put_plain_many(
        self, seqs: Sequence[int], cues: Sequence[tuple[str, ...]], contents: Sequence[str],
        lengths: Sequence[int], updated: Sequence[float], types: Sequence[str],
        row_cues: Sequence[tuple[str, ...]],
    ) -> None:  # fmt: skip
        """:meth:`put_plain` of each new plain doc of a bulk batch (``row_cues``: see
        :meth:`DocColumns.hold_many`). Seqs above every seq held, ascending (bulk ingest's),
        are held in one extend and their columns written in one pass each; others take
        :meth:`put_plain`'s path one by one."""
        held = self._seqs
        if (held and seqs[0] <= held[-1]) or not all(map(lt, seqs, seqs[1:])):
            _drain(map(self.put_plain, seqs, cues, contents, lengths, updated, types))
            return
        columns = self.columns
        columns.set_many(seqs, lengths, updated, types)
        if held.typecode == "i" and seqs[-1] > _INT32_MAX:  # widen, once (see _hold)
            held = self._seqs = array("q", held)
        held.extend(seqs)
        if columns.order is not None:
            first = columns.indexed
            columns.indexed += len(seqs)
            put_all(columns.order, run_of(seqs), seqs, range(first, columns.indexed))
        columns.hold_many(seqs, contents, cues, row_cues)
        if self._others:
            _drain(map(self._others.pop, seqs, repeat(None)))

    def _put_columns(self, seq: int, length: int, updated_ts: float, type: str) -> None:
        """Write memory ``seq``'s column values, and hold ``seq`` (last, if new)."""
        columns = self.columns
        columns.set(seq, length, updated_ts, type)
        if seq not in self:
            self._hold(seq)
            if columns.order is not None:
                columns.order[seq] = columns.indexed
                columns.indexed += 1

    def _hold(self, seq: int) -> None:
        """Add ``seq`` to the held seqs, in place (last, unless it is below the largest)."""
        seqs, columns = self._seqs, self.columns
        if seqs and seq < seqs[-1]:
            self._ascending = False
            if columns.order is None:
                columns.order, columns.indexed = insertion_numbers(len(columns.shared))
            seqs.insert(bisect_left(seqs, seq), seq)
            return
        try:
            seqs.append(seq)
        except OverflowError:  # past 2**31 - 1: widen, once
            self._seqs = array("q", seqs)
            self._seqs.append(seq)

    def pop(self, seq: int) -> IndexedDoc | None:
        """Remove memory ``seq`` and return its doc (None if it had none)."""
        if seq not in self:
            return None
        doc = self[seq]
        del self._seqs[position(self._seqs, seq)]
        self._others.pop(seq, None)
        self.columns.hold(seq, None, None)  # the content and cues: no longer the index's
        return doc


class NamespaceIndex:
    """Postings and statistics for the memories of one namespace."""

    def __init__(self, columns: DocColumns | None = None) -> None:
        """``columns``: the store's, shared by its namespaces (see :class:`DocColumns`)."""
        # key -> seq -> value: 1.0 for cues and tags; tf (own words) or weighted context for terms
        # cues and terms paired: a word one memory uses is both, kept in one shared dict entry
        self.cues, self.terms = PostingsTable.pair()
        self.tags = PostingsTable()
        self._tables = {"cue": self.cues, "tag": self.tags, "term": self.terms}
        self.docs = DocTable(DocColumns() if columns is None else columns)
        self.total_length = 0
        # the cues (tags) that have postings: kept in step by _put_many, flush and _drop
        self.cue_lexicon = CueKeys(self.cues)
        self.tag_lexicon = CueKeys(self.tags)
        self.view: ArrayView | None = None  # created by arrays.view_of on first large query
        # values recalls derive from the postings alone (a concept's postings and document
        # frequency, asked by every pass of every recall): any posting change clears it
        self.derived: dict[Hashable, Any] = {}
        self._pending: _Pending | None = None  # postings of add(..., defer=True), until flush

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
        content: str | None = None,
        defer: bool = False,
    ) -> None:
        """Index memory ``seq`` (replacing what it had indexed before, if anything).

        ``content``: the memory's content when ``terms`` are its
        :func:`~cuemap_integrations.text.content_terms` (not a transcript turn's): the doc keeps
        the string instead of the terms.
        ``defer=True`` (bulk ingest of new memories, never indexed before, in ascending ``seq``
        order): its postings are collected and appended to the tables by :meth:`flush`, which
        must come before the tables are read. A batch then costs one append per key instead of
        one per posting."""
        context = () if defer else self._removed_context(seq)
        kept_cues, kept_tags = _distinct(cues), _distinct(tags)
        if defer and content is not None and not kept_tags and self.view is None:
            self._defer_plain(seq, kept_cues, terms, content, updated_ts, type)
            return
        names, counts = _counted(terms)
        doc = IndexedDoc(
            kept_cues, kept_tags, (names, counts) if content is None else content, sum(counts),
            updated_ts, type,
        )  # fmt: skip
        self.docs.put(seq, doc)
        self.total_length += doc.length
        if self.view is not None:
            self.view.set_doc(seq, doc)
        put = self._defer_many if defer else self._put_many
        put("cue", seq, doc.cues)
        if doc.tags:  # most memories have none: nothing to post
            put("tag", seq, doc.tags)
        put("term", seq, names, counts)
        if context:
            self.set_context(seq, dict(context))

    def add_distinct(
        self, seq: int, cues: tuple[str, ...], tags: tuple[str, ...], terms: Sequence[str],
        updated_ts: float, type: str, content: str | None, defer: bool,
    ) -> None:  # fmt: skip
        """:meth:`add` of a memory whose ``cues`` are distinct and interned (the store's
        ingest, :meth:`CueMap._index_many`): a new plain doc goes straight to
        :meth:`_defer_plain`, without :meth:`add`'s keyword call and its pass over the cues."""
        if defer and content is not None and not tags and self.view is None:
            self._defer_plain(seq, cues, terms, content, updated_ts, type)
        else:
            self.add(seq, cues, tags, terms, updated_ts=updated_ts, type=type, content=content,
                     defer=defer)  # fmt: skip

    def add_plain_many(
        self, seqs: Sequence[int], cues: Sequence[tuple[str, ...]], terms: Sequence[list[str]],
        contents: Sequence[str], updated: Sequence[float], types: Sequence[str],
        row_cues: Sequence[tuple[str, ...]],
    ) -> None:  # fmt: skip
        """:meth:`_defer_plain` of each of a bulk batch's new plain docs, in ascending ``seq``
        order (their cues distinct and interned, ``terms`` lists), whose
        records are stored (``row_cues``: see :meth:`DocColumns.hold_many`) and whose cues
        joined :meth:`waiting_cues` as they were (``RecordTable.put_many``): the columns
        written and the postings left for :meth:`flush` in one pass each, not one call chain
        per memory (:meth:`CueMap._index_many`)."""
        lengths = list(map(len, terms))
        self.docs.put_plain_many(seqs, cues, contents, lengths, updated, types, row_cues)
        self.total_length += sum(lengths)
        pending = self._pending_postings()
        pending.extend("cue", seqs, cues)
        pending.count_many("term", seqs, terms)
        if self.view is not None:  # a store recalled before: its array view kept in step
            self.view.add_plain_many(seqs, lengths, updated, types)

    def waiting_cues(self) -> tuple[Container[str], set[str] | None]:
        """What :meth:`held_cues` is while a bulk batch is added, and the set of cues waiting
        for :meth:`flush` it holds beside the posted ones (None: none are kept, see
        :class:`_Pending`), which the batch's rows join as they are stored
        (``RecordTable.put_many``)."""
        waiting = self._pending_postings().cues
        return _held(self.cues, waiting), waiting

    def _pending_postings(self) -> _Pending:
        """The postings waiting for :meth:`flush` (begun here if none are)."""
        if self._pending is None:
            self._pending = _Pending(bool(self.cues))
        return self._pending

    def held_cues(self) -> Container[str]:
        """The cues some memory of this index has, posted or waiting for :meth:`flush`: what a
        record row may code (``RecordTable.put``). Without the waiting ones, a bulk batch into
        a new namespace would find no cue held until its flush, and every row of it would keep
        its cues as text (about 100 bytes a memory more than coded). The table itself, not its
        ``keys()``: the same ``in``, without a view built per memory and a Python call more
        per cue looked up."""
        pending = self._pending
        if pending is None or not pending.cues:  # None: cues were posted when it began
            return self.cues
        return _held(self.cues, pending.cues)

    def _defer_plain(
        self, seq: int, cues: tuple[str, ...], terms: Iterable[str], content: str,
        updated_ts: float, type: str,
    ) -> None:  # fmt: skip
        """:meth:`add` of a new plain doc (no tags) with its postings deferred, while no array
        view mirrors the index: the same columns and pending postings, without the
        :class:`IndexedDoc` the general path builds and reads back (bulk ingest's usual case),
        and with its terms counted at the flush (:meth:`_Pending.count`)."""
        terms = terms if isinstance(terms, (list, tuple)) else list(terms)
        length = len(terms)
        self.docs.put_plain(seq, cues, content, length, updated_ts, type)
        self.total_length += length
        pending = self._pending_postings()
        pending.add("cue", seq, cues, None)
        pending.count("term", seq, terms)

    def _removed_context(self, seq: int) -> tuple[tuple[str, float], ...]:
        """Remove what memory ``seq`` had indexed, if anything, and return its neighbour
        context (which :meth:`add` keeps). A deferred ``add`` is of a new memory: it skips
        this (two searches of the held seqs per memory of a bulk ingest)."""
        if seq not in self.docs:
            return ()
        context = self.docs[seq].context
        self.remove(seq)
        return context

    def set_context(self, seq: int, context: Mapping[str, float]) -> None:
        """Replace the neighbour-context terms of memory ``seq`` (its own terms win)."""
        doc = self.docs[seq]
        own = set(doc.term_names)
        for term in doc.context_names:
            self._drop("term", term, seq)
        kept = {t: w for t, w in context.items() if t not in own and w > 0}
        self._put_many("term", seq, tuple(kept), tuple(kept.values()))
        self.docs.put(
            seq, replace(doc, context_names=tuple(kept), context_weights=tuple(kept.values()))
        )

    def postings(self, kind: str) -> PostingsTable:
        """The postings table of ``kind``: ``"cue"``, ``"tag"`` or ``"term"``."""
        return self._tables[kind]

    def _put(self, kind: str, key: str, seq: int, value: float) -> None:
        self._put_many(kind, seq, (key,), (value,))

    def _put_many(
        self, kind: str, seq: int, keys: Sequence[str], values: Sequence[float] | None = None
    ) -> None:
        """Post ``seq`` under each key with its value (1.0 for all when ``values`` is None).

        One call per memory and kind, not per posting: ingest makes dozens of postings per
        memory, and this loop is the index's share of its cost."""
        self.derived.clear()
        table = self._tables[kind]
        new = [] if kind == "term" else [key for key in keys if key not in table]
        put = table.put
        for key, value in zip(keys, values or repeat(1.0, len(keys)), strict=True):
            put(key, seq, value)
        if new:  # the core normalizes every cue and tag
            _drain(map((self.cue_lexicon if kind == "cue" else self.tag_lexicon).insert, new))
        if self.view is not None:
            for key, value in zip(keys, values or repeat(1.0, len(keys)), strict=True):
                self.view.put(kind, key, seq, value)

    def _defer_many(
        self, kind: str, seq: int, keys: Sequence[str], values: Sequence[float] | None = None
    ) -> None:
        """:meth:`_put_many`, with the postings themselves left for :meth:`flush`."""
        self._pending_postings().add(kind, seq, keys, values)
        if self.view is not None:
            for key, value in zip(keys, values or repeat(1.0, len(keys)), strict=True):
                self.view.put(kind, key, seq, value)

    def flush(self) -> None:
        """Append the postings deferred by ``add(..., defer=True)`` to the tables."""
        pending, self._pending = self._pending, None
        if pending is None:
            return
        self.derived.clear()
        post = _post_reference if _FLUSH_POSTINGS is None else _post_compiled
        new_cues, new_tags = post(pending, self.cues, self.tags, self.terms)
        # the cues (tags) posted for the first time (the lexicons read no table: after the
        # postings is as good as before)
        self.cue_lexicon.insert_many(new_cues)
        self.tag_lexicon.insert_many(new_tags)

    def _drop(self, kind: str, key: str, seq: int) -> None:
        self.flush()  # the posting may still be pending
        self.derived.clear()
        table = self._tables[kind]
        table.drop(key, seq)
        if kind != "term" and key not in table:  # its last posting
            (self.cue_lexicon if kind == "cue" else self.tag_lexicon).remove(key)
        if self.view is not None:
            self.view.drop(kind, key, seq)

    def remove(self, seq: int) -> None:
        """Remove every trace of memory ``seq``; unknown ``seq`` is a no-op."""
        doc = self.docs.pop(seq)
        if doc is None:
            return
        self.total_length -= doc.length
        for cue in doc.cues:
            self._drop("cue", cue, seq)
        for tag in doc.tags:
            self._drop("tag", tag, seq)
        for term in (*doc.term_names, *doc.context_names):
            self._drop("term", term, seq)


def _post_reference(
    pending: _Pending, cues: PostingsTable, tags: PostingsTable, terms: PostingsTable
) -> tuple[list[str], list[str]]:
    """Append ``pending``'s postings to the tables (cues and terms paired); returns the cue
    and tag keys the tables did not hold before (for the lexicons). The reference of
    ``_textc.flush_postings``, which bulk ingest runs (the index's main share of it: a
    grouping by key, and a call or two per key)."""
    tables = {"cue": cues, "tag": tags, "term": terms}
    grouped = {kind: pending.by_key(kind) for kind in tables}
    new = [[key for key in grouped[kind][0] if key not in tables[kind]] for kind in ("cue", "tag")]
    _post_shared(cues, grouped["cue"][0], grouped["term"][1])
    for kind, table in tables.items():
        seqs_of, pairs_of = grouped[kind]
        extend = table.extend
        for key, seqs in seqs_of.items():  # keys in the order they were first posted
            extend(key, seqs, None)
        for key, pairs in pairs_of.items():
            extend(key, pairs[0::2], pairs[1::2])
    share_equal_seqs(
        table.held(key) for kind, table in tables.items()
        for extended in grouped[kind] for key in extended
    )  # fmt: skip
    return new[0], new[1]


def _post_shared(
    cues: PostingsTable, cue_seqs: dict[str, list[int]], term_pairs: dict[str, list[Any]]
) -> None:
    """Post the batch's new keys that one memory has as a cue and as a term used once
    straight into the paired tables' shared dict, taking them out of ``cue_seqs`` and
    ``term_pairs``: posted to the cue table first, each would be an entry of its own dict
    until the term's posting moved it, and those entries, deleted, size that dict as if
    they were still there when it next grows (bench scale 100k: 2^17 slots instead of
    2^16, about 10 bytes a memory)."""
    new = [(key, seqs[0]) for key, seqs in cue_seqs.items()
           if len(seqs) == 1 and term_pairs.get(key) == [seqs[0], 1]]  # fmt: skip
    put_shared = cues.put_shared
    for key, seq in new:
        if put_shared(key, seq):
            del cue_seqs[key], term_pairs[key]


def _post_compiled(
    pending: _Pending, cues: PostingsTable, tags: PostingsTable, terms: PostingsTable
) -> tuple[list[str], list[str]]:
    """:func:`_post_reference` in one C call (``_textc.flush_postings``): the same dict
    operations in the same order and the same objects (Postings arrays of exactly their
    size, as the reference's concatenations make them, but for long ones grown in place as the
    reference grows them: see ``postings.GROW_IN_PLACE``); a key whose postings are not a
    plain append (a value not a whole number 0-255, seqs not ascending, a table holding it
    otherwise than bare or as an array of 4-byte seqs and byte values) is left to the
    reference's ``extend``. Bulk ingest, 10,000 bench memories: about 12 us a memory in
    Python."""
    kinds = tuple((*pending.plain[kind], *pending.valued[kind]) for kind in ("cue", "tag", "term"))
    tables = tuple(table.dicts() for table in (cues, tags, terms))
    classes = (*_POSTINGS_KINDS, postings_module.GROW_IN_PLACE)  # read here: tests lower it
    return _FLUSH_POSTINGS(kinds, tables, classes)  # type: ignore[misc]  # not None


_FLUSH_POSTINGS: Callable[..., tuple[list[str], list[str]]] | None = (
    None if _C is None else _C.flush_postings
)
# what flush_postings makes: the postings classes, arrays of one item to repeat
_POSTINGS_KINDS = (Postings, _OnePosting, array, array("i", [0]), array("B", [0]))
