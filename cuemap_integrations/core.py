"""``CueMap``: the deterministic memory store and its recall API.

Example:
    >>> from cuemap_integrations import CueMap
    >>> with CueMap() as cm:
    ...     _ = cm.add("The API uses port 8001", type="convention", memory_id="port")
    ...     _ = cm.add("Never change the DB schema without a backup", type="convention")
    ...     [hit.memory_id for hit in cm.recall("which port does the api use?")]
    ['port']
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from functools import partial
from itertools import groupby, islice
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from .aliases import AliasTable
from .capture import CaptureResult
from .capture import capture as capture_turns
from .config import RecallConfig
from .errors import NotFoundError, ValidationError
from .events import RecallExtension, RecallRequest, WriteEvent, WriteListener, notify
from .index import DocColumns, DocTable, NamespaceIndex
from .keytables import SeqOf, SeqsByDigest
from .lifecycle import StoreView, WritePlan, content_key, plan_writes
from .links import Links
from .ranking import (
    QUERY_SOURCE,
    Carried,
    Filters,
    QueryPlan,
    Ranking,
    Scored,
    plan_query,
    with_carried,
)
from .ranking import trace as ranking_trace
from .records import (
    _FIELD_TEMPLATE,
    _TYPE_OF_VALUE,
    RECORD_FIELDS,
    CueOrigin,
    JSONValue,
    MemoryRecord,
    MemoryType,
    coerce_timestamp,
    validate_content,
    validate_namespace,
)
from .recordtable import RecordTable, interned
from .redact import DEFAULT_POLICY, RedactionPolicy, redact_pairs, redact_record
from .results import ConflictNote, Hit, NoteKind, RecallResult, RecallTrace
from .sessions import open_sessions
from .store import SessionStore, SharedStore, Store, open_store
from .sync import ChangeFeed, RemoteChanges, SyncMode, check_sync
from .text import _C as _textc
from .text import derive_cues
from .textkeys import TextMemo, index_cues, text_keys
from .threads import Threads, thread_of, turns
from .topk import RecallMemo, first_pass_hits
from .validation import build_filters, check_recall_args, id_list, normalized_list

if TYPE_CHECKING:
    from .session import RecallSession

__all__ = ["CueMap"]

logger = logging.getLogger("cuemap_integrations")

Clock = Callable[[], datetime]
_ACCESS_FLUSH_EVERY = 256  # recall access stats are written in batches: they are statistics
_UPDATABLE = ("content", "cues", "tags", "type", "source", "metadata", "expires_at")


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


_INDEX_CHUNK = 8192  # rows a deferred _index_many gathers at a time (a store's load: all of it)
_PLAIN_RUN = 8  # plain docs in a row worth _index_plain's set-up (fewer: one by one)


def _updated_stamp(record: MemoryRecord, stamp: float | datetime) -> float:
    """``record.updated_at`` as POSIX seconds; the row's ``created_at`` ``stamp`` when they are
    equal (the index then shares it). A new memory is updated when created (the same datetime
    object): its row's float stamp is then ``created_at.timestamp()`` already, so neither the
    conversion nor the comparison is needed."""
    if isinstance(stamp, float):
        if record.updated_at is record.created_at:
            return stamp
        updated = record.updated_at.timestamp()
        return stamp if stamp == updated else updated
    return record.updated_at.timestamp()


class _cycle_collection_paused:  # noqa: N801  # used as a function, like contextlib's
    """Pause Python's cyclic garbage collector for one batch of writes (or one recall).

    A batch allocates hundreds of thousands of dicts, tuples and lists that live on in the
    index; each time enough of them pile up the collector runs, and its older generations walk
    every object the index already holds (measured: ~10% of ingest time at 20,000 memories, more
    as the store grows). Ingest makes no reference cycles worth collecting mid-batch, and the
    collector resumes afterwards. If it was already off, it stays off.

    The batch's objects then join the oldest generation directly (``gc.freeze`` then
    ``gc.unfreeze`` move every tracked object there and reset the young count, without a
    traversal): the index keeps them, so the young collection the resumed collector would
    start at once (it walked all of them, ~3% of a 10,000-memory batch) would only promote
    them, and as they are not counted as newly promoted they do not hasten the next full
    collection either. Skipped when objects are already frozen: unfreezing would release
    them too (e.g. a pre-fork server's).

    ``promote=False`` (a recall, a session turn): nothing joins the oldest generation. A
    recall's objects are temporaries, freed by the time it returns, so the collections they
    would have started mid-recall (~2% of its time at 100k: young generations holding its
    lists, tuples and plans) do not happen at all. What a recall leaves (its memos' new
    entries, its result) still starts a young collection every ~5 recalls (~3% of recall time
    at 100k); promoting it was measured and dropped: ``gc.get_freeze_count``, which tells
    whether objects are frozen, walks every frozen object, so where a server (or
    ``benchmarks/recall_ab.py``) froze its objects each recall paid for a walk of all of
    them (x2.3-2.5 recall CPU at 10k-100k). A batch pays it once.

    A class, not a generator-based context manager: a recall enters it every time, and the
    generator's machinery was ~1% of a recall at 100k memories.
    """

    __slots__ = ("paused", "promote")

    def __init__(self, *, promote: bool = True) -> None:
        self.promote = promote
        self.paused = False

    def __enter__(self) -> None:
        if gc.isenabled():  # if it was already off, it stays off
            gc.disable()
            self.paused = True

    def __exit__(self, *exc: object) -> None:
        if not self.paused:
            return
        if self.promote and gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        gc.enable()


@dataclass(frozen=True)
class StoreStats:
    """Counts describing a store (``CueMap.stats()``)."""

    path: str
    schema_version: int
    memories: int
    namespaces: Mapping[str, int]
    types: Mapping[str, int]
    distinct_cues: int
    distinct_terms: int
    sessions: int

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-safe data."""
        return {
            "path": self.path,
            "schema_version": self.schema_version,
            "memories": self.memories,
            "namespaces": dict(self.namespaces),
            "types": dict(self.types),
            "distinct_cues": self.distinct_cues,
            "distinct_terms": self.distinct_terms,
            "sessions": self.sessions,
        }


class CueMap:
    """A deterministic, explainable memory store with cue-based recall.

    Args:
        path: ``":memory:"`` (default), a SQLite file path (created owner-only if missing), or a
            ``postgresql://`` URL (extra ``[postgres]``) shared by several instances.
        config: a :class:`RecallConfig`, a dict of its options, or None for the defaults.
        clock: returns "now" as an aware datetime (tests and replays pass a fixed clock).
        durable: fsync every commit (see :class:`~.store.SQLiteStore`; a PostgreSQL server's
            durability is its own configuration).
        hybrid: attach the dense fallback (:class:`~cuemap_integrations.hybrid.HybridRecall`,
            extra ``[hybrid]``); a mapping is passed to it as keyword arguments.
        redaction: the secrets policy applied to every write (content, cues, tags, metadata);
            ``None`` turns it off. Default: API keys, tokens, passwords, private keys and
            credentials in connection strings are replaced by ``[REDACTED:<class>]``.
        sync: on a shared (PostgreSQL) store, when to apply other instances' writes:
            ``"each_recall"`` (default) or ``"interval"`` (see :mod:`.sync` for the bounds).
        sync_interval: seconds between syncs in ``"interval"`` mode.
        sessions: where recall sessions keep their state: ``None`` (the store), a
            ``redis://`` URL (extra ``[redis]``) or a :class:`~.store.SessionStore`.

    Raises:
        StoreError: the store cannot be opened.
        ConfigError: an unknown or out-of-range configuration option.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = ":memory:",
        *,
        config: RecallConfig | Mapping[str, Any] | None = None,
        clock: Clock = _utc_now,
        durable: bool = True,
        redaction: RedactionPolicy | None = DEFAULT_POLICY,
        hybrid: bool | Mapping[str, Any] = False,
        sync: SyncMode = "each_recall",
        sync_interval: float = 1.0,
        sessions: str | SessionStore | None = None,
    ) -> None:
        check_sync(sync, sync_interval)
        self.config = (
            config if isinstance(config, RecallConfig) else RecallConfig.from_dict(config or {})
        )
        self.aliases = AliasTable(self.config.aliases)
        self._clock = clock
        self.redaction = redaction
        self._lock = threading.RLock()
        self._store: Store = open_store(path, durable=durable)
        try:
            self._sessions = open_sessions(sessions, self._store)
        except BaseException:  # a bad spec or an unreachable Redis: leave no connection open
            self._store.close()
            raise
        shared = self._store if isinstance(self._store, SharedStore) else None
        self._feed = None if shared is None else ChangeFeed(shared, sync, sync_interval)
        self._late: list[WriteEvent] = []  # synced inside a write, not yet told to listeners
        self._records = RecordTable()
        self._seq_of = SeqOf()
        self._indexes: dict[str, NamespaceIndex] = {}
        # the indexes' per-memory values, by seq (index.py); plain docs read their content
        # and cues from the records, which are therefore stored before indexing, removed after
        self._columns = DocColumns(self._records)
        self._access: dict[int, tuple[int, datetime]] = {}
        self._by_content = SeqsByDigest()  # content key -> seqs, in insertion order
        self._by_key: dict[tuple[str, str], int] = {}
        self._links = Links()
        self._listeners: list[WriteListener] = []
        self._threads = Threads()  # transcript turns, in order
        self.extension: RecallExtension | None = None  # e.g. the hybrid dense fallback
        # in seq order: postings can wait for a flush
        self._index_many(self._store.load(), defer=True)
        self._flush_postings()
        self._refresh_context(list(self._records))
        for namespace, from_id, to_id, kind in self._store.load_links():
            self._links.add(namespace, from_id, to_id, kind)
        if hybrid:  # imported here: the dense fallback needs the [hybrid] extra
            from .hybrid import HybridRecall

            HybridRecall(self, **(dict(hybrid) if isinstance(hybrid, Mapping) else {}))

    # ----------------------------------------------------------------- lifecycle
    @property
    def path(self) -> str:
        """The store's path (``":memory:"`` for an in-process store)."""
        return self._store.path

    def now(self) -> datetime:
        """The current time from this store's clock, validated as aware UTC."""
        return coerce_timestamp(self._clock(), "clock()")

    def close(self) -> None:
        """Close the recall extension (the dense index saves itself), write pending access
        statistics and close the store (idempotent)."""
        extension, self.extension = self.extension, None
        closer = getattr(extension, "close", None)
        if callable(closer):
            closer()
        with self._lock:
            if self._store is not None:
                self._flush_access()
                if self._sessions is not self._store:
                    self._sessions.close()
                self._store.close()

    def backup(self, target: str | os.PathLike[str]) -> None:
        """Write a consistent copy of the store (memories, links, sessions, pending access
        statistics) to the SQLite file ``target``, created owner-only.

        Raises:
            StoreError: the copy failed.
        """
        with self._lock:
            self._flush_access()
            self._store.backup(target)

    def __enter__(self) -> CueMap:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------- indexing
    def _index_keys(
        self, record: MemoryRecord, memo: TextMemo | None = None
    ) -> tuple[list[str], list[str], list[str]]:
        """Cues, tags and terms to index ``record`` under (its text keys from ``memo``)."""
        cues, terms = self._cues_and_terms(record, memo)
        return cues, list(record.tags), list(terms)

    def _cues_and_terms(
        self, record: MemoryRecord, memo: TextMemo | None = None
    ) -> tuple[list[str], list[str]]:
        """The cues and terms of :meth:`_index_keys`, the terms not copied (the text keys'
        own list: indexing only reads it, and a bulk batch keeps it until its flush)."""
        keys = (
            text_keys(record.content, self.aliases) if memo is None else memo.keys(record.content)
        )
        return index_cues(record, keys, self.aliases), keys.terms

    def _index(self, seq: int, record: MemoryRecord) -> None:
        """Index ``record`` as memory ``seq`` (see :meth:`_index_many`)."""
        self._index_many(((seq, record),))

    def _index_many(
        self,
        rows: Iterable[tuple[int, MemoryRecord]],
        memo: TextMemo | None = None,
        *,
        defer: bool = False,
    ) -> None:
        """Index each ``(seq, record)`` of ``rows`` (text keys from a batch's ``memo``);
        ``defer``: their postings wait for the index's ``flush`` (new memories, in ascending
        ``seq`` order), and runs of plain docs of one namespace are indexed column-wise
        (:meth:`_index_plain`), the rest one by one (:meth:`_index_each`)."""
        if not defer:
            self._index_each(rows, memo, defer=False)
            return
        rows = iter(rows)
        while chunk := list(islice(rows, _INDEX_CHUNK)):
            # a plain doc: no tags, not a transcript turn (see NamespaceIndex.add_distinct)
            records = [record for _, record in chunk]
            kinds = [(record.namespace, not record.tags and not turn)
                     for record, turn in zip(records, turns(records), strict=True)]  # fmt: skip
            for (namespace, plain), group in groupby(zip(kinds, chunk, strict=True), itemgetter(0)):
                run = [row for _, row in group]
                if plain and len(run) >= _PLAIN_RUN:
                    self._index_plain(namespace, run, memo)
                else:
                    self._index_each(run, memo, defer=True)

    def _index_plain(
        self, namespace: str, rows: list[tuple[int, MemoryRecord]], memo: TextMemo | None
    ) -> None:
        """:meth:`_index_each` of new plain docs of ``namespace``, in ascending ``seq`` order
        (``defer``), a step at a time for all of them: their rows stored, then their docs
        and pending postings, ids and content keys, each table's step in one call for the
        batch (``RecordTable.put_many``, ``NamespaceIndex.add_plain_many``,
        ``SeqOf.set_many``, ``SeqsByDigest.add_many``) where one memory at a time made
        about thirty Python calls (bulk ingest of 50,000 bench memories: _index_many ~12.5 ->
        ~9.5 us a memory; add_many 404.7k -> 370.5k instructions a memory)."""
        index = self._indexes.get(namespace)
        if index is None:
            index = self._indexes[namespace] = NamespaceIndex(self._columns)
        seqs = [seq for seq, _ in rows]
        records = [record for _, record in rows]
        contents = [record.content for record in records]
        cues: list[Sequence[str]]
        if memo is None:  # loading a store: nothing kept past the batch
            keys = [text_keys(content, self.aliases) for content in contents]
            cues = [
                index_cues(record, key, self.aliases)
                for record, key in zip(records, keys, strict=True)
            ]
            content_keys = list(map(content_key, records))
        else:
            keys = memo.keys_of(contents)
            cues = memo.index_cues_of(records, keys)
            content_keys = memo.content_keys_of(records, keys)
        table = self._records
        # the rows first: the index shares their interned cues (see _index_each)
        held, waiting = index.waiting_cues()
        row_cues = table.put_many(seqs, records, held, waiting, cues)
        kept = [row if given is record.cues or given == list(row) else interned(given)
                for given, record, row in zip(cues, records, row_cues, strict=True)]  # fmt: skip
        updated = list(map(_updated_stamp, records, table.stamps(seqs)))
        types = [record.type._value_ for record in records]
        terms = [key.terms for key in keys]
        index.add_plain_many(seqs, kept, terms, contents, updated, types, row_cues)
        self._seq_of.set_many(namespace, [record.memory_id for record in records], seqs)
        self._by_content.add_many(content_keys, seqs)
        by_key = self._by_key
        for seq, record in rows:
            if record.key is not None and record.superseded_by is None:
                by_key[(namespace, record.key)] = seq

    def _index_each(
        self,
        rows: Iterable[tuple[int, MemoryRecord]],
        memo: TextMemo | None,
        *,
        defer: bool,
    ) -> None:
        """:meth:`_index_many`, one memory at a time. One loop for a whole batch, with what
        every memory shares (the tables, their bound methods) looked up once."""
        table, indexes, columns = self._records, self._indexes, self._columns
        put, stamp_at, aliases = table.put, table.stamp_at, self.aliases
        seq_of, by_key, threads = self._seq_of, self._by_key, self._threads
        add_content = self._by_content.add
        # without a memo (loading a store, one update): nothing kept past the memory
        keys_of = partial(text_keys, aliases=aliases) if memo is None else memo.keys
        cues_of = partial(index_cues, aliases=aliases) if memo is None else memo.index_cues
        content_key_of = content_key if memo is None else memo.content_key
        for seq, record in rows:
            namespace, content = record.namespace, record.content
            keys = keys_of(content)
            cues = cues_of(record, keys)
            index = indexes.get(namespace)
            if index is None:
                index = indexes[namespace] = NamespaceIndex(columns)
            # the cues other memories of the namespace hold (posted or waiting) are coded in
            # the row (recordtable.py); the row's interned cues when the cues are the same, and
            # its creation time when it was never updated: the index shares these objects
            # instead of copies (read from the row's columns: no Row is built for it)
            row_cues = put(seq, record, index.held_cues())
            # the cues are distinct: the index keeps them interned, the row's when equal (the
            # record's own cues are the row's)
            kept = row_cues if cues is record.cues or cues == list(row_cues) else interned(cues)
            turn = thread_of(record) is not None
            index.add_distinct(
                seq, kept, record.tags, keys.terms, _updated_stamp(record, stamp_at(seq)),
                record.type._value_, None if turn else content, defer,  # see _ttl_expiry
            )  # fmt: skip
            seq_of[(namespace, record.memory_id)] = seq
            add_content(content_key_of(record), seq)
            if record.key is not None and record.superseded_by is None:
                by_key[(namespace, record.key)] = seq
            if turn:
                threads.add(seq, record)

    def _flush_postings(self) -> None:
        """Post what ``_index(..., defer=True)`` left waiting (before the index is read)."""
        for index in self._indexes.values():
            index.flush()

    def _neighbours(self, seq: int) -> list[int]:
        """The turns next to ``seq`` in its transcript thread (none for other memories)."""
        return self._threads.neighbours(seq, self._records[seq], self.config.context_span)

    def _refresh_context(self, seqs: Iterable[int]) -> None:
        """Index each transcript turn with its neighbours' words (``context_weight``)."""
        cfg = self.config
        self._threads.refresh_context(
            seqs, self._records, self._indexes, cfg.context_span, cfg.context_weight
        )

    def _unindex(self, seq: int) -> MemoryRecord:
        record = self._records[seq]
        index = self._indexes[record.namespace]
        index.remove(seq)  # before the record goes: its doc reads the record's content, cues
        if not len(index):
            del self._indexes[record.namespace]
        del self._records[seq]
        del self._seq_of[(record.namespace, record.memory_id)]
        self._threads.remove(seq, record)
        key = content_key(record)
        self._by_content.discard(key, seq)
        if record.key is not None and self._by_key.get((record.namespace, record.key)) == seq:
            del self._by_key[(record.namespace, record.key)]
        self._access.pop(seq, None)
        return record

    # ----------------------------------------------------------------- writing
    def _new_id(self, namespace: str, content: str, taken: set[str]) -> str:
        """A stable id from the content (same operations, same ids), suffixed if already used."""
        base = "m-" + hashlib.sha256(f"{namespace}\x00{content}".encode()).hexdigest()[:12]
        candidate, n = base, 1
        while (namespace, candidate) in self._seq_of or candidate in taken:
            n += 1
            candidate = f"{base}-{n}"
        return candidate

    def _build(
        self,
        options: Mapping[str, Any],
        taken: set[str],
        now: datetime,
        memo: TextMemo | None = None,
    ) -> MemoryRecord:
        """A new record from an item of ``add_many`` (``content`` and ``add``'s options; derived
        cues and their text keys through the batch's ``memo``, which keeps the keys for
        indexing). The record's fields are laid out here in their declaration order, the
        defaults of a new memory included, so its checks run on this dict in place
        (:meth:`MemoryRecord._of_fields`)."""
        if not _ITEM_KEYS.issuperset(options):
            name = sorted(set(options) - _ITEM_KEYS)[0]
            raise ValidationError(
                "add option", name, f"choose from {', '.join(sorted(_ADD_OPTIONS))}"
            )
        get = options.get
        config = self.config
        content = options["content"]
        if not (
            type(content) is str
            and content.isascii()
            and 0 < len(content) <= config.max_content_chars
            and not content.isspace()
            and "\x00" not in content
        ):  # else valid as it is (ASCII has no lone surrogate): no calls to say so
            content = _checked_content(content, config.max_content_chars)
        namespace = get("namespace", _DEFAULT_NAMESPACE)
        if namespace is not _DEFAULT_NAMESPACE:  # the default needs no check: most items
            namespace = validate_namespace(namespace)
        given = get("cues")  # none given (most items): no call for the empty tuple
        cues = () if given is None else normalized_list(given, "cues")
        origin: CueOrigin = "given" if cues else "derived"
        if not cues:  # valid content is never blank
            cues = tuple(derive_cues(content)) if memo is None else memo.derived_cues(content)
        memory_id = get("memory_id")
        if memory_id is None:
            memory_id = self._new_id(namespace, content, taken)
        created = get("created_at") or now
        if type(created) is not datetime or created.tzinfo is not timezone.utc:
            created = coerce_timestamp(created, "created_at")  # which returns a UTC one as is
        kind = MemoryType.coerce(get("type", MemoryType.NOTE))
        tags = get("tags")
        expires = get("expires_at") or (  # no call when no type expires (the default)
            self._ttl_expiry(kind, created) if config.ttl_days else None
        )
        values = {
            "memory_id": memory_id, "content": content, "created_at": created,
            "updated_at": get("updated_at") or created, "cues": cues,
            "tags": () if tags is None else normalized_list(tags, "tags"), "type": kind,
            "source": get("source"), "namespace": namespace, "last_accessed": None,
            "access_count": 0, "expires_at": expires,
            "supersedes": get("supersedes"), "superseded_by": None, "superseded_at": None,
            "key": get("key"), "metadata": get("metadata") or {}, "cue_origin": origin,
        }  # fmt: skip
        # content and namespace were validated above, and derived cues are valid by construction
        return MemoryRecord._of_fields(values, cues_checked=origin == "derived")

    def _ttl_expiry(self, kind: MemoryType, created: datetime) -> datetime | None:
        # _value_: the member's own attribute, what the .value property (a Python-level
        # descriptor, a call per read) returns; ingest reads it several times per memory
        days = self.config.ttl_days.get(kind._value_)
        return None if days is None else created + timedelta(days=days)

    def add(
        self,
        content: str,
        *,
        redaction: RedactionPolicy | None | Literal["default"] = "default",
        **options: Any,
    ) -> MemoryRecord:
        """Store one memory and return it as stored (with its id, cues and timestamps).

        Args:
            content: the text to remember (non-empty).
            **options: ``memory_id``, ``cues``, ``tags``, ``type``, ``source``, ``namespace``,
                ``created_at``, ``updated_at``, ``expires_at``, ``supersedes``, ``metadata``.

        Raises:
            ValidationError: a field is invalid (the message names it); nothing is stored.
            DuplicateIdError: ``memory_id`` is already used in the namespace.
            SecretError: the redaction policy says to drop memories holding such a secret.
        """
        return self.add_many([{"content": content, **options}], redaction=redaction)[0]

    def capture(self, messages: Any, *, session_id: str, **options: Any) -> CaptureResult:
        """Turn conversation turns into memories by rule (see :func:`capture`) and store them.

        Duplicates of stored memories are not stored again; a memory with a ``key`` supersedes
        the stored one with that key. Returns the capture result with the records as stored.
        """
        options.setdefault("redaction", self.redaction)
        options.setdefault("now", self.now())
        result = capture_turns(messages, session_id=session_id, **options)
        items = [_as_new(record) for record in result.records]
        stored = self.add_many(items, redaction=options["redaction"]) if items else []
        return replace(result, records=tuple(stored))

    async def acapture(self, messages: Any, *, session_id: str, **options: Any) -> CaptureResult:
        """:meth:`capture` without blocking the event loop."""
        return await asyncio.to_thread(
            lambda: self.capture(messages, session_id=session_id, **options)
        )

    def add_many(
        self,
        items: Iterable[Mapping[str, Any] | MemoryRecord],
        *,
        redaction: RedactionPolicy | None | Literal["default"] = "default",
    ) -> list[MemoryRecord]:
        """Store many memories in one transaction: all are stored, or (on any error) none.

        Each item is a mapping of :meth:`add`'s arguments (``content`` plus options) or a ready
        :class:`MemoryRecord` (stored as given, e.g. from an export).
        """
        policy = self.redaction if redaction == "default" else redaction
        self._sync_if_due(always=True)
        with self._lock, self._writing(), _cycle_collection_paused():
            now = self.now()
            memo = TextMemo(self.aliases)
            prepared = self._prepare(items, now, memo)
            redact_pairs(prepared, policy)
            plan = plan_writes(
                prepared,
                self._view(),
                now=now,
                dedupe=self.config.dedupe,
                conflict_types=frozenset(self.config.conflict_types),
                conflict_overlap=self.config.conflict_overlap,
                key_of=memo.content_key,
            )
            self._apply(plan, now, memo)
        notify(self._listeners, WriteEvent(tuple(plan.new), tuple(plan.changed.values())))
        logger.debug("stored %d memories (%d duplicates)", len(plan.new), len(plan.duplicates))
        return plan.results

    def _apply(self, plan: WritePlan, now: datetime, memo: TextMemo) -> None:
        """Write a plan in one transaction, then bring the in-memory index in step (``memo``:
        the batch's text keys)."""
        with self._store.atomic():
            seqs = self._store.insert_many(plan.new)
            for seq, record in plan.changed.items():
                self._store.replace(seq, record)
            self._store.insert_links(plan.links, now)
        for seq, record in plan.changed.items():
            self._unindex(seq)
            self._index(seq, record)
        self._index_many(zip(seqs, plan.new, strict=True), memo, defer=True)
        self._flush_postings()
        self._refresh_context([*seqs, *plan.changed])
        for link in plan.links:
            self._links.add(*link)
        self._touch(plan.duplicates, now, always=True)

    def _view(self) -> StoreView:
        return StoreView(
            seq_of=lambda namespace, memory_id: self._seq_of.get((namespace, memory_id)),
            record=self._current,
            by_content=self._by_content.first,
            active_key=lambda namespace, key: self._by_key.get((namespace, key)),
            conflict_candidates=self._conflict_candidates,
            seqs_of=self._seq_of.get_many,
        )

    def _conflict_candidates(self, record: MemoryRecord) -> list[int]:
        """Stored memories sharing at least two of ``record``'s cues (in insertion order)."""
        index = self._indexes.get(record.namespace)
        if index is None:
            return []
        counts: dict[int, int] = {}
        for cue in record.cues:
            for seq in index.cues.get(cue, ()):
                counts[seq] = counts.get(seq, 0) + 1
        return sorted(seq for seq, n in counts.items() if n >= 2)

    def _prepare(
        self,
        items: Iterable[Mapping[str, Any] | MemoryRecord],
        now: datetime,
        memo: TextMemo,
    ) -> list[tuple[MemoryRecord, bool]]:
        """Validate every item into a record, paired with "its id was given by the caller".

        The text keys of each content go into ``memo`` right after its cues are derived: both
        scan the same normalized text and tokens, which the text module's small caches still
        hold then, but no longer once the whole batch has been validated."""
        if not isinstance(items, Iterable):
            raise ValidationError("items", items, "a list of mappings or MemoryRecords")
        records: list[tuple[MemoryRecord, bool]] = []
        taken: set[str] = set()
        layout = self._layout(now, memo)
        for position, item in enumerate(items):
            record = None
            if layout is not None and type(item) is dict:  # the usual item, built in C
                record = _textc.new_record(item, layout)  # (None: _build builds it)
            if record is not None:  # its text keys are in the memo: derived with its cues
                records.append((record, True))  # new_record takes items with an id only
                taken.add(record.memory_id)
                continue
            # a dict first: no Mapping check (an abc's) for it
            if type(item) is dict or (
                not isinstance(item, MemoryRecord) and isinstance(item, Mapping)
            ):
                if "content" not in item:
                    raise ValidationError(f"items[{position}].content", None, "non-empty text")
                # a dict is read as it is (it is not changed); another mapping is read once
                options = item if type(item) is dict else dict(item)
                explicit = options.get("memory_id") is not None
                record = self._build(options, taken, now, memo)
            elif isinstance(item, MemoryRecord):
                record, explicit = item, True
            else:
                raise ValidationError(f"items[{position}]", item, "a mapping or a MemoryRecord")
            taken.add(record.memory_id)
            records.append((record, explicit))
            memo.keys(record.content)
        return records

    def _layout(self, now: datetime, memo: TextMemo) -> tuple[object, ...] | None:
        """What ``_textc.new_record`` reads to build the usual item of a batch as
        :meth:`_build` does (None without the extension): a bench item's checks and its
        record's 18 fields took ~37,700 instructions in Python, ~14,300 with this (the memo's
        calls included)."""
        if _textc is None:
            return None
        options = ("content", "namespace", "cues", "memory_id", "created_at", "type", "tags",
                   "expires_at", "updated_at", "source", "supersedes", "key", "metadata")  # fmt: skip
        return (
            MemoryRecord, RECORD_FIELDS, options, _ITEM_KEYS, self.config.max_content_chars,
            not self.config.ttl_days, now, timezone.utc, _TYPE_OF_VALUE, MemoryType.NOTE,
            MemoryType, _DEFAULT_NAMESPACE, "derived", memo.derive(), _FIELD_TEMPLATE,
        )  # fmt: skip

    def get(self, memory_id: str, *, namespace: str = "default") -> MemoryRecord:
        """The memory with this id, with up-to-date access statistics.

        Raises:
            NotFoundError: no such memory in the namespace.
        """
        self._sync_if_due()
        with self._lock:
            seq = self._seq(memory_id, namespace)
            return self._current(seq)

    def _seq(self, memory_id: str, namespace: str) -> int:
        for field, value in (("memory_id", memory_id), ("namespace", namespace)):
            if not isinstance(value, str):  # a list would fail as an unhashable dict key
                raise ValidationError(field, value, "a string")
        seq = self._seq_of.get((namespace, memory_id))
        if seq is None:
            raise NotFoundError(memory_id, namespace)
        return seq

    def _current(self, seq: int) -> MemoryRecord:
        record = self._records[seq]
        if seq in self._access:
            count, when = self._access[seq]
            record = record.evolve(access_count=count, last_accessed=when)
        return record

    def update(self, memory_id: str, *, namespace: str = "default", **changes: Any) -> MemoryRecord:
        """Change some fields of a memory; return the new version.

        Derived cues are derived again when the content changes; given cues are kept unless
        ``cues`` is passed. Updatable: ``content``, ``cues``, ``tags``, ``type``, ``source``,
        ``metadata``, ``expires_at``.

        Raises:
            NotFoundError: no such memory. ValidationError: a bad field; nothing changes.
        """
        for key in changes:
            if key not in _UPDATABLE:
                raise ValidationError("update field", key, f"choose from {', '.join(_UPDATABLE)}")
        self._sync_if_due(always=True)
        with self._lock, self._writing():
            seq = self._seq(memory_id, namespace)
            old = self._current(seq)
            record = redact_record(self._evolved(old, changes), self.redaction, 0)
            self._store.replace(seq, record)
            neighbours = self._neighbours(seq)
            self._unindex(seq)
            self._index(seq, record)
            self._refresh_context([*neighbours, seq])
        notify(self._listeners, WriteEvent(changed=(record,)))
        return record

    def _evolved(self, old: MemoryRecord, changes: dict[str, Any]) -> MemoryRecord:
        if "cues" in changes:
            cues = normalized_list(changes["cues"], "cues")
            changes["cues"], changes["cue_origin"] = cues, "given" if cues else "derived"
        if "tags" in changes:
            changes["tags"] = normalized_list(changes["tags"], "tags")
        new = old.evolve(**changes, updated_at=self.now())
        if new.cue_origin == "derived" and (not new.cues or new.content != old.content):
            new = new.evolve(cues=tuple(derive_cues(new.content)))
        return new

    def delete(self, memory_id: str, *, namespace: str = "default") -> MemoryRecord:
        """Delete a memory and every index entry and link it had; return what was deleted.

        Raises:
            NotFoundError: no such memory in the namespace.
        """
        self._sync_if_due(always=True)
        with self._lock, self._writing():
            removed = self._remove([self._seq(memory_id, namespace)])
        notify(self._listeners, WriteEvent(removed=tuple(removed)))
        return removed[0]

    def _remove(self, seqs: Sequence[int]) -> list[MemoryRecord]:
        records = [self._current(seq) for seq in seqs]
        with self._store.atomic():
            self._store.delete(seqs)
            for record in records:
                self._store.delete_links(record.namespace, record.memory_id)
        neighbours = [n for seq in seqs for n in self._neighbours(seq)]
        for seq, record in zip(seqs, records, strict=True):
            self._unindex(seq)
            self._links.drop(record.namespace, record.memory_id)
        self._refresh_context([n for n in neighbours if n in self._records])
        return records

    def forget(
        self,
        memory_ids: Iterable[str] | None = None,
        *,
        namespace: str = "default",
        types: Iterable[MemoryType | str] | None = None,
        sources: Iterable[str] | None = None,
        before: datetime | str | None = None,
        everything: bool = False,
    ) -> list[MemoryRecord]:
        """Delete memories for good (rows, index entries, links) and return what was removed.

        Either name ``memory_ids``, or give filters (``types``, ``sources``, ``before`` a
        creation time), or pass ``everything=True`` to empty the whole namespace (its recall
        sessions are forgotten too). Unknown ids are ignored: forgetting is idempotent.

        Raises:
            ValidationError: nothing to select by, or a bad filter.
        """
        namespace = validate_namespace(namespace)
        filters = build_filters(types=types, sources=sources, until=before)
        chosen = memory_ids is not None or filters != Filters() or everything
        if not chosen:
            raise ValidationError(
                "forget", None, "memory ids, a filter (types, sources, before) or everything=True"
            )
        if isinstance(memory_ids, str):
            memory_ids = [memory_ids]
        if memory_ids is not None:
            memory_ids = id_list(memory_ids)
        self._sync_if_due(always=True)
        with self._lock, self._writing():
            seqs = self._select(namespace, memory_ids, filters)
            removed = self._remove(seqs)
            if everything and memory_ids is None and filters == Filters():
                self._sessions.delete_namespace_sessions(namespace)
        notify(self._listeners, WriteEvent(removed=tuple(removed)))
        return removed

    def add_listener(self, listener: WriteListener) -> None:
        """Call ``listener.on_write(event)`` after every committed write (see :mod:`.events`)."""
        with self._lock:
            self._listeners.append(listener)

    def remove_listener(self, listener: WriteListener) -> None:
        """Stop notifying ``listener`` (unknown listeners are ignored)."""
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def _select(
        self, namespace: str, memory_ids: Iterable[str] | None, filters: Filters
    ) -> list[int]:
        if memory_ids is not None:
            found = (self._seq_of.get((namespace, i)) for i in memory_ids)
            return [seq for seq in dict.fromkeys(found) if seq is not None]
        index = self._indexes.get(namespace)
        everyone = Filters(
            **{**filters.__dict__, "include_expired": True, "include_superseded": True}
        )
        return [
            s
            for s in (index.docs if index else ())
            if everyone.admits(self._records.row(s), self.now())
        ]

    def history(self, memory_id: str, *, namespace: str = "default") -> list[MemoryRecord]:
        """Every version of a memory, oldest first, following ``supersedes`` links both ways.

        Raises:
            NotFoundError: no such memory in the namespace.
        """
        with self._lock:
            record = self._current(self._seq(memory_id, namespace))
            chain = [record]
            while chain[0].supersedes and (namespace, chain[0].supersedes) in self._seq_of:
                chain.insert(0, self._current(self._seq_of[(namespace, chain[0].supersedes)]))
            while chain[-1].superseded_by and (namespace, chain[-1].superseded_by) in self._seq_of:
                chain.append(self._current(self._seq_of[(namespace, chain[-1].superseded_by)]))
            return chain

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, item: object) -> bool:
        if isinstance(item, tuple) and len(item) == 2:
            return item in self._seq_of
        return ("default", item) in self._seq_of

    def memories(self, *, namespace: str | None = None) -> list[MemoryRecord]:
        """Every stored memory (of one namespace, or all), in insertion order."""
        self._sync_if_due()
        with self._lock:
            return [
                self._current(seq)
                for seq, row in self._records.rows()
                if namespace is None or row.namespace == namespace
            ]

    def namespaces(self) -> list[str]:
        """The namespaces that hold at least one memory, sorted."""
        with self._lock:
            return sorted(self._indexes)

    # ----------------------------------------------------------------- recall
    def recall(
        self,
        query: str,
        *,
        k: int = 5,
        namespace: str = "default",
        types: Iterable[MemoryType | str] | None = None,
        sources: Iterable[str] | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        extra_cues: Sequence[str] = (),
        min_score: float | None = None,
        include_expired: bool = False,
        include_superseded: bool = False,
        explain: bool = False,
        hybrid: bool | None = None,
    ) -> RecallResult:
        """The ``k`` best memories for ``query``, best first.

        Args:
            query: free text in any language; its cues are found by rule (no model).
            k: how many hits at most (>= 1).
            namespace: only this namespace is searched.
            types / sources: keep only memories of these types / sources.
            since / until: keep only memories created in this (inclusive) time range.
            extra_cues: cues to add to the ones found in the query (weighted as explicit).
            min_score: drop hits scoring below this.
            include_expired / include_superseded: also return those (hidden by default).
            explain: attach the query trace (``result.trace``); each hit's breakdown is always set.
            hybrid: ``False`` skips the store's recall extension (the dense fallback) for this
                call; ``None``/``True`` use it when the store has one.

        Raises:
            ValidationError: a bad argument (the message names it).
        """
        filters = build_filters(
            types=types, sources=sources, since=since, until=until,
            include_expired=include_expired, include_superseded=include_superseded,
        )  # fmt: skip
        with _cycle_collection_paused(promote=False):  # see there: the recall's temporaries
            return self._recall(
                query, k=k, namespace=namespace, extra_cues=extra_cues, min_score=min_score,
                explain=explain, extend=hybrid is not False, filters=filters,
            )  # fmt: skip

    def _recall(
        self,
        query: str,
        *,
        k: int,
        namespace: str,
        filters: Filters,
        extra_cues: Sequence[str] = (),
        min_score: float | None = None,
        explain: bool = False,
        expanded: Sequence[tuple[str, float, Sequence[str]]] = (),
        exclude: frozenset[str] = frozenset(),
        extend: bool = True,
    ) -> RecallResult:
        check_recall_args(query, k, min_score, extra_cues)
        namespace = validate_namespace(namespace)
        self._sync_if_due()
        with self._lock:
            index = self._indexes.get(namespace) or NamespaceIndex()
            now = self.now()
            carried = [self._carried(namespace, *item) for item in expanded]
            counts = _Counts(self._access)  # not changed until the ranking is over

            read = plan_query(query, index, self.aliases, extra_cues=extra_cues)  # read once
            speakers = self._threads.named_speakers(namespace, read.normalized)
            turns = self._threads.turns_by(namespace, speakers)
            if speakers or turns:  # else the plan's own (empty) ones: no dataclass replace
                read = replace(read, speakers=speakers, speaker_turns=turns)
            # what both passes share: same time, counts, filters and query words (the memo)
            ranking = Ranking(index, self._records, counts, self.config, filters, now,
                              min_score, exclude, self.config.prune, RecallMemo())  # fmt: skip
            hits, seqs, trace = self._passes(ranking, read, carried, k)
            hits = hits[:k]
            extension = self.extension if extend else None
            if extension is None:
                # the hits as ranked, in the same hold of the lock: their seqs are the
                # ranking's (looking each id up again was ~1% of a recall at 100k)
                self._touch(seqs[: len(hits)], now)
                linked, notes = self._linked(namespace, hits)
        if extension is not None:
            # outside the lock: an extension may embed the query, which is slow
            admits = _Admits(filters, exclude, now)
            request = RecallRequest(query, k, namespace, min_score, admits)
            hits = list(extension.extend(request, tuple(hits)))
            with self._lock:
                self._touch(
                    [
                        s
                        for s in (self._seq_of.get((namespace, h.memory_id)) for h in hits)
                        if s is not None
                    ],
                    now,
                )
                linked, notes = self._linked(namespace, hits)
        if logger.isEnabledFor(logging.DEBUG):  # the dict is made for this log alone
            logger.debug("recall trace: %s", trace.as_dict())
        return RecallResult(linked, trace if explain else None, notes)

    def _linked(
        self, namespace: str, hits: Sequence[Hit]
    ) -> tuple[tuple[Hit, ...], tuple[ConflictNote, ...]]:
        """The hits with their conflict partners, and the notes about them."""
        each = self._links.partners(namespace, [hit.memory.memory_id for hit in hits])
        linked = tuple(
            [replace(hit, conflicts=tuple(partners)) if partners else hit
             for hit, partners in zip(hits, each, strict=True)]
        )  # fmt: skip
        return linked, self._notes(namespace, linked)

    def _passes(
        self, ranking: Ranking, read: QueryPlan, carried: Sequence[Carried], k: int
    ) -> tuple[list[Hit], list[int], RecallTrace]:
        """The recall's hits, their seqs and the trace: with feedback, a first pass whose top
        memories lend their cues to the final pass."""
        plan = with_carried(read, carried, self.aliases)
        depth = self.config.feedback_hits
        if not depth:
            return ranking.ranked_hits(plan, k)
        wide = first_pass_hits(ranking.index, self.config, k, depth, ranking.memo)
        first = ranking.scored(plan, wide)
        if not first.best:
            return [], [], ranking_trace(plan, first.scored, [])
        lent = self._feedback(ranking.index, read.flat_cues, first)
        return ranking.ranked_hits(with_carried(read, [*carried, *lent], self.aliases), k)

    def _notes(self, namespace: str, hits: Sequence[Hit]) -> tuple[ConflictNote, ...]:
        """Conflict and supersession notes about the hits, one per pair, in hit order."""
        notes: dict[frozenset[str], ConflictNote] = {}
        for hit in hits:
            memory = hit.memory
            if not (hit.conflicts or memory.supersedes or memory.superseded_by):
                continue  # nearly every hit: no pair, no lists made
            pairs: list[tuple[str, NoteKind]] = [(other, "conflict") for other in hit.conflicts]
            pairs += [(other, "supersedes") for other in (memory.supersedes,) if other]
            pairs += [(other, "superseded") for other in (memory.superseded_by,) if other]
            for other_id, kind in pairs:
                seq = self._seq_of.get((namespace, other_id))
                pair = frozenset((memory.memory_id, other_id))
                if seq is not None and pair not in notes:
                    notes[pair] = ConflictNote.between(kind, memory, self._current(seq))
        return tuple(notes.values())

    def _feedback(
        self, index: NamespaceIndex, query_cues: Sequence[str], first: Scored
    ) -> list[Carried]:
        """Pseudo-relevance feedback: the first pass's top memories lend their cues to a second
        pass, like the previous turn of a session does (and with the same self-discount)."""
        cfg, docs = self.config, index.docs
        # the query's own cues are explicit in the final plan, which drops carried ones equal
        # to them (with_carried): none is lent, so no Carried is made to be dropped
        explicit = set(query_cues)
        cues = _lent(
            (), first.best[: cfg.feedback_hits], QUERY_SOURCE, cfg.session_min_share,
            partial(_lent_cues, docs.held_cues_and_tags),  # the first pass's memories
        )  # fmt: skip
        # most cues come from one memory: its set of one seq made once, shared (it is frozen)
        alone = {seq: frozenset((seq,)) for seq, _ in first.best[: cfg.feedback_hits]}
        alone[QUERY_SOURCE] = frozenset((QUERY_SOURCE,))
        return _lent_carried(Carried, cues, explicit, cfg.feedback_weight, alone)

    def _carried(self, namespace: str, cue: str, weight: float, ids: Sequence[str]) -> Carried:
        """A session's carried cue with its source memory ids resolved to sequence numbers."""
        seqs = frozenset(
            self._seq_of.get((namespace, i), QUERY_SOURCE) if i else QUERY_SOURCE for i in ids
        )
        return Carried(cue, weight, seqs or frozenset({QUERY_SOURCE}))

    def _touch(self, seqs: Sequence[int], now: datetime, *, always: bool = False) -> None:
        """Count the access after ranking, so it can never change the ranking that caused it."""
        if not (self.config.track_access or always):
            return
        pending, counted = self._access, self._records.access_count
        for seq in seqs:
            held = pending.get(seq)  # the row is read only for a count not pending already
            count = counted(seq) if held is None else held[0]
            pending[seq] = (count + 1, now)
        if len(self._access) >= _ACCESS_FLUSH_EVERY:
            self._flush_access()

    def _flush_access(self) -> None:
        if not self._access:
            return
        self._store.write_access([(seq, c, when) for seq, (c, when) in self._access.items()])
        for seq, (count, when) in self._access.items():
            self._records.accessed(seq, count, when)
        self._access.clear()

    def session(
        self, session_id: str, *, namespace: str = "default", skip_shown: bool = False
    ) -> RecallSession:
        """A continuous-recall session (created, or resumed from the store)."""
        from .session import RecallSession

        return RecallSession(self, session_id, namespace=namespace, skip_shown=skip_shown)

    # ----------------------------------------------------------------- async twins
    async def arecall(self, query: str, **kwargs: Any) -> RecallResult:
        """:meth:`recall` without blocking the event loop (runs in a worker thread)."""
        return await asyncio.to_thread(lambda: self.recall(query, **kwargs))

    async def aadd(self, content: str, **options: Any) -> MemoryRecord:
        """:meth:`add` without blocking the event loop."""
        return await asyncio.to_thread(lambda: self.add(content, **options))

    async def aadd_many(
        self, items: Iterable[Mapping[str, Any] | MemoryRecord]
    ) -> list[MemoryRecord]:
        """:meth:`add_many` without blocking the event loop."""
        items = list(items)
        return await asyncio.to_thread(lambda: self.add_many(items))

    # ----------------------------------------------------------------- reporting
    def check(self) -> list[str]:
        """Integrity problems, as sentences; an empty list means the store is sound.

        Checks SQLite's own integrity, that the in-memory index equals one rebuilt from the
        tables, and that no supersession or conflict link points at a missing memory. An
        extension with a ``check()`` method (the dense index) adds its own findings.
        """
        self._sync_if_due(always=True)
        with self._lock, self._writing():  # a shared store holds still while it is compared
            problems = [f"{self._store.backend}: {p}" for p in self._store.integrity_errors()]
            rebuilt = CueMap(config=self.config, clock=self._clock, redaction=None)
            with rebuilt:
                for seq, record in self._store.load():
                    rebuilt._index(seq, record)
                rebuilt._refresh_context(list(rebuilt._records))
                problems += self._compare_index(rebuilt)
            problems += self._dangling()
        extension_check = getattr(self.extension, "check", None)
        if callable(extension_check):
            problems += [str(p) for p in extension_check()]
        return problems

    def _compare_index(self, rebuilt: CueMap) -> list[str]:
        problems = []
        if set(rebuilt._seq_of) != set(self._seq_of):
            missing = sorted(set(rebuilt._seq_of) - set(self._seq_of))[:5]
            extra = sorted(set(self._seq_of) - set(rebuilt._seq_of))[:5]
            problems.append(f"index and tables differ: not indexed {missing}, not stored {extra}")
        for namespace, index in self._indexes.items():
            fresh = rebuilt._indexes.get(namespace)
            if fresh is None or fresh.docs != index.docs or fresh.terms != index.terms:
                problems.append(f"namespace {namespace!r}: index differs from a rebuild")
            elif fresh.cues != index.cues or fresh.tags != index.tags:
                problems.append(f"namespace {namespace!r}: cue or tag postings differ")
            if index.view is not None:  # the NumPy mirror of large namespaces (arrays.py)
                problems += [f"namespace {namespace!r}: {p}" for p in index.view.errors()]
        return problems

    def _dangling(self) -> list[str]:
        problems = []
        for record in self._records.values():
            for field_name in ("supersedes", "superseded_by"):
                target = getattr(record, field_name)
                if target and (record.namespace, target) not in self._seq_of:
                    problems.append(f"{record.memory_id}.{field_name} -> missing {target!r}")
        for namespace, from_id, to_id, _ in self._store.load_links():
            for end in (from_id, to_id):
                if (namespace, end) not in self._seq_of:
                    problems.append(f"link {from_id} -> {to_id} names missing memory {end!r}")
        return problems

    def stats(self) -> StoreStats:
        """Counts per namespace and type, index sizes, sessions."""
        self._sync_if_due()
        with self._lock:
            namespaces: dict[str, int] = {}
            types: dict[str, int] = {}
            for _, row in self._records.rows():
                namespaces[row.namespace] = namespaces.get(row.namespace, 0) + 1
                types[row.type.value] = types.get(row.type.value, 0) + 1
            return StoreStats(
                path=self.path,
                schema_version=self._store.schema_version,
                memories=len(self._records),
                namespaces=dict(sorted(namespaces.items())),
                types=dict(sorted(types.items())),
                distinct_cues=sum(len(ix.cues) for ix in self._indexes.values()),
                distinct_terms=sum(len(ix.terms) for ix in self._indexes.values()),
                sessions=self._sessions.count_sessions(),
            )

    # session state lives in the store (or Redis), so a session survives a restart and can move
    # to another instance
    def _load_session(self, namespace: str, session_id: str) -> dict[str, JSONValue] | None:
        with self._lock:
            return self._sessions.get_session(namespace, session_id)

    def _save_session(self, namespace: str, session_id: str, state: dict[str, JSONValue]) -> None:
        with self._lock:
            self._sessions.put_session(namespace, session_id, state, self.now())

    def _drop_session(self, namespace: str, session_id: str) -> None:
        with self._lock:
            self._sessions.delete_session(namespace, session_id)

    # ----------------------------------------------------------------- shared stores
    # (PostgreSQL: several instances write one store; see sync.py for modes and bounds)
    def sync(self) -> int:
        """Apply every write other instances committed since the last sync; return how many
        memories changed (always 0 on SQLite). Recalls call it as ``sync=`` says."""
        with self._lock:
            events, self._late = [*self._late, self._pull()], []
        for event in events:
            notify(self._listeners, event)
        return sum(len(e.added) + len(e.changed) + len(e.removed) for e in events)

    def _sync_if_due(self, *, always: bool = False) -> None:
        if self._feed is not None and (always or self._feed.due()):
            self.sync()

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Hold the store's writer lock (shared stores): catch up, plan and commit with no other
        instance writing in between, so ids, duplicates, keys and conflicts are planned right."""
        if self._feed is None:
            yield
            return
        with self._feed.store.writer():
            # usually nothing: the caller synced just before locking; listeners hear of it on
            # the next sync, outside the lock
            self._late.append(self._pull())
            yield
            self._feed.skip_own()

    def _pull(self) -> WriteEvent:
        changes = None if self._feed is None else self._feed.read()
        return WriteEvent() if changes is None else self._apply_remote(changes)

    def _apply_remote(self, changes: RemoteChanges) -> WriteEvent:
        """Re-index what other instances wrote (idempotent: current rows replace old ones)."""
        added: list[MemoryRecord] = []
        changed: list[MemoryRecord] = []
        removed: list[MemoryRecord] = []
        touched: list[int] = []
        for key, row in changes.rows.items():
            old = self._seq_of.get(key)
            if old is not None:
                touched += self._neighbours(old)
                record = self._unindex(old)
                if row is None:
                    removed.append(record)
                    self._links.drop(*key)
            if row is not None:
                self._index(*row)
                (added if old is None else changed).append(row[1])
                touched.append(row[0])
        for key in changes.relinked:
            self._links.drop(*key)
        for link in changes.links:
            self._links.add(*link)
        self._refresh_context([seq for seq in touched if seq in self._records])
        return WriteEvent(tuple(added), tuple(changed), tuple(removed))

    def _carry(
        self, namespace: str, query_cues: Sequence[str], hits: Sequence[Hit], depth: int
    ) -> dict[str, tuple[float, list[str]]]:
        """The cues a turn passes on (:func:`_lent`), each with the ids of the memories it came
        from ("" for the query)."""
        return _lent(
            query_cues, [(hit.memory_id, hit.score) for hit in hits[:depth]], "",
            self.config.session_min_share, partial(self._indexed_cues, namespace),
        )  # fmt: skip

    def _indexed_cues(self, namespace: str, memory_id: str) -> tuple[str, ...]:
        seq = self._seq_of.get((namespace, memory_id))
        if seq is None:
            return ()
        return _cues_and_tags(self._indexes[namespace].docs, seq)


def _cues_and_tags(docs: DocTable, seq: int) -> tuple[str, ...]:
    """What memory ``seq`` lends a later pass or turn: its indexed cues, then its tags."""
    return _lent_cues(docs.cues_and_tags, seq)


def _lent_cues(
    read: Callable[[int], tuple[tuple[str, ...], tuple[str, ...]]], seq: int
) -> tuple[str, ...]:
    """:func:`_cues_and_tags` by ``read`` (``DocTable.cues_and_tags`` or, for a memory the
    namespace's table is known to hold, ``held_cues_and_tags``)."""
    cues, tags = read(seq)
    return cues + tags if tags else cues


_Source = TypeVar("_Source", int, str)


def _lent(
    query_cues: Sequence[str],
    lenders: Sequence[tuple[_Source, float]],
    query: _Source,
    min_share: float,
    cues_of: Callable[[_Source], tuple[str, ...]],
) -> dict[str, tuple[float, list[_Source]]]:
    """The cues a turn passes on: its query cues, and the cues (``cues_of``) of the
    ``lenders`` (``(memory, score)``, best first) that scored at least ``min_share`` of the
    best, weighted by that share. Each cue keeps the memories it came from (``query`` for the
    query): ids for a session, which stores them, seqs for the feedback pass."""
    cues: dict[str, tuple[float, list[_Source]]] = {cue: (1.0, [query]) for cue in query_cues}
    best = lenders[0][1] if lenders else 0.0
    for source, score in lenders:
        share = score / best if best > 0 else 0.0
        if share < min_share:
            break
        _lend(cues, cues_of(source), round(share, 6), source)
    return cues


def _py_lend(
    cues: dict[str, tuple[float, list[_Source]]],
    lent: tuple[str, ...],
    share: float,
    source: _Source,
) -> None:
    """One lender's cues (``lent``, at its rounded ``share``) into ``cues`` (:func:`_lent`):
    a new cue comes from this ``source`` alone, a known one adds it to its sources and keeps
    the higher share."""
    for cue in lent:
        held = cues.get(cue)
        if held is None:
            cues[cue] = (share, [source])
            continue
        held[1].append(source)  # each cue's own list (the query's too)
        if share > held[0]:
            cues[cue] = (share, held[1])


def _py_lent_carried(
    carried: type[Carried],
    cues: dict[str, tuple[float, list[int]]],
    explicit: set[str],
    scale: float,
    alone: dict[int, frozenset[int]],
) -> list[Carried]:
    """The feedback pass's lent ``cues`` (:func:`_lent`) but the query's ``explicit`` ones,
    as ``carried`` cues weighted by ``scale``; a cue from one memory gets that memory's
    shared set of one (``alone``). Self factor 0: feedback finds what is related to the hits,
    not the hits again."""
    new = tuple.__new__  # Carried's own __new__ is Python code
    return [
        new(carried, (cue, weight * scale, alone[seqs[0]] if len(seqs) == 1
                      else frozenset(seqs), 0.0))
        for cue, (weight, seqs) in cues.items()
        if cue not in explicit
    ]  # fmt: skip


# the compiled twins when built: a feedback pass lends some hundred cues, a loop step each
_lend: Callable[[dict[str, tuple[float, list[Any]]], tuple[str, ...], float, Any], None] = (
    _py_lend if _textc is None else _textc.lend
)
_lent_carried: Callable[
    [
        type[Carried],
        dict[str, tuple[float, list[int]]],
        set[str],
        float,
        dict[int, frozenset[int]],
    ],
    list[Carried],
] = _py_lent_carried if _textc is None else _textc.lent_carried


class _Counts(Mapping[int, int]):
    """The access counts not yet written (``seq -> (count, when)``) as ``seq -> count``, read
    in place: a recall asks only its hits' counts (the frequency rule is off by default), and
    copying up to :data:`_ACCESS_FLUSH_EVERY` entries per recall cost ~1% of it at 100k."""

    __slots__ = ("_pending",)

    def __init__(self, pending: Mapping[int, tuple[int, datetime]]) -> None:
        self._pending = pending

    def __getitem__(self, seq: int) -> int:
        return self._pending[seq][0]

    def get(self, seq: int, default: Any = None) -> Any:
        """The count of ``seq``, or ``default``: ranking asks it of each hit, and a memory
        without a pending count is the usual answer (Mapping.get raises and catches KeyError)."""
        held = self._pending.get(seq)
        return default if held is None else held[0]

    def __iter__(self) -> Iterator[int]:
        return iter(self._pending)

    def __len__(self) -> int:
        return len(self._pending)


@dataclass(frozen=True)
class _Admits:
    """The recall's filters as a predicate, for hits that come from outside the index."""

    filters: Filters
    exclude: frozenset[str]
    now: datetime

    def __call__(self, record: MemoryRecord) -> bool:
        return record.memory_id not in self.exclude and self.filters.admits(record, self.now)


_ADD_OPTIONS = frozenset(
    {"memory_id", "key", "cues", "tags", "type", "source", "namespace", "created_at", "updated_at",
     "expires_at", "supersedes", "metadata"}
)  # fmt: skip
_ITEM_KEYS = _ADD_OPTIONS | {"content"}  # what an add_many item may hold
_DEFAULT_NAMESPACE = "default"


def _checked_content(content: object, max_chars: int) -> str:
    """``content`` if it is valid memory text within ``max_chars`` characters."""
    if isinstance(content, str) and len(content) > max_chars:
        raise ValidationError("content", content[:40], f"at most {max_chars} characters")
    return validate_content(content)  # before hashing it into an id


def _as_new(record: MemoryRecord) -> dict[str, Any]:
    """A captured record as ``add`` options without its id, so duplicates are recognised."""
    return {
        "content": record.content, "cues": record.cues if record.cue_origin == "given" else None,
        "tags": record.tags, "type": record.type, "source": record.source,
        "namespace": record.namespace, "created_at": record.created_at, "key": record.key,
        "metadata": record.metadata,
    }  # fmt: skip
