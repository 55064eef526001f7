"""Keeping one instance's in-memory index in step with a store other instances write to.

Every write to a shared store (PostgreSQL) records ``(seq, namespace, memory_id, op)`` in its
change log in the same transaction (one entry per memory: its latest change), and change seqs
become visible in increasing order (see
:mod:`~cuemap_integrations.pgstore`). An instance remembers the last seq it applied and, when a
sync is due, reads the newer entries, reloads the rows they name and re-indexes them:

* ``"each_recall"`` (default): before every recall, session turn, ``get``, ``memories``,
  ``stats`` and ``check``. Bound: a memory whose ``add`` returned on instance A is recalled by
  instance B on B's next recall. Costs one small query per recall when nothing changed.
* ``"interval"``: at most every ``sync_interval`` seconds (checked lazily on the same calls; no
  background thread). Bound: B sees A's write on its first recall ``sync_interval`` seconds after
  A's acknowledgement.

Writes always sync first, under a lock shared by every instance, whatever the mode: duplicate
detection, ids, supersession by key and conflict links are planned against the current store.
Applying an entry is idempotent (the current row is reloaded; a missing row means deleted), so
reading an entry twice is harmless. Access statistics are not synced: they are statistics.
"""

from __future__ import annotations

import math
import time
from typing import Literal, NamedTuple

from .errors import ValidationError
from .records import MemoryRecord
from .store import Link, SharedStore

__all__ = ["SYNC_MODES", "ChangeFeed", "RemoteChanges", "SyncMode", "check_sync"]

SyncMode = Literal["each_recall", "interval"]
SYNC_MODES: tuple[SyncMode, ...] = ("each_recall", "interval")

Key = tuple[str, str]  # (namespace, memory_id)


def check_sync(mode: object, interval: object) -> None:
    """Validate ``CueMap(sync=..., sync_interval=...)``.

    Raises:
        ValidationError: an unknown mode or a non-positive interval.
    """
    if mode not in SYNC_MODES:
        raise ValidationError("sync", mode, f"choose from {', '.join(SYNC_MODES)}")
    if (
        isinstance(interval, bool)
        or not isinstance(interval, (int, float))
        or not (math.isfinite(interval) and interval > 0)
    ):
        raise ValidationError("sync_interval", interval, "a positive number of seconds")


class RemoteChanges(NamedTuple):
    """What other instances changed since the last sync."""

    rows: dict[Key, tuple[int, MemoryRecord] | None]  # None: the memory is gone
    relinked: tuple[Key, ...]  # memories whose links are replaced by ``links``
    links: tuple[Link, ...]  # their current links


class ChangeFeed:
    """The change-log position of one instance over a shared store.

    Args:
        store: the shared store.
        mode: when a sync is due (see the module docstring).
        interval: seconds between syncs in ``"interval"`` mode.
    """

    def __init__(self, store: SharedStore, mode: SyncMode, interval: float) -> None:
        self.store, self.mode, self.interval = store, mode, float(interval)
        self.applied = store.last_change()  # read before the first load: nothing is missed
        self._last = -math.inf

    def due(self) -> bool:
        """Whether the next read should sync first."""
        return self.mode == "each_recall" or time.monotonic() - self._last >= self.interval

    def read(self) -> RemoteChanges | None:
        """The changes after the last applied seq (None when there are none); marks them applied,
        so the caller must apply them before releasing its lock."""
        self._last = time.monotonic()
        entries = self.store.changes_since(self.applied)
        if not entries:
            return None
        # the op is not needed: the store keeps one entry per memory (its latest), so whatever
        # happened to it, its current row and links are what to apply
        keys = list(dict.fromkeys((ns, mid) for _, ns, mid, _ in entries))
        found = {(r.namespace, r.memory_id): (seq, r) for seq, r in self.store.load_memories(keys)}
        links = tuple(self.store.load_links_of(keys))
        self.applied = entries[-1][0]
        return RemoteChanges({key: found.get(key) for key in keys}, tuple(keys), links)

    def skip_own(self) -> None:
        """After this instance's own write, made under the writer lock right after a sync:
        every newer entry is its own and already applied."""
        self.applied = self.store.last_change()
