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


@given(
    OPS,
    st.lists(st.tuples(st.integers(0, 90), st.sampled_from([1.0, 1, 2, 0.5])), max_size=30),
    st.booleans(),
)
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
    assert list(extended.pairs()) == list(put.pairs())
    assert (extended.buffers()[1] is None) == (put.buffers()[1] is None)
