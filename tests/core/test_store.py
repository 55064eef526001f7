"""The SQLite store: migrations, WAL, durability, reopen gives identical rankings."""

from __future__ import annotations

import os
import signal
import sqlite3
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cuemap_integrations import CueMap, MemoryRecord, StoreError
from cuemap_integrations import store as store_module
from cuemap_integrations.store import _TO_JSON, MIGRATIONS, SQLiteStore, _json_strings

from ..conftest import ORDER_TIMEOUT_EN, ORDER_TIMEOUT_ZH, T0, FakeClock, load


def test_new_file_is_owner_only_wal_and_versioned(tmp_path: Path) -> None:
    db = tmp_path / "sub" / "m.db"
    with SQLiteStore(db) as store:
        assert store.schema_version == len(MIGRATIONS)
        mode = store._conn.execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    assert stat.S_IMODE(db.stat().st_mode) == 0o600


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    SQLiteStore(db).close()
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version={len(MIGRATIONS) + 1}")
    conn.close()
    with pytest.raises(StoreError, match="schema version"):
        CueMap(db)


def test_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    bad = tmp_path / "junk.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError):
        CueMap(bad)


def test_atomic_rolls_back_nested_savepoints(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "m.db") as store:
        with store.atomic():
            store._conn.execute("CREATE TABLE t (x)")
            with pytest.raises(RuntimeError), store.atomic():
                store._conn.execute("INSERT INTO t VALUES (1)")
                raise RuntimeError("inner fails")
            store._conn.execute("INSERT INTO t VALUES (2)")
        assert store._conn.execute("SELECT x FROM t").fetchall() == [(2,)]


def test_sql_looking_text_is_stored_verbatim(location: str | Path) -> None:
    text = "Robert'); DROP TABLE memories;-- \" OR 1=1"
    with CueMap(location) as cm:
        cm.add(text, memory_id="x'; --", cues=["'; drop table"])
    with CueMap(location) as cm:
        assert cm.get("x'; --").content == text
        assert len(cm) == 1


def test_reopen_keeps_records_sessions_and_access(location: str | Path) -> None:
    db = location
    clock = FakeClock()
    with CueMap(db, clock=clock) as cm:
        load(cm, ORDER_TIMEOUT_EN)
        cm.recall("port 8001")
        before = [r.to_dict() for r in cm.memories()]
    with CueMap(db, clock=clock) as cm:
        assert [r.to_dict() for r in cm.memories()] == before
        assert cm.get("port").access_count == 1


QUERIES = ["port", "订单超时", "cache fix", "schema backup", "how do I like answers", "curl"]
texts = st.text(
    alphabet=st.sampled_from(list("abc xyz 订单超时缓存修复 8001-_./")), min_size=1, max_size=40
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(extra=st.lists(texts.filter(lambda s: s.strip()), max_size=8), deletes=st.integers(0, 3))
def test_close_and_reopen_gives_identical_rankings(
    location: str | Path, tmp_path: Path, extra: list[str], deletes: int
) -> None:
    pg = isinstance(location, str)  # one schema for every example: emptied after each
    db = location if pg else tmp_path / f"p{abs(hash((tuple(extra), deletes)))}.db"
    clock = FakeClock(T0)
    with CueMap(db, clock=clock, config={"track_access": False}) as cm:
        load(cm, ORDER_TIMEOUT_EN + ORDER_TIMEOUT_ZH)
        for text in extra:
            cm.add(text, tags=text.split()[:2])
        for record in cm.memories()[:deletes]:
            cm.delete(record.memory_id)
        before = [[(h.memory_id, h.score) for h in cm.recall(q, k=10)] for q in QUERIES + extra]
    with CueMap(db, clock=clock, config={"track_access": False}) as cm:
        after = [[(h.memory_id, h.score) for h in cm.recall(q, k=10)] for q in QUERIES + extra]
        for namespace in cm.namespaces() if pg else ():
            cm.forget(namespace=namespace, everything=True)
    assert after == before
    if not pg:
        Path(db).unlink()


def test_acknowledged_add_survives_sigkill(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    child = textwrap.dedent(
        f"""
        import os, sys
        from cuemap_integrations import CueMap
        cm = CueMap({str(db)!r})
        for i in range(200):
            cm.add(f"memory number {{i}} about topic {{i % 7}}", memory_id=f"m{{i}}")
            print(i, flush=True)
        sys.stdin.readline()  # wait to be killed, never closing the store
        """
    )
    acknowledged = -1
    with subprocess.Popen(
        [sys.executable, "-c", child], stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            acknowledged = int(line)
            if acknowledged == 120:
                os.kill(proc.pid, signal.SIGKILL)
                break
        proc.wait()
    assert acknowledged == 120
    with CueMap(db) as cm:
        assert all(f"m{i}" in cm for i in range(acknowledged + 1))
        assert cm._store.integrity_errors() == []
        assert cm.recall("memory number 120 topic").memory_ids[0] == "m120"


@pytest.mark.parametrize("source", ["memory", "location"])
def test_backup_copies_a_store_owner_only(tmp_path: Path, location: str | Path, source) -> None:
    clock = FakeClock()
    with CueMap(":memory:" if source == "memory" else location, clock=clock) as cm:
        load(cm, ORDER_TIMEOUT_EN)
        cm.session("s").recall("port 8001")
        before = [(h.memory_id, h.score) for h in cm.recall("order timeout fix", k=5)]
        cm.backup(tmp_path / "copy" / "m.db")
    target = tmp_path / "copy" / "m.db"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    with CueMap(target, clock=clock) as copy:
        assert copy.get("port").access_count == 1 and copy.session("s").turn == 1
        assert [(h.memory_id, h.score) for h in copy.recall("order timeout fix", k=5)][
            :1
        ] == before[:1]


def test_check_finds_nothing_on_a_sound_store_and_reports_damage(location: str | Path) -> None:
    with CueMap(location) as cm:
        load(cm, ORDER_TIMEOUT_EN)
        cm.add("The orders API uses POST", type="fact", memory_id="a")
        cm.add("The orders API uses GET", type="fact", memory_id="b", supersedes="a")
        cm.add_many(
            [
                {"content": f"turn {i}", "type": "event", "metadata": {"session_id": "s"}}
                for i in range(4)
            ]
        )
        assert cm.check() == []
        cm._store._conn.execute("DELETE FROM memories WHERE memory_id = 'port'")  # behind its back
        cm._store._conn.execute(
            "INSERT INTO links (namespace, from_id, to_id, kind, created_at) "
            "VALUES ('default', 'b', 'ghost', 'conflict', '2026-01-01T00:00:00+00:00')"
        )
        problems = cm.check()
    assert any("not stored" in p and "port" in p for p in problems)
    assert any("ghost" in p for p in problems)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=12), max_size=6))
def test_cue_and_tag_columns_are_the_json_encoders_text(items: list[str]) -> None:
    assert _json_strings(tuple(items)) == _TO_JSON(tuple(items))


_JSON_ASCII = st.text(st.sampled_from('ab 9"\\\x00\n\x1f\x7f~é'), max_size=6)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(_JSON_ASCII, st.sampled_from(["port", "api", '"', '", "'])), max_size=6))
def test_plain_ascii_cue_columns_are_the_json_encoders_text(items: list[str]) -> None:
    """The one-join shortcut for printable ASCII gives the encoder's text, and falls back for a
    quote, a backslash, a control character or anything not ASCII."""
    assert _json_strings(tuple(items)) == _TO_JSON(tuple(items))


def test_a_batch_renumbered_behind_its_back_is_inserted_row_by_row(tmp_path: Path) -> None:
    """If a batch's rows did not get the seqs after sqlite_sequence, it is redone row by row."""
    with CueMap(tmp_path / "s.db") as cm:
        cm.add_many([{"content": f"memory {i}", "memory_id": f"m{i}"} for i in range(3)])
        conn = cm._store._conn  # type: ignore[attr-defined]
        conn.execute("UPDATE sqlite_sequence SET seq = 1 WHERE name = 'memories'")
        added = cm.add_many([{"content": f"later {i}", "memory_id": f"l{i}"} for i in range(2)])
        assert [r.memory_id for r in added] == ["l0", "l1"]
        assert [h.memory_id for h in cm.recall("later 1", k=1)] == ["l1"]
        assert cm.check() == []
        seqs = conn.execute("SELECT seq, memory_id FROM memories ORDER BY seq").fetchall()
        assert seqs == [(1, "m0"), (2, "m1"), (3, "m2"), (4, "l0"), (5, "l1")]


def test_a_duplicate_row_in_a_batch_names_its_memory(tmp_path: Path) -> None:
    with CueMap(tmp_path / "s.db") as cm:
        cm.add("first", memory_id="a")
        conn = cm._store._conn  # type: ignore[attr-defined]
        conn.execute(  # another process stored "b" behind this instance's back
            "INSERT INTO memories (namespace, memory_id, content, cues, tags, type, created_at,"
            " updated_at, metadata, cue_origin) VALUES ('default', 'b', 'x', '[]', '[]', 'note',"
            " '2024-01-01T00:00:00+00:00', '2024-01-01T00:00:00+00:00', '{}', 'given')"
        )
        with pytest.raises(StoreError, match="memory 'b' in namespace 'default' was stored"):
            cm.add_many([{"content": "c", "memory_id": "c"}, {"content": "b", "memory_id": "b"}])
        assert conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0] == 2


def _no_fallback(records: object) -> list[int]:
    raise AssertionError("the batch was redone row by row")


def _stored_rows(store: SQLiteStore) -> list[tuple[object, ...]]:
    return store._conn.execute("SELECT * FROM memories ORDER BY seq").fetchall()


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 3), st.integers(0, 2 * store_module._ROWS_PER_INSERT + 3))
def test_grouped_inserts_store_the_rows_and_seqs_of_row_by_row_ones(before: int, size: int) -> None:
    """insert_many's multi-row INSERTs (full groups, then the rest row by row) give each record
    the row and the seq that one INSERT per record gives."""
    made = [MemoryRecord(memory_id=f"m{i}", content=f"memory {i}", created_at=T0,
                         updated_at=T0, cues=(f"c{i}",), metadata={"i": i}) for i in range(size)]  # fmt: skip
    first = [MemoryRecord(memory_id=f"f{i}", content="x", created_at=T0, updated_at=T0)
             for i in range(before)]  # fmt: skip
    with SQLiteStore() as grouped, SQLiteStore() as single:
        grouped._insert_each = _no_fallback  # type: ignore[method-assign]  # the grouped path
        grouped.insert_many(first)
        single._insert_each(first)
        assert grouped.insert_many(made) == single._insert_each(made)
        assert _stored_rows(grouped) == _stored_rows(single)


_MAYBE_ID = st.one_of(st.none(), st.sampled_from(["m1", "other-id", "k"]))
_MAYBE_TIME = st.one_of(st.none(), st.sampled_from([T0, T0.replace(microsecond=5)]))


@settings(max_examples=100, deadline=None)
@given(_MAYBE_ID, _MAYBE_ID, _MAYBE_ID, _MAYBE_TIME, _MAYBE_TIME, _MAYBE_TIME, st.integers(1, 60))
def test_rows_hold_null_where_a_record_has_none(
    supersedes: str | None,
    superseded_by: str | None,
    key: str | None,
    last_accessed: object,
    expires_at: object,
    superseded_at: object,
    count: int,
) -> None:
    """The statements bind "" for a missing id or timestamp (no None through sqlite3's
    adapters) and store NULL for it: the rows hold what binding None held, whether inserted
    in groups, one by one or replaced, and read back as the records."""
    record = MemoryRecord(
        memory_id="m0", content="the db is down", created_at=T0, updated_at=T0,
        supersedes=supersedes, superseded_by=superseded_by, key=key,
        last_accessed=last_accessed, expires_at=expires_at, superseded_at=superseded_at,
    )  # fmt: skip
    records = [record.evolve(memory_id=f"m{i}") for i in range(count)]  # a group and the rest
    store = SQLiteStore()
    seqs = store.insert_many(records)
    records[0] = records[0].evolve(key=None if key else "k2")
    store.replace(seqs[0], records[0])
    optional = ("supersedes", "superseded_by", "key", "last_accessed", "expires_at",
                "superseded_at")  # fmt: skip
    stored = store._conn.execute(f"SELECT {', '.join(optional)} FROM memories ORDER BY seq")
    for row, expected in zip(stored.fetchall(), records, strict=True):
        values = [getattr(expected, name) for name in optional]
        assert list(row) == [
            v if v is None or isinstance(v, str) else v.isoformat() for v in values
        ]
    assert [r for _, r in store.load()] == records
