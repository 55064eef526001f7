"""``_textc.flush_postings`` leaves the tables exactly as the Python reference does.

A batch's flush (:meth:`NamespaceIndex.flush`) runs in C when the extension is built: it must
make the same dict entries in the same order, the same representation of every key's postings
(bare seq, shared bare seq, one-posting form, arrays of the same typecodes and items, the same
arrays shared), and return the same new keys. Hypothesis builds tables in varied states (keys
held bare, shared, once with a value, as arrays with byte, float or no values, 8-byte seqs,
arrays shared) and a batch of pending postings (values that are bytes, large, floats, or keys to
count; seqs repeated or past 2**31 - 1), then flushes a copy with each.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import product
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cuemap_integrations import index as index_module
from cuemap_integrations import postings as postings_module
from cuemap_integrations.index import NamespaceIndex, _Pending, _post_compiled, _post_reference
from cuemap_integrations.postings import Postings, PostingsTable, share_equal_seqs

pytestmark = pytest.mark.skipif(
    index_module._FLUSH_POSTINGS is None, reason="the text extension is not built"
)

KEYS = ["order", "cache", "db", "caroline", "超时", "x y", ""]
KEY = st.sampled_from(KEYS)
_CANONICAL = {key: sys.intern(key) for key in KEYS}  # counted keys are posted interned
KIND = st.sampled_from(["cue", "tag", "term"])
VALUE = st.one_of(st.integers(0, 3), st.integers(250, 300), st.sampled_from([1.0, 2.5, 0.1, True]))
BIG = 2**31 + 5  # past array("i"): the tables widen to "q"

# before the batch: (kind, key, seq, value, drop it again); seqs up to the batch's first
EDIT = st.tuples(KIND, KEY, st.integers(0, 14), VALUE, st.booleans())
# keys posted the same seqs before the batch (their arrays are then shared)
SAME = st.tuples(
    st.lists(st.tuples(KIND, KEY), min_size=2, max_size=3),
    st.lists(st.integers(0, 12), min_size=2, max_size=4, unique=True).map(sorted),
)
# one memory of the batch: its keys and values per kind, or its terms to count (repeated,
# and once in a while one of them 300 times: a count past a byte)
MEMORY = st.tuples(
    st.lists(KEY, max_size=4),
    st.lists(KEY, max_size=2),
    st.one_of(
        st.lists(st.tuples(KEY, VALUE), max_size=4),
        st.tuples(st.lists(KEY, max_size=6), st.booleans()),
    ),
)


def _tables() -> tuple[PostingsTable, PostingsTable, PostingsTable]:
    cues, terms = PostingsTable.pair()
    return cues, PostingsTable(), terms


def _build(edits: list[Any], same: list[Any], big: bool) -> list[PostingsTable]:
    """Tables in the state the edits leave (puts, some dropped again, arrays shared)."""
    cues, tags, terms = _tables()
    table = {"cue": cues, "tag": tags, "term": terms}
    for keys, seqs in same:
        for (kind, key), seq in product(keys, seqs):
            table[kind].put(key, seq, 1.0)
    for kind, key, seq, value, drop in edits:
        seq = BIG + seq if big and seq > 10 else seq
        table[kind].put(key, seq, value)
        if drop and seq % 3 == 0:
            table[kind].drop(key, seq)
    share_equal_seqs(t.held(key) for t in (cues, tags, terms) for key in t)
    return [cues, tags, terms]


def _pending(batch: list[Any], start: int, gap: int, repeat: bool) -> _Pending:
    pending = _Pending()
    for offset, (cues, tags, terms) in enumerate(batch):
        seq = start + gap * offset
        if repeat and offset == len(batch) - 1:
            seq = start  # a seq posted again: the reference's put path
        pending.add("cue", seq, tuple(cues), None)
        if tags:
            pending.add("tag", seq, tuple(tags), None)
        if isinstance(terms, tuple):  # keys to count
            keys, many = terms
            fresh = ["".join(list(key)) for key in keys]  # equal strings, other objects
            pending.count("term", seq, [*fresh, *(fresh[:1] * 300 * many)])
            continue
        names = tuple(key for key, _ in terms)
        values: Any = tuple(value for _, value in terms)
        if all(type(v) is int and 0 <= v < 256 for v in values) and offset % 2:
            values = bytes(values)  # as _counted packs them
        pending.add("term", seq, names, values)
    return pending


def _shape(held: Any) -> tuple[Any, ...]:
    """What a table holds for a key, down to the types and typecodes."""
    if type(held) is int:
        return ("bare", held)
    kind = type(held).__name__
    if kind == "_OnePosting":
        return (kind, held._seqs, held._values, type(held._values).__name__, held._shared)
    values = held._values
    values_shape = None if values is None else (values.typecode, values.tolist())
    return (kind, held._seqs.typecode, held._seqs.tolist(), values_shape, held._shared)


def _state(tables: list[PostingsTable]) -> list[Any]:
    """Every dict's entries in order, each key's postings' shape, and which share arrays."""
    state: list[Any] = []
    arrays: dict[int, int] = {}
    for table in tables:
        state.append([(key, _shape(held)) for key, held in table._held.items()])
        state.append(list(table._both.items()))
        state.append([key is _CANONICAL.get(key, key) for key in (*table._held, *table._both)])
        state.append([
            arrays.setdefault(id(held._seqs), len(arrays))
            for held in table._held.values() if type(held) is Postings
        ])  # fmt: skip
    return state


# a term array with byte values and a cue array without, long enough to grow in place from 2
LONG_EDITS = [("term", "db", 2, 2, False), ("term", "db", 5, 1, False),
              ("cue", "db", 3, 1, False), ("cue", "db", 4, 1, False)]  # fmt: skip


@contextmanager
def _grown_in_place_from(length: int) -> Iterator[None]:
    """Arrays of ``length`` seqs and more grow in place (both flushes read the constant)."""
    was = postings_module.GROW_IN_PLACE
    postings_module.GROW_IN_PLACE = length
    try:
        yield
    finally:
        postings_module.GROW_IN_PLACE = was


def _arrays(tables: list[PostingsTable]) -> list[tuple[Any, Any]]:
    """Every Postings' seqs and values arrays (the objects), key by key."""
    return [(held._seqs, held._values) for table in tables for held in table._held.values()
            if type(held) is Postings]  # fmt: skip


@settings(max_examples=400, deadline=None)
# the term table holds a batch's new cue key as the same bare seq: shared at the cue's posting
@example([("term", "db", 13, 1, False)], [], [(["db"], [], [])], 13, 1, False, False, 1024)
@example(LONG_EDITS, [], [(["db"], [], [("db", 1)])], 13, 1, False, False, 2)
@given(
    st.lists(EDIT, max_size=25),
    st.lists(SAME, max_size=3),
    st.lists(MEMORY, max_size=8),
    st.integers(13, 14),
    st.integers(1, 2),
    st.booleans(),
    st.booleans(),
    st.sampled_from([1024, 2, 0]),  # GROW_IN_PLACE: none of these arrays, most, all
)
def test_the_compiled_flush_leaves_the_tables_as_the_reference(
    edits: list[Any],
    same: list[Any],
    batch: list[Any],
    start: int,
    gap: int,
    repeat: bool,
    big: bool,
    in_place: int,
) -> None:
    reference, compiled = _build(edits, same, big), _build(edits, same, big)
    assert _state(reference) == _state(compiled)
    start = BIG + start if big and start % 2 else start
    before = [_arrays(reference), _arrays(compiled)]
    with _grown_in_place_from(in_place):
        new_reference = _post_reference(_pending(batch, start, gap, repeat), *reference)
        new_compiled = _post_compiled(_pending(batch, start, gap, repeat), *compiled)
    assert new_compiled == new_reference
    assert _state(compiled) == _state(reference)
    # the same arrays kept (grown in place) and the same made new, by both flushes
    kept = [[[a is b for a, b in zip(old, held, strict=False)] for old, held in zip(
        was, _arrays(tables), strict=False)] for was, tables in zip(before, (reference, compiled),
        strict=True)]  # fmt: skip
    assert kept[0] == kept[1]


def test_a_bulk_batch_takes_the_compiled_flush(monkeypatch: pytest.MonkeyPatch) -> None:
    """A namespace's flush runs the C function, and a second batch extends its arrays: the
    same tables as the reference's, on keys posted once, repeated, shared and new."""
    calls: list[int] = []

    def counted(*args: Any) -> Any:
        calls.append(1)
        return _post_compiled(*args)

    words = ["alpha beta", "beta gamma", "gamma alpha delta", "beta"]
    indexes = []
    for post in (counted, _post_reference):
        monkeypatch.setattr(index_module, "_post_compiled", post)
        if post is _post_reference:  # as without the extension
            monkeypatch.setattr(index_module, "_FLUSH_POSTINGS", None)
        index = NamespaceIndex()
        for round_ in range(2):
            for i, text in enumerate(words):
                seq = 10 * round_ + i
                index.add(seq, text.split(), [], [*text.split(), "beta"], content=text, defer=True)
            index.flush()
        indexes.append(index)
    assert len(calls) == 2
    compiled, reference = indexes
    tables = [[index.cues, index.tags, index.terms] for index in (compiled, reference)]
    assert _state(tables[0]) == _state(tables[1])
    assert type(compiled.terms.held("beta")) is Postings
    assert compiled.terms.held("beta")._values == array("B", [2, 2, 1, 2, 2, 2, 1, 2])
    assert compiled.cue_lexicon._length_counts == reference.cue_lexicon._length_counts


class _Growing(str):
    """A key whose comparison lengthens the list of keys being read."""

    keys: list[str] = []

    def __eq__(self, other: object) -> bool:
        self.keys.append("more")
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def test_keys_lengthened_while_read_are_an_error_not_an_overrun() -> None:
    """The C code sizes its buffers from the keys' lengths before reading them: a list that
    grows under it (an odd key's ``__eq__``) stops the flush with an error."""
    keys: list[str] = ["a", "b"]
    _Growing.keys = keys
    keys.append(_Growing("a"))
    pending = _Pending()
    pending.add("cue", 1, keys, None)
    with pytest.raises(RuntimeError, match="pending keys changed"):
        _post_compiled(pending, *_tables())


def _long_tables(length: int) -> list[PostingsTable]:
    """A cue table holding "own" and "shared" (and a term table "shared" too: their arrays
    shared), and a term table holding "counted" with byte values, each ``length`` seqs long."""
    tables = _tables()
    cues, _, terms = tables
    for seq in range(length):
        cues.put("own", seq, 1.0)
        cues.put("shared", seq, 1.0)
        terms.put("shared", seq, 1.0)
        terms.put("counted", seq, 1.0 + seq % 2)
    share_equal_seqs([cues.held("shared"), terms.held("shared")])
    return list(tables)


def test_long_arrays_grow_in_place_short_and_shared_ones_are_new() -> None:
    """A batch appends to a key's long own arrays in place (no copy of the whole array), and
    makes a shared or short array a new one of exactly the size, as before."""
    for post in (_post_compiled, _post_reference):
        for length, grown in ((3000, True), (50, False)):
            tables = _long_tables(length)
            cues, _, terms = tables
            own, shared = cues.held("own")._seqs, cues.held("shared")._seqs
            counted = terms.held("counted")._values
            pending = _Pending()
            pending.add("cue", length, ["own", "shared"], None)
            pending.add("term", length, ["shared", "counted"], [1, 3])
            post(pending, *tables)
            assert (cues.held("own")._seqs is own) is grown, (post, length)
            assert (terms.held("counted")._values is counted) is grown, (post, length)
            assert cues.held("shared")._seqs is not shared  # copied: its twin reads the old one
            assert list(cues.held("own")) == list(range(length + 1))
            assert list(terms.held("counted").weights())[-3:] == [1 + length % 2, 2 - length % 2, 3]
            assert list(terms.held("shared")) == list(range(length + 1))
            assert len(cues.held("own")._seqs) == length + 1


def test_an_array_a_reader_holds_a_view_of_is_copied_not_resized() -> None:
    """An array whose buffer is exported (a memoryview, a NumPy view) cannot be resized: the
    flush makes a new one instead, and the reader's view still reads the old items."""
    for post in (_post_compiled, _post_reference):
        tables = _long_tables(3000)
        cues, _, terms = tables
        seqs = cues.held("own")._seqs
        counted = terms.held("counted")
        view, values_view = memoryview(seqs), memoryview(counted._values)
        pending = _Pending()
        pending.add("cue", 3000, ["own"], None)
        pending.add("term", 3000, ["counted"], [7])
        post(pending, *tables)
        assert cues.held("own")._seqs is not seqs and list(cues.held("own"))[-2:] == [2999, 3000]
        assert list(counted.weights())[-2:] == [2.0, 7.0] and len(counted._seqs) == 3001
        assert len(view) == 3000 and len(values_view) == 3000
        view.release()
        values_view.release()
