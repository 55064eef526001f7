"""Transcript turns are read with their neighbours; pseudo-relevance feedback."""

from __future__ import annotations

from pathlib import Path

from cuemap_integrations import CueMap
from cuemap_integrations.text import stem

from ..conftest import FakeClock

TURNS = [
    ("t1", "Ana: Did you ever find a new hobby for the winter?"),
    ("t2", "Ben: Yes! Pottery, I go every Tuesday evening."),
    ("t3", "Ana: That sounds relaxing. How is work?"),
    ("t4", "Ben: Busy, the quarterly report is due soon."),
]


def transcript(cm: CueMap, session: str = "s1", namespace: str = "default") -> None:
    cm.add_many(
        [
            {"content": text, "memory_id": i, "type": "event", "namespace": namespace,
             "source": "chat", "metadata": {"session_id": session}}
            for i, text in TURNS
        ]
    )  # fmt: skip


def test_a_turn_is_found_by_the_words_of_the_turn_before_it(cm: CueMap) -> None:
    transcript(cm)
    result = cm.recall("what winter hobby did Ben find?", k=2, explain=True)
    assert result.memory_ids[0] in {"t1", "t2"} and "t2" in result.memory_ids
    off = CueMap(config={"context_weight": 0.0})
    transcript(off)
    assert "t2" not in off.recall("winter hobby", k=4).memory_ids  # only the question matches
    assert "t2" in cm.recall("winter hobby", k=4).memory_ids


def test_only_turns_of_the_same_thread_are_neighbours(cm: CueMap) -> None:
    cm.add("Pottery class is on Tuesday", memory_id="fact", type="fact")
    cm.add("Ana: Did you ever find a new hobby for the winter?", memory_id="x1", type="event",
           metadata={"session_id": "other"})  # fmt: skip
    cm.add("Ben: I like jazz", memory_id="y1", type="event", metadata={"session_id": "third"})
    index = cm._indexes["default"]
    assert all(not doc.context for doc in index.docs.values())


def test_context_follows_deletes_and_updates(cm: CueMap) -> None:
    transcript(cm)
    index = cm._indexes["default"]
    seq_of = {m.memory_id: cm._seq_of[("default", m.memory_id)] for m in cm.memories()}
    pottery, winter, summer = stem("pottery"), stem("winter"), stem("summer")
    assert pottery in dict(index.docs[seq_of["t3"]].context)
    cm.delete("t2")
    assert pottery not in dict(index.docs[seq_of["t3"]].context)
    assert winter in dict(index.docs[seq_of["t3"]].context)  # t1 is its neighbour now
    for postings in index.terms.values():
        assert seq_of["t2"] not in postings
    cm.update("t1", content="Ana: Any plans for the summer?")
    assert summer in dict(index.docs[seq_of["t3"]].context)
    assert winter not in dict(index.docs[seq_of["t3"]].context)


def test_context_is_rebuilt_identically_on_reopen(location: str | Path) -> None:
    db, clock = location, FakeClock()
    with CueMap(db, clock=clock) as cm:
        transcript(cm)
        before = [(h.memory_id, h.score) for h in cm.recall("winter hobby pottery", k=4)]
    with CueMap(db, clock=clock, config={"track_access": False}) as cm:
        assert [(h.memory_id, h.score) for h in cm.recall("winter hobby pottery", k=4)] == before


def test_feedback_pass_finds_related_memories_and_does_not_depend_on_k(clock) -> None:
    rows = [
        ("a", "The billing service runs on Kubernetes"),
        ("b", "Kubernetes pods restart nightly for the billing cluster"),
        ("c", "Nightly restarts caused the invoice emails to arrive late"),
        ("d", "Lunch is at noon"),
    ]
    on, off = CueMap(clock=clock), CueMap(clock=clock, config={"feedback_hits": 0})
    for store in (on, off):
        store.add_many([{"content": t, "memory_id": i} for i, t in rows])
    query = "billing on kubernetes"
    assert "c" not in off.recall(query, k=3).memory_ids
    assert "c" in on.recall(query, k=3).memory_ids  # reached through b's "nightly restarts"
    assert on.recall(query, k=1).memory_ids == on.recall(query, k=3).memory_ids[:1]
