"""Write events: how components that mirror the store (the dense index) stay in step with it.

A listener's ``on_write`` is called after each committed write, outside the store's lock (so a
slow listener, such as an embedder, never blocks other writers or recalls). A listener that
raises is logged and skipped: the write itself is already durable.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from .records import MemoryRecord
from .results import Hit

__all__ = ["RecallExtension", "RecallRequest", "WriteEvent", "WriteListener", "notify"]

logger = logging.getLogger("cuemap_integrations")


@dataclass(frozen=True)
class WriteEvent:
    """What one committed write changed."""

    added: tuple[MemoryRecord, ...] = ()
    changed: tuple[MemoryRecord, ...] = ()  # new versions (updates, supersession marks)
    removed: tuple[MemoryRecord, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.removed)


class WriteListener(Protocol):
    """Anything with an ``on_write(event)`` method."""

    def on_write(self, event: WriteEvent) -> None: ...


def notify(listeners: Sequence[WriteListener], event: WriteEvent) -> None:
    """Tell every listener about ``event``; a failing listener is logged, never re-raised."""
    if not event:
        return
    for listener in listeners:
        try:
            listener.on_write(event)
        except Exception:  # a mirror failing must not fail a write that is already durable
            logger.exception("write listener %r failed", listener)


@dataclass(frozen=True)
class RecallRequest:
    """What an extension needs to add hits to a deterministic recall.

    Attributes:
        query: the query text.
        k: the number of hits asked for.
        namespace: the only namespace hits may come from.
        min_score: the caller's score floor for deterministic hits (or None).
        admits: True for a memory that passes the recall's filters (type, source, time,
            expiry, supersession, already-shown); an extension must apply it to every hit it adds.
    """

    query: str
    k: int
    namespace: str
    min_score: float | None
    admits: Callable[[MemoryRecord], bool]


class RecallExtension(Protocol):
    """Set as ``CueMap.extension``: called after the deterministic ranking, outside the lock.

    ``extend`` returns the final hits (at most ``request.k``); it must keep the deterministic hits
    it was given in their order, ahead of anything it adds, unless it documents otherwise (fusion).
    """

    def extend(self, request: RecallRequest, hits: tuple[Hit, ...]) -> Sequence[Hit]: ...
