"""Deferred postings (bulk ingest) leave the index exactly as adding one memory at a time does."""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from cuemap_integrations import CueMap, MemoryRecord
from cuemap_integrations.aliases import AliasTable
from cuemap_integrations.index import NamespaceIndex, _Pending
from cuemap_integrations.text import CueKeys, CueLexicon
from cuemap_integrations.textkeys import TextMemo, index_cues

KEYS = st.lists(
    st.sampled_from(["order", "cache", "db", "caroline", "超时", "x y", ""]), max_size=5
)
DOCS = st.lists(st.tuples(KEYS, KEYS, KEYS), max_size=12)


def _state(index: NamespaceIndex) -> tuple[object, ...]:
    """Everything a batch changes. The tables' keys sorted: paired cue and term tables list
    the keys they share last, in the order they became shared, which differs between posting
    one memory at a time and a batch at its flush (no reader iterates a table in order)."""
    tables = [sorted((key, list(p.pairs())) for key, p in index.postings(kind).items())
              for kind in ("cue", "tag", "term")]  # fmt: skip
    lexicons = [
        (len(lex), dict(lex._keys), lex._lengths) for lex in (index.cue_lexicon, index.tag_lexicon)
    ]
    return tables, lexicons, index.docs, index.total_length


@settings(max_examples=200, deadline=None)
@given(DOCS, DOCS, st.integers(0, 12), st.booleans())
def test_a_deferred_batch_equals_adding_one_by_one(
    before: list[tuple[list[str], list[str], list[str]]],
    batch: list[tuple[list[str], list[str], list[str]]],
    removed: int,
    remove_mid_batch: bool,
) -> None:
    deferred, direct = NamespaceIndex(), NamespaceIndex()
    for seq, (cues, tags, terms) in enumerate(before):
        for index in (deferred, direct):
            index.add(seq, cues, tags, terms)
    for offset, (cues, tags, terms) in enumerate(batch):
        seq = len(before) + 2 * offset  # ascending, with gaps
        deferred.add(seq, cues, tags, terms, defer=True)
        direct.add(seq, cues, tags, terms)
        if remove_mid_batch and offset == len(batch) // 2:  # a removal flushes what waits
            for index in (deferred, direct):
                index.remove(removed)
    deferred.flush()
    assert _state(deferred) == _state(direct)
    assert _lexicons(deferred) == _lexicons(direct) == _counted_lexicons(deferred)


def _lexicons(index: NamespaceIndex) -> list[object]:
    """What a query reads of the index's cue and tag keys."""
    return [(len(lex), lex._keys, lex._lengths) for lex in (index.cue_lexicon, index.tag_lexicon)]


def _counted_lexicons(index: NamespaceIndex) -> list[object]:
    """The reference: reference-counted lexicons of the cues (tags) of the docs held."""
    cues, tags = CueLexicon(), CueLexicon()
    for seq in index.docs:
        for cue in index.docs.cues(seq):
            cues.add(cue, normalized=True)
        for tag in index.docs.tags(seq):
            tags.add(tag, normalized=True)
    return [(len(lex), lex._keys, lex._lengths) for lex in (cues, tags)]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), KEYS, KEYS), max_size=20))
def test_the_lexicons_hold_the_cues_and_tags_with_postings(
    edits: list[tuple[int, list[str], list[str]]],
) -> None:
    """Adding, re-adding (an update) and removing memories in any order: the lexicons hold
    exactly the cues and tags that still have postings, as reference counting would."""
    index = NamespaceIndex()
    for seq, cues, tags in edits:
        if not cues and seq in index.docs:
            index.remove(seq)
        else:
            index.add(seq, cues, tags, [])
        assert _lexicons(index) == _counted_lexicons(index)
        assert set(index.cues) == {c for s in index.docs for c in index.docs.cues(s)}


def test_a_reopened_store_indexes_as_one_by_one(tmp_path: Path) -> None:
    """Opening a store defers its postings too; check() compares with a one-by-one rebuild."""
    path = tmp_path / "s.db"
    with CueMap(path) as cm:
        cm.add_many(
            [{"content": f"order {i} cache Caroline", "memory_id": f"m{i}"} for i in range(30)]
        )
        cm.add_many([{"content": f"turn {i} about the db", "memory_id": f"t{i}", "type": "event",
                      "metadata": {"session_id": "s1"}} for i in range(6)])  # fmt: skip
        cm.delete("m3")
        before = [h.memory_id for h in cm.recall("order cache caroline db", k=12)]
    with CueMap(path) as reopened:
        assert reopened.check() == []
        assert [h.memory_id for h in reopened.recall("order cache caroline db", k=12)] == before


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(KEYS, st.booleans()), max_size=15))
def test_pending_postings_group_by_key_as_posting_one_by_one(
    memories: list[tuple[list[str], bool]],
) -> None:
    """_Pending.by_key (grouped in one pass over the batch) equals appending each memory's
    postings in turn: seqs ascending per key, keys in first-posted order, values beside."""
    pending = _Pending()
    plain: dict[str, list[int]] = {}
    valued: dict[str, list[object]] = {}
    for seq, (keys, with_values) in enumerate(memories):
        values = tuple(range(len(keys))) if with_values else None
        pending.add("term", 10 * seq, tuple(keys), values)
        for position, key in enumerate(keys):
            if with_values:
                valued.setdefault(key, []).extend((10 * seq, position))
            else:
                plain.setdefault(key, []).append(10 * seq)
    seqs_of, pairs_of = pending.by_key("term")
    assert list(seqs_of.items()) == list(plain.items())
    assert list(pairs_of.items()) == list(valued.items())
    assert pending.by_key("cue") == ({}, {})


def test_a_batch_posts_words_used_once_without_filling_the_cue_tables_own_dict() -> None:
    """A word one memory has as a cue and as a term goes straight to the paired tables' shared
    dict at the flush: posted to the cue table's own dict first and moved, it would leave
    that dict sized for all of them."""
    index = NamespaceIndex()
    for seq in range(2000):
        word = f"w{seq}"
        index.add(seq, [word], [], [word], defer=True)
    index.flush()
    assert len(index.cues) == len(index.terms) == 2000 and index.cues.held("w7") == 7
    assert sys.getsizeof(index.cues._held) == sys.getsizeof(index.terms._held) == sys.getsizeof({})


@settings(max_examples=200, deadline=None)
@given(DOCS, st.booleans(), st.booleans())
def test_add_distinct_equals_add(
    batch: list[tuple[list[str], list[str], list[str]]], plain: bool, defer: bool
) -> None:
    """The store's positional ``add_distinct`` (cues distinct and interned, a plain doc's
    content) indexes as :meth:`NamespaceIndex.add` does, deferred or not."""
    fast, reference = NamespaceIndex(), NamespaceIndex()
    for seq, (cues, tags, terms) in enumerate(batch):
        kept = tuple(map(sys.intern, dict.fromkeys(cues)))
        content = " ".join(terms) if plain else None
        fast.add_distinct(seq, kept, tuple(tags), terms, 1.5 * seq, "fact", content, defer)
        reference.add(seq, kept, tags, terms, updated_ts=1.5 * seq, type="fact",
                      content=content, defer=defer)  # fmt: skip
    for index in (fast, reference):
        index.flush()
    assert _state(fast) == _state(reference)
    assert [fast.docs[seq] for seq in fast.docs] == [reference.docs[seq] for seq in reference.docs]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["the db is down", "database cache order", "k8s pod",
                                            "Caroline met Jon", "db db db"]),
                          st.sampled_from([None, ["db"], ["cache", "kubernetes"]]),
                          st.sampled_from([None, ["ops"]])), max_size=8))  # fmt: skip
def test_a_batch_indexes_the_cues_of_index_keys(
    items: list[tuple[str, list[str] | None, list[str] | None]],
) -> None:
    """Bulk ingest's one indexing loop (``CueMap._index_many``) indexes each memory under the
    cues of ``_index_keys`` (its cues expanded with the aliases found in its content), and
    its tags, as the store's reference path builds them."""
    store = CueMap()
    stored = store.add_many([{"content": c, "cues": cues, "tags": tags} for c, cues, tags in items])
    for record in stored:
        seq = store._seq_of[(record.namespace, record.memory_id)]
        cues, tags, _ = store._index_keys(store._records[seq])
        docs = store._indexes[record.namespace].docs
        assert (docs.cues(seq), docs.tags(seq)) == (tuple(cues), tuple(tags))


_TEXTS = st.sampled_from(["the db is down", "database cache order", "pods ran", "超时 again"])


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(_TEXTS, st.sampled_from([None, ("db", "db", "pods"), ("ran", "ran")]),
                          st.booleans()), max_size=8))  # fmt: skip
def test_a_batch_of_records_and_repeated_texts_indexes_the_cues_of_index_keys(
    items: list[tuple[str, tuple[str, ...] | None, bool]],
) -> None:
    """The batch's shortcut past the alias expansion (``TextMemo.index_cues``: a memory's own
    cues when the batch derived them and no alias term is among them or in its text) indexes
    the cues of ``_index_keys`` whatever the batch holds: texts repeated under other ids,
    ready records whose cues repeat or hold an alias term, derived cues with alias terms."""
    when = datetime(2024, 1, 1, tzinfo=timezone.utc)
    batch: list[dict[str, object] | MemoryRecord] = []
    for number, (content, cues, ready) in enumerate(items):
        memory_id = f"m{number}"
        if ready:
            batch.append(MemoryRecord(memory_id=memory_id, content=content, cues=cues or (),
                                      created_at=when, updated_at=when))  # fmt: skip
        else:
            batch.append({"content": content, "cues": cues, "memory_id": memory_id})
    store = CueMap()
    for record in store.add_many(batch):
        seq = store._seq_of[(record.namespace, record.memory_id)]
        cues, _, _ = store._index_keys(store._records[seq])
        assert store._indexes[record.namespace].docs.cues(seq) == tuple(cues)


def test_derived_cues_holding_an_alias_term_are_expanded_even_if_the_text_shows_none() -> None:
    """The shortcut asks the alias table about the cues themselves too, not only about the
    alias terms found in the text (which a cue rule could in principle see differently)."""
    aliases = AliasTable([("db", "database")])
    memo = TextMemo(aliases)
    cues = memo.derived_cues("database cache order")
    when = datetime(2024, 1, 1, tzinfo=timezone.utc)
    record = MemoryRecord(memory_id="m", content="database cache order", cues=cues, created_at=when,
                          updated_at=when)  # fmt: skip
    object.__setattr__(record, "cues", cues)  # the batch's own tuple, as _build passes it
    blind = memo.keys(record.content)._replace(aliases=[])  # as if no alias term were found
    assert "db" in memo.index_cues(record, blind)
    assert list(memo.index_cues(record, blind)) == index_cues(record, blind, aliases)


CUES = st.lists(
    st.sampled_from(["order", "orders", "cache", "caroline", "x y", "new york", "超时", "订单超时",
                     "!!", "the", "v2.1", "user_id", "gulipa", "running", "run"]),
    unique=True, max_size=8,
)  # fmt: skip


def _keys_state(keys: CueKeys) -> tuple[object, ...]:
    return (len(keys), keys._keys, keys._length_counts, keys._lengths, keys._firsts)


@settings(max_examples=300, deadline=None)
@given(CUES, CUES)
def test_inserting_many_cues_equals_inserting_each(before: list[str], batch: list[str]) -> None:
    """CueKeys.insert_many (a flush's new cues) leaves the lexicon as one insert per cue."""
    batch = [cue for cue in batch if cue not in before]
    one, many = CueKeys(own := set(before + batch)), CueKeys(own)
    for keys in (one, many):
        for cue in before:
            keys.insert(cue)
    for cue in batch:
        one.insert(cue)
    many.insert_many(batch)
    assert _keys_state(many) == _keys_state(one)
    query = "the orders of new york 超时 x y run v2.1 user_id gulipa caroline"
    assert many.match(query) == one.match(query)
