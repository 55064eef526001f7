"""Property: nothing done in one namespace ever shows another namespace's memory -- not recall,
a session turn, the dense fallback, conflict notes, export, history, forget or check.

The memories of every namespace share ids and words on purpose, so a mix-up would be visible.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cuemap_integrations import CueMap, CueMapError, RecallResult
from cuemap_integrations.formatting import format_context
from tests.conftest import FakeClock
from tests.hybrid.fakes import FakeEmbedder, hybrid_store, needs_dense

pytestmark = needs_dense

NAMESPACES = ("alice", "bob", "carol")
WORDS = ("parcel", "deliver", "port", "backup", "bike", "orders", "cache", "schema", "api")
QUERIES = ("parcel port", "api cache orders", "bike backup", "zzparcelzz?", "zzdeployzz")
Model = dict[tuple[str, str], str]

writes = st.lists(
    st.tuples(
        st.sampled_from(("add", "add", "update", "delete", "supersede")),
        st.sampled_from(NAMESPACES),
        st.sampled_from(("m1", "m2", "m3", "m4")),
        st.lists(st.sampled_from(WORDS), min_size=2, max_size=5).map(" ".join),
    ),
    min_size=1,
    max_size=14,
)


@pytest.fixture
def stores() -> Iterator[list[CueMap]]:
    opened: list[CueMap] = []
    yield opened
    for cm in opened:
        cm.close()


def _apply(cm: CueMap, model: Model, op: str, ns: str, memory_id: str, text: str) -> None:
    text = f"{text} ({ns} {memory_id})"  # equal words everywhere; the suffix tells them apart
    try:
        if op == "add":
            model[(ns, memory_id)] = cm.add(text, namespace=ns, memory_id=memory_id).content
        elif op == "update":
            model[(ns, memory_id)] = cm.update(memory_id, namespace=ns, content=text).content
        elif op == "delete":
            cm.delete(memory_id, namespace=ns)
            del model[(ns, memory_id)]
        else:  # a new memory with a key replaces the active one with that key, in ns only
            record = cm.add(text, namespace=ns, key="topic", type="fact")
            model[(ns, record.memory_id)] = record.content
    except CueMapError:  # a duplicate id, or no such memory: nothing changed
        pass


def _mine(result: RecallResult, ns: str, model: Model) -> None:
    for hit in result.hits:
        assert hit.memory.namespace == ns
        assert model[(ns, hit.memory_id)] == hit.memory.content
        assert all((ns, other) in model for other in hit.conflicts)
    for note in result.notes:
        assert model[(ns, note.other_id)] == note.other_content
    assert f"({ns} " in str(format_context(result)) or not result.hits


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=writes)
def test_no_operation_crosses_a_namespace(stores: list[CueMap], ops: list[tuple[str, ...]]) -> None:
    cm = hybrid_store(FakeClock(), FakeEmbedder(), min_results=3)
    stores.append(cm)
    model: Model = {}
    for op in ops:
        _apply(cm, model, *op)
    for ns in NAMESPACES:
        session = cm.session("same-session-id", namespace=ns)
        for query in QUERIES:
            _mine(cm.recall(query, namespace=ns, k=20, include_superseded=True), ns, model)
            _mine(session.recall(query, k=20), ns, model)
        dense = cm.recall("zzparcelzz?", namespace=ns, k=20, include_superseded=True)
        if any(key[0] == ns and "parcel" in text for key, text in model.items()):
            assert any(hit.source == "dense" for hit in dense)  # the fallback was exercised
        exported = {(m.namespace, m.memory_id): m.content for m in cm.memories(namespace=ns)}
        assert exported == {key: text for key, text in model.items() if key[0] == ns}
        for _, memory_id in exported:
            assert {r.namespace for r in cm.history(memory_id, namespace=ns)} == {ns}
    others = {key: text for key, text in model.items() if key[0] != "carol"}
    removed = cm.forget(namespace="carol", everything=True)
    assert {r.namespace for r in removed} <= {"carol"}
    assert {(m.namespace, m.memory_id): m.content for m in cm.memories()} == others
    assert cm.check() == []
