"""Exact token counts without a network: tiktoken encodings built from BPE files on disk.

``tiktoken.get_encoding("cl100k_base")`` downloads its BPE file on first use. Here the file is
looked up locally, in this order:

1. the ``path`` you pass (or ``$CUEMAP_TIKTOKEN_FILE``, for cl100k_base only);
2. tiktoken's own cache directory (``$TIKTOKEN_CACHE_DIR``, else ``$DATA_GYM_CACHE_DIR``, else
   ``<tmp>/data-gym-cache``), where tiktoken stores a file under the SHA-1 of its URL;
3. the copies that llama-index-core ships in ``llama_index/core/_static/tiktoken_cache/``.

Each file's SHA-256 is checked against the published one. The pattern and special tokens are
tiktoken's own (``tiktoken_ext.openai_public``), read by calling its constructor with the
downloading loader swapped for a local one (on a copy of the function, so nothing global changes).
When no file is found, or tiktoken is not installed, tokens are counted as UTF-8 bytes, an upper
bound on any BPE count, and the counter says ``exact=False``.

Example:
    >>> counter = TokenCounter.bytes_only()
    >>> counter.count("héllo"), counter.exact
    (6, False)
    >>> counter.truncate("hello world", 8)
    'hello…'
"""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib.util
import logging
import os
import tempfile
import threading
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ValidationError

__all__ = [
    "CL100K_SHA256",
    "CL100K_URL",
    "ENCODINGS",
    "BpeFile",
    "TokenCounter",
    "clear_encoding_cache",
    "find_bpe_file",
    "find_cl100k_file",
    "load_encoding",
    "read_bpe_ranks",
]

logger = logging.getLogger("cuemap_integrations")

ENV_VAR = "CUEMAP_TIKTOKEN_FILE"
_COUNT_CACHE = 4096  # distinct texts whose counts a counter remembers
_CACHED_CHARS = 8192  # ... if they are at most this long


@dataclass(frozen=True)
class BpeFile:
    """Where tiktoken downloads an encoding's BPE ranks from, and the file's SHA-256."""

    url: str
    sha256: str

    @property
    def cache_name(self) -> str:
        """The file name tiktoken's cache uses: the SHA-1 of the URL."""
        return hashlib.sha1(self.url.encode()).hexdigest()


_BASE_URL = "https://openaipublic.blob.core.windows.net/encodings/"
ENCODINGS: dict[str, BpeFile] = {
    "cl100k_base": BpeFile(
        _BASE_URL + "cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": BpeFile(
        _BASE_URL + "o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}
CL100K_URL = ENCODINGS["cl100k_base"].url
CL100K_SHA256 = ENCODINGS["cl100k_base"].sha256


def _known(name: str) -> BpeFile:
    if name not in ENCODINGS:
        raise ValidationError("encoding", name, f"choose from {', '.join(ENCODINGS)}")
    return ENCODINGS[name]


def tiktoken_cache_dir() -> Path | None:
    """tiktoken's cache directory, chosen as tiktoken chooses it (None when caching is off)."""
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in os.environ:
            return Path(os.environ[var]) if os.environ[var] else None
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def _llama_index_cache_dirs() -> list[Path]:
    """llama-index-core's bundled tiktoken cache, found without importing llama_index."""
    try:
        spec = importlib.util.find_spec("llama_index.core")
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    return [Path(p) / "_static" / "tiktoken_cache" for p in spec.submodule_search_locations]


def _matches(path: Path, expected: str) -> bool:
    return hashlib.sha256(path.read_bytes()).hexdigest() == expected


def find_bpe_file(
    name: str = "cl100k_base", path: str | os.PathLike[str] | None = None
) -> Path | None:
    """The local BPE file of encoding ``name``: ``path``, then tiktoken's cache, then llama-index's.

    Args:
        name: ``"cl100k_base"`` or ``"o200k_base"``.
        path: a file you provide; for cl100k_base ``$CUEMAP_TIKTOKEN_FILE`` is used when None.

    Returns:
        The path, or None when no copy is on disk.

    Raises:
        ValidationError: unknown ``name``; ``path`` (or the environment variable) names a file
            that does not exist or is not that encoding's file (SHA-256 mismatch).
    """
    spec = _known(name)
    given = (
        path if path is not None else (os.environ.get(ENV_VAR) if name == "cl100k_base" else None)
    )
    if given:
        found = Path(given)
        if not found.is_file():
            raise ValidationError("path", str(found), "an existing tiktoken BPE file (not found)")
        if not _matches(found, spec.sha256):
            raise ValidationError("path", str(found), f"the {name} BPE file (SHA-256 mismatch)")
        return found
    cache = tiktoken_cache_dir()
    for root in ([cache] if cache else []) + _llama_index_cache_dirs():
        candidate = root / spec.cache_name
        if candidate.is_file():
            if _matches(candidate, spec.sha256):
                return candidate
            logger.warning("ignoring %s: not the %s BPE file (SHA-256 mismatch)", candidate, name)
    return None


def find_cl100k_file(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """:func:`find_bpe_file` for cl100k_base (kept for the benchmark's callers)."""
    return find_bpe_file("cl100k_base", explicit)


def read_bpe_ranks(bpe_file: Path, expected_hash: str | None = None) -> dict[bytes, int]:
    """Parse a ``.tiktoken`` file (a base64 token and its rank per line).

    Done here rather than with ``tiktoken.load.load_tiktoken_bpe``, which may download the file
    and writes a cached copy under the temporary directory.

    Raises:
        ValidationError: the file's SHA-256 is not ``expected_hash``.
    """
    data = bpe_file.read_bytes()
    if expected_hash and hashlib.sha256(data).hexdigest() != expected_hash:
        raise ValidationError("path", str(bpe_file), "a tiktoken BPE file (SHA-256 mismatch)")
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _encoding_spec(name: str, bpe_file: Path) -> dict[str, Any]:
    """tiktoken's constructor arguments for ``name`` with the ranks read from ``bpe_file``.

    The constructor in ``tiktoken_ext.openai_public`` is called through a copy of the function
    whose globals map ``load_tiktoken_bpe`` to a local reader: the module itself is untouched.
    """
    from tiktoken_ext import openai_public

    def local_ranks(_url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        return read_bpe_ranks(bpe_file, expected_hash)

    original = getattr(openai_public, name)
    scope = {**original.__globals__, "load_tiktoken_bpe": local_ranks}
    constructor = types.FunctionType(original.__code__, scope, original.__name__)
    spec: dict[str, Any] = constructor()
    return spec


class TokenCounter:
    """Counts, encodes and truncates text with one encoding (or UTF-8 bytes as the fallback).

    Attributes:
        name: the encoding's name (``"cl100k_base"``) or ``"utf-8 bytes"``.
        exact: True for real BPE counts; False for the byte fallback (an upper bound).
        source: where the encoding came from, or why bytes are counted.

    Example:
        >>> TokenCounter.bytes_only().truncate("日本語テキスト", 10)
        '日本…'
    """

    def __init__(
        self,
        name: str,
        exact: bool,
        source: str,
        encode: Callable[[str], list[int]],
        decode_bytes: Callable[[Sequence[int]], bytes],
    ) -> None:
        self.name = name
        self.exact = exact
        self.source = source
        self._encode = encode
        self._decode_bytes = decode_bytes
        self._cached_count = functools.lru_cache(maxsize=_COUNT_CACHE)(self._raw_count)

    @classmethod
    def bytes_only(cls, reason: str = "UTF-8 bytes") -> TokenCounter:
        """A counter of UTF-8 bytes (``exact`` is False); ``reason`` becomes its ``source``."""
        return cls("utf-8 bytes", False, reason, lambda t: list(t.encode("utf-8")), bytes)

    @classmethod
    def cl100k(cls, bpe_file: str | os.PathLike[str] | None = None) -> TokenCounter:
        """cl100k_base from ``bpe_file`` or a known local copy (see :func:`load_encoding`)."""
        return load_encoding("cl100k_base", bpe_file)

    def _raw_count(self, text: str) -> int:
        return len(self._encode(text))

    def count(self, text: str) -> int:
        """The number of tokens of ``text`` (special-token strings count as plain text)."""
        if len(text) > _CACHED_CHARS:  # long texts are rarely repeated: do not hold them
            return self._raw_count(text)
        return self._cached_count(text)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (byte values for the fallback)."""
        return self._encode(text)

    def truncate(self, text: str, max_tokens: int, ellipsis: str = "…") -> str:
        """``text`` cut so that it, with ``ellipsis`` appended, has at most ``max_tokens`` tokens.

        The cut falls on a token boundary that is also a character boundary (for the byte
        fallback: a character boundary within the byte budget). Text that fits is returned
        unchanged; when not even the ellipsis fits, the result is ``""``.

        Raises:
            ValidationError: ``max_tokens`` is not an integer >= 0.
        """
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 0:
            raise ValidationError("max_tokens", max_tokens, "an integer >= 0")
        if self.count(text) <= max_tokens:
            return text
        tokens = self._encode(text)
        n = min(max_tokens - self.count(ellipsis), len(tokens))
        while n >= 0:  # re-encoding the cut text can merge differently: check, back off
            head = self._decode_bytes(tokens[:n]).decode("utf-8", errors="ignore")
            candidate = head + ellipsis
            if self.count(candidate) <= max_tokens:
                return candidate
            n -= 1
        return ""

    def describe(self) -> dict[str, Any]:
        """Plain data for reports: encoding, exactness and source."""
        return {"encoding": self.name, "exact": self.exact, "source": self.source}

    def __repr__(self) -> str:
        return f"TokenCounter({self.name!r}, exact={self.exact})"


_LOADED: dict[tuple[str, str | None], TokenCounter] = {}
_LOADED_LOCK = threading.Lock()


def load_encoding(
    name: str = "cl100k_base", path: str | os.PathLike[str] | None = None
) -> TokenCounter:
    """A :class:`TokenCounter` for encoding ``name``, built offline; cached per (name, path).

    Args:
        name: ``"cl100k_base"`` (GPT-4, GPT-3.5) or ``"o200k_base"`` (GPT-4o and later).
        path: a local BPE file; when None the file is searched for (see the module docstring).

    Returns:
        An exact counter, or the UTF-8 byte counter (``exact=False``) when no BPE file is on
        disk or tiktoken is not installed (extra ``[hybrid]``).

    Raises:
        ValidationError: unknown ``name``, or ``path`` is missing or not that encoding's file.
    """
    key = (name, None if path is None else os.fspath(path))
    with _LOADED_LOCK:
        if key not in _LOADED:
            _LOADED[key] = _build(name, path)
        return _LOADED[key]


def _build(name: str, path: str | os.PathLike[str] | None) -> TokenCounter:
    found = find_bpe_file(name, path)
    if found is None:
        logger.info("no local %s BPE file: counting UTF-8 bytes", name)
        return TokenCounter.bytes_only(f"UTF-8 bytes: no local {name} file (pass a path)")
    try:
        import tiktoken
    except ImportError:
        return TokenCounter.bytes_only(
            "UTF-8 bytes: tiktoken is not installed (pip install 'cuemap-integrations[hybrid]')"
        )
    encoding = tiktoken.Encoding(**_encoding_spec(name, found))
    return TokenCounter(
        name, True, f"{name} from {found}", encoding.encode_ordinary, encoding.decode_bytes
    )


def clear_encoding_cache() -> None:
    """Forget the counters :func:`load_encoding` built (e.g. after installing a BPE file)."""
    with _LOADED_LOCK:
        _LOADED.clear()
