"""CueMapMiddleware in ``create_agent``: recall into the system message, capture after the run."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langchain")

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_cuemap import CueMapMiddleware, MemoryBlock
from langgraph.checkpoint.memory import InMemorySaver

from cuemap_integrations import CaptureResult, CueMap
from cuemap_integrations.tokens import load_encoding
from tests.conftest import FakeClock

from .fakes import FIX, TURN_1, TURN_2, RecordingChatModel, load_orders

HEADER = "Long-term memory"


@pytest.fixture
def orders(clock: FakeClock) -> CueMap:
    return load_orders(CueMap(clock=clock))


def _thread(thread_id: str) -> Any:
    return {"configurable": {"thread_id": thread_id}}


def _ask(agent: Any, text: str, config: Any = None, **kwargs: Any) -> Any:
    return agent.invoke({"messages": [{"role": "user", "content": text}]}, config, **kwargs)


def _system(model: RecordingChatModel, call: int = -1) -> str:
    first = model.prompts[call][0]
    return str(first.text) if isinstance(first, SystemMessage) else ""


def test_memory_block_goes_into_the_system_message_of_the_call_only(orders: CueMap) -> None:
    model = RecordingChatModel()
    agent = create_agent(model, system_prompt="You are the ops bot.",
                         checkpointer=InMemorySaver(),
                         middleware=[CueMapMiddleware(orders, k=1)])  # fmt: skip
    _ask(agent, TURN_1, _thread("t1"))
    _ask(agent, TURN_2, _thread("t1"))
    system = _system(model)
    assert system.startswith("You are the ops bot.\n\nLong-term memory")
    assert FIX in system
    stored = agent.get_state(_thread("t1")).values["messages"]
    assert [m.type for m in stored] == ["human", "ai", "human", "ai"]
    assert not any(HEADER in str(m.text) for m in stored)


def test_without_a_system_prompt_the_block_is_the_system_message(orders: CueMap) -> None:
    model = RecordingChatModel()
    agent = create_agent(model, middleware=[CueMapMiddleware(orders)])
    _ask(agent, "which port does the api use?")
    assert _system(model).startswith(HEADER) and "port 8001" in _system(model)


def test_list_content_system_message_gets_a_text_block(orders: CueMap) -> None:
    model = RecordingChatModel()
    prompt = SystemMessage(content=[{"type": "text", "text": "Be brief."}])
    agent = create_agent(model, system_prompt=prompt, middleware=[CueMapMiddleware(orders)])
    _ask(agent, "which port does the api use?")
    content = model.prompts[-1][0].content
    assert isinstance(content, list) and content[0] == {"type": "text", "text": "Be brief."}
    assert "port 8001" in content[-1]["text"]  # type: ignore[index]


def test_nothing_recalled_leaves_the_request_alone(orders: CueMap) -> None:
    model = RecordingChatModel()
    agent = create_agent(model, system_prompt="Plain.", middleware=[CueMapMiddleware(orders)])
    _ask(agent, "zzqx")
    assert _system(model) == "Plain."


def test_thread_is_the_session_and_threads_do_not_leak(orders: CueMap) -> None:
    model = RecordingChatModel()
    blocks: list[MemoryBlock] = []
    agent = create_agent(model, checkpointer=InMemorySaver(),
                         middleware=[CueMapMiddleware(orders, k=1, on_recall=blocks.append)])  # fmt: skip
    _ask(agent, TURN_1, _thread("a"))
    _ask(agent, TURN_2, _thread("b"))
    _ask(agent, TURN_2, _thread("a"))
    assert [(b.session_id, b.result.memory_ids) for b in blocks] == [
        ("a", ["cause"]), ("b", ["login"]), ("a", ["fix"]),
    ]  # fmt: skip
    assert FIX in _system(model) and FIX not in _system(model, 1)


def test_no_thread_means_stateless(orders: CueMap) -> None:
    blocks: list[MemoryBlock] = []
    agent = create_agent(RecordingChatModel(),
                         middleware=[CueMapMiddleware(orders, k=1, on_recall=blocks.append)])  # fmt: skip
    _ask(agent, TURN_1)
    _ask(agent, TURN_2)
    assert [b.session_id for b in blocks] == [None, None]
    assert blocks[1].result.memory_ids == ["login"]


def test_budget_is_respected_and_reported(orders: CueMap) -> None:
    blocks: list[MemoryBlock] = []
    middleware = CueMapMiddleware(orders, budget_tokens=40, k=8, on_recall=blocks.append)
    agent = create_agent(RecordingChatModel(), middleware=[middleware])
    _ask(agent, "fixed the order timeout and the api port")
    [block] = blocks
    assert 0 < block.tokens <= 40 and block.context.exact
    assert load_encoding().count(block.text) == block.tokens
    assert block.context.dropped  # more was recalled than fits


def test_one_recall_per_user_message_in_a_tool_loop(orders: CueMap) -> None:
    @tool
    def lookup(name: str) -> str:
        """Look a runbook up."""
        return f"runbook {name}"

    call = AIMessage(content="", tool_calls=[{"name": "lookup", "args": {"name": "x"},
                                               "id": "c1", "type": "tool_call"}])  # fmt: skip
    model = RecordingChatModel(messages=iter([call, "done"]))
    blocks: list[MemoryBlock] = []
    agent = create_agent(model, tools=[lookup], checkpointer=InMemorySaver(),
                         middleware=[CueMapMiddleware(orders, k=1, on_recall=blocks.append)])  # fmt: skip
    _ask(agent, TURN_1, _thread("tools"))
    assert len(model.prompts) == 2 and len(blocks) == 1
    assert orders.session("tools").turn == 1
    assert _system(model, 0) == _system(model, 1) and "Redis" in _system(model, 1)


def test_after_agent_captures_the_exchange(orders: CueMap) -> None:
    captured: list[CaptureResult] = []
    model = RecordingChatModel(messages=iter(["Noted.", "ok"]))
    agent = create_agent(model, checkpointer=InMemorySaver(),
                         middleware=[CueMapMiddleware(orders, on_capture=captured.append)])  # fmt: skip
    _ask(agent, "Remember that the deploy freeze starts on Friday.", _thread("cap"))
    [result] = captured
    [record] = result.records
    assert record.content == "the deploy freeze starts on Friday"
    assert record.metadata["session_id"] == "cap"
    assert ("Noted.", "assistant turn") in [(s.excerpt, s.reason) for s in result.skipped]
    _ask(agent, "when does the deploy freeze start?", _thread("other-thread"))
    assert "the deploy freeze starts on Friday" in _system(model)


def test_capture_off_and_transcript_mode(orders: CueMap) -> None:
    agent = create_agent(RecordingChatModel(), middleware=[CueMapMiddleware(orders, capture=False)])
    _ask(agent, "Remember that the deploy freeze starts on Friday.")
    assert not [m for m in orders.memories() if m.source == "chat"]
    agent = create_agent(RecordingChatModel(messages=iter(["Sure thing."])),
                         middleware=[CueMapMiddleware(orders, capture_mode="all")])  # fmt: skip
    _ask(agent, "hello there", _thread("log"))
    transcript = [m.content for m in orders.memories() if m.source == "chat"]
    assert transcript == ["user: hello there", "assistant: Sure thing."]


@dataclass
class UserContext:
    user_id: str


def test_namespace_per_user_from_the_runtime_context(clock: FakeClock) -> None:
    cm = CueMap(clock=clock)
    model = RecordingChatModel()
    agent = create_agent(
        model, context_schema=UserContext, checkpointer=InMemorySaver(),
        middleware=[CueMapMiddleware(cm, namespace=lambda rt: f"user-{rt.context.user_id}")],
    )  # fmt: skip
    _ask(agent, "Remember that my locker code is 4411.", _thread("ann-1"),
         context=UserContext("ann"))  # fmt: skip
    assert [m.namespace for m in cm.memories()] == ["user-ann"]
    _ask(agent, "what is my locker code?", _thread("bob-1"), context=UserContext("bob"))
    assert "4411" not in _system(model)
    _ask(agent, "what is my locker code?", _thread("ann-2"), context=UserContext("ann"))
    assert "4411" in _system(model)


async def test_async_agent_recalls_and_captures(orders: CueMap) -> None:
    model = RecordingChatModel()
    captured: list[CaptureResult] = []
    agent = create_agent(model, checkpointer=InMemorySaver(),
                         middleware=[CueMapMiddleware(orders, k=1, on_capture=captured.append)])  # fmt: skip
    for text in (TURN_1, TURN_2):
        await agent.ainvoke({"messages": [HumanMessage(text)]}, _thread("async"))
    assert FIX in _system(model)
    assert len(captured) == 2 and orders.session("async").turn == 2


def test_hooks_called_directly_without_a_run(orders: CueMap) -> None:
    middleware = CueMapMiddleware(orders, capture_mode="all")
    assert middleware.name == "CueMapMiddleware"
    state: Any = {"messages": [HumanMessage("hi"), AIMessage("hello")]}
    assert middleware.after_agent(state, None) is None  # type: ignore[arg-type]
    assert [m.content for m in orders.memories() if m.source == "chat"] == [
        "user: hi", "assistant: hello",
    ]  # fmt: skip
    assert middleware.after_agent({"messages": [AIMessage("x")]}, None) is None  # type: ignore[arg-type,typeddict-item]


@pytest.mark.parametrize(
    ("options", "field"),
    [({"budget_tokens": -1}, "budget_tokens"), ({"k": 0}, "k"), ({"namespace": 3}, "namespace"),
     ({"capture_mode": "some"}, "capture_mode"), ({"template": "fr"}, "template"),
     ({"hybrid": True}, "hybrid")],
)  # fmt: skip
def test_bad_options(orders: CueMap, options: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        CueMapMiddleware(orders, **options)


def test_conflict_notes_reach_the_block_in_a_thread(clock: FakeClock) -> None:
    cm = CueMap(clock=clock)
    cm.add("The orders API uses POST", memory_id="post", type="fact")
    clock.advance(days=1)
    cm.add("The orders API uses GET", memory_id="get", type="fact")
    model = RecordingChatModel()
    agent = create_agent(model, checkpointer=InMemorySaver(), middleware=[CueMapMiddleware(cm)])
    _ask(agent, "which method does the orders api use?", _thread("n1"))
    assert "may disagree" in _system(model) and "2026-03-02" in _system(model)


def test_chinese_template(orders: CueMap) -> None:
    model = RecordingChatModel(messages=itertools.repeat("好"))
    agent = create_agent(model, middleware=[CueMapMiddleware(orders, template="zh")])
    _ask(agent, "订单为什么超时？")
    assert _system(model).startswith("长期记忆") and "Redis" in _system(model)
