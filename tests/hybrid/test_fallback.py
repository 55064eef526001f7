"""Fallback mode: the query is embedded only when the rules find too little, and dense hits fill
the empty places after the deterministic ones, with scores that keep the list descending."""

from __future__ import annotations

import pytest

from cuemap_integrations import CueMap, ValidationError
from cuemap_integrations.hybrid import DEFAULT_THRESHOLDS, HybridRecall
from cuemap_integrations.records import MemoryType
from tests.conftest import FakeClock

from .fakes import FakeEmbedder, hybrid_store, needs_dense, unit

pytestmark = needs_dense


def load(cm: CueMap) -> None:
    cm.add("I prefer afternoon deliveries", type="preference", memory_id="pref")
    cm.add("Shipping goes out from the Berlin warehouse", type="fact", memory_id="berlin")
    cm.add("The API uses port 8001", type="convention", memory_id="port")
    cm.add("Never change the DB schema without a backup", type="convention", memory_id="schema")
    cm.add("Repaired my bike's flat tyre on Sunday", type="event", memory_id="bike")


def test_enough_deterministic_hits_never_embed_the_query(hcm: CueMap, fake: FakeEmbedder) -> None:
    load(hcm)
    hcm.add("The admin UI uses API port 8001 too", type="fact", memory_id="admin")
    hcm.add("The worker API uses port 8002", type="fact", memory_id="worker")
    fake.calls.clear()
    hits = hcm.recall("which port does the api use?", k=3)
    assert len(hits) == 3 and all(hit.source == "cue" for hit in hits)
    assert fake.calls == []  # three hits matching every query term fill k: no embedding at all
    stats = hcm.extension.stats()  # type: ignore[union-attr]
    assert (stats.recalls, stats.insufficient, stats.fired) == (1, 0, 0)


def test_dense_fills_the_gap_after_the_deterministic_hits(hcm: CueMap, fake: FakeEmbedder) -> None:
    load(hcm)
    plain = [h.memory_id for h in CueMap(clock=FakeClock()).recall("x")]  # sanity: empty store
    assert plain == []
    fake.calls.clear()
    hits = hcm.recall("when do we ship?", k=4)
    ids = [hit.memory_id for hit in hits]
    assert ids[0] == "berlin" and hits[0].source == "cue"  # "ship" matches by rule
    assert ids[1:] == ["pref"] and hits[1].source == "dense"  # "deliveries": dense only
    assert fake.calls == [["when do we ship?"]]  # the query, once
    dense = hits[1]
    assert dense.breakdown.contributions[0][0] == "dense"
    similarity = dense.breakdown.contributions[0][1]
    assert similarity >= DEFAULT_THRESHOLDS[MemoryType.PREFERENCE]
    assert dense.score < hits[0].score  # descending: the LlamaIndex adapter relies on it
    assert dense.score == pytest.approx(hits[0].score * 0.999 * similarity)


def test_dense_only_scores_are_similarities(hcm: CueMap) -> None:
    load(hcm)
    hits = hcm.recall("parcel timing?", k=3)
    # "Shipping" is all parcel; "afternoon deliveries" half parcel, half afternoon
    assert [(h.memory_id, h.source) for h in hits] == [("berlin", "dense"), ("pref", "dense")]
    assert hits[0].score == pytest.approx(hits[0].breakdown.contributions[0][1])


def test_deterministic_hits_keep_their_order_and_are_not_repeated(hcm: CueMap) -> None:
    load(hcm)
    hcm.add("Deliveries in the afternoon need a signature", type="fact", memory_id="sign")
    plain = hcm.recall("afternoon deliveries", k=5)
    det = [h.memory_id for h in plain if h.source == "cue"]
    assert det[:2] == ["pref", "sign"] or det[:2] == ["sign", "pref"]
    ids = [h.memory_id for h in plain]
    assert len(ids) == len(set(ids))  # a dense match already found by rule is not added again
    assert [h.source for h in plain] == sorted(
        (h.source for h in plain), key=("cue", "dense").index
    )
    scores = [h.score for h in plain]
    assert scores == sorted(scores, reverse=True)


def test_min_score_floor_decides_what_counts_as_enough(clock: FakeClock) -> None:
    fake = FakeEmbedder()
    strict = hybrid_store(clock, fake, min_results=1, min_score=1e6)
    load(strict)
    fake.calls.clear()
    hits = strict.recall("which port does the api use?", k=3)
    assert fake.calls == [["which port does the api use?"]]  # a hit, but under the floor
    assert hits[0].memory_id == "port" and hits[0].source == "dense"  # placed by the vectors
    assert [name for name, _ in hits[0].breakdown.contributions][:2] == ["dense", "cue"]
    stats = strict.extension.stats()  # type: ignore[union-attr]
    assert stats.insufficient == 1 and stats.fired == 1


def test_min_results_is_capped_by_k(hcm: CueMap, fake: FakeEmbedder) -> None:
    load(hcm)
    fake.calls.clear()
    assert [h.memory_id for h in hcm.recall("which port does the api use?", k=1)] == ["port"]
    assert fake.calls == []  # k=1 and one hit: enough


def test_a_full_list_of_weak_hits_goes_under_the_dense_fills(clock: FakeClock) -> None:
    fake = FakeEmbedder()
    cm = hybrid_store(clock, fake, min_score=1e6, min_results=1)
    load(cm)
    cm.add("Parcels ship from the port warehouse", type="fact", memory_id="parcels")
    plain = cm.recall("port of the api", k=2, hybrid=False)
    assert plain.memory_ids == ["port", "parcels"]  # both weak: under the score floor
    fake.calls.clear()
    hits = cm.recall("port of the api", k=2)
    assert fake.calls == [["port of the api"]]
    # "port" the vectors agree with (similarity 1); "parcels" is under its threshold: kept below
    assert [(h.memory_id, h.source) for h in hits] == [("port", "dense"), ("parcels", "cue")]
    assert hits[0].score > hits[1].score


def test_thresholds_are_per_type(clock: FakeClock) -> None:
    query = "zzz"  # no rule matches
    vectors = {query: [1.0, 0.0], "a preference": unit(0.36), "a fact": unit(0.44),
               "a task": unit(0.52), "an event": unit(0.39), "a note": unit(0.43)}  # fmt: skip
    fake = FakeEmbedder(dimension=2, vectors=vectors)
    cm = hybrid_store(clock, fake)
    for text, kind in [("a preference", "preference"), ("a fact", "fact"), ("a task", "task"),
                       ("an event", "event"), ("a note", "note")]:  # fmt: skip
        cm.add(text, type=kind, memory_id=kind)
    ids = [h.memory_id for h in cm.recall(query, k=5)]
    # preference 0.36 >= 0.34, task 0.52 >= 0.50, note 0.43 >= 0.42; fact 0.44 < 0.46, event 0.39 < 0.40
    assert ids == ["task", "note", "preference"]  # by similarity
    looser = hybrid_store(
        clock, FakeEmbedder(dimension=2, vectors=vectors), thresholds={"fact": 0.4}
    )
    for text, kind in [("a fact", "fact"), ("an event", "event")]:
        looser.add(text, type=kind, memory_id=kind)
    assert [h.memory_id for h in looser.recall(query, k=5)] == ["fact"]


def test_a_failing_query_embedding_returns_the_deterministic_hits(
    hcm: CueMap, fake: FakeEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    load(hcm)
    fake.fail = 1
    hits = hcm.recall("when do we ship?", k=4)
    assert [h.memory_id for h in hits] == ["berlin"]
    assert "dense search failed" in caplog.text
    assert hcm.extension.stats().errors == 1  # type: ignore[union-attr]


def test_session_recalls_use_the_fallback(hcm: CueMap) -> None:
    load(hcm)
    session = hcm.session("chat-1")
    hits = session.recall("parcel timing?", k=2)
    assert [(h.memory_id, h.source) for h in hits] == [("berlin", "dense"), ("pref", "dense")]


def test_recall_convenience_and_stats(hcm: CueMap) -> None:
    load(hcm)
    hybrid = hcm.extension
    assert isinstance(hybrid, HybridRecall)
    assert hybrid.recall("parcel timing?").memory_ids == ["berlin", "pref"]
    stats = hybrid.stats()
    assert stats.fire_rate == 1.0 and stats.dense_hits == 2 and stats.index.vectors == 5
    data = stats.as_dict()
    assert data["fired"] == 1 and data["index"]["kind"] == "faiss" and data["dense_seconds"] >= 0


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"mode": "blend"}, "mode"),
        ({"min_results": 0}, "min_results"),
        ({"min_results": 2.5}, "min_results"),
        ({"min_coverage": 1.5}, "min_coverage"),
        ({"min_coverage": "most"}, "min_coverage"),
        ({"max_fill": 0}, "max_fill"),
        ({"max_fill": True}, "max_fill"),
        ({"thresholds": {"opinion": 0.3}}, "thresholds"),
        ({"thresholds": {"fact": 2.0}}, "thresholds['fact']"),
        ({"fuse_weights": (0.0, 0.0)}, "fuse_weights"),
        ({"fuse_weights": (1.0,)}, "fuse_weights"),
        ({"rrf_k": 0}, "rrf_k"),
        ({"index": object()}, "embedder"),  # an index embeds: not both
    ],
)
def test_bad_options_name_the_parameter(
    clock: FakeClock, options: dict[str, object], field: str
) -> None:
    with pytest.raises(ValidationError) as info:
        hybrid_store(clock, FakeEmbedder(), **options)
    assert info.value.field == field


def test_index_must_be_an_index(clock: FakeClock) -> None:
    with pytest.raises(ValidationError, match="a DenseIndex, a LangChainVectorIndex"):
        CueMap(clock=clock, hybrid={"index": object()})


def test_bad_mode_lists_the_choices(clock: FakeClock) -> None:
    with pytest.raises(ValidationError, match="choose from fallback, fuse"):
        hybrid_store(clock, FakeEmbedder(), mode="blend")


def test_close_detaches(hcm: CueMap, fake: FakeEmbedder) -> None:
    load(hcm)
    hybrid = hcm.extension
    assert isinstance(hybrid, HybridRecall)
    hybrid.close()
    assert hcm.extension is None
    fake.calls.clear()
    hcm.add("Another parcel note", memory_id="late")
    assert hcm.recall("parcel timing?").memory_ids == ["late"]
    assert fake.calls == []  # detached: no embedding on write or recall
