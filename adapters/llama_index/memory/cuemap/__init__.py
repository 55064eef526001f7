"""LlamaIndex memory backed by a cuemap-integrations store: continuous, cue-based recall.

- :class:`CueMapMemory`: a ``BaseMemory`` for chat engines and agents
  (``chat_engine(memory=...)``, ``agent.run(..., memory=...)``).
- :class:`CueMapMemoryBlock`: a block for ``Memory.from_defaults(memory_blocks=[...])``.
"""

from llama_index.memory.cuemap.base import CueMapMemory
from llama_index.memory.cuemap.block import CueMapMemoryBlock

__all__ = ["CueMapMemory", "CueMapMemoryBlock"]
