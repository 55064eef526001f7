"""Fixtures for the LlamaIndex adapters: a small store, LLMs that record their prompts."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.async_utils import asyncio_run  # noqa: E402
from llama_index.core.base.llms.types import (  # noqa: E402
    ChatMessage,
    CompletionResponse,
    MessageRole,
    ToolCallBlock,
)
from llama_index.core.bridge.pydantic import Field  # noqa: E402
from llama_index.core.llms import MockLLM  # noqa: E402
from llama_index.core.llms.callbacks import llm_completion_callback  # noqa: E402
from llama_index.core.llms.mock import MockFunctionCallingLLM  # noqa: E402
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine  # noqa: E402

from cuemap_integrations import CueMap  # noqa: E402
from tests.conftest import FakeClock  # noqa: E402

# The README's store. "how did we fix it?" alone ranks the login fix first; only a session
# that remembers "why were orders timing out?" brings the clear-cache fix to the top.
MEMORIES = [
    ("port", "The API uses port 8001", "convention"),
    ("schema", "Never change the DB schema without a backup", "convention"),
    ("cause", "Orders were timing out because the Redis cache expired", "fact"),
    ("login-fix", "Fixed the flaky login test by pinning Chrome", "fact"),
    ("fix", "Fixed the order timeout with `curl -X POST /ops/clear-cache`", "fact"),
]
TURN_1 = "why were orders timing out?"
TURN_2 = "how did we fix it?"
FIX = "/ops/clear-cache"
OTHER_FIX = "pinning Chrome"


def fill(cm: CueMap, namespace: str = "default") -> CueMap:
    cm.add_many(
        [
            {"memory_id": i, "content": c, "type": t, "namespace": namespace, "source": "ops"}
            for i, c, t in MEMORIES
        ]
    )
    return cm


@pytest.fixture(autouse=True)
def _event_loop_for_sync_tests(request: pytest.FixtureRequest) -> Iterator[None]:
    """Give each synchronous test its own event loop, closed at teardown.

    LlamaIndex's synchronous API (``asyncio_run``: ``Memory.get``, ``put``...) runs coroutines
    on the thread's current loop, creating one with ``asyncio.get_event_loop()`` and never
    closing it. pytest-asyncio's next async test replaces that loop, and the dropped loop warns
    (ResourceWarning, an error here) in whichever test happens to be running when it is
    collected. Async tests keep pytest-asyncio's loop.
    """
    if inspect.iscoroutinefunction(request.function):
        yield
        return
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield
    finally:
        asyncio.set_event_loop(None)  # what pytest-asyncio leaves after an async test
        loop.close()


@pytest.fixture
def store(clock: FakeClock) -> Iterator[CueMap]:
    with CueMap(clock=clock) as cm:
        yield fill(cm)


class RecordingLLM(MockLLM):
    """``MockLLM`` that keeps every prompt it is sent (chat calls arrive here as prompts)."""

    prompts: list[str] = Field(default_factory=list, exclude=True)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.prompts.append(prompt)
        return CompletionResponse(text="Noted.")


class RecordingAgentLLM(MockFunctionCallingLLM):
    """A function-calling mock: calls the first tool once per user turn, then answers, and
    keeps every message list it is sent."""

    calls: list[list[ChatMessage]] = Field(default_factory=list, exclude=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(response_generator=self._respond, **kwargs)

    def _respond(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        self.calls.append([m.model_copy(deep=True) for m in messages])
        last_user = max(i for i, m in enumerate(messages) if m.role == MessageRole.USER)
        answered = any(m.role == MessageRole.TOOL for m in messages[last_user:])
        tools = kwargs.get("tools") or []
        if tools and not answered:
            call = ToolCallBlock(
                tool_call_id=f"call-{len(self.calls)}",
                tool_name=tools[0].metadata.name,
                tool_kwargs={},
            )
            return ChatMessage(role=MessageRole.ASSISTANT, blocks=[call])
        return ChatMessage(role=MessageRole.ASSISTANT, content="Noted.")


def text_of(messages: Sequence[ChatMessage]) -> str:
    return "\n".join(f"{m.role.value}: {m.content or ''}" for m in messages)


@pytest.fixture
def chat_db() -> Iterator[AsyncEngine]:
    """A database for a ``Memory``'s chat store, released after the test (sync tests)."""
    engine = create_async_engine("sqlite+aiosqlite:///:memory:")
    yield engine
    asyncio_run(engine.dispose())


@pytest.fixture
async def achat_db() -> AsyncIterator[AsyncEngine]:
    """:func:`chat_db` for async tests (released in the test's event loop)."""
    engine = create_async_engine("sqlite+aiosqlite:///:memory:")
    yield engine
    await engine.dispose()
