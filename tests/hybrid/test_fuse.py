"""Fuse mode: weighted reciprocal-rank fusion of the rule ranking and the dense ranking."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cuemap_integrations import CueMap
from tests.conftest import FakeClock

from .fakes import FakeEmbedder, hybrid_store, needs_dense, unit

pytestmark = needs_dense

QUERY = "alpha beta"
VECTORS = {QUERY: [1.0, 0.0], "alpha one": [1.0, 0.0], "beta two": [0.0, 1.0],
           "gamma three": unit(0.9), "delta four": unit(0.5)}  # fmt: skip


def fused_store(clock: FakeClock, **options: object) -> CueMap:
    cm = hybrid_store(clock, FakeEmbedder(dimension=2, vectors=VECTORS), mode="fuse", **options)
    for memory_id, text in [("A", "alpha one"), ("B", "beta two"), ("C", "gamma three"),
                            ("D", "delta four")]:  # fmt: skip
        cm.add(text, type="fact", memory_id=memory_id)
    return cm


def test_fusion_order_sources_and_breakdowns(clock: FakeClock) -> None:
    cm = fused_store(clock)
    hits = cm.recall(QUERY, k=4)
    # rules: A, B.  dense (fact threshold 0.46): A 1.0, C 0.9, D 0.5; B (0.0) is not similar
    # A = 1/61 + 1/61; B = 1/62 (rules #2) ties C = 1/62 (dense #2): the rule list wins ties
    assert hits.memory_ids == ["A", "B", "C", "D"]
    assert [h.source for h in hits] == ["cue", "cue", "dense", "dense"]
    assert hits[0].score == pytest.approx(2 / 61)
    assert hits[1].score == pytest.approx(hits[2].score) == pytest.approx(1 / 62)
    assert hits[3].score == pytest.approx(1 / 63)
    names = [name for name, _ in hits[0].breakdown.contributions]
    assert names[-2:] == ["dense", "rrf"] and "content" in names  # rules kept, fusion added
    assert hits[2].breakdown.contributions == (
        ("dense", pytest.approx(0.9)),
        ("rrf", pytest.approx(1 / 62)),
    )
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_fusion_weights(clock: FakeClock) -> None:
    dense_only = fused_store(clock, fuse_weights=(0.0, 1.0))
    assert dense_only.recall(QUERY, k=4).memory_ids[:3] == ["A", "C", "D"]
    rules_first = fused_store(clock, fuse_weights=(1.0, 0.0))
    assert rules_first.recall(QUERY, k=4).memory_ids == ["A", "B", "C", "D"]


def test_fusion_always_embeds_the_query(clock: FakeClock) -> None:
    cm = fused_store(clock)
    fake = cm.extension.index.embedder  # type: ignore[union-attr]
    fake.calls.clear()
    cm.recall(QUERY, k=2)
    assert fake.calls == [[QUERY]]
    assert cm.extension.stats().fired == 1  # type: ignore[union-attr]


def test_fusion_keeps_filters(clock: FakeClock) -> None:
    cm = fused_store(clock)
    cm.add("gamma five", type="preference", memory_id="E")
    assert "E" not in cm.recall(QUERY, k=5, types=["fact"]).memory_ids


_SCRIPT = """
import json
from tests.conftest import FakeClock
from tests.hybrid.test_fuse import fused_store, QUERY
cm = fused_store(FakeClock())
print(json.dumps([[h.memory_id, round(h.score, 12)] for h in cm.recall(QUERY, k=4)]))
"""


def test_fusion_is_the_same_under_any_hash_seed() -> None:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    outputs = []
    for seed in ("0", "1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        run = subprocess.run([sys.executable, "-c", _SCRIPT], cwd=root, env=env,
                             capture_output=True, text=True, check=True)  # fmt: skip
        outputs.append(json.loads(run.stdout.strip().splitlines()[-1]))
    assert outputs[0] == outputs[1] == outputs[2]
    assert [i for i, _ in outputs[0]] == ["A", "B", "C", "D"]
