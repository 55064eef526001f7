"""Hostile input through the public API: every failure is a CueMapError (a ValidationError names
the field) and leaves the store exactly as it was; what is accepted is stored verbatim.

Decision: a wrong *value or type* of a documented argument raises ValidationError (a ValueError);
only a wrong call shape (an unknown keyword, a missing argument) raises Python's own TypeError.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cuemap_integrations import CueMap, CueMapError, ValidationError
from cuemap_integrations.bench.workload import NASTY, check_call
from cuemap_integrations.formatting import format_context
from tests.conftest import T0

LIMIT = 2_000  # a small max_content_chars keeps "past the limit" cheap; 1 MB is tested below

surrogates = st.characters(codec=None, categories=["Cs"])
texts = st.one_of(
    st.sampled_from(NASTY),
    st.text(max_size=40),
    st.tuples(st.text(max_size=5), surrogates, st.text(max_size=5)).map("".join),
    st.integers(LIMIT - 2, LIMIT + 2).map(lambda n: "x" * n),
)
ids = st.one_of(st.sampled_from(["m1", "m2", "nope"]), texts)
namespaces = st.one_of(st.sampled_from(["default", "other"]), texts)
ADD_OPTIONS = ["memory_id", "namespace", "cues", "tags", "metadata", "type", "source", "key",
               "created_at", "expires_at", "supersedes"]  # fmt: skip
numbers = st.one_of(
    st.integers(-(2**70), 2**70), st.floats(allow_nan=True), st.booleans(), st.none(), texts
)
string_lists = st.one_of(st.lists(texts, max_size=3), texts, st.integers(), st.none())
metadata = st.one_of(
    st.dictionaries(texts, st.one_of(texts, numbers), max_size=2), st.lists(texts, max_size=1)
)

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _store() -> CueMap:
    cm = CueMap(clock=lambda: T0, config={"max_content_chars": LIMIT})
    cm.add_many(
        [
            {"content": "The API uses port 8001", "memory_id": "m1", "type": "convention"},
            {"content": "Orders time out when the cache expires", "memory_id": "m2"},
            {"content": "订单超时是因为缓存过期", "memory_id": "m3", "namespace": "other"},
        ]
    )
    cm.session("s1").recall("api port")
    return cm


@pytest.fixture
def fresh() -> Iterator[Callable[[], CueMap]]:
    opened: list[CueMap] = []

    def make() -> CueMap:
        opened.append(_store())
        return opened[-1]

    yield make
    for cm in opened:
        cm.close()


def _behaves(cm: CueMap, label: str, call: Callable[[], object]) -> None:
    assert check_call(cm, label, call) == []


@SETTINGS
@given(content=texts, field=st.sampled_from(ADD_OPTIONS),
       value=st.one_of(texts, numbers, string_lists, metadata))  # fmt: skip
def test_add(fresh: Callable[[], CueMap], content: str, field: str, value: Any) -> None:
    cm = fresh()
    stored: list[Any] = []
    _behaves(cm, "add content", lambda: stored.append(cm.add(content)))
    if stored and "[REDACTED" not in stored[0].content:
        assert cm.get(stored[0].memory_id).content == content  # verbatim
    _behaves(cm, f"add {field}", lambda: cm.add("a valid text about ports", **{field: value}))


@SETTINGS
@given(items=st.lists(st.fixed_dictionaries({"content": texts}, optional={"memory_id": ids,
       "namespace": namespaces, "tags": string_lists}), min_size=1, max_size=4))  # fmt: skip
def test_add_many_is_all_or_nothing(
    fresh: Callable[[], CueMap], items: list[dict[str, Any]]
) -> None:
    cm = fresh()
    _behaves(cm, "add_many", lambda: cm.add_many(items))


@SETTINGS
@given(memory_id=ids, namespace=namespaces, field=st.sampled_from(
       ["content", "cues", "tags", "type", "source", "metadata", "expires_at"]),
       value=st.one_of(texts, numbers, string_lists, metadata))  # fmt: skip
def test_update(
    fresh: Callable[[], CueMap], memory_id: str, namespace: str, field: str, value: Any
) -> None:
    cm = fresh()
    _behaves(cm, "update", lambda: cm.update(memory_id, namespace=namespace, **{field: value}))


@SETTINGS
@given(query=st.one_of(texts, numbers), k=numbers, namespace=namespaces, min_score=numbers,
       extra=string_lists, types=string_lists, since=st.one_of(texts, numbers))  # fmt: skip
def test_recall(
    fresh: Callable[[], CueMap], query: Any, k: Any, namespace: Any, min_score: Any,
    extra: Any, types: Any, since: Any,
) -> None:  # fmt: skip
    cm = fresh()
    _behaves(cm, "recall k", lambda: cm.recall(query, k=k, namespace=namespace))
    _behaves(cm, "recall min_score", lambda: cm.recall(query, min_score=min_score))
    _behaves(cm, "recall cues", lambda: cm.recall(query, extra_cues=extra or ()))
    _behaves(cm, "recall filters", lambda: cm.recall(query, types=types, since=since))


@SETTINGS
@given(session_id=ids, namespace=namespaces, query=texts, k=numbers, budget=numbers)
def test_session_and_format_context(
    fresh: Callable[[], CueMap], session_id: Any, namespace: Any, query: str, k: Any,
    budget: Any,
) -> None:  # fmt: skip
    cm = fresh()
    _behaves(cm, "session", lambda: cm.session(session_id, namespace=namespace).recall(query, k=k))
    result = cm.recall("api port")
    _behaves(cm, "format_context", lambda: format_context(result, budget_tokens=budget))


@SETTINGS
@given(memory_ids=st.one_of(st.lists(ids, max_size=3), ids, numbers), namespace=namespaces,
       types=string_lists, before=st.one_of(texts, numbers))  # fmt: skip
def test_forget(
    fresh: Callable[[], CueMap], memory_ids: Any, namespace: Any, types: Any, before: Any
) -> None:
    cm = fresh()
    # a successful forget changes the store by design: only failures are checked here
    for call in (
        lambda: cm.forget(memory_ids, namespace=namespace),
        lambda: cm.forget(namespace=namespace, types=types, before=before),
    ):
        assert check_call(cm, "forget", call) == []


@SETTINGS
@given(messages=st.one_of(
    st.lists(st.one_of(st.fixed_dictionaries({"role": st.one_of(st.sampled_from(
        ["user", "assistant"]), texts), "content": st.one_of(texts, numbers)}), numbers),
        max_size=3),
    texts, numbers), session_id=ids)  # fmt: skip
def test_capture(fresh: Callable[[], CueMap], messages: Any, session_id: Any) -> None:
    cm = fresh()
    _behaves(cm, "capture", lambda: cm.capture(messages, session_id=session_id))


def test_one_megabyte_past_the_default_limit_is_refused_and_the_limit_is_configurable() -> None:
    big = "word " * 200_001  # 1,000,005 characters
    with CueMap() as cm:
        with pytest.raises(ValidationError, match="at most 1000000 characters") as caught:
            cm.add(big)
        assert caught.value.field == "content" and len(cm) == 0
    with CueMap(config={"max_content_chars": 10}) as small:
        with pytest.raises(ValidationError, match="at most 10 characters"):
            small.add("eleven char")


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda cm: cm.add("x\ud800y"), "content"),  # regression: UnicodeEncodeError
        (lambda cm: cm.add("ok", namespace="\udfff"), "namespace"),
        (lambda cm: cm.add("ok", memory_id="\ud800"), "memory_id"),
        (lambda cm: cm.add("ok", cues=["\ud800"]), "cues"),
        (lambda cm: cm.add("ok", metadata={"k": "\ud800"}), "metadata.k"),
        (lambda cm: cm.add("ok", source="\ud800"), "source"),
        (lambda cm: cm.session("\ud800").recall("q"), "session_id"),
        (lambda cm: cm.add_many(None), "items"),  # regression: TypeError
        (lambda cm: cm.forget(5), "memory_ids"),
        (lambda cm: cm.recall("q", extra_cues=[None]), "extra_cues"),
        (lambda cm: cm.recall("q", min_score=float("nan")), "min_score"),  # regression: no hits
        (lambda cm: cm.recall("q", types=5), "types"),
        (lambda cm: cm.session("s").recall("q", sources=5), "sources"),
        (lambda cm: format_context(None), "hits"),
    ],
)
def test_regressions_are_validation_errors_naming_the_field(
    call: Callable[[CueMap], object], field: str
) -> None:
    with _store() as cm:
        before = [m.to_dict() for m in cm.memories()]
        with pytest.raises(ValidationError) as caught:
            call(cm)
        assert caught.value.field == field
        assert [m.to_dict() for m in cm.memories()] == before


def test_sql_looking_text_round_trips_through_a_file(tmp_path: Any) -> None:
    db = tmp_path / "sql.db"
    texts = [t for t in NASTY if t.strip() and "\x00" not in t and "\ud800" not in t
             and "\udfff" not in t]  # fmt: skip
    with CueMap(db) as cm:
        stored = [cm.add(text, memory_id=f"n{i}").content for i, text in enumerate(texts)]
    with CueMap(db) as cm:
        assert [cm.get(f"n{i}").content for i in range(len(texts))] == stored == texts
        assert cm.check() == []
        with pytest.raises(CueMapError):
            cm.add("\ud800")
