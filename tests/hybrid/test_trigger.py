"""The fallback's evidence test: strong rule hits stay on top in their order, weak ones go under
the dense fills, and a recall whose hits are all strong never embeds the query."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from cuemap_integrations import CueMap
from tests.conftest import T0, FakeClock

from .fakes import FakeEmbedder, hybrid_store, needs_dense

pytestmark = needs_dense

QUERY = "berlin parcel shipping"  # content terms: berlin, parcel, ship


def load(cm: CueMap, namespace: str = "default") -> None:
    add = cm.add
    add(
        "Berlin warehouse ships parcels on Monday", type="fact", memory_id="s1", namespace=namespace
    )
    add("Parcels for Berlin ship from gate 4", type="fact", memory_id="s2", namespace=namespace)
    add("Berlin has nice museums", type="note", memory_id="w1", namespace=namespace)
    add("Deliveries leave the dock at noon", type="fact", memory_id="d1", namespace=namespace)


def sources(hits: object) -> list[tuple[str, str]]:
    return [(h.memory_id, h.source) for h in hits]  # type: ignore[attr-defined]


def test_strong_hits_stay_on_top_in_order_and_weak_ones_go_under_dense_fills(
    hcm: CueMap, fake: FakeEmbedder
) -> None:
    load(hcm)
    plain = CueMap(clock=FakeClock())  # the same memories without the dense side
    load(plain)
    rules = plain.recall(QUERY, k=5)
    assert sources(rules)[-1] == ("w1", "cue")  # one of three terms: weak
    strong = [h for h in rules if h.memory_id in ("s1", "s2")]
    fake.calls.clear()
    hits = hcm.recall(QUERY, k=5)
    assert fake.calls == [[QUERY]]  # two strong hits < 5 places: the query is embedded once
    assert hits.hits[:2] == tuple(strong)  # same hits, same order, same scores
    assert sources(hits)[2:] == [("d1", "dense"), ("w1", "cue")]
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True) and scores[2] < scores[1]
    assert hits[3].breakdown == rules[2].breakdown  # the weak hit keeps its explanation


def test_a_weak_hit_the_vectors_agree_with_comes_first_and_says_why(hcm: CueMap) -> None:
    load(hcm)
    hcm.add("Parcel lockers are cheap", type="fact", memory_id="w2")  # one term; parcel concept
    plain = {h.memory_id: h for h in hcm.recall(QUERY, k=6, hybrid=False)}
    assert plain["w2"].source == "cue"
    hits = hcm.recall(QUERY, k=6)
    assert sources(hits)[2:] == [("w2", "dense"), ("d1", "dense"), ("w1", "cue")]
    agreed = hits[2].breakdown
    name, similarity = agreed.contributions[0]
    assert name == "dense" and similarity > 0.9
    assert agreed.contributions[1:] == plain["w2"].breakdown.contributions  # the rules' why too
    assert agreed.matched_terms == ("parcel",)
    only_dense = hits[3].breakdown
    assert [n for n, _ in only_dense.contributions] == ["dense"] and only_dense.matched_terms == ()


def test_all_strong_hits_never_embed_the_query(hcm: CueMap, fake: FakeEmbedder) -> None:
    load(hcm)
    fake.calls.clear()
    hits = hcm.recall(QUERY, k=2)
    assert sources(hits) == [(hits[0].memory_id, "cue"), (hits[1].memory_id, "cue")]
    assert {h.memory_id for h in hits} == {"s1", "s2"}
    assert fake.calls == []
    stats = hcm.extension.stats()  # type: ignore[union-attr]
    assert (stats.recalls, stats.insufficient, stats.fired) == (1, 0, 0)


def test_min_results_counts_strong_hits_only(clock: FakeClock) -> None:
    fake = FakeEmbedder()
    cm = hybrid_store(clock, fake, min_results=2)
    load(cm)
    fake.calls.clear()
    assert sources(cm.recall(QUERY, k=5))[:2] == [("s1", "cue"), ("s2", "cue")]
    assert fake.calls == []  # two strong hits are enough, though three places are weak or empty
    cm.recall("berlin museums by bike", k=5)  # only w1 matches two of its three terms
    assert len(fake.calls) == 1


def test_min_coverage_sets_the_bar(clock: FakeClock) -> None:
    fake = FakeEmbedder()
    cm = hybrid_store(clock, fake, min_coverage=0.3)
    load(cm)
    fake.calls.clear()
    hits = cm.recall(QUERY, k=3)  # w1 matched one term of three: strong at 0.3
    assert sources(hits) == [("s1", "cue"), ("s2", "cue"), ("w1", "cue")] or fake.calls == []
    assert fake.calls == []


def test_max_fill_caps_the_dense_fills(clock: FakeClock) -> None:
    fake = FakeEmbedder()
    cm = hybrid_store(clock, fake, max_fill=1)
    load(cm)
    cm.add("Couriers deliver on weekdays", type="fact", memory_id="d2")
    hits = cm.recall(QUERY, k=6)
    assert [s for _, s in sources(hits)].count("dense") == 1
    assert sources(hits)[2:] == [(hits[2].memory_id, "dense"), ("w1", "cue")]


def test_no_fill_found_keeps_the_rules_order(clock: FakeClock) -> None:
    fake = FakeEmbedder()
    cm = hybrid_store(clock, fake)
    cm.add("Berlin has nice museums", type="note", memory_id="w1")
    cm.add("Berlin warehouse ships parcels on Monday", type="fact", memory_id="s1")
    query = "berlin museums by bike"  # two of three terms at best; no memory is about bikes
    plain = CueMap(clock=FakeClock())
    plain.add("Berlin has nice museums", type="note", memory_id="w1")
    plain.add("Berlin warehouse ships parcels on Monday", type="fact", memory_id="s1")
    assert cm.recall(query, k=3).hits == plain.recall(query, k=3).hits  # nothing similar enough
    assert cm.extension.stats().fired == 1  # type: ignore[union-attr]


def test_a_query_without_content_terms_counts_cue_matches(hcm: CueMap, fake: FakeEmbedder) -> None:
    hcm.add("Never change the DB schema without a backup", type="convention", memory_id="schema")
    hcm.add("Backups of the parcel database run nightly", type="fact", memory_id="nightly")
    fake.calls.clear()
    hits = hcm.recall("what about it?", k=2, extra_cues=["backup"])
    assert {h.memory_id for h in hits} == {"schema", "nightly"}
    assert all(h.source == "cue" for h in hits) and fake.calls == []


def test_dense_fills_respect_filters_and_namespaces(clock: FakeClock) -> None:
    fake = FakeEmbedder()
    cm = hybrid_store(clock, fake)
    load(cm)
    load(cm, namespace="other")
    cm.add("Deliveries in the other team go by van", type="fact", memory_id="van",
           namespace="other")  # fmt: skip
    cm.add("I like deliveries before noon", type="preference", memory_id="pref")
    cm.add("Old deliveries went by rail", type="fact", memory_id="rail",
           created_at=T0 - timedelta(days=30))  # fmt: skip
    hits = cm.recall(QUERY, k=8)
    assert {h.memory.namespace for h in hits} == {"default"}
    assert "van" not in hits.memory_ids and {"pref", "rail", "d1"} <= set(hits.memory_ids)
    facts = cm.recall(QUERY, k=8, types=["fact"])
    assert {h.memory.type.value for h in facts} == {"fact"} and "pref" not in facts.memory_ids
    recent = cm.recall(QUERY, k=8, since=T0 - timedelta(days=1))
    assert "rail" not in recent.memory_ids and "d1" in recent.memory_ids


def test_the_log_says_why_the_fallback_fired(hcm: CueMap, caplog: pytest.LogCaptureFixture) -> None:
    load(hcm)
    with caplog.at_level(logging.DEBUG, logger="cuemap_integrations"):
        hcm.recall(QUERY, k=5)
    assert "2 of 5 needed hits matched >= 60% of 3 query terms; 1 dense fills above 1 weak" in (
        caplog.text
    )
