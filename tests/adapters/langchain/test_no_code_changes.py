"""Existing LangChain / LangGraph programs gain continuous recall by changing one argument.

Each program below is written once and run as it is, first with what it used before (a vector
store retriever, no middleware, the default memory, ``InMemoryStore``) and then with the one
argument swapped for its CueMap counterpart. The conversation is the same: turn 1 "why were
orders timing out?", turn 2 "how did we fix it?". Turn 2 has no cue of its own: a stateless
recall ranks the login and CSS fixes first, so only continuous recall (turn 1's cues carried
into turn 2) puts the ``/ops/clear-cache`` fix into the prompt the model receives. Another
thread (or user) asking turn 2 alone must not get it.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain_core")

from langchain.agents import create_agent
from langchain_classic.chains import ConversationChain
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import SystemMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_cuemap import CueMapMemory, CueMapMiddleware, CueMapRetriever, CueMapStore
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from cuemap_integrations import CueMap

from .fakes import FIX, ORDERS, TURN_1, TURN_2, RecordingChatModel, load_orders

TEXTS = [content for _, content, _ in ORDERS]
CONVERSATION = [TURN_1, TURN_2]


# ---------------------------------------------------------------------- 1. an LCEL RAG chain
def format_docs(docs: list[Document]) -> str:
    return "\n\n".join(doc.page_content for doc in docs)


def build_rag_chain(retriever: BaseRetriever, model: RecordingChatModel) -> Runnable[str, str]:
    """The existing program: ``retriever | format_docs``, a prompt, a model, a parser."""
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from this context:\n{context}"), ("human", "{question}")]
    )
    return (
        {"context": retriever | format_docs, "question": RunnablePassthrough()}
        | prompt
        | model
        | StrOutputParser()
    )


def run_rag(
    retriever: BaseRetriever, questions: list[str] = CONVERSATION, session: str = "user-1"
) -> RecordingChatModel:
    model = RecordingChatModel()
    chain = build_rag_chain(retriever, model)
    for question in questions:  # the program already sends a session id (message history)
        chain.invoke(question, {"configurable": {"session_id": session}})
    return model


def test_rag_chain_swaps_its_retriever() -> None:
    vectors = InMemoryVectorStore.from_texts(TEXTS, DeterministicFakeEmbedding(size=32))
    before = run_rag(vectors.as_retriever(search_kwargs={"k": 2}))
    assert len(before.prompts) == 2  # the program runs as it is

    cm = load_orders(CueMap())
    after = run_rag(CueMapRetriever(cuemap=cm, k=2))  # <- the one changed argument
    assert FIX in after.prompt_text(1) and "Redis" in after.prompt_text(0)

    other_user = run_rag(CueMapRetriever(cuemap=cm, k=2), [TURN_2], session="user-2")
    assert FIX not in other_user.prompt_text()  # user-1's turns do not help user-2

    stateless = CueMapRetriever(cuemap=load_orders(CueMap()), k=2)
    model = RecordingChatModel()
    chain = build_rag_chain(stateless, model)
    for question in CONVERSATION:  # no session id: each turn on its own
        chain.invoke(question)
    assert FIX not in model.prompt_text(1)


# ---------------------------------------------------------------------- 2. a create_agent program
def build_agent(model: RecordingChatModel, middleware: list[Any] | None = None) -> Any:
    """The existing program (only ``middleware=`` differs)."""
    return create_agent(model, tools=[], system_prompt="You are the ops assistant.",
                        checkpointer=InMemorySaver(), middleware=middleware or [])  # fmt: skip


def chat(agent: Any, thread: str, text: str) -> str:
    result = agent.invoke({"messages": [{"role": "user", "content": text}]},
                          {"configurable": {"thread_id": thread}})  # fmt: skip
    return str(result["messages"][-1].text)


def test_agent_adds_the_middleware() -> None:
    before = RecordingChatModel()
    agent = build_agent(before)
    for text in CONVERSATION:
        chat(agent, "t1", text)
    assert FIX not in before.prompt_text(1)

    cm = load_orders(CueMap())
    after = RecordingChatModel()
    agent = build_agent(after, middleware=[CueMapMiddleware(cm, k=2)])  # <- the change
    for text in CONVERSATION:
        assert chat(agent, "t1", text) == "ok"
    assert FIX in after.prompt_text(1)
    assert after.prompts[1][0].type == "system" and FIX in str(after.prompts[1][0].text)
    chat(agent, "t2", TURN_2)  # another thread asks the follow-up alone
    assert FIX not in after.prompt_text(2)
    persisted = agent.get_state({"configurable": {"thread_id": "t1"}}).values["messages"]
    assert all(FIX not in str(m.text) for m in persisted)  # memory never enters the state


def test_agent_namespaces_keep_users_apart() -> None:
    cm = CueMap()
    model = RecordingChatModel()
    agent = build_agent(model, middleware=[CueMapMiddleware(
        cm, namespace=lambda runtime: f"user-{runtime.context['user']}")])  # fmt: skip
    agent.invoke({"messages": [{"role": "user", "content": "Remember that my badge is B-77."}]},
                 {"configurable": {"thread_id": "ann"}}, context={"user": "ann"})  # fmt: skip
    agent.invoke({"messages": [{"role": "user", "content": "what is my badge?"}]},
                 {"configurable": {"thread_id": "bob"}}, context={"user": "bob"})  # fmt: skip
    assert "B-77" not in model.prompt_text()
    agent.invoke({"messages": [{"role": "user", "content": "what is my badge?"}]},
                 {"configurable": {"thread_id": "ann-2"}}, context={"user": "ann"})  # fmt: skip
    assert "B-77" in model.prompt_text()


# ---------------------------------------------------------------------- 3. a ConversationChain
def run_conversation_chain(model: RecordingChatModel, **memory: Any) -> None:
    """The existing program (only ``memory=`` may be given)."""
    chain = ConversationChain(llm=model, **memory)
    for text in CONVERSATION:
        chain.invoke({"input": text})


# ConversationChain and its default ConversationBufferMemory (with its message history) are
# deprecated upstream; these filters silence exactly those warnings for the baseline run.
@pytest.mark.filterwarnings(
    "ignore:The class `ConversationChain` was deprecated"
    ":langchain_core._api.deprecation.LangChainDeprecationWarning",
    "ignore:The class `ConversationBufferMemory` was deprecated"
    ":langchain_core._api.deprecation.LangChainDeprecationWarning",
    "ignore:The class `InMemoryChatMessageHistory` was deprecated"
    ":langchain_core._api.deprecation.LangChainDeprecationWarning",
)
def test_conversation_chain_gets_a_memory() -> None:
    before = RecordingChatModel()
    run_conversation_chain(before)
    assert "Human: why were orders timing out?" in before.prompt_text(1)
    assert FIX not in before.prompt_text(1)

    cm = load_orders(CueMap())
    after = RecordingChatModel()
    run_conversation_chain(after, memory=CueMapMemory(cuemap=cm, session_id="c1", k=2))
    assert FIX in after.prompt_text(1)

    other = RecordingChatModel()
    chain = ConversationChain(llm=other, memory=CueMapMemory(cuemap=cm, session_id="c2", k=2))
    chain.invoke({"input": TURN_2})
    assert FIX not in other.prompt_text()


# ---------------------------------------------------------------------- 4. a LangGraph graph
def build_graph(model: RecordingChatModel, store: BaseStore) -> Any:
    """The existing program: a node that searches the store and answers from what it found."""

    def respond(state: MessagesState, runtime: Runtime[None]) -> dict[str, Any]:
        assert runtime.store is not None
        question = str(state["messages"][-1].text)
        found = runtime.store.search(("memories", "ops"), query=question, limit=2)
        notes = "\n".join(str(item.value["content"]) for item in found)
        reply = model.invoke([SystemMessage(f"Known facts:\n{notes}"), *state["messages"]])
        return {"messages": [reply]}

    builder = StateGraph(MessagesState)
    builder.add_node("respond", respond)
    builder.add_edge(START, "respond")
    return builder.compile(checkpointer=InMemorySaver(), store=store)


def seed(store: BaseStore) -> None:
    for key, content, kind in ORDERS:
        store.put(("memories", "ops"), key, {"content": content, "kind": kind})


def ask_graph(graph: Any, thread: str, text: str) -> None:
    graph.invoke({"messages": [{"role": "user", "content": text}]},
                 {"configurable": {"thread_id": thread}})  # fmt: skip


def test_graph_gets_a_cuemap_store() -> None:
    before_store: BaseStore = InMemoryStore()
    seed(before_store)
    before = RecordingChatModel()
    graph = build_graph(before, before_store)
    for text in CONVERSATION:
        ask_graph(graph, "t1", text)
    assert len(before.prompts) == 2  # the program runs as it is (InMemoryStore ignores query)

    store = CueMapStore(CueMap())  # <- the change
    seed(store)
    after = RecordingChatModel()
    graph = build_graph(after, store)
    for text in CONVERSATION:
        ask_graph(graph, "t1", text)
    assert "Redis" in after.prompt_text(0) and FIX in after.prompt_text(1)
    ask_graph(graph, "t2", TURN_2)
    assert FIX not in after.prompt_text(2)


async def test_graph_with_a_cuemap_store_async() -> None:
    store = CueMapStore(CueMap())
    seed(store)
    model = RecordingChatModel()
    graph = build_graph(model, store)
    for text in CONVERSATION:
        await graph.ainvoke({"messages": [{"role": "user", "content": text}]},
                            {"configurable": {"thread_id": "a1"}})  # fmt: skip
    assert FIX in model.prompt_text(1)
