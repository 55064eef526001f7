"""CueMapRetriever: nodes, scores, filters, sessions, async, persistence, fusion, query engines."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core import Document, SummaryIndex  # noqa: E402
from llama_index.core.constants import DEFAULT_SIMILARITY_TOP_K  # noqa: E402
from llama_index.core.query_engine import RetrieverQueryEngine  # noqa: E402
from llama_index.core.retrievers import QueryFusionRetriever  # noqa: E402
from llama_index.core.schema import MetadataMode, QueryBundle, TextNode  # noqa: E402
from llama_index.retrievers.cuemap import CueMapRetriever  # noqa: E402

from cuemap_integrations import CueMap, DuplicateIdError, ValidationError  # noqa: E402
from tests.conftest import T0, FakeClock  # noqa: E402

from .conftest import FIX, MEMORIES, OTHER_FIX, TURN_1, TURN_2, RecordingLLM, fill  # noqa: E402


def texts(nodes: list) -> list[str]:
    return [n.node.get_content() for n in nodes]


# ----------------------------------------------------------------------------- nodes
def test_nodes_carry_the_memory_and_its_recall(store: CueMap) -> None:
    retriever = CueMapRetriever(store, similarity_top_k=3)
    nodes = retriever.retrieve("which port does the api use?")
    expected = store.recall("which port does the api use?", k=3)
    assert [n.node.node_id for n in nodes] == expected.memory_ids
    assert [n.score for n in nodes] == [h.score for h in expected]
    top = nodes[0].node
    assert isinstance(top, TextNode)
    assert (top.id_, top.text) == ("port", "The API uses port 8001")
    meta = top.metadata
    assert meta["memory_id"] == "port" and meta["type"] == "convention"
    assert meta["source"] == "ops" and meta["namespace"] == "default"
    assert meta["created_at"] == T0.isoformat() and meta["hit_source"] == "cue"
    assert meta["breakdown"] == expected[0].breakdown.as_dict()
    assert meta["conflicts"] == []


def test_scores_are_strictly_meaningful_and_descending(store: CueMap) -> None:
    nodes = CueMapRetriever(store, similarity_top_k=5).retrieve("how did we fix the order timeout?")
    scores = [n.score or 0.0 for n in nodes]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[-1] > 0


def test_llm_and_embedding_views_leave_out_diagnostics(store: CueMap) -> None:
    node = CueMapRetriever(store).retrieve("which port does the api use?")[0].node
    llm_view = node.get_content(metadata_mode=MetadataMode.LLM)
    assert "type: convention" in llm_view and "created_at: 2026-03-01" in llm_view
    for hidden in ("breakdown", "memory_id", "conflicts", "hit_source", "namespace"):
        assert hidden not in llm_view
    embed_view = node.get_content(metadata_mode=MetadataMode.EMBED)
    assert "created_at" not in embed_view and "breakdown" not in embed_view


def test_own_metadata_is_kept_and_never_overwritten(cm: CueMap) -> None:
    cm.add("The API uses port 8001", metadata={"team": "core", "type": "mine"})
    meta = CueMapRetriever(cm).retrieve("api port")[0].node.metadata
    assert meta["team"] == "core" and meta["memory_type"] == "mine" and meta["type"] == "note"


def test_node_hash_ignores_the_recall(store: CueMap) -> None:
    """Fusion merges by hash: the same memory from two recalls (or from a plain TextNode with
    its text and own metadata) is one node."""
    a = CueMapRetriever(store, similarity_top_k=5).retrieve("api port")
    b = CueMapRetriever(store, similarity_top_k=5).retrieve("which port does the api use?")
    node_a = next(n.node for n in a if n.node.node_id == "port")
    node_b = next(n.node for n in b if n.node.node_id == "port")
    assert node_a.metadata["breakdown"] != node_b.metadata["breakdown"]
    assert node_a.hash == node_b.hash == TextNode(text="The API uses port 8001").hash


# ----------------------------------------------------------------------------- options
def test_top_k_defaults_to_llama_index_and_is_honoured(store: CueMap) -> None:
    retriever = CueMapRetriever(store)
    assert retriever.similarity_top_k == DEFAULT_SIMILARITY_TOP_K
    assert len(retriever.retrieve("fixed order timeout cache port")) == DEFAULT_SIMILARITY_TOP_K
    retriever.similarity_top_k = 1
    assert len(retriever.retrieve("fixed order timeout cache port")) == 1


@pytest.mark.parametrize(
    "options",
    [
        {"types": ["convention"]},
        {"types": "fact", "sources": ["ops"]},
        {"sources": ["elsewhere"]},
        {"since": "2026-03-02T00:00:00+00:00"},
        {"until": T0},
        {"min_score": 2.0},
    ],
)
def test_filters_match_the_core(store: CueMap, options: dict) -> None:
    retriever = CueMapRetriever(store, similarity_top_k=5, **options)
    query = "fixed the order timeout, api port, db schema"
    got = [n.node.node_id for n in retriever.retrieve(query)]
    assert got == store.recall(query, k=5, **options).memory_ids


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"similarity_top_k": 0}, "similarity_top_k"),
        ({"similarity_top_k": True}, "similarity_top_k"),
        ({"types": ["opinion"]}, "types"),
        ({"since": "yesterday"}, "since"),
        ({"namespace": ""}, "namespace"),
        ({"session_id": ""}, "session_id"),
        ({"min_score": "high"}, "min_score"),
    ],
)
def test_bad_options_fail_at_construction(store: CueMap, options: dict, field: str) -> None:
    with pytest.raises(ValidationError) as err:
        CueMapRetriever(store, **options)
    assert err.value.field == field


def test_namespaces_do_not_leak(store: CueMap) -> None:
    store.add("The tenant-b API uses port 9000", namespace="tenant-b", memory_id="b-port")
    a = CueMapRetriever(store, similarity_top_k=5).retrieve("api port")
    b = CueMapRetriever(store, similarity_top_k=5, namespace="tenant-b").retrieve("api port")
    assert "b-port" not in [n.node.node_id for n in a]
    assert [n.node.node_id for n in b] == ["b-port"]


# ----------------------------------------------------------------------------- sessions
def test_session_turn_two_finds_what_only_continuous_recall_can(store: CueMap) -> None:
    stateless = CueMapRetriever(store, similarity_top_k=1)
    assert OTHER_FIX in texts(stateless.retrieve(TURN_2))[0]
    chat = CueMapRetriever(store, similarity_top_k=1, session_id="thread-1")
    assert "Redis cache expired" in texts(chat.retrieve(TURN_1))[0]
    turn_2 = chat.retrieve(TURN_2)
    assert FIX in texts(turn_2)[0]
    assert turn_2[0].node.metadata["breakdown"]["session_cues"]
    assert chat.session is not None and chat.session.turn == 2


def test_sessions_do_not_leak(store: CueMap) -> None:
    CueMapRetriever(store, session_id="thread-1").retrieve(TURN_1)
    other = CueMapRetriever(store, similarity_top_k=1, session_id="thread-2")
    assert OTHER_FIX in texts(other.retrieve(TURN_2))[0]


async def test_aretrieve_is_really_async(store: CueMap, monkeypatch: pytest.MonkeyPatch) -> None:
    retriever = CueMapRetriever(store, similarity_top_k=3, session_id="async-1")
    sync_nodes = CueMapRetriever(store, similarity_top_k=3).retrieve(TURN_1)

    def no_sync(query_bundle: QueryBundle) -> list:
        raise AssertionError("aretrieve must not call the synchronous _retrieve")

    monkeypatch.setattr(retriever, "_retrieve", no_sync)
    awaited: list[str] = []
    session = retriever.session
    assert session is not None
    real = session.arecall

    async def spy(query: str, **kwargs: object) -> object:
        awaited.append(query)
        return await real(query, **kwargs)

    monkeypatch.setattr(session, "arecall", spy)
    nodes = await retriever.aretrieve(TURN_1)
    assert awaited == [TURN_1]
    assert [n.node.node_id for n in nodes] == [n.node.node_id for n in sync_nodes]
    assert FIX in texts(await retriever.aretrieve(TURN_2))[0]


async def test_aretrieve_without_session_uses_arecall(
    store: CueMap, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real = store.arecall

    async def spy(query: str, **kwargs: object) -> object:
        calls.append(query)
        return await real(query, **kwargs)

    monkeypatch.setattr(store, "arecall", spy)
    nodes = await CueMapRetriever(store, similarity_top_k=1).aretrieve("api port")
    assert calls == ["api port"] and nodes[0].node.node_id == "port"


# ----------------------------------------------------------------------------- from_defaults
def test_from_defaults_texts() -> None:
    retriever = CueMapRetriever.from_defaults(texts=[c for _, c, _ in MEMORIES], similarity_top_k=1)
    assert texts(retriever.retrieve("which port does the api use?")) == ["The API uses port 8001"]
    retriever.close()


def test_from_defaults_nodes_and_documents_keep_ids_and_metadata() -> None:
    nodes = [TextNode(id_="n1", text="The API uses port 8001", metadata={"file": "a.md"})]
    retriever = CueMapRetriever.from_defaults(nodes=nodes)
    node = retriever.retrieve("api port")[0].node
    assert (node.node_id, node.metadata["file"]) == ("n1", "a.md")
    retriever.close()
    docs = [Document(doc_id="d1", text="Never change the DB schema without a backup")]
    retriever = CueMapRetriever.from_defaults(documents=docs)
    assert retriever.retrieve("db schema")[0].node.node_id == "d1"
    retriever.close()


def test_from_defaults_on_a_file_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "mem.db"
    nodes = [TextNode(id_="n1", text="The API uses port 8001")]
    CueMapRetriever.from_defaults(nodes=nodes, path=path).close()
    again = CueMapRetriever.from_defaults(nodes=nodes, path=path)
    assert len(again.cuemap) == 1
    again.close()
    changed = [TextNode(id_="n1", text="The API uses port 9000")]
    with pytest.raises(DuplicateIdError):
        CueMapRetriever.from_defaults(nodes=changed, path=path)


def test_from_defaults_with_an_open_store_leaves_it_open(store: CueMap) -> None:
    retriever = CueMapRetriever.from_defaults(cuemap=store, texts=["Deploys happen on Fridays"])
    retriever.close()
    assert store.recall("when are deploys?", k=1)[0].content == "Deploys happen on Fridays"


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"texts": ["a"], "nodes": [TextNode(text="b")]},
        {"texts": "one string"},
        {"cuemap": "store", "path": ":memory:"},
    ],
)
def test_from_defaults_refuses_ambiguous_input(store: CueMap, options: dict) -> None:
    options = {k: store if v == "store" else v for k, v in options.items()}
    with pytest.raises(ValidationError):
        CueMapRetriever.from_defaults(**options)


# ----------------------------------------------------------------------------- persistence
def test_persist_and_load_give_the_same_retriever(
    store: CueMap, clock: FakeClock, tmp_path: Path
) -> None:
    retriever = CueMapRetriever(store, similarity_top_k=1, session_id="thread-1", types=["fact"])
    retriever.retrieve(TURN_1)  # turn 1 before saving ...
    retriever.persist(tmp_path / "saved")
    assert stat.S_IMODE(os.stat(tmp_path / "saved" / "cuemap.db").st_mode) == 0o600
    loaded = CueMapRetriever.from_persist_dir(tmp_path / "saved", store_options={"clock": clock})
    try:
        assert loaded.get_persist_args() == retriever.get_persist_args()
        turn_2 = loaded.retrieve(TURN_2)  # turn 2 after loading: the session resumed
        assert FIX in texts(turn_2)[0]
        same = [(n.node.node_id, n.score) for n in retriever.retrieve(TURN_2)]
        assert [(n.node.node_id, n.score) for n in turn_2] == same
    finally:
        loaded.close()


def test_persist_a_file_store_and_into_its_own_directory(tmp_path: Path) -> None:
    retriever = CueMapRetriever.from_defaults(
        texts=["The API uses port 8001"], path=tmp_path / "cuemap.db"
    )
    retriever.persist(tmp_path)  # the store already lives there: only the settings are written
    retriever.persist(tmp_path / "copy")
    retriever.close()
    for directory in (tmp_path, tmp_path / "copy"):
        loaded = CueMapRetriever.from_persist_dir(directory, similarity_top_k=1)
        assert texts(loaded.retrieve("api port")) == ["The API uses port 8001"]
        loaded.close()


def test_from_persist_dir_refuses_other_directories(tmp_path: Path) -> None:
    with pytest.raises(ValidationError):
        CueMapRetriever.from_persist_dir(tmp_path)


def test_persist_keeps_the_recall_config(clock: FakeClock, tmp_path: Path) -> None:
    with CueMap(
        clock=clock, config={"weights": {"recency": 0.0}, "aliases": [["k8s", "kubernetes"]]}
    ) as cm:
        fill(cm)
        CueMapRetriever(cm).persist(tmp_path)
        loaded = CueMapRetriever.from_persist_dir(tmp_path)
        assert loaded.cuemap.config == cm.config
        loaded.close()


# ----------------------------------------------------------------------------- frameworks
def _bm25(nodes: list[TextNode]):  # type: ignore[no-untyped-def]
    bm25 = pytest.importorskip("llama_index.retrievers.bm25")
    return bm25.BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=3)


@pytest.mark.parametrize("mode", ["relative_score", "reciprocal_rerank", "dist_based_score"])
def test_query_fusion_with_bm25(mode: str) -> None:
    nodes = [TextNode(id_=i, text=c) for i, c, _ in MEMORIES]
    cuemap = CueMapRetriever.from_defaults(nodes=nodes, similarity_top_k=3)
    fusion = QueryFusionRetriever(
        [cuemap, _bm25(nodes)], llm=RecordingLLM(), mode=mode, num_queries=1, similarity_top_k=3
    )
    fused = fusion.retrieve("which port does the api use?")
    ids = [n.node.node_id for n in fused]
    assert ids[0] == "port" and len(ids) == len(set(ids))  # one node per memory
    scores = [n.score or 0.0 for n in fused]
    assert scores == sorted(scores, reverse=True)
    cuemap.close()


async def test_query_fusion_runs_our_async_path(monkeypatch: pytest.MonkeyPatch) -> None:
    nodes = [TextNode(id_=i, text=c) for i, c, _ in MEMORIES]
    cuemap = CueMapRetriever.from_defaults(nodes=nodes, similarity_top_k=2)

    def no_sync(query_bundle: QueryBundle) -> list:
        raise AssertionError("fusion's async path must await _aretrieve")

    monkeypatch.setattr(cuemap, "_retrieve", no_sync)
    fusion = QueryFusionRetriever(
        [cuemap, _bm25(nodes)], llm=RecordingLLM(), mode="relative_score", num_queries=1
    )
    fused = await fusion.aretrieve("never change the db schema")
    assert fused[0].node.node_id == "schema"
    cuemap.close()


def test_query_engine_with_the_retriever_swapped(store: CueMap) -> None:
    llm = RecordingLLM()
    docs = SummaryIndex.from_documents([Document(text="Release notes live in docs/CHANGELOG.md")])
    before = RetrieverQueryEngine.from_args(docs.as_retriever(), llm=llm)
    before.query("how did we fix the order timeout?")
    assert FIX not in llm.prompts[-1]

    engine = RetrieverQueryEngine.from_args(CueMapRetriever(store, similarity_top_k=1), llm=llm)
    response = engine.query("how did we fix the order timeout?")
    assert FIX in llm.prompts[-1] and "type: fact" in llm.prompts[-1]
    assert "breakdown" not in llm.prompts[-1]
    assert [n.node.node_id for n in response.source_nodes] == ["fix"]
