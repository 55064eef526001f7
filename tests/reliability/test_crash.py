"""A child bulk-adding memories is killed with SIGKILL at random moments: on reopen every
acknowledged memory is there, intact, and the store passes ``check()``."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from cuemap_integrations import CueMap
from cuemap_integrations.bench.workload import NAMESPACE, crash_round, payload

from .conftest import Backend

KILLS = 10


def test_every_acknowledged_memory_survives_random_sigkills(
    backend: Backend, tmp_path: Path
) -> None:
    survive_kills(backend.url(tmp_path), backend.open)


def test_every_acknowledged_memory_survives_random_sigkills_on_postgres(pg_url: str) -> None:
    # PostgreSQL's own durability, and the change log written in the same transaction as each
    # memory: a killed writer leaves no half-applied change for the next instance to read.
    survive_kills(pg_url, CueMap)


def survive_kills(url: str, open_store: Callable[[str], CueMap]) -> None:
    rng = random.Random(20261130)
    acknowledged: list[str] = []
    for kill in range(KILLS):
        result = crash_round(url, f"k{kill}", rng, open_store=open_store)
        assert result.lost == () and result.problems == ()
        assert result.acknowledged  # the kill came after at least one acknowledged write
        acknowledged += result.acknowledged
    with open_store(url) as cm:
        stored = cm.memories(namespace=NAMESPACE)
    assert set(acknowledged) <= {m.memory_id for m in stored}
    # a write in flight at the kill may or may not have landed, but never half of it
    assert [m.memory_id for m in stored if m.content != payload(m.memory_id)] == []
