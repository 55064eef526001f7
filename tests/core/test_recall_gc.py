"""A recall (and a session turn) pauses the cyclic collector (``core._cycle_collection_paused``
with ``promote=False``) and asks nothing of frozen objects."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from unittest import mock

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


@RECALLS
@pytest.mark.usefixtures("collector")
def test_no_collection_runs_during_a_recall(recall: Callable[[CueMap, str], RecallResult]) -> None:
    """With the young threshold at 1 every allocation would start a collection: none does
    while the recall runs (a session turn paused none before), and the collector is on after."""
    started: list[int] = []
    inside = [False]  # in CueMap._recall (both ask it)
    real = CueMap._recall

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and inside[0]:
            started.append(info["generation"])

    def watched(self: CueMap, *args: object, **kwargs: object) -> RecallResult:
        inside[0] = True
        try:
            return real(self, *args, **kwargs)  # type: ignore[arg-type]
        finally:
            inside[0] = False

    with CueMap() as cm, mock.patch.object(CueMap, "_recall", watched):
        cm.add_many(_ITEMS)
        threshold = gc.get_threshold()
        gc.callbacks.append(seen)
        gc.set_threshold(1, *threshold[1:])
        try:
            assert recall(cm, "which port does the API use").hits
        finally:
            gc.set_threshold(*threshold)
            gc.callbacks.remove(seen)
        assert started == []
        assert gc.isenabled()


@RECALLS
@pytest.mark.usefixtures("collector")
def test_a_recall_asks_nothing_of_frozen_objects(
    recall: Callable[[CueMap, str], RecallResult],
) -> None:
    """A pre-fork server freezes its objects: a recall leaves them frozen and does not ask how
    many there are (``gc.get_freeze_count`` walks them all: a recall paid x2.3-2.5 so)."""
    sentinel: list[object] = []  # a container the collector tracks
    with CueMap() as cm:
        cm.add_many(_ITEMS)
        gc.freeze()
        with mock.patch.object(gc, "get_freeze_count", side_effect=AssertionError("asked")):
            assert recall(cm, "which port does the API use").hits
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
