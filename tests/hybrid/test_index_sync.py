"""The dense index follows every write: add, update, delete, supersede, forget; and a failing
embedder never loses a memory (it stays pending and is embedded on the next write or recall)."""

from __future__ import annotations

import threading

import pytest

from cuemap_integrations import CueMap
from cuemap_integrations.dense import DenseIndex
from cuemap_integrations.hybrid import HybridRecall
from tests.conftest import FakeClock

from .fakes import FakeEmbedder, hybrid_store, needs_dense

pytestmark = needs_dense

QUERY = "zzparcelzz"  # only the fake embedder understands it (the parcel concept)


def index_of(cm: CueMap) -> DenseIndex:
    hybrid = cm.extension
    assert isinstance(hybrid, HybridRecall) and isinstance(hybrid.index, DenseIndex)
    return hybrid.index


def test_add_embeds_each_write_once(hcm: CueMap, fake: FakeEmbedder) -> None:
    hcm.add_many([{"content": "Parcels go to the mail room"}, {"content": "Lunch at noon"}])
    assert fake.calls == [["Parcels go to the mail room", "Lunch at noon"]]  # one batch
    assert len(index_of(hcm)) == 2


def test_update_reembeds_only_when_the_text_changes(hcm: CueMap, fake: FakeEmbedder) -> None:
    hcm.add("Lunch at noon", memory_id="m")
    assert hcm.recall(QUERY).memory_ids == []
    fake.calls.clear()
    hcm.update("m", tags=["food"])
    assert fake.calls == []  # same text, same vector
    hcm.update("m", content="Parcels arrive at noon")
    assert fake.calls == [["Parcels arrive at noon"]]
    assert len(index_of(hcm)) == 1
    assert [(h.memory_id, h.source) for h in hcm.recall(QUERY)] == [("m", "dense")]


def test_delete_and_forget_remove_vectors(hcm: CueMap) -> None:
    hcm.add("Parcels go to the mail room", memory_id="a")
    hcm.add("Parcel pickup at 5 pm", memory_id="b", type="task")
    hcm.add("Parcels for Bob", memory_id="c", namespace="bob")
    hcm.delete("a")
    assert len(index_of(hcm)) == 2 and hcm.recall(QUERY).memory_ids == ["b"]
    hcm.forget(types=["task"])
    assert hcm.recall(QUERY).memory_ids == []
    hcm.forget(namespace="bob", everything=True)
    assert len(index_of(hcm)) == 0


def test_superseded_memories_keep_their_vector(hcm: CueMap, fake: FakeEmbedder) -> None:
    hcm.add("Parcels go to the front desk", memory_id="old", key="parcels.where")
    fake.calls.clear()
    hcm.add("Parcels go to the mail room", memory_id="new", key="parcels.where")
    assert fake.calls == [["Parcels go to the mail room"]]  # the old one is not re-embedded
    assert len(index_of(hcm)) == 2
    assert hcm.recall(QUERY).memory_ids == ["new"]


def test_a_failing_embedder_loses_nothing(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    fake = FakeEmbedder()
    cm = hybrid_store(clock, fake)
    fake.fail = 1
    stored = cm.add("Parcels go to the mail room", memory_id="room")
    assert cm.get("room") == stored  # the write itself succeeded
    stats = cm.extension.stats().index  # type: ignore[union-attr]
    assert (stats.vectors, stats.pending, stats.failures) == (0, 1, 1)
    assert "RuntimeError: embedding service unavailable" in (stats.last_error or "")
    assert "embedding failed" in caplog.text
    assert index_of(cm).pending_ids() == [("default", "room")]
    hits = cm.recall(QUERY)  # the next recall retries first, then finds it
    assert [(h.memory_id, h.source) for h in hits] == [("room", "dense")]
    assert cm.extension.stats().index.pending == 0  # type: ignore[union-attr]


def test_pending_memories_are_retried_on_the_next_write(clock: FakeClock) -> None:
    fake = FakeEmbedder()
    cm = hybrid_store(clock, fake)
    fake.fail = 1
    cm.add("Parcels go to the mail room", memory_id="room")
    cm.add("Lunch at noon", memory_id="lunch")
    assert fake.calls[-1] == ["Parcels go to the mail room", "Lunch at noon"]
    assert len(index_of(cm)) == 2


def test_a_memory_deleted_while_pending_is_forgotten(clock: FakeClock) -> None:
    fake = FakeEmbedder()
    cm = hybrid_store(clock, fake)
    fake.fail = 1
    cm.add("Parcels go to the mail room", memory_id="room")
    cm.delete("room")
    assert index_of(cm).pending_ids() == []
    assert cm.extension.stats().index.pending == 0  # type: ignore[union-attr]


def test_a_failure_at_open_leaves_everything_pending(clock: FakeClock) -> None:
    cm = CueMap(clock=clock)
    cm.add("Parcels go to the mail room", memory_id="room")
    fake = FakeEmbedder()
    fake.fail = 1
    hybrid = HybridRecall(cm, embedder=fake)
    assert hybrid.stats().index.pending == 1
    assert cm.recall(QUERY).memory_ids == ["room"]


def test_embedding_happens_outside_of_the_store_lock(clock: FakeClock) -> None:
    """Another thread can use the store while a write's memories are being embedded."""
    cm = CueMap(clock=clock)
    finished: list[bool] = []

    class Slow(FakeEmbedder):
        def embed(self, texts):  # type: ignore[no-untyped-def]
            other = threading.Thread(target=lambda: finished.append(bool(cm.recall("mail"))))
            other.start()
            other.join(timeout=5)  # blocks for 5 s if the store's lock were held
            return super().embed(texts)

    HybridRecall(cm, embedder=Slow())
    cm.add("Parcels go to the mail room")
    assert finished == [True]
