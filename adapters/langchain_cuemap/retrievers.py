"""``CueMapRetriever``: a LangChain retriever over a :class:`~cuemap_integrations.CueMap`."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from cuemap_integrations import CueMap, Hit, ValidationError
from cuemap_integrations.records import json_safe_copy

from ._extra import missing_extra
from ._recall import (
    RecallSpec,
    arecall,
    check_hybrid,
    check_time,
    check_types,
    recall,
    session_from_config,
)

try:
    from langchain_core.callbacks import (
        AsyncCallbackManagerForRetrieverRun,
        CallbackManagerForRetrieverRun,
    )
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnableConfig, ensure_config
    from pydantic import Field, ValidationInfo, field_validator, model_validator
    from typing_extensions import Self
except ImportError as error:  # pragma: no cover - exercised without the extra
    raise missing_extra(error) from None

__all__ = ["CueMapRetriever", "hit_to_document"]

_IGNORED_KWARGS = frozenset({"verbose"})  # BaseRetriever.invoke passes it through


def hit_to_document(hit: Hit) -> Document:
    """A recalled memory as a ``Document``.

    ``page_content`` is the memory's text and ``id`` its memory id. The metadata holds the
    memory's own metadata (a copy), then these keys, which win over the memory's own:
    ``memory_id``, ``score``, ``breakdown`` (a dict: contributions and matched cues),
    ``source`` (``"cue"`` or ``"dense"``: which ranking found it), ``type``, ``created_at``
    (ISO 8601), ``namespace``, ``conflicts`` (ids of memories it may disagree with), and
    ``memory_source`` (the memory's own ``source`` field, e.g. a file name) when it has one.
    """
    memory = hit.memory
    metadata: dict[str, Any] = json_safe_copy(memory.metadata)
    if memory.source is not None:
        metadata["memory_source"] = memory.source
    metadata.update(
        memory_id=memory.memory_id,
        score=hit.score,
        breakdown=hit.breakdown.as_dict(),
        source=hit.source,
        type=memory.type.value,
        created_at=memory.created_at.isoformat(),
        namespace=memory.namespace,
        conflicts=list(hit.conflicts),
    )
    return Document(page_content=memory.content, id=memory.memory_id, metadata=metadata)


class CueMapRetriever(BaseRetriever):
    """Deterministic cue-based retriever with optional continuous recall (sessions).

    Each call is one recall. With a session id (the ``session_id`` field, the ``session_id=``
    keyword of ``invoke``/``ainvoke``, or ``configurable.session_id`` / ``configurable.thread_id``
    of the run's config, in the reverse of that order of precedence) each call is one turn of
    that conversation: the cues of the previous turns help the next one, so a follow-up like
    "how did we fix it?" finds what the conversation was about. Without one, recall is stateless.

    Args:
        cuemap: the store (not serialized).
        k: how many documents per call (default 4); ``invoke(query, k=...)`` overrides it.
        namespace: the store namespace searched and written.
        session_id: a default conversation id (None: stateless unless the call names one).
        hybrid: ``None`` uses the store's setting; ``False`` ranks by the rules only even if
            the store has the dense fallback; ``True`` requires it.
        types / sources / since / until / min_score: recall filters (see ``CueMap.recall``).

    Example:
        >>> retriever = CueMapRetriever.from_texts(
        ...     ["Orders were timing out because the Redis cache expired",
        ...      "Fixed the order timeout with curl -X POST /ops/clear-cache",
        ...      "Fixed the flaky login test by pinning Chrome"], k=1)
        >>> config = {"configurable": {"session_id": "chat-1"}}
        >>> retriever.invoke("why were orders timing out?", config)[0].page_content
        'Orders were timing out because the Redis cache expired'
        >>> retriever.invoke("how did we fix it?", config)[0].page_content
        'Fixed the order timeout with curl -X POST /ops/clear-cache'
    """

    cuemap: CueMap = Field(exclude=True, repr=False)
    k: int = 4
    namespace: str = "default"
    session_id: str | None = None
    hybrid: bool | None = None
    types: tuple[str, ...] | None = None
    sources: tuple[str, ...] | None = None
    since: datetime | None = None
    until: datetime | None = None
    min_score: float | None = None

    @field_validator("types", mode="before")
    @classmethod
    def _valid_types(cls, value: Any) -> tuple[str, ...] | None:
        return check_types(value)

    @field_validator("since", "until", mode="before")
    @classmethod
    def _aware(cls, value: Any, info: ValidationInfo) -> datetime | None:
        return check_time(value, info.field_name or "since/until")

    @model_validator(mode="after")
    def _valid(self) -> Self:
        self._spec(None)
        check_hybrid(self.cuemap, self.hybrid)
        return self

    def _spec(self, k: int | None) -> RecallSpec:
        return RecallSpec(
            k=self.k if k is None else k, namespace=self.namespace, types=self.types,
            sources=self.sources, since=self.since, until=self.until, min_score=self.min_score,
            hybrid=self.hybrid,
        )  # fmt: skip

    # ------------------------------------------------------------------ retrieval
    def invoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        """Recall documents for ``input``; keyword arguments ``k`` and ``session_id``."""
        return super().invoke(input, config, **self._with_session(config, kwargs))

    async def ainvoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        """Async :meth:`invoke` (recall runs in a worker thread)."""
        return await super().ainvoke(input, config, **self._with_session(config, kwargs))

    @staticmethod
    def _with_session(config: RunnableConfig | None, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The call's kwargs with the run config's session id, unless one was passed."""
        if kwargs.get("session_id") is None:
            found = session_from_config(ensure_config(config))
            if found is not None:
                return {**kwargs, "session_id": found}
        return kwargs

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        session_id: str | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        _check_kwargs(kwargs)
        session = self.session_id if session_id is None else session_id
        result = recall(self.cuemap, query, self._spec(k), session)
        return [hit_to_document(hit) for hit in result]

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        session_id: str | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        _check_kwargs(kwargs)
        session = self.session_id if session_id is None else session_id
        result = await arecall(self.cuemap, query, self._spec(k), session)
        return [hit_to_document(hit) for hit in result]

    # ------------------------------------------------------------------ writing
    def add_documents(
        self, documents: Sequence[Document], ids: Sequence[str] | None = None, **options: Any
    ) -> list[str]:
        """Store documents as memories of this retriever's namespace; return their ids.

        Args:
            documents: ``page_content`` becomes the memory's content, ``metadata`` its
                metadata (JSON-safe), a string ``metadata["source"]`` its ``source``.
            ids: memory ids, one per document; default each document's ``id``, else an id
                derived from the content (a text already stored returns the stored id).
            **options: ``CueMap.add`` options for every document (``type``, ``tags``,
                ``cues``, ``expires_at``...).

        Secrets in the content and metadata are redacted by the store's policy first.

        Raises:
            ValidationError: a bad document or option; nothing is stored.
            DuplicateIdError: an explicit id is already used in the namespace.
        """
        items = _items(documents, ids, self.namespace, options)
        return [record.memory_id for record in self.cuemap.add_many(items)]

    async def aadd_documents(
        self, documents: Sequence[Document], ids: Sequence[str] | None = None, **options: Any
    ) -> list[str]:
        """:meth:`add_documents` without blocking the event loop."""
        items = _items(documents, ids, self.namespace, options)
        return [record.memory_id for record in await self.cuemap.aadd_many(items)]

    @classmethod
    def from_texts(
        cls,
        texts: Iterable[str],
        metadatas: Iterable[Mapping[str, Any]] | None = None,
        ids: Sequence[str] | None = None,
        *,
        cuemap: CueMap | None = None,
        path: str | os.PathLike[str] = ":memory:",
        **kwargs: Any,
    ) -> CueMapRetriever:
        """A retriever over ``texts``, added to ``cuemap`` (default: a new ``CueMap(path)``).

        ``kwargs`` are the retriever's fields (``k``, ``namespace``, ``session_id``...).
        """
        texts = list(texts)
        metas = list(metadatas) if metadatas is not None else [{}] * len(texts)
        if len(metas) != len(texts):
            raise ValidationError("metadatas", len(metas), f"one per text ({len(texts)})")
        documents = [
            Document(page_content=t, metadata=dict(m)) for t, m in zip(texts, metas, strict=True)
        ]
        return cls.from_documents(documents, ids=ids, cuemap=cuemap, path=path, **kwargs)

    @classmethod
    def from_documents(
        cls,
        documents: Iterable[Document],
        ids: Sequence[str] | None = None,
        *,
        cuemap: CueMap | None = None,
        path: str | os.PathLike[str] = ":memory:",
        **kwargs: Any,
    ) -> CueMapRetriever:
        """A retriever over ``documents`` (see :meth:`add_documents` and :meth:`from_texts`)."""
        retriever = cls(cuemap=CueMap(path) if cuemap is None else cuemap, **kwargs)
        retriever.add_documents(list(documents), ids=ids)
        return retriever


def _check_kwargs(kwargs: Mapping[str, Any]) -> None:
    unknown = sorted(set(kwargs) - _IGNORED_KWARGS)
    if unknown:
        raise TypeError(f"CueMapRetriever got unexpected keyword argument(s) {unknown}: "
                        "choose from k, session_id")  # fmt: skip


def _items(
    documents: Sequence[Document],
    ids: Sequence[str] | None,
    namespace: str,
    options: Mapping[str, Any],
) -> list[dict[str, Any]]:
    """``add_many`` items for documents (validated by the core, which also redacts them)."""
    documents = list(documents)
    if ids is not None and len(ids) != len(documents):
        raise ValidationError("ids", len(ids), f"one id per document ({len(documents)})")
    reserved = sorted(set(options) & {"content", "memory_id", "metadata", "namespace"})
    if reserved:
        raise ValidationError("add option", reserved[0], "set per document or by the retriever")
    given = list(ids) if ids is not None else [doc.id for doc in documents]
    items = []
    for doc, memory_id in zip(documents, given, strict=True):
        item: dict[str, Any] = {**options, "namespace": namespace, "content": doc.page_content,
                                "metadata": dict(doc.metadata)}  # fmt: skip
        source = doc.metadata.get("source")
        if isinstance(source, str) and source and "source" not in options:
            item["source"] = source
        if memory_id:
            item["memory_id"] = memory_id
        items.append(item)
    return items
