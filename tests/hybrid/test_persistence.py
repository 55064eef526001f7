"""The FAISS index is kept beside a file store and reused; it is rebuilt when missing, stale,
damaged or made by another model, never mixed; an in-memory store writes no file."""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path

import pytest

from cuemap_integrations import CueMap
from cuemap_integrations.dense import DenseIndex
from cuemap_integrations.hybrid import HybridRecall
from tests.conftest import FakeClock

from .fakes import FakeEmbedder, hybrid_store, needs_dense

pytestmark = needs_dense

QUERY = "zzparcelzz"
TEXTS = ["Parcels go to the mail room", "Lunch at noon", "Parcel pickup at 5 pm"]


def close(cm: CueMap) -> None:
    hybrid = cm.extension
    if isinstance(hybrid, HybridRecall):
        hybrid.close()
    cm.close()


def build(tmp_path: Path, clock: FakeClock) -> Path:
    db = tmp_path / "memory.db"
    cm = hybrid_store(clock, FakeEmbedder(), str(db))
    for i, text in enumerate(TEXTS):
        cm.add(text, memory_id=f"m{i}")
    close(cm)
    return db


def test_files_are_written_beside_the_store_owner_only(tmp_path: Path, clock: FakeClock) -> None:
    db = build(tmp_path, clock)
    faiss_file, meta_file = Path(f"{db}.faiss"), Path(f"{db}.faiss.json")
    assert faiss_file.is_file() and meta_file.is_file()
    for path in (faiss_file, meta_file):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    meta = json.loads(meta_file.read_text())
    assert meta["model"] == "fake-concepts" and meta["dimension"] == 8 and meta["vectors"] == 3
    assert [e[:2] for e in meta["entries"]] == [["default", f"m{i}"] for i in range(3)]
    assert not any(TEXTS[0] in line for line in meta_file.read_text().splitlines())  # no text


def test_reopening_reuses_the_index(tmp_path: Path, clock: FakeClock) -> None:
    db = build(tmp_path, clock)
    fake = FakeEmbedder()
    cm = hybrid_store(clock, fake, str(db))
    assert fake.calls == []  # nothing re-embedded
    assert [h.memory_id for h in cm.recall(QUERY, k=3)] == ["m0", "m2"]
    assert fake.calls == [[QUERY]]
    close(cm)


def test_a_stale_index_is_brought_in_step(tmp_path: Path, clock: FakeClock) -> None:
    db = build(tmp_path, clock)
    with CueMap(db, clock=clock) as plain:  # written without the hybrid extension
        plain.delete("m0")
        plain.update("m1", content="Parcels never arrive at lunch")
        plain.add("A new parcel rule", memory_id="m3")
    fake = FakeEmbedder()
    cm = hybrid_store(clock, fake, str(db))
    assert sorted(fake.texts) == ["A new parcel rule", "Parcels never arrive at lunch"]
    assert cm.extension.stats().index.vectors == 3  # type: ignore[union-attr]
    assert sorted(cm.recall(QUERY, k=5).memory_ids) == ["m1", "m2", "m3"]
    close(cm)
    meta = json.loads(Path(f"{db}.faiss.json").read_text())
    assert sorted(e[1] for e in meta["entries"]) == ["m1", "m2", "m3"]


@pytest.mark.parametrize(
    ("embedder", "reason"),
    [
        (FakeEmbedder(name="another-model"), "made by model"),
        (FakeEmbedder(dimension=6), "dimension 8"),
    ],
)
def test_another_model_or_dimension_is_rebuilt_never_mixed(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture,
    embedder: FakeEmbedder, reason: str,
) -> None:  # fmt: skip
    db = build(tmp_path, clock)
    embedder.calls.clear()
    with caplog.at_level(logging.WARNING, "cuemap_integrations"):
        cm = hybrid_store(clock, embedder, str(db))
    assert reason in caplog.text and "rebuilding" in caplog.text
    assert sorted(embedder.texts) == sorted(TEXTS)  # every memory embedded again
    close(cm)
    meta = json.loads(Path(f"{db}.faiss.json").read_text())
    assert (meta["model"], meta["dimension"]) == (embedder.name, embedder.dimension)


@pytest.mark.parametrize("damage", ["delete-json", "delete-faiss", "corrupt-faiss", "bad-json"])
def test_missing_or_damaged_files_are_rebuilt(
    tmp_path: Path, clock: FakeClock, damage: str
) -> None:
    db = build(tmp_path, clock)
    faiss_file, meta_file = Path(f"{db}.faiss"), Path(f"{db}.faiss.json")
    if damage == "delete-json":
        meta_file.unlink()
    elif damage == "delete-faiss":
        faiss_file.unlink()
    elif damage == "corrupt-faiss":
        faiss_file.write_bytes(faiss_file.read_bytes()[:-7] + b"garbage")
    else:
        meta_file.write_text("{not json")
    fake = FakeEmbedder()
    cm = hybrid_store(clock, fake, str(db))
    assert sorted(fake.texts) == sorted(TEXTS)
    assert sorted(cm.recall(QUERY, k=5).memory_ids) == ["m0", "m2"]
    close(cm)
    assert faiss_file.is_file() and meta_file.is_file()


def test_an_in_memory_store_writes_no_file(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    cm = hybrid_store(clock, FakeEmbedder())
    cm.add(TEXTS[0])
    assert cm.extension.stats().index.path is None  # type: ignore[union-attr]
    close(cm)
    assert list(tmp_path.iterdir()) == []


def test_autosave_and_explicit_index_path(tmp_path: Path, clock: FakeClock) -> None:
    target = tmp_path / "vectors" / "index.faiss"
    target.parent.mkdir()
    cm = CueMap(tmp_path / "m.db", clock=clock)
    index = DenseIndex(FakeEmbedder(), path=target, autosave=2)
    hybrid = HybridRecall(cm, index=index)
    assert target.is_file()  # written once built
    before = target.with_name("index.faiss.json").read_text()
    cm.add(TEXTS[0])
    assert target.with_name("index.faiss.json").read_text() == before  # 1 change: not yet
    cm.add(TEXTS[1])
    assert json.loads(target.with_name("index.faiss.json").read_text())["vectors"] == 2
    hybrid.close()
    cm.close()
    assert not Path(f"{tmp_path / 'm.db'}.faiss").exists()
