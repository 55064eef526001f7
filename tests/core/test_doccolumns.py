"""The per-memory columns (index.DocColumns / DocTable) read back exactly the IndexedDoc each
memory was indexed with, for memories of several namespaces sharing one store's columns."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuemap_integrations.core import CueMap
from cuemap_integrations.index import DocColumns, IndexedDoc, NamespaceIndex, _counted
from cuemap_integrations.text import content_terms

WORDS = st.sampled_from(["order", "cache", "db", "caroline", "超时", "lake"])
OPS = st.lists(
    st.tuples(
        st.integers(0, 1),  # which namespace's index
        st.integers(1, 40),  # seq
        st.lists(WORDS, max_size=4),  # cues
        st.lists(WORDS, max_size=2),  # tags
        st.lists(WORDS, min_size=1, max_size=5),  # content words
        st.sampled_from(["index", "plain", "turn", "context", "remove"]),
        st.sampled_from(["note", "fact", "event"]),
    ),
    max_size=40,
)


def _expected(cues: list[str], tags: list[str], content: str, turn: bool, ts: float,
              type: str) -> IndexedDoc:  # fmt: skip
    """The doc as NamespaceIndex.add built it before the columns: a dict of these."""
    names, counts = _counted(content_terms(content))
    words = (names, counts) if turn else content
    return IndexedDoc(tuple(dict.fromkeys(cues)), tuple(dict.fromkeys(tags)), words,
                      sum(counts), ts, type)  # fmt: skip


CONTEXT = {"far": 0.5, "lake": 0.25}


def _with_context(doc: IndexedDoc, context: dict[str, float]) -> IndexedDoc:
    """``doc`` after ``set_context(seq, context)``: neighbours' terms it has not itself."""
    kept = {t: w for t, w in context.items() if t not in doc.term_names}
    return replace(doc, context_names=tuple(kept), context_weights=tuple(kept.values()))


class _Records:
    """A record table's content and cue objects by seq, as DocColumns reads them (SharedText)."""

    def __init__(self) -> None:
        self.contents: dict[int, str] = {}
        self.cues: dict[int, tuple[str, ...]] = {}

    def content_at(self, seq: int) -> str | None:
        return self.contents.get(seq)

    def cues_at(self, seq: int) -> tuple[str, ...] | None:
        return self.cues.get(seq)


@settings(max_examples=300, deadline=None)
@given(OPS, st.sampled_from(["none", "same", "equal"]))
def test_docs_read_back_as_indexed_across_namespaces_sharing_columns(
    ops: list[tuple[int, int, list[str], list[str], list[str], str, str]], records_hold: str
) -> None:
    """Also with a record table whose rows hold the very content and cue objects indexed
    (``same``: read from it), or equal copies (``equal``: the content kept by the columns, the
    cues read from it), stored before a memory is indexed and dropped after it is removed, as
    the store does."""
    records = _Records()
    columns = DocColumns(None if records_hold == "none" else records)
    indexes = (NamespaceIndex(columns), NamespaceIndex(columns))
    expected: tuple[dict[int, IndexedDoc], dict[int, IndexedDoc]] = ({}, {})
    owner: dict[int, int] = {}  # a seq is in one namespace at a time, as in the store
    for at, (which, seq, cue_list, tags, words, op, type) in enumerate(ops):
        if seq in owner and owner[seq] != which or op == "remove":
            indexes[owner.get(seq, which)].remove(seq)
            expected[owner.get(seq, which)].pop(seq, None)
            owner.pop(seq, None)
            records.contents.pop(seq, None), records.cues.pop(seq, None)
            if op == "remove":
                continue
        index, docs = indexes[which], expected[which]
        if op == "context" and seq in docs:
            index.set_context(seq, CONTEXT)
            docs[seq] = _with_context(docs[seq], CONTEXT)
            continue
        content, turn = " ".join(words), op == "turn"
        cues = tuple(dict.fromkeys(cue_list))  # the record's: no repeats, shared as it is
        tags = tags if op == "index" else []
        context = dict(docs.pop(seq).context) if seq in docs else {}  # re-indexing keeps it
        again = seq in owner
        if again:  # as the store: the old memory unindexed before its new record is stored
            index.remove(seq)
        copy = records_hold == "equal"
        records.contents[seq] = "".join(list(content)) if copy else content
        records.cues[seq] = tuple(list(cues)) if copy else cues
        index.add(seq, cues, tags, content_terms(content), updated_ts=at + 0.5, type=type,
                  content=None if turn else content)  # fmt: skip
        if again and context:  # the store's refresh of neighbour context
            index.set_context(seq, context)
        docs[seq] = _expected(cues, tags, content, turn, at + 0.5, type)  # last, as in a dict
        if context:
            docs[seq] = _with_context(docs[seq], context)
        owner[seq] = which
    for index, docs in zip(indexes, expected, strict=True):
        assert list(index.docs) == list(docs) and len(index.docs) == len(docs)
        assert dict(index.docs.items()) == docs
        assert all(index.docs.cues(seq) == doc.cues for seq, doc in docs.items())
        assert all(index.docs.tags(seq) == doc.tags for seq, doc in docs.items())
        assert all(columns.lengths[seq] == doc.length for seq, doc in docs.items())
        assert index.total_length == sum(doc.length for doc in docs.values())
        assert [seq for seq in range(-1, 43) if seq in index.docs] == sorted(docs)
        absent = next(seq for seq in range(43) if seq not in docs)
        for read in (index.docs.__getitem__, index.docs.cues, index.docs.tags):
            with pytest.raises(KeyError):
                read(absent)
    held = {seq for index in indexes for seq in index.docs}
    # nothing kept for a removed memory; nothing kept twice for a row holding the same objects
    assert set(columns._words) | set(columns._cues) <= held
    assert not (records_hold == "same" and (columns._words or columns._cues))


def test_a_plain_doc_keeps_no_object_of_its_own() -> None:
    index = NamespaceIndex()
    cues, content = ("lake", "caroline"), "Caroline swam in the lake"
    index.add(3, cues, [], content_terms(content), updated_ts=2.0, type="fact", content=content)
    assert index.docs.cues(3) is cues and index.docs.columns.words_of(3) is content
    length = len(content_terms(content))
    assert index.docs[3] == IndexedDoc(cues, (), content, length, 2.0, "fact")
    index.remove(3)
    assert 3 not in index.docs and index.docs.columns.words_of(3) is None


def test_a_plain_doc_of_a_stored_record_keeps_only_a_flag() -> None:
    """In a store, a plain doc reads its content and cues from its record's row."""
    store = CueMap(":memory:")
    store.add("Caroline swam in the lake", memory_id="m1")
    seq = store._seq_of[("default", "m1")]
    columns, row = store._columns, store._records.row(seq)
    assert columns.shared[seq] == 3 and not columns._words and not columns._cues
    assert store._indexes["default"].docs.cues(seq) == row.cues  # read from the row
    assert columns.words_of(seq) is row.content
    store.update("m1", content="Caroline rowed across the lake")
    assert columns.words_of(seq) == "Caroline rowed across the lake" and not store.check()
    store.delete("m1")
    assert columns.shared[seq] == 0 and not columns._words and not store.check()


@settings(max_examples=300, deadline=None)
@given(
    st.lists(WORDS | st.text(max_size=3), max_size=30),
    st.sampled_from([list, tuple, iter]),
    st.integers(0, 300),
)
def test_counted_equals_a_counter_of_the_terms(words: list[str], kind: type, repeats: int) -> None:
    """_counted (its all-distinct shortcut or its Counter) gives the terms in first-occurrence
    order and their counts, as bytes below 256 (all-ones shared per length), else a tuple."""
    terms = [*words, *["many"] * (repeats if words else 0)]
    reference: dict[str, int] = {}
    for term in terms:
        reference[term] = reference.get(term, 0) + 1
    names, counts = _counted(kind(terms))
    assert names == tuple(reference)
    assert tuple(counts) == tuple(reference.values())
    assert isinstance(counts, bytes) == (max(reference.values(), default=0) < 256)
    if counts and set(counts) == {1}:
        assert counts is _counted(list(names))[1]
