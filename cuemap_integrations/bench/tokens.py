"""Token counting for the benchmark: a re-export of :mod:`cuemap_integrations.tokens`.

Contexts are counted with cl100k_base built offline from a local BPE file (``--tiktoken-file``,
``$CUEMAP_TIKTOKEN_FILE``, tiktoken's cache or llama-index-core's copy); without one, as UTF-8
bytes with ``exact=False``.

Example:
    >>> counter = TokenCounter.bytes_only()
    >>> counter.count("héllo"), counter.exact
    (6, False)
"""

from __future__ import annotations

from ..tokens import (
    CL100K_SHA256,
    CL100K_URL,
    ENV_VAR,
    TokenCounter,
    find_cl100k_file,
    read_bpe_ranks,
)

__all__ = ["CL100K_SHA256", "CL100K_URL", "ENV_VAR", "TokenCounter", "find_cl100k_file",
           "read_bpe_ranks"]  # fmt: skip
