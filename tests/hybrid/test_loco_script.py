"""``benchmarks/hybrid_loco.py``: leave-one-conversation-out choice of the fallback's parameters."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from cuemap_integrations.bench.data import STRICT_CATEGORIES, load_locomo
from cuemap_integrations.bench.locomo import scored
from cuemap_integrations.bench.metrics import recall_at_k
from cuemap_integrations.bench.systems import NAMESPACE, build_store
from tests.bench import scripts, tiny

from .fakes import FakeEmbedder, needs_dense

pytestmark = needs_dense


@pytest.fixture(scope="module")
def script() -> ModuleType:
    return scripts.load("hybrid_loco")


def test_each_fold_is_chosen_without_its_conversation(script: ModuleType, tmp_path: Path) -> None:
    path = str(tiny.write_two(tmp_path))
    table, baseline, grid = script.measure(path, 5, model=FakeEmbedder())
    report = script.report(table, baseline, grid, path, 5)
    folds = report["folds"]
    assert [f["held_out"] for f in folds] == ["tiny-1", "tiny-2"]
    for fold, other in zip(folds, ["tiny-2", "tiny-1"], strict=True):
        point = script.choose(table, [other], grid)  # chosen on the other conversation only
        assert fold["chosen"] == script._named(point)
        r, h, fire = script.pooled(table, [fold["held_out"]], point)
        assert (fold["R@10"], fold["H@10"], fold["fire_rate"]) == (r, h, fire)
    assert report["held_out_mean"]["R@10"] == pytest.approx(sum(f["R@10"] for f in folds) / 2)
    assert len(report["all_points"]) == len(grid) == 5 * 6 * 5


def test_choose_prefers_recall_then_fewer_embeddings_then_grid_order(script: ModuleType) -> None:
    a, b, c = (0.5, 1, 1), (0.67, None, 5), (1.0, 3, 2)
    table = {
        "x": {a: [(0.5, 1.0, True)], b: [(0.5, 1.0, False)], c: [(0.4, 1.0, False)]},
        "y": {a: [(0.5, 1.0, False)], b: [(0.5, 1.0, False)], c: [(0.9, 1.0, True)]},
    }
    assert script.choose(table, ["x"], [a, b, c]) == b  # same R@10 as a, embeds less
    assert script.choose(table, ["y"], [a, b, c]) == c  # best R@10 wins whatever it costs
    assert script.choose(table, ["y"], [b, a]) == b  # full tie: grid order
    assert script.pooled(table, ["x", "y"], c) == pytest.approx((0.65, 1.0, 0.5))


def test_the_grid_runs_the_real_fallback(script: ModuleType, tmp_path: Path) -> None:
    path = tiny.write_two(tmp_path)
    conversation = load_locomo(path)[0]
    point = (0.67, 2, 1)
    extension, asked = script.deterministic(conversation, script.MemoEmbedder(FakeEmbedder()), 5)
    rows = script.run_point(extension, asked, point, 5)
    options = dict(zip(("min_coverage", "min_results", "max_fill"), point, strict=True))
    store = build_store(conversation, hybrid={"embedder": FakeEmbedder(), **options})
    questions = [q for q in conversation.questions if scored(q, STRICT_CATEGORIES)]
    expected = [
        recall_at_k(store.recall(q.text, k=5, namespace=NAMESPACE).memory_ids, q.evidence, 10)
        for q in questions
    ]
    assert [r for r, _, _ in rows] == expected
    fired = store.extension.stats().fired  # type: ignore[union-attr]
    assert sum(f for _, _, f in rows) == fired


def test_one_conversation_is_refused(script: ModuleType, tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="leaving one out needs at least 2"):
        script.loco(str(tiny.write(tmp_path)), 5, model=FakeEmbedder())


def test_main_writes_the_report(
    script: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(script, "COVERAGES", (0.67,))
    monkeypatch.setattr(script, "MIN_RESULTS", (None,))
    monkeypatch.setattr(script, "MAX_FILLS", (1, 5))
    real = script.loco
    monkeypatch.setattr(script, "loco", lambda p, d: real(p, d, model=FakeEmbedder()))
    out = tmp_path / "loco.json"
    assert script.main([str(tiny.write_two(tmp_path)), "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["benchmark"] == "hybrid-fallback-loco" and len(report["all_points"]) == 2
    assert report["chosen_on_all"]["min_coverage"] == 0.67
