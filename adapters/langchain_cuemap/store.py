"""``CueMapStore``: a LangGraph ``BaseStore`` whose search is cue recall.

Mapping (what a LangGraph item becomes in the CueMap):

* **namespace** ``("users", "u1", "memories")`` -> the store namespace ``"users/u1/memories"``
  (labels joined with ``/``; a ``/`` or ``%`` inside a label is written ``%2F`` / ``%25``), under
  ``prefix + "/"`` when a ``prefix`` is given. A search's ``namespace_prefix`` covers every store
  namespace whose labels start with it.
* **key** -> the memory id in that namespace: a put with an existing key replaces the item
  (``created_at`` is kept).
* **value** -> kept whole in the memory's metadata (JSON); the memory's **content**, what recall
  reads, is ``value["content"]`` or ``value["text"]`` when it is text, the text at the put's
  ``index`` paths (or the store's ``fields``) when given, else a ``key: value`` rendering.
* **ttl** (minutes) -> ``expires_at``; expired items are not returned; reads refresh the TTL
  unless ``refresh_ttl=False``. ``sweep_expired()`` deletes them for good.

Values are redacted like every write (an API key in a value comes back as
``[REDACTED:api_key]``), so a secret never round-trips.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from cuemap_integrations import CueMap, MemoryRecord, NotFoundError
from cuemap_integrations.records import json_safe_copy

from ._extra import missing_extra
from ._recall import RecallSpec, recall, session_from_config

try:
    from langgraph.config import get_config
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        TTLConfig,
    )
    from langgraph.store.base.embed import get_text_at_path
except ImportError as error:  # pragma: no cover - exercised without the extra
    raise missing_extra(error) from None

__all__ = ["CueMapStore"]

_META = "langgraph_store"  # metadata key of an item written by this store
_SOURCE = "langgraph"
_ESCAPES = {"%": "%25", "/": "%2F"}
_UNESCAPE = re.compile("%(25|2F)")
_MAX_K = 10_000


def _escape(label: str) -> str:
    return "".join(_ESCAPES.get(char, char) for char in label)


def _unescape(label: str) -> str:
    return _UNESCAPE.sub(lambda m: "%" if m.group(1) == "25" else "/", label)


class CueMapStore(BaseStore):
    """LangGraph long-term memory (``graph.compile(store=...)``, ``create_agent(store=...)``).

    ``search(..., query=...)`` ranks items by cue recall within the namespace prefix: only the
    items the query finds are returned, best first, ``score`` set. Inside a run that has a
    thread id (``configurable.thread_id``) and with ``sessions=True``, each such search is one
    turn of that thread's recall session in each namespace searched, so "how did we fix it?"
    finds the fix for what the thread was just talking about. Without ``query``, items are
    filtered only, most recently updated first, ``score`` None.

    Args:
        cuemap: the store the items live in.
        prefix: a namespace prefix isolating this store's items from the CueMap's other
            namespaces (default none: ``("memories", "u1")`` is the namespace
            ``"memories/u1"``, which a ``CueMapRetriever`` or ``CueMapMiddleware`` can read).
        fields: default JSON paths whose text becomes the content (as ``PutOp.index``).
        ttl: LangGraph's ``TTLConfig`` (``default_ttl`` minutes, ``refresh_on_read``).
        sessions: run query searches inside a thread as session turns (default True).

    Example:
        >>> store = CueMapStore(CueMap())
        >>> store.put(("memories", "u1"), "port", {"content": "The API uses port 8001"})
        >>> store.get(("memories", "u1"), "port").value
        {'content': 'The API uses port 8001'}
        >>> [item.key for item in store.search(("memories",), query="which port?")]
        ['port']
    """

    supports_ttl = True

    def __init__(
        self,
        cuemap: CueMap,
        *,
        prefix: str | None = None,
        fields: Sequence[str] | None = None,
        ttl: TTLConfig | None = None,
        sessions: bool = True,
    ) -> None:
        self.cuemap = cuemap
        self.prefix = prefix or None
        self.fields = tuple(fields) if fields else None
        self.ttl_config = ttl
        self.sessions = sessions
        self._lock = threading.RLock()  # a batch's replace (forget, then add) is one step

    # ------------------------------------------------------------------ namespaces
    def store_namespace(self, namespace: tuple[str, ...]) -> str:
        """The CueMap namespace of a LangGraph namespace tuple."""
        joined = "/".join(_escape(label) for label in namespace)
        return f"{self.prefix}/{joined}" if self.prefix else joined

    def namespace_tuple(self, store_namespace: str) -> tuple[str, ...] | None:
        """The LangGraph namespace of a CueMap namespace (None: not under this store's prefix)."""
        if self.prefix:
            head = self.prefix + "/"
            if not store_namespace.startswith(head):
                return None
            store_namespace = store_namespace[len(head) :]
        return tuple(_unescape(label) for label in store_namespace.split("/"))

    def _namespaces(self) -> list[tuple[str, tuple[str, ...]]]:
        """(store namespace, tuple) of every non-empty namespace under the prefix, sorted."""
        found = ((name, self.namespace_tuple(name)) for name in self.cuemap.namespaces())
        return [(name, labels) for name, labels in found if labels is not None]

    # ------------------------------------------------------------------ batches
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops``; reads see the store as it was before the batch's writes, and of
        several puts to one key the last wins (as in LangGraph's ``InMemoryStore``)."""
        ops = list(ops)
        results: list[Result] = []
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        with self._lock:
            for op in ops:
                results.append(self._read(op, puts))
            self._write(list(puts.values()))
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread (the run's config, hence its thread, carries over)."""
        ops = list(ops)
        return await asyncio.to_thread(self.batch, ops)

    def _read(self, op: Op, puts: dict[tuple[tuple[str, ...], str], PutOp]) -> Result:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list(op)
        if isinstance(op, PutOp):
            puts[(op.namespace, op.key)] = op
            return None
        raise TypeError(f"unknown store operation {type(op).__name__}")

    # ------------------------------------------------------------------ get
    def _get(self, op: GetOp) -> Item | None:
        namespace = self.store_namespace(op.namespace)
        try:
            record = self.cuemap.get(op.key, namespace=namespace)
        except NotFoundError:
            return None
        if not _visible(record, self.cuemap.now()):
            return None
        if op.refresh_ttl:
            record = self._refresh(record)
        return _item(record, op.namespace)

    def _refresh(self, record: MemoryRecord) -> MemoryRecord:
        ttl = _meta(record).get("ttl")
        if not isinstance(ttl, (int, float)) or isinstance(ttl, bool):
            return record
        expires = self.cuemap.now() + timedelta(minutes=ttl)
        return self.cuemap.update(record.memory_id, namespace=record.namespace, expires_at=expires)

    # ------------------------------------------------------------------ search
    def _search(self, op: SearchOp) -> list[SearchItem]:
        n = len(op.namespace_prefix)
        scope = [(name, labels) for name, labels in self._namespaces()
                 if labels[:n] == tuple(op.namespace_prefix)]  # fmt: skip
        now = self.cuemap.now()
        found = self._ranked(op, scope) if op.query else self._listed(scope)
        kept = [
            (record, score, labels)
            for record, score, labels in found
            if _visible(record, now)
            and (score is None or _meta(record).get("index") is not False)
            and _matches(_value(record), op.filter)
        ]
        page = kept[max(op.offset, 0) : max(op.offset, 0) + max(op.limit, 0)]
        return [
            _search_item(self._refresh(record) if op.refresh_ttl else record, labels, score)
            for record, score, labels in page
        ]

    def _listed(
        self, scope: Sequence[tuple[str, tuple[str, ...]]]
    ) -> list[tuple[MemoryRecord, float | None, tuple[str, ...]]]:
        rows: list[tuple[MemoryRecord, float | None, tuple[str, ...]]]
        rows = [(record, None, labels) for name, labels in scope
                for record in self.cuemap.memories(namespace=name)]  # fmt: skip
        rows.sort(key=lambda row: _updated(row[0]), reverse=True)  # stable: ties keep insertion
        return rows

    def _ranked(
        self, op: SearchOp, scope: Sequence[tuple[str, tuple[str, ...]]]
    ) -> list[tuple[MemoryRecord, float | None, tuple[str, ...]]]:
        """Recall in each namespace, merged by score (then namespace order, then rank).

        Recall is exact top-k, so each namespace is asked for just enough hits: the page's end
        plus its unindexed items (dropped afterwards), or all of them when a filter applies.
        """
        session_id = _current_thread() if self.sessions else None
        ranked: list[tuple[float, int, int, MemoryRecord, tuple[str, ...]]] = []
        for place, (name, labels) in enumerate(scope):
            records = self.cuemap.memories(namespace=name)
            hidden = sum(1 for record in records if _meta(record).get("index") is False)
            wanted = len(records) if op.filter else max(op.offset, 0) + op.limit + hidden
            spec = RecallSpec(k=max(1, min(wanted, len(records), _MAX_K)), namespace=name)
            for rank, hit in enumerate(recall(self.cuemap, str(op.query), spec, session_id)):
                ranked.append((-hit.score, place, rank, hit.memory, labels))
        ranked.sort(key=lambda row: row[:3])
        return [(record, -negative, labels) for negative, _, _, record, labels in ranked]

    # ------------------------------------------------------------------ list namespaces
    def _list(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found = [labels for _, labels in self._namespaces()]
        found = [
            labels for labels in found
            if all(_does_match(condition, labels) for condition in op.match_conditions or ())
        ]  # fmt: skip
        if op.max_depth is not None:
            found = sorted({labels[: op.max_depth] for labels in found})
        else:
            found = sorted(found)
        return found[op.offset : op.offset + op.limit]

    # ------------------------------------------------------------------ put and delete
    def _write(self, puts: Sequence[PutOp]) -> None:
        """Apply puts and deletes: remove what they replace, then add the new items in one
        transaction; if the add fails, the removed items are put back and the error raised."""
        if not puts:
            return
        now = self.cuemap.now()
        old: dict[tuple[str, str], MemoryRecord] = {}
        for op in puts:
            namespace = self.store_namespace(op.namespace)
            try:
                old[(namespace, op.key)] = self.cuemap.get(op.key, namespace=namespace)
            except NotFoundError:
                pass
        items = [
            self._new_item(op, old.get((self.store_namespace(op.namespace), op.key)), now)
            for op in puts
            if op.value is not None
        ]
        by_namespace: dict[str, list[str]] = {}
        for namespace, key in old:
            by_namespace.setdefault(namespace, []).append(key)
        for namespace, keys in by_namespace.items():
            self.cuemap.forget(keys, namespace=namespace)
        try:
            self.cuemap.add_many(items)
        except Exception:
            self.cuemap.add_many(list(old.values()), redaction=None)  # as they were stored
            raise

    def _new_item(self, op: PutOp, old: MemoryRecord | None, now: datetime) -> dict[str, Any]:
        value = dict(op.value or {})
        paths = op.index if isinstance(op.index, list) else self.fields
        meta = {"value": value, "index": op.index, "ttl": op.ttl, "updated_at": now.isoformat()}
        return {
            "memory_id": op.key,
            "namespace": self.store_namespace(op.namespace),
            "content": _content(value, paths),
            "metadata": {_META: meta},
            "source": _SOURCE,
            "created_at": old.created_at if old is not None else now,
            "updated_at": now,
            "expires_at": None if op.ttl is None else now + timedelta(minutes=op.ttl),
        }

    def sweep_expired(self) -> int:
        """Delete this store's expired items for good; return how many were deleted."""
        now = self.cuemap.now()
        removed = 0
        with self._lock:
            for name, _ in self._namespaces():
                expired = [r.memory_id for r in self.cuemap.memories(namespace=name)
                           if _META in r.metadata and r.is_expired(now)]  # fmt: skip
                if expired:
                    removed += len(self.cuemap.forget(expired, namespace=name))
        return removed


def _current_thread() -> str | None:
    """The thread of the LangGraph run this call is part of (None outside a run)."""
    try:
        return session_from_config(get_config())
    except RuntimeError:
        return None


def _meta(record: MemoryRecord) -> dict[str, Any]:
    meta = record.metadata.get(_META)
    return meta if isinstance(meta, dict) else {}


def _value(record: MemoryRecord) -> dict[str, Any]:
    """The item's value (a copy): as put, or for a memory not written by this store, its
    content, type and metadata."""
    meta = _meta(record)
    if "value" in meta and isinstance(meta["value"], dict):
        value: dict[str, Any] = json_safe_copy(meta["value"])
        return value
    return {"content": record.content, "type": record.type.value,
            "metadata": json_safe_copy(record.metadata)}  # fmt: skip


def _updated(record: MemoryRecord) -> datetime:
    stamp = _meta(record).get("updated_at")
    return datetime.fromisoformat(stamp) if isinstance(stamp, str) else record.updated_at


def _visible(record: MemoryRecord, now: datetime) -> bool:
    return not record.is_expired(now) and record.superseded_by is None


def _item(record: MemoryRecord, labels: tuple[str, ...]) -> Item:
    return Item(value=_value(record), key=record.memory_id, namespace=labels,
                created_at=record.created_at, updated_at=_updated(record))  # fmt: skip


def _search_item(record: MemoryRecord, labels: tuple[str, ...], score: float | None) -> SearchItem:
    return SearchItem(labels, record.memory_id, _value(record), record.created_at,
                      _updated(record), score)  # fmt: skip


def _content(value: Mapping[str, Any], paths: Sequence[str] | None) -> str:
    """What recall reads for a value (see the module docstring)."""
    if paths:
        texts = [text for path in paths for text in get_text_at_path(value, path)]
        joined = "\n".join(t for t in texts if t.strip())
        if joined:
            return joined
    for name in ("content", "text"):
        text = value.get(name)
        if isinstance(text, str) and text.strip():
            return text
    lines = [
        f"{key}: {item if isinstance(item, str) else _json(item)}" for key, item in value.items()
    ]
    return "\n".join(lines) if any(line.strip() for line in lines) else "{}"


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _matches(value: Mapping[str, Any], conditions: Mapping[str, Any] | None) -> bool:
    """LangGraph's filter: equality per key (nested dicts compared key by key), or operators
    ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``."""
    return all(_compare(value.get(key), wanted) for key, wanted in (conditions or {}).items())


_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: a is not None and float(a) > float(b),
    "$gte": lambda a, b: a is not None and float(a) >= float(b),
    "$lt": lambda a, b: a is not None and float(a) < float(b),
    "$lte": lambda a, b: a is not None and float(a) <= float(b),
}


def _compare(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            unknown = sorted(name for name in wanted if name not in _OPERATORS)
            if unknown:
                raise ValueError(f"unsupported filter operator {unknown[0]!r}: "
                                 f"choose from {', '.join(_OPERATORS)}")  # fmt: skip
            return all(_OPERATORS[name](actual, operand) for name, operand in wanted.items())
        return isinstance(actual, Mapping) and all(
            _compare(actual.get(k), v) for k, v in wanted.items()
        )
    if isinstance(wanted, (list, tuple)):
        return (isinstance(actual, (list, tuple)) and len(actual) == len(wanted)
                and all(_compare(a, w) for a, w in zip(actual, wanted, strict=True)))  # fmt: skip
    return bool(actual == wanted)


def _does_match(condition: MatchCondition, labels: tuple[str, ...]) -> bool:
    """A ``prefix`` or ``suffix`` condition, ``"*"`` matching any one label."""
    path = tuple(condition.path)
    if len(labels) < len(path):
        return False
    part = (
        labels[: len(path)]
        if condition.match_type == "prefix"
        else labels[len(labels) - len(path) :]
    )
    return all(want == "*" or want == have for want, have in zip(path, part, strict=True))
