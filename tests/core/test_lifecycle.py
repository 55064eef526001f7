"""Supersession by key, conflict links, duplicates, expiry by type, forget and history."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from cuemap_integrations import CueMap, ValidationError
from cuemap_integrations.errors import ConfigError

from ..conftest import FakeClock


def test_same_key_supersedes_and_keeps_history(cm: CueMap, clock: FakeClock) -> None:
    cm.add("Call the user Sam", key="user.display_name", type="preference", memory_id="v1")
    clock.advance(days=3)
    cm.add("Call the user Samantha", key="user.display_name", type="preference", memory_id="v2")
    old = cm.get("v1")
    assert old.superseded_by == "v2" and old.superseded_at == clock.now
    assert cm.get("v2").supersedes == "v1"
    assert cm.recall("what should I call the user?").memory_ids == ["v2"]
    both = cm.recall("what should I call the user?", include_superseded=True)
    assert set(both.memory_ids) == {"v1", "v2"}
    note = next(n for n in both.notes if {n.memory_id, n.other_id} == {"v1", "v2"})
    assert note.newer_id == "v2" and note.newer_at == clock.now
    clock.advance(days=1)
    cm.add("Call the user Sam again", key="user.display_name", type="preference", memory_id="v3")
    assert [r.memory_id for r in cm.history("v2")] == ["v1", "v2", "v3"]
    assert [r.memory_id for r in cm.history("v1")] == ["v1", "v2", "v3"]


def test_keys_are_per_namespace_and_batches_keep_the_last(cm: CueMap) -> None:
    cm.add("Orders API uses POST", key="api.orders.method", memory_id="a", namespace="x")
    cm.add("Orders API uses PUT", key="api.orders.method", memory_id="b", namespace="y")
    assert cm.get("a", namespace="x").superseded_by is None
    cm.add_many(
        [
            {"content": "Orders API uses GET", "key": "api.orders.method", "memory_id": "c", "namespace": "x"},
            {"content": "Orders API uses PATCH", "key": "api.orders.method", "memory_id": "d", "namespace": "x"},
        ]
    )  # fmt: skip
    assert [r.memory_id for r in cm.history("a", namespace="x")] == ["a", "c", "d"]
    assert cm.recall("orders api method", namespace="x").memory_ids == ["d"]


def test_supersedes_an_unknown_id_changes_nothing(cm: CueMap) -> None:
    cm.add("Standup at 9", memory_id="s1")
    with pytest.raises(ValidationError) as info:
        cm.add_many([{"content": "Standup at 10", "supersedes": "nope"}, {"content": "fine"}])
    assert info.value.field == "supersedes"
    assert [r.memory_id for r in cm.memories()] == ["s1"]


@pytest.mark.parametrize(
    ("first", "second", "query"),
    [
        (
            "The orders API uses POST",
            "The orders API uses GET",
            "which method does the orders api use",
        ),
        ("订单接口统一使用 POST 方法", "订单接口统一使用 GET 方法", "订单接口用什么方法"),
    ],
)
def test_conflicts_are_detected_and_reported(
    cm: CueMap, clock: FakeClock, first, second, query
) -> None:
    cm.add(first, type="convention", memory_id="old")
    clock.advance(days=2)
    cm.add(second, type="convention", memory_id="new")
    result = cm.recall(query, k=5)
    assert set(result.memory_ids) >= {"old", "new"}
    assert {h.memory_id: h.conflicts for h in result}["new"] == ("old",)
    (note,) = result.notes
    assert note.kind == "conflict" and note.newer_id == "new" and note.newer_at == clock.now


def test_unrelated_or_other_type_memories_do_not_conflict(cm: CueMap) -> None:
    cm.add("The API uses port 8001", type="convention", memory_id="port")
    cm.add("The API returns JSON", type="convention", memory_id="json")
    cm.add("The orders API uses POST", type="convention", memory_id="post")
    cm.add("The orders API uses GET", type="event", memory_id="event")  # events are transcripts
    assert all(not h.conflicts for h in cm.recall("api", k=10))


def test_conflict_links_survive_reopen_and_go_with_delete(location: str | Path) -> None:
    db = location
    with CueMap(db) as cm:
        cm.add("The orders API uses POST", type="fact", memory_id="a")
        cm.add("The orders API uses GET", type="fact", memory_id="b")
    with CueMap(db) as cm:
        assert cm.recall("orders api", k=2)[0].conflicts in (("a",), ("b",))
        cm.delete("a")
        assert cm.recall("orders api").notes == ()
    with CueMap(db) as cm:
        assert cm._store.load_links() == []


def test_exact_duplicates_are_stored_once_and_refresh_access(cm: CueMap, clock: FakeClock) -> None:
    first = cm.add("The API uses port 8001")
    clock.advance(hours=1)
    again = cm.add("  the api uses   PORT 8001 ")
    assert again.memory_id == first.memory_id and len(cm) == 1
    stored = cm.get(first.memory_id)
    assert stored.access_count == 1 and stored.last_accessed == clock.now
    assert cm.add("The API uses port 8001", memory_id="explicit").memory_id == "explicit"
    assert len(cm) == 2  # an explicit id is the caller's decision
    batch = cm.add_many([{"content": "new one"}, {"content": "NEW ONE"}])
    assert batch[0].memory_id == batch[1].memory_id and len(cm) == 3


def test_ttl_per_type_hides_expired_memories(clock: FakeClock) -> None:
    cm = CueMap(clock=clock, config={"ttl_days": {"task": 7}})
    task = cm.add("Deploy the payment fix on Friday", type="task")
    pref = cm.add("I prefer deploys on Friday", type="preference")
    assert task.expires_at == clock.now + timedelta(days=7) and pref.expires_at is None
    clock.advance(days=8)
    assert cm.recall("friday deploy").memory_ids == [pref.memory_id]
    assert task.memory_id in cm.recall("friday deploy", include_expired=True).memory_ids
    with pytest.raises(ConfigError):
        CueMap(config={"ttl_days": {"opinion": 3}})
    with pytest.raises(ConfigError):
        CueMap(config={"ttl_days": {"task": 0}})


def test_forget_by_id_filter_and_namespace(cm: CueMap, clock: FakeClock) -> None:
    cm.add("old chat note", memory_id="n1", source="chat", type="note")
    clock.advance(days=5)
    cm.add("new chat note", memory_id="n2", source="chat", type="note")
    cm.add("doc fact", memory_id="f1", source="docs", type="fact")
    cm.add("other tenant", memory_id="t1", namespace="tenant-b")
    cm.session("s", namespace="tenant-b").recall("tenant")
    with pytest.raises(ValidationError):
        cm.forget()
    assert [r.memory_id for r in cm.forget(["n1", "missing"])] == ["n1"]
    assert cm.forget(["n1"]) == []
    assert [r.memory_id for r in cm.forget(sources=["docs"])] == ["f1"]
    assert [r.memory_id for r in cm.forget(before=clock.now + timedelta(seconds=1))] == ["n2"]
    assert len(cm) == 1 and cm.recall("chat note").memory_ids == []
    assert [r.memory_id for r in cm.forget(namespace="tenant-b", everything=True)] == ["t1"]
    assert len(cm) == 0 and cm.namespaces() == []
    assert cm.session("s", namespace="tenant-b").turn == 0
    index_left = [ix for ix in cm._indexes.values()]
    assert index_left == []


class Recorder:
    def __init__(self) -> None:
        self.events: list = []

    def on_write(self, event) -> None:
        self.events.append(event)


class Broken:
    def on_write(self, event) -> None:
        raise RuntimeError("mirror down")


def test_listeners_see_every_committed_write_and_cannot_break_it(cm: CueMap) -> None:
    seen = Recorder()
    cm.add_listener(Broken())
    cm.add_listener(seen)
    cm.add("Call the user Sam", key="user.name", memory_id="a")
    cm.add("Call the user Samantha", key="user.name", memory_id="b")
    cm.update("b", tags=["name"])
    cm.delete("a")
    cm.forget(["b"])
    with pytest.raises(ValidationError):
        cm.add("")  # refused writes are not events
    kinds = [
        (
            [r.memory_id for r in e.added],
            [r.memory_id for r in e.changed],
            [r.memory_id for r in e.removed],
        )
        for e in seen.events
    ]
    assert kinds == [
        (["a"], [], []),
        (["b"], ["a"], []),
        ([], ["b"], []),
        ([], [], ["a"]),
        ([], [], ["b"]),
    ]
    cm.remove_listener(seen)
    cm.add("after", memory_id="c")
    assert len(seen.events) == 5
