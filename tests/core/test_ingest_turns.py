"""Which records of a batch are transcript turns, in C (``_textc.turns``), is exactly the Python
answer (``threads._py_turns``).

Hypothesis draws records (without their checks, as the C code reads them) of every type, with
metadata holding a thread key or not, a thread key whose value makes no thread (None, a dict,
a list), other mappings than a dict (their own ``keys()``), keys that are not str, and records
without the attribute asked (the same error).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuemap_integrations import threads
from cuemap_integrations.records import MemoryRecord, MemoryType
from tests.core.test_ingest_record_rows import _raw_record
from tests.core.test_ingest_record_rows import _result as _outcome
from tests.core.test_textc import _textc


@pytest.fixture(scope="module")
def textc() -> ModuleType:
    return _textc()


class _Mapping(Mapping[Any, Any]):
    """Metadata that is a mapping but not a dict."""

    def __init__(self, items: dict[Any, Any]) -> None:
        self._items = items

    def __getitem__(self, key: Any) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


_VALUE = st.sampled_from([None, "s1", 3, {"a": 1}, [1], True])
_METADATA = st.dictionaries(
    st.sampled_from(["session_id", "thread_id", "session", "speaker", "i", 1]), _VALUE, max_size=3
)


@st.composite
def _records(draw: st.DrawFn) -> MemoryRecord:
    when = datetime(2024, 1, 1, tzinfo=timezone.utc)
    metadata = draw(_METADATA)
    fields: dict[str, Any] = {
        "memory_id": "m", "content": "words", "created_at": when, "updated_at": when,
        "namespace": "default", "source": draw(st.sampled_from([None, "chat"])),
        "type": draw(st.sampled_from([*MemoryType, "event"])),
        "metadata": _Mapping(metadata) if draw(st.integers(0, 5)) == 0 else metadata,
    }  # fmt: skip
    if draw(st.integers(0, 30)) == 0:
        del fields[draw(st.sampled_from(["type", "metadata"]))]
    return _raw_record(fields)


@settings(max_examples=1500, deadline=None)
@given(st.lists(_records(), max_size=6))
def test_the_c_turns_are_the_python_ones(textc: ModuleType, records: list[MemoryRecord]) -> None:
    got = _outcome(
        lambda: textc.turns(records, MemoryType.EVENT, threads._THREAD_KEYS, threads.thread_of)
    )
    assert got == _outcome(lambda: threads._py_turns(records))
    assert _outcome(lambda: threads.turns(records)) == got


def test_turns_refuses_other_arguments(textc: ModuleType) -> None:
    with pytest.raises(TypeError):
        textc.turns((), MemoryType.EVENT, threads._THREAD_KEYS, threads.thread_of)
    with pytest.raises(TypeError):
        textc.turns([], MemoryType.EVENT, list(threads._THREAD_KEYS), threads.thread_of)
    assert textc.turns([], MemoryType.EVENT, threads._THREAD_KEYS, threads.thread_of) == []
