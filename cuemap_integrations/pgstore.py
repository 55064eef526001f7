"""PostgreSQL persistence: one database shared by several app instances (extra ``[postgres]``).

The same interface as :class:`~cuemap_integrations.store.SQLiteStore` (see
:class:`~cuemap_integrations.store.Store`), plus a change log so every instance keeps its
in-memory index in step (:class:`~cuemap_integrations.store.SharedStore`):

* ``memories`` (one row per memory, ``seq`` a ``BIGSERIAL``), ``cues`` and ``tags`` (one row per
  cue or tag, in order, btree on ``(namespace, cue)`` / ``(namespace, tag)``: the only copy of a
  memory's cues, so they cannot disagree with another), ``links``, ``sessions`` (state as jsonb),
  ``changes`` (``seq BIGSERIAL, namespace, memory_id, op``), ``cuemap_schema`` (the version).
* Every write of a memory or link records it in ``changes`` in the same transaction, replacing
  that memory's previous entry: the log holds one entry per memory ever written, not per write
  (readers reload the memory's current row and links, so older entries would add nothing).
* **No gaps.** A ``BIGSERIAL`` hands out numbers at insert time but transactions may commit in
  another order, so a reader that saw seq 12 could miss 11 committing a moment later. Each
  transaction that writes the change log first takes a transaction-level advisory lock (one per
  schema), so change seqs are drawn and committed in lock order: once a reader sees seq ``n``,
  every smaller seq is committed or rolled back. Chosen over re-reading a window because it is
  exact, costs one lock per write transaction (writers serialize anyway on the index planning,
  see :meth:`PostgresStore.writer`), and readers stay lock-free.
* Schema creation and migrations run under another advisory lock, so two processes opening a new
  database at once both succeed.

Example (needs a running server)::

    >>> store = PostgresStore("postgresql://postgres@127.0.0.1:5432/test")  # doctest: +SKIP
    >>> store.schema_version  # doctest: +SKIP
    1
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from .errors import StoreError
from .records import JSONValue, MemoryRecord
from .store import Link, SQLiteStore

if TYPE_CHECKING:
    import psycopg

__all__ = ["MIGRATIONS", "PostgresStore", "safe_url"]

_MIGRATE_LOCK = 0x0C0E_0001  # advisory lock keys (first half of the two-int form)
_WRITE_LOCK = 0x0C0E_0002

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE memories (
            seq BIGSERIAL PRIMARY KEY,
            namespace TEXT NOT NULL,
            memory_id TEXT NOT NULL,
            content TEXT NOT NULL,
            type TEXT NOT NULL,
            source TEXT,
            created_at TIMESTAMPTZ NOT NULL,
            updated_at TIMESTAMPTZ NOT NULL,
            last_accessed TIMESTAMPTZ,
            access_count BIGINT NOT NULL DEFAULT 0,
            expires_at TIMESTAMPTZ,
            supersedes TEXT,
            superseded_by TEXT,
            superseded_at TIMESTAMPTZ,
            key TEXT,
            metadata JSONB NOT NULL,
            cue_origin TEXT NOT NULL,
            UNIQUE (namespace, memory_id)
        )""",
        "CREATE INDEX memories_by_key ON memories (namespace, key)",
        """CREATE TABLE cues (
            memory_seq BIGINT NOT NULL REFERENCES memories (seq) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            namespace TEXT NOT NULL,
            cue TEXT NOT NULL,
            PRIMARY KEY (memory_seq, position)
        )""",
        "CREATE INDEX cues_by_cue ON cues (namespace, cue)",
        """CREATE TABLE tags (
            memory_seq BIGINT NOT NULL REFERENCES memories (seq) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            namespace TEXT NOT NULL,
            tag TEXT NOT NULL,
            PRIMARY KEY (memory_seq, position)
        )""",
        "CREATE INDEX tags_by_tag ON tags (namespace, tag)",
        """CREATE TABLE links (
            id BIGSERIAL UNIQUE,
            namespace TEXT NOT NULL,
            from_id TEXT NOT NULL,
            to_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            created_at TIMESTAMPTZ NOT NULL,
            PRIMARY KEY (namespace, from_id, to_id, kind)
        )""",
        "CREATE INDEX links_by_target ON links (namespace, to_id)",
        """CREATE TABLE sessions (
            namespace TEXT NOT NULL,
            session_id TEXT NOT NULL,
            state JSONB NOT NULL,
            updated_at TIMESTAMPTZ NOT NULL,
            PRIMARY KEY (namespace, session_id)
        )""",
        """CREATE TABLE changes (
            seq BIGSERIAL PRIMARY KEY,
            namespace TEXT NOT NULL,
            memory_id TEXT NOT NULL,
            op TEXT NOT NULL,
            at TIMESTAMPTZ NOT NULL DEFAULT now()
        )""",
        "CREATE INDEX changes_by_memory ON changes (namespace, memory_id)",
    ),
)

_COLUMNS = (
    "namespace", "memory_id", "content", "type", "source", "created_at", "updated_at",
    "last_accessed", "access_count", "expires_at", "supersedes", "superseded_by",
    "superseded_at", "key", "metadata", "cue_origin",
)  # fmt: skip
_INSERT = (
    f"INSERT INTO memories ({', '.join(_COLUMNS)}) "
    f"VALUES ({', '.join(['%s'] * len(_COLUMNS))}) RETURNING seq"
)
_UPDATE = f"UPDATE memories SET {', '.join(c + ' = %s' for c in _COLUMNS)} WHERE seq = %s"
_SELECT = "SELECT seq, " + ", ".join(
    "metadata::text" if c == "metadata" else c for c in _COLUMNS
)  # jsonb as text: decoded below with sorted keys, exactly like the SQLite store


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise ImportError(
            "a postgresql:// store needs psycopg: pip install 'cuemap-integrations[postgres]'"
        ) from None
    return psycopg


def safe_url(url: str) -> str:
    """``url`` with any password masked: the path is shown by ``stats()`` and the CLI."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def _sorted_json(text: str) -> Any:
    """Decode JSON with every object's keys sorted (jsonb has its own key order)."""
    return json.loads(text, object_pairs_hook=lambda pairs: dict(sorted(pairs)))


def _row(record: MemoryRecord) -> tuple[Any, ...]:
    from psycopg.types.json import Jsonb

    return (
        record.namespace, record.memory_id, record.content, record.type.value, record.source,
        record.created_at, record.updated_at, record.last_accessed, record.access_count,
        record.expires_at, record.supersedes, record.superseded_by, record.superseded_at,
        record.key, Jsonb(record.metadata), record.cue_origin,
    )  # fmt: skip


class PostgresStore:
    """Memories, links, sessions and a change log in one PostgreSQL schema.

    Args:
        url: ``postgresql://user[:password]@host[:port]/database[?options]`` (libpq form;
            ``?options=-csearch_path%3Dname`` selects a schema other than ``public``).
        connect_timeout: seconds to wait for the server.

    Raises:
        StoreError: the server is unreachable, refuses the login, or has a newer schema.
        ImportError: psycopg is not installed (extra ``[postgres]``).
    """

    backend = "postgresql"

    def __init__(self, url: str, *, connect_timeout: int = 10) -> None:
        self._errors: tuple[type[BaseException], ...] = (_psycopg().Error, UnicodeError)
        self.path = safe_url(url)
        self._connect_args = (url, connect_timeout)  # kept to reconnect; never shown
        self._lock = threading.RLock()
        self._depth = 0
        self._tx_locked = False  # this transaction holds the change-log lock
        self._writing = False  # this connection holds the writer lock
        self._closed = False
        try:
            self._conn = self._connect()
            row = self._conn.execute("SELECT hashtext(coalesce(current_schema(), ''))").fetchone()
            self._schema_key = int(row[0]) if row else 0
            self._migrate()
        except self._errors as exc:
            raise StoreError(f"cannot open PostgreSQL store {self.path!r}: {exc}") from None

    def _connect(self) -> psycopg.Connection[Any]:
        url, timeout = self._connect_args
        conn: psycopg.Connection[Any] = _psycopg().connect(
            url, autocommit=True, connect_timeout=timeout
        )
        conn.execute("SET TIME ZONE 'UTC'")
        return conn

    def _revive(self) -> bool:
        """Reconnect if the server dropped the connection (a restart, a failover, an idle
        timeout) while no transaction or writer lock was open on it; the server has rolled back
        whatever a broken transaction did. Returns whether a new connection is in place."""
        if self._closed or self._depth or self._writing or not self._conn.broken:
            return False
        try:
            self._conn = self._connect()
        except self._errors:
            return False
        return True

    # ----------------------------------------------------------------- schema
    def _migrate(self) -> None:
        with self._conn.transaction():
            # two processes opening a new database at once: the second waits, then finds it made
            self._conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", self._key(_MIGRATE_LOCK))
            self._conn.execute("CREATE TABLE IF NOT EXISTS cuemap_schema (version INTEGER)")
            row = self._conn.execute("SELECT version FROM cuemap_schema").fetchone()
            if row is None:
                self._conn.execute("INSERT INTO cuemap_schema (version) VALUES (0)")
            version = 0 if row is None else int(row[0])
            if version > len(MIGRATIONS):
                raise StoreError(
                    f"{self.path!r} has schema version {version}; this release reads up to "
                    f"{len(MIGRATIONS)}: upgrade cuemap-integrations"
                )
            for number in range(version, len(MIGRATIONS)):
                for statement in MIGRATIONS[number]:
                    self._conn.execute(statement)
                self._conn.execute("UPDATE cuemap_schema SET version = %s", (number + 1,))

    def _key(self, kind: int) -> tuple[int, int]:
        """An advisory lock id for this schema (two stores in two schemas never contend)."""
        return kind, self._schema_key

    @property
    def schema_version(self) -> int:
        """The number of migrations applied to this database."""
        return int(self._one("SELECT version FROM cuemap_schema"))

    # ----------------------------------------------------------------- transactions
    @contextmanager
    def atomic(self) -> Iterator[None]:
        """A transaction; nested calls become savepoints. Rolls back on any exception."""
        with self._lock:
            self._revive()
            self._depth += 1
            try:
                with self._conn.transaction():
                    yield
            except self._errors as exc:  # the commit itself failed
                raise StoreError(f"PostgreSQL store {self.path!r}: {exc}") from None
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._tx_locked = False

    @contextmanager
    def writer(self) -> Iterator[None]:
        """Exclusive write access across every instance (a session-level advisory lock), so an
        instance can bring its index up to date, plan a write against it and commit it before
        anyone else writes. Reentrant."""
        with self._lock:
            if self._writing:
                yield
                return
            self._run("SELECT pg_advisory_lock(%s, %s)", self._key(_WRITE_LOCK))
            self._writing = True
            try:
                yield
            finally:
                self._writing = False
                try:
                    self._conn.execute("SELECT pg_advisory_unlock(%s, %s)", self._key(_WRITE_LOCK))
                except self._errors:
                    pass  # a broken connection has released its locks already

    def _run(self, sql: str, params: Sequence[Any] = ()) -> psycopg.Cursor[Any]:
        try:
            return self._conn.execute(sql, params)
        except self._errors as exc:
            if self._revive():  # outside a transaction: a statement on its own, safe to retry
                return self._run(sql, params)
            raise StoreError(f"PostgreSQL store {self.path!r}: {exc}") from None

    def _many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            try:
                self._conn.cursor().executemany(sql, rows)
            except self._errors as exc:
                raise StoreError(f"PostgreSQL store {self.path!r}: {exc}") from None

    def _one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        with self._lock:
            row = self._run(sql, params).fetchone()
        return None if row is None else row[0]

    def _log(self, entries: Sequence[tuple[str, str, str]]) -> None:
        """Record ``(namespace, memory_id, op)`` in the change log, in the caller's transaction.

        A memory keeps only its latest entry: a reader applies an entry by reloading the memory's
        current row and links, so an older entry adds nothing, and the log stays as long as the
        number of memories ever written instead of growing with every write."""
        if not self._tx_locked:  # seqs drawn and committed in lock order: readers see no gaps
            self._run("SELECT pg_advisory_xact_lock(%s, %s)", self._key(_WRITE_LOCK))
            self._tx_locked = True
        latest = {(ns, mid): op for ns, mid, op in entries}
        entries = [(ns, mid, op) for (ns, mid), op in latest.items()]
        self._many(
            "DELETE FROM changes WHERE namespace = %s AND memory_id = %s",
            [(namespace, memory_id) for namespace, memory_id, _ in entries],
        )
        self._many("INSERT INTO changes (namespace, memory_id, op) VALUES (%s, %s, %s)", entries)

    # ----------------------------------------------------------------- memories
    def _fetch(self, where: str = "", params: Sequence[Any] = ()) -> list[tuple[int, MemoryRecord]]:
        with self._lock:
            rows = self._run(f"{_SELECT} FROM memories {where} ORDER BY seq", params).fetchall()
            seqs = [int(r[0]) for r in rows]
            cues = self._lists("SELECT memory_seq, cue FROM cues", seqs)
            tags = self._lists("SELECT memory_seq, tag FROM tags", seqs)
        out = []
        for row in rows:
            values = dict(zip(_COLUMNS, row[1:], strict=True))
            values["metadata"] = _sorted_json(values["metadata"])
            seq = int(row[0])
            out.append(
                (seq, MemoryRecord(**values, cues=cues.get(seq, ()), tags=tags.get(seq, ())))
            )
        return out

    def _lists(self, select: str, seqs: list[int]) -> dict[int, tuple[str, ...]]:
        found: dict[int, list[str]] = {}
        sql = f"{select} WHERE memory_seq = ANY(%s) ORDER BY memory_seq, position"
        for seq, value in self._run(sql, (seqs,)).fetchall():
            found.setdefault(int(seq), []).append(str(value))
        return {seq: tuple(values) for seq, values in found.items()}

    def load(self) -> Iterator[tuple[int, MemoryRecord]]:
        """Every stored memory as ``(seq, record)``, in insertion order."""
        yield from self._fetch()

    def load_memories(self, keys: Sequence[tuple[str, str]]) -> list[tuple[int, MemoryRecord]]:
        """The stored rows of these ``(namespace, memory_id)`` (missing ones are left out)."""
        spaces, ids = [k[0] for k in keys], [k[1] for k in keys]
        return self._fetch(
            "WHERE (namespace, memory_id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))",
            (spaces, ids),
        )

    def _put_keys(self, seq: int, record: MemoryRecord) -> None:
        self._many(
            "INSERT INTO cues (memory_seq, position, namespace, cue) VALUES (%s, %s, %s, %s)",
            [(seq, i, record.namespace, cue) for i, cue in enumerate(record.cues)],
        )
        self._many(
            "INSERT INTO tags (memory_seq, position, namespace, tag) VALUES (%s, %s, %s, %s)",
            [(seq, i, record.namespace, tag) for i, tag in enumerate(record.tags)],
        )

    def insert_many(self, records: Sequence[MemoryRecord]) -> list[int]:
        """Insert ``records`` in one transaction; return their sequence numbers."""
        seqs: list[int] = []
        with self.atomic():
            for record in records:
                seq = int(self._run(_INSERT, _row(record)).fetchone()[0])  # type: ignore[index]
                self._put_keys(seq, record)
                seqs.append(seq)
            self._log([(r.namespace, r.memory_id, "put") for r in records])
        return seqs

    def replace(self, seq: int, record: MemoryRecord) -> None:
        """Overwrite the row ``seq`` with ``record``."""
        with self.atomic():
            self._run(_UPDATE, (*_row(record), seq))
            self._run("DELETE FROM cues WHERE memory_seq = %s", (seq,))
            self._run("DELETE FROM tags WHERE memory_seq = %s", (seq,))
            self._put_keys(seq, record)
            self._log([(record.namespace, record.memory_id, "put")])

    def delete(self, seqs: Sequence[int]) -> None:
        """Delete the rows ``seqs`` (their cues and tags go with them)."""
        with self.atomic():
            gone = self._run(
                "DELETE FROM memories WHERE seq = ANY(%s) RETURNING namespace, memory_id",
                (list(seqs),),
            ).fetchall()
            self._log([(str(ns), str(mid), "delete") for ns, mid in gone])

    def write_access(self, updates: Sequence[tuple[int, int, datetime]]) -> None:
        """Record ``(seq, access_count, last_accessed)`` updates from recalls (statistics: not
        in the change log)."""
        with self.atomic():
            self._many(
                "UPDATE memories SET access_count = %s, last_accessed = %s WHERE seq = %s",
                [(count, when, seq) for seq, count, when in updates],
            )

    # ----------------------------------------------------------------- links
    def load_links(self) -> list[Link]:
        """Every link as ``(namespace, from_id, to_id, kind)``, oldest first."""
        with self._lock:
            rows = self._run("SELECT namespace, from_id, to_id, kind FROM links ORDER BY id")
            return [(str(a), str(b), str(c), str(d)) for a, b, c, d in rows.fetchall()]

    def load_links_of(self, keys: Sequence[tuple[str, str]]) -> list[Link]:
        """The links from or to these ``(namespace, memory_id)``, oldest first."""
        with self._lock:
            rows = self._run(
                "SELECT namespace, from_id, to_id, kind FROM links WHERE (namespace, from_id) IN "
                "(SELECT * FROM unnest(%s::text[], %s::text[])) OR (namespace, to_id) IN "
                "(SELECT * FROM unnest(%s::text[], %s::text[])) ORDER BY id",
                ([k[0] for k in keys], [k[1] for k in keys]) * 2,
            )
            return [(str(a), str(b), str(c), str(d)) for a, b, c, d in rows.fetchall()]

    def insert_links(self, links: Sequence[Link], when: datetime) -> None:
        """Record ``(namespace, from_id, to_id, kind)`` links (existing ones are kept)."""
        with self.atomic():
            self._many(
                "INSERT INTO links (namespace, from_id, to_id, kind, created_at) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                [(*link, when) for link in links],
            )
            self._log([(namespace, from_id, "link") for namespace, from_id, _, _ in links])

    def delete_links(self, namespace: str, memory_id: str) -> None:
        """Remove every link from or to a memory."""
        with self.atomic():
            self._run(
                "DELETE FROM links WHERE namespace = %s AND (from_id = %s OR to_id = %s)",
                (namespace, memory_id, memory_id),
            )
            self._log([(namespace, memory_id, "link")])

    # ----------------------------------------------------------------- change log
    def last_change(self) -> int:
        """The highest committed change seq (0 for none)."""
        return int(self._one("SELECT coalesce(max(seq), 0) FROM changes"))

    def changes_since(self, seq: int) -> list[tuple[int, str, str, str]]:
        """``(seq, namespace, memory_id, op)`` of every change after ``seq``, in order."""
        with self._lock:
            rows = self._run(
                "SELECT seq, namespace, memory_id, op FROM changes WHERE seq > %s ORDER BY seq",
                (seq,),
            ).fetchall()
        return [(int(s), str(ns), str(mid), str(op)) for s, ns, mid, op in rows]

    # ----------------------------------------------------------------- sessions
    def delete_namespace_sessions(self, namespace: str) -> int:
        """Forget every recall session of a namespace; return how many there were."""
        with self.atomic():
            cursor = self._run("DELETE FROM sessions WHERE namespace = %s", (namespace,))
        return int(cursor.rowcount)

    def get_session(self, namespace: str, session_id: str) -> dict[str, JSONValue] | None:
        """The stored state of a recall session, or None."""
        state = self._one(
            "SELECT state::text FROM sessions WHERE namespace = %s AND session_id = %s",
            (namespace, session_id),
        )
        return None if state is None else dict(json.loads(state))

    def put_session(
        self, namespace: str, session_id: str, state: dict[str, JSONValue], when: datetime
    ) -> None:
        """Store the state of a recall session (insert or replace)."""
        from psycopg.types.json import Jsonb

        with self.atomic():
            self._run(
                "INSERT INTO sessions (namespace, session_id, state, updated_at) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (namespace, session_id) "
                "DO UPDATE SET state = EXCLUDED.state, updated_at = EXCLUDED.updated_at",
                (namespace, session_id, Jsonb(state), when),
            )

    def delete_session(self, namespace: str, session_id: str) -> None:
        """Forget a recall session's state."""
        with self.atomic():
            self._run(
                "DELETE FROM sessions WHERE namespace = %s AND session_id = %s",
                (namespace, session_id),
            )

    def count_sessions(self) -> int:
        """How many recall sessions are stored."""
        return int(self._one("SELECT count(*) FROM sessions"))

    # ----------------------------------------------------------------- maintenance
    def backup(self, target: str | os.PathLike[str]) -> None:
        """Copy memories, links and sessions, as of one snapshot, into the SQLite file
        ``target`` (created owner-only, replaced if present): a portable, offline copy."""
        path = Path(target)
        partial = path.with_name(path.name + ".partial")
        partial.unlink(missing_ok=True)
        with self._lock, self._conn.transaction():
            self._run("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            records = [record for _, record in self._fetch()]
            links = self._run("SELECT namespace, from_id, to_id, kind, created_at FROM links "
                              "ORDER BY id").fetchall()  # fmt: skip
            sessions = self._run(
                "SELECT namespace, session_id, state::text, updated_at FROM sessions "
                "ORDER BY namespace, session_id"
            ).fetchall()
        with SQLiteStore(partial) as copy, copy.atomic():
            copy.insert_many(records)
            for namespace, from_id, to_id, kind, when in links:
                copy.insert_links([(namespace, from_id, to_id, kind)], when)
            for namespace, session_id, state, when in sessions:
                copy.put_session(namespace, session_id, json.loads(state), when)
        os.replace(partial, path)

    def integrity_errors(self) -> list[str]:
        """Rows written around the change log (other instances would never see them) and cue or
        tag rows filed under another namespace than their memory; empty means sound."""
        with self._lock:
            unlogged = self._run(
                "SELECT m.namespace, m.memory_id FROM memories m WHERE NOT EXISTS (SELECT 1 FROM "
                "changes c WHERE c.namespace = m.namespace AND c.memory_id = m.memory_id) "
                "ORDER BY m.seq LIMIT 5"
            ).fetchall()
            misfiled = self._one(
                "SELECT (SELECT count(*) FROM cues c JOIN memories m ON m.seq = c.memory_seq "
                "WHERE c.namespace <> m.namespace) + (SELECT count(*) FROM tags t JOIN memories "
                "m ON m.seq = t.memory_seq WHERE t.namespace <> m.namespace)"
            )
        problems = [f"memory {ns}/{mid} is not in the change log" for ns, mid in unlogged]
        if misfiled:
            problems.append(f"{misfiled} cue or tag rows are filed under another namespace")
        return problems

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            self._closed = True
            self._conn.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
