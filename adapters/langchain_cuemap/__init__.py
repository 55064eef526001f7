"""LangChain and LangGraph integration of cuemap-integrations (extra ``[langchain]``).

* :class:`CueMapRetriever`: a ``BaseRetriever`` with continuous recall per session.
* :class:`CueMapMiddleware`: memory for ``langchain.agents.create_agent`` (recall before each
  model call, capture after each run).
* :class:`CueMapMemory`: memory for classic chains (``ConversationChain``, ``LLMChain``).
* :class:`CueMapStore`: a LangGraph ``BaseStore`` searched by cue recall.
* :class:`MemoryBlock`: one recall and the prompt block made from it.
"""

from ._recall import MemoryBlock
from .memory import CueMapMemory
from .middleware import CueMapMiddleware
from .retrievers import CueMapRetriever
from .store import CueMapStore

__all__ = [
    "CueMapMemory",
    "CueMapMiddleware",
    "CueMapRetriever",
    "CueMapStore",
    "MemoryBlock",
]
