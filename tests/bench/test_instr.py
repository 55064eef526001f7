"""``benchmarks/instr.py``: callgrind counts only the recalls or the ingest it measures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cuemap_integrations.core import CueMap

from . import scripts


@pytest.fixture(scope="module")
def script():  # type: ignore[no-untyped-def]
    return scripts.load("instr")


def _watched(monkeypatch: pytest.MonkeyPatch, script: Any) -> list[Any]:
    """Each collection switch, with the recalls asked and the memories added before it."""
    done = {"recalls": 0, "added": 0}
    switches: list[Any] = []
    recall, add_many = CueMap.recall, CueMap.add_many

    def counted_recall(self: CueMap, *args: Any, **kwargs: Any) -> Any:
        done["recalls"] += 1
        return recall(self, *args, **kwargs)

    def counted_add_many(self: CueMap, items: Any, *args: Any, **kwargs: Any) -> Any:
        done["added"] += len(items)
        return add_many(self, items, *args, **kwargs)

    monkeypatch.setattr(CueMap, "recall", counted_recall)
    monkeypatch.setattr(CueMap, "add_many", counted_add_many)
    monkeypatch.setattr(script, "_switch", lambda flag: switches.append((flag, dict(done))))
    return switches


def test_recall_counts_only_the_questions_after_the_warm_ones(
    script: Any, tiny_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    switches = _watched(monkeypatch, script)
    assert script.measured("recall", 40, str(tiny_path), warm=2) == 3  # the file's other three
    assert switches == [("on", {"recalls": 2, "added": 40}), ("off", {"recalls": 5, "added": 40})]


def test_ingest_counts_only_the_memories_added_to_the_built_store(
    script: Any, tiny_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    switches = _watched(monkeypatch, script)
    assert script.measured("ingest", 40, str(tiny_path), warm=2) == script.INGESTED
    added = 40 + script.INGESTED
    assert switches == [
        ("on", {"recalls": 2, "added": 40}),
        ("off", {"recalls": 2, "added": added}),
    ]
