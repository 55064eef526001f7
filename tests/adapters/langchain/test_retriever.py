"""CueMapRetriever: the standard LangChain retriever suite, continuous recall, metadata, writes."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

pytest.importorskip("langchain_core")

from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from langchain_cuemap import CueMapRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests

from cuemap_integrations import CueMap, DuplicateIdError, MemoryRecord, ScoreBreakdown
from cuemap_integrations.events import RecallRequest
from cuemap_integrations.results import Hit
from tests.conftest import FakeClock

from .fakes import FIX, TURN_1, TURN_2, load_orders


def _standard_store() -> CueMap:
    cm = CueMap()
    cm.add_many(
        {"content": f"Deploy note {n}: the deploy pipeline step {n} uses port 80{n:02d}"}
        for n in range(6)
    )
    return cm


class TestStandardSuite(RetrieversIntegrationTests):
    """langchain-tests' own conformance suite (k in the constructor and per call, async)."""

    @property
    def retriever_constructor(self) -> type[CueMapRetriever]:
        return CueMapRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"cuemap": _standard_store()}

    @property
    def retriever_query_example(self) -> str:
        return "which port does the deploy pipeline use?"


@pytest.fixture
def orders(clock: FakeClock) -> CueMap:
    return load_orders(CueMap(clock=clock))


def _ids(documents: Sequence[Document]) -> list[str | None]:
    return [doc.id for doc in documents]


def test_default_k_is_four_like_langchain_retrievers(orders: CueMap) -> None:
    retriever = CueMapRetriever(cuemap=orders)
    assert retriever.k == 4
    assert len(retriever.invoke("fixed the order timeout and the api port")) == 4


def test_document_carries_id_content_and_why(orders: CueMap, clock: FakeClock) -> None:
    orders.add("Deploys go out on Tuesdays", memory_id="deploy", metadata={"team": "ops"},
               source="wiki.md", type="convention")  # fmt: skip
    [doc] = CueMapRetriever(cuemap=orders, k=1).invoke("when do deploys go out?")
    assert doc.id == "deploy" and doc.page_content == "Deploys go out on Tuesdays"
    meta = doc.metadata
    assert meta["memory_id"] == "deploy" and meta["team"] == "ops"
    assert meta["source"] == "cue" and meta["memory_source"] == "wiki.md"
    assert meta["type"] == "convention" and meta["namespace"] == "default"
    assert meta["created_at"] == clock.now.isoformat() and meta["conflicts"] == []
    assert meta["score"] == pytest.approx(sum(meta["breakdown"]["contributions"].values()))
    assert "deploy" in " ".join(meta["breakdown"]["matched_cues"])


def test_changing_a_document_does_not_change_the_store(orders: CueMap) -> None:
    orders.add("Deploys go out on Tuesdays", memory_id="deploy", metadata={"days": ["tue"]})
    [doc] = CueMapRetriever(cuemap=orders, k=1).invoke("deploys")
    doc.metadata["days"].append("wed")
    assert orders.get("deploy").metadata == {"days": ["tue"]}


def test_conflicts_are_reported(clock: FakeClock) -> None:
    cm = CueMap(clock=clock)
    cm.add("The orders API uses POST", memory_id="post", type="fact")
    clock.advance(days=1)
    cm.add("The orders API uses GET", memory_id="get", type="fact")
    docs = CueMapRetriever(cuemap=cm, k=2).invoke("orders api method")
    assert {doc.id: doc.metadata["conflicts"] for doc in docs} == {"post": ["get"], "get": ["post"]}


def test_stateless_without_a_session(orders: CueMap) -> None:
    retriever = CueMapRetriever(cuemap=orders, k=1)
    retriever.invoke(TURN_1)
    assert _ids(retriever.invoke(TURN_2)) == ["login"]


@pytest.mark.parametrize(
    "how",
    ["field", "kwarg", "configurable.session_id", "configurable.thread_id", "batch"],
)
def test_each_call_in_a_session_is_one_turn(orders: CueMap, how: str) -> None:
    fields: dict[str, Any] = {"session_id": "chat-1"} if how == "field" else {}
    retriever = CueMapRetriever(cuemap=orders, k=1, **fields)
    kwargs: dict[str, Any] = {"session_id": "chat-1"} if how == "kwarg" else {}
    key = how.split(".")[-1]
    config: Any = {"configurable": {key: "chat-1"}} if how.startswith("conf") else None
    if how == "batch":
        config = {"configurable": {"thread_id": "chat-1"}}
        assert _ids(retriever.batch([TURN_1], config)[0]) == ["cause"]
        assert _ids(retriever.batch([TURN_2], config)[0]) == ["fix"]
        return
    assert _ids(retriever.invoke(TURN_1, config, **kwargs)) == ["cause"]
    assert _ids(retriever.invoke(TURN_2, config, **kwargs)) == ["fix"]
    assert orders.session("chat-1").turn == 2


def test_per_call_session_wins_over_config_and_field(orders: CueMap) -> None:
    retriever = CueMapRetriever(cuemap=orders, k=1, session_id="field")
    config: Any = {"configurable": {"thread_id": "config"}}
    retriever.invoke(TURN_1, config, session_id="kwarg")
    assert [orders.session(s).turn for s in ("kwarg", "config", "field")] == [1, 0, 0]
    retriever.invoke(TURN_1, config)
    retriever.invoke(TURN_1)
    assert [orders.session(s).turn for s in ("kwarg", "config", "field")] == [1, 1, 1]


def test_session_id_reaches_the_retriever_inside_a_chain(orders: CueMap) -> None:
    chain = RunnableLambda(lambda q: q) | CueMapRetriever(cuemap=orders, k=1)
    config: Any = {"configurable": {"thread_id": "t-9"}}
    chain.invoke(TURN_1, config)
    assert _ids(chain.invoke(TURN_2, config)) == ["fix"]


def test_sessions_do_not_leak_into_each_other(orders: CueMap) -> None:
    retriever = CueMapRetriever(cuemap=orders, k=1)
    retriever.invoke(TURN_1, session_id="a")
    assert _ids(retriever.invoke(TURN_2, session_id="b")) == ["login"]
    assert _ids(retriever.invoke(TURN_2, session_id="a")) == ["fix"]


async def test_ainvoke_is_a_session_turn_off_the_event_loop(orders: CueMap) -> None:
    retriever = CueMapRetriever(cuemap=orders, k=1)
    threads: list[threading.Thread] = []
    real = orders._recall

    def spy(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread())
        return real(*args, **kwargs)

    orders._recall = spy  # type: ignore[method-assign]
    config: Any = {"configurable": {"thread_id": "async-1"}}
    assert _ids(await retriever.ainvoke(TURN_1, config)) == ["cause"]
    assert _ids(await retriever.ainvoke(TURN_2, config, k=2)) == ["fix", "cause"]
    assert _ids(await retriever.ainvoke(TURN_2, k=1)) == ["login"]
    assert threads and threading.main_thread() not in threads


async def test_concurrent_ainvoke_in_different_sessions(orders: CueMap) -> None:
    retriever = CueMapRetriever(cuemap=orders, k=1)
    await asyncio.gather(*(retriever.ainvoke(TURN_1, session_id=f"s{i}") for i in range(4)))
    seconds = await asyncio.gather(
        *(retriever.ainvoke(TURN_2, session_id=f"s{i}") for i in range(4))
    )
    assert [_ids(docs) for docs in seconds] == [["fix"]] * 4


def test_filters(orders: CueMap, clock: FakeClock) -> None:
    later = clock.now + timedelta(days=1)
    clock.advance(days=2)
    orders.add("Fixed the order page typo", memory_id="typo", type="task")
    assert _ids(CueMapRetriever(cuemap=orders, types=["task"]).invoke("fixed")) == ["typo"]
    assert _ids(CueMapRetriever(cuemap=orders, since=later).invoke("fixed")) == ["typo"]
    assert "typo" not in _ids(CueMapRetriever(cuemap=orders, until=later).invoke("fixed"))
    assert CueMapRetriever(cuemap=orders, min_score=1e6).invoke("fixed") == []


def test_bad_arguments_fail_early(orders: CueMap) -> None:
    with pytest.raises(ValueError, match="types"):
        CueMapRetriever(cuemap=orders, types=["opinion"])
    with pytest.raises(ValueError, match="since"):
        CueMapRetriever(cuemap=orders, since=datetime(2026, 1, 1))  # naive
    with pytest.raises(ValueError, match="k"):
        CueMapRetriever(cuemap=orders, k=0)
    with pytest.raises(ValueError, match="hybrid"):
        CueMapRetriever(cuemap=orders, hybrid=True)  # this store has no dense fallback
    with pytest.raises(TypeError, match="top_k"):
        CueMapRetriever(cuemap=orders).invoke("x", top_k=3)


def test_the_store_is_not_serialized(orders: CueMap) -> None:
    retriever = CueMapRetriever(cuemap=orders, k=2, session_id="s")
    dumped = retriever.model_dump()
    assert "cuemap" not in dumped and dumped["k"] == 2 and dumped["session_id"] == "s"
    assert "cuemap" not in retriever.model_dump_json()
    assert "CueMap object" not in repr(retriever)


def test_from_texts_and_add_documents() -> None:
    retriever = CueMapRetriever.from_texts(
        ["The API uses port 8001", "Never change the DB schema without a backup"],
        metadatas=[{"source": "wiki.md"}, {"team": "db"}],
        ids=["port", "schema"],
        k=1,
    )
    assert _ids(retriever.invoke("api port")) == ["port"]
    assert retriever.cuemap.get("port").source == "wiki.md"
    new = retriever.add_documents(
        [Document("Deploys go out on Tuesdays", id="deploy"), Document("Deploys need a ticket")],
        type="convention",
    )
    assert new[0] == "deploy" and new[1].startswith("m-")
    assert retriever.cuemap.get(new[1]).type.value == "convention"
    assert retriever.add_documents([Document("Deploys need a ticket")]) == [new[1]]  # deduped
    with pytest.raises(DuplicateIdError):
        retriever.add_documents([Document("Something else", id="deploy")])
    with pytest.raises(ValueError, match="ids"):
        retriever.add_documents([Document("a"), Document("b")], ids=["only-one"])


async def test_from_documents_in_a_namespace_and_async_add(tmp_path: Any) -> None:
    path = tmp_path / "docs.db"
    retriever = CueMapRetriever.from_documents(
        [Document("The API uses port 8001", id="port")], path=path, namespace="team-a"
    )
    assert await retriever.aadd_documents([Document("Deploys go out on Tuesdays")])
    retriever.cuemap.close()
    with CueMap(path) as reopened:
        assert [m.namespace for m in reopened.memories()] == ["team-a", "team-a"]
        assert (
            _ids(CueMapRetriever(cuemap=reopened, namespace="team-a").invoke("api port"))[0]
            == "port"
        )
        assert CueMapRetriever(cuemap=reopened).invoke("api port") == []


def test_an_api_key_in_a_document_never_comes_back() -> None:
    secret = "sk-proj-4f9A2b7C1d8E3f6G0h5J2k9L4m7N1p3Q"
    retriever = CueMapRetriever.from_documents(
        [
            Document(
                f"The billing service calls OpenAI with api key {secret}",
                metadata={"note": f"OPENAI_API_KEY={secret}"},
                id="billing",
            )
        ]  # fmt: skip
    )
    docs = retriever.invoke("which key does the billing service use?")
    assert _ids(docs) == ["billing"]
    assert secret not in docs[0].page_content and secret not in str(docs[0].metadata)
    assert "[REDACTED:api_key]" in docs[0].page_content
    assert docs[0].metadata["redacted"] == {"api_key": 2}


class _DenseExtension:
    """A stand-in for the dense fallback: appends one memory as a ``dense`` hit."""

    def __init__(self, record: MemoryRecord) -> None:
        self.record = record
        self.calls = 0

    def extend(self, request: RecallRequest, hits: tuple[Hit, ...]) -> Sequence[Hit]:
        self.calls += 1
        dense = Hit(self.record, 0.01, ScoreBreakdown((("dense", 0.5),)), source="dense")
        return [*hits, dense][: request.k]


@pytest.mark.parametrize("session_id", [None, "s1"])
def test_hybrid_switch_per_retriever(orders: CueMap, session_id: str | None) -> None:
    orders.extension = _DenseExtension(orders.get("schema"))
    default = CueMapRetriever(cuemap=orders, k=3, session_id=session_id)
    rules = CueMapRetriever(cuemap=orders, k=3, session_id=session_id, hybrid=False)
    assert CueMapRetriever(cuemap=orders, hybrid=True).hybrid is True  # the store has one now
    found = default.invoke("api port")
    assert [d.metadata["source"] for d in found] == ["cue", "dense"]
    assert [d.metadata["source"] for d in rules.invoke("api port")] == ["cue"]
    assert orders.extension.calls == 1
    if session_id is not None:  # the rules-only path keeps the session's turns too
        assert orders.session(session_id).turn == 2
        assert _ids(rules.invoke(TURN_1, k=1)) == ["cause"]
        assert _ids(rules.invoke(TURN_2, k=1)) == ["fix"]


def test_recency_filters_accept_iso_strings(orders: CueMap, clock: FakeClock) -> None:
    since = (clock.now - timedelta(hours=1)).astimezone(timezone.utc).isoformat()
    everything = CueMapRetriever(cuemap=orders).invoke("fixed")
    assert CueMapRetriever(cuemap=orders, since=since).invoke("fixed") == everything
    assert CueMapRetriever(cuemap=orders, until=since).invoke("fixed") == []


def test_fix_text_constant_matches_the_memory(orders: CueMap) -> None:
    assert FIX in orders.get("fix").content
