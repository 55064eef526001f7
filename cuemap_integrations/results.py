"""Small immutable values returned by recall: a hit, its score breakdown, the query trace."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypeVar, overload

from .records import MemoryRecord

__all__ = ["ConflictNote", "Hit", "HitSource", "RecallResult", "RecallTrace", "ScoreBreakdown"]

HitSource = Literal["cue", "dense"]
_T = TypeVar("_T")


def _built(cls: type[_T], values: dict[str, Any]) -> _T:
    """``cls(**values)`` for one of these frozen dataclasses, where ``values`` is a new dict of
    every field in declaration order: the dict is held as the instance's own (the generated
    ``__init__`` sets each field by ``object.__setattr__``: a recall builds a hit and its
    breakdown for each of its ten hits: 8.07M -> 7.97M instructions a recall at 10k memories,
    callgrind of 200 warm bench queries)."""
    made = object.__new__(cls)
    object.__setattr__(made, "__dict__", values)
    return made


@dataclass(frozen=True)
class ScoreBreakdown:
    """Why a memory scored what it did.

    Attributes:
        contributions: ``(rule, weighted value)`` for every rule with a non-zero weight, then
            ``("date", date_bonus)`` / ``("speaker", speaker_bonus)`` when the query named the
            period the memory was created in / the speaker of the turn; they sum to the hit's
            score.
        matched_cues: the query's explicit cues the memory carries.
        session_cues: cues carried over by a recall session that the memory carries.
        matched_tags: query terms that matched the memory's tags.
        matched_terms: query content terms found in the memory's text.
    """

    contributions: tuple[tuple[str, float], ...]
    matched_cues: tuple[str, ...] = ()
    session_cues: tuple[str, ...] = ()
    matched_tags: tuple[str, ...] = ()
    matched_terms: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-safe data (for ``--json`` output and adapter metadata)."""
        return {
            "contributions": {name: round(value, 6) for name, value in self.contributions},
            "matched_cues": list(self.matched_cues),
            "session_cues": list(self.session_cues),
            "matched_tags": list(self.matched_tags),
            "matched_terms": list(self.matched_terms),
        }


NoteKind = Literal["conflict", "supersedes", "superseded"]


@dataclass(frozen=True)
class ConflictNote:
    """Two memories that may disagree, or where one replaced the other.

    Attributes:
        kind: ``"conflict"`` (likely disagreement, detected when added), ``"supersedes"`` (the hit
            replaced ``other_id``) or ``"superseded"`` (the hit was replaced by ``other_id``).
        memory_id / other_id: the hit, and the memory it is paired with.
        newer_id / newer_at: which of the two is newer, and when it was created.
        other_content: the other memory's text, for a formatter that shows both sides.
    """

    kind: NoteKind
    memory_id: str
    other_id: str
    newer_id: str
    newer_at: datetime
    other_content: str

    @classmethod
    def between(cls, kind: NoteKind, memory: MemoryRecord, other: MemoryRecord) -> ConflictNote:
        """The note for ``memory`` (a hit) and ``other``; the later ``created_at`` is newer."""
        newer = (
            other
            if (other.created_at, other.memory_id) > (memory.created_at, memory.memory_id)
            else memory
        )
        return cls(
            kind,
            memory.memory_id,
            other.memory_id,
            newer.memory_id,
            newer.created_at,
            other.content,
        )

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-safe data."""
        return {
            "kind": self.kind,
            "memory_id": self.memory_id,
            "other_id": self.other_id,
            "newer_id": self.newer_id,
            "newer_at": self.newer_at.isoformat(),
            "other_content": self.other_content,
        }


@dataclass(frozen=True)
class Hit:
    """One recalled memory with its score and the reason for it."""

    memory: MemoryRecord
    score: float
    breakdown: ScoreBreakdown
    source: HitSource = "cue"
    conflicts: tuple[str, ...] = ()  # ids of memories this one may disagree with

    @property
    def memory_id(self) -> str:
        """Shortcut for ``hit.memory.memory_id``."""
        return self.memory.memory_id

    @property
    def content(self) -> str:
        """Shortcut for ``hit.memory.content``."""
        return self.memory.content

    def __repr__(self) -> str:
        text = (
            self.memory.content
            if len(self.memory.content) <= 48
            else self.memory.content[:45] + "..."
        )
        return f"Hit({self.memory.memory_id!r}, score={self.score:.3f}, {text!r})"


@dataclass(frozen=True)
class RecallTrace:
    """How one query was read and ranked (returned with ``explain=True``, logged at DEBUG)."""

    query: str
    normalized_query: str
    query_cues: tuple[str, ...]
    expanded_cues: tuple[tuple[str, float], ...]
    query_tags: tuple[str, ...]
    query_terms: tuple[str, ...]
    candidate_count: int
    order: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-safe data."""
        return {
            "query": self.query,
            "normalized_query": self.normalized_query,
            "query_cues": list(self.query_cues),
            "expanded_cues": [[cue, round(w, 6)] for cue, w in self.expanded_cues],
            "query_tags": list(self.query_tags),
            "query_terms": list(self.query_terms),
            "candidate_count": self.candidate_count,
            "order": list(self.order),
        }


@dataclass(frozen=True)
class RecallResult(Sequence[Hit]):
    """The ranked hits of one recall (a sequence of :class:`Hit`) and, on request, its trace."""

    hits: tuple[Hit, ...]
    trace: RecallTrace | None = None
    notes: tuple[ConflictNote, ...] = ()  # conflicts and supersessions among the hits

    @overload
    def __getitem__(self, index: int) -> Hit: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Hit]: ...

    def __getitem__(self, index: int | slice) -> Hit | Sequence[Hit]:
        return self.hits[index]

    def __len__(self) -> int:
        return len(self.hits)

    def __iter__(self) -> Iterator[Hit]:
        return iter(self.hits)

    @property
    def memory_ids(self) -> list[str]:
        """The hits' memory ids, best first."""
        return [hit.memory.memory_id for hit in self.hits]
