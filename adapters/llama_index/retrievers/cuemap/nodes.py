"""Recall hits as LlamaIndex nodes: one :class:`MemoryNode` per memory, scored by the recall.

Example:
    >>> from cuemap_integrations import CueMap
    >>> cm = CueMap()
    >>> _ = cm.add("The API uses port 8001", type="convention", memory_id="port")
    >>> node = hit_to_node(cm.recall("which port?")[0])
    >>> node.node.id_, node.node.text, node.node.metadata["type"], node.score > 0
    ('port', 'The API uses port 8001', 'convention', True)
"""

from __future__ import annotations

from hashlib import sha256
from typing import Any

from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import NodeWithScore, TextNode

from cuemap_integrations.records import MemoryRecord
from cuemap_integrations.results import Hit

__all__ = ["CAPTURE_KEYS", "HIT_KEYS", "MemoryNode", "hit_to_node", "memory_metadata"]

HIT_KEYS = (
    "memory_id", "type", "source", "created_at", "namespace", "hit_source", "breakdown",
    "conflicts",
)  # fmt: skip
"""The keys the retriever adds to every node's metadata (the memory's own keys come first)."""

CAPTURE_KEYS = (
    "session_id", "rule", "confidence", "timestamp", "speaker", "role", "key", "redacted",
)  # fmt: skip
"""Bookkeeping keys that ``CueMap.capture`` writes into a memory's metadata."""

# Recall diagnostics and ids help code, not the LLM or an embedding model.
_NOT_FOR_LLM = ("memory_id", "namespace", "hit_source", "breakdown", "conflicts", *CAPTURE_KEYS)
_NOT_FOR_EMBED = (*_NOT_FOR_LLM, "created_at", "source")
_RENAMED = "memory_"  # prefix of a memory's own key that collides with one of HIT_KEYS


class MemoryNode(TextNode):
    """A ``TextNode`` whose identity is the memory (text and own metadata), not the recall.

    ``TextNode.hash`` covers all metadata, so the per-recall keys (score breakdown, conflicts)
    would make the same memory look like two nodes to ``QueryFusionRetriever``, which merges
    results by hash. This hash is the one a plain ``TextNode`` with the memory's text and own
    metadata has, so fusion with another retriever over the same nodes merges them. It
    serializes as a plain ``TextNode``.
    """

    _identity: str | None = PrivateAttr(default=None)

    @property
    def hash(self) -> str:
        if self._identity is None:  # not built by hit_to_node (e.g. copied): TextNode's hash
            return super().hash
        identity = str(self.text) + self._identity
        return sha256(identity.encode("utf-8", "surrogatepass")).hexdigest()


def memory_metadata(hit: Hit) -> dict[str, Any]:
    """The node metadata of a hit: the memory's own keys, then :data:`HIT_KEYS`.

    A memory's own key that collides with one of :data:`HIT_KEYS` is kept as ``memory_<key>``.
    """
    memory: MemoryRecord = hit.memory
    own = {(_RENAMED + k if k in HIT_KEYS else k): v for k, v in memory.metadata.items()}
    return {
        **own,
        "memory_id": memory.memory_id,
        "type": memory.type.value,
        "source": memory.source,
        "created_at": memory.created_at.isoformat(),
        "namespace": memory.namespace,
        "hit_source": hit.source,
        "breakdown": hit.breakdown.as_dict(),
        "conflicts": list(hit.conflicts),
    }


def hit_to_node(hit: Hit) -> NodeWithScore:
    """A :class:`MemoryNode` (id = memory id, text = content) scored with the hit's score."""
    metadata = memory_metadata(hit)
    node = MemoryNode(
        id_=hit.memory_id,
        text=hit.content,
        extra_info=metadata,  # the constructor name of ``metadata`` (its alias)
        excluded_llm_metadata_keys=[
            k for k, v in metadata.items() if k in _NOT_FOR_LLM or v is None
        ],
        excluded_embed_metadata_keys=[
            k for k, v in metadata.items() if k in _NOT_FOR_EMBED or v is None
        ],
    )
    node._identity = str(hit.memory.metadata)  # TextNode.hash is sha256(text + str(metadata))
    return NodeWithScore(node=node, score=hit.score)
