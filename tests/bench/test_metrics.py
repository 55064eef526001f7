"""The metrics, checked against values worked out by hand for fixed fake rankings."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuemap_integrations.bench.data import Conversation, load_locomo
from cuemap_integrations.bench.locomo import LocomoOptions, QuestionRun, _budget_prefix, run_system
from cuemap_integrations.bench.metrics import (
    hit_at_k,
    percentile,
    recall_at_k,
    reciprocal_rank,
    window_hit_at_k,
)
from cuemap_integrations.bench.tokens import TokenCounter

from . import tiny

# A fixed ranking per question of the tiny file (question text -> ranked dia ids).
FAKE = {
    tiny.QUESTIONS[0]["question"]: ["D1:2", "D1:3", "D2:2"],  # evidence D1:3
    tiny.QUESTIONS[1]["question"]: ["D2:1", "D1:7", "D1:1"],  # evidence D1:6, D2:1
    tiny.QUESTIONS[2]["question"]: ["D2:3", "D2:2", "D1:5"],  # evidence D1:2, D1:3 (recovered)
    tiny.QUESTIONS[3]["question"]: ["D1:4", "D2:4"],  # evidence D2:4 (D2:9 dropped)
    tiny.QUESTIONS[4]["question"]: ["D1:6"],  # category 5, evidence D1:4
}


class FakeSearcher:
    def search(self, query: str, k: int) -> list[str]:
        return FAKE[query][:k]


class FakeSystem:
    name = "fake"

    def index(self, conversation: Conversation) -> FakeSearcher:
        return FakeSearcher()

    def describe(self) -> dict[str, str]:
        return {"kind": "fixed rankings"}


def test_recall_hit_window_rr_by_hand() -> None:
    ranking = ["D2:1", "D1:7", "D1:1"]
    evidence = ["D1:6", "D2:1"]
    assert recall_at_k(ranking, evidence, 1) == 0.5
    assert recall_at_k(ranking, evidence, 3) == 0.5
    assert hit_at_k(ranking, evidence, 1) == 1.0
    assert hit_at_k(["D1:1"], evidence, 1) == 0.0
    assert reciprocal_rank(ranking, evidence) == 1.0
    assert reciprocal_rank(["D1:1", "D1:2", "D1:6"], evidence) == pytest.approx(1 / 3)
    assert reciprocal_rank(["D1:1"], evidence) == 0.0
    assert recall_at_k(ranking, [], 3) == 0.0


def test_window_needs_same_session_and_two_turns() -> None:
    assert window_hit_at_k(["D1:4"], ["D2:4"], 1) == 0.0  # same turn number, other session
    assert window_hit_at_k(["D1:5"], ["D1:3"], 1) == 1.0  # two turns away
    assert window_hit_at_k(["D1:6"], ["D1:3"], 1) == 0.0  # three turns away
    assert window_hit_at_k(["D1:9", "D1:1"], ["D1:3"], 1) == 0.0  # the hit is past k
    assert window_hit_at_k(["D1:9", "D1:1"], ["D1:3"], 2) == 1.0


def test_percentile_interpolates() -> None:
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 95) == pytest.approx(4.8)
    assert percentile([], 50) is None


def _fake_report(path: Path, ks: tuple[int, ...] = (1, 3)) -> dict:
    conversations = load_locomo(path)
    options = LocomoOptions(path=str(path), ks=ks, systems=("fake",), budget_tokens=60)
    return run_system(FakeSystem(), conversations, options, TokenCounter.bytes_only())


def test_aggregates_by_hand(tiny_path: Path) -> None:
    res = _fake_report(tiny_path)
    overall = res["overall"]
    # q0: R@1 0, H@1 0, W@1 1 (D1:2 next to D1:3), R@3 1, H@3 1, W@3 1, RR 1/2
    # q1: R@1 .5, H@1 1, W@1 1, R@3 .5, H@3 1, W@3 1, RR 1
    # q2: R@1 0, H@1 0, W@1 0 (session 2), R@3 0, H@3 0, W@3 1 (D1:5 two from D1:3), RR 0
    # q3: R@1 0, H@1 0, W@1 0 (D1:4 is in session 1), R@3 1, H@3 1, W@3 1, RR 1/2
    expected = {"n": 4, "R@1": 0.125, "H@1": 0.25, "W@1": 0.5, "R@3": 0.625, "H@3": 0.75,
                "W@3": 1.0, "MRR": 0.5}  # fmt: skip
    assert overall == pytest.approx(expected)
    cats = res["by_category"]
    assert cats["1"]["n"] == 1 and cats["1"]["R@1"] == 0.5
    assert cats["2"]["n"] == 1 and cats["2"]["R@3"] == 1.0 and cats["2"]["MRR"] == 0.5
    assert cats["3"] == {"n": 0, "R@1": None, "H@1": None, "W@1": None, "R@3": None, "H@3": None,
                         "W@3": None, "MRR": None}  # fmt: skip
    assert cats["4"]["n"] == 2 and cats["4"]["R@3"] == 0.5 and cats["4"]["H@1"] == 0.0
    # category 5 included: q4 ranks D1:6, two turns from D1:4 -> W@1 = 1
    wide = res["with_adversarial"]
    assert wide["n"] == 5
    assert wide["W"] == pytest.approx({"1": 0.6, "3": 1.0})


def test_token_means_by_hand(tiny_path: Path) -> None:
    res = _fake_report(tiny_path)
    firsts = ["D1:2", "D2:1", "D2:3", "D1:4"]
    expected_1 = sum(len(tiny.content(i).encode()) for i in firsts) / 4
    assert res["tokens_mean"]["1"] == pytest.approx(expected_1)
    context_q4 = tiny.content("D1:6")
    expected_wide = (expected_1 * 4 + len(context_q4.encode())) / 5
    assert res["with_adversarial"]["tokens_mean"]["1"] == pytest.approx(expected_wide)
    # at k=3 the context is the top three texts joined by newlines
    strict = [q["question"] for q in tiny.QUESTIONS[:4]]
    contexts = ["\n".join(tiny.content(i) for i in FAKE[q][:3]) for q in strict]
    assert res["tokens_mean"]["3"] == pytest.approx(sum(len(c.encode()) for c in contexts) / 4)
    assert res["latency_ms"]["n"] == 5


def test_budget_prefix_by_hand(tiny_path: Path) -> None:
    [conv] = load_locomo(tiny_path)
    question = conv.questions[0]
    run = QuestionRun(conv, question, FAKE[question.text], 0.0)
    first, second = (len(tiny.content(i).encode()) for i in FAKE[question.text][:2])
    counter = TokenCounter.bytes_only()
    assert _budget_prefix(run, first, counter) == 1
    assert _budget_prefix(run, first + second, counter) == 1  # the newline does not fit
    assert _budget_prefix(run, first + second + 1, counter) == 2
    assert _budget_prefix(run, first - 1, counter) == 0
    res = _fake_report(tiny_path)
    assert res["budget"]["tokens"] == 60 and res["budget"]["n"] == 4
