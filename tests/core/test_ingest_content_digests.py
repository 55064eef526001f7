"""The C content digests (``_textc.content_digests``: BLAKE2b-128 computed in the extension)
are exactly hashlib's (``lifecycle._py_content_digests``).

Hypothesis draws namespaces and normalized texts of every length around the 128-byte blocks
(empty, one block exactly, one byte more), ASCII, Latin, Chinese and emoji text, lone
surrogates (encoded with ``surrogatepass``), and inputs the C code leaves to the Python (a str
subclass with its own ``__format__``, a tuple, a non-str item: the same error).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cuemap_integrations import lifecycle
from tests.core.test_ingest_record_rows import _result as _outcome
from tests.core.test_textc import _textc


@pytest.fixture(scope="module")
def textc() -> ModuleType:
    return _textc()


class _Shown(str):
    """A str that formats as another text: f-strings (the Python's) call its __format__."""

    def __format__(self, spec: str) -> str:
        return "shown"


_TEXT = st.one_of(
    st.text(st.sampled_from("ab "), min_size=0, max_size=400),
    st.integers(0, 3).flatmap(
        lambda blocks: st.integers(-2, 2).map(lambda d: "x" * max(0, 128 * blocks - 8 + d))
    ),
    st.text(max_size=300),  # any code point, lone surrogates included
    st.text(st.sampled_from("é中🌟\ud800a"), max_size=200),
)


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["default", "ns", "é", ""]) | st.text(max_size=8),
                          _TEXT), max_size=5))  # fmt: skip
@example([("default", "x" * 120)])  # 7 + 1 + 120: one block exactly
@example([("default", "x" * 121), ("", ""), ("a", "\ud800")])
def test_the_c_digests_are_hashlib_s(textc: ModuleType, pairs: list[tuple[str, str]]) -> None:
    namespaces, texts = [n for n, _ in pairs], [t for _, t in pairs]
    assert textc.content_digests(
        namespaces, texts, lifecycle._py_content_digests
    ) == lifecycle._py_content_digests(namespaces, texts)


@pytest.mark.parametrize(
    ("namespaces", "texts"),
    [(["default"], [_Shown("text")]), (("default",), ("text",)), (["default"], [3]),
     (["a", "b"], ["text"]), ([_Shown("ns")], ["text"])],
)  # fmt: skip
def test_other_inputs_are_the_python_s(textc: ModuleType, namespaces: Any, texts: Any) -> None:
    got = _outcome(lambda: textc.content_digests(namespaces, texts, lifecycle._py_content_digests))
    assert got == _outcome(lambda: lifecycle._py_content_digests(namespaces, texts))
    assert _outcome(lambda: lifecycle.content_digests(namespaces, texts)) == got


def test_content_digests_takes_its_reference(textc: ModuleType) -> None:
    with pytest.raises(TypeError):
        textc.content_digests([], [])
