"""LlamaIndex memory integration of cuemap-integrations (being written)."""
