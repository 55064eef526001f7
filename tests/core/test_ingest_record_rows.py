"""The C rows of a batch (``_textc.record_rows``) are exactly the Python rows of its records.

``store.record_rows`` writes each record's SQLite parameters in one C call when the text
extension is built; ``store._py_record_rows`` (``record_to_row`` of each record) is its
reference and the path without it. Hypothesis builds records whose every field takes the
plain path or one the C code leaves to Python: cues and tags that JSON escapes, str
subclasses, lists instead of tuples, metadata nested, with floats or odd keys, timestamps in
other zones, naive or of a datetime subclass, a missing field, values of the wrong type (the
same error). The module is loaded directly, so these run under ``CUEMAP_TEXTC=0`` too.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuemap_integrations import store as store_module
from cuemap_integrations.records import MemoryRecord, MemoryType
from tests.core.test_ingest_rows import _JSONISH, _KEY, _SCALAR, _Level, _Name
from tests.core.test_textc import _textc


@pytest.fixture(scope="module")
def textc() -> ModuleType:
    return _textc()


class _When(datetime):
    """A datetime subclass: its isoformat is the datetime's, but the C code leaves it to it."""


_TEXT = st.one_of(
    st.text(max_size=8),
    st.text(st.sampled_from('ab "\\\x00\n\x1f\x7fé\u2028\ud800~'), max_size=6),
    st.builds(_Name, st.sampled_from(["n", 'q"'])),
)
_STRINGS = st.one_of(
    st.lists(_TEXT, max_size=5).map(tuple),
    st.lists(st.text(st.sampled_from("abc-"), min_size=1, max_size=6), max_size=30).map(tuple),
    st.lists(_TEXT, max_size=3),  # not a tuple: the Python's own path
    st.just(("a", 1)),  # not strings: the Python's error
)
_ZONE = st.sampled_from(
    [timezone.utc, timezone.utc, timezone(timedelta(hours=5, minutes=30)), timezone.min, None]
)
_DATETIME = st.one_of(
    st.datetimes(timezones=_ZONE),
    st.datetimes(timezones=st.just(timezone.utc)).map(lambda when: when.replace(microsecond=0)),
    st.builds(_When, st.integers(1, 9999), st.integers(1, 12), st.integers(1, 28)),
)
_MAYBE_TEXT = st.one_of(st.none(), st.just(""), _TEXT)
_METADATA = st.one_of(
    st.dictionaries(st.sampled_from(["i", "session", "a", "zz"]), st.integers(), max_size=3),
    st.dictionaries(st.sampled_from(["i", "a", "zz"]), _SCALAR, max_size=3),  # flat, any scalar
    st.dictionaries(_KEY, _JSONISH, max_size=4),
    st.just([]),  # not a dict: the Python's own path (and error)
)


@st.composite
def _records(draw: st.DrawFn) -> MemoryRecord:
    """A record with any field values (built without its checks, as the C code reads them)."""
    created = draw(_DATETIME)
    fields: dict[str, Any] = {
        "memory_id": draw(_TEXT), "content": draw(_TEXT), "created_at": created,
        "updated_at": draw(st.one_of(st.just(created), st.none(), _DATETIME)),
        "cues": draw(_STRINGS), "tags": draw(_STRINGS),
        "type": draw(st.one_of(st.sampled_from(MemoryType), st.just("note"))),
        "source": draw(_MAYBE_TEXT), "namespace": draw(_TEXT),
        "last_accessed": draw(st.one_of(st.none(), _DATETIME)),
        "access_count": draw(st.integers()),
        "expires_at": draw(st.one_of(st.none(), _DATETIME)),
        "supersedes": draw(_MAYBE_TEXT), "superseded_by": draw(_MAYBE_TEXT),
        "superseded_at": draw(st.one_of(st.none(), _DATETIME)), "key": draw(_MAYBE_TEXT),
        "metadata": draw(_METADATA), "cue_origin": draw(st.sampled_from(["given", "derived"])),
    }  # fmt: skip
    if draw(st.integers(0, 20)) == 0:  # a field missing: the Python's AttributeError
        del fields[draw(st.sampled_from(sorted(fields)))]
    if draw(st.integers(0, 4)) == 0:  # the fields in another order (the C code reads a dict
        fields = dict(draw(st.permutations(list(fields.items()))))  # in the first one's order)
    if draw(st.integers(0, 10)) == 0:  # an attribute besides the fields
        fields["extra"] = draw(_TEXT)
    return _raw_record(fields)


def _raw_record(fields: dict[str, Any]) -> MemoryRecord:
    """A record holding ``fields`` as they are (no checks)."""
    record = object.__new__(MemoryRecord)
    record.__dict__.update(fields)
    return record


def _result(call: Callable[[], Any]) -> object:
    """What ``call()`` returns, or the type of the error it raises (the same error either way
    is what the differential tests claim)."""
    try:
        return call()
    except Exception as error:  # noqa: BLE001  # any error: compared by type
        return type(error)


def _outcome(call: Any, records: list[MemoryRecord]) -> object:
    """The repr of what ``call(records)`` returns (types told apart: "" from None, True from
    1), or the type of the error it raises."""
    return _result(lambda: repr(call(records)))


# what store.record_rows passes after the records and columns: the Python it falls back on
_FALLBACKS = (store_module.record_to_row, store_module._json_strings, store_module._metadata_json)


def _c_rows(textc: ModuleType, records: list[MemoryRecord]) -> list[tuple[Any, ...]]:
    return textc.record_rows(records, store_module._COLUMNS, *_FALLBACKS)  # type: ignore[no-any-return]


@settings(max_examples=1500, deadline=None)
@given(st.lists(_records(), max_size=4))
def test_the_c_rows_are_the_python_rows(textc: ModuleType, records: list[MemoryRecord]) -> None:
    assert _outcome(lambda batch: _c_rows(textc, batch), records) == _outcome(
        store_module._py_record_rows, records
    )


_FLAT = st.dictionaries(
    st.one_of(st.sampled_from(["i", "a", "zz", "é"]), _KEY),
    st.one_of(st.sampled_from([_Level.LOW, _Name("x"), True, False, None, 2**70, "a\\"]), _SCALAR),
    max_size=4,
)


@settings(max_examples=500, deadline=None)
@given(_FLAT)
def test_the_c_metadata_json_is_the_python_one(textc: ModuleType, metadata: dict) -> None:
    """Flat metadata of every scalar type, plain or not (the C code writes exact str, int,
    bool and None values under plain str keys, and leaves the rest to the Python)."""
    records = [_raw_record({**_record().__dict__, "metadata": metadata})]
    assert repr(_c_rows(textc, records)) == repr(store_module._py_record_rows(records))


def _record(**changes: Any) -> MemoryRecord:
    when = datetime(2024, 1, 1, 12, 30, 5, tzinfo=timezone.utc)
    return MemoryRecord(memory_id="m1", content="the db is down", created_at=when,
                        updated_at=when, cues=("db", "down"), metadata={"i": 1}).evolve(**changes)  # fmt: skip


@pytest.mark.parametrize(
    "changes",
    [{}, {"tags": ("ops", "é")}, {"metadata": {"b": True, "a": None, "c": "x", "d": -3}},
     {"metadata": {"f": 1.5}}, {"metadata": {"s": "tab\there"}}, {"cues": ('say "hi"',)},
     {"metadata": {"e": _Level.LOW}}, {"metadata": {"s": _Name("v"), "i": 2**70}},
     {"created_at": datetime(1, 1, 1, tzinfo=timezone.utc)},
     {"created_at": datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=timezone.utc)},
     {"updated_at": datetime(2025, 5, 6, 7, 8, 9, 10, tzinfo=timezone.utc)},
     {"expires_at": datetime(2030, 1, 1, tzinfo=timezone.utc), "key": "user.name"}],
)  # fmt: skip
def test_row_examples_are_the_python_rows(textc: ModuleType, changes: dict[str, Any]) -> None:
    records = [_record(**changes)]
    assert repr(_c_rows(textc, records)) == repr(store_module._py_record_rows(records))


def test_records_in_other_field_orders_are_read_by_name(textc: ModuleType) -> None:
    """A batch whose first record's __dict__ holds the fields in declaration order, then a
    record holding them in another order, one with an attribute more and one without its
    source: each row is the Python's (the C code reads a dict in the first one's order only
    when it holds exactly those keys in it)."""
    first = _record()
    shuffled = _raw_record(dict(reversed(_record(content="b").__dict__.items())))
    extra = _raw_record({**_record(content="c").__dict__, "extra": 1})
    fewer = _raw_record({k: v for k, v in _record().__dict__.items() if k != "source"})
    fewer.__dict__["zz"] = None  # as many keys as the fields, one of them not a field
    records = [first, shuffled, extra, first, fewer]
    assert _outcome(lambda batch: _c_rows(textc, batch), records) == _outcome(
        store_module._py_record_rows, records
    )
    assert _c_rows(textc, records[:4]) == store_module._py_record_rows(records[:4])


def test_record_rows_refuses_other_fields_and_non_sequences(textc: ModuleType) -> None:
    with pytest.raises(ValueError, match="fields must be store._COLUMNS"):
        textc.record_rows([_record()], store_module._COLUMNS[:-1], *_FALLBACKS)
    with pytest.raises(TypeError, match="records must be a sequence"):
        textc.record_rows(7, store_module._COLUMNS, *_FALLBACKS)
    assert textc.record_rows((), store_module._COLUMNS, *_FALLBACKS) == []


def test_a_python_error_in_a_batch_propagates(textc: ModuleType) -> None:
    def failing(record: MemoryRecord) -> tuple[Any, ...]:
        raise RuntimeError("row")

    broken = object.__new__(MemoryRecord)  # no fields at all: the C code asks ``row_of``
    with pytest.raises(RuntimeError, match="row"):
        textc.record_rows([_record(), broken], store_module._COLUMNS, failing, *_FALLBACKS[1:])


@pytest.mark.parametrize("name", ["record_rows", "insert_groups"])
def test_the_c_batch_functions_are_used_unless_the_extension_is_switched_off(
    textc: ModuleType, name: str
) -> None:
    """store's record rows and insert groups (its Python twins with ``CUEMAP_TEXTC=0``)."""
    code = f"from cuemap_integrations import store; print(store.{name}.__name__)"
    env = {**os.environ, "CUEMAP_TEXTC": "0"}
    off = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert off.stdout.strip() == f"_py_{name}"
    if os.environ.get("CUEMAP_TEXTC", "1") != "0":
        assert getattr(store_module, name) is getattr(store_module, f"_c_{name}")
