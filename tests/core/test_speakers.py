"""A query naming the speaker of transcript turns favours that speaker's turns (``speaker_bonus``)."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import pytest

from cuemap_integrations import CueMap
from cuemap_integrations.threads import Threads

from ..conftest import FakeClock

START = datetime(2023, 5, 1, 9, 0, tzinfo=timezone.utc)
MAY_END = datetime(2023, 6, 2, tzinfo=timezone.utc)


def chat(config: dict[str, float] | None = None) -> CueMap:
    """Ana asks Ben about pottery in the words of the question; Ben answers in his own."""
    cm = CueMap(config=config)
    turns = [
        ("t1", "Ana", "Ana: Ben, what do you think of pottery? Is pottery hard?"),
        ("t2", "Ben", "Ben: I love the wheel, pottery calms me down."),
        ("t3", "Ana", "Ana: Nice. I prefer painting."),
    ]
    cm.add_many(
        [
            {"content": text, "memory_id": i, "type": "event",
             "metadata": {"session_id": "s1", "speaker": who}}
            for i, who, text in turns
        ]
    )  # fmt: skip
    return cm


def test_named_speakers_are_whole_words_of_the_query() -> None:
    cm = chat()
    threads: Threads = cm._threads
    assert threads.named_speakers("default", "what does ben think?") == ("ben",)
    assert threads.named_speakers("default", "did ana and ben meet?") == ("ana", "ben")
    assert threads.named_speakers("default", "benches and bananas") == ()
    assert threads.named_speakers("other", "what does ben think?") == ()
    cm.delete("t2")
    assert threads.named_speakers("default", "what does ben think?") == ()


def test_a_named_speakers_turns_come_first() -> None:
    query = "what does Ben think of pottery?"
    assert chat({"speaker_bonus": 0.0}).recall(query, k=1).memory_ids == ["t1"]
    result = chat({"speaker_bonus": 3.0}).recall(query, k=3)
    assert result.memory_ids[0] == "t2"
    hit = result.hits[0]
    assert dict(hit.breakdown.contributions)["speaker"] == 3.0
    assert sum(v for _, v in hit.breakdown.contributions) == pytest.approx(hit.score)


def test_only_transcript_turns_have_a_speaker() -> None:
    cm = CueMap(config={"speaker_bonus": 3.0})
    cm.add("Ben likes pottery", memory_id="note", metadata={"speaker": "Ben"})
    cm.add("Ben pottery", memory_id="turn", type="event", metadata={"session": 1, "speaker": "Ben"})
    hits = {h.memory_id: dict(h.breakdown.contributions) for h in cm.recall("Ben pottery", k=2)}
    assert "speaker" in hits["turn"] and "speaker" not in hits["note"]


def test_date_and_speaker_bonuses_together_give_the_exact_top_k() -> None:
    """One pass per combination of bonuses gives what re-scoring every candidate gives."""
    rng = random.Random(11)
    words = ["dog", "river", "film", "walk", "park", "rain", "tea", "book", "train", "lake"]
    items = [
        {"content": " ".join(rng.choices(words, k=5)) + f" note{i}",
         "memory_id": f"m{i}", "type": "event", "created_at": START + timedelta(rng.randrange(120)),
         "metadata": {"session": i // 10, "speaker": who}}
        for i, who in enumerate(rng.choices(["Ana", "Ben", "Cy"], k=150))
    ]  # fmt: skip
    bonus = {"date_bonus": 3.0, "speaker_bonus": 1.5}
    no_feedback = {"feedback_hits": 0}  # a feedback pass would read different first passes
    plain, boosted = (
        CueMap(config=cfg, clock=FakeClock(START + timedelta(90)))
        for cfg in (
            {"date_bonus": 0.0, "speaker_bonus": 0.0, **no_feedback},
            {**bonus, **no_feedback},
        )
    )
    plain.add_many(items)
    boosted.add_many(items)
    query = "did Ben walk the dog by the lake in May 2023?"
    everything = plain.recall(query, k=len(items))
    order = {hit.memory_id: n for n, hit in enumerate(everything)}
    item = {i["memory_id"]: i for i in items}

    def gain(memory_id: str) -> float:
        may = item[memory_id]["created_at"] < MAY_END  # May, and the day after (date_days_after)
        ben = item[memory_id]["metadata"]["speaker"] == "Ben"  # type: ignore[index]
        return bonus["date_bonus"] * may + bonus["speaker_bonus"] * ben

    rescored = sorted(
        everything, key=lambda h: (-(h.score + gain(h.memory_id)), order[h.memory_id])
    )
    assert rescored[:5] != list(everything)[:5]
    for k in (1, 5, 20):
        assert boosted.recall(query, k=k).memory_ids == [h.memory_id for h in rescored[:k]]
