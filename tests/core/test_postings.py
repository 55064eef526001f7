"""Postings behave as the ``{seq: value}`` dict they replace, for any order of puts and deletes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cuemap_integrations.postings import Postings

OPS = st.lists(
    st.tuples(st.booleans(), st.integers(0, 60), st.sampled_from([1.0, 1.0, 2.0, 0.25])),
    max_size=80,
)


@given(OPS)
def test_postings_equal_the_dict_they_replace(ops: list[tuple[bool, int, float]]) -> None:
    postings, expected = Postings(), {}
    for put, seq, value in ops:
        if put:
            postings.put(seq, value)
            expected[seq] = value
        elif seq in expected:
            del postings[seq]
            del expected[seq]
    assert dict(postings.pairs()) == expected
    assert list(postings) == sorted(expected)  # ascending, whatever the order of the puts
    assert postings == expected and len(postings) == len(expected)
    assert all(postings[s] == v and s in postings for s, v in expected.items())
    assert all(s not in postings for s in range(61) if s not in expected)
    assert "7" not in postings and 7.5 not in postings


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
    postings, expected = Postings(), {}
    for put, seq, value in ops:
        if put:
            postings.put(seq, value)
            expected[seq] = value
        elif seq in expected:
            del postings[seq]
            del expected[seq]
    assert dict(postings.pairs()) == expected and list(postings) == sorted(expected)
    assert all(postings[s] == v and s in postings for s, v in expected.items())
    small = Postings()  # same postings, never widened: equal all the same
    for seq, value in sorted(expected.items()):
        if seq < 2**31:
            small.put(seq, value)
    widened = Postings()
    widened.put(2**40, 1.0)
    del widened[2**40]
    for seq, value in small.pairs():
        widened.put(seq, value)
    assert widened == small and widened.buffers()[0].typecode == "q"
