"""Bulk ingest's column-wise indexing (``CueMap._index_plain`` and the batch methods it calls)
leaves every table exactly as indexing one memory at a time (``CueMap._index_each``) does."""

from __future__ import annotations

from array import array
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuemap_integrations import CueMap, MemoryRecord, core, recordtable
from cuemap_integrations.keytables import SeqOf, SeqsByDigest
from cuemap_integrations.threads import thread_of, turns

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)

WORDS = ["lake", "Melanie", "db", "cache", "超时", "order", "sunset", "zorbly", "port 8001"]
METADATA = st.sampled_from(
    [{}, {"i": 1}, {"i": 2**70}, {"i": True}, {"i": "x"}, {"a": 1, "b": 2}, {"session_id": "s"}]
)
ITEM = st.fixed_dictionaries(
    {"content": st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)},
    optional={
        "type": st.sampled_from(["fact", "event", "note"]),
        "namespace": st.sampled_from(["default", "other"]),
        "metadata": METADATA,
        "tags": st.lists(st.sampled_from(["t1", "t2"]), max_size=1),
        "cues": st.lists(st.sampled_from(["db", "lake", "caroline", "x y"]), max_size=3),
        "key": st.sampled_from(["api.port", "k"]),
        "created_at": st.sampled_from([T0, T0 + timedelta(microseconds=5)]),
        "source": st.sampled_from(["scale", "chat"]),
    },
)


def _trimmed(column: Any, top: int) -> list[Any]:
    """A column's slots up to ``top`` (grown in other steps, the columns' lengths differ; the
    slots past the largest seq are empty in both)."""
    return list(column[: top + 1])


def _state(store: CueMap) -> dict[str, Any]:
    """Every table indexing writes, by value."""
    table, columns, cues = store._records, store._columns, store._records._cues
    top = table._top
    seqs = list(table)
    state: dict[str, Any] = {
        "rows": [(seq, table.row(seq).fields()) for seq in seqs],
        "records": [table[seq] for seq in seqs],
        "records_columns": [
            _trimmed(column, top)
            for column in (table._ids, table._contents, table._metadata, table._codes)
        ],
        "stamps": [repr(stamp) for stamp in _trimmed(table._stamps, top)],
        "sparse": (table._dates, table._extra, table._own_kinds, table._kinds),
        "order": None if table._order is None else _trimmed(table._order, top),
        "counts": (table._count, table._top, table._inserted),
        "cue_column": (
            bytes(cues._buffer),
            _trimmed(cues._starts, top),
            _trimmed(cues._sizes, top),
            cues._tuples,
            cues._codes,
            cues._names,
            cues._last,
        ),  # fmt: skip
        "doc_columns": (
            _trimmed(columns.lengths, top),
            _trimmed(columns.updated, top),
            _trimmed(columns.codes, top),
            columns.types,
            _trimmed(columns.shared, top),
            columns._words,
            columns._cues,
            columns.indexed,
            None if columns.order is None else _trimmed(columns.order, top),
        ),  # fmt: skip
        "seq_of": sorted(store._seq_of.items()),
        "by_content": [
            store._by_content.seqs(store._by_content._digests[16 * s : 16 * s + 16]) for s in seqs
        ],  # fmt: skip
        "by_key": store._by_key,
        "threads": sorted(store._threads._turns.items()),
    }
    for namespace, index in sorted(store._indexes.items()):
        state[namespace] = (
            list(index.docs), [index.docs[seq] for seq in index.docs], index.total_length,
            sorted((key, list(p.pairs())) for key, p in index.cues.items()),
            sorted((key, list(p.pairs())) for key, p in index.terms.items()),
            sorted((key, list(p.pairs())) for key, p in index.tags.items()),
        )  # fmt: skip
    return state


def _ingested(batches: list[list[dict[str, Any]]], plain_run: int) -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(core, "_PLAIN_RUN", plain_run)
        with CueMap(clock=lambda: T0) as store:
            for batch in batches:
                store.add_many(batch)
            # a deleted memory's seq and a later batch (the seq may be reused: see put_many)
            hits = store.recall("lake").hits
            if hits:
                store.delete(hits[0].memory_id)
            store.add_many([{"content": f"after a delete: the lake at dusk {n}"} for n in range(9)])
            return _state(store)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(ITEM, max_size=14), min_size=1, max_size=3), st.booleans())
def test_column_wise_indexing_equals_one_memory_at_a_time(
    batches: list[list[dict[str, Any]]], python_packing: bool
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        if python_packing:  # the cue column's loop, as without the text extension
            patch.setattr(recordtable, "_PACK", None)
        assert _ingested(batches, 1) == _ingested(batches, 10**9)


def test_bench_like_batches_take_the_column_wise_path_and_match() -> None:
    batches = [
        [{"content": f"Melanie swam in the lake {n} zorbly{n}", "type": "event",
          "metadata": {"i": n}, "created_at": T0 + timedelta(minutes=n)}
         for n in range(start, start + 40)]
        for start in (0, 40, 80)
    ]  # fmt: skip
    calls = []
    with pytest.MonkeyPatch.context() as patch:
        plain = core.CueMap._index_plain
        patch.setattr(core.CueMap, "_index_plain", lambda *a: calls.append(1) or plain(*a))
        column_wise = _ingested(batches, 1)
    assert len(calls) >= 3
    assert column_wise == _ingested(batches, 10**9)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b"]), st.sampled_from("pqrstuvw"), st.integers(-2, 40)),
        max_size=30,
    ),  # fmt: skip
    st.lists(
        st.tuples(st.sampled_from(["a", "b"]), st.sampled_from("pqrstuvw"), st.integers(-2, 60)),
        max_size=30,
    ),  # fmt: skip
)
def test_seq_of_set_many_equals_setting_each(
    before: list[tuple[str, str, int]], batch: list[tuple[str, str, int]]
) -> None:
    each, many = SeqOf(), SeqOf()
    for namespace, memory_id, seq in before:
        each[(namespace, memory_id)] = many[(namespace, memory_id)] = seq
    for namespace in ("a", "b"):
        pairs = [(memory_id, seq) for ns, memory_id, seq in batch if ns == namespace]
        for memory_id, seq in pairs:
            each[(namespace, memory_id)] = seq
        many.set_many(namespace, [m for m, _ in pairs], [s for _, s in pairs])
    assert sorted(each.items()) == sorted(many.items())
    assert len(each) == len(many)


def test_seq_of_set_many_grows_across_rehashes_and_replaces_a_held_key() -> None:
    ids = SeqOf()
    ids.set_many("n", [f"m{n}" for n in range(3000)], list(range(3000)))
    ids.set_many("n", ["m7", "new"], [3000, 3001])  # m7 held: moved to its new seq
    assert [ids.get(("n", name)) for name in ("m0", "m2999", "m7", "new")] == [0, 2999, 3000, 3001]
    assert len(ids) == 3001


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 6), st.integers(0, 3000)), max_size=40, unique_by=lambda x: x[1]
    )
)
def test_seqs_by_digest_add_many_equals_adding_each(pairs: list[tuple[int, int]]) -> None:
    each, many = SeqsByDigest(), SeqsByDigest()
    digests = [bytes([d]) * 16 for d, _ in pairs]
    seqs = [seq for _, seq in pairs]
    for digest, seq in zip(digests, seqs, strict=True):
        each.add(digest, seq)
    many.add_many(digests, seqs)
    assert len(each) == len(many)
    assert all(each.seqs(bytes([d]) * 16) == many.seqs(bytes([d]) * 16) for d in range(8))


def test_seqs_by_digest_add_many_refuses_a_bad_digest_after_adding_the_ones_before() -> None:
    held = SeqsByDigest()
    with pytest.raises(ValueError, match="16-byte digest"):
        held.add_many([b"a" * 16, b"short"], [1, 2])
    assert held.first(b"a" * 16) == 1


def test_record_table_put_many_of_seqs_not_above_the_table_takes_put() -> None:
    records = [MemoryRecord(memory_id=f"m{n}", content=f"text {n}", created_at=T0,
                            updated_at=T0, cues=("text",)) for n in range(4)]  # fmt: skip
    each, many = recordtable.RecordTable(), recordtable.RecordTable()
    for table in (each, many):
        table[5] = records[0]
    for seq, record in zip([2, 7, 6], records[1:], strict=True):
        each.put(seq, record, ())
    assert many.put_many([2, 7, 6], records[1:], ()) == [("text",)] * 3
    assert list(each) == list(many) == [5, 2, 7, 6]
    assert [each[seq] for seq in each] == [many[seq] for seq in many]
    assert isinstance(many._order, array)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["event", "fact"]),
            st.sampled_from(
                [
                    {},
                    {"i": 1},
                    {"session_id": "s1"},
                    {"thread_id": None},
                    {"session": {"a": 1}},
                    {"session": ["x"]},
                    {"session_id": None, "session": 3},
                ]  # fmt: skip
            ),
        ),
        max_size=12,
    )
)
def test_turns_are_the_records_thread_of_finds_a_thread_for(
    kinds: list[tuple[str, dict[str, Any]]],
) -> None:
    records = [
        MemoryRecord(
            memory_id=f"m{n}",
            content="x",
            created_at=T0,
            updated_at=T0,
            type=kind,
            metadata=metadata,
        )  # fmt: skip
        for n, (kind, metadata) in enumerate(kinds)
    ]
    assert turns(records) == [thread_of(record) is not None for record in records]


def test_contents_at_reads_each_content_and_none_past_the_rows() -> None:
    table = recordtable.RecordTable()
    table[3] = MemoryRecord(memory_id="m", content="text", created_at=T0, updated_at=T0)
    assert table.contents_at([3]) == ["text"]
    assert table.contents_at([3, -1, 10**6]) == ["text", None, None]
