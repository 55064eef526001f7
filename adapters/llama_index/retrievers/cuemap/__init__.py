"""LlamaIndex retriever over a cuemap-integrations memory store.

Example:
    >>> from llama_index.retrievers.cuemap import CueMapRetriever
    >>> retriever = CueMapRetriever.from_defaults(texts=["The API uses port 8001"])
    >>> retriever.retrieve("which port does the api use?")[0].node.text
    'The API uses port 8001'
"""

from llama_index.retrievers.cuemap.base import CueMapRetriever

__all__ = ["CueMapRetriever"]
