"""Counting the tokens of a retrieved context with cl100k_base, offline.

``tiktoken.get_encoding("cl100k_base")`` downloads its BPE file, and this harness runs without a
network. The encoding is built here from a local copy of that file instead: a path given by the
caller (``--tiktoken-file`` or ``CUEMAP_TIKTOKEN_FILE``), else the copy that llama-index-core ships
in ``llama_index/core/_static/tiktoken_cache/``. The pattern and special tokens are tiktoken's own
(``tiktoken_ext.openai_public.cl100k_base``), read from its source with the downloading call
replaced. When neither tiktoken nor a file is available, tokens are counted as UTF-8 bytes and the
counter says ``exact=False``.

Example:
    >>> counter = TokenCounter.bytes_only()
    >>> counter.count("héllo"), counter.exact
    (6, False)
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["CL100K_SHA256", "CL100K_URL", "TokenCounter", "find_cl100k_file"]

CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
ENV_VAR = "CUEMAP_TIKTOKEN_FILE"


def find_cl100k_file(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """A local cl100k_base BPE file: ``explicit``, ``$CUEMAP_TIKTOKEN_FILE``, or llama-index's copy."""
    for candidate in (explicit, os.environ.get(ENV_VAR)):
        if candidate:
            path = Path(candidate)
            if not path.is_file():
                raise FileNotFoundError(f"tiktoken BPE file not found: {path}")
            return path
    cache_name = hashlib.sha1(CL100K_URL.encode()).hexdigest()
    for root in _llama_index_core_dirs():
        path = root / "_static" / "tiktoken_cache" / cache_name
        if path.is_file():
            return path
    return None


def _llama_index_core_dirs() -> list[Path]:
    """Where ``llama_index.core`` is installed, found without importing it."""
    try:
        spec = importlib.util.find_spec("llama_index.core")
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    return [Path(p) for p in spec.submodule_search_locations]


def read_bpe_ranks(bpe_file: Path, expected_hash: str | None = None) -> dict[bytes, int]:
    """Parse a ``.tiktoken`` file (base64 token, rank per line) after checking its SHA-256.

    Done here rather than with ``tiktoken.load.load_tiktoken_bpe``, which also writes a cached copy
    of the file under the system temporary directory.

    Raises:
        ValueError: the file's hash is not ``expected_hash``.
    """
    data = bpe_file.read_bytes()
    if expected_hash and hashlib.sha256(data).hexdigest() != expected_hash:
        raise ValueError(f"{bpe_file} is not the cl100k_base BPE file (SHA-256 mismatch)")
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _cl100k_spec(bpe_file: Path) -> dict[str, Any]:
    """tiktoken's own cl100k_base constructor arguments, with ``bpe_file`` as the ranks' source."""
    from tiktoken_ext import openai_public

    def local_ranks(_url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        return read_bpe_ranks(bpe_file, expected_hash)

    original = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = local_ranks  # the module looks the name up at call time
    try:
        spec: dict[str, Any] = openai_public.cl100k_base()
    finally:
        openai_public.load_tiktoken_bpe = original
    return spec


class TokenCounter:
    """Counts tokens with cl100k_base when it can be built offline, else UTF-8 bytes.

    Attributes:
        exact: True for real cl100k_base counts.
        source: where the encoding came from, or why bytes are counted.
    """

    def __init__(self, encode: Callable[[str], int], exact: bool, source: str) -> None:
        self._count = encode
        self.exact = exact
        self.source = source
        self._cache: dict[str, int] = {}

    @classmethod
    def bytes_only(cls, reason: str = "UTF-8 bytes") -> TokenCounter:
        """A counter of UTF-8 bytes (the fallback; ``exact`` is False)."""
        return cls(lambda text: len(text.encode("utf-8")), False, reason)

    @classmethod
    def cl100k(cls, bpe_file: str | os.PathLike[str] | None = None) -> TokenCounter:
        """cl100k_base from ``bpe_file`` or a known local copy; UTF-8 bytes when impossible."""
        try:
            path = find_cl100k_file(bpe_file)
        except FileNotFoundError as exc:
            raise ValueError(str(exc)) from None
        if path is None:
            return cls.bytes_only("UTF-8 bytes: no local cl100k_base file (pass --tiktoken-file)")
        try:
            import tiktoken
        except ImportError:
            return cls.bytes_only("UTF-8 bytes: tiktoken is not installed (extra [hybrid])")
        encoding = tiktoken.Encoding(**_cl100k_spec(path))
        return cls(
            lambda text: len(encoding.encode_ordinary(text)), True, f"cl100k_base from {path}"
        )

    def count(self, text: str) -> int:
        """Tokens of ``text`` (cached: contexts repeat across systems and cut-offs)."""
        cached = self._cache.get(text)
        if cached is None:
            cached = self._cache[text] = self._count(text)
        return cached

    def describe(self) -> dict[str, Any]:
        """Plain data for the JSON report."""
        return {"encoding": "cl100k_base" if self.exact else "utf-8 bytes", "exact": self.exact,
                "source": self.source}  # fmt: skip
