"""End to end with the real all-MiniLM-L6-v2 (offline): memories the rules cannot reach are found
by meaning, weak matches stay out, and a persisted index is reused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cuemap_integrations import CueMap
from cuemap_integrations.hybrid import HybridRecall
from tests.conftest import FakeClock

MEMORIES = [
    ("pref", "I prefer afternoon deliveries", "preference"),
    ("port", "The API uses port 8001", "convention"),
    ("schema", "Never change the DB schema without a backup", "convention"),
    ("bike", "Repaired my bike's flat tyre on Sunday", "event"),
    ("zh-pref", "偏好下午发货", "preference"),
]


def store(clock: FakeClock, minilm: Any, path: str = ":memory:") -> CueMap:
    cm = CueMap(path, clock=clock, hybrid={"embedder": minilm})
    if not len(cm):
        cm.add_many([{"memory_id": i, "content": c, "type": t} for i, c, t in MEMORIES])
    return cm


def test_found_only_by_meaning(clock: FakeClock, minilm: Any) -> None:
    plain = CueMap(clock=clock)
    plain.add_many([{"memory_id": i, "content": c, "type": t} for i, c, t in MEMORIES])
    cm = store(clock, minilm)
    for query, expected in [("when should parcels arrive?", "pref"), ("几点寄快递", "zh-pref"),
                            ("which socket number for the service?", "port")]:  # fmt: skip
        assert plain.recall(query).memory_ids == [], query  # the rules find nothing...
        hits = cm.recall(query, k=3)
        assert hits.memory_ids[:1] == [expected], query  # ...the dense side does
        assert hits[0].source == "dense" and hits[0].breakdown.contributions[0][0] == "dense"


def test_a_weak_match_is_not_forced_in(clock: FakeClock, minilm: Any) -> None:
    cm = store(clock, minilm)
    # "schema without a backup" is the nearest memory (about 0.41), under the convention
    # threshold of 0.46: nothing is returned rather than a poor guess
    assert cm.recall("how to keep data safe before migrations?", k=3).memory_ids == []


def test_a_persisted_index_is_reused(tmp_path: Path, clock: FakeClock, minilm: Any) -> None:
    db = str(tmp_path / "m.db")
    first = store(clock, minilm, db)
    assert isinstance(first.extension, HybridRecall)
    first.extension.close()
    first.close()
    calls: list[int] = []
    original = minilm.embed

    def counting(texts: Any) -> Any:
        calls.append(len(texts))
        return original(texts)

    minilm.embed = counting
    try:
        again = store(clock, minilm, db)
        assert calls == []  # loaded, not re-embedded
        assert again.recall("when should parcels arrive?").memory_ids[:1] == ["pref"]
        assert isinstance(again.extension, HybridRecall)
        again.extension.close()
        again.close()
    finally:
        del minilm.embed
