"""Shared fixtures: a fixed clock, small stores in English and Chinese, and the two backends.

Every test using ``cm`` (or ``location``) runs twice: on SQLite and on PostgreSQL. The PostgreSQL
server comes from ``CUEMAP_TEST_PG_URL`` (default ``postgresql://postgres@127.0.0.1:5432/test``);
each test gets a throw-away schema, dropped afterwards. Without a server those runs are skipped
with a banner in the summary, unless ``CUEMAP_REQUIRE_PG=1`` (CI), which makes them fail.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from cuemap_integrations import CueMap

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
PG_URL = os.environ.get("CUEMAP_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
BACKENDS = ("sqlite", "postgres")
_schemas = itertools.count(1)
_pg_skipped: list[str] = []


class FakeClock:
    """A settable clock: tests decide what "now" is."""

    def __init__(self, start: datetime = T0) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now = self.now + timedelta(**delta)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def _connect(url: str) -> Any:
    psycopg = pytest.importorskip("psycopg", reason="extra [postgres] not installed")
    return psycopg.connect(url, autocommit=True, connect_timeout=5)


@pytest.fixture(scope="session")
def pg_server() -> str:
    """The test server's URL; skips loudly (fails when ``CUEMAP_REQUIRE_PG=1``) if unreachable."""
    try:
        _connect(PG_URL).close()
    except Exception as exc:  # any reason the server cannot be used
        from cuemap_integrations.pgstore import safe_url

        reason = f"PostgreSQL NOT TESTED: {safe_url(PG_URL)} unreachable ({exc})".strip()
        if os.environ.get("CUEMAP_REQUIRE_PG") == "1":
            pytest.fail(f"{reason}; CUEMAP_REQUIRE_PG=1 requires it", pytrace=False)
        _pg_skipped.append(reason)
        pytest.skip(reason)
    return PG_URL


def with_schema(url: str, schema: str) -> str:
    """``url`` with libpq options selecting ``schema``."""
    return f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """A URL to a fresh, empty schema of the test server, dropped after the test."""
    schema = f"cuemap_test_{os.getpid()}_{next(_schemas)}"
    with _connect(pg_server) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        try:
            yield with_schema(pg_server, schema)
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(params=BACKENDS)
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str | Path:
    """Where a store lives: a SQLite file, or a fresh PostgreSQL schema (one test per backend)."""
    if request.param == "sqlite":
        return tmp_path / "m.db"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture(params=BACKENDS)
def cm(request: pytest.FixtureRequest, clock: FakeClock) -> Iterator[CueMap]:
    """An empty store on each backend (SQLite in memory, a fresh PostgreSQL schema)."""
    path = ":memory:" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    with CueMap(path, clock=clock) as store:
        yield store


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _pg_skipped:
        terminalreporter.write_sep("!", "POSTGRESQL BACKEND NOT TESTED", red=True)
        terminalreporter.write_line(_pg_skipped[0])


ORDER_TIMEOUT_EN = [
    ("cause", "Orders were timing out because the Redis cache expired", "fact"),
    ("fix", "Fixed the order timeout by running curl -X POST /ops/clear-cache", "fact"),
    ("port", "The API uses port 8001", "convention"),
    ("schema", "Never change the DB schema without a backup", "convention"),
    ("lang", "I prefer answers in short bullet points", "preference"),
    ("bike", "Repaired my bike's flat tyre on Sunday", "event"),
    ("lunch", "Lunch order for the team goes out at noon", "note"),
]

ORDER_TIMEOUT_ZH = [
    ("zh-cause", "订单超时是因为 Redis 缓存过期导致的", "fact"),
    ("zh-fix", "订单超时的修复方法：执行 curl -X POST /ops/clear-cache 清理缓存", "fact"),
    ("zh-port", "接口统一使用 8001 端口", "convention"),
    ("zh-bike", "周末修了自行车的刹车", "event"),
    ("zh-meeting", "计划周五和支付团队联调", "task"),
]


def load(cm: CueMap, rows: list[tuple[str, str, str]], namespace: str = "default") -> None:
    cm.add_many(
        [{"memory_id": i, "content": c, "type": t, "namespace": namespace} for i, c, t in rows]
    )
