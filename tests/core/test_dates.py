"""A day or month named in the query favours the memories created then (``date_bonus``)."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import pytest

from cuemap_integrations import CueMap
from cuemap_integrations.ranking import Period, _created_within, named_period

from ..conftest import FakeClock

UTC = timezone.utc
MAY_8 = datetime(2023, 5, 8, 15, 0, tzinfo=UTC)
START_MAY = datetime(2023, 5, 1, tzinfo=UTC)


def test_named_period_reads_days_and_months_and_spans_several() -> None:
    day = named_period(["2023-05-08", "2023", "melanie"])
    assert day == Period(datetime(2023, 5, 8, tzinfo=UTC), datetime(2023, 5, 9, tzinfo=UTC))
    december = named_period(["2023-12"])
    assert december == Period(datetime(2023, 12, 1, tzinfo=UTC), datetime(2024, 1, 1, tzinfo=UTC))
    both = named_period(["2023-05-08", "2023-02"])
    assert both == Period(datetime(2023, 2, 1, tzinfo=UTC), datetime(2023, 5, 9, tzinfo=UTC))


@pytest.mark.parametrize("cues", [[], ["2023"], ["2023-13"], ["2023-02-30"], ["12-2023"]])
def test_named_period_ignores_years_and_impossible_dates(cues: list[str]) -> None:
    assert named_period(cues) is None


def test_period_counts_days_after_it() -> None:
    period = named_period(["2023-05-08"])
    assert period is not None
    assert period.holds(MAY_8, 0.0)
    assert not period.holds(MAY_8 + timedelta(days=1), 0.0)
    assert period.holds(MAY_8 + timedelta(days=1), 1.0)
    assert not period.holds(MAY_8 - timedelta(days=1), 1.0)  # never before it


def diary(config: dict[str, float] | None = None) -> CueMap:
    """The same kind of entry on three days; the stronger text match is on the wrong day."""
    cm = CueMap(config=config, clock=FakeClock(MAY_8 + timedelta(days=60)))
    cm.add("We walked the dog by the river", memory_id="may7", created_at=MAY_8 - timedelta(1))
    cm.add("Walked the dog, then a film", memory_id="may8", created_at=MAY_8)
    cm.add("Walked the dog, dog was happy", memory_id="jun20", created_at=MAY_8 + timedelta(43))
    return cm


def test_a_named_day_puts_that_days_memory_first() -> None:
    query = "where did we walk the dog on 8 May, 2023?"
    assert diary({"date_bonus": 0.0}).recall(query, k=3).memory_ids[0] != "may8"
    result = diary().recall(query, k=3)
    assert result.memory_ids[0] == "may8"
    hit = result.hits[0]
    assert dict(hit.breakdown.contributions)["date"] == 8.0
    assert sum(v for _, v in hit.breakdown.contributions) == pytest.approx(hit.score)


def test_a_named_month_covers_its_days_and_days_after_reach_past_its_end() -> None:
    assert diary({"date_bonus": 0.0}).recall("dog walks in May 2023", k=1).memory_ids == ["jun20"]
    assert diary().recall("dog walks in May 2023", k=3).memory_ids[2] == "jun20"
    late = diary({"date_days_after": 1.0}).recall("dog walk on 7 May 2023", k=2).memory_ids
    assert set(late) == {"may7", "may8"}
    assert diary({"date_days_after": 0.0}).recall("dog walk on 7 May 2023", k=1).memory_ids == [
        "may7"
    ]


def test_min_score_counts_the_bonus() -> None:
    cm = diary()
    plain = {h.memory_id: h.score for h in diary({"date_bonus": 0.0}).recall("film", k=3)}
    found = cm.recall("film on 8 May 2023", k=3, min_score=plain["may8"] + 1.0).memory_ids
    assert found == ["may8"]


def test_the_bonus_ranking_is_the_exact_top_k_of_all_candidates() -> None:
    """Two short passes (all memories, dated memories) give what one full re-scoring gives."""
    rng = random.Random(7)
    words = ["dog", "river", "film", "walk", "park", "rain", "tea", "book", "train", "lake"]
    items = [
        {"content": " ".join(rng.choices(words, k=5)) + f" note{i}", "memory_id": f"m{i}",
         "created_at": MAY_8 + timedelta(days=rng.randrange(-20, 20))}
        for i in range(120)
    ]  # fmt: skip
    stores = [
        CueMap(config=cfg, clock=FakeClock(MAY_8 + timedelta(60)))
        for cfg in ({"date_bonus": 0.0, "feedback_hits": 0}, {"feedback_hits": 0})
    ]  # without feedback: a feedback pass would read different first passes
    for cm in stores:
        cm.add_many(items)
    plain, dated = stores
    query = "dog walk by the lake in May 2023"
    everything = plain.recall(query, k=len(items))
    order = {hit.memory_id: n for n, hit in enumerate(everything)}
    june_2 = datetime(2023, 6, 2, tzinfo=UTC)  # May, and the day after it (date_days_after)
    in_may = {i["memory_id"] for i in items if START_MAY <= i["created_at"] < june_2}  # type: ignore[operator]
    rescored = sorted(
        everything,
        key=lambda h: (-(h.score + 8.0 * (h.memory_id in in_may)), order[h.memory_id]),
    )
    assert rescored[:5] != list(everything)[:5]  # the bonus matters here
    for k in (1, 5, 20):
        assert dated.recall(query, k=k).memory_ids == [h.memory_id for h in rescored[:k]]


@pytest.mark.parametrize("packed", [True, False])
def test_creation_in_a_period_is_read_alike_from_packed_rows_and_records(packed: bool) -> None:
    """The date bonus compares a packed row's POSIX stamp as it is, a record's datetime as
    it is: the same answer at the period's edges (its start counts, its end does not)."""
    period = Period(START_MAY, START_MAY + timedelta(days=1))
    edges = [START_MAY - timedelta(microseconds=1), START_MAY, period.end - timedelta(microseconds=1),
             period.end, datetime(2023, 5, 1, 2, 0, 0, 123457, tzinfo=UTC)]  # fmt: skip
    cm = CueMap(clock=FakeClock(MAY_8))
    for i, created in enumerate(edges):
        cm.add(f"memory {i}", memory_id=f"m{i}", created_at=created)
    records = cm._records
    assert all(isinstance(row.stamp, float) for _, row in records.rows())  # POSIX seconds
    head = records.row if packed else records.__getitem__
    holds = _created_within(period, head)
    assert (
        [holds(cm._seq_of[("default", f"m{i}")]) for i in range(len(edges))]
        == [period.covers(created) for created in edges]
        == [False, True, True, False, True]
    )
