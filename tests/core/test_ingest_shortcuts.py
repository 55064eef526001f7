"""Bulk ingest's shortcuts (branch ingest7) against the general paths they skip: each gives the
same values or leaves the same state, for any input the general path takes."""

from __future__ import annotations

import sys
from datetime import datetime, timedelta, timezone
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuemap_integrations import MemoryRecord, recordtable, redact, text
from cuemap_integrations.core import _updated_stamp
from cuemap_integrations.index import NamespaceIndex
from cuemap_integrations.text import content_terms

from .test_index_batch import KEYS, _lexicons, _state
from .test_ingest_prefilters import _SECRETISH

UTC = timezone.utc

# any aware instant from year 1 to 9999, in any zone and either fold, to the microsecond or
# (the shortcut's case) to the second
_instants = st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.timezones()
)
_utc = st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
)
_whole_seconds = _utc.map(lambda when: when.replace(microsecond=0))
_any_instant = st.one_of(
    _instants, _utc, _whole_seconds, _whole_seconds.map(lambda when: when.replace(fold=1))
)


def _round_trip_stamp(when: datetime) -> float | datetime:
    """recordtable._stamp without its shortcut: convert, convert back, compare."""
    try:
        seconds = when.timestamp()
        exact = datetime.fromtimestamp(seconds, UTC) == when
    except (OverflowError, OSError, ValueError):
        return when
    return seconds if exact and when.tzinfo is UTC and not when.fold else when


@settings(max_examples=1000, deadline=None)
@given(_any_instant)
def test_a_stamp_is_the_round_trip_one(when: datetime) -> None:
    got, expected = recordtable._stamp(when), _round_trip_stamp(when)
    assert type(got) is type(expected)
    assert got == expected
    if isinstance(expected, datetime):
        assert got is when


def test_a_stamp_shortcut_is_taken_at_its_year_bounds() -> None:
    for year in (1900, 1969, 1970, 2024, 9000):
        when = datetime(year, 1, 1, tzinfo=UTC)
        assert recordtable._stamp(when) == _round_trip_stamp(when) == when.timestamp()
    late = datetime(9000, 12, 31, 23, 59, 59, tzinfo=UTC)
    assert recordtable._stamp(late) == _round_trip_stamp(late)


def _reference_updated(record: MemoryRecord, stamp: float | datetime) -> float:
    """What core._index computed before the shortcut: the row's stamp when it equals the
    record's update time, else that time."""
    updated = record.updated_at.timestamp()
    if isinstance(stamp, float) and stamp == updated:
        updated = stamp
    return updated


@settings(max_examples=500, deadline=None)
@given(_any_instant, st.one_of(st.none(), _any_instant), st.booleans())
def test_an_index_update_time_is_the_row_stamp_or_the_records(
    created: datetime, updated: datetime | None, copy: bool
) -> None:
    if updated is None and copy:  # an equal datetime that is another object
        updated = created + timedelta(0)
    record = MemoryRecord(
        memory_id="m", content="text", created_at=created, updated_at=updated or created
    )
    stamp = recordtable._stamp(record.created_at)
    got = _updated_stamp(record, stamp)
    assert got == _reference_updated(record, stamp)
    assert type(got) is float


_PLAIN = st.lists(st.tuples(KEYS, st.text("ab cd.ef", min_size=1, max_size=30)), max_size=10)


@settings(max_examples=200, deadline=None)
@given(_PLAIN, _PLAIN, st.booleans())
def test_deferred_plain_docs_index_as_one_by_one(
    before: list[tuple[list[str], str]], batch: list[tuple[list[str], str]], tagged: bool
) -> None:
    """A new plain doc added with ``defer`` (no tags, no array view: _defer_plain, no
    IndexedDoc built) leaves the index as the general path adding it at once does; a tagged
    batch takes the general deferred path, and compares the same."""
    deferred, direct = NamespaceIndex(), NamespaceIndex()
    for seq, (cues, content) in enumerate(before):
        for index in (deferred, direct):
            index.add(seq, cues, (), content_terms(content), content=content)
    for offset, (cues, content) in enumerate(batch):
        seq, tags = len(before) + 3 * offset, (["t"] if tagged and offset % 2 else [])
        terms = content_terms(content)
        deferred.add(seq, cues, tags, terms, content=content, updated_ts=seq / 7, defer=True)
        direct.add(seq, cues, tags, terms, content=content, updated_ts=seq / 7)
    deferred.flush()
    assert _state(deferred) == _state(direct)
    assert _lexicons(deferred) == _lexicons(direct)
    for seq in direct.docs:
        assert deferred.docs.columns.updated[seq] == direct.docs.columns.updated[seq]
        assert deferred.docs.cues(seq) == direct.docs.cues(seq)


def test_deferred_plain_docs_take_the_shortcut(monkeypatch: Any) -> None:
    """The shortcut is what the test above exercises (not only the general path)."""
    taken: list[int] = []
    original = NamespaceIndex._defer_plain

    def spy(self: NamespaceIndex, seq: int, *args: Any) -> None:
        taken.append(seq)
        original(self, seq, *args)

    monkeypatch.setattr(NamespaceIndex, "_defer_plain", spy)
    index = NamespaceIndex()
    index.add(1, ["a"], (), ["word"], content="word", defer=True)
    index.add(2, ["a"], ["t"], ["word"], content="word", defer=True)  # tagged: general path
    index.add(3, ["a"], (), ["word"], defer=True)  # a transcript turn's terms: general path
    assert taken == [1]


@settings(max_examples=300, deadline=None)
@given(st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=12))
def test_stems_are_the_porter_stem_interned(word: str) -> None:
    stem = text.stem(word)
    assert stem == text._porter(word)
    if len(stem) > 1:  # an equal string made anew interns to the stem itself: it is the one
        assert sys.intern(stem.encode().decode()) is stem


_ASCII_SECRETISH = _SECRETISH.filter(str.isascii)
_TRIGGER_TEXT = st.text(st.sampled_from("aAbBkK-._@+1 ey"), max_size=12)
_RULE_SPECS = st.lists(
    st.tuples(st.lists(st.one_of(_TRIGGER_TEXT, st.just("密码")), max_size=3).map(tuple),
              st.booleans()),
    max_size=6,
).map(tuple)  # fmt: skip
# long enough to hold more places where a trigger may start than screen keeps in its first pass
_LONG_TRIGGER_TEXT = st.text(st.sampled_from("aAbBkK-._@+1 ey"), min_size=64, max_size=300)
_KEYS = [(underscore, digit) for underscore in (False, True) for digit in (False, True)]


@pytest.mark.skipif(text._C is None, reason="the text extension is not built")
@settings(max_examples=500, deadline=None)
@given(
    st.one_of(_ASCII_SECRETISH, _TRIGGER_TEXT, _LONG_TRIGGER_TEXT), st.tuples(*[_RULE_SPECS] * 4)
)
def test_screened_rules_are_those_whose_trigger_is_in_the_text(
    content: str, keys: tuple[tuple[tuple[tuple[str, ...], bool], ...], ...]
) -> None:
    """_textc.screen: the payloads of the rules of the text's key ("_" in it, a digit in it)
    with a trigger in the text (lower-cased for nocase ones), as ``trigger in haystack``
    finds them, for any triggers (empty, non-ASCII, upper case for a nocase rule, longer)."""
    table = text._C.screen_table(
        tuple(tuple((*rule, (k, at)) for at, rule in enumerate(rules)) for k, rules in enumerate(keys))
    )  # fmt: skip
    k = _KEYS.index(("_" in content, any(c.isdigit() for c in content)))
    expected = tuple(
        (k, at) for at, (triggers, nocase) in enumerate(keys[k])
        if any(trigger in (content.lower() if nocase else content) for trigger in triggers)
    )  # fmt: skip
    assert text._C.screen(content, table) == expected


@pytest.mark.skipif(text._C is None, reason="the text extension is not built")
def test_the_screen_refuses_what_it_cannot_read() -> None:
    table = text._C.screen_table(((), (), (), ()))
    assert text._C.screen("no rules", table) == ()
    with pytest.raises(ValueError, match="ASCII"):
        text._C.screen("密码 123", table)
    with pytest.raises(ValueError):  # another capsule, or none
        text._C.screen("text", object())
    for bad in ((), ((),) * 3, (((("x",), True),), (), (), ()), ((((1,), True, 0),), (), (), ())):
        with pytest.raises(TypeError):
            text._C.screen_table(bad)


@pytest.mark.skipif(text._C is None, reason="the text extension is not built")
@settings(max_examples=500, deadline=None)
@given(st.one_of(_ASCII_SECRETISH, _LONG_TRIGGER_TEXT.map(lambda t: t + " token=abcdefgh123")))
def test_the_compiled_screen_finds_the_rules_of_its_python_twin(content: str) -> None:
    assert content.isascii()
    rules = redact._triggered_rules(content)
    assert list(redact._text._C.screen(content, redact._SCREEN_TABLE)) == rules
    with patch.object(text, "_C", None):
        expected = redact._may_match(content)
    assert redact._may_match(content) is expected
    assert expected is (redact._SCREEN.search(content) is not None)
