"""LlamaIndex retrievers integration of cuemap-integrations (being written)."""
