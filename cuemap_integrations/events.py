"""Write events: how components that mirror the store (the dense index) stay in step with it.

A listener's ``on_write`` is called after each committed write, outside the store's lock (so a
slow listener, such as an embedder, never blocks other writers or recalls). A listener that
raises is logged and skipped: the write itself is already durable.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from .records import MemoryRecord

__all__ = ["WriteEvent", "WriteListener", "notify"]

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
