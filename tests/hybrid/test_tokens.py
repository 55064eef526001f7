"""Exact token counts offline: the same numbers as tiktoken on the same BPE file; UTF-8 bytes,
an upper bound, when no file or no tiktoken is available."""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuemap_integrations import ValidationError, tokens
from cuemap_integrations.tokens import ENCODINGS, TokenCounter, clear_encoding_cache, load_encoding

HAVE_TIKTOKEN = importlib.util.find_spec("tiktoken") is not None
LLAMA_CACHE = tokens._llama_index_cache_dirs()
CL100K_FILE = next((d / ENCODINGS["cl100k_base"].cache_name for d in LLAMA_CACHE
                    if (d / ENCODINGS["cl100k_base"].cache_name).is_file()), None)  # fmt: skip
needs_bpe = pytest.mark.skipif(
    not HAVE_TIKTOKEN or CL100K_FILE is None,
    reason="EXACT TOKEN COUNTS NOT TESTED: tiktoken or llama-index-core's cl100k_base copy missing",
)

SAMPLES = [
    "hello world",
    "tiktoken is great!",
    "订单超时的修复方法：执行 curl -X POST /ops/clear-cache 清理缓存",
    "emoji 🎉👩‍👩‍👧 and spaces   \n\n\t tabs",
    "<|endoftext|> is plain text here",
    "def f(x):\n    return x ** 2  # code",
    "",
]


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    clear_encoding_cache()
    yield
    clear_encoding_cache()


@pytest.fixture
def no_local_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty"))
    monkeypatch.delenv("CUEMAP_TIKTOKEN_FILE", raising=False)
    monkeypatch.setattr(tokens, "_llama_index_cache_dirs", lambda: [])


@needs_bpe
@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_counts_equal_tiktoken_on_the_same_file(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import tiktoken

    cache = next(d for d in LLAMA_CACHE if (d / ENCODINGS[name].cache_name).is_file())
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))  # tiktoken reads its cache: no network
    reference = tiktoken.get_encoding(name)
    counter = load_encoding(name)
    assert counter.exact and counter.name == name
    for text in SAMPLES:
        assert counter.encode(text) == reference.encode_ordinary(text)
        assert counter.count(text) == len(reference.encode_ordinary(text))


@functools.lru_cache(maxsize=1)
def reference_cl100k() -> Any:
    """tiktoken's own Encoding, built by tiktoken from its cache (the llama-index copy)."""
    import tiktoken

    assert CL100K_FILE is not None
    old = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(CL100K_FILE.parent)
    try:
        return tiktoken.get_encoding("cl100k_base")
    finally:
        if old is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = old


@needs_bpe
@settings(max_examples=60, deadline=None)
@given(st.text(max_size=300))
def test_counts_equal_tiktoken_on_any_text(text: str) -> None:
    reference = reference_cl100k()
    assert load_encoding("cl100k_base").count(text) == len(reference.encode_ordinary(text))


@needs_bpe
def test_lookup_order_and_hash_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    assert CL100K_FILE is not None
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    monkeypatch.delenv("CUEMAP_TIKTOKEN_FILE", raising=False)
    copy = cache / ENCODINGS["cl100k_base"].cache_name
    shutil.copy(CL100K_FILE, copy)
    assert str(copy) in load_encoding("cl100k_base").source  # tiktoken's cache before llama-index
    clear_encoding_cache()
    copy.write_bytes(b"aGVsbG8= 0\n")  # not the real file: ignored, llama-index's copy used
    counter = load_encoding("cl100k_base")
    assert (
        counter.exact and str(CL100K_FILE) in counter.source and "SHA-256 mismatch" in caplog.text
    )
    with pytest.raises(ValidationError, match="SHA-256"):
        load_encoding("cl100k_base", copy)
    with pytest.raises(ValidationError, match="not found"):
        load_encoding("cl100k_base", tmp_path / "missing.tiktoken")
    explicit = load_encoding("cl100k_base", CL100K_FILE)
    assert explicit.exact and explicit is load_encoding("cl100k_base", CL100K_FILE)  # cached


def test_the_module_constructor_is_not_modified() -> None:
    if not HAVE_TIKTOKEN:
        pytest.skip("tiktoken not installed")
    from tiktoken_ext import openai_public

    before = openai_public.load_tiktoken_bpe
    load_encoding("cl100k_base")
    assert openai_public.load_tiktoken_bpe is before


def test_bytes_when_no_file(no_local_files: None) -> None:
    counter = load_encoding("cl100k_base")
    assert not counter.exact and counter.name == "utf-8 bytes" and "no local" in counter.source
    assert counter.count("héllo 日本") == len("héllo 日本".encode())
    assert counter.encode("é") == [0xC3, 0xA9]


def test_bytes_when_no_tiktoken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # import tiktoken -> ImportError
    counter = load_encoding("cl100k_base")
    assert not counter.exact and "tiktoken is not installed" in counter.source


def test_unknown_encoding_lists_the_known_ones() -> None:
    with pytest.raises(ValidationError, match="choose from cl100k_base, o200k_base"):
        load_encoding("p50k_base")


def test_byte_truncation_cuts_at_a_character_boundary() -> None:
    counter = TokenCounter.bytes_only()
    assert counter.truncate("日本語テキスト", 10) == "日本…"  # 6 bytes + 3 for "…" <= 10
    assert counter.truncate("日本語", 9) == "日本語"  # fits: unchanged
    assert counter.truncate("日本語テキスト", 2) == ""  # not even "…" fits
    with pytest.raises(ValidationError, match="max_tokens"):
        counter.truncate("x", -1)


@needs_bpe
def test_truncation_at_a_token_boundary() -> None:
    counter = load_encoding("cl100k_base")
    text = "The order timeout was fixed by clearing the cache with curl"
    cut = counter.truncate(text, 5)
    assert cut.endswith("…") and counter.count(cut) <= 5
    assert text.startswith(cut[:-1])
    assert counter.truncate(text, 100) == text


COUNTERS = ["bytes"] + (["cl100k_base"] if HAVE_TIKTOKEN and CL100K_FILE else [])


@pytest.mark.parametrize("which", COUNTERS)
@settings(max_examples=80, deadline=None)
@given(text=st.text(alphabet=st.characters(codec="utf-8"), max_size=200) | st.sampled_from(SAMPLES),
       budget=st.integers(min_value=0, max_value=60))  # fmt: skip
def test_truncate_never_exceeds_and_keeps_a_prefix(which: str, text: str, budget: int) -> None:
    counter = TokenCounter.bytes_only() if which == "bytes" else load_encoding(which)
    cut = counter.truncate(text, budget)
    assert counter.count(cut) <= budget
    assert cut == text or cut == "" or (cut.endswith("…") and text.startswith(cut[:-1]))


def test_bench_names_still_work() -> None:
    from cuemap_integrations.bench import tokens as bench_tokens

    assert bench_tokens.TokenCounter is TokenCounter
    assert bench_tokens.CL100K_SHA256 == ENCODINGS["cl100k_base"].sha256
    assert (
        hashlib.sha1(bench_tokens.CL100K_URL.encode()).hexdigest()
        == ENCODINGS["cl100k_base"].cache_name
    )
