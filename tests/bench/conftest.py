"""Fixtures of the benchmark tests: the tiny LoCoMo-format file."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import tiny


@pytest.fixture
def tiny_path(tmp_path: Path) -> Path:
    return tiny.write(tmp_path)
