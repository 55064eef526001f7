"""CueMapMemory: the classic ``BaseMemory`` contract, in ConversationChain and LLMChain."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langchain_classic")

from langchain_classic.chains import ConversationChain, LLMChain
from langchain_core.messages import SystemMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder, PromptTemplate
from langchain_cuemap import CueMapMemory

from cuemap_integrations import CueMap
from tests.conftest import FakeClock

from .fakes import FIX, TURN_1, TURN_2, RecordingChatModel, load_orders

# Narrow: the classic chains themselves are deprecated upstream; CueMapMemory is what is tested.
CONVERSATION_CHAIN_DEPRECATED = pytest.mark.filterwarnings(
    "ignore:The class `ConversationChain` was deprecated"
    ":langchain_core._api.deprecation.LangChainDeprecationWarning"
)
LLM_CHAIN_DEPRECATED = pytest.mark.filterwarnings(
    "ignore:The class `LLMChain` was deprecated"
    ":langchain_core._api.deprecation.LangChainDeprecationWarning"
)


@pytest.fixture
def orders(clock: FakeClock) -> CueMap:
    return load_orders(CueMap(clock=clock))


def test_load_returns_the_block_under_the_memory_key(orders: CueMap) -> None:
    memory = CueMapMemory(cuemap=orders, k=1)
    assert memory.memory_variables == ["history"]
    text = memory.load_memory_variables({"input": "which port does the api use?"})["history"]
    assert text.startswith("Long-term memory") and "port 8001" in text
    assert memory.load_memory_variables({"input": "zzqx"}) == {"history": ""}


def test_return_messages(orders: CueMap) -> None:
    memory = CueMapMemory(cuemap=orders, return_messages=True, memory_key="memories")
    [message] = memory.load_memory_variables({"question": "api port?"})["memories"]
    assert isinstance(message, SystemMessage) and "port 8001" in str(message.text)
    assert memory.load_memory_variables({"question": "zzqx"}) == {"memories": []}


def test_session_turns_and_stateless(orders: CueMap) -> None:
    chat = CueMapMemory(cuemap=orders, session_id="c1", k=1)
    chat.load_memory_variables({"input": TURN_1})
    assert FIX in chat.load_memory_variables({"input": TURN_2})["history"]
    stateless = CueMapMemory(cuemap=orders, k=1)
    stateless.load_memory_variables({"input": TURN_1})
    assert FIX not in stateless.load_memory_variables({"input": TURN_2})["history"]


def test_input_key_detection(orders: CueMap) -> None:
    memory = CueMapMemory(cuemap=orders)
    with pytest.raises(ValueError, match="One input key expected"):
        memory.load_memory_variables({"a": "x", "b": "y"})
    assert memory.load_memory_variables({"a": "api port", "stop": ["\n"]})["history"]
    explicit = CueMapMemory(cuemap=orders, input_key="b")
    assert "8001" in explicit.load_memory_variables({"a": "zzqx", "b": "api port"})["history"]
    with pytest.raises(ValueError, match="input_key"):
        CueMapMemory(cuemap=orders, input_key="c").load_memory_variables({"a": "x"})


def test_save_context_captures_the_exchange(orders: CueMap) -> None:
    memory = CueMapMemory(cuemap=orders, session_id="c2", namespace="team")
    memory.save_context({"input": "Remember that the deploy freeze starts on Friday."},
                        {"response": "Noted, the deploy freeze starts on Friday."})  # fmt: skip
    [record] = orders.memories(namespace="team")
    assert record.content == "the deploy freeze starts on Friday"
    assert record.metadata["session_id"] == "c2"
    memory.save_context({"input": "I prefer tabs", "stop": None},
                        {"text": "ok", "output": "Sure."})  # fmt: skip
    assert len(orders.memories(namespace="team")) == 2
    with pytest.raises(ValueError, match="output_key"):
        memory.save_context({"input": "x"}, {"a": "1", "b": "2"})


def test_clear_forgets_the_namespace_only(orders: CueMap) -> None:
    memory = CueMapMemory(cuemap=orders, namespace="scratch", session_id="s")
    memory.save_context({"input": "Remember that the cat is called Tom."}, {"output": "ok"})
    memory.load_memory_variables({"input": "cat name?"})
    memory.clear()
    assert orders.memories(namespace="scratch") == []
    assert orders.session("s", namespace="scratch").turn == 0
    assert len(orders.memories(namespace="default")) == 6


async def test_async_load_and_save(orders: CueMap) -> None:
    memory = CueMapMemory(cuemap=orders, session_id="a1", k=1)
    await memory.aload_memory_variables({"input": TURN_1})
    assert FIX in (await memory.aload_memory_variables({"input": TURN_2}))["history"]
    await memory.asave_context({"input": "Remember that Ann owns billing."}, {"out": "ok"})
    assert "Ann owns billing" in [m.content for m in orders.memories()]


def test_serialization_and_validation(orders: CueMap) -> None:
    memory = CueMapMemory(cuemap=orders, session_id="x")
    assert "cuemap" not in memory.model_dump() and "CueMap object" not in repr(memory)
    for bad in ({"k": 0}, {"budget_tokens": -1}, {"template": "fr"}, {"hybrid": True},
                {"capture_mode": "some"}):  # fmt: skip
        with pytest.raises(ValueError):
            CueMapMemory(cuemap=orders, **bad)


def test_recall_block_explains_what_was_found(orders: CueMap) -> None:
    block = CueMapMemory(cuemap=orders, k=2).recall_block({"input": "api port?"})
    assert block.result.memory_ids[0] == "port" and block.tokens <= 600
    assert "port" in block.result[0].breakdown.matched_cues


@CONVERSATION_CHAIN_DEPRECATED
def test_conversation_chain_accepts_it_unchanged(orders: CueMap) -> None:
    model = RecordingChatModel()
    chain = ConversationChain(llm=model, memory=CueMapMemory(cuemap=orders, session_id="cc", k=1))
    chain.invoke({"input": TURN_1})
    out = chain.invoke({"input": TURN_2})
    assert out["response"] == "ok"
    assert FIX in model.prompt_text() and "Human: how did we fix it?" in model.prompt_text()


@CONVERSATION_CHAIN_DEPRECATED
def test_conversation_chain_validates_the_memory_key(orders: CueMap) -> None:
    with pytest.raises(ValueError, match="unexpected prompt input variables"):
        ConversationChain(llm=RecordingChatModel(),
                          memory=CueMapMemory(cuemap=orders, memory_key="memories"))  # fmt: skip


@LLM_CHAIN_DEPRECATED
async def test_llm_chain_with_a_messages_placeholder(orders: CueMap) -> None:
    prompt = ChatPromptTemplate.from_messages(
        [MessagesPlaceholder("history"), ("human", "{question}")]
    )
    model = RecordingChatModel()
    memory = CueMapMemory(cuemap=orders, session_id="llm", k=1, return_messages=True)
    chain = LLMChain(llm=model, prompt=prompt, memory=memory)
    chain.invoke({"question": TURN_1})
    result: Any = await chain.ainvoke({"question": TURN_2})
    assert result["text"] == "ok"
    assert isinstance(model.prompts[-1][0], SystemMessage) and FIX in model.prompt_text()


@LLM_CHAIN_DEPRECATED
def test_llm_chain_with_a_string_prompt(orders: CueMap) -> None:
    prompt = PromptTemplate.from_template("Memory:\n{history}\nQ: {question}\nA:")
    model = RecordingChatModel()
    chain = LLMChain(llm=model, prompt=prompt, memory=CueMapMemory(cuemap=orders))
    chain.invoke({"question": "which port does the api use?"})
    assert "port 8001" in model.prompt_text()
