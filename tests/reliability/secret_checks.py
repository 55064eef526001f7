"""Secrets for the end-to-end redaction tests, and the check that one reached no byte on disk."""

from __future__ import annotations

from pathlib import Path

API_KEY = "sk-proj-4f9A2b7C1d8E3f6G0h5J2k9L4m7N1p3Q"
DSN_PASSWORD = "Tr0ub4dor-and-3"
SAID = (
    f"Remember that the billing service calls OpenAI with api key {API_KEY} and its database "
    f"is postgresql://billing:{DSN_PASSWORD}@db.internal:5432/billing"
)
SECRETS = (API_KEY, DSN_PASSWORD)
QUERY = "billing service api key database"


def store_bytes(db: Path) -> bytes:
    """The store file with its write-ahead log and shared-memory file, as bytes."""
    parts = [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]
    return b"".join(p.read_bytes() for p in parts if p.exists())


def assert_redacted(db: Path, *shown: str) -> None:
    """No secret in the store's bytes nor in any text shown to a model; something redacted was
    stored and shown (so the check is not vacuous)."""
    raw = store_bytes(db)
    for secret in SECRETS:
        assert secret.encode() not in raw
        assert all(secret not in text for text in shown)
    assert b"[REDACTED:" in raw
    assert any("[REDACTED:" in text for text in shown)
