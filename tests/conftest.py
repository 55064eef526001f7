"""Shared fixtures: a fixed clock and small stores in English and Chinese."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest

from cuemap_integrations import CueMap

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)


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


@pytest.fixture
def cm(clock: FakeClock) -> Iterator[CueMap]:
    with CueMap(clock=clock) as store:
        yield store


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
