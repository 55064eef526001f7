"""The same sequence of operations -- adds, batches, updates, deletes, supersessions, captures,
forgets and session turns, not only adds as in tests/core/test_determinism.py -- gives identical
exported stores and rankings in two fresh stores, and in processes with different hash seeds."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cuemap_integrations import CueMap, CueMapError
from tests.conftest import T0

WORDS = ("order", "timeout", "cache", "redis", "port", "api", "订单", "缓存", "bike", "backup",
         "schema", "deploy", "friday", "payment", "prefer", "tea", "coffee")  # fmt: skip
QUERIES = ("order timeout cache", "api port", "订单 缓存", "prefer tea or coffee", "deploy friday")


def operations(seed: int, count: int = 60) -> list[list[Any]]:
    """A seeded random operation sequence (JSON-safe, so a subprocess can replay it)."""
    rng = random.Random(seed)
    ops: list[list[Any]] = []
    for _ in range(count):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6)))
        kind = rng.choice(("add", "add", "add_many", "update", "delete", "key", "capture",
                           "forget", "session"))  # fmt: skip
        ops.append([kind, text, rng.randint(0, 30), rng.choice(("fact", "note", "event"))])
    return ops


def replay(cm: CueMap, ops: list[list[Any]]) -> dict[str, Any]:
    """Apply ``ops``; return the export, every ranking seen and every outcome."""
    outcomes: list[Any] = []
    for kind, text, n, memory_type in ops:
        ids = [m.memory_id for m in cm.memories()]
        target = ids[n % len(ids)] if ids else "none"
        try:
            outcomes.append(_one(cm, kind, text, n, memory_type, target))
        except CueMapError as exc:
            outcomes.append(f"{type(exc).__name__}: {exc}")
    rankings = [[(h.memory_id, round(h.score, 9)) for h in cm.recall(q, k=10)] for q in QUERIES]
    export = [json.dumps(m.to_dict(), ensure_ascii=False, sort_keys=True) for m in cm.memories()]
    return {"export": export, "rankings": rankings, "outcomes": outcomes}


def _one(cm: CueMap, kind: str, text: str, n: int, memory_type: str, target: str) -> Any:
    if kind == "add":
        return cm.add(text, type=memory_type).memory_id
    if kind == "add_many":
        return [r.memory_id for r in cm.add_many([{"content": text}, {"content": f"{text} {n}"}])]
    if kind == "update":
        return cm.update(target, content=f"{text} updated").memory_id
    if kind == "delete":
        return cm.delete(target).memory_id
    if kind == "key":
        return cm.add(text, key=f"topic.{n % 3}", type="fact").supersedes
    if kind == "capture":
        said = [{"role": "user", "content": f"I prefer {text}"}]
        return [r.memory_id for r in cm.capture(said, session_id=f"c{n % 2}").records]
    if kind == "forget":
        return [r.memory_id for r in cm.forget(types=[memory_type], before="2026-03-01T12:00:00Z")]
    return cm.session(f"s{n % 2}").recall(text, k=5).memory_ids


def _fresh(path: str = ":memory:") -> CueMap:
    return CueMap(path, clock=lambda: T0)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_two_fresh_stores_end_identical(seed: int) -> None:
    ops = operations(seed, 40)
    with _fresh() as first, _fresh() as second:
        assert replay(first, ops) == replay(second, ops)


_SCRIPT = (
    "import json, sys\n"
    "from tests.reliability.test_determinism import _fresh, operations, replay\n"
    "with _fresh(sys.argv[1]) as cm:\n"
    "    print(json.dumps(replay(cm, operations(int(sys.argv[2]))), ensure_ascii=False))\n"
)


def test_file_stores_in_processes_with_different_hash_seeds_end_identical(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    outputs = []
    for hash_seed in ("0", "1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        db = tmp_path / f"seed{hash_seed}.db"
        done = subprocess.run(
            [sys.executable, "-c", _SCRIPT, str(db), "20261130"],
            cwd=root, env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
        outputs.append(done.stdout)
    assert json.loads(outputs[0])["export"]  # something was stored
    assert outputs[1] == outputs[0] and outputs[2] == outputs[0]
    with _fresh() as here:  # and the same as this process, in memory
        assert json.loads(outputs[0]) == json.loads(json.dumps(replay(here, operations(20261130))))
