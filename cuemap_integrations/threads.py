"""Transcript threads: the turns of one conversation in order, and their neighbour context.

An event memory whose metadata names a session (``session_id``, ``thread_id`` or ``session``) is
a *turn*. Each turn is indexed with the words of the ``context_span`` turns on each side at
``context_weight`` (see :meth:`Threads.refresh_context`), so a question phrased like the turn
before or after the answer still finds it. A turn's ``speaker`` (or ``author``) in its metadata
is its speaker: a query naming one prefers that speaker's turns (``speaker_bonus``).
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet

from . import text as _text
from .index import NamespaceIndex
from .records import MemoryRecord, MemoryType
from .text import normalize

__all__ = ["Threads", "speaker_of", "thread_of", "turns"]

_THREAD_KEYS = ("session_id", "thread_id", "session")
_SPEAKER_KEYS = ("speaker", "author")


def thread_of(record: MemoryRecord) -> tuple[str, str] | None:
    """The transcript a turn belongs to: event memories with a session in their metadata."""
    if record.type is not MemoryType.EVENT:
        return None
    for key in _THREAD_KEYS:
        value = record.metadata.get(key)
        if value is not None and not isinstance(value, (dict, list)):
            return record.namespace, f"{record.source}\x00{key}\x00{value}"
    return None


def turns(records: Iterable[MemoryRecord]) -> list[bool]:
    """Whether :func:`thread_of` finds a thread for each record, asked only of the events
    whose metadata holds a thread key (bulk ingest asks it of every memory: a call each
    was ~3 % of indexing a batch of bench memories, all events without a session). A list
    in one C call with the text extension (``_textc.turns``: ~2,000 -> ~500 instructions a
    bench memory)."""
    compiled = _text._C  # read per call: None (patched) means the Python alone
    if compiled is None or type(records) is not list:
        return _py_turns(records)
    return compiled.turns(  # type: ignore[no-any-return]
        records, MemoryType.EVENT, _THREAD_KEYS, thread_of
    )


def _py_turns(records: Iterable[MemoryRecord]) -> list[bool]:
    """:func:`turns` in Python: ``_textc.turns``' reference."""
    event = MemoryType.EVENT
    return [
        record.type is event
        and not record.metadata.keys().isdisjoint(_THREAD_KEYS)
        and thread_of(record) is not None
        for record in records
    ]


def speaker_of(record: MemoryRecord) -> str | None:
    """Who said a turn: its metadata's ``speaker`` (or ``author``), normalized; None if not a turn
    or no speaker is named."""
    return None if thread_of(record) is None else _named_speaker(record)


def _named_speaker(record: MemoryRecord) -> str | None:
    """:func:`speaker_of` a turn (a record :func:`thread_of` found a thread for)."""
    for key in _SPEAKER_KEYS:
        value = record.metadata.get(key)
        if isinstance(value, str) and normalize(value).strip():
            return normalize(value).strip()
    return None


class Threads:
    """The sequence numbers of each transcript's turns, in order, and the speakers of each
    namespace's turns."""

    def __init__(self) -> None:
        self._turns: dict[tuple[str, str], list[int]] = {}
        self._speakers: dict[str, dict[str, set[int]]] = {}  # namespace -> speaker -> turns

    def add(self, seq: int, record: MemoryRecord) -> None:
        thread = thread_of(record)
        if thread is None:  # not a turn: no speaker either (speaker_of would ask again)
            return
        bisect.insort(self._turns.setdefault(thread, []), seq)
        speaker = _named_speaker(record)
        if speaker is not None:
            self._speakers.setdefault(record.namespace, {}).setdefault(speaker, set()).add(seq)

    def remove(self, seq: int, record: MemoryRecord) -> None:
        thread = thread_of(record)
        if thread is not None:
            turns = self._turns[thread]
            turns.pop(bisect.bisect_left(turns, seq))
            if not turns:
                del self._turns[thread]
        speaker = speaker_of(record)
        if speaker is not None:
            turns_of = self._speakers[record.namespace]
            turns_of[speaker].discard(seq)
            if not turns_of[speaker]:
                del turns_of[speaker]

    def named_speakers(self, namespace: str, normalized_query: str) -> tuple[str, ...]:
        """The namespace's speakers whose name the query contains as whole words, sorted."""
        return tuple(
            sorted(
                speaker
                for speaker in self._speakers.get(namespace, {})
                if _name_pattern(speaker).search(normalized_query)
            )
        )

    def turns_by(self, namespace: str, speakers: Iterable[str]) -> tuple[AbstractSet[int], ...]:
        """The turns of each of these speakers (live sets: read them, do not keep them)."""
        known = self._speakers.get(namespace, {})
        return tuple(known[speaker] for speaker in speakers if speaker in known)

    def around(self, seq: int, record: MemoryRecord, span: int) -> list[int]:
        """The turns within ``span`` of ``seq`` in its thread, itself included (none if no turn)."""
        thread = thread_of(record)
        if thread is None or thread not in self._turns:
            return []
        turns = self._turns[thread]
        at = bisect.bisect_left(turns, seq)
        return turns[max(at - span, 0) : at + span + 1]

    def neighbours(self, seq: int, record: MemoryRecord, span: int) -> list[int]:
        """The turns next to ``seq`` (at least one on each side), without itself."""
        return [s for s in self.around(seq, record, max(span, 1)) if s != seq]

    def refresh_context(
        self,
        seqs: Iterable[int],
        records: Mapping[int, MemoryRecord],
        indexes: Mapping[str, NamespaceIndex],
        span: int,
        weight: float,
    ) -> None:
        """Re-index the context of these turns and of the turns within ``span`` of them."""
        if not span or not weight or not self._turns:  # no transcript: no turn has context
            return
        todo: dict[int, None] = {}
        for seq in seqs:
            record = records.get(seq)
            if record is not None:
                todo.update(dict.fromkeys(self.around(seq, record, span)))
        for seq in todo:
            record = records[seq]
            index = indexes[record.namespace]
            context: dict[str, float] = {}
            for other in self.around(seq, record, span):
                if other != seq:
                    neighbour = index.docs[other]
                    for term, tf in zip(neighbour.term_names, neighbour.term_counts, strict=True):
                        context[term] = context.get(term, 0.0) + weight * tf
            index.set_context(seq, context)


@functools.lru_cache(maxsize=4096)
def _name_pattern(speaker: str) -> re.Pattern[str]:
    """The speaker's name as a whole word: made once per name, where every recall asked the
    ``re`` module's cache again for each speaker of the namespace (with the name escaped)."""
    return re.compile(rf"(?<!\w){re.escape(speaker)}(?!\w)")
