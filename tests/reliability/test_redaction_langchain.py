"""A secret written through each LangChain write path (retriever documents, classic memory,
agent middleware, LangGraph store) never reaches the SQLite file nor a prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langchain")

from langchain.agents import create_agent  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.messages import SystemMessage  # noqa: E402
from langchain_cuemap import (  # noqa: E402
    CueMapMemory,
    CueMapMiddleware,
    CueMapRetriever,
    CueMapStore,
)

from cuemap_integrations import CueMap  # noqa: E402
from tests.adapters.langchain.fakes import RecordingChatModel  # noqa: E402

from .secret_checks import API_KEY, QUERY, SAID, assert_redacted  # noqa: E402


def test_retriever_documents(tmp_path: Path) -> None:
    db = tmp_path / "lc.db"
    with CueMap(db) as cm:
        retriever = CueMapRetriever(cuemap=cm, k=3)
        retriever.add_documents([Document(page_content=SAID, metadata={"env": f"KEY={API_KEY}"})])
        docs = retriever.invoke(QUERY)
        shown = [d.page_content for d in docs] + [str(d.metadata) for d in docs]
    assert_redacted(db, *shown)


def test_classic_memory_save_context(tmp_path: Path) -> None:
    db = tmp_path / "lc.db"
    with CueMap(db) as cm:
        CueMapMemory(cuemap=cm, capture_mode="all").save_context({"input": SAID}, {"output": "ok"})
        history = CueMapMemory(cuemap=cm, k=3).load_memory_variables({"input": QUERY})["history"]
    assert_redacted(db, history)


def test_agent_middleware_capture_and_prompt(tmp_path: Path) -> None:
    db = tmp_path / "lc.db"
    model = RecordingChatModel()
    with CueMap(db) as cm:
        agent = create_agent(model, middleware=[CueMapMiddleware(cm, k=3, capture_mode="all")])
        agent.invoke({"messages": [{"role": "user", "content": SAID}]})
        agent.invoke({"messages": [{"role": "user", "content": QUERY}]})  # a new conversation
    system = model.prompts[-1][0]
    assert isinstance(system, SystemMessage)
    assert_redacted(db, str(system.text))


def test_langgraph_store_put(tmp_path: Path) -> None:
    db = tmp_path / "lc.db"
    with CueMap(db) as cm:
        store = CueMapStore(cm)
        store.put(("docs",), "billing", {"content": SAID, "password": "hunter2-hunter2"})
        found = store.search(("docs",), query=QUERY)
        got = store.get(("docs",), "billing")
    assert got is not None and "hunter2-hunter2" not in str(got.value)
    assert_redacted(db, *(str(item.value) for item in found), str(got.value))
