"""Threads and processes writing and recalling at once on one store: nothing acknowledged is lost,
no lock error escapes, no recall returns a half-written memory, the index equals a rebuild."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cuemap_integrations import CueMap, StoreError, store
from cuemap_integrations.bench.workload import NAMESPACE, lost_memories, payload, run_mixed, verify

from .conftest import Backend


def test_payload_checksum_catches_any_change() -> None:
    text = payload("w1-1", 3)
    assert verify(text)
    assert not verify(text.replace("v3", "v4"))
    assert not verify(text[:-1])
    assert not verify("no checksum at all")


def test_threads_and_processes_hold_every_acknowledged_write(
    backend: Backend, tmp_path: Path
) -> None:
    url = backend.url(tmp_path)
    reports = run_mixed(
        url, threads=4, processes=2, operations=100, seed=7, open_store=backend.open
    )
    assert [e for r in reports for e in r.errors] == []  # no "database is locked", nothing else
    assert [b for r in reports for b in r.bad_hits] == []
    assert sum(r.hits for r in reports) > 100  # the checksum check ran on real hits
    assert all(r.operations == 100 for r in reports)
    with backend.open(url) as cm:
        assert lost_memories(cm, [r.ledger for r in reports]) == []
        assert cm.check() == []
        written = {i for r in reports for i, content in r.ledger.items() if content is not None}
        assert {m.memory_id for m in cm.memories(namespace=NAMESPACE)} == written


_OPEN_AND_ADD = (
    "import sys\n"
    "from cuemap_integrations import CueMap\n"
    "with CueMap(sys.argv[1]) as cm:\n"
    "    cm.add('hello from ' + sys.argv[2], memory_id=sys.argv[2])\n"
)


def test_processes_opening_a_new_file_at_once_all_succeed(tmp_path: Path) -> None:
    # Regression: each saw schema version 0 and the second ran the migrations again
    # ("table memories already exists").
    for attempt in range(2):
        db = tmp_path / f"new{attempt}.db"
        children = [
            subprocess.Popen(
                [sys.executable, "-c", _OPEN_AND_ADD, str(db), f"p{i}"],
                stderr=subprocess.PIPE,
                text=True,
            )  # fmt: skip
            for i in range(5)
        ]
        outcomes = [(c.communicate()[1], c.returncode) for c in children]
        assert [err for err, code in outcomes if code != 0] == []
        with CueMap(db) as cm:
            assert sorted(m.memory_id for m in cm.memories()) == [f"p{i}" for i in range(5)]


def _hold_write_lock(db: Path, seconds: float, held: threading.Event) -> None:
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    held.set()
    time.sleep(seconds)
    other.execute("COMMIT")
    other.close()


def test_a_writer_waits_for_another_connections_write_lock(tmp_path: Path) -> None:
    db = tmp_path / "busy.db"
    with CueMap(db) as cm:
        held = threading.Event()
        holder = threading.Thread(target=_hold_write_lock, args=(db, 0.5, held))
        holder.start()
        held.wait()
        started = time.monotonic()
        cm.add("written once the lock is free", memory_id="late")
        waited = time.monotonic() - started
        holder.join()
        assert waited >= 0.3  # it did wait, rather than fail with "database is locked"
        assert "late" in cm and cm.check() == []


def test_a_lock_held_past_the_timeout_is_a_store_error_and_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "busy.db"
    monkeypatch.setattr(store, "BUSY_TIMEOUT_S", 0.1)
    with CueMap(db) as cm:
        cm.add("already stored", memory_id="kept")
        held = threading.Event()
        holder = threading.Thread(target=_hold_write_lock, args=(db, 0.6, held))
        holder.start()
        held.wait()
        with pytest.raises(StoreError, match="locked"):
            cm.add("never stored", memory_id="lost")
        holder.join()
        assert [m.memory_id for m in cm.memories()] == ["kept"]
        cm.add("stored after the lock is free", memory_id="after")
        assert cm.check() == []


def test_update_of_a_memory_another_process_deleted_is_refused(
    backend: Backend, tmp_path: Path
) -> None:
    # Regression: the UPDATE matched no row and the update was acknowledged anyway.
    url = backend.url(tmp_path)
    with backend.open(url) as a:
        a.add(payload("x"), memory_id="x")
        with backend.open(url) as b:
            b.delete("x")
        with pytest.raises(StoreError, match="another process deleted it"):
            a.update("x", content=payload("x", 2))
        assert a.get("x").content == payload("x")  # its own view is unchanged
    with backend.open(url) as fresh:
        assert "x" not in fresh and fresh.check() == []


def test_other_processes_writes_are_seen_after_reopening(backend: Backend, tmp_path: Path) -> None:
    """Documented: each process loads its index at open (PostgreSQL keeps instances in step)."""
    url = backend.url(tmp_path)
    with backend.open(url) as a:
        with backend.open(url) as b:
            b.add(payload("from-b"), memory_id="from-b", namespace=NAMESPACE)
        assert (NAMESPACE, "from-b") not in a
    with backend.open(url) as again:
        assert again.recall("from-b notes", namespace=NAMESPACE).memory_ids[0] == "from-b"


def test_the_same_new_memory_from_two_processes_is_a_clear_store_error(
    backend: Backend, tmp_path: Path
) -> None:
    url = backend.url(tmp_path)
    with backend.open(url) as a, backend.open(url) as b:
        first = a.add("The API uses port 8001")
        with pytest.raises(StoreError, match="by another process: reopen the store"):
            b.add("The API uses port 8001")  # the same content gives the same id
        assert len(b) == 0  # b's index is unchanged (b.check() reports a's memory as unseen)
    with backend.open(url) as fresh:
        assert [m.memory_id for m in fresh.memories()] == [first.memory_id]
        assert fresh.check() == []
        assert fresh.add("The API uses port 8001").memory_id == first.memory_id  # a duplicate
