"""The retrieval systems compared by ``cuemap bench locomo``, behind one small interface.

A :class:`System` turns one conversation into a :class:`Searcher`; ``searcher.search(query, k)``
returns ranked dia ids and is the only call the harness times. The CueMap systems live here; the
baselines (bm25s, dense MiniLM + FAISS) in :mod:`.baselines`, imported only when asked for.

* ``cuemap``: one in-memory :class:`~cuemap_integrations.CueMap` per conversation, a stateless
  ``recall`` per question.
* ``cuemap-session``: the same store, the conversation's questions asked in order through one
  ``cm.session(...)`` (continuous recall carries cues from question to question).

Each store's clock is fixed at the conversation's last session date (the questions are asked when
the conversation ends), so recency scores, and hence rankings, do not depend on the day of the run.
"""

from __future__ import annotations

from collections.abc import Callable
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
    "Searcher",
    "System",
    "make_system",
    "memory_items",
    "parse_system_names",
]

SYSTEM_NAMES: tuple[str, ...] = ("cuemap", "cuemap-session", "bm25s", "dense")
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


def build_store(conversation: Conversation) -> CueMap:
    """An in-memory CueMap holding the conversation, its clock at the last session date."""
    store = CueMap(":memory:", clock=_fixed_clock(conversation.last_date))
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
    raise BenchError(f"unknown system {name!r}; choose from {', '.join(SYSTEM_NAMES)}")
