"""Postings behave as the ``{seq: value}`` dict they replace, for any order of puts and deletes."""

from __future__ import annotations

from array import array

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from cuemap_integrations import postings as postings_module
from cuemap_integrations.postings import Postings, PostingsTable

OPS = st.lists(
    st.tuples(
        st.booleans(), st.integers(0, 60), st.sampled_from([1.0, 1.0, 2.0, 0.25, 0.1, 1e300])
    ),
    max_size=80,
)


def replay(ops: list[tuple[bool, int, float]]) -> tuple[Postings, dict[int, float]]:
    """Puts and deletes applied to a Postings and to the dict it stands for."""
    postings, expected = Postings(), {}
    for put, seq, value in ops:
        if put:
            postings.put(seq, value)
            expected[seq] = value
        elif seq in expected:
            del postings[seq]
            del expected[seq]
    return postings, expected


@given(OPS)
def test_postings_equal_the_dict_they_replace(ops: list[tuple[bool, int, float]]) -> None:
    postings, expected = replay(ops)
    assert dict(postings.pairs()) == expected
    assert list(postings) == sorted(expected)  # ascending, whatever the order of the puts
    assert postings == expected and len(postings) == len(expected)
    assert all(postings[s] == v and s in postings for s, v in expected.items())
    assert all(s not in postings for s in range(61) if s not in expected)
    assert "7" not in postings and 7.5 not in postings


@given(OPS, st.lists(st.integers(0, 60), max_size=20, unique=True))
def test_among_reads_the_held_of_many_seqs_in_their_order(
    ops: list[tuple[bool, int, float]], asked: list[int]
) -> None:
    # either form (one posting or arrays), asked nothing, or seqs it does not hold
    postings, expected = replay(ops)
    assert postings.among(dict.fromkeys(asked)) == [
        (s, expected[s]) for s in asked if s in expected
    ]


@given(OPS, st.lists(st.integers(0, 60), max_size=20, unique=True))
def test_holding_is_among_without_the_values(
    ops: list[tuple[bool, int, float]], asked: list[int]
) -> None:
    postings, expected = replay(ops)
    assert postings.holding(asked) == [s for s, _ in postings.among(asked)]
    assert postings.holding(asked) == [s for s in asked if s in expected]


SEQS = st.one_of(
    st.integers(-3, 60), st.integers(2**31 - 3, 2**31 + 2), st.integers(2**63 - 2, 2**64)
)


@given(st.lists(SEQS, max_size=60), st.lists(SEQS, max_size=20), st.sampled_from(["i", "q"]))
@example([1, 3, 5], [5, 2**70, 1, 1, 4, -1], "q")
def test_compiled_holding_finds_what_the_python_one_finds(
    held: list[int], asked: list[int], typecode: str
) -> None:
    """``_textc.holding`` (a binary search in C) returns the same seqs, in the same order, as
    :func:`postings._py_holding` (bisect over the array), for arrays of four and eight bytes,
    seqs on either side of their range and repeated ones."""
    compiled = postings_module._textc
    if compiled is None:
        pytest.skip("the text extension is not built")
    limit = 2**31 if typecode == "i" else 2**63
    seqs = array(typecode, sorted({s for s in held if -limit <= s < limit}))
    got = compiled.holding(seqs, asked)
    assert got == postings_module._py_holding(seqs, asked)
    assert got == [s for s in asked if s in set(seqs)]


def test_compiled_holding_leaves_other_arrays_and_seqs_to_python() -> None:
    """None (the Python search decides) for an array of another type, a list, or a seq that
    is not an int; an error for seqs that are not a sequence."""
    compiled = postings_module._textc
    if compiled is None:
        pytest.skip("the text extension is not built")
    assert compiled.holding(array("h", [1, 2]), [1]) is None
    assert compiled.holding([1, 2], [1]) is None
    assert compiled.holding(array("q", [1, 2]), [1, 2.0]) is None
    assert compiled.holding(array("q", [1, 2]), [True]) is None
    with pytest.raises(TypeError):
        compiled.holding(array("q", [1, 2]), 3)
    held = Postings()
    held.extend([1, 2, 9], [1.0, 1.0, 1.0])
    assert held.holding([9, 2.0, 3]) == [9, 2.0]  # the Python search, for the float


def test_values_are_stored_only_once_one_differs_from_one() -> None:
    postings = Postings()
    for seq in range(5):
        postings.put(seq, 1.0)
    assert postings.buffers()[1] is None  # cues and tags: sequence numbers only
    postings.put(2, 3.0)
    seqs, values = postings.buffers()
    assert list(seqs) == [0, 1, 2, 3, 4] and values is not None and list(values)[2] == 3.0


BIG = st.one_of(st.integers(0, 9), st.integers(2**31 - 3, 2**31 + 2), st.integers(2**62, 2**62 + 3))


@given(st.lists(st.tuples(st.booleans(), BIG, st.sampled_from([1.0, 2.0])), max_size=40))
def test_sequence_numbers_beyond_four_bytes_are_kept_exactly(
    ops: list[tuple[bool, int, float]],
) -> None:
    postings, expected = replay(ops)
    assert dict(postings.pairs()) == expected and list(postings) == sorted(expected)
    assert all(postings[s] == v and s in postings for s, v in expected.items())
    small = Postings()  # same postings, never widened: equal all the same
    for seq, value in sorted(expected.items()):
        if seq < 2**31:
            small.put(seq, value)
    widened = Postings()
    widened.put(2**40, 1.0)
    for seq, value in small.pairs():
        widened.put(seq, value)
    del widened[2**40]  # the array form stays 8 bytes wide
    assert widened == small and (not small or widened.buffers()[0].typecode == "q")


@given(st.lists(st.tuples(st.booleans(), BIG, st.sampled_from([1.0, 2.0, 3])), max_size=12))
def test_one_posting_form_reads_and_compares_like_the_array_form(
    ops: list[tuple[bool, int, float]],
) -> None:
    postings, expected = Postings(), {}
    for put, seq, value in ops:
        before = id(postings)
        if put:
            postings.put(seq, value)
            expected[seq] = float(value)
        elif seq in expected:
            del postings[seq]
            del expected[seq]
        assert id(postings) == before  # the same object in whichever form
        assert dict(postings.pairs()) == expected and len(postings) == len(expected)
        assert list(postings) == sorted(expected) and list(postings.weights()) == [
            expected[s] for s in sorted(expected)
        ]
        assert all(postings[s] == v and s in postings for s, v in expected.items())
        assert 5 in postings or 5 not in expected and "5" not in postings
        seqs, values = postings.buffers()
        assert list(seqs) == sorted(expected)
        assert values is None or list(values) == [expected[s] for s in sorted(expected)]
        rebuilt = Postings()
        for s in sorted(expected, reverse=True):
            rebuilt.put(s, expected[s])
        assert rebuilt == postings and postings == rebuilt and postings == expected


def test_a_key_held_once_keeps_no_arrays() -> None:
    postings = Postings()
    postings.put(7, 2.0)
    assert type(postings).__name__ == "_OnePosting" and postings[7] == 2.0
    postings.put(9, 1.0)
    assert type(postings) is Postings and dict(postings.pairs()) == {7: 2.0, 9: 1.0}


@given(
    OPS,
    st.lists(
        st.tuples(
            st.one_of(st.integers(0, 90), st.integers(2**31 - 3, 2**31 + 3)),
            st.sampled_from([1.0, 1, 2, 0.5, 0.1]),
        ),
        max_size=30,
    ),
    st.booleans(),
)
@example([], [(0, 1.0), (1, 1.0), (2, 1.0), (3, 2)], False)  # 1.0s, then an int: put keeps bytes
def test_extend_equals_putting_each(
    ops: list[tuple[bool, int, float]], batch: list[tuple[int, float]], ones: bool
) -> None:
    """A batch of ascending seqs, above the posted ones or not, ends as put one by one would."""
    extended, put = Postings(), Postings()
    for is_put, seq, value in ops:
        for postings in (extended, put):
            if is_put:
                postings.put(seq, value)
            elif seq in postings:
                del postings[seq]
    pairs = dict(batch)
    seqs = sorted(pairs)
    values = None if ones else [pairs[s] for s in seqs]
    extended.extend(seqs, values)
    for seq in seqs:
        put.put(seq, 1.0 if values is None else pairs[seq])
    assert list(extended.pairs()) == list(put.pairs()) and type(extended) is type(put)
    (seqs_a, values_a), (seqs_b, values_b) = extended.buffers(), put.buffers()
    assert seqs_a.typecode == seqs_b.typecode
    assert (values_a is None) == (values_b is None)
    assert values_a is None or values_b is None or values_a.typecode == values_b.typecode


def test_a_table_keeps_a_single_posting_of_one_as_a_bare_seq() -> None:
    table = PostingsTable()
    table.put("k", 5, 1.0)
    assert table.held("k") == 5
    assert dict(table["k"].pairs()) == {5: 1.0} and table.get("k") == table["k"]
    table.put("k", 5, 1.0)  # again: still bare
    assert table.held("k") == 5
    table.put("k", 9, 1.0)  # two postings: a Postings object
    assert isinstance(table.held("k"), Postings) and list(table["k"]) == [5, 9]
    table.drop("k", 5)  # back to one: bare again
    assert table.held("k") == 9
    table.drop("k", 9)  # none: the key is gone
    assert "k" not in table and len(table) == 0 and table.get("k") is None
    with pytest.raises(KeyError):
        table.drop("k", 9)


def test_a_table_keeps_a_single_posting_of_another_value_as_postings() -> None:
    table = PostingsTable()
    table.put("k", 5, 2.0)
    assert isinstance(table.held("k"), Postings) and table["k"][5] == 2.0
    table.put("k", 5, 1.0)  # its value back to 1.0: bare
    assert table.held("k") == 5
    table.extend("j", [3], [0.5])
    table.extend("i", [3], None)
    table.extend("i", [4, 8], [1.0, 3.0])
    assert dict(table["j"].pairs()) == {3: 0.5} and dict(table["i"].pairs()) == {
        3: 1.0,
        4: 1.0,
        8: 3.0,
    }
    table.drop("i", 8)
    table.drop("i", 4)
    assert table.held("i") == 3
    with pytest.raises(KeyError):
        table.drop("i", 4)


@given(
    st.lists(
        st.tuples(
            st.sampled_from("ab"), st.booleans(), st.integers(1, 6), st.sampled_from([1.0, 2.0])
        ),
        max_size=30,
    )
)
@example([("a", True, 1, 1.0), ("a", True, 2, 2.0), ("a", False, 1, 1.0), ("a", True, 2, 1.0)])
def test_a_table_equals_the_dict_of_dicts_it_replaces(
    ops: list[tuple[str, bool, int, float]],
) -> None:
    table, expected = PostingsTable(), {}  # type: dict[str, dict[int, float]]
    for key, put, seq, value in ops:
        if put:
            table.put(key, seq, value)
            expected.setdefault(key, {})[seq] = value
        elif seq in expected.get(key, {}):
            table.drop(key, seq)
            del expected[key][seq]
            if not expected[key]:
                del expected[key]
    assert {k: dict(table[k].pairs()) for k in table} == expected
    for key in table:
        held = table.held(key)
        assert (type(held) is int) == (list(expected[key].values()) == [1.0])
    for key in ("a", "b"):  # each form, or no postings at all
        asked = [6, 1, 3, 2, 5, 4, 9]
        assert table.holding(key, asked) == [s for s in asked if s in expected.get(key, {})]


def test_values_widen_from_one_byte_to_four_to_eight() -> None:
    postings = Postings()
    postings.extend([1, 2, 3], [2, 1, 255])  # term counts: one byte each
    assert postings.buffers()[1].typecode == "B"  # type: ignore[union-attr]
    postings.put(4, 256)  # past a byte
    assert postings.buffers()[1].typecode == "f"  # type: ignore[union-attr]
    postings.put(5, 0.1)  # not exact in four bytes
    assert postings.buffers()[1].typecode == "d"  # type: ignore[union-attr]
    assert dict(postings.pairs()) == {1: 2, 2: 1, 3: 255, 4: 256, 5: 0.1}
    later = Postings()
    later.extend([1, 2], [3, 4])
    later.extend([5, 6], [0.5, 1e300])  # a batch that needs eight bytes
    assert later.buffers()[1].typecode == "d" and list(later.weights()) == [3, 4, 0.5, 1e300]  # type: ignore[union-attr]


def test_a_one_byte_value_array_reads_through_numpy() -> None:
    np = pytest.importorskip("numpy")
    postings = Postings()
    postings.extend([1, 2, 9], [2, 1, 7])
    values = postings.buffers()[1]
    assert values is not None and values.typecode == "B"
    assert np.array(values, dtype=np.float64).tolist() == [2.0, 1.0, 7.0]


def test_holds_asks_one_posting_without_a_postings_object() -> None:
    table = PostingsTable()
    table.put("a", 3, 1.0)
    table.extend("b", [3, 5], [2, 1])
    assert table.holds("a", 3) and not table.holds("a", 5) and not table.holds("c", 3)
    assert table.holds("b", 5) and not table.holds("b", 4)


PAIR_OPS = st.lists(
    st.tuples(
        st.sampled_from(["put", "drop", "extend", "put_shared"]),
        st.booleans(),  # which table of the pair
        st.sampled_from("ab"),
        st.integers(1, 5),
        st.sampled_from([1.0, 1.0, 1.0, 2.0]),
    ),
    max_size=40,
)


@given(PAIR_OPS)
@example([("put", True, "a", 1, 1.0), ("put", False, "a", 1, 1.0), ("drop", True, "a", 1, 1.0)])
@example([("put", True, "a", 1, 1.0), ("put", False, "a", 1, 1.0), ("put", False, "a", 2, 1.0)])
@example([("put", True, "a", 1, 1.0), ("put", False, "a", 1, 1.0), ("put", True, "a", 1, 2.0)])
@example([("put", True, "a", 1, 1.0), ("put", False, "a", 1, 1.0), ("drop", False, "a", 2, 1.0)])
def test_paired_tables_each_equal_the_dict_of_dicts_they_replace(
    ops: list[tuple[str, bool, str, int, float]],
) -> None:
    """A pair reads back like two independent dicts of dicts across puts, drops and extends
    (keys moving into the shared dict and out of it); a key is in the shared dict exactly
    when both hold it once, with value 1.0, for the same seq."""
    tables = PostingsTable.pair()
    expected: tuple[dict[str, dict[int, float]], ...] = ({}, {})
    for op, which, key, seq, value in ops:
        table, want = tables[which], expected[which]
        held = want.get(key, {})
        if op == "put":
            table.put(key, seq, value)
            want.setdefault(key, {})[seq] = value
        elif op == "put_shared":
            new = all(key not in other for other in expected)
            assert table.put_shared(key, seq) == new
            for other in expected if new else ():
                other[key] = {seq: 1.0}
        elif op == "extend" and (not held or seq > max(held)):
            table.extend(key, [seq, seq + 1], [value, 1.0])
            want.setdefault(key, {}).update({seq: value, seq + 1: 1.0})
        elif op == "drop":
            if seq in held:
                table.drop(key, seq)
                del held[seq]
                if not held:
                    del want[key]
            else:
                with pytest.raises(KeyError):
                    table.drop(key, seq)
        for table, want in zip(tables, expected, strict=True):
            assert {k: dict(table[k].pairs()) for k in table} == want
            assert len(table) == len(want) and sorted(table) == sorted(want)
            for k in "abc":
                assert (k in table) == (k in want)
                assert (table.get(k) is None) == (k not in want)
                assert [table.holds(k, s) for s in range(1, 7)] == [
                    s in want.get(k, {}) for s in range(1, 7)
                ]
    for key in "ab":
        once = [w.get(key) for w in expected]
        shared = once[0] == once[1] and once[0] is not None and list(once[0].values()) == [1.0]
        assert (key in tables[0]._both) == shared
        assert not shared or all(key not in table._held for table in tables)


@given(
    st.lists(st.integers(0, 40), min_size=2, max_size=12, unique=True),
    st.lists(st.tuples(st.booleans(), st.booleans(), st.integers(0, 45)), max_size=30),
)
def test_postings_sharing_a_seqs_array_each_equal_their_dict(
    seqs: list[int], ops: list[tuple[bool, bool, bool | int]]
) -> None:
    """Two postings of the same seqs read one array after share_seqs; puts and deletes on
    either leave the other as it was (each copies the array before changing it in place)."""
    seqs.sort()
    pair = (Postings(), Postings())
    pair[0].extend(seqs)
    pair[1].extend(seqs, [2] * len(seqs))
    assert pair[0].share_seqs(pair[1]) and pair[0].buffers()[0] is pair[1].buffers()[0]
    assert not pair[0].share_seqs(pair[1])  # already one array
    expected = ({s: 1.0 for s in seqs}, {s: 2.0 for s in seqs})
    for which, put, seq in ops:
        postings, want = pair[which], expected[which]
        if put:
            postings.put(seq, 3.0)
            want[seq] = 3.0
        elif seq in want:
            del postings[seq]
            del want[seq]
        for postings, want in zip(pair, expected, strict=True):
            assert dict(postings.pairs()) == want and list(postings) == sorted(want)


def test_a_flush_shares_the_seqs_of_a_words_cue_and_term_postings() -> None:
    from cuemap_integrations.index import NamespaceIndex

    index = NamespaceIndex()
    for seq in range(6):
        cues = ["lake", "port", "x y"] if seq < 5 else ["lake", "port"]
        index.add(seq, cues, [], ["lake", "x"] + ["port"] * (seq % 2), defer=True)
    index.flush()
    assert index.cues["lake"].buffers()[0] is index.terms["lake"].buffers()[0]
    # other keys' equal postings too (a word's term, the two-word cue it starts), not others
    assert index.terms["x"].buffers()[0] is index.cues["lake"].buffers()[0]
    assert index.cues["x y"].buffers()[0] is not index.terms["x"].buffers()[0]
    assert list(index.terms["port"]) == [1, 3, 5]  # a cue of all six: its own array
    index.add(6, ["lake"], [], [])  # one posting more, one table: the other keeps its array
    assert list(index.cues["lake"]) == [0, 1, 2, 3, 4, 5, 6]
    assert list(index.terms["lake"]) == [0, 1, 2, 3, 4, 5]
