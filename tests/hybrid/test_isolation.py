"""The dense side obeys the recall exactly as the rules do: one namespace, and every filter."""

from __future__ import annotations

from datetime import timedelta

from cuemap_integrations import CueMap
from cuemap_integrations.dense import DenseIndex
from tests.conftest import T0, FakeClock

from .fakes import FakeEmbedder, hybrid_store, needs_dense

pytestmark = needs_dense

QUERY = "zzparcelzz?"  # no rule can match it; the fake embedder reads the parcel concept in it


def test_namespaces_never_mix(hcm: CueMap, fake: FakeEmbedder) -> None:
    hcm.add("I like parcels delivered early", namespace="alice", memory_id="same")
    hcm.add("I like parcels delivered early!", namespace="bob", memory_id="same")
    hcm.add("Bob wants parcels at the back door", namespace="bob", memory_id="door")
    alice = hcm.recall(QUERY, namespace="alice", k=5)
    assert [(h.memory.namespace, h.memory_id, h.source) for h in alice] == [
        ("alice", "same", "dense")
    ]
    bob = hcm.recall(QUERY, namespace="bob", k=5)
    assert {(h.memory.namespace, h.memory_id) for h in bob} == {("bob", "same"), ("bob", "door")}
    fake.calls.clear()
    assert hcm.recall(QUERY, namespace="carol", k=5).memory_ids == []
    assert fake.calls == []  # an empty namespace: nothing to search, nothing embedded


def test_index_alone_keeps_namespaces_apart(fake: FakeEmbedder) -> None:
    cm = CueMap()
    index = DenseIndex(fake)
    cm.add_listener(index)
    cm.add("parcel for alice", namespace="alice", memory_id="a")
    cm.add("parcel for bob", namespace="bob", memory_id="b")

    def resolve_anywhere(namespace: str, memory_id: str):  # type: ignore[no-untyped-def]
        return cm.get(memory_id, namespace=namespace)

    found = index.search(QUERY, namespace="alice", k=10, resolve=resolve_anywhere)
    assert [(m.memory.namespace, m.memory.memory_id) for m in found] == [("alice", "a")]


def test_type_source_and_time_filters(clock: FakeClock, fake: FakeEmbedder) -> None:
    cm = hybrid_store(clock, fake)
    cm.add("Parcels go to reception", type="fact", source="chat", memory_id="fact",
           created_at=T0 - timedelta(days=10))  # fmt: skip
    cm.add("I want parcels before noon", type="preference", source="email", memory_id="pref")
    assert cm.recall(QUERY, types=["preference"]).memory_ids == ["pref"]
    assert cm.recall(QUERY, sources=["chat"]).memory_ids == ["fact"]
    assert cm.recall(QUERY, since=T0 - timedelta(days=1)).memory_ids == ["pref"]
    assert cm.recall(QUERY, until=T0 - timedelta(days=1)).memory_ids == ["fact"]


def test_expired_memories_are_hidden(clock: FakeClock, fake: FakeEmbedder) -> None:
    cm = hybrid_store(clock, fake)
    cm.add("Parcel locker code is 4411", memory_id="code", expires_at=T0 + timedelta(hours=1))
    assert cm.recall(QUERY).memory_ids == ["code"]
    clock.advance(hours=2)
    assert cm.recall(QUERY).memory_ids == []
    assert cm.recall(QUERY, include_expired=True).memory_ids == ["code"]


def test_superseded_memories_are_hidden(clock: FakeClock, fake: FakeEmbedder) -> None:
    cm = hybrid_store(clock, fake)
    cm.add("Parcels go to the front desk", memory_id="old", type="fact")
    cm.add("Parcels go to the mail room", memory_id="new", type="fact", supersedes="old")
    assert cm.recall(QUERY, k=5).memory_ids == ["new"]
    assert set(cm.recall(QUERY, k=5, include_superseded=True).memory_ids) == {"new", "old"}


def test_a_session_that_skips_shown_memories_skips_dense_ones_too(hcm: CueMap) -> None:
    hcm.add("Parcels go to the mail room", memory_id="room", type="fact")
    hcm.add("Parcel pickup is at 5 pm", memory_id="pickup", type="fact")
    session = hcm.session("chat-9", skip_shown=True)
    first = session.recall(QUERY, k=1).memory_ids
    second = session.recall(QUERY, k=1).memory_ids
    assert len(first) == len(second) == 1 and first != second
    assert session.recall(QUERY, k=1).memory_ids == []
