"""Continuous recall sessions: follow-ups without cues, topic switches, persistence."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuemap_integrations import CueMap

from ..conftest import ORDER_TIMEOUT_EN, ORDER_TIMEOUT_ZH, load

# Another fix, of another topic: "how did we fix it?" alone cannot tell the two apart.
DISTRACTOR_EN = ("login-fix", "Fixed the flaky login test by pinning the browser version", "fact")


@pytest.fixture
def en(cm: CueMap) -> CueMap:
    load(cm, [*ORDER_TIMEOUT_EN, DISTRACTOR_EN])
    return cm


@pytest.fixture
def zh(cm: CueMap) -> CueMap:
    load(cm, ORDER_TIMEOUT_ZH)
    return cm


def test_english_follow_up_finds_the_fix_only_through_the_session(en: CueMap) -> None:
    follow_up = "how did we fix it?"
    stateless = en.recall(follow_up, k=2)
    assert set(stateless.memory_ids) == {"fix", "login-fix"}
    assert abs(stateless[0].score - stateless[1].score) < 0.5  # no way to tell which "it"
    session = en.session("chat-en")
    assert session.recall("why were orders timing out?", k=2).memory_ids[0] == "cause"
    result = session.recall(follow_up, k=3, explain=True)
    assert result.memory_ids[0] == "fix"
    assert result[0].breakdown.session_cues  # found because of what turn 1 recalled
    assert result.trace is not None and result.trace.expanded_cues


def test_chinese_follow_up_without_cues(zh: CueMap) -> None:
    stateless = zh.recall("后来怎么修的", k=1).memory_ids
    assert stateless != ["zh-fix"]
    session = zh.session("chat-zh")
    assert session.recall("订单超时 是什么问题", k=2).memory_ids[0] == "zh-cause"
    result = session.recall("后来怎么修的", k=3, explain=True)
    assert result.memory_ids[0] == "zh-fix"
    assert "订单超时" in result[0].breakdown.session_cues


@pytest.mark.parametrize(
    ("fixture", "turns", "switch", "expected"),
    [
        ("en", ["why were orders timing out?", "how did we fix it?"],
         "which port does the API use?", "port"),
        ("zh", ["订单超时 是什么问题", "后来怎么修的"], "接口用哪个端口", "zh-port"),
    ],
)  # fmt: skip
def test_topic_switch_is_not_dragged_back(
    request, cm: CueMap, fixture, turns, switch, expected
) -> None:
    assert request.getfixturevalue(fixture) is cm  # `cm` is named so it runs on each backend
    session = cm.session("switch")
    for turn in turns:
        session.recall(turn)
    result = session.recall(switch, explain=True)
    assert result.memory_ids[0] == expected
    top_old = [h for h in result if h.breakdown.session_cues and not h.breakdown.matched_cues]
    assert all(h.score < result[0].score for h in top_old)


def test_session_carries_bounded_history_with_decay(en: CueMap) -> None:
    session = en.session("h")
    session.recall("why were orders timing out?")
    first = dict(session.carried_cues())
    assert first and max(first.values()) == 1.0
    session.recall("which port does the API use?")
    weights = dict(session.carried_cues())
    assert weights["8001"] == 1.0
    assert 0 < weights["redis"] < 1.0  # one turn older: decayed
    for _ in range(en.config.session_history):
        session.recall("bike tyre")
    assert "redis" not in dict(session.carried_cues())


def test_skip_shown_and_reset(en: CueMap) -> None:
    session = en.session("s", skip_shown=True)
    first = session.recall("which port does the API use?", k=1).memory_ids
    assert first == ["port"]
    assert "port" not in session.recall("which port does the API use?", k=3).memory_ids
    session.reset()
    assert session.turn == 0 and session.shown == () and session.carried_cues() == []
    assert session.recall("which port does the API use?", k=1).memory_ids == ["port"]


def test_session_survives_a_restart(location: str | Path, clock) -> None:
    db = location
    with CueMap(db, clock=clock) as cm:
        load(cm, ORDER_TIMEOUT_ZH)
        cm.session("thread-7").recall("订单超时 是什么问题")
    with CueMap(db, clock=clock) as cm:
        session = cm.session("thread-7")
        assert session.turn == 1
        assert session.recall("后来怎么修的", k=1).memory_ids == ["zh-fix"]
        assert cm.session("another-thread").turn == 0


def test_sessions_are_per_namespace(cm: CueMap) -> None:
    load(cm, ORDER_TIMEOUT_ZH, namespace="a")
    cm.add("unrelated", namespace="b")
    cm.session("t", namespace="a").recall("订单超时 是什么问题")
    other = cm.session("t", namespace="b")
    assert other.turn == 0 and other.recall("后来怎么修的").memory_ids == []


async def test_session_async(zh: CueMap) -> None:
    session = zh.session("async")
    await session.arecall("订单超时 是什么问题")
    assert (await session.arecall("后来怎么修的", k=1)).memory_ids == ["zh-fix"]


def _session_parts(self_factor: float) -> dict[str, float]:
    cm = CueMap(config={"session_self_factor": self_factor, "session_only_factor": 1.0})
    load(cm, [*ORDER_TIMEOUT_EN, DISTRACTOR_EN])
    session = cm.session("self")
    assert session.recall("why were orders timing out?", k=1).memory_ids == ["cause"]
    hits = session.recall("how did we fix it?", k=10)
    return {h.memory_id: dict(h.breakdown.contributions).get("session", 0.0) for h in hits}


def test_a_memory_gets_less_help_from_its_own_carried_cues() -> None:
    full, none = _session_parts(1.0), _session_parts(0.0)
    assert 0 < none["cause"] < full["cause"]  # only turn 1's query cues still count for it
    assert none["fix"] == pytest.approx(full["fix"])  # others are helped exactly as before


def test_carried_cues_too_common_to_tell_memories_apart_are_dropped() -> None:
    def session_parts(share: float) -> dict[str, float]:
        cm = CueMap(config={"carry_max_share": share, "carry_min_df": 1, "feedback_hits": 0})
        cm.add_many(
            [
                {"content": f"team note {i} about the release", "memory_id": f"n{i}"}
                for i in range(40)
            ]
        )
        cm.add("The zebra migration runbook", memory_id="zebra")
        cm.add("Zebra migration needs the team on call", memory_id="oncall")
        session = cm.session("s")
        session.recall("zebra migration team", k=1)  # carries "team" (a query cue)
        hits = session.recall("anything else?", k=50)
        return {h.memory_id: dict(h.breakdown.contributions).get("session", 0.0) for h in hits}

    everything, capped = session_parts(1.0), session_parts(0.05)
    assert everything.get("n0", 0.0) > 0  # the query cue "team" was carried
    assert capped.get("n0", 0.0) == 0.0  # "team" is in 41 of 42 memories: not carried
    assert capped["oncall"] > 0  # "zebra", "migration" are rare: still carried


def test_session_results_keep_conflict_notes(cm: CueMap) -> None:
    cm.add("The orders API uses POST", type="convention", memory_id="old")
    cm.add("The orders API uses GET", type="convention", memory_id="new")
    result = cm.session("n").recall("orders api method", k=5)
    assert result.trace is None and [n.kind for n in result.notes] == ["conflict"]
