"""CueMapMemoryBlock inside LlamaIndex's own ``Memory.from_defaults(memory_blocks=[...])``."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core import Document, SummaryIndex  # noqa: E402
from llama_index.core.agent.workflow import FunctionAgent  # noqa: E402
from llama_index.core.base.llms.types import ChatMessage, MessageRole  # noqa: E402
from llama_index.core.chat_engine import CondensePlusContextChatEngine  # noqa: E402
from llama_index.core.memory import Memory  # noqa: E402
from llama_index.core.tools import FunctionTool  # noqa: E402
from llama_index.memory.cuemap import CueMapMemoryBlock  # noqa: E402

from cuemap_integrations import CueMap  # noqa: E402
from cuemap_integrations.tokens import load_encoding  # noqa: E402

from .conftest import (  # noqa: E402
    FIX,
    OTHER_FIX,
    TURN_1,
    TURN_2,
    RecordingAgentLLM,
    RecordingLLM,
    text_of,
)

COUNTER = load_encoding()


def memory_with(block: CueMapMemoryBlock, engine: Any, **options: Any) -> Memory:
    options.setdefault("token_limit", 4000)
    return Memory.from_defaults(
        memory_blocks=[block], async_engine=engine, tokenizer_fn=COUNTER.encode, **options
    )


def user(text: str) -> ChatMessage:
    return ChatMessage(role=MessageRole.USER, content=text)


def assistant(text: str) -> ChatMessage:
    return ChatMessage(role=MessageRole.ASSISTANT, content=text)


def test_chat_engine_with_the_block(store: CueMap, chat_db: Any) -> None:
    """Existing code: memory=Memory.from_defaults(...). Changed: one more memory block."""
    block = CueMapMemoryBlock(cuemap=store, similarity_top_k=1)
    memory = memory_with(block, chat_db, session_id="thread-1")
    llm = RecordingLLM()
    docs = SummaryIndex.from_documents([Document(text="Release notes live in docs/CHANGELOG.md")])
    engine = CondensePlusContextChatEngine.from_defaults(
        docs.as_retriever(), llm=llm, memory=memory
    )
    engine.chat(TURN_1)
    assert "Redis cache expired" in llm.prompts[-1]
    engine.chat(TURN_2)
    assert FIX in llm.prompts[-1] and OTHER_FIX not in llm.prompts[-1]
    assert "<cuemap_memory>" in llm.prompts[-1]  # Memory's own template wraps the block
    assert store.session("thread-1").turn == 2  # the Memory's session id, one turn per chat


def test_block_session_is_the_memorys_or_its_own(store: CueMap, chat_db: Any) -> None:
    shared = CueMapMemoryBlock(cuemap=store, similarity_top_k=1)
    a = memory_with(shared, chat_db, session_id="a", table_name="a")
    b = memory_with(shared, chat_db, session_id="b", table_name="b")
    a.put(user(TURN_1))
    a.get()
    b.put(user(TURN_2))
    assert OTHER_FIX in (b.get()[0].content or "")  # a's turn does not leak into b
    own = CueMapMemoryBlock(cuemap=store, similarity_top_k=1, session_id="fixed", name="own")
    c = memory_with(own, chat_db, session_id="c", table_name="c")
    c.get(input=TURN_1)
    assert store.session("fixed").turn == 1 and store.session("c").turn == 0


def test_messages_are_captured_only_when_flushed(store: CueMap, chat_db: Any) -> None:
    """LlamaIndex hands a block only the messages that leave the short-term queue
    (``token_limit * chat_history_token_ratio`` tokens: 42 here)."""
    block = CueMapMemoryBlock(cuemap=store, namespace="notes")
    memory = memory_with(block, chat_db, session_id="s", token_limit=60)
    remark = "Remember that we deploy on Fridays."

    def active() -> list[str]:
        return [m.content or "" for m in memory.get() if m.role != MessageRole.SYSTEM]

    memory.put(user(remark))
    memory.put(assistant("Noted, Fridays it is."))
    turns = 1
    while remark in active():
        assert store.memories(namespace="notes") == []  # still queued: not captured
        memory.put(user("Tell me about the release process."))
        memory.put(assistant("We build, test and ship."))
        turns += 1
        assert turns < 10
    assert turns > 1  # it took more turns to push the remark out of the queue
    stored = store.memories(namespace="notes")
    assert [m.content for m in stored] == ["we deploy on Fridays"]
    assert stored[0].metadata["session_id"] == "s"
    capture = block.last_capture
    assert capture is not None and ("Noted, Fridays it is.", "assistant turn") in capture.skipped


def test_priority_zero_is_never_truncated(store: CueMap, chat_db: Any) -> None:
    block = CueMapMemoryBlock(cuemap=store, priority=0)
    memory = memory_with(block, chat_db, session_id="s", token_limit=80)
    full = memory.get(input="fixed order timeout, api port, db schema")[0].content or ""
    assert full.count("\n- ") == 5 and COUNTER.count(full) > 80


def test_priority_block_is_truncated_by_rank(store: CueMap, chat_db: Any) -> None:
    block = CueMapMemoryBlock(cuemap=store, priority=1)
    memory = memory_with(block, chat_db, session_id="s", token_limit=90)
    query = "fixed order timeout, api port, db schema"
    system = memory.get(input=query)[0].content or ""
    kept = [line for line in system.splitlines() if line.startswith("- ")]
    assert 0 < len(kept) < 5
    best = store.recall(query, k=1)[0].content
    assert any(best in line for line in kept)  # the best memory survives truncation


async def test_atruncate(store: CueMap) -> None:
    block = CueMapMemoryBlock(cuemap=store)
    text = await block.aget([user("fixed order timeout, api port, db schema")])
    tokens = COUNTER.count(text)
    shorter = await block.atruncate(text, 30)
    assert shorter is not None and COUNTER.count(shorter) <= tokens - 30
    assert shorter.count("\n- ") < text.count("\n- ")
    assert await block.atruncate(text, tokens) is None
    foreign = await block.atruncate("some other text " * 20, 10)
    assert (
        foreign is not None
        and COUNTER.count(foreign) <= COUNTER.count("some other text " * 20) - 10
    )


async def test_no_user_message_no_recall(store: CueMap) -> None:
    block = CueMapMemoryBlock(cuemap=store)
    assert await block.aget([assistant("hello")], session_id="s") == ""
    assert store.session("s").turn == 0


# FunctionAgent's constructor touches pydantic's deprecated attributes (the `workflows` package
# walks the agent with inspect.getmembers): PydanticDeprecatedSince20 / Since211.
@pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning")
async def test_agent_with_the_block(store: CueMap, achat_db: Any) -> None:
    def lookup_runbook() -> str:
        """Look up the ops runbook."""
        return "Check the cache."

    llm = RecordingAgentLLM()
    agent = FunctionAgent(tools=[FunctionTool.from_defaults(lookup_runbook)], llm=llm)
    block = CueMapMemoryBlock(cuemap=store, similarity_top_k=1)
    memory = Memory.from_defaults(
        session_id="agent", token_limit=4000, memory_blocks=[block], async_engine=achat_db
    )
    await agent.run(TURN_1, memory=memory)
    await agent.run(TURN_2, memory=memory)
    assert store.session("agent").turn == 2  # asked before and after each tool call
    turn_2 = [messages for messages in llm.calls if messages[-1].role == MessageRole.USER][-1]
    assert FIX in text_of(turn_2) and OTHER_FIX not in text_of(turn_2)
