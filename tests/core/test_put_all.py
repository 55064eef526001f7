"""``recordtable.put_all``: a run of consecutive seqs is written by one slice assignment, which
leaves a column exactly as a ``__setitem__`` per seq (``drain(map(column.__setitem__, ...))``,
what bulk ingest's columns took before) does, and refuses what it refuses."""

from __future__ import annotations

from array import array
from itertools import repeat
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuemap_integrations.recordtable import drain, put_all, run_of

_TYPECODES = ("B", "H", "I", "i", "q", "d")


def _column(kind: str, size: int) -> list[Any] | array[Any]:
    if kind == "list":
        return [None] * size
    return array(kind, bytes(array(kind).itemsize * size))


def _outcome(call: Any) -> str | None:
    try:
        call()
    except (IndexError, OverflowError, TypeError) as error:
        return type(error).__name__
    return None


@settings(max_examples=600, deadline=None)
@given(
    st.sampled_from(("list", *_TYPECODES)),
    st.integers(0, 40),
    st.one_of(
        st.tuples(st.integers(0, 45), st.integers(0, 12)).map(
            lambda p: list(range(p[0], p[0] + p[1]))
        ),
        st.lists(st.integers(0, 45), max_size=12),
    ),
    st.lists(st.one_of(st.integers(-3, 300), st.floats(0, 9), st.just(2**70)), max_size=14),
    st.sampled_from(("list", "tuple", "iterator")),
)
def test_a_run_is_put_as_a_setitem_per_seq_puts_it(
    kind: str, size: int, seqs: list[int], values: list[Any], shape: str
) -> None:
    old, new = _column(kind, size), _column(kind, size)
    given_values: Any = {"list": list, "tuple": tuple, "iterator": iter}[shape]
    refused = _outcome(lambda: drain(map(old.__setitem__, seqs, given_values(values))))
    assert _outcome(lambda: put_all(new, run_of(seqs), seqs, given_values(values))) == refused
    if refused is None:  # (refused: the loop kept the values before the refused one)
        assert type(new) is type(old) and new == old
    assert len(new) == size  # never grown


@pytest.mark.parametrize(
    ("seqs", "run"),
    [
        ([], None),
        ([4], slice(4, 5)),
        ([4, 5, 6], slice(4, 7)),
        ([4, 6], None),
        ([1, 3, 2, 4], None),  # the span of a run, not in order
        ([5, 5], None),
    ],
)
def test_a_run_is_consecutive_ascending_seqs(seqs: list[int], run: slice | None) -> None:
    assert run_of(seqs) == run


def test_an_endless_iterator_fills_the_run_only() -> None:
    column = array("B", bytes(6))
    put_all(column, run_of([1, 2, 3]), [1, 2, 3], repeat(3))
    assert column == array("B", [0, 3, 3, 3, 0, 0])
