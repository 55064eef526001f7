"""The C answer of which records of a batch redaction returns as they are
(``_textc.plainly_clean``) is exactly the Python one (``redact._py_plainly_clean_records``).

Hypothesis builds records (without their checks, as the C code reads them) whose cue origin,
tags and metadata take the C code's own path (metadata of clean keys to bools, ints and None)
or one it leaves to ``redact._plainly_clean``: floats (finite or not), strings that may hold
a secret, keys not yet known clean, non-ASCII or not str, nesting, a dict subclass; and a
record without the attribute asked (the same error).
"""

from __future__ import annotations

from datetime import datetime, timezone
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuemap_integrations import redact as redact_module
from cuemap_integrations.records import MemoryRecord
from tests.core.test_ingest_record_rows import _raw_record
from tests.core.test_ingest_record_rows import _result as _outcome
from tests.core.test_textc import _textc


@pytest.fixture(scope="module")
def textc() -> ModuleType:
    return _textc()


class _Dict(dict):  # type: ignore[type-arg]
    """Metadata of a dict subclass: the C code leaves it to the Python."""


_VALUE = st.one_of(
    st.sampled_from([None, True, False, 0, -3, 2**70, 1.5, float("inf"), float("nan")]),
    st.sampled_from(["x", "hunter2", "sk-" + "a" * 30, "naïve", "", "a <b>"]),
    st.lists(st.integers(), max_size=2),
)
_KEY = st.one_of(
    st.sampled_from(["i", "session", "speaker", "password", "api_key", "é", "token", "n"]),
    st.text(st.sampled_from("ikpasé_"), max_size=6),
    st.just(1),
)
_METADATA = st.one_of(
    st.just({}),
    st.dictionaries(st.sampled_from(["i", "n", "session"]), st.integers(), max_size=3),
    st.dictionaries(_KEY, _VALUE, max_size=3),
    st.dictionaries(st.sampled_from(["i", "n"]), st.integers(), min_size=1).map(_Dict),
    st.dictionaries(st.just("nested"), st.dictionaries(st.just("i"), st.integers()), max_size=1),
)


@st.composite
def _records(draw: st.DrawFn) -> MemoryRecord:
    when = datetime(2024, 1, 1, tzinfo=timezone.utc)
    fields: dict[str, Any] = {
        "memory_id": "m", "content": "plain words", "created_at": when, "updated_at": when,
        "cues": ("cue",), "tags": draw(st.sampled_from([(), ("tag",), [], ""])),
        "metadata": draw(_METADATA),
        "cue_origin": draw(st.sampled_from(["derived", "given", "derivedx"])),
    }  # fmt: skip
    if draw(st.integers(0, 30)) == 0:  # an attribute missing: the same AttributeError
        del fields[draw(st.sampled_from(["tags", "metadata", "cue_origin"]))]
    return _raw_record(fields)


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.tuples(_records(), st.booleans()), max_size=6), st.booleans())
def test_the_c_answers_are_the_python_ones(
    textc: ModuleType, rows: list[tuple[MemoryRecord, bool]], known: bool
) -> None:
    """Each record's answer (or the error) is the Python's, whether the metadata keys are
    known clean already (``known``) or not yet."""
    records, held = [record for record, _ in rows], [secret for _, secret in rows]
    clean_keys = set(redact_module._CLEAN_KEYS) if known else set()
    got = _outcome(
        lambda: textc.plainly_clean(
            records, held, clean_keys, redact_module._SCALARS, redact_module._plainly_clean
        )
    )
    assert got == _outcome(lambda: redact_module._py_plainly_clean_records(records, held))
    if type(got) is list:
        assert all(type(answer) is bool for answer in got)


def test_plainly_clean_refuses_other_arguments(textc: ModuleType) -> None:
    when = datetime(2024, 1, 1, tzinfo=timezone.utc)
    record = MemoryRecord("m", "plain words", when, when, cue_origin="derived")
    args = (set(), redact_module._SCALARS, redact_module._plainly_clean)
    with pytest.raises(TypeError):
        textc.plainly_clean([record], [False, True], *args)  # not one screen per record
    with pytest.raises(TypeError):
        textc.plainly_clean((record,), [False], *args)
    with pytest.raises(TypeError):
        textc.plainly_clean([record], [False], set(), [int], redact_module._plainly_clean)
    assert textc.plainly_clean([record], [False], *args) == [True]
    assert textc.plainly_clean([record], [True], *args) == [False]
