"""Fixtures for the command-line tests: run ``main()`` in-process against a store in tmp_path."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from cuemap_integrations.cli import main


@dataclass(frozen=True)
class Run:
    """What one ``main()`` call returned and printed."""

    code: int
    out: str
    err: str


Cli = Callable[..., Run]


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A store path under tmp_path; $CUEMAP_DB is cleared so it can never leak in."""
    monkeypatch.delenv("CUEMAP_DB", raising=False)
    return tmp_path / "memories.db"


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Cli:
    """``run(*argv)``: call ``main(argv)`` and capture its exit status, stdout and stderr."""

    def call(*argv: str) -> Run:
        capsys.readouterr()
        code = main(list(argv))
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return call


@pytest.fixture
def cli(run: Cli, db: Path) -> Cli:
    """Like ``run`` with ``--db`` set to the test's store."""

    def call(*argv: str) -> Run:
        return run("--db", str(db), *argv)

    return call
