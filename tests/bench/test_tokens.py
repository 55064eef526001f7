"""Token counting: cl100k_base offline when a local file exists, UTF-8 bytes otherwise."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from cuemap_integrations.bench.tokens import TokenCounter, find_cl100k_file


def test_bytes_fallback() -> None:
    counter = TokenCounter.bytes_only()
    assert counter.count("héllo") == 6
    assert counter.describe() == {
        "encoding": "utf-8 bytes",
        "exact": False,
        "source": "UTF-8 bytes",
    }


def test_given_file_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not found"):
        TokenCounter.cl100k(tmp_path / "missing.tiktoken")


def test_given_file_must_be_cl100k(tmp_path: Path) -> None:
    if importlib.util.find_spec("tiktoken") is None:
        pytest.skip("tiktoken is not installed (extra [hybrid])")
    fake = tmp_path / "fake.tiktoken"
    fake.write_text("aGVsbG8= 0\n", encoding="utf-8")
    with pytest.raises(ValueError, match="SHA-256"):
        TokenCounter.cl100k(fake)


def test_cl100k_counts_when_a_local_file_exists() -> None:
    path = find_cl100k_file()
    if path is None or importlib.util.find_spec("tiktoken") is None:
        pytest.skip("no local cl100k_base file (llama-index-core) or no tiktoken")
    counter = TokenCounter.cl100k()
    assert counter.exact
    assert counter.count("hello world") == 2
    assert counter.count("tiktoken is great!") == 6  # the OpenAI cookbook example
