"""``CueMapMemory``: a LlamaIndex chat memory with cue-based long-term recall."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from llama_index.core.async_utils import asyncio_run
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.bridge.pydantic import ConfigDict, Field, PrivateAttr, SerializeAsAny
from llama_index.core.memory import BaseMemory, Memory
from llama_index.core.memory.memory import DEFAULT_TOKEN_LIMIT
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from cuemap_integrations import CaptureResult, CueMap, RecallResult, RecallSession
from cuemap_integrations.errors import ValidationError
from cuemap_integrations.formatting import FormattedContext
from cuemap_integrations.ranking import Filters
from cuemap_integrations.records import validate_memory_id, validate_namespace
from cuemap_integrations.tokens import TokenCounter

from ._shared import (
    CapturedSet,
    CaptureMode,
    TemplateName,
    TurnCache,
    capture_items,
    counter_for,
    format_block,
    latest_user_text,
    message_text,
)

__all__ = ["CueMapMemory"]

_MAX_BLOCKS_REMEMBERED = 16  # memory blocks handed out, recognised if they come back in put/set


class CueMapMemory(BaseMemory):
    """Chat memory for chat engines and agents: recent history plus recalled long-term memories.

    It wraps a short-term memory (by default ``Memory.from_defaults(session_id=...,
    token_limit=...)``, counting tokens with the project's exact offline counter) and adds:

    - ``get``/``aget``: the history, preceded by one system message holding the memories the
      session's continuous recall finds for the latest user message (``input`` when given,
      else the last user message of the history, which is what agents rely on), formatted
      within ``budget_tokens`` exact tokens. The block is never stored in the history; a block
      passed back to ``put``/``set`` is recognised and left out. Asking again within the same
      user turn (agents do after each tool call) reuses that turn's recall, so one user turn is
      one session turn.
    - ``put``/``aput``/``put_messages``/``aput_messages``/``set``/``aset``: store the messages
      in the history and capture the user and assistant turns into the store
      (``CueMap.capture``, mode ``capture``), each message once, duplicates of stored memories
      not stored again. System and tool messages are never captured.
    - ``reset``/``areset``: clear the history and the recall session's carried cues; long-term
      memories stay (forget them with ``CueMap.forget``).

    Recall never leaves ``namespace``, and the session is keyed by ``(namespace, session_id)``,
    so conversations and tenants do not leak into each other.

    Attributes:
        cuemap: the long-term store.
        chat_memory: the short-term history.
        session_id: the conversation id (continuous recall state is stored under it).
        namespace: the namespace recalled from and captured into.
        similarity_top_k: memories recalled per turn at most.
        budget_tokens: the most tokens the memory block may have.
        template: ``"en"`` or ``"zh"`` block wording.
        types / min_score: recall filters.
        skip_shown: never show a memory twice in one session.
        capture: ``"rules"``, ``"all"`` (transcript events) or ``"none"``.
        tokenizer_fn: the exact token counter's ``encode`` (chat engines read it).

    Example:
        >>> from cuemap_integrations import CueMap
        >>> from llama_index.core.llms import ChatMessage
        >>> cm = CueMap()
        >>> _ = cm.add("Orders were timing out because the Redis cache expired", type="fact")
        >>> _ = cm.add("Fixed the order timeout with curl -X POST /ops/clear-cache", type="fact")
        >>> _ = cm.add("Fixed the flaky login test by pinning Chrome", type="fact")
        >>> memory = CueMapMemory.from_defaults(cuemap=cm, session_id="t1", similarity_top_k=1)
        >>> memory.put(ChatMessage(role="user", content="why were orders timing out?"))
        >>> block, question = memory.get()
        >>> block.role.value, "Redis cache expired" in block.content, question.content
        ('system', True, 'why were orders timing out?')
        >>> memory.put(ChatMessage(role="user", content="how did we fix it?"))
        >>> "/ops/clear-cache" in memory.get()[0].content  # turn 2 inherits turn 1's cues
        True
        >>> memory.close()
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    cuemap: CueMap = Field(exclude=True, description="The long-term memory store.")
    chat_memory: SerializeAsAny[BaseMemory] = Field(description="The short-term chat history.")
    session_id: str = Field(description="The conversation id of the recall session.")
    namespace: str = Field(default="default", description="Recall and capture namespace.")
    similarity_top_k: int = Field(default=5, ge=1, le=10_000)
    budget_tokens: int = Field(default=600, ge=0)
    template: TemplateName = "en"
    encoding: str | TokenCounter = Field(default="cl100k_base", exclude=True)
    types: tuple[str, ...] | None = None
    min_score: float | None = None
    skip_shown: bool = False
    capture: CaptureMode = "rules"
    tokenizer_fn: Callable[[str], list[Any]] | None = Field(default=None, exclude=True)

    _session: RecallSession = PrivateAttr()
    _counter: TokenCounter = PrivateAttr()
    _turns: TurnCache = PrivateAttr(default_factory=TurnCache)
    _captured: CapturedSet = PrivateAttr(default_factory=CapturedSet)
    _blocks: dict[str, None] = PrivateAttr(default_factory=dict)
    _user_turns: int = PrivateAttr(default=0)
    _owns_store: bool = PrivateAttr(default=False)
    _engine: AsyncEngine | None = PrivateAttr(default=None)
    _last_context: FormattedContext | None = PrivateAttr(default=None)
    _last_capture: CaptureResult | None = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        self._session = self.cuemap.session(
            self.session_id, namespace=self.namespace, skip_shown=self.skip_shown
        )
        Filters.build(types=self.types)  # a bad type fails here, not at the first turn
        self._counter = counter_for(self.encoding)
        if self.tokenizer_fn is None:
            self.tokenizer_fn = self._counter.encode

    @classmethod
    def class_name(cls) -> str:
        return "CueMapMemory"

    @classmethod
    def from_defaults(
        cls,
        *,
        cuemap: CueMap | None = None,
        path: str | os.PathLike[str] | None = None,
        session_id: str | None = None,
        namespace: str = "default",
        chat_history: Sequence[ChatMessage] | None = None,
        token_limit: int = DEFAULT_TOKEN_LIMIT,
        chat_memory: BaseMemory | None = None,
        encoding: str | TokenCounter = "cl100k_base",
        **options: Any,
    ) -> CueMapMemory:
        """A memory over ``cuemap`` (or a store opened at ``path``, owned: see :meth:`close`).

        Args:
            cuemap / path: the long-term store; exactly one of them.
            session_id: the conversation id (default: ``chat_memory``'s, else a new UUID).
            namespace: recall and capture namespace.
            chat_history: initial history (stored and captured, like :meth:`set`).
            token_limit: the default short-term ``Memory``'s token limit.
            chat_memory: your own short-term memory instead of the default ``Memory``.
            encoding: the token counter (an offline encoding name or a ``TokenCounter``).
            **options: the other attributes (``similarity_top_k``, ``budget_tokens``,
                ``template``, ``types``, ``min_score``, ``skip_shown``, ``capture``).

        Raises:
            ValidationError: both or neither of ``cuemap``/``path``; ``chat_history`` together
                with ``chat_memory``; an unknown option; a bad session id or namespace.

        Release what it opened with :meth:`close` / :meth:`aclose` (or ``with``).
        """
        if (cuemap is None) == (path is None):
            raise ValidationError("cuemap", cuemap, "exactly one of cuemap or path")
        if chat_memory is not None and chat_history is not None:
            raise ValidationError("chat_history", "...", "None when chat_memory is given")
        unknown = sorted(set(options) - _OPTIONS)
        if unknown:
            raise ValidationError(
                "option", unknown[0], f"choose from {', '.join(sorted(_OPTIONS))}"
            )
        counter = counter_for(encoding)
        session_id = session_id or getattr(chat_memory, "session_id", None) or str(uuid.uuid4())
        # checked here so the core's ValidationError reaches the caller unwrapped by pydantic
        validate_memory_id(session_id, "session_id")
        validate_namespace(namespace)
        Filters.build(types=options.get("types"))
        engine = None
        if chat_memory is None:
            # our own engine for the default in-process chat store, so close() can release it
            engine = create_async_engine(_IN_MEMORY_CHAT_DB)
            chat_memory = Memory.from_defaults(
                session_id=session_id, token_limit=token_limit, tokenizer_fn=counter.encode,
                async_engine=engine,
            )  # fmt: skip
        store = cuemap if cuemap is not None else CueMap(path or ":memory:")
        try:
            memory = cls(
                cuemap=store, chat_memory=chat_memory, session_id=session_id,
                namespace=namespace, encoding=counter, **options,
            )  # fmt: skip
        except BaseException:
            if cuemap is None:
                store.close()
            raise
        memory._owns_store, memory._engine = cuemap is None, engine
        if chat_history:
            memory.set(list(chat_history))
        return memory

    async def aclose(self) -> None:
        """Release what this memory created: the default chat store's database connection and
        the store opened from ``path``. The caller's ``cuemap`` and ``chat_memory`` stay open."""
        engine, self._engine = self._engine, None
        if engine is not None:
            await engine.dispose()
        if self._owns_store:
            self.cuemap.close()

    def close(self) -> None:
        """:meth:`aclose` from synchronous code."""
        asyncio_run(self.aclose())

    def __enter__(self) -> CueMapMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> CueMapMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ----------------------------------------------------------------- inspection
    @property
    def session(self) -> RecallSession:
        """The continuous-recall session (its ``turn``, ``carried_cues()``)."""
        return self._session

    @property
    def last_context(self) -> FormattedContext | None:
        """The memory block of the latest ``get`` (what went in, what was dropped)."""
        return self._last_context

    @property
    def last_capture(self) -> CaptureResult | None:
        """The latest capture: records stored and what was skipped, with reasons."""
        return self._last_capture

    # ----------------------------------------------------------------- reading
    def get(self, input: str | ChatMessage | None = None, **kwargs: Any) -> list[ChatMessage]:
        """The history with the recalled-memory block first (see the class docstring)."""
        history = self.chat_memory.get(input=_as_text(input), **kwargs)
        query = self._query(input, history)
        result = self._turn_result(query)
        if result is None and query:
            result = self._remember_turn(
                query, self._session.recall(query, **self._recall_kwargs())
            )
        return self._with_block(history, result)

    async def aget(
        self, input: str | ChatMessage | None = None, **kwargs: Any
    ) -> list[ChatMessage]:
        """:meth:`get` without blocking the event loop."""
        history = await self.chat_memory.aget(input=_as_text(input), **kwargs)
        query = self._query(input, history)
        result = self._turn_result(query)
        if result is None and query:
            found = await self._session.arecall(query, **self._recall_kwargs())
            result = self._remember_turn(query, found)
        return self._with_block(history, result)

    def get_all(self) -> list[ChatMessage]:
        """The whole stored history (no memory block)."""
        return self.chat_memory.get_all()

    async def aget_all(self) -> list[ChatMessage]:
        """:meth:`get_all` without blocking the event loop."""
        return await self.chat_memory.aget_all()

    def _query(self, input: str | ChatMessage | None, history: Sequence[ChatMessage]) -> str:
        text = (_as_text(input) or "").strip()
        return text or latest_user_text(history)

    def _recall_kwargs(self) -> dict[str, Any]:
        return {"k": self.similarity_top_k, "types": self.types, "min_score": self.min_score}

    def _turn_result(self, query: str) -> RecallResult | None:
        return self._turns.get((query, self._user_turns)) if query else None

    def _remember_turn(self, query: str, result: RecallResult) -> RecallResult:
        self._turns.put((query, self._user_turns), result)
        return result

    def _with_block(
        self, history: list[ChatMessage], result: RecallResult | None
    ) -> list[ChatMessage]:
        if result is None:
            self._last_context = None
            return history
        context = format_block(result, self.budget_tokens, self._counter, self.template)
        self._last_context = context
        if not context.text:
            return history
        self._blocks[context.text] = None
        while len(self._blocks) > _MAX_BLOCKS_REMEMBERED:
            del self._blocks[next(iter(self._blocks))]
        return [ChatMessage(role=MessageRole.SYSTEM, content=context.text), *history]

    # ----------------------------------------------------------------- writing
    def _own_block(self, message: ChatMessage) -> bool:
        return message.role == MessageRole.SYSTEM and message_text(message) in self._blocks

    def _kept(self, messages: Sequence[ChatMessage]) -> list[ChatMessage]:
        kept = [m for m in messages if not self._own_block(m)]
        self._user_turns += sum(m.role == MessageRole.USER for m in kept)
        return kept

    def _capture(self, messages: Sequence[ChatMessage]) -> None:
        fresh = self._captured.fresh(messages) if self.capture != "none" else []
        if fresh:
            self._last_capture = self.cuemap.capture(
                capture_items(fresh), session_id=self.session_id, namespace=self.namespace,
                mode=self.capture,
            )  # fmt: skip
            self._captured.mark(key for key, _ in fresh)

    async def _acapture(self, messages: Sequence[ChatMessage]) -> None:
        await asyncio.to_thread(self._capture, messages)

    def put(self, message: ChatMessage) -> None:
        """Add a message to the history and capture it (a memory block given back is skipped)."""
        self.put_messages([message])

    async def aput(self, message: ChatMessage) -> None:
        """:meth:`put` without blocking the event loop."""
        await self.aput_messages([message])

    def put_messages(self, messages: list[ChatMessage]) -> None:
        """Add messages to the history and capture them."""
        kept = self._kept(messages)
        if kept:
            _put_all(self.chat_memory.put, self.chat_memory.put_messages, kept)
            self._capture(kept)

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        """:meth:`put_messages` without blocking the event loop."""
        kept = self._kept(messages)
        if kept:
            await _aput_all(self.chat_memory.aput, self.chat_memory.aput_messages, kept)
            await self._acapture(kept)

    def set(self, messages: list[ChatMessage]) -> None:
        """Replace the history with ``messages`` and capture them (stored ones are not repeated)."""
        kept = self._kept(messages)
        self.chat_memory.set(kept)
        self._turns.clear()
        self._capture(kept)

    async def aset(self, messages: list[ChatMessage]) -> None:
        """:meth:`set` without blocking the event loop."""
        kept = self._kept(messages)
        await self.chat_memory.aset(kept)
        self._turns.clear()
        await self._acapture(kept)

    def reset(self) -> None:
        """Clear the history and the session's carried cues; long-term memories stay."""
        self.chat_memory.reset()
        self._forget_conversation()
        self._session.reset()

    async def areset(self) -> None:
        """:meth:`reset` without blocking the event loop."""
        await self.chat_memory.areset()
        self._forget_conversation()
        await asyncio.to_thread(self._session.reset)

    def _forget_conversation(self) -> None:
        self._turns.clear()
        self._captured.clear()
        self._blocks.clear()
        self._last_context = None


_IN_MEMORY_CHAT_DB = "sqlite+aiosqlite:///:memory:"
_OPTIONS = frozenset(
    {"similarity_top_k", "budget_tokens", "template", "types", "min_score", "skip_shown", "capture"}
)


def _as_text(input: str | ChatMessage | None) -> str | None:
    """``input`` as a short-term memory takes it (``BaseMemory.get`` reads a string)."""
    return message_text(input) if isinstance(input, ChatMessage) else input


def _put_all(
    put: Callable[[ChatMessage], None],
    put_many: Callable[[list[ChatMessage]], None],
    messages: list[ChatMessage],
) -> None:
    # one message through put: a short-term memory may treat put and put_messages differently
    if len(messages) == 1:
        put(messages[0])
    else:
        put_many(messages)


async def _aput_all(
    put: Callable[[ChatMessage], Awaitable[None]],
    put_many: Callable[[list[ChatMessage]], Awaitable[None]],
    messages: list[ChatMessage],
) -> None:
    await (put(messages[0]) if len(messages) == 1 else put_many(messages))
