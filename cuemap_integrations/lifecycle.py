"""What happens to a batch of new memories before it is stored: duplicates, supersession by key
or by ``supersedes``, and conflict detection. Pure planning over lookups the store provides; the
caller applies the plan in one transaction, so a refused batch changes nothing.

Rules (each a sentence a user can predict):

* **Duplicate**: a memory added without an explicit ``memory_id`` whose normalized content is
  already stored in the namespace is not stored again; the stored one is returned and its access
  data refreshed. (An explicit id means the caller wants that memory, even if the text repeats,
  e.g. "Thanks!" said on two days of a transcript.)
* **Supersede**: a memory with a ``key`` replaces the active memory with the same key and
  namespace; ``supersedes="id"`` replaces that memory. The old one keeps its history, gets
  ``superseded_by`` and ``superseded_at``, and is hidden from recall by default.
* **Conflict**: two active memories of the same type (one of ``conflict_types``), without a key,
  whose cue sets overlap strongly (Jaccard >= ``conflict_overlap``, at least two shared cues) but
  whose text differs, are linked as a possible conflict; recall reports the link.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from . import text as _text
from .errors import DuplicateIdError, ValidationError
from .records import MemoryRecord
from .text import normalize, query_units

__all__ = [
    "Link", "WritePlan", "content_digest", "content_digests", "cue_keys", "overlap", "plan_writes",
]  # fmt: skip

Link = tuple[str, str, str, str]  # (namespace, from_id, to_id, kind)
CONFLICT = "conflict"


def cue_keys(record: MemoryRecord) -> frozenset[str]:
    """The record's cues reduced to stem keys, so "orders" and "order" compare equal."""
    return frozenset(" ".join(query_units(cue)) for cue in record.cues if query_units(cue))


def overlap(a: frozenset[str], b: frozenset[str]) -> tuple[int, float]:
    """Shared cue count and Jaccard similarity of two cue-key sets."""
    shared = len(a & b)
    union = len(a | b)
    return shared, (shared / union if union else 0.0)


ContentKey = bytes


def content_key(record: MemoryRecord, normalized: Callable[[str], str] = normalize) -> ContentKey:
    """What makes two memories exact duplicates: a 128-bit BLAKE2b digest of the namespace and
    the normalized content (``normalized`` is :func:`normalize` or a memo of it).

    A digest rather than the text: the store keeps one key per memory, and the normalized text
    cost as much memory as the content itself; a chance collision needs about 2**64 memories.
    The namespace is hashed in (a namespace has no control characters, so ``\x00`` separates
    it unambiguously) rather than paired with the digest: a pair tuple per memory costs 56 bytes.
    """
    return content_digest(record.namespace, normalized(record.content))


def content_digest(namespace: str, normalized: str) -> ContentKey:
    """:func:`content_key` of a record of ``namespace`` whose normalized content is
    ``normalized`` (for a caller that has that text at hand)."""
    return content_digests((namespace,), (normalized,))[0]


def content_digests(namespaces: Iterable[str], normalized: Iterable[str]) -> list[ContentKey]:
    """:func:`content_digest` of each namespace and normalized content (a bulk batch's, in
    one comprehension: a call per memory was ~0.3 us of its ~1.3); for lists, in one C call
    with the text extension (``_textc.content_digests``, which hashes the bytes itself: a
    hashlib object, the joined string and its encoding were ~6,000 of the ~9,500
    instructions of a bench memory's digest)."""
    compiled = _text._C  # read per call: None (patched) means the Python alone
    if compiled is None:
        return _py_content_digests(namespaces, normalized)
    return compiled.content_digests(  # type: ignore[no-any-return]
        namespaces, normalized, _py_content_digests
    )


def _py_content_digests(namespaces: Iterable[str], normalized: Iterable[str]) -> list[ContentKey]:
    """:func:`content_digests` by hashlib: ``_textc.content_digests``' reference."""
    blake2b = hashlib.blake2b
    return [
        blake2b(f"{namespace}\x00{text}".encode("utf-8", "surrogatepass"), digest_size=16).digest()
        for namespace, text in zip(namespaces, normalized, strict=True)
    ]


@dataclass
class WritePlan:
    """The outcome of planning a batch: what to insert, change, link and refresh."""

    new: list[MemoryRecord] = field(default_factory=list)
    changed: dict[int, MemoryRecord] = field(default_factory=dict)
    duplicates: list[int] = field(default_factory=list)  # seqs of stored memories seen again
    links: list[Link] = field(default_factory=list)
    results: list[MemoryRecord] = field(default_factory=list)  # one per input item


@dataclass(frozen=True)
class StoreView:
    """Lookups into the stored memories that planning needs."""

    seq_of: Callable[[str, str], int | None]  # (namespace, memory_id) -> seq
    record: Callable[[int], MemoryRecord]
    by_content: Callable[[ContentKey], int | None]
    active_key: Callable[[str, str], int | None]  # (namespace, key) -> seq of the active one
    conflict_candidates: Callable[[MemoryRecord], Iterable[int]]
    # seq_of of each (namespace, memory_id) at once (None: seq_of one by one)
    seqs_of: Callable[[Sequence[tuple[str, str]]], list[int | None]] | None = None


def plan_writes(
    records: Sequence[tuple[MemoryRecord, bool]],
    view: StoreView,
    *,
    now: datetime,
    dedupe: bool,
    conflict_types: frozenset[str],
    conflict_overlap: float,
    key_of: Callable[[MemoryRecord], ContentKey] = content_key,
) -> WritePlan:
    """Plan a batch; ``records`` pairs each record with "its id was given by the caller"
    (``key_of``: :func:`content_key`, or a memo of it for the batch's records)."""
    plan = WritePlan()
    if _plainly_new(records, view, dedupe, plan):
        _link_conflicts(plan, view, conflict_types, conflict_overlap)
        return plan
    batch: dict[ContentKey, MemoryRecord] = {}
    ids: set[tuple[str, str]] = set()  # (namespace, memory_id) of the batch's new records
    seq_of = view.seq_of
    for record, explicit_id in records:
        key = key_of(record)
        # an explicit id is never a duplicate (most bulk ingests give ids: no lookup for them)
        existing = None if explicit_id or not dedupe else _duplicate_of(key, view, batch)
        if existing is not None:
            seq = view.seq_of(existing.namespace, existing.memory_id)
            if seq is not None:
                plan.duplicates.append(seq)
            plan.results.append(existing)
            continue
        if record.supersedes is not None or record.key is not None:
            record = _supersede(record, view, plan, now)
        # refuse an id stored or earlier in the batch (inline, as the conflict type check and
        # TextMemo.content_key's digest: a call per record each, planning ~19,600 -> 17,700
        # instructions a bench memory)
        pair = (record.namespace, record.memory_id)
        if pair in ids or seq_of(*pair) is not None:
            raise DuplicateIdError(record.memory_id, record.namespace)
        ids.add(pair)
        plan.new.append(record)
        plan.results.append(record)
        batch.setdefault(key, record)
    _link_conflicts(plan, view, conflict_types, conflict_overlap)
    return plan


def _plainly_new(
    records: Sequence[tuple[MemoryRecord, bool]], view: StoreView, dedupe: bool, plan: WritePlan
) -> bool:
    """Plan a batch the loop of :func:`plan_writes` would only add to ``plan.new`` and
    ``plan.results`` as it is (a bulk ingest's): every record new (an explicit id, or no
    dedupe), neither superseding nor keyed, no id stored (``view.seqs_of``, in one call) or
    given twice. Then no record's content key is needed (nor a call per record: the loop
    was ~3.3 us a bench memory, the content keys ~2 us more, which indexing then computes
    for the batch at once: ``TextMemo.content_keys_of``). False, ``plan`` untouched, for any
    other batch: the loop plans it (and raises where it raises)."""
    if view.seqs_of is None:
        return False
    new = [record for record, _ in records]
    if (dedupe and not all(explicit for _, explicit in records)) or any(
        record.supersedes is not None or record.key is not None for record in new
    ):
        return False
    pairs = [(record.namespace, record.memory_id) for record in new]
    if len(set(pairs)) != len(pairs) or any(seq is not None for seq in view.seqs_of(pairs)):
        return False
    plan.new, plan.results = new, list(new)
    return True


def _duplicate_of(
    key: ContentKey, view: StoreView, batch: Mapping[ContentKey, MemoryRecord]
) -> MemoryRecord | None:
    """The stored or earlier batch memory whose content key is ``key``."""
    if key in batch:
        return batch[key]
    seq = view.by_content(key)
    return None if seq is None else view.record(seq)


def _supersede(
    record: MemoryRecord, view: StoreView, plan: WritePlan, now: datetime
) -> MemoryRecord:
    """Mark what ``record`` replaces (by explicit ``supersedes`` or by ``key``)."""
    target = record.supersedes
    if target is None and record.key is not None:
        target = _active_with_key(record, view, plan)
    if target is None:
        return record
    _retire(target, record, view, plan, now)
    return record if record.supersedes == target else record.evolve(supersedes=target)


def _active_with_key(record: MemoryRecord, view: StoreView, plan: WritePlan) -> str | None:
    for earlier in reversed(plan.new):  # a batch may set the same key twice: the last wins
        if earlier.key == record.key and earlier.namespace == record.namespace:
            return earlier.memory_id if earlier.superseded_by is None else None
    seq = view.active_key(record.namespace, record.key or "")
    return None if seq is None else view.record(seq).memory_id


def _retire(
    target: str, record: MemoryRecord, view: StoreView, plan: WritePlan, now: datetime
) -> None:
    for position, earlier in enumerate(plan.new):
        if earlier.memory_id == target and earlier.namespace == record.namespace:
            plan.new[position] = earlier.evolve(superseded_by=record.memory_id, superseded_at=now)
            plan.results[plan.results.index(earlier)] = plan.new[position]
            return
    seq = view.seq_of(record.namespace, target)
    if seq is None:
        raise ValidationError("supersedes", target, f"the id of a memory in {record.namespace!r}")
    old = plan.changed.get(seq) or view.record(seq)
    plan.changed[seq] = old.evolve(superseded_by=record.memory_id, superseded_at=now)


def _link_conflicts(
    plan: WritePlan, view: StoreView, types: frozenset[str], threshold: float
) -> None:
    for position, record in enumerate(plan.new):
        # most records are of a type not checked for conflicts: no call to say so
        if record.type._value_ not in types or not _may_conflict(record, types):
            continue
        keys = cue_keys(record)
        others = [view.record(seq) for seq in view.conflict_candidates(record)]
        others += plan.new[:position]
        for other in others:
            if _conflicts(record, keys, other, types, threshold):
                plan.links.append((record.namespace, record.memory_id, other.memory_id, CONFLICT))


def _may_conflict(record: MemoryRecord, types: frozenset[str]) -> bool:
    # _value_: the member's own attribute, what the .value descriptor returns (asked per record)
    return record.key is None and record.superseded_by is None and record.type._value_ in types


def _conflicts(
    record: MemoryRecord,
    keys: frozenset[str],
    other: MemoryRecord,
    types: frozenset[str],
    threshold: float,
) -> bool:
    if other.memory_id == record.memory_id or other.namespace != record.namespace:
        return False
    if other.type != record.type or not _may_conflict(other, types):
        return False
    if normalize(other.content) == normalize(record.content):
        return False
    shared, jaccard = overlap(keys, cue_keys(other))
    return shared >= 2 and jaccard >= threshold
