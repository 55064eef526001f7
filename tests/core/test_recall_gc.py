"""A recall pauses the cyclic collector and hands what it leaves to the oldest generation
(``core._cycle_collection_paused``), for plain and session recalls alike."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable, Iterator

import pytest

from cuemap_integrations import CueMap, RecallResult

_ITEMS = [{"content": f"turn {i}: the API on port 80{i:02d} needs a restart"} for i in range(40)]


def _plain(cm: CueMap, query: str) -> RecallResult:
    return cm.recall(query, k=5)


def _session(cm: CueMap, query: str) -> RecallResult:
    return cm.session("s1").recall(query, k=5)


RECALLS = pytest.mark.parametrize("recall", [_plain, _session], ids=["recall", "session"])


@pytest.fixture
def collector() -> Iterator[None]:
    """The collector on and nothing frozen, as the test found it afterwards."""
    was = gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        gc.unfreeze()
        (gc.enable if was else gc.disable)()


def _in(generation: int, obj: object) -> bool:
    return any(o is obj for o in gc.get_objects(generation))


@RECALLS
@pytest.mark.usefixtures("collector")
def test_what_a_recall_leaves_joins_the_oldest_generation(
    recall: Callable[[CueMap, str], RecallResult],
) -> None:
    with CueMap() as cm:
        cm.add_many(_ITEMS)
        result = recall(cm, "which port does the API use")
        assert result.hits  # something was found, so the result holds tracked objects
        assert gc.is_tracked(result)
        # left young, the recall's survivors started a young collection every few recalls
        assert not _in(0, result) and not _in(1, result)
        assert _in(2, result)
        assert gc.isenabled()


@RECALLS
@pytest.mark.usefixtures("collector")
def test_a_recall_leaves_frozen_objects_frozen(
    recall: Callable[[CueMap, str], RecallResult],
) -> None:
    sentinel: list[object] = []  # a container the collector tracks
    with CueMap() as cm:
        cm.add_many(_ITEMS)
        gc.freeze()  # as a pre-fork server does
        recall(cm, "which port does the API use")
        assert gc.get_freeze_count() > 0
        assert not any(o is sentinel for o in gc.get_objects())  # still frozen
        assert gc.isenabled()


@RECALLS
def test_a_recall_leaves_a_disabled_collector_disabled(
    recall: Callable[[CueMap, str], RecallResult],
) -> None:
    was = gc.isenabled()
    gc.disable()
    try:
        with CueMap() as cm:
            cm.add_many(_ITEMS)
            recall(cm, "which port does the API use")
            assert not gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


class _Cycle:
    def __init__(self) -> None:
        self.me = self


@pytest.mark.usefixtures("collector")
def test_a_cycle_a_recall_promoted_is_freed_by_a_full_collection() -> None:
    """Promoting loses nothing: a reference cycle alive when the recall ended and dropped
    afterwards is freed by the next full collection."""
    with CueMap() as cm:
        cm.add_many(_ITEMS)
        cycle = _Cycle()
        ref = weakref.ref(cycle)
        result = cm.recall("which port does the API use", k=5)
        assert _in(2, cycle) and _in(2, result)
        del cycle
        gc.collect()
        assert ref() is None
