"""Conflict and supersession links between memories, both ways, per namespace."""

from __future__ import annotations

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

    def partners(self, namespace: str, memory_id: str) -> dict[str, str]:
        """The memories linked to ``memory_id``, with the link kind (empty when none)."""
        return self._partners.get((namespace, memory_id), {})
