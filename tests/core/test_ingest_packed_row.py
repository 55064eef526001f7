"""The C packed row of a record (``_textc.packed_row``) is exactly the Python one.

``RecordTable.put`` packs each record through ``recordtable._packed_row``: in C when the text
extension is built (it writes a new memory whose optional fields are all their defaults and
calls ``_packed`` for the rest), else ``_py_packed_row`` (``_kind`` and ``_packed``), its
reference. Hypothesis compares the two on valid records of every shape (metadata names and
values, str subclasses, sources, zones, microseconds, years past the stamp's shortcut, fields
past their defaults) and on records with any field values at all, with the tables' kind
registry (shared, full, own kinds) compared after each batch. The module is loaded directly,
so these run under ``CUEMAP_TEXTC=0`` too.
"""

from __future__ import annotations

import sys
from datetime import datetime, timedelta, timezone
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuemap_integrations import recordtable
from cuemap_integrations.records import MemoryRecord, MemoryType
from tests.core.test_ingest_record_rows import _records
from tests.core.test_ingest_rows import _Level, _Name
from tests.core.test_textc import _textc


@pytest.fixture(scope="module")
def textc() -> ModuleType:
    return _textc()


_T = datetime(2024, 1, 1, tzinfo=timezone.utc)
_WHEN = st.one_of(
    st.integers(-(10**9), 10**10).map(lambda s: _T + timedelta(seconds=s)),
    st.sampled_from(
        [_T.replace(microsecond=7), _T.replace(year=1899), _T.replace(year=9001), _T.replace(fold=1),
         _T.replace(year=1900, month=1, day=1), _T.replace(year=9000, month=12, day=31, hour=23),
         _T.astimezone(timezone(timedelta(hours=3))), _T.replace(year=2000, month=2, day=29)]
    ),
)  # fmt: skip
_NAME = st.sampled_from(["i", "session", "a", _Name("s")])
_VALUE = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=4),
    st.sampled_from([_Level.LOW, _Name("x"), [1, {"a": 2}]]),
)  # fmt: skip


@st.composite
def _valid_records(draw: st.DrawFn) -> MemoryRecord:
    """A valid record: usually a new memory's defaults, sometimes a field past them."""
    created = draw(_WHEN)
    record = MemoryRecord(
        memory_id=draw(st.sampled_from(["m1", "m2", _Name("m3")])),
        content="the db is down",
        created_at=created,
        updated_at=draw(st.one_of(st.just(created), _WHEN)),
        cues=draw(st.lists(st.sampled_from(["db", "down", "port", _Name("api")]), max_size=4)),
        type=draw(st.sampled_from(MemoryType)),
        source=draw(st.sampled_from([None, "chat", "scale", _Name("chat")])),
        namespace=draw(st.sampled_from(["default", "other", _Name("default")])),
        metadata=draw(st.dictionaries(_NAME, _VALUE, max_size=3)),
        cue_origin=draw(st.sampled_from(["given", "derived"])),
    )
    changes = draw(
        st.dictionaries(
            st.sampled_from(["tags", "access_count", "key", "expires_at", "supersedes"]),
            st.sampled_from([("ops",), 3, "user.name", _T, "m0"]),
            max_size=1,
        )
    )
    if "tags" in changes:  # each change of a type its field takes
        changes["tags"] = ("ops",)
    for name, value in (("access_count", 3), ("key", "k"), ("supersedes", "m0")):
        if name in changes:
            changes[name] = value
    if "expires_at" in changes:
        changes["expires_at"] = _T
    # a record is read as stored: the table packs what the store kept
    return record.evolve(**changes) if changes else record


def _packed_rows(
    pack: Any, records: list[MemoryRecord], codes: dict[Any, int], kinds: list[Any]
) -> object:
    """The repr of each packed row, whether its kind is the registry's, whether its cues are
    interned, and the registry after them; or the type of the error raised."""
    try:
        rows = [pack(record, codes, kinds) for record in records]
    except Exception as error:  # noqa: BLE001  # the same error either way is the claim
        return type(error)
    shared = [row[1] == recordtable._OWN_KIND or row[0] is kinds[row[1]] for row in rows]
    kept = [all(sys.intern(cue) is cue for cue in row[4]) for row in rows if type(row[4]) is tuple]
    return repr(rows), shared, kept, repr(codes), repr(kinds)


def _both(textc: ModuleType, records: list[MemoryRecord], kinds_max: int) -> tuple[object, object]:
    def c_pack(record: MemoryRecord, codes: dict[Any, int], kinds: list[Any]) -> Any:
        return textc.packed_row(recordtable._LAYOUT, recordtable._py_packed_row,
                                recordtable._packed, record, codes, kinds, kinds_max)  # fmt: skip

    def py_pack(record: MemoryRecord, codes: dict[Any, int], kinds: list[Any]) -> Any:
        return recordtable._py_packed_row(record, codes, kinds, kinds_max)

    return _packed_rows(c_pack, records, {}, []), _packed_rows(py_pack, records, {}, [])


@settings(max_examples=800, deadline=None)
@given(st.lists(_valid_records(), max_size=6), st.sampled_from([4096, 2, 0]))
def test_the_c_packed_rows_are_the_python_ones(
    textc: ModuleType, records: list[MemoryRecord], kinds_max: int
) -> None:
    c_rows, python_rows = _both(textc, records, kinds_max)
    assert c_rows == python_rows


@settings(max_examples=800, deadline=None)
@given(st.lists(_records(), max_size=3))
def test_the_c_packed_rows_of_any_fields_are_the_python_ones(
    textc: ModuleType, records: list[MemoryRecord]
) -> None:
    """Records holding any values (built without checks): the same rows or the same error."""
    c_rows, python_rows = _both(textc, records, 4096)
    assert c_rows == python_rows


def test_packed_row_refuses_another_layout(textc: ModuleType) -> None:
    record = MemoryRecord(memory_id="m", content="x", created_at=_T, updated_at=_T)
    layout = (recordtable._ROW_FIELDS[:-1], *recordtable._LAYOUT[1:])
    with pytest.raises(ValueError, match="layout must be recordtable._LAYOUT"):
        textc.packed_row(
            layout, recordtable._py_packed_row, recordtable._packed, record, {}, [], 4096
        )


def test_the_c_packed_rows_are_used_unless_the_extension_is_switched_off() -> None:
    if recordtable._textc is None:
        assert recordtable._packed_row is recordtable._py_packed_row
    else:
        assert recordtable._packed_row.args[1:] == (  # type: ignore[attr-defined]
            recordtable._py_packed_row,
            recordtable._packed,
        )
