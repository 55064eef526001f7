"""The store's memory records, packed: a few column slots per memory, a record made on access.

A :class:`~cuemap_integrations.records.MemoryRecord` held for every memory costs about 300 bytes
beyond its strings: the dataclass and its instance dict, a ``datetime`` per timestamp, an empty
metadata dict. :class:`RecordTable` keeps the fields of a :class:`Row` instead, in columns by
``seq`` (about 44 bytes): the fields most memories set, a POSIX timestamp for ``created_at``,
and only the other fields that differ from their default. Reading a record builds it from its
row without validating it again (it was validated when stored). Filters and scoring read the few
fields they need from the row itself (:meth:`RecordTable.row`, a tuple made from the columns),
so ranking many candidates builds no records.

Example:
    >>> from datetime import datetime, timezone
    >>> t = datetime(2026, 1, 2, tzinfo=timezone.utc)
    >>> table = RecordTable()
    >>> table[7] = MemoryRecord(memory_id="m1", content="The API uses port 8001", created_at=t,
    ...                         updated_at=t, key="api.port")
    >>> table.row(7).extra, table[7].key, table[7] == table[7]
    (('key', 'api.port'), 'api.port', True)
"""

from __future__ import annotations

import sys
from array import array
from collections import deque
from collections.abc import Callable, Container, Iterable, Iterator, MutableMapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import MISSING, fields
from datetime import datetime, timezone
from functools import partial
from itertools import accumulate, chain, compress, islice, repeat
from operator import is_not, itemgetter, lt
from struct import Struct
from typing import Any, NamedTuple, Protocol

from .records import CueOrigin, JSONValue, MemoryRecord, MemoryType
from .text import _C as _textc

__all__ = [
    "RecordHead", "RecordTable", "Row", "drain", "insertion_numbers", "interned", "put_all",
    "run_of",
]  # fmt: skip

# The fields a row keeps only when they differ from their default (updated_at: from created_at).
_EXTRA = ("updated_at", "tags", "last_accessed", "access_count", "expires_at", "supersedes",
          "superseded_by", "superseded_at", "key")  # fmt: skip
_DEFAULTS: dict[str, Any] = {
    f.name: f.default for f in fields(MemoryRecord) if f.default is not MISSING
}
_EXTRA_DEFAULTS = tuple((name, _DEFAULTS[name]) for name in _EXTRA if name != "updated_at")
_EXTRA_NAMES = tuple(name for name, _ in _EXTRA_DEFAULTS)
_EXTRA_VALUES = tuple(default for _, default in _EXTRA_DEFAULTS)
_EXTRA_OF = itemgetter(*_EXTRA_NAMES)  # a record's values of them, as a tuple
_EXTRA_RANK = {name: at for at, name in enumerate(_EXTRA)}  # pack writes them in this order
_ACCESS_NAMES = ("last_accessed", "access_count")  # a row's extra names once recalled, in order
# the extra fields by which a memory can fail the default filters (expired, superseded)
_FALLIBLE_NAMES = frozenset(("expires_at", "superseded_by"))


class RecordHead(Protocol):
    """The fields of a memory that filters and scoring read: a record or its packed row."""

    @property
    def memory_id(self) -> str: ...
    @property
    def type(self) -> MemoryType: ...
    @property
    def source(self) -> str | None: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def superseded_by(self) -> str | None: ...
    @property
    def access_count(self) -> int: ...
    def is_expired(self, now: datetime) -> bool: ...


Kind = tuple[MemoryType, str | None, str, CueOrigin, tuple[str, ...] | None]


class Row(NamedTuple):
    """One memory, packed: a view of its :class:`RecordTable`'s columns at ``seq``.

    ``memory_id`` and ``extra``, which filters read of every recall candidate, are read when
    the row is made; the other fields are read from the columns when asked, so making a row
    touches little more memory than reading the one tuple per memory a table used to keep
    (making all seven fields touched each column and object: 1.7 us a row against 0.5, at
    random among 100,000 memories). Read a row's fields before changing its memory.

    ``kind`` is ``(type, source, namespace, cue_origin, metadata names)``, one tuple shared by
    every row with the same five (a store has a handful of combinations: its memories'
    metadata mostly has the same names). ``metadata`` holds only the values of those names:
    the one value itself when there is one name (no tuple: 56 bytes less per memory,
    membreak.py 100000), else a tuple of them (None when there is none); in a row whose kind
    is not shared (names None), a flat ``(name, value, ...)`` tuple. ``extra`` is a flat
    ``(name, value, name, value...)`` tuple (a tuple is smaller than a dict) of the fields in
    :data:`_EXTRA` that differ from their default (usually none). Two rows are equal when
    these fields are (:meth:`fields`)."""

    memory_id: str
    extra: tuple[Any, ...]
    seq: int
    table: RecordTable

    @property
    def content(self) -> str:
        """The memory's content."""
        return self.table._contents[self.seq]  # type: ignore[return-value]  # a row's: a str

    @property
    def cues(self) -> tuple[str, ...]:
        """The memory's cues."""
        return self.table.cues_at(self.seq)  # type: ignore[return-value]  # a row's: a tuple

    @property
    def kind(self) -> Kind:
        """``(type, source, namespace, cue_origin, metadata names)`` (see above)."""
        return _kind_at(self.table, self.seq)

    @property
    def stamp(self) -> float | datetime:
        """``created_at``: POSIX seconds when they convert back exactly, else the datetime."""
        return _stamp_at(self.table, self.seq)

    @property
    def metadata(self) -> Any:
        """The values of the names in ``kind[4]``, or a flat tuple (see above)."""
        return self.table._metadata[self.seq]

    def fields(self) -> tuple[Any, ...]:
        """``(memory_id, content, cues, kind, stamp, metadata, extra)``."""
        memory_id, extra, seq, table = self
        return (
            memory_id, table._contents[seq], table.cues_at(seq), _kind_at(table, seq),
            _stamp_at(table, seq), table._metadata[seq], extra,
        )  # fmt: skip

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Row):
            return self.fields() == other.fields()
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __repr__(self) -> str:
        names = ("memory_id", "content", "cues", "kind", "stamp", "metadata", "extra")
        shown = ", ".join(f"{n}={v!r}" for n, v in zip(names, self.fields(), strict=True))
        return f"Row({shown})"

    @property
    def type(self) -> MemoryType:
        """The memory's type."""
        return self.kind[0]

    @property
    def source(self) -> str | None:
        """Where the memory came from, or None."""
        return self.kind[1]

    @property
    def namespace(self) -> str:
        """The memory's namespace."""
        return self.kind[2]

    @property
    def cue_origin(self) -> CueOrigin:
        """Whether its cues were derived or given."""
        return self.kind[3]

    @property
    def created_at(self) -> datetime:
        """When the memory was created (aware UTC)."""
        stamp = self.stamp
        return stamp if isinstance(stamp, datetime) else datetime.fromtimestamp(stamp, timezone.utc)

    def field(self, name: str) -> Any:
        """The value of one of the :data:`_EXTRA` fields."""
        extra = self.extra
        for at in range(0, len(extra), 2):
            if extra[at] == name:
                return extra[at + 1]
        return self.created_at if name == "updated_at" else _DEFAULTS[name]

    @property
    def superseded_by(self) -> str | None:
        """The id of the memory that replaced this one, or None."""
        return self.field("superseded_by") if self.extra else None

    @property
    def access_count(self) -> int:
        """How many recalls returned it (as last written to the row)."""
        return self.field("access_count") if self.extra else 0

    @property
    def expires_at(self) -> datetime | None:
        """When it stops being recalled, or None."""
        return self.field("expires_at") if self.extra else None

    def is_expired(self, now: datetime) -> bool:
        """True when ``expires_at`` is at or before ``now``."""
        if not self.extra:  # the usual row: asked for every recall candidate
            return False
        expires = self.field("expires_at")
        return expires is not None and expires <= now


def drain(calls: Iterator[object]) -> None:
    """Run a lazy iterator of calls for their effect (``deque(maxlen=0)`` consumes it in C)."""
    deque(calls, maxlen=0)


def run_of(seqs: Sequence[int]) -> slice | None:
    """The slice of the column slots ``seqs`` are when they are consecutive and ascending (a
    bulk batch's new rows: ``first, first + 1, ...``), else None; for :func:`put_all`."""
    n = len(seqs)
    if n and seqs[-1] - seqs[0] == n - 1 and all(map(lt, seqs, islice(seqs, 1, None))):
        return slice(seqs[0], seqs[0] + n)
    return None


def put_all(
    column: list[Any] | array[Any], run: slice | None, seqs: Sequence[int], values: Iterable[Any]
) -> None:
    """``column[seq] = value`` for each seq of ``seqs`` and value of ``values`` in turn (as far
    as the shorter goes), as ``drain(map(column.__setitem__, seqs, values))``; ``run``:
    :func:`run_of` ``seqs``. A run is written by one slice assignment of as many slots as
    values (an array's from an array of its type) where a ``__setitem__`` call per slot was
    ~800 instructions through the slot wrapper (bulk ingest's dozen columns: ~8,000
    instructions a memory). An array that refuses a value (``OverflowError``, ``TypeError``)
    is left unchanged instead of holding the values before it."""
    if run is None or run.stop > len(column):  # (past the end: the IndexError of a slot)
        drain(map(column.__setitem__, seqs, values))
        return
    size = run.stop - run.start
    items: Sequence[Any]
    if isinstance(values, (list, tuple)) and len(values) <= size:
        items = values
    else:
        items = [*islice(values, size)]
    at = slice(run.start, run.start + len(items))
    if isinstance(column, array):
        column[at] = array(column.typecode, items)
    else:
        column[at] = items


def _kind_at(table: RecordTable, seq: int) -> Kind:
    """Row ``seq``'s kind: the shared one its code names, or its own."""
    code = table._codes[seq]
    return table._kinds[code] if code != _OWN_KIND else table._own_kinds[seq]


def _stamp_at(table: RecordTable, seq: int) -> float | datetime:
    """Row ``seq``'s ``created_at``: its POSIX seconds, or its datetime where they are NaN."""
    stamp = table._stamps[seq]
    return stamp if stamp == stamp else table._dates[seq]


def _extra_rank(item: tuple[str, Any]) -> int:
    return _EXTRA_RANK[item[0]]


def interned(strings: Iterable[str]) -> tuple[str, ...]:
    """``strings`` as interned ``str`` objects. Cues and terms are the same few words over and
    over, but text processing makes a new string object for each occurrence: one shared object
    each saves their every repeat (about 50 bytes) in rows, index entries and postings keys."""
    try:
        return tuple(map(sys.intern, strings))
    except TypeError:  # intern refuses str subclasses: str() makes them plain strings
        return tuple(map(sys.intern, map(str, strings)))


def insertion_numbers(size: int) -> tuple[array[int], int]:
    """Insertion numbers for the seqs below ``size`` of a table inserted into in ascending seq
    order until now (their order is their seqs'), and the next insertion number: a table starts
    keeping them only when a seq is inserted below the largest one (an update)."""
    return array("q", range(size)), size


def _stamp(when: datetime) -> float | datetime:
    """``when`` as POSIX seconds if converting them back gives exactly ``when`` (any date in
    centuries around now), else ``when`` itself."""
    if (
        type(when) is datetime
        and when.tzinfo is timezone.utc
        and not when.microsecond
        and not when.fold
        and _WHOLE_SECONDS_YEARS[0] <= when.year <= _WHOLE_SECONDS_YEARS[1]
    ):
        # a whole number of seconds well within 2**53 is an exact float, and converting it
        # back involves no rounding: the round trip below would say exact (bench memories and
        # most imported timestamps are whole seconds)
        return when.timestamp()
    try:
        seconds = when.timestamp()
        exact = datetime.fromtimestamp(seconds, timezone.utc) == when
    except (OverflowError, OSError, ValueError):  # out of the platform's range
        return when
    return seconds if exact and when.tzinfo is timezone.utc and not when.fold else when


_WHOLE_SECONDS_YEARS = (1900, 9000)  # where _stamp's shortcut applies (far from any limit)


def _packed(record: MemoryRecord, kind: Kind) -> tuple[Any, ...]:
    """The fields of :func:`pack`'s row of ``record``, whose kind is ``kind``."""
    values = record.__dict__  # every field, read without an attribute lookup each
    created, updated = values["created_at"], values["updated_at"]
    extra: list[Any] = [] if updated == created else ["updated_at", updated]
    if _EXTRA_OF(values) != _EXTRA_VALUES:  # most rows: all default (read in one C call)
        for name, default in _EXTRA_DEFAULTS:
            value = values[name]
            if value != default:
                extra += (name, value)
    metadata = _values(record.metadata) if kind[4] is not None else _flat(record.metadata)
    return (
        record.memory_id, record.content, interned(record.cues), kind,
        _stamp(created), metadata, tuple(extra),
    )  # fmt: skip


_KINDS_SHARED = 4096  # distinct kinds a table shares (past that, as when every source differs,
# sharing would save nothing: a row keeps its own)


def _kind(
    record: MemoryRecord, codes: dict[Kind, int], kinds: list[Kind], room: int
) -> tuple[Kind, int]:
    """The row's ``kind`` of ``record`` and its code: the equal one of ``kinds`` and its
    position there (added if there are fewer than ``room``; ``codes`` maps each to its
    position). A kind that is not shared (one holding a str subclass, equal to a plain
    string's, or past the table's room) has the code :data:`_OWN_KIND` and None for the
    metadata names: its row keeps them beside the values in a flat tuple, as a kind of its own
    holding them would cost more than it saves."""
    names = tuple(record.metadata)
    kind = (record.type, record.source, record.namespace, record.cue_origin, names)
    plain = type(record.namespace) is str and type(record.source) in _PLAIN
    if plain and {str}.issuperset(map(type, names)):  # every name an exact str, seen in C
        code = codes.get(kind)
        if code is None and len(kinds) < room:
            code = codes[kind] = len(kinds)
            kinds.append(kind)
        if code is not None:
            return kinds[code], code
    return (*kind[:4], None), _OWN_KIND


_OWN_KIND = 0xFFFF  # the kind code of a row whose kind is not shared (more than _KINDS_SHARED)
_PLAIN = (str, type(None))

PackedRow = tuple[Kind, int, str, str, tuple[str, ...], "float | datetime", Any, tuple[Any, ...]]


def _py_packed_row(
    record: MemoryRecord, codes: dict[Kind, int], kinds: list[Kind], room: int
) -> PackedRow:
    """``(kind, code, memory_id, content, cues, stamp, metadata, extra)`` of ``record``'s row:
    :func:`_kind` (``room``: the kinds a table shares) and :func:`_packed`. The reference of
    ``_textc.packed_row``."""
    kind, code = _kind(record, codes, kinds, room)
    memory_id, content, given, _, stamp, metadata, extra = _packed(record, kind)
    return kind, code, memory_id, content, given, stamp, metadata, extra


# What _textc.packed_row reads: the record's fields it needs (its kind's, then the row's, then
# those of _EXTRA_DEFAULTS), their defaults and the code of a kind of its own
_ROW_FIELDS = ("metadata", "type", "source", "namespace", "cue_origin", "memory_id", "content",
               "cues", "created_at", "updated_at", *_EXTRA_NAMES)  # fmt: skip
_LAYOUT = (_ROW_FIELDS, _EXTRA_VALUES, _OWN_KIND)

# :func:`_py_packed_row` in one C call when the text extension is there: it writes the row of
# a new memory whose optional fields are all their defaults (bulk ingest's) and calls _packed
# for the others; the kind, the interned cues, the stamp and the metadata values were a dozen
# Python calls, ~2 us a memory
_packed_row: Callable[[MemoryRecord, dict[Kind, int], list[Kind], int], PackedRow] = (
    _py_packed_row
    if _textc is None
    else partial(_textc.packed_row, _LAYOUT, _py_packed_row, _packed)
)


def _flat(metadata: dict[str, JSONValue]) -> tuple[Any, ...] | None:
    """``metadata`` as ``(name, value, name, value...)``; None when empty."""
    return tuple(chain.from_iterable(metadata.items())) if metadata else None


def _values(metadata: dict[str, JSONValue]) -> Any:
    """The :attr:`Row.metadata` of ``metadata``: its one value, or a tuple of its values (None
    when empty); its names are in the row's kind."""
    if len(metadata) == 1:
        return next(iter(metadata.values()))
    return tuple(metadata.values()) if metadata else None


_CODES_MAX = 0xFFFF  # cue codes a table gives out (2 bytes each); past them cues stay text


def _packed_cues(
    cues: tuple[str, ...], held: Container[str], codes: dict[str, int], names: list[str]
) -> tuple[str, ...] | bytes:
    """:func:`_python_packed_cues`, in C when the text extension is there (``pack_cues``: the
    codes, the text and the bytes of a row in one call, where the Python one makes a dozen
    calls and three bytes objects; ~10 % of a bulk ingest's record rows)."""
    if _PACK is not None:
        packed: tuple[str, ...] | bytes = _PACK(cues, held, codes, names, _CODES_MAX)
        return packed
    return _python_packed_cues(cues, held, codes, names)


_PACK = None if _textc is None else _textc.pack_cues


def _python_packed_cues(
    cues: tuple[str, ...], held: Container[str], codes: dict[str, int], names: list[str]
) -> tuple[str, ...] | bytes:
    """A row's ``cues``, packed: the count of its leading cues that have a code (one byte),
    their codes (2 bytes each, native order: ``names[code]`` is the cue), then the other cues
    as UTF-8 text joined by NUL. A cue gets a code when ``held`` (other memories' cues) holds
    it: the common words most cues are. A memory's own cues (a name, a made-up word), held
    by no other, would each cost a code's table entry (about 90 bytes, where their pointer
    costs 8) and stay text, usually last (bench scale: 1 of 20 cues a memory, its last).
    A cue tuple costs 40 + 8 bytes a cue; packed, a bench memory's 20 cues take ~80 bytes
    instead of ~200. Cues that cannot be text after a NUL (empty, holding a NUL, a lone
    surrogate) or a row of more than 255 coded cues stay the tuple."""
    if not cues:
        return cues  # the one empty tuple
    coded = list(map(codes.get, cues))  # one C-level pass: most rows' cues all but one
    if None in coded:
        coded = _coded_prefix(cues, coded, held, codes, names)
    rest = cues[len(coded) :]
    text = "\x00".join(rest)
    if len(coded) > 255 or not all(rest) or text.count("\x00") >= len(rest) > 0:
        return cues  # past a byte's count, or an empty cue or one holding a NUL
    try:
        return bytes((len(coded),)) + _CODES[len(coded)].pack(*coded) + text.encode()
    except UnicodeEncodeError:  # a lone surrogate
        return cues


def _coded_prefix(
    cues: tuple[str, ...],
    coded: list[int | None],
    held: Container[str],
    codes: dict[str, int],
    names: list[str],
) -> list[int | None]:
    """The codes of ``cues`` up to the first that has none and is not ``held`` (giving a code
    to each held one without): ``coded`` holds each cue's code, None for none (the loop
    starts at the first None: most rows' one own cue is their last)."""
    prefix = coded[: coded.index(None)]
    for cue in cues[len(prefix) :]:
        code = codes.get(cue)  # not coded's: a cue given twice may have a code by now
        if code is None:
            if len(names) >= _CODES_MAX or cue not in held:
                break
            code = codes[cue] = len(names)
            names.append(cue)
        prefix.append(code)
    return prefix


def _py_unpacked_cues(
    packed: bytes | bytearray, start: int, stop: int, names: list[str]
) -> tuple[str, ...]:
    """The cue tuple :func:`_packed_cues` packed into ``packed[start:stop]`` (about 0.6 us for
    20 cues: an itemgetter of the codes takes 0.6 of the time a map over a memoryview of them
    took). The reference of ``_textc.unpacked_cues``."""
    count = packed[start]
    codes = _CODES[count].unpack_from(packed, start + 1)
    coded: tuple[str, ...] = (
        itemgetter(*codes)(names) if count > 1 else tuple(map(names.__getitem__, codes))
    )
    end = start + 1 + 2 * count
    if end == stop:
        return coded
    return (*coded, *packed[end:stop].decode().split("\x00"))


# the compiled twin when built: a row of a bench memory (twenty cues, one of them text) read in
# 0.24 us where this took 1.13 (the tuples, itemgetter, bytes, str and list it makes), some ten
# rows a recall (its hits' records and explanations, its feedback memories' cues)
_unpacked_cues: Callable[[bytes | bytearray, int, int, list[str]], tuple[str, ...]] = (
    _py_unpacked_cues if _textc is None else _textc.unpacked_cues
)


class _CueColumn:
    """The cues of a table's rows by seq: packed (:func:`_packed_cues`) end to end in one
    ``bytearray``, each row's span found by its start (``array("q")``) and size
    (``array("H")``); a row whose cues do not pack (or pack past 65,535 bytes) keeps its
    tuple in a dict. A ``bytes`` object per row cost its 33-byte header and the allocator's
    rounding to 16 (bench scale 100k: 86 bytes a row, against ~48 of packed cues and 10 of
    span). A replaced or deleted row's bytes stay in place until they are half of all, then
    every live row is copied into a new buffer (:meth:`_compact`)."""

    __slots__ = ("_buffer", "_codes", "_dead", "_last", "_names", "_sizes", "_starts",
                 "_tuples", "_unpacked")  # fmt: skip

    UNPACKED = 256  # the cue tuples of the last rows read, kept unpacked
    COMPACT_AT = 1 << 16  # dead bytes before a compaction may be worth it

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._starts = array("q")
        self._sizes = array("H")  # 0: an empty tuple, or the one in _tuples
        self._tuples: dict[int, tuple[str, ...]] = {}
        self._dead = 0  # bytes of the buffer no row's span holds any more
        self._codes: dict[str, int] = {}  # a cue held by two memories or more -> its code
        self._names: list[str] = []  # by code: the cue
        # the cue tuples of the last UNPACKED rows read, oldest first (a recall reads its
        # hits' cues for their explanation, their records and the feedback pass), and the
        # last row stored with its cues as given (the store indexes it right away)
        self._unpacked: dict[int, tuple[str, ...]] = {}
        self._last: tuple[int, tuple[str, ...]] = (-1, ())

    def grow(self, more: int) -> None:
        """Room for ``more`` seqs past the current last."""
        self._starts.frombytes(bytes(8 * more))
        self._sizes.frombytes(bytes(2 * more))

    def put(self, seq: int, cues: tuple[str, ...], held: Container[str]) -> None:
        """Keep ``cues`` (interned) as row ``seq``'s, codes given to those ``held`` holds."""
        if self._sizes[seq] or self._tuples:  # not a new row's first cues (bulk ingest's)
            self.drop(seq)
        self._hold(seq, cues, _packed_cues(cues, held, self._codes, self._names))

    def _hold(self, seq: int, cues: tuple[str, ...], packed: tuple[str, ...] | bytes) -> None:
        """Keep row ``seq``'s ``cues`` as :func:`_packed_cues` packed them (a row without
        cues held: a new one, or one :meth:`drop` dropped)."""
        if type(packed) is bytes and len(packed) <= 0xFFFF:
            self._starts[seq], self._sizes[seq] = len(self._buffer), len(packed)
            self._buffer += packed
            self._last = (seq, cues)
        elif cues:
            self._tuples[seq] = cues

    def put_many(
        self,
        seqs: Sequence[int],
        cues_of: Sequence[tuple[str, ...]],
        held: Container[str],
        waiting: set[str] | None,
        waiting_of: Iterable[Iterable[str]],
    ) -> None:
        """:meth:`put` each row's cues in turn, where ``held`` holds ``waiting`` (a new
        namespace's cues waiting to be posted: the rows of a bulk batch) and each row's
        ``waiting_of`` cues join ``waiting`` once it is stored, for the next rows to code, as
        one :meth:`put` per memory between the index's own steps did. With no ``waiting``
        (the usual batch), new rows are packed in one list whose bytes join the buffer at once
        (:meth:`_append`); a namespace's first batch packs its new rows in a loop, each row's
        cues joining ``waiting`` once it is packed (a :meth:`put` call per row was ~1,200
        instructions a bench memory more), and any other batch takes :meth:`put` per row."""
        pack, codes, names, tuples = _PACK, self._codes, self._names, self._tuples
        if (
            pack is None
            or any(map(self._sizes.__getitem__, seqs))
            or (tuples and not tuples.keys().isdisjoint(seqs))
        ):
            self._put_each(zip(seqs, cues_of, waiting_of, strict=True), held, waiting)
            return
        if waiting is None:
            packed = [pack(cues, held, codes, names, _CODES_MAX) for cues in cues_of]
        else:
            packed, update = [], waiting.update
            for cues, more in zip(cues_of, waiting_of, strict=True):
                packed.append(pack(cues, held, codes, names, _CODES_MAX))
                update(more)
        if self._append(seqs, packed):
            self._last = (seqs[-1], cues_of[-1])
            return
        # some row not packed to bytes that fit a span: each kept as put keeps it
        drain(map(self._hold, seqs, cues_of, packed))

    def _put_each(
        self,
        rows: Iterable[tuple[int, tuple[str, ...], Iterable[str]]],
        held: Container[str],
        waiting: set[str] | None,
    ) -> None:
        """:meth:`put_many` a row (seq, cues, the cues to wait) at a time (rows not all new,
        or no C packing)."""
        for seq, cues, more in rows:
            self.put(seq, cues, held)
            if waiting is not None:
                waiting.update(more)

    def _append(self, seqs: Sequence[int], packed: list[tuple[str, ...] | bytes]) -> bool:
        """Append the ``packed`` cues of new rows ``seqs`` to the buffer, each row's span
        written in one C-level pass, if every row packed to bytes that fit a span (False,
        nothing written, otherwise)."""
        sizes = list(map(len, packed))
        if not seqs or not _BYTES.issuperset(map(type, packed)) or max(sizes) > 0xFFFF:
            return False
        run = run_of(seqs)
        put_all(self._starts, run, seqs, accumulate(sizes, initial=len(self._buffer)))
        put_all(self._sizes, run, seqs, sizes)
        self._buffer += b"".join(packed)  # type: ignore[arg-type]  # all bytes: checked
        return True

    def drop(self, seq: int) -> None:
        """Forget row ``seq``'s cues."""
        size = self._sizes[seq]
        if size:
            self._sizes[seq] = 0
            self._dead += size
            if self._dead > max(len(self._buffer) // 2, self.COMPACT_AT):
                self._compact()
        elif self._tuples:
            self._tuples.pop(seq, None)
        self._unpacked.pop(seq, None)
        if self._last[0] == seq:
            self._last = (-1, ())

    def get(self, seq: int) -> tuple[str, ...]:
        """Row ``seq``'s cue tuple (empty for a seq that has none)."""
        size = self._sizes[seq]
        if not size:
            return self._tuples.get(seq, ()) if self._tuples else ()
        last, given = self._last
        if last == seq:
            return given
        cues = self._unpacked.get(seq)
        if cues is None:
            start = self._starts[seq]
            cues = _unpacked_cues(self._buffer, start, start + size, self._names)
            self._keep(seq, cues)
        return cues

    def _keep(self, seq: int, cues: tuple[str, ...]) -> None:
        unpacked = self._unpacked
        if len(unpacked) >= self.UNPACKED:
            del unpacked[next(iter(unpacked))]
        unpacked[seq] = cues

    def _compact(self) -> None:
        """Copy every live row's span into a new buffer, in seq order."""
        buffer, old, starts, sizes = bytearray(), self._buffer, self._starts, self._sizes
        for seq, size in enumerate(sizes):
            if size:
                start = starts[seq]
                starts[seq] = len(buffer)
                buffer += old[start : start + size]
        self._buffer, self._dead = buffer, 0


# the packing of 0-255 codes (native byte order, 2 bytes each)
_CODES = tuple(Struct(f"={count}H") for count in range(256))


# a record's fields in declaration order, each at its default (those without one: None, as
# every record read sets them)
_RECORD_TEMPLATE = {f.name: _DEFAULTS.get(f.name) for f in fields(MemoryRecord)}


def _py_record_at(table: RecordTable, seq: int) -> MemoryRecord:
    """The record row ``seq`` of ``table`` was packed from (KeyError when no row is held): a
    copy of the template with the row's fields set, held by the record as its ``__dict__`` (a
    dict display of all eighteen fields from the row's fields tuple, then copied into the
    record: 27.2k -> 22.5k instructions a record read, callgrind of 2,000 reads at 300
    memories). The reference of ``_textc.record_of``."""
    memory_id, extra, _, _ = table.row(seq)
    kind = _kind_at(table, seq)
    stamp = _stamp_at(table, seq)
    created = stamp if isinstance(stamp, datetime) else datetime.fromtimestamp(stamp, timezone.utc)
    values = _RECORD_TEMPLATE.copy()
    values["memory_id"], values["content"] = memory_id, table._contents[seq]
    values["created_at"] = values["updated_at"] = created
    values["cues"] = table._cues.get(seq)
    values["type"], values["source"], values["namespace"], values["cue_origin"] = kind[:4]
    values["metadata"] = _metadata(kind[4], table._metadata[seq])
    if extra:
        values.update(zip(extra[::2], extra[1::2], strict=True))
    return MemoryRecord._unchecked(values)


def _metadata(names: tuple[str, ...] | None, metadata: Any) -> dict[str, Any]:
    """The metadata dict of a row whose kind has these metadata ``names`` and whose
    ``metadata`` is this (the values of those names, or a flat tuple of names and values when
    its kind is not shared: ``names`` None)."""
    if names is None:
        return {} if metadata is None else dict(zip(metadata[::2], metadata[1::2], strict=True))
    if len(names) == 1:
        return {names[0]: metadata}
    return dict(zip(names, metadata, strict=True)) if names else {}


# :func:`_py_record_at` in one C call when the text extension is there (22.5k -> 13.5k
# instructions a record read, callgrind as above; a recall at 10k memories reads ten)
_record_at: Callable[[RecordTable, int], MemoryRecord] = (
    _py_record_at
    if _textc is None
    else partial(
        _textc.record_of,
        (MemoryRecord, _RECORD_TEMPLATE, datetime.fromtimestamp, timezone.utc, _OWN_KIND),
    )
)


class RecordTable(MutableMapping[int, MemoryRecord]):
    """``seq -> MemoryRecord``, stored as packed rows, in insertion order like a dict.

    A row is not kept as a :class:`Row` tuple but as one slot in each of a few columns indexed
    by ``seq`` (:meth:`row` builds the tuple when asked): its id, content, packed cues
    (:func:`_packed_cues`) and metadata values (lists: 8 bytes each; the metadata an
    ``array("q")`` while each row's is one int), its kind's code (``array("H")``, 2 bytes),
    its ``created_at`` stamp (``array("d")``, 8 bytes; NaN when the stamp is a ``datetime``,
    kept in a dict), and its ``extra`` fields (a dict by seq, holding only the rows that have
    some). About 44 bytes a memory where a list slot, the Row tuple and its float stamp cost 136
    (bench scale's bytes at 100,000 memories: 992 -> ~900 per memory).

    Sequence numbers are the store's rowids, dense from 1, so the columns are indexed by
    ``seq`` (a hole has None for its id) rather than keyed in a dict. Insertion order, which a
    dict kept, is the ascending order of seqs unless an older seq was inserted again (a
    re-indexed memory goes last), and only then does iterating sort: from then on, by each
    seq's insertion number (8 bytes more, kept only from then on: :func:`insertion_numbers`).
    A deleted memory's slots stay (after reopening too: rowids stay).

    The last :data:`RECENT` records read are kept built: one recall reads its hits in each of
    its passes, then again for notes and access counts."""

    __slots__ = (
        "_codes", "_contents", "_count", "_cues", "_dates", "_extra", "_fallible", "_ids",
        "_inserted", "_kind_codes", "_kinds", "_metadata", "_order", "_own_kinds", "_recent",
        "_stamps", "_top",
    )  # fmt: skip

    RECENT = 1024

    def __init__(self) -> None:
        # the columns, by seq (see the class docstring)
        self._ids: list[str | None] = []  # None: no row
        self._contents: list[str | None] = []
        self._cues = _CueColumn()
        # an array while every row's metadata is one int (a store whose memories all carry,
        # say, a turn number): 8 bytes a row instead of a pointer to a 32-byte int object; the
        # first other value makes it a list, for good (_set_metadata)
        self._metadata: list[Any] | array[int] = array("q")
        self._codes = array("H")  # the position of the row's kind in _kinds, or _OWN_KIND
        self._stamps = array("d")  # created_at as POSIX seconds; NaN: a datetime in _dates
        self._dates: dict[int, datetime] = {}
        self._extra: dict[int, tuple[Any, ...]] = {}  # only the rows whose extra is not empty
        # the rows whose extra holds an expiry or a supersession: only they can fail the
        # default filters (see :meth:`fallible`)
        self._fallible: set[int] = set()
        self._own_kinds: dict[int, Kind] = {}  # the kind of a row whose code is _OWN_KIND
        self._order: array[int] | None = None  # by seq: its insertion number, once not ascending
        self._inserted = 0  # the next insertion number (while _order is kept)
        self._top = -1  # the largest seq ever inserted
        self._count = 0
        self._recent: dict[int, MemoryRecord] = {}  # oldest first
        self._kinds: list[Kind] = []  # the shared kinds, by code
        self._kind_codes: dict[Kind, int] = {}  # a shared kind -> its code

    def __getitem__(self, seq: int) -> MemoryRecord:
        record = self._recent.get(seq)
        if record is None:
            record = _record_at(self, seq)
            if len(self._recent) >= self.RECENT:
                del self._recent[next(iter(self._recent))]
            self._recent[seq] = record
        return record

    def __setitem__(self, seq: int, record: MemoryRecord) -> None:
        self.put(seq, record, ())

    def put(self, seq: int, record: MemoryRecord, held: Container[str]) -> tuple[str, ...]:
        """``self[seq] = record``, where ``held`` holds the cues other memories already have
        (the cue postings of its namespace): those of ``record``'s cues get a 2-byte code
        each in its row instead of an 8-byte pointer (see :func:`_packed_cues`).

        Returns:
            The record's cues as interned strings, for the index to share: read back from
            the row, its own cues would be new string objects."""
        kind, code, memory_id, content, given, stamp, metadata, extra = _packed_row(
            record, self._kind_codes, self._kinds, _KINDS_SHARED
        )
        ids = self._ids
        if not 0 <= seq < len(ids):
            self._grow(seq)
        if ids[seq] is None:  # a new key goes last, as in a dict
            if seq > self._top:
                self._top = seq
            elif self._order is None:  # iterating sorts from now on
                self._order, self._inserted = insertion_numbers(len(ids))
            if self._order is not None:
                self._order[seq] = self._inserted
                self._inserted += 1
            self._count += 1
        ids[seq], self._contents[seq] = memory_id, content
        self._cues.put(seq, given, held)
        self._set_metadata(seq, metadata)
        self._codes[seq] = code
        self._set_stamp(seq, stamp)
        self._set_held(self._own_kinds, seq, kind if code == _OWN_KIND else None)
        self._set_held(self._extra, seq, extra or None)
        self._mark_fallible(seq, extra)
        self._recent.pop(seq, None)
        return given  # the interned cue tuple

    def put_many(
        self,
        seqs: Sequence[int],
        records: Sequence[MemoryRecord],
        held: Container[str],
        waiting: set[str] | None = None,
        waiting_of: Iterable[Iterable[str]] | None = None,
    ) -> list[tuple[str, ...]]:
        """:meth:`put` each record at its seq, in turn: the rows of a bulk batch (``held``,
        ``waiting``, ``waiting_of``: see :meth:`_CueColumn.put_many`). New seqs above every
        seq held before, ascending (bulk ingest's), are written column by column: the columns
        grown once, each filled by one C-level pass where one :meth:`put` per memory made
        half a dozen calls; any other batch takes :meth:`put`'s path row by row.

        Returns:
            Each record's cues as interned strings (see :meth:`put`)."""
        waiting_of = repeat((), len(seqs)) if waiting_of is None else waiting_of
        if not seqs or seqs[0] <= self._top or not all(map(lt, seqs, seqs[1:])):
            each = []
            for seq, record, more in zip(seqs, records, waiting_of, strict=True):
                each.append(self.put(seq, record, held))
                if waiting is not None:
                    waiting.update(more)
            return each
        if seqs[-1] >= len(self._ids):
            self._grow(seqs[-1])
        packed = map(_packed_row, records, repeat(self._kind_codes), repeat(self._kinds),
                     repeat(_KINDS_SHARED, len(records)))  # fmt: skip
        kinds, codes, ids, contents, given, stamps, metadata, extra = zip(*packed, strict=True)
        run = run_of(seqs)
        put_all(self._ids, run, seqs, ids)
        put_all(self._contents, run, seqs, contents)
        put_all(self._codes, run, seqs, codes)
        self._put_metadata(seqs, metadata, run)
        if _FLOAT.issuperset(map(type, stamps)):  # every stamp a float (not a datetime)
            put_all(self._stamps, run, seqs, stamps)
        else:
            drain(map(self._set_stamp, seqs, stamps))
        if _OWN_KIND in codes:
            self._own_kinds.update(
                (seq, kind)
                for seq, kind, code in zip(seqs, kinds, codes, strict=True)
                if code == _OWN_KIND
            )
        if any(extra):
            self._extra.update((seq, held) for seq, held in zip(seqs, extra, strict=True) if held)
            drain(map(self._mark_fallible, seqs, extra))
        if self._order is not None:
            put_all(self._order, run, seqs, range(self._inserted, self._inserted + len(seqs)))
            self._inserted += len(seqs)
        self._top = seqs[-1]
        self._count += len(seqs)
        self._cues.put_many(seqs, given, held, waiting, waiting_of)
        return list(given)

    def _put_metadata(
        self, seqs: Sequence[int], metadata: Sequence[Any], run: slice | None = None
    ) -> None:
        """:meth:`_set_metadata` of each new row: in one pass while the column is an array
        and every value an int it holds (``run``: see :func:`put_all`)."""
        column = self._metadata
        if type(column) is array and _INT.issuperset(map(type, metadata)):
            try:
                put_all(column, run, seqs, metadata)
                return
            except OverflowError:  # past 64 bits: the rows again, as a list from that one
                pass
        drain(map(self._set_metadata, seqs, metadata))

    def _set_metadata(self, seq: int, metadata: Any) -> None:
        column = self._metadata
        if type(column) is array:
            if type(metadata) is int and _INT64[0] <= metadata <= _INT64[1]:
                column[seq] = metadata
                return
            # a list from now on: None where no row is, as a list column has
            column = self._metadata = [
                None if held is None else value
                for held, value in zip(self._ids, column, strict=True)
            ]
        column[seq] = metadata

    def _set_stamp(self, seq: int, stamp: float | datetime) -> None:
        if isinstance(stamp, datetime):
            self._stamps[seq] = _NAN
            self._dates[seq] = stamp
        else:
            self._stamps[seq] = stamp
            if self._dates:
                self._dates.pop(seq, None)

    def _mark_fallible(self, seq: int, extra: tuple[Any, ...]) -> None:
        """Keep :meth:`fallible` up to date for row ``seq`` given its new ``extra``."""
        if extra and not _FALLIBLE_NAMES.isdisjoint(extra[::2]):
            self._fallible.add(seq)
        elif self._fallible:
            self._fallible.discard(seq)

    def fallible(self) -> AbstractSet[int]:
        """The seqs of the rows that have an expiry or were superseded: the only ones the
        default filters can turn away (any other row is neither expired nor superseded at
        any time). A live view, for the length of one recall (read only)."""
        return self._fallible

    @staticmethod
    def _set_held(held: dict[int, Any], seq: int, value: Any) -> None:
        """Keep ``value`` for ``seq`` in the sparse column ``held`` (None: nothing kept)."""
        if value is not None:
            held[seq] = value
        elif held:
            held.pop(seq, None)

    def _grow(self, seq: int) -> None:
        """Room for ``seq`` and about an eighth more (not one slot per new memory: bulk ingest
        calls this for each)."""
        if seq < 0:
            raise KeyError(seq)
        more = max(seq + 1, len(self._ids) + len(self._ids) // 8 + 1024) - len(self._ids)
        self._cues.grow(more)
        for column in (self._ids, self._contents, self._metadata):
            if isinstance(column, list):
                column.extend(repeat(None, more))
            else:
                column.frombytes(bytes(column.itemsize * more))
        for array_column in (self._codes, self._stamps, self._order):
            if array_column is not None:
                array_column.frombytes(bytes(array_column.itemsize * more))

    def __delitem__(self, seq: int) -> None:
        self.row(seq)  # KeyError if absent
        self._ids[seq] = self._contents[seq] = None
        self._cues.drop(seq)
        if isinstance(self._metadata, list):  # an array's int keeps no object alive
            self._metadata[seq] = None
        for held in (self._dates, self._extra, self._own_kinds):
            held.pop(seq, None)
        self._fallible.discard(seq)
        self._count -= 1
        self._recent.pop(seq, None)

    def __contains__(self, seq: object) -> bool:
        try:
            self.row(seq)  # type: ignore[arg-type]  # any object may be asked
        except (KeyError, TypeError):
            return False
        return True

    def __iter__(self) -> Iterator[int]:
        ids = self._ids
        seqs = list(compress(range(len(ids)), map(is_not, ids, repeat(None))))
        if self._order is not None:
            seqs.sort(key=self._order.__getitem__)
        return iter(seqs)

    def __len__(self) -> int:
        return self._count

    def rows(self) -> Iterator[tuple[int, Row]]:
        """``(seq, row)`` of every memory, in insertion order."""
        return ((seq, self.row(seq)) for seq in self)

    def row(self, seq: int) -> Row:
        """The packed row of memory ``seq``: its fields, without building a record."""
        try:
            memory_id = self._ids[seq]
        except IndexError:
            raise KeyError(seq) from None
        if memory_id is None or seq < 0:
            raise KeyError(seq)
        # Row's own __new__ is a Python function: this is a hot path (see Row)
        return tuple.__new__(Row, (memory_id, self._extra.get(seq, ()), seq, self))

    def content_at(self, seq: int) -> str | None:
        """Memory ``seq``'s content, or None (no such row): the string object the row holds."""
        return self._contents[seq] if 0 <= seq < len(self._contents) else None

    def contents_at(self, seqs: Sequence[int]) -> list[str | None]:
        """:meth:`content_at` of each of ``seqs`` (in one C-level pass when all are in range)."""
        contents = self._contents
        if seqs and 0 <= min(seqs) and max(seqs) < len(contents):
            return list(map(contents.__getitem__, seqs))
        return list(map(self.content_at, seqs))

    def cues_at(self, seq: int) -> tuple[str, ...] | None:
        """Memory ``seq``'s cue tuple, or None (no such row)."""
        if not 0 <= seq < len(self._ids) or self._ids[seq] is None:
            return None
        return self._cues.get(seq)

    def stamp_at(self, seq: int) -> float | datetime:
        """Memory ``seq``'s :attr:`Row.stamp` (a row held at ``seq``), without building its row."""
        return _stamp_at(self, seq)

    def accessed(self, seq: int, count: int, when: datetime) -> None:
        """Give memory ``seq`` this access count and last access time (a flush of the counts
        recalls keep): only its row's ``extra`` is rewritten, to what packing the record with
        them writes (a count and a time are never their defaults, 0 and None), where building
        the record and packing it again cost ~7 us a memory, most of a flush."""
        extra = self._extra.get(seq)
        if extra is None:  # no extra field yet (a memory's first flush)
            self.row(seq)  # KeyError if there is no row
            self._extra[seq] = ("last_accessed", when, "access_count", count)
        elif extra[::2] == _ACCESS_NAMES:  # no other field (nearly every row)
            self._extra[seq] = ("last_accessed", when, "access_count", count)  # _EXTRA's order
        else:
            held: dict[str, Any] = dict(zip(extra[::2], extra[1::2], strict=True))
            held.update(access_count=count, last_accessed=when)
            pairs = sorted(held.items(), key=_extra_rank)
            self._extra[seq] = tuple(chain.from_iterable(pairs))
        # a record kept built is dropped, not given the new values: most flushed memories are
        # not read again before they leave the cache (a copy each cost more than it saved)
        self._recent.pop(seq, None)

    def access_count(self, seq: int) -> int:
        """Memory ``seq``'s :attr:`Row.access_count` (a row held at ``seq``), read from its
        extra fields without building its row (a recall asks it of each of its hits)."""
        extra = self._extra.get(seq)
        if extra is None:
            return 0
        if extra[::2] == _ACCESS_NAMES:  # a recalled memory with no other extra field
            return extra[3]  # type: ignore[no-any-return]  # an access count: an int
        names = extra[::2]
        return extra[2 * names.index("access_count") + 1] if "access_count" in names else 0

    def stamps(self, seqs: Iterable[int]) -> list[float | datetime]:
        """The :attr:`Row.stamp` (``created_at``) of each of ``seqs``, read in one C-level pass
        (no Python call per row) unless some stamp is a ``datetime``."""
        column, dates = self._stamps, self._dates
        if not dates:
            return list(map(column.__getitem__, seqs))
        return [column[seq] if column[seq] == column[seq] else dates[seq] for seq in seqs]

    def stamps_array(self, seqs: Any) -> Any | None:
        """:meth:`stamps` of a NumPy array of ``seqs``, as a float64 array (one gather over the
        stamps column, no float object per row); None when some stamp is a ``datetime``."""
        if self._dates:
            return None
        import numpy as np  # the array path's, which alone asks this: loaded already

        # a view of the column, not kept past this (an exported buffer cannot grow); a seq
        # outside it raises IndexError, as stamps' lookup does
        return np.frombuffer(self._stamps, dtype=np.float64)[seqs]


_NAN = float("nan")
# the one type of every stamp, metadata value or packed cues of a batch's plain rows
_FLOAT, _INT, _BYTES = frozenset((float,)), frozenset((int,)), frozenset((bytes,))
_INT64 = (-(2**63), 2**63 - 1)  # the ints array("q") holds
