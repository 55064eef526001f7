"""Recall: golden rankings in English and Chinese, filters, explanations, index hygiene."""

from __future__ import annotations

import logging
import math
from datetime import timedelta

import pytest

from cuemap_integrations import CueMap, RecallConfig, ValidationError
from cuemap_integrations.errors import ConfigError

from ..conftest import ORDER_TIMEOUT_EN, ORDER_TIMEOUT_ZH, load


@pytest.fixture
def en(cm: CueMap) -> CueMap:
    load(cm, ORDER_TIMEOUT_EN)
    return cm


@pytest.fixture
def zh(cm: CueMap) -> CueMap:
    load(cm, ORDER_TIMEOUT_ZH)
    return cm


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("which port does the API use?", "port"),
        ("can I change the database schema?", "schema"),
        ("why were orders timing out?", "cause"),
        ("what did we run against /ops/clear-cache?", "fix"),
        ("how do I like my answers?", "lang"),
        ("when does the lunch order go out", "lunch"),
    ],
)
def test_golden_english(en: CueMap, query: str, first: str) -> None:
    assert en.recall(query, k=3).memory_ids[0] == first


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("上次订单超时怎么修的", "zh-fix"),
        ("订单超时 是什么问题", "zh-cause"),
        ("接口用哪个端口", "zh-port"),
        ("周五有什么安排", "zh-meeting"),
        ("clear-cache 命令", "zh-fix"),
    ],
)
def test_golden_chinese(zh: CueMap, query: str, first: str) -> None:
    assert zh.recall(query, k=3).memory_ids[0] == first


def test_chinese_cue_found_inside_unspaced_query(zh: CueMap) -> None:
    result = zh.recall("上次订单超时怎么修的", explain=True)
    assert result.trace is not None
    assert "订单超时" in result.trace.query_cues
    assert set(result.memory_ids[:2]) == {"zh-fix", "zh-cause"}


@pytest.mark.parametrize(
    ("wanted", "query", "cue", "terms"),
    [
        # an alias bridges languages: "timeout" asks for "超时" too
        ("订单接口超时需要重试三次", "what about the timeout?", "timeout", ()),
        # a compound written apart in the query finds it written as one (text.joined_pairs)
        ("Nate makes coconut milk icecream", "what ice cream does Nate make?", "icecream",
         ("icecream",)),
    ],
)  # fmt: skip
def test_a_query_rule_reaches_the_memory_and_the_breakdown_names_it(
    cm: CueMap, wanted: str, query: str, cue: str, terms: tuple[str, ...]
) -> None:
    cm.add(wanted, memory_id="wanted")
    cm.add("Payments are settled nightly; the milk went off", memory_id="other")
    result = cm.recall(query, explain=True)
    assert result.memory_ids[:1] == ["wanted"]
    assert cue in result[0].breakdown.matched_cues
    assert set(terms) <= set(result[0].breakdown.matched_terms)


def test_explain_breakdown_sums_to_score_and_names_matches(en: CueMap) -> None:
    result = en.recall("which port does the API use?", explain=True)
    top = result[0]
    total = sum(value for _, value in top.breakdown.contributions)
    assert total == pytest.approx(top.score)
    assert {"8001", "port", "api"} & set(top.breakdown.matched_cues)
    assert "port" in top.breakdown.matched_terms
    assert result.trace is not None and result.trace.order[0] == "port"
    assert result.trace.candidate_count >= len(result)
    assert en.recall("which port does the API use?").trace is None


def test_trace_is_logged_at_debug(en: CueMap, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="cuemap_integrations"):
        en.recall("port 8001")
    assert any("recall trace" in r.message and "8001" in r.message for r in caplog.records)


def test_filters_types_sources_time(cm: CueMap, clock) -> None:
    cm.add("Backup the schema every night", memory_id="old", type="task", source="chat")
    clock.advance(days=10)
    cm.add(
        "Backup the schema before each release", memory_id="new", type="convention", source="docs"
    )
    assert cm.recall("schema backup", types=["task"]).memory_ids == ["old"]
    assert cm.recall("schema backup", types="convention").memory_ids == ["new"]
    assert cm.recall("schema backup", sources=["docs"]).memory_ids == ["new"]
    assert cm.recall("schema backup", since=clock.now - timedelta(days=1)).memory_ids == ["new"]
    assert cm.recall("schema backup", until=clock.now - timedelta(days=1)).memory_ids == ["old"]
    with pytest.raises(ValidationError) as info:
        cm.recall("schema", types=["opinion"])
    assert info.value.field == "types"


def test_namespaces_are_isolated(cm: CueMap) -> None:
    cm.add("Alice's API key rotates monthly", memory_id="a", namespace="alice")
    cm.add("Bob's API key rotates weekly", memory_id="b", namespace="bob")
    assert cm.recall("api key rotation", namespace="alice").memory_ids == ["a"]
    assert cm.recall("api key rotation", namespace="bob").memory_ids == ["b"]
    assert cm.recall("api key rotation").memory_ids == []


def test_expired_and_superseded_are_hidden_by_default(cm: CueMap, clock) -> None:
    cm.add(
        "Standup moved to 10am this week", memory_id="tmp", expires_at=clock.now + timedelta(days=1)
    )
    assert cm.recall("standup").memory_ids == ["tmp"]
    clock.advance(days=2)
    assert cm.recall("standup").memory_ids == []
    assert cm.recall("standup", include_expired=True).memory_ids == ["tmp"]
    cm.add("Orders API uses POST", memory_id="v1")
    cm.add("Orders API uses GET", memory_id="v2", supersedes="v1")
    assert cm.get("v1").superseded_by == "v2"
    assert cm.recall("orders api").memory_ids == ["v2"]
    assert set(cm.recall("orders api", include_superseded=True).memory_ids) == {"v1", "v2"}
    with pytest.raises(ValidationError) as info:
        cm.add("Orders API uses PUT", supersedes="missing")
    assert info.value.field == "supersedes"
    assert cm.recall("orders api").memory_ids == ["v2"]


def test_cue_hits_rank_ahead_of_tag_only_hits(cm: CueMap) -> None:
    cm.add("Rotate credentials quarterly", memory_id="tagged", tags=["security"], cues=["rotation"])
    cm.add("Security review of the login page is done", memory_id="cued", cues=["security"])
    result = cm.recall("security", explain=True)
    assert result.memory_ids == ["cued", "tagged"]
    assert result[1].breakdown.matched_tags == ("security",)


def test_min_score_and_k(en: CueMap) -> None:
    everything = en.recall("the api port cache order", k=10)
    assert len(everything) > 2
    assert len(en.recall("the api port cache order", k=2)) == 2
    cut = everything[1].score
    assert all(h.score >= cut for h in en.recall("the api port cache order", k=10, min_score=cut))
    for bad in (0, -1, 10_001, 2.5, True, "3"):
        with pytest.raises(ValidationError) as info:
            en.recall("api", k=bad)
        assert info.value.field == "k"


def test_recency_breaks_ties_toward_newer(cm: CueMap, clock) -> None:
    cm.add("Deploy window is Friday", memory_id="older")
    clock.advance(days=60)
    cm.add("Deploy window is Friday", memory_id="newer")
    assert cm.recall("deploy window").memory_ids == ["newer", "older"]
    flat = CueMap(clock=clock, config={"weights": {"recency": 0.0}})
    clock_now = clock.now
    flat.add(
        "Deploy window is Friday", memory_id="older", created_at=clock_now - timedelta(days=60)
    )
    flat.add("Deploy window is Friday", memory_id="newer")
    assert flat.recall("deploy window").memory_ids == ["older", "newer"]  # tie: insertion order


def test_access_is_counted_after_ranking(cm: CueMap) -> None:
    cm.add("Cache TTL is 300 seconds", memory_id="ttl")
    assert cm.get("ttl").access_count == 0
    first = cm.recall("cache ttl")
    assert first[0].memory.access_count == 0  # the record as scored
    assert cm.get("ttl").access_count == 1
    assert cm.get("ttl").last_accessed is not None
    off = CueMap(config={"track_access": False})
    off.add("Cache TTL is 300 seconds", memory_id="ttl")
    off.recall("cache ttl")
    assert off.get("ttl").access_count == 0


def test_frequency_penalty_is_configurable(clock) -> None:
    cm = CueMap(clock=clock, config={"weights": {"frequency": 1.0, "recency": 0.0}})
    cm.add("Deploy checklist lives in the wiki", memory_id="a")
    cm.add("Deploy checklist lives in the wiki", memory_id="b")
    assert cm.recall("deploy checklist", k=1).memory_ids == ["a"]
    assert cm.recall("deploy checklist", k=1).memory_ids == ["b"]  # "a" was penalised


def test_delete_leaves_no_trace_in_the_index(cm: CueMap) -> None:
    cm.add("Unique-term zebrafish lives here", memory_id="z", tags=["aquarium"])
    cm.add("Something else about cats", memory_id="c")
    index = cm._indexes["default"]
    cm.delete("z")
    assert all("z" != cm._records[s].memory_id for s in cm._records)
    for postings in (index.cues, index.tags, index.terms):
        assert all(len(b) > 0 for b in postings.values())
        assert not any(seq not in index.docs for b in postings.values() for seq in b)
    assert "zebrafish" not in index.cue_lexicon and "aquarium" not in index.tag_lexicon
    assert index.total_length == sum(d.length for d in index.docs.values())
    assert cm.recall("zebrafish").memory_ids == []
    cm.delete("c")
    assert "default" not in cm._indexes


def test_update_reindexes(cm: CueMap) -> None:
    cm.add("Logs are kept in Loki", memory_id="l")
    cm.update("l", content="Logs are kept in Elasticsearch", tags=["observability"])
    assert cm.recall("loki").memory_ids == []
    assert cm.recall("elasticsearch").memory_ids == ["l"]
    assert cm.recall("observability").memory_ids == ["l"]


def test_config_errors_list_valid_names() -> None:
    with pytest.raises(ConfigError) as info:
        RecallConfig.from_dict({"weights": {"popularity": 1.0}})
    assert "choose from cue, session, tag, content, recency, frequency, type" in str(info.value)
    with pytest.raises(ConfigError) as info:
        RecallConfig.from_dict({"halflife": 3})
    assert "half_life_days" in str(info.value)
    with pytest.raises(ConfigError):
        RecallConfig.from_dict({"half_life_days": 0})
    with pytest.raises(ConfigError):
        RecallConfig.from_dict({"type_priority": {"opinion": 1}})
    with pytest.raises(ConfigError):
        CueMap(config={"weights": {"cue": float("inf")}})


def test_config_from_toml(tmp_path) -> None:
    path = tmp_path / "cuemap.toml"
    path.write_text(
        'half_life_days = 7\naliases = [["k8s", "kubernetes"]]\n[weights]\nrecency = 0.5\n'
    )
    cfg = RecallConfig.from_toml(path)
    assert cfg.half_life_days == 7 and cfg.weights["recency"] == 0.5 and cfg.weights["cue"] == 1.0
    cm = CueMap(config=cfg)
    cm.add("Our kubernetes cluster runs in eu-west", memory_id="k")
    assert cm.recall("k8s region").memory_ids == ["k"]
    assert RecallConfig.from_dict(cfg.to_dict()) == cfg


async def test_async_twins(cm: CueMap) -> None:
    rec = await cm.aadd("Async memories work too", memory_id="as")
    assert rec.memory_id == "as"
    assert (await cm.arecall("async memories")).memory_ids == ["as"]
    assert len(await cm.aadd_many([{"content": "another async one"}])) == 1


def test_dates_and_units_match_however_they_are_written(cm: CueMap) -> None:
    cm.add("Caroline moved to New York on 8 May, 2023", memory_id="move")
    cm.add("The p95 latency budget is 5ms", memory_id="latency")
    cm.add("Unrelated memory about lunch", memory_id="lunch")
    assert cm.recall("what happened on 2023-05-08?").memory_ids[:1] == ["move"]
    assert "5ms" in cm.recall("is 5 ms the budget?", explain=True)[0].breakdown.matched_cues


def test_a_stop_word_is_never_joined_into_a_compound(cm: CueMap) -> None:
    cm.add("They drove away", memory_id="away")
    assert cm.recall("is there a way?").memory_ids == []


def test_stop_words_never_match_a_content_word_with_the_same_stem(cm: CueMap) -> None:
    cm.add("I bought one new book", memory_id="book")  # stem("one") == "on"
    result = cm.recall("what did we do on Monday?", explain=True)
    assert result.memory_ids == [] and result.trace is not None and result.trace.query_cues == ()


def test_one_query_word_counts_once_across_stems_and_aliases(cm: CueMap) -> None:
    cm.add("I will meet Jean", memory_id="meet")  # carries "meet" and, by alias, "meeting"
    cm.add("Lunch is at noon", memory_id="other")
    result = cm.recall("meeting", explain=True)
    cue_part = dict(result[0].breakdown.contributions)["cue"]
    assert result.trace is not None and len(result.trace.query_cues) >= 2
    assert cue_part == pytest.approx(cm.config.weights["cue"] * math.log(1 + 1.5 / 1.5))
