"""Conflict and supersession links between memories, both ways, per namespace."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["Links"]


class Links:
    """``(namespace, memory_id) -> {partner_id: kind}``, kept symmetric."""

    def __init__(self) -> None:
        self._partners: dict[tuple[str, str], dict[str, str]] = {}

    def add(self, namespace: str, from_id: str, to_id: str, kind: str) -> None:
        self._partners.setdefault((namespace, from_id), {})[to_id] = kind
        self._partners.setdefault((namespace, to_id), {})[from_id] = kind

    def drop(self, namespace: str, memory_id: str) -> None:
        """Forget every link of ``memory_id`` (on both ends)."""
        for other in self._partners.pop((namespace, memory_id), {}):
            partners = self._partners.get((namespace, other), {})
            partners.pop(memory_id, None)
            if not partners:
                self._partners.pop((namespace, other), None)

    def partners(self, namespace: str, memory_ids: Iterable[str]) -> list[dict[str, str]]:
        """The memories linked to each of ``memory_ids``, with the link kind (empty when none):
        a recall asks it of its ten hits in one call (a call per hit, with the hit's
        ``memory_id`` property read, was three Python frames a hit)."""
        none: dict[str, str] = {}  # one empty dict for every memory without a link: only read
        get = self._partners.get
        return [get((namespace, memory_id), none) for memory_id in memory_ids]
