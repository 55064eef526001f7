"""CueMapMemory: chat engines and agents given ``memory=CueMapMemory(...)``."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("llama_index.core")

from llama_index.core import Document, SummaryIndex  # noqa: E402
from llama_index.core.agent.workflow import FunctionAgent  # noqa: E402
from llama_index.core.base.llms.types import ChatMessage, MessageRole  # noqa: E402
from llama_index.core.chat_engine import (  # noqa: E402
    CondensePlusContextChatEngine,
    SimpleChatEngine,
)
from llama_index.core.memory import Memory  # noqa: E402
from llama_index.core.tools import FunctionTool  # noqa: E402
from llama_index.memory.cuemap import CueMapMemory  # noqa: E402

from cuemap_integrations import CueMap, ValidationError  # noqa: E402
from cuemap_integrations.tokens import load_encoding  # noqa: E402
from tests.conftest import FakeClock  # noqa: E402

from .conftest import (  # noqa: E402
    FIX,
    OTHER_FIX,
    TURN_1,
    TURN_2,
    RecordingAgentLLM,
    RecordingLLM,
    fill,
    text_of,
)

# FunctionAgent's constructor (the `workflows` package) walks the agent with inspect.getmembers,
# touching pydantic's deprecated attributes (__fields__, __fields_set__, model_computed_fields).
AGENT_WARNINGS = pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning")


def user(text: str) -> ChatMessage:
    return ChatMessage(role=MessageRole.USER, content=text)


def assistant(text: str) -> ChatMessage:
    return ChatMessage(role=MessageRole.ASSISTANT, content=text)


def docs_retriever() -> Any:
    index = SummaryIndex.from_documents([Document(text="Release notes live in docs/CHANGELOG.md")])
    return index.as_retriever()


def chat_prompts(memory: Any, questions: list[str]) -> list[str]:
    """The prompt of each turn of a CondensePlusContextChatEngine, as it would be written."""
    llm = RecordingLLM()
    engine = CondensePlusContextChatEngine.from_defaults(docs_retriever(), llm=llm, memory=memory)
    prompts = []
    for question in questions:
        engine.chat(question)
        prompts.append(llm.prompts[-1])
    return prompts


# ----------------------------------------------------------------------------- chat engines
def test_chat_engine_turn_two_prompt_has_what_only_continuous_recall_finds(store: CueMap) -> None:
    with CueMapMemory.from_defaults(cuemap=store, session_id="t1", similarity_top_k=1) as memory:
        turn_1, turn_2 = chat_prompts(memory, [TURN_1, TURN_2])
    assert "Redis cache expired" in turn_1
    assert FIX in turn_2 and OTHER_FIX not in turn_2
    # control: the same question without the conversation before it gets the other fix
    with CueMapMemory.from_defaults(cuemap=store, session_id="t2", similarity_top_k=1) as fresh:
        (alone,) = chat_prompts(fresh, [TURN_2])
    assert OTHER_FIX in alone and FIX not in alone


def test_one_argument_changed(store: CueMap, chat_db: Any) -> None:
    """Existing code: memory=Memory.from_defaults(...). Changed: memory=CueMapMemory(...)."""
    plain = Memory.from_defaults(session_id="t1", token_limit=3000, async_engine=chat_db)
    (before,) = chat_prompts(plain, ["which port does the api use?"])
    with CueMapMemory.from_defaults(cuemap=store, session_id="t1", similarity_top_k=1) as memory:
        (after,) = chat_prompts(memory, ["which port does the api use?"])
    assert "8001" not in before and "The API uses port 8001" in after


def test_simple_chat_engine(store: CueMap) -> None:
    llm = RecordingLLM()
    with CueMapMemory.from_defaults(cuemap=store, session_id="s", similarity_top_k=1) as memory:
        engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory, system_prompt="Be brief.")
        engine.chat(TURN_1)
        engine.chat(TURN_2)
        assert FIX in llm.prompts[-1] and "Be brief." in llm.prompts[-1]
        history = memory.get_all()
    assert [m.role for m in history] == [MessageRole.USER, MessageRole.ASSISTANT] * 2
    assert not any("Long-term memory" in (m.content or "") for m in history)  # never persisted


async def test_async_chat_engine(store: CueMap) -> None:
    llm = RecordingLLM()
    async with CueMapMemory.from_defaults(
        cuemap=store, session_id="a", similarity_top_k=1
    ) as memory:
        engine = CondensePlusContextChatEngine.from_defaults(
            docs_retriever(), llm=llm, memory=memory
        )
        await engine.achat(TURN_1)
        await engine.achat(TURN_2)
        assert FIX in llm.prompts[-1]
        assert memory.session.turn == 2


# ----------------------------------------------------------------------------- agents
@AGENT_WARNINGS
async def test_function_agent_with_memory(store: CueMap) -> None:
    calls: list[str] = []

    def lookup_runbook() -> str:
        """Look up the ops runbook."""
        calls.append("runbook")
        return "The runbook says: check the cache."

    llm = RecordingAgentLLM()
    agent = FunctionAgent(tools=[FunctionTool.from_defaults(lookup_runbook)], llm=llm)
    async with CueMapMemory.from_defaults(
        cuemap=store, session_id="agent", similarity_top_k=1
    ) as memory:
        await agent.run(TURN_1, memory=memory)
        await agent.run(TURN_2, memory=memory)
        assert memory.session.turn == 2  # each run asked twice (before and after the tool)
    assert calls == ["runbook", "runbook"]
    turn_2 = [messages for messages in llm.calls if messages[-1].role == MessageRole.USER][-1]
    assert turn_2[0].role == MessageRole.SYSTEM and FIX in (turn_2[0].content or "")
    assert OTHER_FIX not in text_of(turn_2)


@AGENT_WARNINGS
async def test_agent_memory_sessions_do_not_leak(store: CueMap) -> None:
    llm = RecordingAgentLLM()
    agent = FunctionAgent(tools=[], llm=llm)
    async with CueMapMemory.from_defaults(cuemap=store, session_id="a", similarity_top_k=1) as a:
        await agent.run(TURN_1, memory=a)
    async with CueMapMemory.from_defaults(cuemap=store, session_id="b", similarity_top_k=1) as b:
        await agent.run(TURN_2, memory=b)
    assert OTHER_FIX in text_of(llm.calls[-1]) and FIX not in text_of(llm.calls[-1])


# ----------------------------------------------------------------------------- get and put
def test_get_recalls_for_the_latest_user_message(store: CueMap) -> None:
    with CueMapMemory.from_defaults(cuemap=store, session_id="s", similarity_top_k=1) as memory:
        assert memory.get() == []  # nothing said yet: no recall, no block
        memory.put(user(TURN_1))
        block, question = memory.get()
        assert block.role == MessageRole.SYSTEM and "Redis cache expired" in (block.content or "")
        assert question.content == TURN_1
        assert "Never change" in (memory.get(input="db schema changes?")[0].content or "")


def test_one_user_turn_is_one_session_turn(store: CueMap) -> None:
    with CueMapMemory.from_defaults(cuemap=store, session_id="s") as memory:
        memory.put(user(TURN_1))
        memory.get()
        memory.get(input=TURN_1)  # an agent asks again after a tool call
        assert memory.session.turn == 1
        memory.put(assistant("It was the cache."))
        memory.put(user(TURN_1))  # the same question again is a new turn
        memory.get()
        assert memory.session.turn == 2


def test_block_respects_the_budget_with_exact_tokens(store: CueMap) -> None:
    counter = load_encoding()
    with CueMapMemory.from_defaults(cuemap=store, session_id="s", budget_tokens=40) as memory:
        assert memory.tokenizer_fn == counter.encode
        assert isinstance(memory.chat_memory, Memory)
        assert memory.chat_memory.tokenizer_fn == counter.encode
        block = memory.get(input="fixed order timeout api port db schema")[0]
        context = memory.last_context
        assert context is not None and context.exact and context.dropped
        assert counter.count(block.content or "") == context.tokens <= 40
    with CueMapMemory.from_defaults(cuemap=store, session_id="s", budget_tokens=0) as none:
        assert none.get(input="api port") == []


def test_put_captures_user_turns_once(store: CueMap) -> None:
    with CueMapMemory.from_defaults(cuemap=store, session_id="s", namespace="team") as memory:
        memory.put(user("Remember that we deploy on Fridays."))
        memory.put(assistant("We use port 9999 for everything."))  # rules read user turns only
        memory.put(user("Remember that we deploy on Fridays."))
        capture = memory.last_capture
    stored = store.memories(namespace="team")
    assert [m.content for m in stored] == ["we deploy on Fridays"]
    assert stored[0].metadata["session_id"] == "s"
    assert capture is not None and capture.skipped[-1].reason == "assistant turn"


def test_capture_all_keeps_the_transcript_and_none_keeps_nothing(store: CueMap) -> None:
    with CueMapMemory.from_defaults(
        cuemap=store, session_id="s", namespace="t1", capture="all"
    ) as memory:
        memory.put_messages([user("hello there"), assistant("Hi! How can I help?")])
    assert [m.content for m in store.memories(namespace="t1")] == [
        "user: hello there", "assistant: Hi! How can I help?",
    ]  # fmt: skip
    with CueMapMemory.from_defaults(
        cuemap=store, session_id="s", namespace="t2", capture="none"
    ) as memory:
        memory.put(user("Remember that we deploy on Fridays."))
    assert store.memories(namespace="t2") == []


def test_a_block_given_back_is_not_stored(store: CueMap) -> None:
    with CueMapMemory.from_defaults(cuemap=store, session_id="s") as memory:
        memory.put(user(TURN_1))
        messages = memory.get()
        memory.set(messages)  # e.g. an app that saves what get() returned
        memory.put(messages[0])
        assert [m.role for m in memory.get_all()] == [MessageRole.USER]


def test_set_replaces_history_and_captures(store: CueMap) -> None:
    with CueMapMemory.from_defaults(cuemap=store, session_id="s", namespace="n") as memory:
        memory.put(user("hello"))
        memory.set([user("Remember that the staging DB is db-2."), assistant("OK.")])
        assert [m.content for m in memory.get_all()] == [
            "Remember that the staging DB is db-2.",
            "OK.",
        ]
    assert [m.content for m in store.memories(namespace="n")] == ["the staging DB is db-2"]


def test_reset_forgets_the_conversation_not_the_memories(store: CueMap) -> None:
    with CueMapMemory.from_defaults(cuemap=store, session_id="s", similarity_top_k=1) as memory:
        memory.put(user(TURN_1))
        memory.get()
        memory.put(user("Remember that we deploy on Fridays."))
        memory.reset()
        assert memory.get_all() == [] and memory.session.turn == 0
        memory.put(user(TURN_2))
        assert OTHER_FIX in (memory.get()[0].content or "")  # no cues carried over
    assert store.recall("when do we deploy?", k=1)[0].content == "we deploy on Fridays"


def test_chat_history_at_construction(store: CueMap) -> None:
    history = [user(TURN_1), assistant("The Redis cache expired.")]
    with CueMapMemory.from_defaults(cuemap=store, session_id="s", chat_history=history) as memory:
        assert memory.get_all() == history


def test_namespaces_do_not_leak(store: CueMap) -> None:
    with CueMapMemory.from_defaults(cuemap=store, session_id="s", namespace="tenant-a") as a:
        a.put(user("Remember that the staging password rotates on Fridays."))
    with CueMapMemory.from_defaults(cuemap=store, session_id="s", namespace="tenant-b") as b:
        assert b.get(input="when does the staging password rotate?") == []
    with CueMapMemory.from_defaults(cuemap=store, session_id="s", namespace="tenant-a") as a:
        assert "Fridays" in (a.get(input="when does the staging password rotate?")[0].content or "")


# ----------------------------------------------------------------------------- async twins
async def test_async_methods_do_not_call_their_sync_twins(
    store: CueMap, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with CueMapMemory.from_defaults(
        cuemap=store, session_id="s", similarity_top_k=1
    ) as memory:
        for name in ("get", "put", "put_messages", "set", "reset", "get_all"):
            monkeypatch.setattr(type(memory), name, _forbidden(name))
        await memory.aput(user(TURN_1))
        assert "Redis cache expired" in ((await memory.aget())[0].content or "")
        await memory.aput_messages([assistant("The cache."), user(TURN_2)])
        assert FIX in ((await memory.aget())[0].content or "")
        await memory.aset([user("Remember that we deploy on Fridays.")])
        assert len(await memory.aget_all()) == 1
        await memory.areset()
        assert await memory.aget_all() == [] and memory.session.turn == 0
    assert store.recall("deploy", k=1)[0].content == "we deploy on Fridays"


def _forbidden(name: str) -> Any:
    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"the async twin called {name}")

    return fail


# ----------------------------------------------------------------------------- construction
def test_path_store_is_owned_and_closed(tmp_path: Any) -> None:
    with CueMapMemory.from_defaults(path=tmp_path / "m.db", session_id="s") as memory:
        memory.put(user("Remember that we deploy on Fridays."))
    with CueMap(tmp_path / "m.db") as cm:
        assert [m.content for m in cm.memories()] == ["we deploy on Fridays"]


def test_your_own_short_term_memory(store: CueMap, chat_db: Any) -> None:
    chat = Memory.from_defaults(session_id="mine", token_limit=2000, async_engine=chat_db)
    memory = CueMapMemory.from_defaults(cuemap=store, chat_memory=chat)
    assert memory.session_id == "mine"
    memory.put(user(TURN_1))
    assert chat.get_all()[0].content == TURN_1
    memory.close()  # the caller's short-term memory and store stay usable
    assert chat.get_all()[0].content == TURN_1 and len(store) == 5


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"cuemap": "store", "path": ":memory:"},
        {"cuemap": "store", "k": 3},
        {"cuemap": "store", "session_id": "bad\x00id"},
        {"cuemap": "store", "namespace": ""},
        {"cuemap": "store", "types": ["opinion"]},
        {"cuemap": "store", "chat_history": [], "chat_memory": "chat"},
    ],
)
def test_bad_construction(store: CueMap, chat_db: Any, options: dict) -> None:
    chat = Memory.from_defaults(token_limit=2000, async_engine=chat_db)
    given = {"store": store, "chat": chat}
    options = {k: given[v] if isinstance(v, str) and v in given else v for k, v in options.items()}
    with pytest.raises(ValidationError):
        CueMapMemory.from_defaults(**options)


def test_direct_construction(store: CueMap, chat_db: Any) -> None:
    chat = Memory.from_defaults(session_id="direct", token_limit=2000, async_engine=chat_db)
    memory = CueMapMemory(cuemap=store, chat_memory=chat, session_id="direct", similarity_top_k=1)
    assert memory.tokenizer_fn == load_encoding().encode
    block = memory.get(input=user("which port does the api use?"))[0]
    assert "The API uses port 8001" in (block.content or "")


@settings(max_examples=25, deadline=None)
@given(budget=st.integers(min_value=0, max_value=160), k=st.integers(min_value=1, max_value=5))
def test_block_never_exceeds_its_budget(budget: int, k: int) -> None:
    counter = load_encoding()
    with CueMap(clock=FakeClock()) as cm:
        fill(cm)
        with CueMapMemory.from_defaults(
            cuemap=cm, session_id="p", budget_tokens=budget, similarity_top_k=k
        ) as memory:
            messages = memory.get(input="fixed order timeout, api port, db schema, login test")
            blocks = [m for m in messages if m.role == MessageRole.SYSTEM]
            assert len(blocks) <= 1
            assert all(counter.count(m.content or "") <= budget for m in blocks)
