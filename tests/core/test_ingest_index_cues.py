"""A batch's index cues in C (``_textc.index_cues_of``) are exactly the Python ones
(``TextMemo._py_index_cues_of``): a record's own derived cue tuple where expanding it changes
nothing, ``index_cues`` of it otherwise.

Hypothesis draws records whose cues are the memo's derived tuple or an equal copy, given
cues, cues holding an alias term, a content the memo derived nothing for, text keys with
aliases found, keys that are not a ``TextKeys`` (read by attribute), English and Chinese text,
and a record without cues (the same error).
"""

from __future__ import annotations

from datetime import datetime, timezone
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuemap_integrations.aliases import AliasTable
from cuemap_integrations.config import DEFAULT_ALIASES
from cuemap_integrations.records import MemoryRecord
from cuemap_integrations.textkeys import TextKeys, TextMemo
from tests.core.test_ingest_record_rows import _raw_record
from tests.core.test_ingest_record_rows import _result as _outcome
from tests.core.test_textc import _textc


@pytest.fixture(scope="module")
def textc() -> ModuleType:
    return _textc()


_CONTENTS = [
    "The database timed out after the deploy", "we love painting together lately",
    "上次订单超时了,数据库也报错", "Caroline met Jon at the cafe", "the db is down again",
    "a plain memory about hiking", "back up the server logs",
]  # fmt: skip


class _Cues(tuple):  # type: ignore[type-arg]
    """Derived cues of a tuple subclass."""


class _Keys:
    """Text keys that are not a TextKeys: read by attribute."""

    def __init__(self, keys: TextKeys) -> None:
        self.normalized, self.aliases, self.terms = keys


@st.composite
def _rows(draw: st.DrawFn, memo: TextMemo) -> tuple[MemoryRecord, Any]:
    when = datetime(2024, 1, 1, tzinfo=timezone.utc)
    content = draw(st.sampled_from(_CONTENTS) | st.text(max_size=30).filter(str.strip))
    derived = memo.derived_cues(content) if draw(st.booleans()) else None
    keys = memo.keys(content)
    if derived is not None and draw(st.booleans()):  # derived cues holding an alias term
        planted = (*derived, draw(st.sampled_from(["db", "修复", "painting"])))
        # a tuple subclass: the set's own isdisjoint (the C code reads exact tuples itself)
        derived = memo._derived[content] = _Cues(planted) if draw(st.booleans()) else planted
    cues = draw(
        st.sampled_from([derived, tuple(derived or ()), ("db", "down"), ("painting",), (), None])
    )
    fields = {"memory_id": "m", "content": content, "created_at": when, "updated_at": when,
              "cues": cues, "tags": (), "metadata": {}, "cue_origin": "derived"}  # fmt: skip
    if draw(st.integers(0, 30)) == 0:
        del fields["cues"]
    record = _raw_record(fields)
    shape = draw(st.sampled_from(["keys", "aliased", "other"]))
    if shape == "aliased":
        keys = keys._replace(aliases=["db"])
    return record, _Keys(keys) if shape == "other" else keys


@settings(max_examples=600, deadline=None)
@given(st.data())
def test_the_c_index_cues_are_the_python_ones(textc: ModuleType, data: st.DataObject) -> None:
    memo = TextMemo(AliasTable(DEFAULT_ALIASES))
    rows = data.draw(st.lists(_rows(memo), max_size=6))
    records, keys = [record for record, _ in rows], [key for _, key in rows]
    got = _outcome(lambda: memo.index_cues_of(records, keys))
    want = _outcome(lambda: memo._py_index_cues_of(records, keys))
    assert got == want
    if type(got) is list and type(want) is list:  # the own tuple where the Python keeps it
        assert [a is b for a, b in zip(got, want, strict=True)] == [
            a is record.cues for a, record in zip(want, records, strict=True)
        ]


def test_index_cues_of_refuses_other_arguments(textc: ModuleType) -> None:
    memo = TextMemo(AliasTable(DEFAULT_ALIASES))
    with pytest.raises(TypeError):
        textc.index_cues_of([], [], {}, frozenset(), TextKeys)  # no expand
    with pytest.raises(TypeError):
        textc.index_cues_of((), [], {}, frozenset(), TextKeys, memo.index_cues)
    assert textc.index_cues_of([], [], {}, frozenset(), TextKeys, memo.index_cues) == []
