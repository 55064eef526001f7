"""The third round of ingest speed-ups (rows, record checks, the collector) changes no output.

Each shortcut against the general code it skips: the metadata JSON of a row against the encoder,
the flat metadata copy against the walk (and its errors), the UTC timestamp against
``astimezone``, the empty tag tuple against the item checks; and a batch leaves the garbage
collector's frozen objects and the stored rows as the general path would.
"""

from __future__ import annotations

import enum
import gc
import json
import sqlite3
import weakref
from collections.abc import Iterator
from contextlib import closing
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuemap_integrations import CueMap
from cuemap_integrations import records as records_module
from cuemap_integrations import store as store_module
from cuemap_integrations.errors import ValidationError

_T = datetime(2026, 1, 2, tzinfo=timezone.utc)


class _Level(enum.IntEnum):
    LOW = 1


class _Name(str):
    """A str subclass: the encoder and the walk treat it as a string; the shortcuts step aside."""


_KEY = st.one_of(
    st.sampled_from(["i", "session", "speaker", "a", "b", "Straße", "\ud800", "", " ", '"q"']),
    st.text(max_size=5),
    st.builds(_Name, st.sampled_from(["n", "i"])),
)
_SCALAR = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=6),
    st.sampled_from(["é", "\n\t\"\\", "\u2028", "\ud800", _Level.LOW, _Name("x"), 2**70]),
)  # fmt: skip
_JSONISH = st.recursive(
    _SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_KEY, inner, max_size=3)),
    max_leaves=8,
)


def _outcome(call: object, *args: object) -> object:
    """What ``call(*args)`` returns, or the field and value of the ValidationError it raises."""
    try:
        return call(*args)  # type: ignore[operator]
    except ValidationError as error:
        return ("error", error.field, repr(error.value))


@settings(max_examples=600, deadline=None)
@given(st.dictionaries(_KEY, _JSONISH, max_size=5))
def test_the_row_metadata_json_is_the_sorted_encoder_output(metadata: dict) -> None:
    try:
        expected = store_module._TO_SORTED_JSON(metadata)
    except (ValueError, TypeError, UnicodeEncodeError) as error:
        with pytest.raises(type(error)):
            store_module._metadata_json(metadata)
        return
    assert store_module._metadata_json(metadata) == expected


@pytest.mark.parametrize(
    "metadata",
    [{}, {"i": 7}, {"b": True, "a": None, "c": "é\"\n", "d": -3}, {"f": 1.5}, {"n": [1, {"x": 2}]},
     {"e": _Level.LOW}, {"s": _Name("v")}, {"z": 1, "a": 2, "m": False}],
)  # fmt: skip
def test_row_metadata_examples_are_the_encoder_output(metadata: dict) -> None:
    assert store_module._metadata_json(metadata) == json.dumps(
        metadata, ensure_ascii=False, sort_keys=True
    )


class _Plain(dict):  # type: ignore[type-arg]
    """A dict subclass: json_safe_copy walks it (the flat shortcut takes exact dicts only)."""


def _walk(value: object, depth: int = 0) -> object:
    """json_safe_copy with the flat shortcut out of the way."""
    given_value = _Plain(value) if type(value) is dict else value
    return records_module.json_safe_copy(given_value, "metadata", depth)


@settings(max_examples=600, deadline=None)
@given(
    st.dictionaries(_KEY, _JSONISH, max_size=5), st.integers(0, records_module._MAX_JSON_DEPTH + 1)
)
def test_the_flat_metadata_copy_is_the_walk(metadata: dict, depth: int) -> None:
    expected = _outcome(_walk, metadata, depth)
    got = _outcome(records_module.json_safe_copy, metadata, "metadata", depth)
    if isinstance(expected, dict):
        assert type(got) is dict
        assert list(got.items()) == list(expected.items())
        assert got is not metadata  # a copy: the caller's dict may change later
    else:
        assert repr(got) == repr(expected)


def test_a_flat_dict_at_the_depth_limit_is_refused_like_the_walk_refuses_it() -> None:
    deepest = records_module._MAX_JSON_DEPTH
    with pytest.raises(ValidationError):
        records_module.json_safe_copy({"i": 1}, "metadata", deepest)
    assert records_module.json_safe_copy({}, "metadata", deepest) == {}
    assert records_module.json_safe_copy({"i": 1}, "metadata", deepest - 1) == {"i": 1}


_ZONES = [timezone.utc, timezone(timedelta(hours=2)), timezone(timedelta(0))]


@pytest.mark.parametrize("zone", _ZONES)
def test_a_utc_timestamp_is_coerced_to_itself_and_others_to_utc(zone: timezone) -> None:
    when = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=zone)
    coerced = records_module.coerce_timestamp(when, "created_at")
    assert coerced == when.astimezone(timezone.utc)
    assert coerced.tzinfo is timezone.utc
    if zone is timezone.utc:
        assert coerced is when  # what astimezone returns: the record keeps the caller's object


def test_a_datetime_subclass_and_naive_or_odd_values_take_the_general_path() -> None:
    class _When(datetime):
        pass

    sub = _When(2026, 1, 2, tzinfo=timezone.utc)
    assert records_module.coerce_timestamp(sub, "created_at") == sub
    for bad in (datetime(2026, 1, 2), "yesterday", 3):
        with pytest.raises(ValidationError) as error:
            records_module.coerce_timestamp(bad, "created_at")
        assert (error.value.field, error.value.value) == ("created_at", bad)


@pytest.mark.parametrize(
    ("tags", "expected"),
    [(None, ()), ((), ()), ([], ()), ("", "error"), (" ", "error"), (("a", ""), "error"),
     (("a", "b"), ("a", "b")), (iter(()), ())],
)  # fmt: skip
def test_empty_tags_are_the_empty_tuple_and_bad_ones_still_fail(
    tags: object, expected: object
) -> None:
    got = _outcome(records_module._string_tuple, tags, "tags")
    if expected == "error":
        assert isinstance(got, tuple) and got[:2] == ("error", "tags")
    else:
        assert got == expected


def _tracked(obj: object) -> bool:
    """Whether ``obj`` is in one of the collector's generations (frozen objects are in none)."""
    return any(o is obj for o in gc.get_objects())


@pytest.mark.parametrize("frozen_before", [False, True])
def test_a_batch_leaves_frozen_objects_frozen(frozen_before: bool) -> None:
    was = gc.isenabled()
    gc.enable()
    sentinel: list[object] = []  # a container the collector tracks
    if frozen_before:
        gc.freeze()  # as a pre-fork server does
    try:
        assert _tracked(sentinel) is not frozen_before
        with CueMap() as cm:
            cm.add_many([{"content": f"turn {i} about Redis port 80{i:02d}"} for i in range(50)])
            assert _tracked(sentinel) is not frozen_before
            assert (gc.get_freeze_count() > 0) is frozen_before
            assert gc.isenabled()
    finally:
        gc.unfreeze()
        (gc.enable if was else gc.disable)()


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_cycles_dropped_during_a_batch_are_collected_afterwards() -> None:
    """The batch's objects join the oldest generation: a full collection still frees a
    reference cycle that became garbage while the batch ran (made by the items' generator)."""
    refs: list[weakref.ref[_Cycle]] = []

    def items() -> Iterator[dict[str, str]]:
        for i in range(3):
            refs.append(weakref.ref(_Cycle()))  # garbage at once, but only the collector frees it
            yield {"content": f"Redis runs on port 637{i}"}

    was = gc.isenabled()
    gc.enable()
    try:
        with CueMap() as cm:
            cm.add_many(items())
        assert len(refs) == 3
        gc.collect()
        assert [ref() for ref in refs] == [None, None, None]
    finally:
        (gc.enable if was else gc.disable)()


def _rows(path: Path) -> list[tuple[object, ...]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(store_module._SELECT + " ORDER BY seq").fetchall()


@settings(max_examples=25, deadline=None)
@given(st.lists(st.dictionaries(_KEY, _JSONISH, max_size=3), min_size=1, max_size=4))
def test_stored_rows_hold_the_encoder_json_of_each_metadata(
    tmp_path_factory: pytest.TempPathFactory, metadata: list[dict]
) -> None:
    path = tmp_path_factory.mktemp("rows") / "m.db"
    items = [
        {"content": f"note {i}", "metadata": m, "created_at": _T} for i, m in enumerate(metadata)
    ]
    with CueMap(path, clock=lambda: _T) as cm:
        try:
            records = cm.add_many(items)
        except ValidationError:
            assert _rows(path) == []  # a failing batch stores nothing
            return
    rows = _rows(path)
    assert [row[0] for row in rows] == list(range(1, len(records) + 1))
    for row, record in zip(rows, records, strict=True):
        expected = json.dumps(record.metadata, ensure_ascii=False, sort_keys=True)
        assert row[1 + store_module._COLUMNS.index("metadata")] == expected
        assert store_module.row_to_record(row)[1] == record
