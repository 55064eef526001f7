"""The dense baseline (MiniLM + FAISS) on the tiny file, with the model loaded offline."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from cuemap_integrations.bench import main

MISSING = [m for m in ("sentence_transformers", "faiss") if importlib.util.find_spec(m) is None]


@pytest.mark.skipif(
    bool(MISSING),
    reason=f"DENSE BASELINE NOT TESTED: {', '.join(MISSING)} not importable; "
    "install the extra: pip install -c constraints.txt -e '.[hybrid]'",
)
def test_dense_smoke(tiny_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "dense.json"
    assert main(["locomo", str(tiny_path), "--systems", "dense", "--k", "1,3", "--json", str(out),
                 "--per-question"]) == 0  # fmt: skip
    res = json.loads(out.read_text())["systems"]["dense"]
    assert res["overall"]["n"] == 4 and res["with_adversarial"]["n"] == 5
    assert res["describe"]["model"] == "all-MiniLM-L6-v2" and res["describe"]["normalized"] is True
    rankings = [q["ranking"] for q in res["per_question"]]
    assert all(len(r) == 3 for r in rankings)  # dense always ranks every memory
    assert rankings[0][0] == "D1:3"  # "What breed is Ana's puppy Biscuit?" -> golden retriever turn


def test_missing_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from cuemap_integrations.bench import baselines
    from cuemap_integrations.bench.systems import BenchError

    real = importlib.util.find_spec
    monkeypatch.setattr(baselines.importlib.util, "find_spec",
                        lambda name, *a: None if name == "faiss" else real(name, *a))  # fmt: skip
    with pytest.raises(
        BenchError, match=r"needs faiss-cpu: pip install 'cuemap-integrations\[hybrid\]'"
    ):
        baselines.DenseSystem()
