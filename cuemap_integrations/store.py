"""SQLite persistence: the embedded default store.

Boring on purpose: one connection guarded by one lock (one writer per process; writers of other
processes queue on SQLite's write lock, taken up-front with ``BEGIN IMMEDIATE``, for up to
``BUSY_TIMEOUT_S``), WAL journal with ``synchronous=FULL`` so a memory acknowledged by ``add``
survives a crash of the process (and of the machine) right after it returns, ordered migrations recorded in ``PRAGMA user_version``,
parameterised SQL only, JSON for structured columns, never pickle.

Example:
    >>> with SQLiteStore(":memory:") as store:
    ...     store.schema_version == len(MIGRATIONS)
    True
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from functools import cache
from json.encoder import encode_basestring
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .errors import StoreError
from .records import JSONValue, MemoryRecord
from .text import _C as _textc

__all__ = ["MIGRATIONS", "SQLiteStore", "SessionStore", "SharedStore", "Store", "open_store"]

Link = tuple[str, str, str, str]  # (namespace, from_id, to_id, kind)


class SessionStore(Protocol):
    """Where recall sessions keep their state: the memory store itself, or Redis."""

    def get_session(self, namespace: str, session_id: str) -> dict[str, JSONValue] | None: ...

    def put_session(
        self, namespace: str, session_id: str, state: dict[str, JSONValue], when: datetime
    ) -> None: ...

    def delete_session(self, namespace: str, session_id: str) -> None: ...

    def delete_namespace_sessions(self, namespace: str) -> int: ...

    def count_sessions(self) -> int: ...

    def close(self) -> None: ...


class Store(SessionStore, Protocol):
    """What ``CueMap`` needs from persistence; :class:`SQLiteStore` and
    :class:`~cuemap_integrations.pgstore.PostgresStore` implement it.

    Rows are addressed by ``seq``, a number the store assigns in insertion order and never reuses.
    """

    path: str
    backend: str  # "sqlite" or "postgresql": names the store in ``check()`` findings

    @property
    def schema_version(self) -> int: ...

    def atomic(self) -> AbstractContextManager[None]: ...

    def load(self) -> Iterator[tuple[int, MemoryRecord]]: ...

    def insert_many(self, records: Sequence[MemoryRecord]) -> list[int]: ...

    def replace(self, seq: int, record: MemoryRecord) -> None: ...

    def delete(self, seqs: Sequence[int]) -> None: ...

    def write_access(self, updates: Sequence[tuple[int, int, datetime]]) -> None: ...

    def load_links(self) -> list[Link]: ...

    def insert_links(self, links: Sequence[Link], when: datetime) -> None: ...

    def delete_links(self, namespace: str, memory_id: str) -> None: ...

    def backup(self, target: str | os.PathLike[str]) -> None: ...

    def integrity_errors(self) -> list[str]: ...


@runtime_checkable
class SharedStore(Store, Protocol):
    """A store several processes write at once; each keeps its index in step by reading the
    change log (every memory or link write appends ``(seq, namespace, memory_id, op)`` in the
    same transaction, and change seqs become visible in increasing order)."""

    def last_change(self) -> int: ...

    def changes_since(self, seq: int) -> list[tuple[int, str, str, str]]: ...

    def load_memories(self, keys: Sequence[tuple[str, str]]) -> list[tuple[int, MemoryRecord]]: ...

    def load_links_of(self, keys: Sequence[tuple[str, str]]) -> list[Link]: ...

    def writer(self) -> AbstractContextManager[None]: ...


def open_store(location: str | os.PathLike[str], *, durable: bool = True) -> Store:
    """The store for ``location``: a PostgreSQL URL (``postgresql://...``, extra
    ``[postgres]``), ``":memory:"`` or a SQLite file path."""
    if isinstance(location, str) and location.startswith(("postgresql://", "postgres://")):
        from .pgstore import PostgresStore  # psycopg is optional: imported only for a URL

        return PostgresStore(location)
    return SQLiteStore(location, durable=durable)


# Each entry upgrades the schema from version i to i+1. Append, never edit a released entry.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE memories (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            namespace TEXT NOT NULL,
            memory_id TEXT NOT NULL,
            content TEXT NOT NULL,
            cues TEXT NOT NULL,
            tags TEXT NOT NULL,
            type TEXT NOT NULL,
            source TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            last_accessed TEXT,
            access_count INTEGER NOT NULL DEFAULT 0,
            expires_at TEXT,
            supersedes TEXT,
            superseded_by TEXT,
            metadata TEXT NOT NULL,
            cue_origin TEXT NOT NULL,
            UNIQUE (namespace, memory_id)
        )""",
        """CREATE TABLE sessions (
            namespace TEXT NOT NULL,
            session_id TEXT NOT NULL,
            state TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (namespace, session_id)
        )""",
    ),
    (
        "ALTER TABLE memories ADD COLUMN superseded_at TEXT",
        "ALTER TABLE memories ADD COLUMN key TEXT",
        "CREATE INDEX memories_by_key ON memories (namespace, key)",
        """CREATE TABLE links (
            namespace TEXT NOT NULL,
            from_id TEXT NOT NULL,
            to_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (namespace, from_id, to_id, kind)
        )""",
    ),
)

# How long a writer waits for another connection's write lock (SQLite's busy handler sleeps and
# retries) before the write fails with a StoreError. Every write transaction starts with BEGIN
# IMMEDIATE, so it waits here instead of failing at once when a read would have to be upgraded.
BUSY_TIMEOUT_S = 10.0

_COLUMNS = (
    "namespace", "memory_id", "content", "cues", "tags", "type", "source", "created_at",
    "updated_at", "last_accessed", "access_count", "expires_at", "supersedes", "superseded_by",
    "metadata", "cue_origin", "superseded_at", "key",
)  # fmt: skip
# Columns that hold NULL or a non-empty text (timestamps, memory ids): a row passes "" for
# NULL, which the statements turn back into NULL. Python's sqlite3 binds a str, an int or a
# float as it is, but puts None through its adapter protocol (a registry lookup and two failed
# attribute lookups), about 0.6 us a None: a new memory has six such NULLs, ~15 % of the
# statement's time (bulk ingest into ":memory:", 10,000 bench rows).
_EMPTY_IS_NULL = frozenset(
    ("last_accessed", "expires_at", "supersedes", "superseded_by", "superseded_at", "key")
)


def _parameter(column: str) -> str:
    """The placeholder of ``column``'s value in a statement (see :data:`_EMPTY_IS_NULL`)."""
    return "NULLIF(?, '')" if column in _EMPTY_IS_NULL else "?"


_VALUES = f"({', '.join(map(_parameter, _COLUMNS))})"  # one row's
_INSERT = f"INSERT INTO memories ({', '.join(_COLUMNS)}) VALUES {_VALUES}"
# Rows a multi-row INSERT holds: 18 parameters each at most, within SQLite's oldest limit of
# 999 a statement (SQLITE_MAX_VARIABLE_NUMBER before 3.32); groups of 30 to 200 rows measured
# alike.
_ROWS_PER_INSERT = 55
# The column sets whose values a multi-row INSERT binds once when every row of it holds the
# same (a batch's namespace, type and source, a new memory's NULLs and access count, a batch
# without tags or metadata, one clock reading): binding a parameter (SQLite copies each text)
# cost about as much as SQLite's insert itself; a bench batch binds 5 values a row instead of
# 18 (into ":memory:", 3.35 -> 2.3 us a row). A fixed menu of sets, not a shape per column, so
# a store prepares at most 2 ** 5 of these statements (a new one of 55 rows: ~1.1 ms).
_SHARED_SETS = (
    ("namespace", "type", "source", "last_accessed", "access_count", "expires_at",
     "supersedes", "superseded_by", "cue_origin", "superseded_at", "key"),
    ("tags",), ("metadata",), ("created_at", "updated_at"),
)  # fmt: skip
_SHARED_AT = tuple(tuple(map(_COLUMNS.index, columns)) for columns in _SHARED_SETS)
# a row's updated_at that is its created_at (a new memory's) is bound once for both
_TWIN_AT = (_COLUMNS.index("updated_at"), _COLUMNS.index("created_at"))
_UPDATE = (
    f"UPDATE memories SET {', '.join(f'{c} = {_parameter(c)}' for c in _COLUMNS)} WHERE seq = ?"
)
_SELECT = f"SELECT seq, {', '.join(_COLUMNS)} FROM memories"


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


# json.dumps with options builds a new JSONEncoder on every call: a row needs three encodings, so
# the encoders are made once (same output: a tuple encodes as the list of its items).
_TO_JSON = json.JSONEncoder(ensure_ascii=False).encode
_TO_SORTED_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode


def _json_strings(items: tuple[str, ...]) -> str:
    """``_TO_JSON(items)`` for a tuple of strings (cues, tags): each string is encoded by the
    function the encoder itself uses, and joined with its separator, without the encoder's
    per-call set-up (which cost more than the encoding)."""
    if not items:
        return "[]"
    joined = '", "'.join(items)
    if _plain_json(joined, len(items)):
        return '["' + joined + '"]'
    return "[" + ", ".join(map(encode_basestring, items)) + "]"


def _plain_json(joined: str, count: int) -> bool:
    """Whether ``count`` strings joined by ``'", "'`` into ``joined`` are each their own JSON
    text between quotes: printable ASCII holding no quote (beyond the separators') and no
    backslash, the only characters the encoder escapes there. Most cues: one join and three
    C-level scans instead of an encoder call per cue (~0.5 us of a 20-cue row's 1.4)."""
    return (
        joined.isascii()
        and joined.isprintable()
        and "\\" not in joined
        and joined.count('"') == 2 * count - 2
    )


# What the encoder writes for the scalars metadata usually holds (ids, counters, names, flags),
# by exact type: subclasses (an IntEnum, a str subclass) and floats take the encoder's path.
_SCALAR_JSON: dict[type, Callable[[Any], str]] = {
    str: encode_basestring,
    int: int.__repr__,
    bool: lambda value: "true" if value else "false",
    type(None): lambda _: "null",
}


def _metadata_json(metadata: dict[str, JSONValue]) -> str:
    """``_TO_SORTED_JSON(metadata)``: a flat dict of strings, ints, bools and None (most
    metadata; ``{}`` most of all) is written item by item with the encoder's own string
    function, without its per-call set-up, which cost more than the encoding itself."""
    if not metadata:
        return "{}"
    parts: list[str] = []
    for key, value in sorted(metadata.items()):  # as sort_keys orders them (unique str keys)
        encode = _SCALAR_JSON.get(type(value))
        if encode is None:  # a nested or float value: the encoder's own path
            return _TO_SORTED_JSON(metadata)
        parts.append(f"{encode_basestring(key)}: {encode(value)}")
    return "{" + ", ".join(parts) + "}"


def _iso_or_empty(value: datetime | None) -> str:
    """``value`` in ISO 8601, "" for None (a NULL of :data:`_EMPTY_IS_NULL`)."""
    return "" if value is None else value.isoformat()


def record_to_row(record: MemoryRecord) -> tuple[Any, ...]:
    """The parameters of ``record``'s row, in ``_COLUMNS`` order: "" for the NULL of a column
    of :data:`_EMPTY_IS_NULL` (memory ids are never empty: ``or ""`` maps only None)."""
    created = record.created_at.isoformat()
    # usually the same datetime object (a new memory is updated when created)
    updated = created if record.updated_at is record.created_at else _iso(record.updated_at)
    return (
        record.namespace, record.memory_id, record.content,
        _json_strings(record.cues), _json_strings(record.tags),
        record.type._value_, record.source, created, updated,  # .value without its descriptor
        _iso_or_empty(record.last_accessed), record.access_count,
        _iso_or_empty(record.expires_at), record.supersedes or "", record.superseded_by or "",
        _metadata_json(record.metadata), record.cue_origin,
        _iso_or_empty(record.superseded_at), record.key or "",
    )  # fmt: skip


def _py_record_rows(records: Sequence[MemoryRecord]) -> list[tuple[Any, ...]]:
    """The rows of ``records`` (:func:`record_to_row` of each): the reference of
    ``_textc.record_rows``, which is used when the text extension is there."""
    return [record_to_row(record) for record in records]


def _c_record_rows(records: Sequence[MemoryRecord]) -> list[tuple[Any, ...]]:
    """:func:`_py_record_rows` in one C call for a batch (``_textc.record_rows``): the row's
    JSON, timestamps and NULL markers were ~5 us a memory of Python calls, ~4 % of bulk ingest.
    It writes the plain cases itself and calls the Python functions passed for the rest."""
    return _textc.record_rows(  # type: ignore[no-any-return]
        records, _COLUMNS, record_to_row, _json_strings, _metadata_json
    )


record_rows: Callable[[Sequence[MemoryRecord]], list[tuple[Any, ...]]] = (
    _py_record_rows if _textc is None else _c_record_rows
)


def _same_param(a: object, b: object) -> bool:
    """Whether ``a`` and ``b`` bind as the same SQLite value: the same object, or equal exact
    str or int (others only as the same object: ``0.0 == -0.0`` and ``1 == 1.0 == True``)."""
    return a is b or (type(a) is type(b) and type(a) in (str, int) and a == b)


def _py_insert_groups(
    rows: list[tuple[Any, ...]],
    size: int,
    sets: tuple[tuple[int, ...], ...],
    twin: tuple[int, int],
) -> list[tuple[int, list[Any]]]:
    """The ``(shape, parameters)`` of each full group of ``size`` rows, in order: bit ``i``
    of the shape when every column of ``sets[i]`` holds one value in all the group's rows,
    bit ``len(sets)`` when column ``twin[0]`` equals column ``twin[1]`` in every row (neither
    shared); the parameters are the shared values, then each row's own, in column order.
    The reference of ``_textc.insert_groups``, which is used when the text extension is
    there; :func:`_group_insert` writes the statement of a shape."""
    copy, of = twin
    groups: list[tuple[int, list[Any]]] = []
    for start in range(0, len(rows) - len(rows) % size, size):
        group = rows[start : start + size]
        first = group[0]
        flags = [all(_same_param(row[c], first[c]) for c in columns for row in group)
                 for columns in sets]  # fmt: skip
        shared = {c for flag, columns in zip(flags, sets, strict=True) if flag for c in columns}
        twinned = not {copy, of} & shared and all(_same_param(row[copy], row[of]) for row in group)
        own = [c for c in range(len(first)) if c not in shared and not (twinned and c == copy)]
        params = [first[c] for c in sorted(shared)]
        for row in group:
            params.extend([row[c] for c in own])
        shape = sum(1 << i for i, flag in enumerate(flags) if flag) | twinned << len(sets)
        groups.append((shape, params))
    return groups


def _c_insert_groups(
    rows: list[tuple[Any, ...]],
    size: int,
    sets: tuple[tuple[int, ...], ...],
    twin: tuple[int, int],
) -> list[tuple[int, list[Any]]]:
    """:func:`_py_insert_groups` in one C call (``_textc.insert_groups``)."""
    return _textc.insert_groups(rows, size, sets, twin)  # type: ignore[no-any-return]


insert_groups = _py_insert_groups if _textc is None else _c_insert_groups


@cache  # at most 2 ** (len(_SHARED_SETS) + 1) shapes
def _group_insert(shape: int) -> str:
    """The multi-row INSERT of :data:`_ROWS_PER_INSERT` rows of ``shape`` (see
    :func:`_py_insert_groups`): numbered parameters, a shared value's number in every row."""
    shared = {
        _COLUMNS[c] for i, columns in enumerate(_SHARED_AT) if shape >> i & 1 for c in columns
    }
    twinned = shape >> len(_SHARED_AT) & 1
    copy, of = (_COLUMNS[c] for c in _TWIN_AT)
    numbers = {column: n for n, column in enumerate(sorted(shared, key=_COLUMNS.index), 1)}
    count = len(numbers)
    values = []
    for _ in range(_ROWS_PER_INSERT):
        row = dict(numbers)
        for column in _COLUMNS:
            if column in row:
                continue
            if twinned and column == copy:
                row[column] = row[of]
            else:
                count += 1
                row[column] = count
        values.append(", ".join(_numbered(column, row[column]) for column in _COLUMNS))
    return f"INSERT INTO memories ({', '.join(_COLUMNS)}) VALUES ({'), ('.join(values)})"


def _numbered(column: str, number: int) -> str:
    """The placeholder of ``column``'s value as parameter ``number`` (see :func:`_parameter`)."""
    return f"NULLIF(?{number}, '')" if column in _EMPTY_IS_NULL else f"?{number}"


def row_to_record(row: Sequence[Any]) -> tuple[int, MemoryRecord]:
    """``(seq, record)`` from a ``_SELECT`` row; validates like any other input."""
    values = dict(zip(_COLUMNS, row[1:], strict=True))
    for key in ("cues", "tags", "metadata"):
        values[key] = json.loads(values[key])
    return int(row[0]), MemoryRecord(**values)


class _Renumbered(Exception):
    """A bulk insert's rows did not get the consecutive seqs expected (rolled back)."""


def _create_private_file(path: Path) -> None:
    """Create ``path`` readable by its owner only: memories are personal data."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))


class SQLiteStore:
    """Memories, sessions and schema version in one SQLite file (or ``":memory:"``).

    Args:
        path: a file path, or ``":memory:"`` for a private in-process database.
        durable: ``True`` (default) fsyncs every commit (``synchronous=FULL``); ``False`` uses
            ``NORMAL``, which survives a process crash but may lose the last commits on power loss.

    Raises:
        StoreError: the file cannot be opened, is not a database, or has a newer schema.
    """

    backend = "sqlite"

    def __init__(self, path: str | os.PathLike[str] = ":memory:", *, durable: bool = True) -> None:
        self.path = str(path)
        self._lock = threading.RLock()
        self._depth = 0
        try:
            if self.path != ":memory:":
                _create_private_file(Path(self.path))
            self._conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            self._open(durable)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite store {self.path!r}: {exc}") from None

    def _open(self, durable: bool) -> None:
        """Configure and migrate, retrying while another process holds the file's lock.

        Switching a new file to WAL and WAL recovery can answer "database is locked" at once,
        without SQLite's busy handler (seen with five processes opening one new file together),
        so opening retries for up to :data:`BUSY_TIMEOUT_S` like a write would wait.
        """
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            try:
                self._configure(durable)
                self._migrate()
                return
            except sqlite3.OperationalError as exc:
                busy = "locked" in str(exc) or "busy" in str(exc)
                if not busy or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def _configure(self, durable: bool) -> None:
        if self.path != ":memory:":
            self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
        self._conn.execute("PRAGMA foreign_keys=ON")

    def _migrate(self) -> None:
        self._check_version(self.schema_version)
        if self.schema_version == len(MIGRATIONS):
            return
        # Several processes may open a new file at once: read the version again under the write
        # lock, or the second one would run the migrations a second time.
        with self.atomic():
            version = self.schema_version
            self._check_version(version)
            for number in range(version, len(MIGRATIONS)):
                for statement in MIGRATIONS[number]:
                    self._conn.execute(statement)
                self._conn.execute(f"PRAGMA user_version={number + 1}")

    def _check_version(self, version: int) -> None:
        if version > len(MIGRATIONS):
            raise StoreError(
                f"{self.path!r} has schema version {version}; this release reads up to "
                f"{len(MIGRATIONS)}: upgrade cuemap-integrations"
            )

    @property
    def schema_version(self) -> int:
        """The number of migrations applied to this database."""
        return int(self._conn.execute("PRAGMA user_version").fetchone()[0])

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """A transaction; nested calls become savepoints. Rolls back on any exception."""
        with self._lock:
            name = f"sp{self._depth}"
            begin, commit, rollback = (
                ("BEGIN IMMEDIATE", "COMMIT", "ROLLBACK")
                if self._depth == 0
                else (f"SAVEPOINT {name}", f"RELEASE {name}", f"ROLLBACK TO {name}; RELEASE {name}")
            )
            self._run(begin)
            self._depth += 1
            try:
                yield
            except BaseException:
                self._depth -= 1
                for statement in rollback.split("; "):
                    self._conn.execute(statement)
                raise
            self._depth -= 1
            self._run(commit)

    def _run(self, sql: str, params: Sequence[Any] = (), *, many: bool = False) -> sqlite3.Cursor:
        """Execute ``sql`` once, or with ``many`` once per row of ``params``."""
        try:
            if many:
                return self._conn.executemany(sql, params)
            return self._conn.execute(sql, params)
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite store {self.path!r}: {exc}") from None

    def load(self) -> Iterator[tuple[int, MemoryRecord]]:
        """Every stored memory as ``(seq, record)``, in insertion order."""
        with self._lock:
            rows = self._run(_SELECT + " ORDER BY seq").fetchall()
        for row in rows:
            yield row_to_record(row)

    def insert_many(self, records: Sequence[MemoryRecord]) -> list[int]:
        """Insert ``records`` in one transaction; return their sequence numbers.

        The rows go in :data:`_ROWS_PER_INSERT` at a time (:meth:`_insert_rows`; a
        Python-level ``execute`` per row cost about as much as SQLite's own work).
        AUTOINCREMENT numbers each row one above the largest seq the table ever had, so under
        the write lock the batch's seqs are the ones right after ``sqlite_sequence``; if
        anything is off (an error, other numbers), the batch is rolled back and inserted row
        by row, which names the failing memory as before."""
        if not records:
            return []
        rows = record_rows(records)
        try:
            with self.atomic():
                first = self._next_seq()
                self._insert_rows(rows)
                last = int(self._conn.execute("SELECT last_insert_rowid()").fetchone()[0])
                if last != first + len(rows) - 1:
                    raise _Renumbered
                return list(range(first, last + 1))
        except (sqlite3.Error, _Renumbered):
            return self._insert_each(records)

    def _insert_rows(self, rows: list[tuple[Any, ...]]) -> None:
        """Insert ``rows`` in their order: each full group of :data:`_ROWS_PER_INSERT` by one
        multi-row ``INSERT`` (its values in one flat parameter list, a value the whole group
        shares in one parameter: :func:`insert_groups`), the rest by ``executemany``. One
        statement step per group instead of one per row: ~1.5 us less a row of a bulk ingest
        (6.2 -> 4.8 us a row, 10,000 bench rows into ``:memory:``), the rows and their rowids
        the same (a multi-row ``VALUES`` is inserted in its order)."""
        for shape, params in insert_groups(rows, _ROWS_PER_INSERT, _SHARED_AT, _TWIN_AT):
            self._conn.execute(_group_insert(shape), params)
        whole = len(rows) - len(rows) % _ROWS_PER_INSERT
        if whole < len(rows):
            self._conn.executemany(_INSERT, rows[whole:])

    def _next_seq(self) -> int:
        """The seq AUTOINCREMENT gives the next row (read under the write lock)."""
        row = self._conn.execute(
            "SELECT seq FROM sqlite_sequence WHERE name = 'memories'"
        ).fetchone()
        return 1 if row is None else int(row[0]) + 1

    def _insert_each(self, records: Sequence[MemoryRecord]) -> list[int]:
        seqs: list[int] = []
        with self.atomic():
            for record in records:
                try:
                    cursor = self._conn.execute(_INSERT, record_to_row(record))
                except sqlite3.IntegrityError:  # the in-memory index said the id was free
                    raise StoreError(
                        f"memory {record.memory_id!r} in namespace {record.namespace!r} was "
                        f"stored in {self.path!r} by another process: reopen the store"
                    ) from None
                except sqlite3.Error as exc:
                    raise StoreError(f"SQLite store {self.path!r}: {exc}") from None
                seqs.append(int(cursor.lastrowid or 0))
        return seqs

    def replace(self, seq: int, record: MemoryRecord) -> None:
        """Overwrite the row ``seq`` with ``record``.

        Raises:
            StoreError: the row is gone (another process deleted it; reopen to see its writes).
        """
        with self.atomic():
            if self._run(_UPDATE, (*record_to_row(record), seq)).rowcount != 1:
                raise StoreError(
                    f"memory {record.memory_id!r} in namespace {record.namespace!r} is no longer "
                    f"in {self.path!r}: another process deleted it; reopen the store"
                )

    def delete(self, seqs: Sequence[int]) -> None:
        """Delete the rows ``seqs``."""
        with self.atomic():
            for seq in seqs:
                self._run("DELETE FROM memories WHERE seq = ?", (seq,))

    def write_access(self, updates: Sequence[tuple[int, int, datetime]]) -> None:
        """Record ``(seq, access_count, last_accessed)`` updates from recalls.

        One ``executemany`` (a statement per row cost most of a flush), and each distinct time
        written as text once: a recall's hits share it."""
        texts = {when: _iso(when) for when in {when for _, _, when in updates}}
        rows = [(count, texts[when], seq) for seq, count, when in updates]
        with self.atomic():
            self._run(
                "UPDATE memories SET access_count = ?, last_accessed = ? WHERE seq = ?",
                rows, many=True,
            )  # fmt: skip

    def load_links(self) -> list[tuple[str, str, str, str]]:
        """Every link as ``(namespace, from_id, to_id, kind)``, oldest first."""
        with self._lock:
            rows = self._run(
                "SELECT namespace, from_id, to_id, kind FROM links ORDER BY rowid"
            ).fetchall()
        return [(str(a), str(b), str(c), str(d)) for a, b, c, d in rows]

    def insert_links(self, links: Sequence[tuple[str, str, str, str]], when: datetime) -> None:
        """Record ``(namespace, from_id, to_id, kind)`` links (existing ones are kept)."""
        with self.atomic():
            for namespace, from_id, to_id, kind in links:
                self._run(
                    "INSERT OR IGNORE INTO links (namespace, from_id, to_id, kind, created_at) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (namespace, from_id, to_id, kind, _iso(when)),
                )

    def delete_links(self, namespace: str, memory_id: str) -> None:
        """Remove every link from or to a memory."""
        with self.atomic():
            self._run(
                "DELETE FROM links WHERE namespace = ? AND (from_id = ? OR to_id = ?)",
                (namespace, memory_id, memory_id),
            )

    def delete_namespace_sessions(self, namespace: str) -> int:
        """Forget every recall session of a namespace; return how many there were."""
        with self.atomic():
            cursor = self._run("DELETE FROM sessions WHERE namespace = ?", (namespace,))
        return int(cursor.rowcount)

    def get_session(self, namespace: str, session_id: str) -> dict[str, JSONValue] | None:
        """The stored state of a recall session, or None."""
        with self._lock:
            row = self._run(
                "SELECT state FROM sessions WHERE namespace = ? AND session_id = ?",
                (namespace, session_id),
            ).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def put_session(
        self, namespace: str, session_id: str, state: dict[str, JSONValue], when: datetime
    ) -> None:
        """Store the state of a recall session (insert or replace)."""
        with self.atomic():
            self._run(
                "INSERT OR REPLACE INTO sessions (namespace, session_id, state, updated_at) "
                "VALUES (?, ?, ?, ?)",
                (namespace, session_id, json.dumps(state, ensure_ascii=False), _iso(when)),
            )

    def delete_session(self, namespace: str, session_id: str) -> None:
        """Forget a recall session's state."""
        with self.atomic():
            self._run(
                "DELETE FROM sessions WHERE namespace = ? AND session_id = ?",
                (namespace, session_id),
            )

    def count_sessions(self) -> int:
        """How many recall sessions are stored."""
        with self._lock:
            return int(self._run("SELECT COUNT(*) FROM sessions").fetchone()[0])

    def backup(self, target: str | os.PathLike[str]) -> None:
        """Copy the database into ``target`` (created owner-only; replaced if present) with
        SQLite's online backup API: a consistent snapshot, even of a ``":memory:"`` store."""
        path = Path(target)
        _create_private_file(path)
        destination = sqlite3.connect(path)
        try:
            with self._lock:
                self._conn.backup(destination)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot back up {self.path!r} to {str(path)!r}: {exc}") from None
        finally:
            destination.close()

    def integrity_errors(self) -> list[str]:
        """SQLite's own integrity check; an empty list means the file is sound."""
        with self._lock:
            rows = self._run("PRAGMA integrity_check").fetchall()
        return [] if rows == [("ok",)] else [str(r[0]) for r in rows]

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
