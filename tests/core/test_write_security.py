"""Secrets never reach storage, on every write path of the core; capture goes through the store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cuemap_integrations import CueMap, MemoryRecord
from cuemap_integrations.errors import SecretError
from cuemap_integrations.redact import RedactionPolicy

from ..conftest import FakeClock

OPENAI = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
PG = "postgresql://admin:hunter2secret@db.internal:5432/app"


def _file_text(db: Path) -> str:
    return b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*")).decode("latin-1")


def test_add_redacts_content_cues_tags_metadata_and_reports_counts(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with CueMap(db) as cm:
        rec = cm.add(
            f"The deploy key is {OPENAI} and the DB is {PG}",
            cues=["deploy", OPENAI],
            metadata={"note": f"token={OPENAI}", "ok": "port 8001"},
        )
        assert OPENAI not in repr(rec) and "hunter2secret" not in repr(rec)
        assert "[REDACTED:api_key]" in rec.content
        assert rec.cues == ("deploy",)
        assert rec.metadata["ok"] == "port 8001"
        assert rec.metadata["redacted"]["api_key"] >= 2
        assert rec.metadata["redacted"]["connection_string"] == 1
        assert cm.recall("deploy key")[0].memory_id == rec.memory_id
    stored = _file_text(db)
    assert OPENAI not in stored and "hunter2secret" not in stored


def test_drop_policy_refuses_the_whole_batch_without_naming_the_secret(cm: CueMap) -> None:
    strict = RedactionPolicy().with_actions(private_key="drop")
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7x\n-----END RSA PRIVATE KEY-----"
    with pytest.raises(SecretError) as info:
        cm.add_many([{"content": "fine"}, {"content": f"key: {pem}"}], redaction=strict)
    assert "private_key" in str(info.value) and "MIIE" not in str(info.value)
    assert len(cm) == 0


def test_redaction_can_be_turned_off_per_call_or_per_store(clock: FakeClock) -> None:
    cm = CueMap(clock=clock)
    kept = cm.add(f"test fixture key {OPENAI}", redaction=None)
    assert OPENAI in kept.content
    off = CueMap(clock=clock, redaction=None)
    assert OPENAI in off.add(f"fixture {OPENAI}").content


def test_records_from_an_export_are_redacted_too(cm: CueMap, clock: FakeClock) -> None:
    record = MemoryRecord(
        memory_id="x", content=f"old key {OPENAI}", created_at=clock.now, updated_at=clock.now
    )
    assert OPENAI not in cm.add_many([record])[0].content


def test_private_spans_never_stored(cm: CueMap) -> None:
    rec = cm.add("Launch plan <private>the acquisition of Acme</private> is on track")
    assert "Acme" not in rec.content and "acme" not in rec.cues


def test_capture_stores_redacted_memories_and_recaptures_without_duplicates(cm: CueMap) -> None:
    turns = [
        {"role": "user", "content": f"Remember that the API uses port 8001. My key is {OPENAI}"},
        {"role": "assistant", "content": "Noted!"},
        {"role": "user", "content": "From now on call me Sam."},
    ]
    first = cm.capture(turns, session_id="t1")
    assert first.records and all(cm.get(r.memory_id) == r for r in first.records)
    assert OPENAI not in json.dumps([r.to_dict() for r in cm.memories()])
    again = cm.capture(turns, session_id="t1")
    assert [r.memory_id for r in again.records] == [r.memory_id for r in first.records]
    assert len(cm) == len(first.records)
    renamed = cm.capture(
        [{"role": "user", "content": "From now on call me Samantha."}], session_id="t2"
    )
    (new,) = renamed.records
    assert new.key == "user.display_name" and new.supersedes is not None
    assert cm.get(new.supersedes).superseded_by == new.memory_id
    assert "samantha" in cm.recall("what should I call the user")[0].content.lower()


def test_update_redacts_like_add(cm: CueMap) -> None:
    cm.add("deploy notes", memory_id="d")
    updated = cm.update("d", content=f"deploy with {OPENAI}", metadata={"k": OPENAI})
    assert OPENAI not in repr(updated) and OPENAI not in repr(cm.get("d"))
    assert updated.metadata["redacted"]["api_key"] == 2
