"""Continuous recall: a session carries the cues of what was just recalled into the next turn.

Turn 1 "what causes the order timeout?" recalls the Redis-cache memory; turn 2 "how did we fix
it?" has no cue of its own, but the session adds the cues of turn 1's query and top memories as
*expanded* cues (weighted below explicit ones, decaying with each turn, saturating), so the
``clear-cache`` memory that shares them is found.

State (turns, memories shown) is kept in the store, so a session resumes after a restart.

Example:
    >>> from cuemap_integrations import CueMap
    >>> cm = CueMap()
    >>> _ = cm.add("Orders time out because the Redis cache expires", memory_id="cause")
    >>> _ = cm.add("Fixed the order timeout with curl -X POST /ops/clear-cache", memory_id="fix")
    >>> _ = cm.add("Fixed the flaky login test by pinning Chrome", memory_id="other-fix")
    >>> s = cm.session("chat-1")
    >>> s.recall("why do orders time out?", k=1).memory_ids
    ['cause']
    >>> s.recall("how did we fix it?", k=1).memory_ids
    ['fix']
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .core import _cycle_collection_paused
from .records import JSONValue, MemoryType, validate_memory_id, validate_namespace
from .results import RecallResult, RecallTrace
from .validation import build_filters

if TYPE_CHECKING:
    from .core import CueMap

__all__ = ["RecallSession"]

_MAX_SHOWN = 500  # bound on remembered "already shown" ids, oldest forgotten first


class RecallSession:
    """One conversation's continuous recall over a :class:`CueMap` namespace.

    Args:
        cuemap: the store.
        session_id: the conversation's id (a chat thread id, for example).
        namespace: the namespace recalled from.
        skip_shown: never return a memory an earlier turn of this session already returned.
    """

    def __init__(
        self,
        cuemap: CueMap,
        session_id: str,
        *,
        namespace: str = "default",
        skip_shown: bool = False,
    ) -> None:
        self.cuemap = cuemap
        self.session_id = validate_memory_id(session_id, "session_id")
        self.namespace = validate_namespace(namespace)
        self.skip_shown = skip_shown
        self._turns: list[dict[str, Any]] = []
        self._shown: list[str] = []
        self._turn = 0
        self._resume()

    def _resume(self) -> None:
        """Load the stored state. Done before every turn too: another object for this session,
        possibly in another app instance sharing the store, may have moved the conversation on."""
        state = self.cuemap._load_session(self.namespace, self.session_id) or {}
        self._turns = list(state.get("turns", []))
        self._shown = list(state.get("shown", []))
        self._turn = int(state.get("turn", 0))

    @property
    def turn(self) -> int:
        """How many recalls this session has made."""
        return self._turn

    @property
    def shown(self) -> tuple[str, ...]:
        """Ids of memories returned so far (the most recent ``500``)."""
        return tuple(self._shown)

    def carried_cues(self) -> list[tuple[str, float]]:
        """The expanded cues the next recall will add, with their turn weights (highest first)."""
        return [(cue, weight) for cue, weight, _ in self._carried()]

    def _carried(self) -> list[tuple[str, float, list[str]]]:
        """Carried cues with weights and the ids of the memories they came from ("" = a query)."""
        cfg = self.cuemap.config
        found: dict[str, tuple[float, list[str]]] = {}
        recent = self._turns[-cfg.session_history :] if cfg.session_history else []
        for age, turn in enumerate(reversed(recent)):
            decay = cfg.session_decay**age
            for cue, share, sources in turn["cues"]:
                weight, known = found.get(cue, (0.0, []))
                merged = known + [s for s in sources if s not in known]
                found[cue] = (max(weight, decay * share), merged)
        items = [(cue, weight, sources) for cue, (weight, sources) in found.items()]
        return sorted(items, key=lambda item: -item[1])

    def recall(
        self,
        query: str,
        *,
        k: int = 5,
        types: Iterable[MemoryType | str] | None = None,
        sources: Iterable[str] | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        extra_cues: Sequence[str] = (),
        min_score: float | None = None,
        explain: bool = False,
        hybrid: bool | None = None,
    ) -> RecallResult:
        """One turn: recall with the carried-over cues, then remember what this turn found.

        Arguments are those of :meth:`CueMap.recall` (the namespace is the session's).
        """
        self._resume()
        filters = build_filters(types=types, sources=sources, since=since, until=until)
        with _cycle_collection_paused(promote=False):  # as CueMap.recall: the turn's temporaries
            result = self.cuemap._recall(
                query, k=k, namespace=self.namespace, extra_cues=extra_cues, min_score=min_score,
                explain=True, expanded=self._carried(),
                exclude=frozenset(self._shown) if self.skip_shown else frozenset(),
                filters=filters, extend=hybrid is not False,
            )  # fmt: skip
            if result.trace is not None:  # always set: _recall was asked to explain
                self._remember(result, result.trace)
            return result if explain else replace(result, trace=None)

    async def arecall(self, query: str, **kwargs: Any) -> RecallResult:
        """:meth:`recall` without blocking the event loop."""
        import asyncio

        return await asyncio.to_thread(lambda: self.recall(query, **kwargs))

    def _remember(self, result: RecallResult, trace: RecallTrace) -> None:
        cfg = self.cuemap.config
        cues = self.cuemap._carry(self.namespace, trace.query_cues, result.hits, cfg.session_carry)
        ids = result.memory_ids  # a new list at every read: read once
        turn = {
            "cues": [[cue, weight, sources] for cue, (weight, sources) in cues.items()],
            "ids": ids,
        }
        self._turns.append(turn)
        self._turns = self._turns[-max(cfg.session_history, 1) :]
        # a set to test the up to 500 shown ids against (the list was made again for each one:
        # ~14 % of a session recall on the LoCoMo stores)
        now_shown = set(ids)
        self._shown = [i for i in self._shown if i not in now_shown] + ids
        self._shown = self._shown[-_MAX_SHOWN:]
        self._turn += 1
        self._save()

    def _save(self) -> None:
        state: dict[str, JSONValue] = {
            "turn": self._turn,
            "turns": self._turns,
            "shown": self._shown,
        }
        self.cuemap._save_session(self.namespace, self.session_id, state)

    def reset(self) -> None:
        """Forget this session's turns and shown memories (in the store too)."""
        self._turns, self._shown, self._turn = [], [], 0
        self.cuemap._drop_session(self.namespace, self.session_id)

    def __repr__(self) -> str:
        return (
            f"RecallSession({self.session_id!r}, namespace={self.namespace!r}, turn={self._turn})"
        )
