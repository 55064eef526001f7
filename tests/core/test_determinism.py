"""The same store and query give the same ranking under any PYTHONHASHSEED."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import json
    from datetime import datetime, timezone
    from cuemap_integrations import CueMap
    from tests.conftest import ORDER_TIMEOUT_EN, ORDER_TIMEOUT_ZH, load
    fixed = datetime(2026, 3, 1, tzinfo=timezone.utc)
    cm = CueMap(clock=lambda: fixed)
    load(cm, ORDER_TIMEOUT_EN + ORDER_TIMEOUT_ZH)
    for i in range(40):
        cm.add(f"note {i}: the api cache port order schema {i % 5} 订单 缓存", tags=[f"t{i % 3}"])
    for i in range(12):  # transcript turns: speakers and dates a query can name
        who = ["Ana", "Ben", "Cy"][i % 3]
        cm.add(f"the api cache turn {i}", type="event", memory_id=f"turn{i}",
               created_at=datetime(2026, 2, 20 + i % 5, tzinfo=timezone.utc),
               metadata={"session": i // 6, "speaker": who})
    out = []
    for q in ["api cache", "订单超时怎么修", "order port schema", "t1 note", "缓存",
              "what did Ana say about the api cache on 22 February 2026", "Ben, Cy: api in 2026-02"]:
        out.append([(h.memory_id, round(h.score, 9)) for h in cm.recall(q, k=20)])
    s = cm.session("x")
    for q in ["订单超时 是什么问题", "后来怎么修的", "api port"]:
        out.append(s.recall(q, k=10).memory_ids)
    print(json.dumps(out, ensure_ascii=False))
    """
)


def run(seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_rankings_identical_across_hash_seeds() -> None:
    first = run("1")
    assert first.strip().startswith("[[")
    assert run("2") == first
    assert run("12345") == first
