"""A batch's multi-row INSERTs bind a value the whole group shares once, and store exactly the
rows that one INSERT per row stores.

``store.insert_groups`` makes each full group's statement parameters (``_textc.insert_groups``
when the text extension is built; ``store._py_insert_groups`` is its reference and the path
without it) and ``store._group_insert`` the statement of the group's shape. Hypothesis builds
rows of values that bind alike but differ (``1``, ``1.0``, ``True``; ``0.0``, ``-0.0``; a str
and a str subclass; big ints), drawn from small pools so that columns are often shared.
"""

from __future__ import annotations

import sqlite3
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuemap_integrations import store as store_module
from cuemap_integrations.store import SQLiteStore
from tests.core.test_ingest_rows import _Name
from tests.core.test_textc import _textc

_WIDTH = len(store_module._COLUMNS)
_SIZE = store_module._ROWS_PER_INSERT
_ARGS = (store_module._SHARED_AT, store_module._TWIN_AT)


@pytest.fixture(scope="module")
def textc() -> ModuleType:
    return _textc()


_VALUE = st.one_of(
    st.sampled_from(["", "a", "b", _Name("a"), 0, 1, 1.0, True, -0.0, 0.0, 2**70, None]),
    st.text(max_size=3),
    st.integers(-3, 3),
)


@st.composite
def _rows(draw: st.DrawFn) -> list[tuple[Any, ...]]:
    """Rows of a few groups whose columns hold one value, or one of a few, or any."""
    count = draw(st.sampled_from([0, 1, 3, _SIZE - 1, _SIZE, _SIZE + 2, 2 * _SIZE + 1]))
    pools = [draw(st.lists(_VALUE, min_size=1, max_size=draw(st.sampled_from([1, 1, 2, 5]))))
             for _ in range(_WIDTH)]  # fmt: skip
    rows = [tuple(draw(st.sampled_from(pool)) for pool in pools) for _ in range(count)]
    if rows and draw(st.booleans()):  # updated_at the row's own created_at
        copy, of = store_module._TWIN_AT
        rows = [(*row[:copy], row[of], *row[copy + 1 :]) for row in rows]
    return rows


def _same_outcome(rows: list[tuple[Any, ...]], size: int, textc: ModuleType) -> None:
    made = textc.insert_groups(rows, size, *_ARGS)
    expected = store_module._py_insert_groups(rows, size, *_ARGS)
    assert repr(made) == repr(expected)
    for (_, params), (_, reference) in zip(made, expected, strict=True):
        assert all(a is b for a, b in zip(params, reference, strict=True))  # the very objects


@settings(max_examples=600, deadline=None)
@given(_rows(), st.sampled_from([1, 2, _SIZE]))
def test_the_c_groups_are_the_python_groups(
    textc: ModuleType, rows: list[tuple[Any, ...]], size: int
) -> None:
    _same_outcome(rows, size, textc)


def test_group_examples(textc: ModuleType) -> None:
    """Values equal in Python but bound differently are never one parameter."""
    base = ("ns", "m", "c", "[]", "[]", "note", "s", "t", "t", "", 0, "", "", "", "{}", "d", "", "")
    for column, first, second in [(10, 1, True), (10, 0, 0.0), (2, "a", _Name("a")),
                                  (6, -0.0, 0.0), (10, 2**70, 2**70), (14, 1.0, float("1"))]:  # fmt: skip
        rows = [(*base[:column], value, *base[column + 1 :]) for value in (first, second)]
        _same_outcome(rows, 2, textc)
    (shape, params), = textc.insert_groups([base, base], 2, *_ARGS)  # fmt: skip
    assert shape == 2 ** (len(_ARGS[0]) + 1) - 1 - 2 ** len(_ARGS[0])  # every set, no twin
    assert len(params) == _WIDTH - 3 + 2 * 3  # memory_id, content, cues of each row


def test_insert_groups_refuses_other_arguments(textc: ModuleType) -> None:
    row = ("x",) * _WIDTH
    with pytest.raises(TypeError, match="tuples of the columns"):
        textc.insert_groups([row[:-1]], 1, *_ARGS)
    with pytest.raises(TypeError, match="tuples of the columns"):
        textc.insert_groups([list(row)], 1, *_ARGS)
    with pytest.raises(ValueError, match="size must be positive"):
        textc.insert_groups([row], 0, *_ARGS)
    with pytest.raises(ValueError, match="out of range"):
        textc.insert_groups([row], 1, ((_WIDTH,),), _ARGS[1])
    with pytest.raises(ValueError, match="out of range"):
        textc.insert_groups([row], 1, _ARGS[0], (7, 8))
    assert textc.insert_groups([row], 2, *_ARGS) == []


def _stored(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    columns = ", ".join(f"{c}, typeof({c})" for c in ("seq", *store_module._COLUMNS))
    return conn.execute(f"SELECT {columns} FROM memories ORDER BY seq").fetchall()


@settings(max_examples=300, deadline=None)
@given(_rows())
def test_grouped_statements_store_the_rows_of_single_ones(rows: list[tuple[Any, ...]]) -> None:
    """Whatever the group's shape, its statement stores each row's values with their types
    (and NULL for ""), as an INSERT of each row does: the very parameters, in order."""
    rows = _unique_ids(rows)
    with SQLiteStore() as grouped, SQLiteStore() as single:
        grouped._conn.execute("BEGIN")
        grouped._insert_rows(rows)
        grouped._conn.execute("COMMIT")
        single._conn.executemany(store_module._INSERT, rows)
        assert _stored(grouped._conn) == _stored(single._conn)


_NULLABLE = {store_module._COLUMNS.index(c) for c in ("source", *store_module._EMPTY_IS_NULL)}


def _unique_ids(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The rows with distinct memory ids (the table's unique key), no None where the table
    refuses NULL, no int SQLite cannot hold."""
    return [tuple(f"m{i}" if c == 1 else "x" if v is None and c not in _NULLABLE else
                  -1 if v == 2**70 else v for c, v in enumerate(row))
            for i, row in enumerate(rows)]  # fmt: skip
