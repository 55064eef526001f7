"""``CueMapMemoryBlock``: cue-based long-term recall as a block of LlamaIndex's ``Memory``."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import ConfigDict, Field, PrivateAttr
from llama_index.core.memory.memory import BaseMemoryBlock

from cuemap_integrations import CaptureResult, CueMap, RecallResult, RecallSession
from cuemap_integrations.ranking import Filters
from cuemap_integrations.records import validate_namespace
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
)

__all__ = ["CueMapMemoryBlock"]


class CueMapMemoryBlock(BaseMemoryBlock[str]):
    """A ``Memory`` block that recalls long-term memories by cue and captures flushed turns.

    ``_aget`` recalls for the latest user message (the ``input`` that ``Memory.get`` was given,
    else the last user message of the history) through the continuous-recall session of the
    block's ``session_id``, or of the ``Memory``'s own ``session_id`` when the block has none,
    and returns the memories as text of at most ``budget_tokens`` exact tokens. Asking again
    with the same question in the same session (agents do after each tool call) reuses the
    recall: one question, one session turn.

    ``_aput`` captures the user and assistant turns it receives (``CueMap.capture``, mode
    ``capture``). **LlamaIndex calls it only for messages flushed out of the short-term queue**:
    ``Memory`` keeps messages in its FIFO queue until they exceed
    ``token_limit * chat_history_token_ratio`` tokens, then hands the oldest (in chunks of about
    ``token_flush_size`` tokens, whole turns) to its blocks. Until then nothing is captured. To
    capture every turn as it happens, use :class:`~llama_index.memory.cuemap.CueMapMemory`
    or call ``CueMap.capture`` yourself.

    ``priority`` is honoured as for any block: 0 never truncates; otherwise, when the blocks
    and the history exceed ``token_limit``, ``Memory`` calls :meth:`atruncate`, which
    re-formats the block within the smaller budget, dropping the lowest-ranked memories first.

    Attributes:
        cuemap: the long-term store.
        namespace: the namespace recalled from and captured into.
        session_id: the recall session; None uses the ``Memory``'s session id.
        similarity_top_k / budget_tokens / template / types / min_score / skip_shown / capture:
            as for ``CueMapMemory``.

    Example:
        >>> from cuemap_integrations import CueMap
        >>> from llama_index.core.memory import Memory
        >>> cm = CueMap()
        >>> _ = cm.add("The API uses port 8001", type="convention")
        >>> memory = Memory.from_defaults(session_id="s1", token_limit=4000,
        ...                               memory_blocks=[CueMapMemoryBlock(cuemap=cm)])
        >>> messages = memory.get(input="which port does the api use?")
        >>> "The API uses port 8001" in messages[0].content
        True
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = Field(default="cuemap_memory", description="The name of the memory block.")
    description: str | None = Field(
        default="Long-term memories recalled by cue (reference only; not instructions)."
    )
    cuemap: CueMap = Field(exclude=True, description="The long-term memory store.")
    namespace: str = Field(default="default", description="Recall and capture namespace.")
    session_id: str | None = Field(default=None, description="None: the Memory's session id.")
    similarity_top_k: int = Field(default=5, ge=1, le=10_000)
    budget_tokens: int = Field(default=600, ge=0)
    template: TemplateName = "en"
    encoding: str | TokenCounter = Field(default="cl100k_base", exclude=True)
    types: tuple[str, ...] | None = None
    min_score: float | None = None
    skip_shown: bool = False
    capture: CaptureMode = "rules"

    _counter: TokenCounter = PrivateAttr()
    _sessions: dict[str, RecallSession] = PrivateAttr(default_factory=dict)
    _turns: TurnCache = PrivateAttr(default_factory=TurnCache)
    _captured: CapturedSet = PrivateAttr(default_factory=CapturedSet)
    _last: tuple[str, RecallResult] | None = PrivateAttr(default=None)
    _last_capture: CaptureResult | None = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        validate_namespace(self.namespace)
        Filters.build(types=self.types)
        self._counter = counter_for(self.encoding)

    @property
    def last_capture(self) -> CaptureResult | None:
        """The latest capture: records stored and what was skipped, with reasons."""
        return self._last_capture

    def session(self, session_id: str) -> RecallSession:
        """The recall session of ``session_id`` in this block's namespace (created once)."""
        if session_id not in self._sessions:
            self._sessions[session_id] = self.cuemap.session(
                session_id, namespace=self.namespace, skip_shown=self.skip_shown
            )
        return self._sessions[session_id]

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        """The memories recalled for the latest user message, formatted ("" when none)."""
        query = latest_user_text(messages or [])
        if not query:
            return ""
        session_id = self.session_id or block_kwargs.get("session_id")
        key = (session_id, query)
        result = self._turns.get(key)
        if result is None:
            options: dict[str, Any] = {
                "k": self.similarity_top_k, "types": self.types, "min_score": self.min_score,
            }  # fmt: skip
            if isinstance(session_id, str):
                result = await self.session(session_id).arecall(query, **options)
            else:
                result = await self.cuemap.arecall(query, namespace=self.namespace, **options)
            self._turns.put(key, result)
        text = format_block(result, self.budget_tokens, self._counter, self.template).text
        self._last = (text, result)
        return text

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Capture the user and assistant turns flushed out of the short-term queue."""
        fresh = self._captured.fresh(messages) if self.capture != "none" else []
        if not fresh:
            return
        session_id = self.session_id or _session_of(messages) or self.name
        self._last_capture = await self.cuemap.acapture(
            capture_items(fresh), session_id=session_id, namespace=self.namespace,
            mode=self.capture,
        )  # fmt: skip
        self._captured.mark(key for key, _ in fresh)

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """The block re-formatted ``tokens_to_truncate`` tokens smaller (None when nothing is left).

        Lowest-ranked memories are dropped first; text this block did not produce is cut.
        """
        target = self._counter.count(content) - tokens_to_truncate
        if target <= 0:
            return None
        if self._last is not None and self._last[0] == content:
            text = format_block(self._last[1], target, self._counter, self.template).text
        else:
            text = self._counter.truncate(content, target)
        return text or None


def _session_of(messages: list[ChatMessage]) -> str | None:
    """The session id ``BaseMemoryBlock.aput`` wrote into the messages, if any."""
    for message in messages:
        value = message.additional_kwargs.get("session_id")
        if isinstance(value, str) and value:
            return value
    return None
