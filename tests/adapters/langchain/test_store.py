"""CueMapStore side by side with LangGraph's InMemoryStore, plus what only it does (recall, TTL)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langgraph")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_cuemap import CueMapStore
from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from cuemap_integrations import CueMap
from tests.conftest import FakeClock

from .fakes import ORDERS

NAMESPACES = [("users", "ann", "memories"), ("users", "bob", "memories"), ("docs",),
              ("users", "ann", "prefs")]  # fmt: skip
VALUES: list[dict[str, Any]] = [
    {"content": "The API uses port 8001", "kind": "fact", "n": 1},
    {"text": "Deploys go out on Tuesdays", "kind": "rule", "n": 2},
    {"food": "pizza", "tags": ["a", "b"], "nested": {"x": 1}, "kind": "fact", "n": 3},
    {"content": "Orders time out when the Redis cache expires", "kind": "fact", "n": 4},
]


@pytest.fixture
def cm(clock: FakeClock) -> CueMap:
    return CueMap(clock=clock)


def _both(cm: CueMap) -> tuple[BaseStore, BaseStore]:
    return InMemoryStore(), CueMapStore(cm)


def _fill(store: BaseStore) -> None:
    for namespace in NAMESPACES:
        for n, value in enumerate(VALUES):
            store.put(namespace, f"k{n}", value)


def _view(item: Item | None) -> Any:
    return None if item is None else (item.namespace, item.key, item.value)


def _views(items: list[Any]) -> list[Any]:
    return sorted(_view(item) for item in items)


def test_put_get_update_delete_like_in_memory_store(cm: CueMap) -> None:
    reference, ours = _both(cm)
    for store in (reference, ours):
        _fill(store)
        store.put(("docs",), "k1", {"text": "Deploys go out on Fridays now"})  # replace
        store.delete(("docs",), "k2")
        store.delete(("docs",), "never-stored")
    for namespace in NAMESPACES:
        for key in ("k0", "k1", "k2", "k3", "missing"):
            assert _view(ours.get(namespace, key)) == _view(reference.get(namespace, key))


def test_search_without_query_like_in_memory_store(cm: CueMap) -> None:
    reference, ours = _both(cm)
    for store in (reference, ours):
        _fill(store)
    cases: list[dict[str, Any]] = [
        {}, {"filter": {"kind": "fact"}}, {"filter": {"kind": "fact", "n": 3}},
        {"filter": {"nested": {"x": 1}}}, {"filter": {"tags": ["a", "b"]}},
        {"filter": {"n": {"$gt": 1, "$lte": 3}}}, {"filter": {"kind": {"$ne": "fact"}}},
        {"filter": {"missing": None}}, {"limit": 100},
    ]  # fmt: skip
    for prefix in [(), ("users",), ("users", "ann"), ("users", "ann", "memories"), ("nope",)]:
        for case in cases:
            expected = reference.search(prefix, limit=case.get("limit", 100), **{
                k: v for k, v in case.items() if k != "limit"})  # fmt: skip
            got = ours.search(prefix, limit=case.get("limit", 100), **{
                k: v for k, v in case.items() if k != "limit"})  # fmt: skip
            assert _views(got) == _views(expected), (prefix, case)
            assert all(item.score is None for item in got)


def test_search_pages_with_limit_and_offset(cm: CueMap) -> None:
    store = CueMapStore(cm)
    _fill(store)
    everything = store.search(("users",), limit=100)
    assert len(everything) == 12
    pages = [store.search(("users",), limit=5, offset=o) for o in (0, 5, 10)]
    assert [len(p) for p in pages] == [5, 5, 2]
    assert [i.key for p in pages for i in p] == [i.key for i in everything]


def test_list_namespaces_like_in_memory_store(cm: CueMap) -> None:
    reference, ours = _both(cm)
    for store in (reference, ours):
        _fill(store)
        store.put(("a/b", "c%d"), "x", {"content": "slash and percent in labels"})
    queries: list[dict[str, Any]] = [
        {}, {"prefix": ("users",)}, {"suffix": ("memories",)},
        {"prefix": ("users", "*", "memories")}, {"prefix": ("users",), "suffix": ("prefs",)},
        {"max_depth": 1}, {"max_depth": 2, "prefix": ("users",)}, {"limit": 2, "offset": 1},
        {"prefix": ("a/b",)},
    ]  # fmt: skip
    for query in queries:
        assert ours.list_namespaces(**query) == reference.list_namespaces(**query), query


def test_batch_reads_see_the_store_before_its_writes(cm: CueMap) -> None:
    reference, ours = _both(cm)
    ops = [
        PutOp(("docs",), "a", {"content": "first"}),
        GetOp(("docs",), "a"),
        PutOp(("docs",), "a", {"content": "second"}),
        SearchOp(("docs",)),
        ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("docs",)),)),
    ]
    expected, got = reference.batch(ops), ours.batch(ops)
    assert got[0] is None and got[2] is None and _view(got[1]) == _view(expected[1]) is None
    assert got[3] == expected[3] == []
    # InMemoryStore lists ("docs",) here only because its GetOp created the namespace (a
    # defaultdict); before the batch's writes there was nothing to list.
    assert got[4] == []
    assert _view(ours.get(("docs",), "a")) == _view(reference.get(("docs",), "a"))


async def test_async_api_like_in_memory_store(cm: CueMap) -> None:
    reference, ours = _both(cm)
    for store in (reference, ours):
        await store.aput(("docs",), "k", {"content": "The API uses port 8001"})
        await store.aput(("docs",), "gone", {"content": "temporary"})
        await store.adelete(("docs",), "gone")
    assert _view(await ours.aget(("docs",), "k")) == _view(await reference.aget(("docs",), "k"))
    assert _views(await ours.asearch(("docs",))) == _views(await reference.asearch(("docs",)))
    assert await ours.alist_namespaces() == await reference.alist_namespaces()
    found = await ours.asearch(("docs",), query="which port?")
    assert [i.key for i in found] == ["k"] and found[0].score and found[0].score > 0


values = st.dictionaries(
    st.text("abcxyz", min_size=1, max_size=3),
    st.one_of(st.integers(-5, 5), st.text("ab ", max_size=4), st.booleans(), st.none()),
    max_size=3,
)
ops = st.lists(
    st.tuples(
        st.sampled_from(["put", "delete"]),
        st.sampled_from(NAMESPACES[:3]),
        st.sampled_from(["a", "b", "c"]),
        values,
    ),  # fmt: skip
    max_size=12,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops)
def test_random_puts_and_deletes_agree_with_in_memory_store(script: list[Any]) -> None:
    reference, ours = InMemoryStore(), CueMapStore(CueMap())
    for action, namespace, key, value in script:
        for store in (reference, ours):
            store.put(namespace, key, value) if action == "put" else store.delete(namespace, key)
    for namespace in NAMESPACES[:3]:
        for key in ("a", "b", "c"):
            assert _view(ours.get(namespace, key)) == _view(reference.get(namespace, key))
        assert _views(ours.search(namespace)) == _views(reference.search(namespace))


# ---------------------------------------------------------------------- what only CueMapStore does
def _orders_store(cm: CueMap, **options: Any) -> CueMapStore:
    store = CueMapStore(cm, **options)
    for key, content, kind in ORDERS:
        store.put(("ops", "memories"), key, {"content": content, "kind": kind})
    return store


def test_query_search_ranks_by_cue_recall(cm: CueMap) -> None:
    store = _orders_store(cm)
    found = store.search(("ops",), query="which port does the api use?", limit=2)
    assert found[0].key == "port" and found[0].value["kind"] == "convention"
    assert found[0].score is not None and all(i.score is not None for i in found)
    assert [i.score for i in found] == sorted((i.score or 0 for i in found), reverse=True)
    assert store.search(("ops",), query="zzqx") == []
    assert [i.key for i in store.search(("ops",), query="fixed", filter={"kind": "convention"})
            ] == []  # fmt: skip
    assert store.search(("elsewhere",), query="api port") == []


def test_query_search_across_namespaces_and_offset(cm: CueMap) -> None:
    store = _orders_store(cm)
    store.put(("ops", "archive"), "old-port", {"content": "The API used port 7000 in 2023"})
    keys = [i.key for i in store.search(("ops",), query="api port", limit=10)]
    assert set(keys[:2]) == {"port", "old-port"}
    assert [i.key for i in store.search(("ops",), query="api port", offset=1, limit=1)] == [keys[1]]


def test_index_false_is_not_found_by_query_but_by_get_and_filter(cm: CueMap) -> None:
    store = CueMapStore(cm)
    store.put(("docs",), "hidden", {"content": "The API uses port 8001"}, index=False)
    assert store.get(("docs",), "hidden") is not None
    assert store.search(("docs",), query="api port") == []
    assert [
        i.key for i in store.search(("docs",), filter={"content": "The API uses port 8001"})
    ] == ["hidden"]


def test_unindexed_items_do_not_take_a_page_s_places(cm: CueMap) -> None:
    store = CueMapStore(cm)
    store.put(("docs",), "hidden", {"content": "The API uses port 8001 (api port)"}, index=False)
    store.put(("docs",), "shown", {"content": "The API port moved to 9001"})
    store.put(("docs",), "other", {"content": "Deploys go out on Tuesdays"})
    assert [i.key for i in store.search(("docs",), query="api port", limit=1)] == ["shown"]


def test_index_fields_choose_what_recall_reads(cm: CueMap) -> None:
    store = CueMapStore(cm, fields=["summary"])
    store.put(("docs",), "a", {"summary": "Deploys go out on Tuesdays", "body": "zebra"})
    store.put(("docs",), "b", {"summary": "Backups run nightly", "body": "deploys"},
              index=["body"])  # fmt: skip
    assert cm.get("a", namespace="docs").content == "Deploys go out on Tuesdays"
    assert cm.get("b", namespace="docs").content == "deploys"
    assert [i.key for i in store.search(("docs",), query="zebra")] == []
    store.put(("docs",), "c", {"food": "pizza", "n": 2}, index=[])
    assert cm.get("c", namespace="docs").content == "food: pizza\nn: 2"


def test_put_replaces_and_keeps_created_at(cm: CueMap, clock: FakeClock) -> None:
    store = CueMapStore(cm)
    store.put(("docs",), "a", {"content": "The API uses port 8001"})
    created = store.get(("docs",), "a")
    clock.advance(hours=1)
    store.put(("docs",), "a", {"content": "The API uses port 9001"})
    item = store.get(("docs",), "a")
    assert item is not None and created is not None
    assert item.value == {"content": "The API uses port 9001"}
    assert item.created_at == created.created_at and item.updated_at > created.updated_at
    assert [i.key for i in store.search(("docs",), query="port 9001")] == ["a"]
    assert len(cm.memories(namespace="docs")) == 1


def test_a_failed_put_keeps_what_was_there(cm: CueMap) -> None:
    store = CueMapStore(cm)
    store.put(("docs",), "a", {"content": "kept"})
    with pytest.raises(ValueError):
        store.put(("docs",), "a", {"content": "bad", "nan": float("nan")})
    item = store.get(("docs",), "a")
    assert item is not None and item.value == {"content": "kept"}


def test_ttl_expires_refreshes_and_sweeps(cm: CueMap, clock: FakeClock) -> None:
    store = CueMapStore(cm)
    store.put(("docs",), "t", {"content": "The API uses port 8001"}, ttl=10)
    store.put(("docs",), "forever", {"content": "The API is versioned"})
    clock.advance(minutes=8)
    assert store.get(("docs",), "t") is not None  # refreshes: expires 10 minutes from now
    clock.advance(minutes=8)
    assert store.get(("docs",), "t", refresh_ttl=False) is not None
    assert [i.key for i in store.search(("docs",), query="api port")][:1] == ["t"]  # refresh
    clock.advance(minutes=11)
    assert store.get(("docs",), "t") is None
    assert [i.key for i in store.search(("docs",))] == ["forever"]
    assert store.search(("docs",), query="port 8001") == []
    assert store.sweep_expired() == 1 and len(cm.memories(namespace="docs")) == 1


def test_ttl_config_default(cm: CueMap, clock: FakeClock) -> None:
    store = CueMapStore(cm, ttl={"default_ttl": 5, "refresh_on_read": False})
    store.put(("docs",), "t", {"content": "short-lived"})
    clock.advance(minutes=4)
    assert store.get(("docs",), "t") is not None
    clock.advance(minutes=2)
    assert store.get(("docs",), "t") is None


def test_secrets_in_values_are_redacted(cm: CueMap) -> None:
    store = CueMapStore(cm)
    secret = "sk-proj-4f9A2b7C1d8E3f6G0h5J2k9L4m7N1p3Q"
    store.put(
        ("docs",), "cfg", {"content": f"billing uses api key {secret}", "password": "hunter2"}
    )
    item = store.get(("docs",), "cfg")
    assert item is not None
    assert secret not in str(item.value) and "hunter2" not in str(item.value)
    assert "[REDACTED:api_key]" in item.value["content"]


def test_namespaces_map_to_store_namespaces_and_prefix_isolates(cm: CueMap) -> None:
    cm.add("Someone else's memory", namespace="default")
    plain, isolated = CueMapStore(cm), CueMapStore(cm, prefix="lg")
    plain.put(("users", "a/b"), "k", {"content": "x"})
    isolated.put(("users", "ann"), "k", {"content": "y"})
    assert plain.store_namespace(("users", "a/b")) == "users/a%2Fb"
    assert sorted(cm.namespaces()) == ["default", "lg/users/ann", "users/a%2Fb"]
    assert isolated.list_namespaces() == [("users", "ann")]
    assert plain.list_namespaces() == [("default",), ("lg", "users", "ann"), ("users", "a/b")]
    foreign = plain.get(("default",), cm.memories(namespace="default")[0].memory_id)
    assert foreign is not None and foreign.value["content"] == "Someone else's memory"


def test_unknown_filter_operator_is_an_error(cm: CueMap) -> None:
    store = CueMapStore(cm)
    store.put(("docs",), "a", {"n": 1})
    with pytest.raises(ValueError, match=r"\$in"):
        store.search(("docs",), filter={"n": {"$in": [1]}})


def test_query_searches_are_stateless_outside_a_run(cm: CueMap) -> None:
    store = _orders_store(cm)
    store.search(("ops",), query="why were orders timing out?", limit=1)
    assert [i.key for i in store.search(("ops",), query="how did we fix it?", limit=1)] == ["login"]


def test_clock_is_the_stores(cm: CueMap, clock: FakeClock) -> None:
    store = CueMapStore(cm)
    store.put(("docs",), "a", {"content": "x"})
    item = store.get(("docs",), "a")
    assert item is not None and item.created_at == clock.now
    clock.advance(minutes=1)
    store.put(("docs",), "a", {"content": "y"})
    item = store.get(("docs",), "a")
    assert item is not None and item.updated_at == clock.now - timedelta(0)
