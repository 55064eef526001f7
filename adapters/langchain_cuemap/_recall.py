"""Recall as the adapters need it: stateless or one turn of a session, sync or async, with the
per-call dense switch, and the token-budgeted memory block built from the hits.

Nothing here imports LangChain: the adapters convert framework types at their own edge.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from cuemap_integrations import CaptureResult, CueMap, RecallResult, ValidationError
from cuemap_integrations.formatting import ContextTemplate, FormattedContext, format_context
from cuemap_integrations.ranking import Filters
from cuemap_integrations.records import MemoryType, coerce_timestamp, validate_namespace
from cuemap_integrations.tokens import TokenCounter

__all__ = [
    "CaptureMode",
    "MemoryBlock",
    "RecallSpec",
    "acapture_exchange",
    "arecall",
    "build_block",
    "capture_exchange",
    "check_hybrid",
    "recall",
    "session_from_config",
]

CaptureMode = Literal["rules", "all"]
UNTHREADED = "unthreaded"
"""The ``session_id`` written into captured memories when a conversation has no thread id."""


@dataclass(frozen=True)
class RecallSpec:
    """What to recall: how many hits, from which namespace, with which filters.

    Attributes:
        k: how many hits at most.
        namespace: the store namespace searched.
        types / sources / since / until / min_score: :meth:`CueMap.recall`'s filters.
        hybrid: ``None`` uses the store's setting; ``False`` ranks by the rules only even when
            the store has the dense fallback; ``True`` requires the dense fallback.
    """

    k: int
    namespace: str = "default"
    types: tuple[str, ...] | None = None
    sources: tuple[str, ...] | None = None
    since: datetime | None = None
    until: datetime | None = None
    min_score: float | None = None
    hybrid: bool | None = None

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, int) or not 1 <= self.k <= 10_000:
            raise ValidationError("k", self.k, "an integer from 1 to 10000")
        validate_namespace(self.namespace)
        Filters.build(**self.filter_args())  # fail at construction, not at the first recall

    def filter_args(self) -> dict[str, Any]:
        """The filters as :meth:`CueMap.recall` keyword arguments."""
        return {"types": self.types, "sources": self.sources, "since": self.since,
                "until": self.until}  # fmt: skip


def check_hybrid(cuemap: CueMap, hybrid: bool | None) -> None:
    """Refuse ``hybrid=True`` on a store without the dense fallback (it would be ignored).

    Raises:
        ValidationError: ``hybrid`` is True and the store was not opened with ``hybrid=...``.
    """
    if hybrid is True and cuemap.extension is None:
        raise ValidationError(
            "hybrid", hybrid, "None or False unless the CueMap was opened with hybrid=True"
        )


def check_types(values: Sequence[str] | None) -> tuple[str, ...] | None:
    """Memory type names, validated (``ValidationError`` lists the valid ones)."""
    if values is None:
        return None
    if isinstance(values, str):
        values = [values]
    return tuple(MemoryType.coerce(v, "types").value for v in values)


def check_time(value: datetime | str | None, name: str) -> datetime | None:
    """An aware timestamp (or None), validated like the core does."""
    return None if value is None else coerce_timestamp(value, name)


def session_from_config(config: Mapping[str, Any] | None) -> str | None:
    """The session id a LangChain ``RunnableConfig`` names: ``configurable.session_id``, else
    ``configurable.thread_id`` (LangGraph's conversation id), else None."""
    configurable = (config or {}).get("configurable") or {}
    for name in ("session_id", "thread_id"):
        value = configurable.get(name)
        if value is not None and value != "":
            return str(value)
    return None


def recall(
    cuemap: CueMap, query: str, spec: RecallSpec, session_id: str | None = None
) -> RecallResult:
    """Recall for ``query``: stateless when ``session_id`` is None, else one session turn.

    The session is loaded from the store on every call, so every adapter (and process) sharing
    the store continues the same conversation. The result always carries its trace.
    """
    check_hybrid(cuemap, spec.hybrid)
    session = None if session_id is None else cuemap.session(session_id, namespace=spec.namespace)
    if session is not None:
        return session.recall(query, k=spec.k, min_score=spec.min_score, explain=True,
                              hybrid=spec.hybrid, **spec.filter_args())  # fmt: skip
    return cuemap.recall(query, k=spec.k, namespace=spec.namespace, min_score=spec.min_score,
                         explain=True, hybrid=spec.hybrid, **spec.filter_args())  # fmt: skip


async def arecall(
    cuemap: CueMap, query: str, spec: RecallSpec, session_id: str | None = None
) -> RecallResult:
    """:func:`recall` without blocking the event loop (``CueMap.arecall`` or
    ``RecallSession.arecall``; the session's state is also loaded in a worker thread)."""
    check_hybrid(cuemap, spec.hybrid)
    if session_id is not None:
        session = await asyncio.to_thread(cuemap.session, session_id, namespace=spec.namespace)
        return await session.arecall(query, k=spec.k, min_score=spec.min_score, explain=True,
                                     hybrid=spec.hybrid, **spec.filter_args())  # fmt: skip
    return await cuemap.arecall(query, k=spec.k, namespace=spec.namespace,
                                min_score=spec.min_score, explain=True, hybrid=spec.hybrid,
                                **spec.filter_args())  # fmt: skip


@dataclass(frozen=True)
class MemoryBlock:
    """One recall and the prompt block made from it.

    Attributes:
        query: the text recalled for (the latest user message).
        namespace: the namespace recalled from.
        session_id: the conversation's session, or None for a stateless recall.
        result: the ranked hits, their breakdowns (why each was found) and the trace.
        context: the formatted block (``text``, ``tokens``, ``included``, ``dropped``...).

    Example:
        >>> from cuemap_integrations import CueMap
        >>> cm = CueMap()
        >>> _ = cm.add("The API uses port 8001", type="convention")
        >>> block = build_block(cm.recall("api port?"), query="api port?", namespace="default",
        ...                     session_id=None, budget_tokens=200, encoding=TokenCounter.bytes_only())
        >>> print(block.text.splitlines()[-1][:24])
        - The API uses port 8001
        >>> block.tokens <= 200, block.context.included == tuple(block.result.memory_ids)
        (True, True)
    """

    query: str
    namespace: str
    session_id: str | None
    result: RecallResult
    context: FormattedContext = field(repr=False)

    @property
    def text(self) -> str:
        """The block's text ("" when nothing was recalled or nothing fits the budget)."""
        return self.context.text

    @property
    def tokens(self) -> int:
        """The block's token count (never above its budget)."""
        return self.context.tokens


def build_block(
    result: RecallResult,
    *,
    query: str,
    namespace: str,
    session_id: str | None,
    budget_tokens: int,
    template: ContextTemplate | str = "en",
    encoding: str | TokenCounter = "cl100k_base",
) -> MemoryBlock:
    """Format ``result`` within ``budget_tokens`` (see :func:`format_context`)."""
    context = format_context(
        result, budget_tokens=budget_tokens, encoding=encoding,
        template=template,  # type: ignore[arg-type]  # a name is checked by format_context
    )  # fmt: skip
    return MemoryBlock(query, namespace, session_id, result, context)


def capture_exchange(
    cuemap: CueMap,
    messages: Sequence[object],
    *,
    session_id: str | None,
    namespace: str,
    mode: CaptureMode,
) -> CaptureResult:
    """``cuemap.capture`` on one exchange (returns the ``CaptureResult``)."""
    return cuemap.capture(list(messages), session_id=session_id or UNTHREADED,
                          namespace=namespace, mode=mode)  # fmt: skip


async def acapture_exchange(
    cuemap: CueMap,
    messages: Sequence[object],
    *,
    session_id: str | None,
    namespace: str,
    mode: CaptureMode,
) -> CaptureResult:
    """:func:`capture_exchange` without blocking the event loop (``cuemap.acapture``)."""
    return await cuemap.acapture(list(messages), session_id=session_id or UNTHREADED,
                                 namespace=namespace, mode=mode)  # fmt: skip
