"""Reading LoCoMo-format data: dates, dia ids, turn texts and evidence problems."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from cuemap_integrations.bench.data import (
    LocomoError,
    clean_evidence,
    load_locomo,
    parse_conversations,
    parse_dia_id,
    parse_session_date,
)

from . import tiny


def test_parse_session_date() -> None:
    assert parse_session_date("1:56 pm on 8 May, 2023") == datetime(
        2023, 5, 8, 13, 56, tzinfo=timezone.utc
    )
    assert parse_session_date("12:09 am on 13 September, 2023") == datetime(
        2023, 9, 13, 0, 9, tzinfo=timezone.utc
    )
    assert parse_session_date("12:30 pm on 1 January, 2024").hour == 12
    assert parse_session_date("sometime in May") is None
    assert parse_session_date("1:00 pm on 31 February, 2023") is None


def test_parse_dia_id() -> None:
    assert parse_dia_id("D12:3") == (12, 3)
    for bad in ("D", "D:11:26", "D8:6; D9:17", "d1:2", "D1-2", ""):
        assert parse_dia_id(bad) is None


def test_tiny_file_turns_and_contents(tiny_path: Path) -> None:
    [conv] = load_locomo(tiny_path)
    assert conv.sample_id == "tiny-1"
    assert [t.dia_id for t in conv.turns][:3] == ["D1:1", "D1:2", "D1:3"]
    assert len(conv.turns) == 12
    assert conv.by_id["D1:6"].content == (
        "Ben: My neighbour Clara teaches me on Sundays. [shares an image: a violin on a wooden table]"
    )
    assert conv.by_id["D2:1"].created_at == datetime(2023, 5, 20, 10, 5, tzinfo=timezone.utc)
    assert conv.by_id["D2:1"].session == 2 and conv.by_id["D2:1"].position == 1
    assert conv.last_date == datetime(2023, 5, 20, 10, 5, tzinfo=timezone.utc)


def test_evidence_problems_are_counted_not_fatal(tiny_path: Path) -> None:
    [conv] = load_locomo(tiny_path)
    q = conv.questions
    assert q[2].evidence == ("D1:2", "D1:3")  # recovered from "D1:2; D1:3"
    assert [(p.kind, p.raw) for p in q[2].problems] == [("split", "D1:2; D1:3")]
    assert q[3].evidence == ("D2:4",)
    assert [(p.kind, p.raw) for p in q[3].problems] == [("missing_turn", "D2:9")]
    assert [q.category for q in conv.questions] == [4, 1, 4, 2, 5]


def test_clean_evidence_kinds() -> None:
    [conv] = parse_conversations(tiny.sample())
    ids, problems = clean_evidence(["D", "D:11:26", "D1:1", "D1:1", "D7:1"], conv.by_id, "s", 3)
    assert ids == ("D1:1",)
    assert [p.kind for p in problems] == ["unparseable", "unparseable", "duplicate", "missing_turn"]
    assert problems[0].as_dict() == {
        "kind": "unparseable",
        "raw": "D",
        "sample_id": "s",
        "question_index": 3,
    }


def test_not_locomo_shaped(tmp_path: Path) -> None:
    with pytest.raises(LocomoError):
        parse_conversations({"a": 1})
    with pytest.raises(LocomoError):
        parse_conversations([{"sample_id": "x"}])
    bad = tmp_path / "bad.json"
    bad.write_text("{nope", encoding="utf-8")
    with pytest.raises(LocomoError):
        load_locomo(bad)


def test_bad_session_date_is_reported() -> None:
    data = tiny.sample()
    data[0]["conversation"]["session_2_date_time"] = "later"
    [conv] = parse_conversations(data)
    assert conv.date_problems == ("session_2_date_time='later'",)
    assert conv.by_id["D2:1"].created_at == conv.by_id["D1:1"].created_at
