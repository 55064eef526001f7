"""The packed record table: what goes in comes out equal, and rows answer filters like records."""

from __future__ import annotations

import dataclasses
from array import array
from collections import Counter
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuemap_integrations import CueMap, MemoryRecord, MemoryType, recordtable
from cuemap_integrations.index import NamespaceIndex
from cuemap_integrations.ranking import Filters
from cuemap_integrations.recordtable import RecordTable
from cuemap_integrations.text import content_terms

T = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)

# any aware instant, from year 1 to 9999, to the microsecond, in any zone and either fold
_instants = st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.timezones()
)
_ids = st.text("abcxyz-.", min_size=1, max_size=6)
_words = st.lists(st.text("abcdef", min_size=1, max_size=4), max_size=4).map(tuple)


@st.composite
def records(draw: st.DrawFn) -> MemoryRecord:
    created = draw(_instants)
    optional: dict[str, Any] = {
        "cues": draw(_words),
        "tags": draw(_words),
        "type": draw(st.sampled_from(list(MemoryType))),
        "source": draw(st.one_of(st.none(), _ids)),
        "namespace": draw(_ids),
        "last_accessed": draw(st.one_of(st.none(), _instants)),
        "access_count": draw(st.integers(0, 3)),
        "expires_at": draw(st.one_of(st.none(), _instants)),
        "supersedes": draw(st.one_of(st.none(), _ids)),
        "superseded_by": draw(st.one_of(st.none(), _ids)),
        "superseded_at": draw(st.one_of(st.none(), _instants)),
        "key": draw(st.one_of(st.none(), _ids)),
        "metadata": draw(st.dictionaries(_ids, st.integers(), max_size=2)),
        "cue_origin": draw(st.sampled_from(["given", "derived"])),
    }
    chosen = draw(st.sets(st.sampled_from(sorted(optional))))
    return MemoryRecord(
        memory_id=draw(_ids),
        content=draw(st.text("ab c", min_size=1).filter(str.strip)),
        created_at=created,
        updated_at=draw(st.one_of(st.just(created), _instants)),
        **{name: value for name, value in optional.items() if name in chosen},
    )


@settings(max_examples=300, deadline=None)
@given(records(), _instants)
def test_a_record_reads_back_equal_with_the_same_repr(record: MemoryRecord, now: datetime) -> None:
    table = RecordTable()
    table[5] = record
    back = table[5]
    assert back == record
    assert repr(back) == repr(record)  # same zone objects, folds and microseconds
    assert back.to_dict() == record.to_dict()
    row = table.row(5)
    assert (row.memory_id, row.type, row.source, row.created_at) == (
        record.memory_id, record.type, record.source, record.created_at,
    )  # fmt: skip
    assert (row.superseded_by, row.access_count, row.expires_at) == (
        record.superseded_by, record.access_count, record.expires_at,
    )  # fmt: skip
    assert row.is_expired(now) == record.is_expired(now)


@settings(max_examples=200, deadline=None)
@given(
    records(),
    _instants,
    st.one_of(st.none(), st.sets(st.sampled_from(list(MemoryType)))),
    st.one_of(st.none(), st.sets(st.one_of(_ids))),
    st.one_of(st.none(), _instants),
    st.booleans(),
)
def test_filters_admit_a_row_exactly_when_they_admit_its_record(
    record: MemoryRecord,
    now: datetime,
    types: set[MemoryType] | None,
    sources: set[str] | None,
    since: datetime | None,
    include: bool,
) -> None:
    table = RecordTable()
    table[1] = record
    filters = Filters.build(
        types=types, sources=sources, since=since, until=since and since + timedelta(days=400),
        include_expired=include, include_superseded=not include,
    )  # fmt: skip
    assert filters.admits(table.row(1), now) == filters.admits(record, now)


def test_the_table_is_a_mapping_in_insertion_order() -> None:
    table = RecordTable()
    made = [
        MemoryRecord(memory_id=f"m{i}", content="x", created_at=T, updated_at=T) for i in range(3)
    ]
    for seq, record in zip((9, 2, 5), made, strict=True):
        table[seq] = record
    assert list(table) == [9, 2, 5] and len(table) == 3 and 2 in table and 3 not in table
    assert table.pop(2) == made[1] and list(table) == [9, 5]
    assert [seq for seq, _ in table.rows()] == [9, 5]
    del table[9]
    assert dict(table) == {5: made[2]}


def test_a_read_after_a_write_or_delete_never_sees_the_old_record() -> None:
    table = RecordTable()
    first = MemoryRecord(memory_id="m", content="x", created_at=T, updated_at=T)
    table[1] = first
    assert table[1] is table[1]  # recently read records are kept built
    table[1] = first.evolve(access_count=3)
    assert table[1].access_count == 3 and table.row(1).access_count == 3
    del table[1]
    assert 1 not in table and table.get(1) is None
    for seq in range(RecordTable.RECENT + 5):  # more than are kept: the oldest are built again
        table[seq] = first.evolve(memory_id=f"m{seq}")
        assert table[seq].memory_id == f"m{seq}"
    assert [table[seq].memory_id for seq in range(3)] == ["m0", "m1", "m2"]


def test_the_index_shares_the_records_cues_and_packs_small_counts() -> None:
    with CueMap() as cm:
        cm.add("Melanie painted a sunset by the lake", memory_id="port")
        seq = cm._seq_of[("default", "port")]
        doc = cm._indexes["default"].docs[seq]
        assert doc.cues == cm._records.row(seq).cues
        assert seq not in cm._columns._cues  # read from the record's row, not kept twice
        assert isinstance(doc.term_counts, bytes)
    index = NamespaceIndex()
    index.add(1, ["a"], [], ["w"] * 300 + ["v"])
    assert index.docs[1].term_counts == (300, 1) and index.docs[1].length == 301
    assert dict(index.docs[1].terms) == {"w": 300, "v": 1}
    index.add(2, [], [], ["p", "q"])
    index.add(3, [], [], ["r", "s"])
    assert index.docs[2].term_counts is index.docs[3].term_counts  # all ones: one object
    assert index.docs[3].term_counts == b"\x01\x01" and index.docs[3].length == 2


_cue_texts = st.text(st.sampled_from(["a", "b", "\x00", "é", "\ud800", " "]), max_size=3)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(_cue_texts, max_size=6).map(tuple), min_size=1, max_size=6),
       st.sets(_cue_texts), st.integers(0, 4))  # fmt: skip
def test_packed_cues_read_back_equal(
    rows: list[tuple[str, ...]], held: set[str], room: int
) -> None:
    """Differential: a row's cues packed (codes for the held ones, text for the rest, or the
    tuple itself) read back as the very tuple, rows sharing one table of codes; ``room``
    codes at most before the table is full (``_CODES_MAX``, made small here)."""
    codes: dict[str, int] = {}
    names: list[str] = []
    packed = []
    limit = recordtable._CODES_MAX
    recordtable._CODES_MAX = room
    try:
        for cues in rows:
            packed.append(recordtable._packed_cues(cues, held, codes, names))
    finally:
        recordtable._CODES_MAX = limit
    assert len(names) <= room and all(names[code] == cue for cue, code in codes.items())
    for cues, row in zip(rows, packed, strict=True):
        read = (
            row if isinstance(row, tuple) else recordtable._unpacked_cues(row, 0, len(row), names)
        )
        assert read == cues and type(read) is tuple


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(_cue_texts, max_size=6).map(tuple), min_size=1, max_size=6),
       st.sets(_cue_texts), st.binary(max_size=3))  # fmt: skip
def test_compiled_unpacked_cues_read_what_the_python_ones_read(
    rows: list[tuple[str, ...]], held: set[str], before: bytes
) -> None:
    """Differential: ``_textc.unpacked_cues`` reads each packed row, at its place in one buffer
    after some other bytes, as the very tuple :func:`recordtable._py_unpacked_cues` reads
    (coded cues, text cues with empty ones and non-ASCII ones, a row of codes alone)."""
    compiled = recordtable._textc
    if compiled is None:
        pytest.skip("the text extension is not built")
    codes: dict[str, int] = {}
    names: list[str] = []
    buffer = bytearray(before)
    spans = []
    for cues in rows:
        row = recordtable._python_packed_cues(cues, held, codes, names)
        if isinstance(row, bytes):
            spans.append((len(buffer), len(buffer) + len(row)))
            buffer += row
    for start, stop in spans:
        got = compiled.unpacked_cues(buffer, start, stop, names)
        assert got == recordtable._py_unpacked_cues(buffer, start, stop, names)
        assert type(got) is tuple and all(type(cue) is str for cue in got)


def test_compiled_unpacked_cues_refuse_what_is_no_packed_row() -> None:
    """A span outside the buffer or too short for its codes is a ValueError, a code past the
    names an IndexError, and text that is not UTF-8 the decoder's error (not a crash)."""
    compiled = recordtable._textc
    if compiled is None:
        pytest.skip("the text extension is not built")
    row = recordtable._python_packed_cues(("a", "b", "x"), {"a", "b"}, {}, names := [])
    assert isinstance(row, bytes) and compiled.unpacked_cues(row, 0, len(row), names) == (
        "a", "b", "x",
    )  # fmt: skip
    for start, stop in ((0, len(row) + 1), (-1, 2), (2, 2), (0, 3)):
        with pytest.raises(ValueError):
            compiled.unpacked_cues(row, start, stop, names)
    with pytest.raises(IndexError):
        compiled.unpacked_cues(row, 0, len(row), names[:1])
    with pytest.raises(UnicodeDecodeError):
        compiled.unpacked_cues(b"\x00\xff", 0, 2, [])


class _Held(set[str]):
    """A container answering through Python code, as the index's held cues may."""

    def __contains__(self, cue: object) -> bool:
        return set.__contains__(self, cue)


@settings(max_examples=600, deadline=None)
@given(st.lists(st.lists(_cue_texts, max_size=8).map(tuple), min_size=1, max_size=8),
       st.sets(_cue_texts), st.integers(0, 5), st.booleans())  # fmt: skip
def test_packing_in_c_is_the_python_packing(
    rows: list[tuple[str, ...]], held: set[str], room: int, python_held: bool
) -> None:
    """Differential: the compiled packer (``_textc.pack_cues``) gives the bytes (or tuple) of
    :func:`_python_packed_cues` and the same codes and names, row after row, a full code table
    (``room``) and empty, NUL-holding and lone-surrogate cues included."""
    pack = recordtable._PACK
    if pack is None:
        pytest.skip("the text extension is not built or is switched off")
    container = _Held(held) if python_held else held
    tables: list[tuple[dict[str, int], list[str]]] = [({}, []), ({}, [])]
    for cues in rows:
        (c_codes, c_names), (codes, names) = tables
        got = pack(cues, container, c_codes, c_names, room)
        limit = recordtable._CODES_MAX
        recordtable._CODES_MAX = room
        try:
            expected = recordtable._python_packed_cues(cues, held, codes, names)
        finally:
            recordtable._CODES_MAX = limit
        assert got == expected and type(got) is type(expected)
        assert (c_codes, c_names) == (codes, names)


_metadata = st.one_of(
    st.fixed_dictionaries({"i": st.integers(-(2**64), 2**64)}),
    st.fixed_dictionaries({"i": st.sampled_from([True, 1.0, "1", None])}),
    st.dictionaries(st.sampled_from("ij"), st.integers(), max_size=2),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2100), _metadata, st.booleans()), max_size=40))
def test_metadata_reads_back_equal_from_the_int_array_or_the_list(
    ops: list[tuple[int, dict[str, Any], bool]],
) -> None:
    """Differential: rows whose metadata is one int each (an array column) and the first row
    of any other (a list from then on) read back as the records stored, after deletes too."""
    table, expected = RecordTable(), {}
    for seq, metadata, delete in ops:
        if delete and seq in expected:
            del table[seq], expected[seq]
            continue
        expected[seq] = MemoryRecord(
            memory_id=f"m{seq}", content="x", created_at=T, updated_at=T, metadata=metadata
        )
        table[seq] = expected[seq]
        values = [v for r in expected.values() for v in r.metadata.values()]
        ints = len(values) == len(expected) and all(
            type(v) is int and abs(v) < 2**63 for v in values
        )
        assert isinstance(table._metadata, list) or ints
    assert {seq: table[seq] for seq in table} == expected
    assert all(repr(table[seq].metadata) == repr(r.metadata) for seq, r in expected.items())


_packable = st.text("abc", min_size=1, max_size=3) | _cue_texts  # mostly packed rows


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 30), st.lists(_packable, max_size=5).map(tuple)),
             max_size=80),
    st.sets(_packable),
)  # fmt: skip
def test_a_cue_column_reads_back_what_each_row_was_given_across_compactions(
    ops: list[tuple[int, tuple[str, ...]]], held: set[str]
) -> None:
    """Differential: rows put, replaced and dropped (an empty tuple given: dropped) read back
    as a dict of them does, with compactions every few dead bytes and no unpacked tuple kept
    (each read unpacks the buffer)."""

    class Small(recordtable._CueColumn):
        COMPACT_AT, UNPACKED = 8, 1

    column, expected = Small(), {}
    column.grow(31)
    for seq, cues in ops:
        if cues:
            column.put(seq, cues, held)
            expected[seq] = cues
        else:
            column.drop(seq)
            expected.pop(seq, None)
        column._unpacked.clear()
        column._last = (-1, ())
        assert all(column.get(at) == expected.get(at, ()) for at in range(31))
    live = sum(column._sizes)
    assert column._dead == len(column._buffer) - live and column._dead <= max(live, 8)


def test_rows_pack_the_cues_other_memories_hold() -> None:
    with CueMap() as cm:
        cm.add_many([{"content": "Melanie painted a sunset by the lake", "memory_id": "a"}])
        cm.add_many([{"content": "Melanie swam in the lake at dawn zorbly", "memory_id": "b"}])
        seq = cm._seq_of[("default", "b")]
        column = cm._records._cues
        start, size = column._starts[seq], column._sizes[seq]
        held = column._buffer[start : start + size]
        # melanie coded; swam is b's own, so it and every cue after it stay text
        assert held == bytes((1,)) + array("H", [0]).tobytes() + b"swam\x00lake\x00dawn\x00zorbly"
        column._unpacked.clear()  # b's cues read from the packed row, then kept
        column._last = (-1, ())
        assert cm._records.row(seq).cues == cm.get("b").cues
        assert cm._records.row(seq).cues is column._unpacked[seq]
        assert "zorbly" in cm.get("b").cues and "zorbly" not in column._codes
        more = column.UNPACKED + 5  # more than are kept: the oldest are unpacked again
        cm.add_many(
            [{"content": f"Melanie at the lake {n}", "memory_id": f"x{n}"} for n in range(more)]
        )
        assert all({"melanie", "lake"} <= set(cm.get(f"x{n}").cues) for n in range(more))
        assert len(column._unpacked) == column.UNPACKED


def test_a_batch_codes_the_cues_its_earlier_memories_hold() -> None:
    """Within one add_many into a new namespace nothing is posted until the batch's flush: the
    cues waiting count as held, so the batch's later rows are coded as a later batch's are."""
    batch = [
        {"content": "Melanie painted a sunset by the lake", "memory_id": "a"},
        {"content": "Melanie swam in the lake at dawn zorbly", "memory_id": "b"},
    ]
    with CueMap() as cm:
        cm.add_many(batch)
        column = cm._records._cues
        first, second = (cm._seq_of[("default", name)] for name in "ab")
        start, size = column._starts[second], column._sizes[second]
        assert column._buffer[start : start + size] == (
            bytes((1,)) + array("H", [0]).tobytes() + b"swam\x00lake\x00dawn\x00zorbly"
        )
        assert column._buffer[column._starts[first]] == 0  # a's cues: nobody held them yet
        column._unpacked.clear()
        column._last = (-1, ())
        assert cm._records.row(second).cues == cm.get("b").cues
        index = cm._indexes["default"]
        assert index.held_cues() is index.cues  # after the flush: the posted cues (the table)


def test_cues_and_terms_are_one_string_object_each_even_from_str_subclasses() -> None:
    class Word(str):
        pass

    made = MemoryRecord(
        memory_id="w", content="lake lake", created_at=T, updated_at=T, cues=(Word("lake"),)
    )
    with CueMap() as cm:
        cm.add("Melanie painted the lake", memory_id="a")
        cm.add("the lake at dawn", memory_id="b")
        cm.add_many([made])
        index = cm._indexes["default"]
        key = next(k for k in index.terms if k == "lake")
        for memory_id in ("a", "b", "w"):
            doc = index.docs[cm._seq_of[("default", memory_id)]]
            assert [t for t in doc.term_names if t == "lake"][0] is key
        assert type(cm.get("w").cues[0]) is str and cm.get("w").cues == ("lake",)


def test_str_subclass_source_and_namespace_are_kept() -> None:
    class Name(str):
        pass

    record = MemoryRecord(
        memory_id="m",
        content="x",
        created_at=T,
        updated_at=T,
        source=Name("s"),
        namespace=Name("n"),
    )
    table = RecordTable()
    table[1] = record
    assert table[1] == record and table.row(1).namespace == "n"


def test_a_non_transcript_doc_keeps_its_content_and_removal_leaves_nothing() -> None:
    index = NamespaceIndex()
    content = "The orders table orders 超时了"
    index.add(1, ["orders"], [], content_terms(content), content=content)
    index.add(2, [], [], ["order"])
    doc = index.docs[1]
    assert doc.words is content and doc.length == len(content_terms(content))
    assert dict(doc.terms) == dict(Counter(content_terms(content)))
    assert doc.term_names[0] == "order" and doc.term_counts[0] == 2
    index.remove(1)
    assert set(index.terms) == {"order"} and list(index.terms["order"]) == [2]
    assert not index.cues and index.total_length == 1
    index.remove(2)
    assert not index.terms and not index.docs and index.total_length == 0


def test_transcript_turns_keep_their_terms() -> None:
    with CueMap() as cm:
        cm.add("Melanie painted a lake", memory_id="t1", type="event", metadata={"session_id": "s"})
        cm.add("Caroline went to the lake", memory_id="n")
        index = cm._indexes["default"]
        turn = index.docs[cm._seq_of[("default", "t1")]]
        note = index.docs[cm._seq_of[("default", "n")]]
        assert isinstance(turn.words, tuple) and note.words == "Caroline went to the lake"
        cm.delete("n")
        assert "caroline" not in index.terms and "went" not in index.terms


def test_metadata_round_trips_in_rows_whose_kind_is_not_shared(monkeypatch: Any) -> None:
    """Past the shared kinds' room, or with a str subclass namespace, a row keeps its metadata
    names beside the values (a flat tuple) and reads back the same."""
    monkeypatch.setattr(recordtable, "_KINDS_SHARED", 2)
    table = RecordTable()
    made = {}
    for seq, metadata in enumerate(({"a": 1}, {"b": 2}, {}, {"c": 3, "d": [4]}, {"e": None})):
        made[seq] = MemoryRecord(memory_id=f"m{seq}", content="x", created_at=T, updated_at=T,
                                 metadata=metadata)  # fmt: skip
        table[seq] = made[seq]
    made[5] = MemoryRecord(memory_id="m5", content="x", created_at=T, updated_at=T,
                           metadata={"f": 5}, namespace=type("Ns", (str,), {})("ns"))  # fmt: skip
    table[5] = made[5]
    assert [table.row(seq).kind[4] for seq in made] == [("a",), ("b",), None, None, None, None]
    assert table.row(3).metadata == ("c", 3, "d", [4]) and table.row(2).metadata is None
    assert all(table[seq] == record and table[seq].metadata == record.metadata
               for seq, record in made.items())  # fmt: skip


def test_metadata_round_trips_through_its_values_and_kinds_are_shared() -> None:
    table = RecordTable()
    nested = {"speaker": "Mel", "n": 3, "tags": ["a", {"b": None}], "": 0.5}
    for seq, metadata in enumerate(({}, nested, {"one": 1}, {"one": None}, {"one": 2})):
        table[seq] = MemoryRecord(
            memory_id=f"m{seq}", content="x", created_at=T, updated_at=T, metadata=metadata,
            source="chat", namespace="ns",
        )  # fmt: skip
    assert table.row(0).metadata is None and table[0].metadata == {}
    assert table[1].metadata == nested and list(table[1].metadata) == list(nested)
    assert table.row(1).metadata == ("Mel", 3, ["a", {"b": None}], 0.5)
    assert table.row(2).metadata == 1 and table[2].metadata == {"one": 1}
    assert table.row(3).metadata is None and table[3].metadata == {"one": None}
    assert table.row(2).kind is table.row(3).kind is table.row(4).kind
    assert table.row(0).kind[:4] == table.row(2).kind[:4] and table.row(0).kind[4] == ()
    assert (table.row(1).type, table.row(1).source, table.row(1).namespace) == (
        MemoryType.NOTE,
        "chat",
        "ns",
    )


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.booleans(), st.integers(0, 3)), max_size=60))
def test_the_table_orders_and_holds_memories_as_a_dict_does(
    ops: list[tuple[int, bool, int]],
) -> None:
    """Rows are a list by seq plus insertion numbers: the same keys, values and order as the
    dict they replaced, through writes, rewrites, deletes and re-inserts of any seq."""
    table, reference = RecordTable(), dict[int, MemoryRecord]()
    for seq, delete, count in ops:
        if delete:
            assert (seq in table) == (seq in reference)
            if seq in reference:
                del table[seq], reference[seq]
            continue
        record = MemoryRecord(memory_id=f"m{seq}", content="x", created_at=T, updated_at=T,
                              access_count=count)  # fmt: skip
        table[seq] = reference[seq] = record
    assert list(table) == list(reference) and len(table) == len(reference)
    assert [(seq, table.row(seq)) for seq in reference] == list(table.rows())
    assert dict(table) == reference and -1 not in table and "1" not in table


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), records(), st.booleans()), max_size=30))
def test_rewritten_and_deleted_rows_leave_nothing_of_their_old_fields(
    ops: list[tuple[int, MemoryRecord, bool]],
) -> None:
    """A row's fields live in columns and side dicts by seq (a datetime stamp, extra fields, a
    kind of its own): rewriting or deleting a seq must leave none of the old ones, and the
    stamps read in one pass are the rows' own."""
    table, reference = RecordTable(), dict[int, MemoryRecord]()
    for seq, record, delete in ops:
        if delete and seq in reference:
            del table[seq], reference[seq]
        else:
            table[seq] = reference[seq] = record
    assert dict(table) == reference
    seqs = list(reference)
    assert table.stamps(seqs) == [table.row(seq).stamp for seq in seqs]
    assert [table.row(seq).created_at for seq in seqs] == [r.created_at for r in reference.values()]
    fresh = RecordTable()
    for seq, record in reference.items():
        fresh[seq] = record
    assert [table.row(seq) for seq in seqs] == [fresh.row(seq) for seq in seqs]


@pytest.mark.skipif(recordtable._textc is None, reason="the text extension is not built")
@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 8), records()), min_size=1, max_size=12),
    st.sampled_from([1, 2, recordtable._KINDS_SHARED]),
    st.booleans(),
)
def test_a_record_read_in_c_is_the_python_read(
    written: list[tuple[int, MemoryRecord]], room: int, int_metadata: bool
) -> None:
    """``_textc.record_of`` reads back what ``_py_record_at`` does (each field, the field order
    of the record's dict, a dict of its own), from shared kinds and kinds of a row's own, an
    int metadata column or a list, stamps or datetimes, with and without extra fields; and
    raises KeyError where no row is held."""
    table, shared = RecordTable(), recordtable._KINDS_SHARED
    recordtable._KINDS_SHARED = room  # past it, a row keeps a kind of its own
    try:
        for seq, record in written:
            if int_metadata:  # every row's metadata one int: the column stays an array("q")
                record = dataclasses.replace(record, metadata={"n": seq})
            table.put(seq, record, ())
    finally:
        recordtable._KINDS_SHARED = shared
    for seq in range(10):
        if seq not in table:
            for read in (recordtable._py_record_at, recordtable._record_at):
                with pytest.raises(KeyError):
                    read(table, seq)
            continue
        expected, got = recordtable._py_record_at(table, seq), recordtable._record_at(table, seq)
        assert got == expected and repr(got) == repr(expected)
        assert list(vars(got).items()) == list(vars(expected).items())
        assert got.metadata is not expected.metadata and vars(got) is not vars(expected)
    for bad in (-1, 10**6):
        with pytest.raises(KeyError):
            recordtable._record_at(table, bad)
