"""Planning a bulk batch that is plainly new (``lifecycle._plainly_new``: ids looked up at once
through ``StoreView.seqs_of``) gives the plan, or raises the error, the per-record loop of
``plan_writes`` does; and the content keys indexing computes for such a batch at once
(``TextMemo.content_keys_of``) are ``content_key``'s."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cuemap_integrations import CueMap
from cuemap_integrations.errors import CueMapError
from cuemap_integrations.lifecycle import content_key, plan_writes
from cuemap_integrations.textkeys import TextMemo

from ..conftest import FakeClock

ITEM = st.fixed_dictionaries(
    {
        "content": st.sampled_from(["Lake trip", "lake  TRIP", "Port 8001", "café au lait", "x"]),
        "memory_id": st.one_of(st.none(), st.sampled_from(["a", "b", "c", "s1", "s2"])),
    },
    optional={
        "namespace": st.sampled_from(["default", "other"]),
        "key": st.sampled_from(["k1", "k2"]),
        "supersedes": st.sampled_from(["s1", "a", "nope"]),
        "type": st.sampled_from(["fact", "event"]),
    },
)


def _outcome(cm: CueMap, items: list[dict[str, Any]], *, batched: bool, dedupe: bool) -> Any:
    now = cm.now()
    memo = TextMemo(cm.aliases)
    try:
        prepared = cm._prepare([{k: v for k, v in i.items() if v is not None} for i in items],
                               now, memo)  # fmt: skip
        view = cm._view()
        plan = plan_writes(
            prepared, view if batched else replace(view, seqs_of=None), now=now, dedupe=dedupe,
            conflict_types=frozenset(cm.config.conflict_types),
            conflict_overlap=cm.config.conflict_overlap, key_of=memo.content_key,
        )  # fmt: skip
    except CueMapError as error:
        return type(error), str(error)
    return plan


@settings(max_examples=300, deadline=None)
@given(st.lists(ITEM, max_size=6), st.booleans())
def test_a_batch_is_planned_as_the_loop_plans_it(items: list[dict[str, Any]], dedupe: bool) -> None:
    with CueMap(":memory:", clock=FakeClock()) as cm:
        cm.add_many([{"content": "Lake trip", "memory_id": "s1"},
                     {"content": "Standup", "memory_id": "s2", "namespace": "other"},
                     {"content": "Old", "memory_id": "s3", "key": "k1"}])  # fmt: skip
        assert _outcome(cm, items, batched=True, dedupe=dedupe) == _outcome(
            cm, items, batched=False, dedupe=dedupe
        )


@settings(max_examples=200, deadline=None)
@given(st.lists(ITEM, max_size=6), st.booleans(), st.booleans())
def test_a_batchs_content_keys_are_content_keys(
    items: list[dict[str, Any]], asked: bool, with_keys: bool
) -> None:
    """Whether planning asked one before (then found, the others digested) or none (all
    digested at once), with the records' text keys given or not."""
    with CueMap(":memory:", clock=FakeClock()) as cm:
        memo = TextMemo(cm.aliases)
        records = [record for record, _ in cm._prepare(
            [{"content": i["content"], "namespace": i.get("namespace", "default")} for i in items],
            cm.now(), memo)]  # fmt: skip
        if records and asked:
            memo.content_key(records[0])
        keys = memo.keys_of([r.content for r in records]) if with_keys else None
        assert memo.content_keys_of(records, keys) == [content_key(r) for r in records]
