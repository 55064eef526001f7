"""LangChain integration of cuemap-integrations (being written)."""
