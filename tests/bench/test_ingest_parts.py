"""``benchmarks/ingest_parts.py``: each stage of bulk ingest timed alone, against the whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import scripts


@pytest.fixture(scope="module")
def script():  # type: ignore[no-untyped-def]
    return scripts.load("ingest_parts")


def test_summary_takes_medians_and_divides_by_the_whole_ingest(script) -> None:
    seconds = {"derive_cues": [3e-6, 1e-6, 2e-6], "add_many": [8e-6, 4e-6, 9e-6]}
    figures = script.summary(seconds)
    assert figures["derive_cues"]["us_per_memory"] == pytest.approx(2.0)
    assert figures["derive_cues"]["share_of_add_many"] == pytest.approx(0.25)
    assert figures["add_many"] == {"us_per_memory": pytest.approx(8.0), "share_of_add_many": 1.0}


@pytest.mark.parametrize("stage", ["derive_cues", "redact", "add_many"])
def test_each_stage_does_its_work_on_the_memories(script, tiny_path: Path, stage: str) -> None:
    from cuemap_integrations.bench.scale import batches, load_corpus

    items = list(batches(load_corpus(str(tiny_path)), 7, 0, 12))
    done = script._stage(stage, items)()
    assert len(done) == (len(items) if stage == "add_many" else 12)


def test_the_command_prints_every_stage_and_writes_the_json(
    tiny_path: Path, tmp_path: Path
) -> None:
    printed, figures = scripts.run(
        "ingest_parts", "--size", "15", "--runs", "1", "--locomo", str(tiny_path),
        out=tmp_path / "parts.json",
    )  # fmt: skip
    assert figures["size"] == 15
    assert list(figures["stages"]) == ["derive_cues", "text_keys", "cues_then_keys", "redact",
                                       "add_many"]  # fmt: skip
    assert all(row["us_per_memory"] > 0 for row in figures["stages"].values())
    assert figures["stages"]["add_many"]["share_of_add_many"] == 1.0
    assert [line.split()[0] for line in printed.splitlines()[1:]] == list(figures["stages"])
