"""The dense fallback on a PostgreSQL store: no index file named after the URL, and a memory
added by one instance is found by another instance's dense side."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FakeClock

from .fakes import FakeEmbedder, hybrid_store, needs_dense


@needs_dense
def test_each_instance_keeps_its_own_dense_index_in_step(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a file named after the URL would land here
    clock = FakeClock()
    a, b = hybrid_store(clock, FakeEmbedder(), pg_url), hybrid_store(clock, FakeEmbedder(), pg_url)
    try:
        a.add("Parcels go out in the afternoon", memory_id="ship", type="preference")
        hits = b.recall("when do we deliver?", k=3).hits  # no rule matches: the dense side does
        assert [(h.memory_id, h.source) for h in hits][:1] == [("ship", "dense")]
        assert list(tmp_path.iterdir()) == []
        assert a.check() == [] and b.check() == []
    finally:
        for store in (a, b):
            store.extension.close()  # type: ignore[union-attr]
            store.close()
