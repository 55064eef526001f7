"""Any LangChain ``VectorStore`` (duck-typed) as the dense side, behind the same interface."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pytest

from cuemap_integrations import CueMap, ValidationError
from cuemap_integrations.dense import LangChainVectorIndex
from cuemap_integrations.hybrid import HybridRecall
from tests.conftest import FakeClock

from .fakes import FakeEmbedder

QUERY = "zzparcelzz"


@dataclass
class Doc:
    page_content: str
    metadata: dict[str, Any]
    id: str | None = None


@dataclass
class FakeVectorStore:
    """The subset of LangChain's ``VectorStore`` API the index uses; cosine similarity scores."""

    embedder: FakeEmbedder = field(default_factory=FakeEmbedder)
    docs: dict[str, tuple[Doc, list[float]]] = field(default_factory=dict)
    filters: list[Any] = field(default_factory=list)
    added: list[str] = field(default_factory=list)

    def add_texts(
        self, texts: list[str], metadatas: list[dict[str, Any]], ids: list[str]
    ) -> list[str]:
        for text, meta, doc_id, vector in zip(
            texts, metadatas, ids, self.embedder.embed(texts), strict=True
        ):
            self.docs[doc_id] = (Doc(text, dict(meta), doc_id), vector)
            self.added.append(text)
        return ids

    def delete(self, ids: list[str]) -> None:
        for doc_id in ids:
            self.docs.pop(doc_id, None)

    def get_by_ids(self, ids: list[str]) -> list[Doc]:
        return [self.docs[i][0] for i in ids if i in self.docs]

    def similarity_search_with_score(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Doc, float]]:
        self.filters.append(kwargs.get("filter"))
        q = self.embedder.embed([query])[0]
        wanted = kwargs.get("filter")
        rows = [(doc, sum(a * b for a, b in zip(q, v, strict=True))) for doc, v in self.docs.values()
                if wanted is None or doc.metadata.get("namespace") == wanted["namespace"]]  # fmt: skip
        return sorted(rows, key=lambda r: -r[1])[:k]


def test_a_vector_store_is_wrapped_and_kept_in_step(clock: FakeClock) -> None:
    store = FakeVectorStore()
    cm = CueMap(clock=clock, hybrid={"index": store})
    hybrid = cm.extension
    assert isinstance(hybrid, HybridRecall) and isinstance(hybrid.index, LangChainVectorIndex)
    cm.add("Parcels go to the mail room", memory_id="room")
    cm.add("Parcels for Bob", memory_id="room", namespace="bob")
    cm.add("Lunch at noon", memory_id="lunch")
    assert [(h.memory_id, h.source) for h in cm.recall(QUERY)] == [("room", "dense")]
    assert cm.recall(QUERY, namespace="bob").memory_ids == ["room"]
    assert {d.metadata["namespace"] for d, _ in store.docs.values()} == {"default", "bob"}
    cm.update("lunch", content="Parcels arrive at lunch")
    assert sorted(cm.recall(QUERY, k=3).memory_ids) == ["lunch", "room"]
    assert len(store.docs) == 3  # replaced, not added twice
    cm.delete("room")
    assert cm.recall(QUERY, k=3).memory_ids == ["lunch"]
    assert hybrid.stats().index.kind == "langchain" and hybrid.stats().index.vectors == 2


def test_unfiltered_stores_are_filtered_by_namespace_afterwards(clock: FakeClock) -> None:
    store = FakeVectorStore()
    cm = CueMap(clock=clock)
    HybridRecall(cm, index=LangChainVectorIndex(store))
    cm.add("Parcels for Alice", namespace="alice")
    cm.add("Parcels for Bob", namespace="bob")
    hits = cm.recall(QUERY, namespace="alice", k=5)
    assert [h.memory.namespace for h in hits] == ["alice"]
    assert store.filters == [None]


def test_a_namespace_filter_is_passed_to_the_store(clock: FakeClock) -> None:
    store = FakeVectorStore()
    cm = CueMap(clock=clock)
    index = LangChainVectorIndex(store, namespace_filter=lambda ns: {"namespace": ns})
    HybridRecall(cm, index=index)
    cm.add("Parcels for Alice", namespace="alice")
    assert cm.recall(QUERY, namespace="alice").memory_ids
    assert store.filters == [{"namespace": "alice"}]


def test_sync_skips_documents_the_store_already_has(clock: FakeClock) -> None:
    store = FakeVectorStore()
    cm = CueMap(clock=clock)
    cm.add("Parcels go to the mail room", memory_id="room")
    first = HybridRecall(cm, index=LangChainVectorIndex(store))
    first.close()
    cm.add("Lunch at noon", memory_id="lunch")  # written while no index listened
    store.added.clear()
    HybridRecall(cm, index=LangChainVectorIndex(store))
    assert store.added == ["Lunch at noon"]


def test_a_failing_store_keeps_memories_pending(clock: FakeClock) -> None:
    store = FakeVectorStore()
    cm = CueMap(clock=clock, hybrid={"index": store})
    store.embedder.fail = 1
    cm.add("Parcels go to the mail room", memory_id="room")
    assert cm.extension.stats().index.pending == 1  # type: ignore[union-attr]
    assert cm.recall(QUERY).memory_ids == ["room"]


@pytest.mark.parametrize(("kind", "score", "similarity"),
                         [("similarity", 0.8, 0.8), ("cosine_distance", 0.2, 0.8), ("squared_l2", 0.4, 0.8)])  # fmt: skip
def test_score_conversions(kind: Any, score: float, similarity: float) -> None:
    class Fixed(FakeVectorStore):
        def similarity_search_with_score(
            self, query: str, k: int = 4, **kwargs: Any
        ) -> list[tuple[Doc, float]]:
            return [(Doc("x", {"namespace": "default", "memory_id": "m"}), score)]

    index = LangChainVectorIndex(Fixed(), scores=kind)
    cm = CueMap()
    cm.add("x", memory_id="m")
    index.sync(cm.memories())
    found = index.search(
        "q", namespace="default", k=1, resolve=lambda ns, i: cm.get(i, namespace=ns)
    )
    assert math.isclose(found[0].similarity, similarity)


def test_not_a_vector_store() -> None:
    with pytest.raises(ValidationError, match="no add_texts"):
        LangChainVectorIndex(object())
    with pytest.raises(ValidationError, match="choose from similarity"):
        LangChainVectorIndex(FakeVectorStore(), scores="dot")  # type: ignore[arg-type]
