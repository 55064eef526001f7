"""``CueMapRetriever``: deterministic, explainable cue-based recall as a LlamaIndex retriever."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.constants import DEFAULT_SIMILARITY_TOP_K
from llama_index.core.schema import BaseNode, IndexNode, MetadataMode, NodeWithScore, QueryBundle

from cuemap_integrations import CueMap, RecallConfig, RecallResult, RecallSession
from cuemap_integrations.errors import ValidationError
from cuemap_integrations.ranking import Filters
from cuemap_integrations.records import MemoryType, validate_namespace

from .nodes import hit_to_node
from .persist import STORE_FILE, backup_store, read_settings, write_settings

__all__ = ["CueMapRetriever"]

_MAX_K = 10_000


def _check_top_k(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= _MAX_K:
        raise ValidationError("similarity_top_k", value, f"an integer from 1 to {_MAX_K}")
    return value


class CueMapRetriever(BaseRetriever):
    """Retrieve memories from a :class:`~cuemap_integrations.CueMap` store as scored nodes.

    Each node is a ``TextNode`` whose ``id_`` is the memory id and whose text is the memory's
    content; its score is the recall score (strictly meaningful, best first, so
    ``QueryFusionRetriever`` can fuse it with other retrievers; the node's ``hash`` leaves the
    per-recall metadata out, so fusion merges it with the same node from another retriever,
    see :class:`~llama_index.retrievers.cuemap.nodes.MemoryNode`). Metadata: the memory's own
    metadata, then ``memory_id``, ``type``, ``source``, ``created_at``, ``namespace``,
    ``hit_source`` (``"cue"`` or ``"dense"``), ``breakdown`` (each rule's part of the score and
    what matched) and ``conflicts`` (ids of memories it may disagree with). Ids, diagnostics and
    capture bookkeeping are excluded from the LLM's and the embedding model's view.

    With ``session_id``, every retrieve is one turn of a continuous-recall session: "how did we
    fix it?" inherits the cues of the previous question. Without it every retrieve stands alone.

    Args:
        cuemap: the store.
        similarity_top_k: how many memories at most (LlamaIndex's default, 2).
        namespace: the namespace recalled from (never crossed).
        session_id: a conversation id for continuous recall, or None for stateless recall.
        skip_shown: with a session, never return a memory an earlier turn returned.
        types / sources / since / until / min_score: recall filters (see ``CueMap.recall``).
        callback_manager / objects / object_map / verbose: as for any ``BaseRetriever``.

    Raises:
        ValidationError: a bad ``similarity_top_k``, namespace, session id or filter.

    Example:
        >>> from llama_index.retrievers.cuemap import CueMapRetriever
        >>> retriever = CueMapRetriever.from_defaults(
        ...     texts=["The API uses port 8001", "Never change the DB schema without a backup"],
        ...     similarity_top_k=1)
        >>> [(n.node.text, n.node.metadata["type"]) for n in retriever.retrieve("api port?")]
        [('The API uses port 8001', 'note')]
    """

    def __init__(
        self,
        cuemap: CueMap,
        similarity_top_k: int = DEFAULT_SIMILARITY_TOP_K,
        *,
        namespace: str = "default",
        session_id: str | None = None,
        skip_shown: bool = False,
        types: Iterable[MemoryType | str] | None = None,
        sources: Iterable[str] | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        min_score: float | None = None,
        callback_manager: CallbackManager | None = None,
        objects: list[IndexNode] | None = None,
        object_map: dict[str, Any] | None = None,
        verbose: bool = False,
    ) -> None:
        if not isinstance(cuemap, CueMap):
            raise ValidationError("cuemap", cuemap, "a CueMap store")
        self.cuemap = cuemap
        self.similarity_top_k = _check_top_k(similarity_top_k)
        self.namespace = validate_namespace(namespace)
        self.filters = Filters.build(types=types, sources=sources, since=since, until=until)
        if min_score is not None and (
            isinstance(min_score, bool) or not isinstance(min_score, (int, float))
        ):
            raise ValidationError("min_score", min_score, "a number or None")
        self.min_score = min_score
        self.session: RecallSession | None = (
            None
            if session_id is None
            else cuemap.session(session_id, namespace=self.namespace, skip_shown=skip_shown)
        )
        self._owns_store = False
        super().__init__(
            callback_manager=callback_manager,
            object_map=object_map,
            objects=objects,
            verbose=verbose,
        )

    # ----------------------------------------------------------------- construction
    @classmethod
    def from_defaults(
        cls,
        *,
        texts: Sequence[str] | None = None,
        nodes: Sequence[BaseNode] | None = None,
        documents: Sequence[BaseNode] | None = None,
        cuemap: CueMap | None = None,
        path: str | os.PathLike[str] | None = None,
        config: RecallConfig | Mapping[str, Any] | None = None,
        store_options: Mapping[str, Any] | None = None,
        similarity_top_k: int = DEFAULT_SIMILARITY_TOP_K,
        namespace: str = "default",
        session_id: str | None = None,
        **kwargs: Any,
    ) -> CueMapRetriever:
        """A retriever over a store, optionally filling it with texts, nodes or documents first.

        Args:
            texts: strings to remember (ids derived from the content; adding twice is a no-op).
            nodes / documents: LlamaIndex nodes or documents; each becomes one memory with the
                node's id, its text (``MetadataMode.NONE``) and its metadata (must be JSON-safe).
                Memories are short statements: split long documents into nodes first.
            cuemap: an open store to use (the caller keeps ownership), or
            path: a SQLite file (or ``":memory:"``) to open; the retriever owns it (``close``).
            config: recall configuration for a store opened from ``path``.
            store_options: other ``CueMap`` arguments for it (``clock``, ``redaction``,
                ``hybrid``, ``durable``).
            similarity_top_k / namespace / session_id / **kwargs: see the class.

        Raises:
            ValidationError: both or neither of ``cuemap``/``path`` with nothing to add, more
                than one of ``texts``/``nodes``/``documents``, or invalid items (nothing stored).
            DuplicateIdError: a node id is already stored with different text.
        """
        given = [name for name, v in (("texts", texts), ("nodes", nodes), ("documents", documents)) if v is not None]  # fmt: skip
        if len(given) > 1:
            raise ValidationError("from_defaults", given, "at most one of texts, nodes, documents")
        if cuemap is not None and (path, config, store_options) != (None, None, None):
            raise ValidationError(
                "path", path, "None (and no config or store_options) when a cuemap is passed"
            )
        if cuemap is None and path is None and not given:
            raise ValidationError(
                "from_defaults", None, "texts, nodes, documents, a cuemap or a path"
            )
        store = (
            cuemap
            if cuemap is not None
            else CueMap(path or ":memory:", config=config, **(store_options or {}))
        )
        try:
            namespace = validate_namespace(namespace)
            items = _items(store, namespace, texts, nodes if nodes is not None else documents)
            if items:
                store.add_many(items)
            retriever = cls(
                store,
                similarity_top_k,
                namespace=namespace,
                session_id=session_id,
                **kwargs,
            )
        except BaseException:
            if cuemap is None:
                store.close()
            raise
        retriever._owns_store = cuemap is None
        return retriever

    def close(self) -> None:
        """Close the store if this retriever opened it (``from_defaults(path=...)``)."""
        if self._owns_store:
            self.cuemap.close()

    # ----------------------------------------------------------------- retrieval
    def _recall_kwargs(self) -> dict[str, Any]:
        f = self.filters
        return {
            "k": self.similarity_top_k,
            "min_score": self.min_score,
            "types": f.types,
            "sources": f.sources,
            "since": f.since,
            "until": f.until,
        }

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """Recall for ``query_bundle.query_str`` (one session turn when a session is set)."""
        if self.session is not None:
            result = self.session.recall(query_bundle.query_str, **self._recall_kwargs())
        else:
            result = self.cuemap.recall(
                query_bundle.query_str, namespace=self.namespace, **self._recall_kwargs()
            )
        return _nodes(result)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """:meth:`_retrieve` without blocking the event loop (the core's async twins)."""
        if self.session is not None:
            result = await self.session.arecall(query_bundle.query_str, **self._recall_kwargs())
        else:
            result = await self.cuemap.arecall(
                query_bundle.query_str, namespace=self.namespace, **self._recall_kwargs()
            )
        return _nodes(result)

    # ----------------------------------------------------------------- persistence
    def get_persist_args(self) -> dict[str, Any]:
        """The settings :meth:`persist` writes (JSON-safe)."""
        f = self.filters
        return {
            "similarity_top_k": self.similarity_top_k,
            "namespace": self.namespace,
            "session_id": None if self.session is None else self.session.session_id,
            "skip_shown": False if self.session is None else self.session.skip_shown,
            "types": None if f.types is None else sorted(t.value for t in f.types),
            "sources": None if f.sources is None else sorted(f.sources),
            "since": None if f.since is None else f.since.isoformat(),
            "until": None if f.until is None else f.until.isoformat(),
            "min_score": self.min_score,
            "config": self.cuemap.config.to_dict(),
        }

    def persist(self, persist_dir: str | os.PathLike[str], encoding: str = "utf-8") -> None:
        """Copy the store into ``persist_dir/cuemap.db`` and the settings into ``retriever.json``.

        The copy uses SQLite's backup API, so it is consistent even while the store is in use,
        and it carries the sessions' state: a restored session continues where it stopped.
        """
        directory = Path(persist_dir)
        directory.mkdir(parents=True, exist_ok=True)
        backup_store(self.cuemap, directory / STORE_FILE)
        write_settings(directory, self.get_persist_args(), encoding)

    @classmethod
    def from_persist_dir(
        cls,
        persist_dir: str | os.PathLike[str],
        encoding: str = "utf-8",
        store_options: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> CueMapRetriever:
        """Open a retriever saved by :meth:`persist`; ``kwargs`` override saved settings.

        The store is opened in place (``persist_dir/cuemap.db``, with ``store_options`` such as
        ``clock``) and owned by the retriever.

        Raises:
            ValidationError: ``persist_dir`` holds no persisted retriever.
        """
        directory = Path(persist_dir)
        settings = {**read_settings(directory, encoding), **kwargs}
        config = settings.pop("config", None)
        if isinstance(config, dict) and "aliases" in config:  # JSON has lists, not tuples
            config["aliases"] = tuple(tuple(group) for group in config["aliases"])
        return cls.from_defaults(
            path=directory / STORE_FILE, config=config, store_options=store_options, **settings
        )


def _nodes(result: RecallResult) -> list[NodeWithScore]:
    return [hit_to_node(hit) for hit in result]


def _items(
    store: CueMap,
    namespace: str,
    texts: Sequence[str] | None,
    nodes: Sequence[BaseNode] | None,
) -> list[dict[str, Any]]:
    """``add_many`` items for texts or nodes; nodes already stored with the same text are skipped."""
    if texts is not None:
        if isinstance(texts, str):
            raise ValidationError("texts", texts, "a list of strings, not one string")
        return [{"content": text, "namespace": namespace} for text in texts]
    items: list[dict[str, Any]] = []
    for node in nodes or ():
        content = node.get_content(metadata_mode=MetadataMode.NONE)
        if (namespace, node.node_id) in store:
            if store.get(node.node_id, namespace=namespace).content == content:
                continue  # already remembered: from_defaults over a persistent path is idempotent
        items.append(
            {
                "content": content,
                "memory_id": node.node_id,
                "metadata": dict(node.metadata),
                "namespace": namespace,
            }
        )
    return items
