"""``CueMapMiddleware``: long-term memory for ``langchain.agents.create_agent``."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cuemap_integrations import CaptureResult, CueMap, RecallResult, ValidationError
from cuemap_integrations.formatting import TEMPLATES, ContextTemplate
from cuemap_integrations.records import validate_namespace
from cuemap_integrations.tokens import TokenCounter

from ._extra import missing_extra
from ._recall import (
    CaptureMode,
    MemoryBlock,
    RecallSpec,
    acapture_exchange,
    arecall,
    build_block,
    capture_exchange,
    check_hybrid,
    recall,
    session_from_config,
)

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest
    from langchain.agents.middleware.types import ExtendedModelResponse, ModelResponse
    from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, SystemMessage
    from langgraph.config import get_config
    from langgraph.runtime import Runtime
except ImportError as error:  # pragma: no cover - exercised without the extra
    raise missing_extra(error) from None

__all__ = ["CueMapMiddleware", "NamespaceFor"]

NamespaceFor = Callable[[Runtime[Any]], str]
"""Picks the namespace of a run from its runtime, e.g. ``lambda rt: rt.context.user_id``."""

ModelResult = ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]
_CACHE_SIZE = 1024  # (namespace, thread, user message) -> block; one recall per user message


@dataclass(frozen=True)
class _Turn:
    """One user message's recall: where, for what, in which session."""

    key: tuple[str, str | None, str]  # (namespace, session, message id): the cache key
    query: str
    spec: RecallSpec
    session_id: str | None


class CueMapMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Recall before every model call, capture after every run.

    Before each model call (``wrap_model_call`` / ``awrap_model_call``) the latest user message
    is recalled through the thread's session (the session id is ``configurable.session_id`` of
    the run's config if set, else ``configurable.thread_id``; without either, recall is
    stateless) and the
    memory block (at most ``budget_tokens`` tokens) is appended to the system message of that
    call only: it is never written to the agent's state or checkpoints. One user message is one
    session turn: the model calls of a tool loop reuse the block of their user message.

    After the run (``after_agent`` / ``aafter_agent``) the exchange (the last user message and
    the final AI message) goes through ``CueMap.capture``: rules keep what is worth keeping
    (preferences, conventions, facts, tasks), secrets are redacted.

    Args:
        cuemap: the store.
        budget_tokens: the most tokens the memory block may use (default 600).
        k: how many memories are recalled per user message (default 8) before the budget
            decides how many fit.
        namespace: a namespace, or a function of the run's ``Runtime`` returning one (one per
            user: ``lambda runtime: runtime.context["user_id"]``).
        capture: capture each exchange after the run (default True).
        capture_mode: ``"rules"`` (default) or ``"all"`` (store every turn as a transcript).
        hybrid: ``None`` uses the store's setting; ``False`` rules only; ``True`` requires the
            dense fallback.
        template: ``"en"``, ``"zh"`` or a ``ContextTemplate`` for the block.
        encoding: token counting for the budget (an encoding name or a ``TokenCounter``).
        on_recall: called with each new :class:`MemoryBlock` (what was recalled, why, tokens).
        on_capture: called with each ``CaptureResult``.

    Example:
        >>> from langchain.agents import create_agent
        >>> from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
        >>> from langgraph.checkpoint.memory import InMemorySaver
        >>> cm = CueMap()
        >>> _ = cm.add("The API uses port 8001", type="convention")
        >>> blocks = []
        >>> agent = create_agent(
        ...     GenericFakeChatModel(messages=iter(["8001."])), checkpointer=InMemorySaver(),
        ...     middleware=[CueMapMiddleware(cm, on_recall=blocks.append)])
        >>> reply = agent.invoke({"messages": [{"role": "user", "content": "api port?"}]},
        ...                      {"configurable": {"thread_id": "t1"}})
        >>> blocks[0].result.memory_ids == [cm.memories()[0].memory_id], blocks[0].session_id
        (True, 't1')
    """

    def __init__(
        self,
        cuemap: CueMap,
        *,
        budget_tokens: int = 600,
        k: int = 8,
        namespace: str | NamespaceFor = "default",
        capture: bool = True,
        capture_mode: CaptureMode = "rules",
        hybrid: bool | None = None,
        template: ContextTemplate | str = "en",
        encoding: str | TokenCounter = "cl100k_base",
        on_recall: Callable[[MemoryBlock], None] | None = None,
        on_capture: Callable[[CaptureResult], None] | None = None,
    ) -> None:
        super().__init__()
        _check_options(budget_tokens, namespace, capture_mode, template)
        RecallSpec(k=k, hybrid=hybrid)  # validates k
        check_hybrid(cuemap, hybrid)
        self.cuemap = cuemap
        self.budget_tokens = budget_tokens
        self.k = k
        self.namespace = namespace
        self.capture = capture
        self.capture_mode: CaptureMode = capture_mode
        self.hybrid = hybrid
        self.template = template
        self.encoding = encoding
        self.on_recall = on_recall
        self.on_capture = on_capture
        self._blocks: OrderedDict[tuple[str, str | None, str], MemoryBlock] = OrderedDict()
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ before the model
    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResult:
        """Call the model with the memory block added to its system message."""
        turn = self._turn(request)
        block = None if turn is None else self._cached(turn.key)
        if turn is not None and block is None:
            block = self._made(turn, recall(self.cuemap, turn.query, turn.spec, turn.session_id))
        return handler(_with_block(request, block))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResult:
        """Async :meth:`wrap_model_call` (recall runs in a worker thread)."""
        turn = self._turn(request)
        block = None if turn is None else self._cached(turn.key)
        if turn is not None and block is None:
            result = await arecall(self.cuemap, turn.query, turn.spec, turn.session_id)
            block = self._made(turn, result)
        return await handler(_with_block(request, block))

    def _turn(self, request: ModelRequest[Any]) -> _Turn | None:
        """The recall the request's latest user message asks for (None: no user text)."""
        found = _latest_human(request.messages)
        if found is None:
            return None
        position, message = found
        query = str(message.text)
        if not query.strip():
            return None
        namespace = self._namespace_of(request.runtime)
        session_id = _thread_id(request.runtime)
        return _Turn(
            key=(namespace, session_id, message.id or f"#{position}:{query}"),
            query=query,
            spec=RecallSpec(k=self.k, namespace=namespace, hybrid=self.hybrid),
            session_id=session_id,
        )

    def _made(self, turn: _Turn, result: RecallResult) -> MemoryBlock:
        block = build_block(
            result, query=turn.query, namespace=turn.spec.namespace, session_id=turn.session_id,
            budget_tokens=self.budget_tokens, template=self.template, encoding=self.encoding,
        )  # fmt: skip
        with self._lock:
            self._blocks[turn.key] = block
            while len(self._blocks) > _CACHE_SIZE:
                self._blocks.popitem(last=False)
        if self.on_recall is not None:
            self.on_recall(block)
        return block

    def _cached(self, key: tuple[str, str | None, str]) -> MemoryBlock | None:
        with self._lock:
            return self._blocks.get(key)

    def _namespace_of(self, runtime: Runtime[Any] | None) -> str:
        if isinstance(self.namespace, str):
            return self.namespace
        if runtime is None:
            raise ValidationError("namespace", self.namespace, "a run with a runtime")
        return validate_namespace(self.namespace(runtime))

    # ------------------------------------------------------------------ after the run
    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Capture the run's exchange (last user message, final AI message)."""
        exchange = _last_exchange(state["messages"]) if self.capture else None
        if exchange is not None:
            result = capture_exchange(
                self.cuemap, exchange, session_id=_thread_id(runtime),
                namespace=self._namespace_of(runtime), mode=self.capture_mode,
            )  # fmt: skip
            if self.on_capture is not None:
                self.on_capture(result)
        return None

    async def aafter_agent(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Async :meth:`after_agent` (``CueMap.acapture``)."""
        exchange = _last_exchange(state["messages"]) if self.capture else None
        if exchange is not None:
            result = await acapture_exchange(
                self.cuemap, exchange, session_id=_thread_id(runtime),
                namespace=self._namespace_of(runtime), mode=self.capture_mode,
            )  # fmt: skip
            if self.on_capture is not None:
                self.on_capture(result)
        return None


def _check_options(
    budget_tokens: object, namespace: object, capture_mode: object, template: object
) -> None:
    if isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int) or budget_tokens < 0:
        raise ValidationError("budget_tokens", budget_tokens, "an integer >= 0")
    if isinstance(namespace, str):
        validate_namespace(namespace)
    elif not callable(namespace):
        raise ValidationError("namespace", namespace, "a string or a function of the runtime")
    if capture_mode not in ("rules", "all"):
        raise ValidationError("capture_mode", capture_mode, "choose from rules, all")
    if not isinstance(template, ContextTemplate) and template not in TEMPLATES:
        raise ValidationError(
            "template", template, f"choose from {', '.join(TEMPLATES)} or a ContextTemplate"
        )


def _thread_id(runtime: Runtime[Any] | None) -> str | None:
    """The conversation id: the run config's ``session_id``/``thread_id``, else the runtime's."""
    try:
        found = session_from_config(get_config())
    except RuntimeError:  # called outside a run (a unit test calling the hook directly)
        found = None
    info = getattr(runtime, "execution_info", None)
    if found is None and info is not None and info.thread_id:
        found = str(info.thread_id)
    return found


def _latest_human(messages: Sequence[AnyMessage]) -> tuple[int, BaseMessage] | None:
    for position in range(len(messages) - 1, -1, -1):
        if messages[position].type == "human":
            return position, messages[position]
    return None


def _last_exchange(messages: Sequence[AnyMessage]) -> list[BaseMessage] | None:
    """The last user message and the final AI message after it (or the user message alone)."""
    found = _latest_human(messages)
    if found is None:
        return None
    position, human = found
    answers = [m for m in messages[position + 1 :] if m.type == "ai"]
    return [human, answers[-1]] if answers else [human]


def _with_block(request: ModelRequest[Any], block: MemoryBlock | None) -> ModelRequest[Any]:
    """The request with the block appended to its system message (the request is not changed)."""
    if block is None or not block.text:
        return request
    system = request.system_message
    if system is None:
        return request.override(system_message=SystemMessage(content=block.text))
    content = system.content
    merged: str | list[str | dict[Any, Any]] = (
        f"{content}\n\n{block.text}" if isinstance(content, str) and content
        else block.text if isinstance(content, str)
        else [*content, {"type": "text", "text": block.text}]
    )  # fmt: skip
    return request.override(system_message=system.model_copy(update={"content": merged}))
