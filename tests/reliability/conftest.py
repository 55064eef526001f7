"""Fixtures of the reliability suite: every store is opened through one :class:`Backend`, so a
second backend (PostgreSQL) is one more entry in ``BACKENDS`` and every test runs on it too."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cuemap_integrations import CueMap


@dataclass(frozen=True)
class Backend:
    """How to name and open a store of one kind.

    Attributes:
        name: the pytest id (``"sqlite"``).
        make_url: a fresh, empty store location for a test (given the test's tmp_path).
    """

    name: str
    make_url: Callable[[Path, str], str]

    def url(self, tmp_path: Path, label: str = "store") -> str:
        """A new store location, empty until opened."""
        return self.make_url(tmp_path, label)

    def open(self, url: str, **options: Any) -> CueMap:
        """Open the store at ``url`` with :class:`CueMap` options."""
        return CueMap(url, **options)


def _sqlite_url(tmp_path: Path, label: str) -> str:
    return str(tmp_path / f"{label}.db")


BACKENDS = (Backend("sqlite", _sqlite_url),)


@pytest.fixture(params=BACKENDS, ids=[b.name for b in BACKENDS])
def backend(request: pytest.FixtureRequest) -> Backend:
    """Each reliability test runs once per backend."""
    return request.param  # type: ignore[no-any-return]
