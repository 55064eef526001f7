"""Store files are owner-only, including SQLite's write-ahead log and shared-memory files and a
backup, even under a permissive umask (tests/core/test_store.py checks the main file)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from cuemap_integrations import CueMap


def test_every_file_of_a_new_store_is_owner_only(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        db = tmp_path / "nested" / "private.db"
        with CueMap(db) as cm:
            cm.add("The API uses port 8001")
            cm.backup(tmp_path / "copy.db")
            files = [p for p in tmp_path.rglob("*") if p.is_file()]
            assert {p.name for p in files} >= {"private.db", "private.db-wal", "private.db-shm",
                                               "copy.db"}  # fmt: skip
            modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in files}
    finally:
        os.umask(old)
    assert modes == dict.fromkeys(modes, 0o600)
