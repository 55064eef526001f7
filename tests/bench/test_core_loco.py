"""``benchmarks/core_loco.py``: the core's tuned rules chosen leave-one-conversation-out."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from cuemap_integrations.bench.data import ALL_CATEGORIES, load_locomo
from cuemap_integrations.bench.locomo import scored
from cuemap_integrations.bench.systems import NAMESPACE, build_store
from cuemap_integrations.config import RecallConfig

from . import scripts, tiny


@pytest.fixture(scope="module")
def script() -> ModuleType:
    return scripts.load("core_loco")


@pytest.fixture(scope="module")
def points(script: ModuleType) -> tuple[tuple[float, float, int], ...]:
    """The defaults, a point that is all off, and one with every rule stronger."""
    return (script.DEFAULT, (0.0, 0.0, 3), (16.0, 2.0, 8))


@pytest.fixture(scope="module")
def table(script: ModuleType, points: tuple[tuple[float, float, int], ...]) -> dict[str, object]:
    """Hand-made scores: on "x" a point ties the defaults, on "y" the objectives disagree,
    on "z" two points other than the defaults tie."""
    row = script.Row
    a, b, c = points
    return {
        "x": {a: [row(0.5, 1.0, 1.0, 10)], b: [row(0.5, 1.0, 1.0, 10)],
              c: [row(0.9, 1.0, 0.0, 10)]},
        "y": {a: [row(0.2, 0.0, 1.0, 10), row(None, None, 0.0, 10)],
              b: [row(0.6, 1.0, 0.0, 10), row(None, None, 0.0, 10)],
              c: [row(0.2, 0.0, 1.0, 10), row(None, None, 1.0, 5000)]},
        "z": {a: [row(0.1, 0.0, 0.0, 10)], b: [row(0.3, 1.0, 1.0, 10)],
              c: [row(0.3, 1.0, 1.0, 10)]},
    }  # fmt: skip


def test_choose_ties_go_to_the_defaults_then_grid_order(
    script: ModuleType, table: dict[str, object], points: tuple[tuple[float, float, int], ...]
) -> None:
    a, b, c = points
    by_window, by_sum = script.OBJECTIVES["W@20"], script.OBJECTIVES["R@10+H@10+W@20"]
    assert script.choose(table, ["x"], [b, a, c], by_window) == a  # tie with b: the defaults
    assert script.choose(table, ["x"], [b, a, c], by_sum) == a  # 2.5 each, c only 1.9
    assert script.choose(table, ["y"], [a, b, c], by_window) == c  # W 1.0 against 0.5 and 0.0
    assert script.choose(table, ["y"], [a, b, c], by_sum) == b  # 1.6 against 0.7 and 1.2
    assert script.choose(table, ["z"], [c, b, a], by_window) == c  # no defaults in the tie
    assert script.choose(table, ["z"], [b, c, a], by_window) == b
    assert script.choose(table, ["x", "y"], [a, b, c], by_window) == a  # pooled: 2/3 each


def test_pooled_means_strict_and_wide_questions_apart(
    script: ModuleType, table: dict[str, object], points: tuple[tuple[float, float, int], ...]
) -> None:
    scores = script.pooled(table, ["x", "y"], points[2])
    assert scores == pytest.approx((0.55, 0.5, 2 / 3, 5020 / 3, 1 / 3))
    assert scores.total == pytest.approx(0.55 + 0.5 + 2 / 3)


def test_each_fold_is_chosen_without_its_conversation(
    script: ModuleType, table: dict[str, object], points: tuple[tuple[float, float, int], ...]
) -> None:
    a, b, c = points
    sums = script.folds({s: table[s] for s in ("x", "y")}, [a, b, c],
                        script.OBJECTIVES["R@10+H@10+W@20"])  # fmt: skip
    assert [f["held_out"] for f in sums] == ["x", "y"]
    assert sums[0]["chosen"] == script.named(b)  # chosen on "y" alone
    assert sums[0]["R@10"] == 0.5 and sums[0]["W@20"] == 1.0  # "x" scored at b
    assert sums[1]["chosen"] == script.named(a)  # chosen on "x" alone: the tie's defaults
    assert (sums[1]["R@10"], sums[1]["W@20"]) == (0.2, 0.5)
    assert script.averaged(sums)["W@20"] == 0.75


def test_swapping_the_config_equals_rebuilding(
    script: ModuleType, tmp_path: Path, points: tuple[tuple[float, float, int], ...]
) -> None:
    conversation = load_locomo(tiny.write(tmp_path))[0]
    questions = [q for q in conversation.questions if scored(q, ALL_CATEGORIES)]
    store = build_store(conversation)
    swapped = [script.ask(store, store.config, questions, p) for p in points]
    for point, rankings in zip(points, swapped, strict=True):
        fresh = build_store(conversation, config=RecallConfig().with_changes(**script.named(point)))
        assert rankings == [
            fresh.recall(q.text, k=20, namespace=NAMESPACE).memory_ids for q in questions
        ]
    assert swapped[0] != swapped[1] != swapped[2]  # the swaps did change the rankings
    assert len(questions) == 5  # categories 1-5 with usable evidence


def test_main_writes_the_report(
    script: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "loco.json"
    assert script.main([str(tiny.write_two(tmp_path)), "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["benchmark"] == "core-rules-loco" and len(report["all_points"]) == 100
    for block in report["objectives"].values():
        assert [f["held_out"] for f in block["folds"]] == ["tiny-1", "tiny-2"]
    assert report["defaults"] == {"date_bonus": 8.0, "speaker_bonus": 1.0, "feedback_hits": 5}
    assert "held-out mean" in capsys.readouterr().out


def test_one_conversation_is_refused(script: ModuleType, tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="leaving one out needs at least 2"):
        script.measure(str(tiny.write(tmp_path)))
