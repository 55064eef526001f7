"""``benchmarks/kernel_ab.py``: two kernel builds timed query by query, and refused when their
results differ."""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any

import pytest

from cuemap_integrations import CueMap, kernel
from cuemap_integrations.bench.scale import _fixed_clock

from ..core.test_arrays import arrays_for_every_size
from . import scripts


@pytest.fixture(scope="module")
def script() -> ModuleType:
    if not kernel.available():
        if os.environ.get("CUEMAP_REQUIRE_KERNEL") == "1":
            pytest.fail("CUEMAP_REQUIRE_KERNEL=1 but the compiled kernel is not available")
        pytest.skip("the compiled kernel is not built (python hatch_build.py builds it)")
    return scripts.load("kernel_ab")


@pytest.fixture
def store() -> CueMap:
    cm = CueMap(clock=_fixed_clock)  # a clock that moves would move recency between builds
    cm.add_many(
        [
            {"content": f"note {i}: the deploy port is {8000 + i % 7} on host h{i % 5}"}
            for i in range(60)
        ]
    )
    return cm


QUERIES = ["which port does the deploy use", "host h3 port", "deploy h1"]


class _Silent:
    """A kernel library whose cm_accumulate finds nothing: results differ from the real one."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def cm_accumulate(self, *args: Any) -> int:
        self._real.cm_accumulate(*args)  # its scratch left zeroed, as the real call leaves it
        return 0

    def cm_accumulate_packed(self, *args: Any) -> int:  # what kernel.accumulate calls
        self._real.cm_accumulate_packed(*args)
        return 0


def test_both_builds_are_timed_for_every_query_and_the_state_is_restored(script, store) -> None:
    lib = kernel._library()
    with arrays_for_every_size():
        seconds = script.measure(store, QUERIES, {"old": lib, "new": lib})
    assert {n: {p: len(v) for p, v in parts.items()} for n, parts in seconds.items()} == {
        n: {"recall": 3, "kernel": 3} for n in ("old", "new")
    }
    assert sum(seconds["new"]["kernel"]) <= sum(seconds["new"]["recall"])
    assert (kernel._lib, kernel._loaded) == (None, False)  # loaded again on next use
    assert kernel.available()


def test_builds_whose_results_differ_stop_the_run(script, store) -> None:
    lib = kernel._library()
    with arrays_for_every_size(), pytest.raises(SystemExit, match="different results"):
        script.measure(store, QUERIES, {"old": lib, "new": _Silent(lib)})


def test_summary_gives_medians_means_and_ratios_after_the_warm_up(script) -> None:
    seconds = {
        "old": {"recall": [9.0, 0.002, 0.004, 0.006], "kernel": [9.0, 0.001, 0.001, 0.004]},
        "new": {"recall": [0.0, 0.001, 0.002, 0.003], "kernel": [0.0, 0.001, 0.002, 0.003]},
    }
    figures = script.summary(seconds, warm=1)
    assert figures["recall_ms_median"] == pytest.approx({"old": 4.0, "new": 2.0, "ratio": 0.5})
    assert figures["kernel_ms_mean"] == pytest.approx({"old": 2.0, "new": 2.0, "ratio": 1.0})
