"""Vector indexes that mirror a :class:`~cuemap_integrations.CueMap`, for the dense fallback.

:class:`DenseIndex` keeps one vector per memory (its content, embedded by any
:class:`~cuemap_integrations.embeddings.Embedder`) in a FAISS ``IndexIDMap2(IndexFlatIP)``: exact
cosine similarity over L2-normalised vectors. :class:`LangChainVectorIndex` does the same job
through any LangChain ``VectorStore``. Both are kept in step by the store's write events
(``on_write``): added memories are embedded, changed ones re-embedded when their text changed,
removed ones deleted. Superseded and expired memories keep their vectors: the recall's own
filters (``admits``) decide at query time, so a filter change never needs a re-index.

Guarantees:

* **Namespaces never mix.** A vector's FAISS id is ``(namespace number << 32) | n``, a stable
  int per ``(namespace, memory_id)``; a search only looks at its namespace's id range, and every
  result is checked against its namespace again.
* **No memory is lost to a failing embedder.** The memory is already in the store; its id is
  kept as pending and embedded on the next write or search (``stats().pending``).
* **One model per index.** A persisted index made by another model or dimension is detected,
  logged and rebuilt, never mixed.

Persistence (file stores only): ``<db>.faiss`` (the FAISS index) and ``<db>.faiss.json`` (model
name, dimension, the id map with a digest of each memory's text, a fingerprint of the memory set,
the FAISS file's SHA-256), written owner-only, atomically, every ``autosave`` changes, on
:meth:`DenseIndex.save` / :meth:`DenseIndex.close` and at interpreter exit. On open the index is
loaded and brought in step with the store: vectors of deleted memories removed, new or changed
memories embedded (a full rebuild when the files are missing, unreadable or from another model).

Example:
    >>> from cuemap_integrations.embeddings import as_embedder
    >>> letters = as_embedder(lambda ts: [[t.count(c) + 0.01 for c in "abc"] for t in ts], name="abc")
    >>> from cuemap_integrations import CueMap
    >>> cm = CueMap()
    >>> index = DenseIndex(letters)
    >>> cm.add_listener(index)
    >>> _ = cm.add("aaa", memory_id="a"); _ = cm.add("bbb", memory_id="b")
    >>> [(m.memory.memory_id, round(m.similarity, 2)) for m in index.search(
    ...     "aab", namespace="default", k=1, resolve=lambda ns, i: cm.get(i, namespace=ns))]
    [('a', 0.9)]
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
import logging
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from .embeddings import Embedder, embed_query, embed_texts, progress_bar
from .errors import NotFoundError, ValidationError
from .events import WriteEvent
from .records import MemoryRecord

__all__ = [
    "DenseIndex",
    "DenseMatch",
    "IndexStats",
    "LangChainVectorIndex",
    "VectorIndex",
    "memory_fingerprint",
]

logger = logging.getLogger("cuemap_integrations")

Key = tuple[str, str]  # (namespace, memory_id)
Accept = Callable[[MemoryRecord, float], bool]
Resolve = Callable[[str, str], MemoryRecord | None]

FORMAT_VERSION = 1
_LOCAL_BITS = 32
_MAX_NAMESPACES = 2**31 - 1
_NO_FILES = "no index files yet"
_EXTRA_HINT = "pip install 'cuemap-integrations[hybrid]'"


def _accept_all(record: MemoryRecord, similarity: float) -> bool:
    return True


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _key(record: MemoryRecord) -> Key:
    return (record.namespace, record.memory_id)


def memory_fingerprint(entries: Iterable[tuple[str, str, str]]) -> str:
    """SHA-256 over ``(namespace, memory_id, text digest)`` triples, in sorted order."""
    digest = hashlib.sha256()
    for namespace, memory_id, text in sorted(entries):
        digest.update(f"{namespace}\x00{memory_id}\x00{text}\n".encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class DenseMatch:
    """A memory found by vector search, with its cosine similarity to the query."""

    memory: MemoryRecord
    similarity: float


@dataclass(frozen=True)
class IndexStats:
    """The state of a vector index.

    Attributes:
        kind: ``"faiss"`` or ``"langchain"``.
        model: the embedder's (or vector store's) name.
        vectors: memories with a vector.
        pending: memories waiting to be (re-)embedded after a failure.
        failures: embedding attempts that failed so far.
        last_error: the last failure's message, or None.
        path: the FAISS file, or None (in memory).
    """

    kind: str
    model: str
    vectors: int
    pending: int
    failures: int
    last_error: str | None
    path: str | None

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-safe data."""
        return dict(self.__dict__)


class VectorIndex(Protocol):
    """What :class:`~cuemap_integrations.hybrid.HybridRecall` needs from a vector index."""

    def sync(self, records: Sequence[MemoryRecord]) -> None: ...

    def on_write(self, event: WriteEvent) -> None: ...

    def search(
        self,
        query: str,
        *,
        namespace: str,
        k: int,
        resolve: Resolve,
        accept: Accept = ...,
        min_similarity: float = ...,
    ) -> list[DenseMatch]: ...

    def retry_pending(self, *, wait: bool = True) -> int: ...

    def save(self) -> None: ...

    def close(self) -> None: ...

    def stats(self) -> IndexStats: ...


class _Mirror:
    """Pending queue, write-event handling and the search loop shared by both indexes.

    ``_lock`` guards the index structures (held only briefly, never while embedding or calling
    back into the store); ``_flush_lock`` lets one thread embed pending memories at a time.
    """

    kind = "mirror"

    def __init__(self, batch_size: int, progress: bool | None) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValidationError("batch_size", batch_size, "an integer >= 1")
        self.batch_size = batch_size
        self.progress = progress
        self._lock = threading.RLock()
        self._flush_lock = threading.Lock()
        self._pending: dict[Key, MemoryRecord] = {}
        self._digests: dict[Key, str] = {}  # what each stored vector was made from
        self._sizes: dict[str, int] = {}  # vectors per namespace
        self._failures = 0
        self._last_error: str | None = None

    # -- subclass hooks
    def _store(self, records: Sequence[MemoryRecord], on_done: Callable[[int], None]) -> None:
        raise NotImplementedError

    def _drop(self, keys: Sequence[Key]) -> None:
        raise NotImplementedError

    def _prepare(self, query: str) -> Any:
        """What ``_candidates`` searches with (the query's vector, or the text itself)."""
        return query

    def _candidates(
        self, prepared: Any, namespace: str, fetch: int
    ) -> tuple[list[tuple[Key, float]], bool]:
        """Up to ``fetch`` (key, similarity) pairs, best first, and whether more may exist."""
        raise NotImplementedError

    @property
    def model_name(self) -> str:
        raise NotImplementedError

    def _vector_count(self) -> int:
        raise NotImplementedError

    # -- keeping in step
    def _queue(self, records: Iterable[MemoryRecord]) -> None:
        """Mark records whose text has no vector yet (caller holds ``_lock``)."""
        for record in records:
            key = _key(record)
            if self._digests.get(key) == _digest(record.content):
                self._pending.pop(key, None)  # e.g. back to a text that is already embedded
            else:
                self._pending[key] = record

    def on_write(self, event: WriteEvent) -> None:
        """Mirror one committed write: embed added or re-worded memories, drop removed ones."""
        with self._lock:
            removed = [_key(r) for r in event.removed]
            for key in removed:
                self._pending.pop(key, None)
            self._queue((*event.added, *event.changed))
        if removed:
            self._drop(removed)
        self.retry_pending()

    def retry_pending(self, *, wait: bool = True) -> int:
        """Embed the pending memories now; return how many are still pending.

        A failure is logged and counted, never raised: the memories stay pending for the next
        write or search. With ``wait=False`` (recalls) nothing is done while another thread is
        already embedding, so a recall never waits for a bulk write's embeddings.
        """
        if not self._flush_lock.acquire(blocking=wait):
            with self._lock:
                return len(self._pending)
        try:
            return self._flush()
        finally:
            self._flush_lock.release()

    def _flush(self) -> int:
        """Embed and store every pending memory (caller holds ``_flush_lock``)."""
        with self._lock:
            batch = list(self._pending.values())
        if not batch:
            return 0
        bar = progress_bar(len(batch), self.progress, self.batch_size)
        try:
            self._store(batch, bar.update if bar is not None else lambda n: None)
        except Exception as exc:  # any embedder error: keep the memories pending, retry later
            with self._lock:
                self._failures += 1
                self._last_error = f"{type(exc).__name__}: {exc}"
            logger.warning(
                "dense index: embedding failed (%s); %d memories pending, retried on the next "
                "write or search", self._last_error, len(self._pending),
            )  # fmt: skip
        finally:
            if bar is not None:
                bar.close()
        with self._lock:
            return len(self._pending)

    def _stored(self, record: MemoryRecord) -> bool:
        """After a vector for ``record`` was written: True if it was still the pending version."""
        key = _key(record)
        if self._pending.get(key) is not record:
            return False  # removed or changed again meanwhile: the newer event decides
        del self._pending[key]
        self._set_digest(key, _digest(record.content))
        return True

    def _set_digest(self, key: Key, digest: str) -> None:
        if key not in self._digests:
            self._sizes[key[0]] = self._sizes.get(key[0], 0) + 1
        self._digests[key] = digest

    def _pop_digest(self, key: Key) -> None:
        if self._digests.pop(key, None) is not None:
            self._sizes[key[0]] -= 1
            if not self._sizes[key[0]]:
                del self._sizes[key[0]]

    def sync(self, records: Sequence[MemoryRecord]) -> None:
        """Bring the index in step with exactly ``records`` (all the store's memories)."""
        wanted = {_key(r): r for r in records}
        with self._lock:
            stale = [key for key in self._digests if key not in wanted]
            self._pending = {k: r for k, r in self._pending.items() if k in wanted}
            self._queue(wanted.values())
            todo = len(self._pending)
        if stale:
            self._drop(stale)
        if stale or todo:
            logger.info("dense index: %d vectors removed, %d memories to embed", len(stale), todo)
        self.retry_pending()

    # -- searching
    def search(
        self,
        query: str,
        *,
        namespace: str,
        k: int,
        resolve: Resolve,
        accept: Accept = _accept_all,
        min_similarity: float = -1.0,
    ) -> list[DenseMatch]:
        """The ``k`` most similar memories of ``namespace`` that ``accept`` admits, best first.

        Over-fetches (4 x k, doubling) until ``k`` are admitted or the namespace is exhausted;
        stops early below ``min_similarity``. ``resolve(namespace, memory_id)`` returns the
        current record (or None when it is gone); the index never returns another namespace's
        memory. Raises what the embedder raises for the query.
        """
        if self._pending:
            self.retry_pending(wait=False)
        with self._lock:
            if not self._sizes.get(namespace):
                return []  # nothing to search: the query is not embedded
        prepared = self._prepare(query)  # embedded once, outside the lock
        fetch = max(4 * k, 8)
        seen: dict[Key, DenseMatch | None] = {}
        while True:
            rows, more = self._candidates(prepared, namespace, fetch)
            found, done = self._admitted(rows, namespace, k, resolve, accept, min_similarity, seen)
            if done or not more:
                return found
            fetch *= 2

    def _admitted(
        self,
        rows: Sequence[tuple[Key, float]],
        namespace: str,
        k: int,
        resolve: Resolve,
        accept: Accept,
        floor: float,
        seen: dict[Key, DenseMatch | None],
    ) -> tuple[list[DenseMatch], bool]:
        found: list[DenseMatch] = []
        for key, similarity in rows:
            if key[0] != namespace:
                continue  # never trust the index alone with isolation
            if similarity < floor:
                return found, True
            if key not in seen:
                record = _resolved(resolve, key)
                ok = record is not None and _key(record) == key and accept(record, similarity)
                seen[key] = DenseMatch(record, similarity) if ok and record is not None else None
            match = seen[key]
            if match is not None:
                found.append(match)
                if len(found) == k:
                    return found, True
        return found, False

    # -- reporting and lifecycle
    def check(self, records: Iterable[MemoryRecord]) -> list[str]:
        """Disagreements between the vectors and the store's memories (``cuemap check``)."""
        stored = {_key(r) for r in records}
        with self._lock:
            embedded, pending, vectors = (
                set(self._digests),
                set(self._pending),
                self._vector_count(),
            )
        problems = [
            f"dense index holds a vector for missing memory {k}" for k in sorted(embedded - stored)
        ]
        problems += [
            f"memory {k} has no vector and is not pending"
            for k in sorted(stored - embedded - pending)
        ]
        if vectors != len(embedded):
            problems.append(f"dense index has {vectors} vectors for {len(embedded)} memories")
        return problems

    def pending_ids(self) -> list[Key]:
        """(namespace, memory_id) of memories waiting to be embedded, oldest first."""
        with self._lock:
            return list(self._pending)

    def stats(self) -> IndexStats:
        """Vectors, pending memories, failures."""
        with self._lock:
            return IndexStats(
                kind=self.kind,
                model=self.model_name,
                vectors=self._vector_count(),
                pending=len(self._pending),
                failures=self._failures,
                last_error=self._last_error,
                path=self._path_text(),
            )

    def _path_text(self) -> str | None:
        return None

    def save(self) -> None:
        """Persist (a no-op for indexes without files)."""

    def close(self) -> None:
        """Persist and release resources (idempotent)."""
        self.save()


def _resolved(resolve: Resolve, key: Key) -> MemoryRecord | None:
    try:
        return resolve(*key)
    except NotFoundError:  # deleted between the search and now
        return None


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:
        raise ImportError(f"the dense index needs numpy: {_EXTRA_HINT}") from None
    return numpy


def _faiss() -> Any:
    try:
        import faiss
    except ImportError:
        raise ImportError(f"the dense index needs faiss-cpu: {_EXTRA_HINT}") from None
    return faiss


class DenseIndex(_Mirror):
    """A FAISS index of memory embeddings, kept in step with a store by ``on_write``.

    Args:
        embedder: any :class:`~cuemap_integrations.embeddings.Embedder` (see ``as_embedder``).
        path: the FAISS file (its metadata goes to ``<path>.json``); None keeps it in memory.
        batch_size: texts per embedder call.
        progress: tqdm bar while embedding many memories: None on a terminal only.
        autosave: write the files after this many changed vectors (also on ``save``/``close``
            and at exit).

    Raises:
        ImportError: numpy or faiss-cpu is missing (extra ``[hybrid]``).
    """

    kind = "faiss"

    def __init__(
        self,
        embedder: Embedder,
        *,
        path: str | os.PathLike[str] | None = None,
        batch_size: int = 64,
        progress: bool | None = None,
        autosave: int = 256,
    ) -> None:
        super().__init__(batch_size, progress)
        self._np, self._faiss = _numpy(), _faiss()
        self.embedder = embedder
        self.path = None if path is None else Path(path)
        self.autosave = autosave
        self._index: Any = None  # created with the first vector (its dimension)
        self._ids: dict[Key, int] = {}
        self._keys: dict[int, Key] = {}
        self._namespaces: dict[str, int] = {}
        self._next_local: dict[str, int] = {}
        self._unsaved = 0
        self._exit_hook: Callable[[], None] | None = None
        if self.path is not None:
            self._exit_hook = functools.partial(_save_at_exit, weakref.ref(self))
            atexit.register(self._exit_hook)

    @property
    def model_name(self) -> str:
        """The embedder's name."""
        return self.embedder.name

    @property
    def json_path(self) -> Path | None:
        """The metadata file beside the FAISS file."""
        return None if self.path is None else self.path.with_name(self.path.name + ".json")

    def __len__(self) -> int:
        return self._vector_count()

    def _vector_count(self) -> int:
        return len(self._ids)

    def _path_text(self) -> str | None:
        return None if self.path is None else str(self.path)

    # -- ids
    def _id_for(self, key: Key) -> int:
        known = self._ids.get(key)
        if known is not None:
            return known
        namespace = key[0]
        if namespace not in self._namespaces:
            if len(self._namespaces) >= _MAX_NAMESPACES:
                raise ValidationError(
                    "namespace", namespace, "at most 2**31 - 1 namespaces per index"
                )
            self._namespaces[namespace] = len(self._namespaces) + 1
        local = self._next_local.get(namespace, 0)
        self._next_local[namespace] = local + 1
        number = (self._namespaces[namespace] << _LOCAL_BITS) | local
        self._ids[key], self._keys[number] = number, key
        return number

    def _forget_id(self, key: Key) -> int | None:
        number = self._ids.pop(key, None)
        if number is not None:
            del self._keys[number]
            self._pop_digest(key)
        return number

    # -- writing vectors
    def _store(self, records: Sequence[MemoryRecord], on_done: Callable[[int], None]) -> None:
        for start in range(0, len(records), self.batch_size):
            chunk = records[start : start + self.batch_size]
            vectors = embed_texts(
                self.embedder, [r.content for r in chunk], batch_size=len(chunk), progress=False
            )
            with self._lock:
                self._insert(chunk, vectors)
            on_done(len(chunk))
        self._maybe_save()

    def _insert(self, records: Sequence[MemoryRecord], vectors: Sequence[Sequence[float]]) -> None:
        np = self._np
        if self._index is None:
            self._index = self._new_index(len(vectors[0]))
        if len(vectors[0]) != self._index.d:
            raise ValidationError(
                "embedder",
                self.embedder.name,
                f"vectors of dimension {self._index.d} (this index's)",
            )
        rows, ids = [], []
        for record, vector in zip(records, vectors, strict=True):
            key = _key(record)
            if self._pending.get(key) is not record:
                continue
            old = self._ids.get(key)
            if old is not None:
                self._index.remove_ids(np.array([old], dtype=np.int64))
            self._stored(record)
            rows.append(vector)
            ids.append(self._id_for(key))
        if rows:
            matrix = np.ascontiguousarray(np.array(rows, dtype=np.float32))
            self._index.add_with_ids(matrix, np.array(ids, dtype=np.int64))
            self._unsaved += len(rows)

    def _new_index(self, dimension: int) -> Any:
        return self._faiss.IndexIDMap2(self._faiss.IndexFlatIP(dimension))

    def _drop(self, keys: Sequence[Key]) -> None:
        with self._lock:
            numbers = [n for n in (self._forget_id(k) for k in keys) if n is not None]
            if numbers and self._index is not None:
                self._index.remove_ids(self._np.array(numbers, dtype=self._np.int64))
                self._unsaved += len(numbers)
        self._maybe_save()

    # -- searching
    def _prepare(self, query: str) -> Any:
        return self._np.array([embed_query(self.embedder, query)], dtype=self._np.float32)

    def _candidates(
        self, prepared: Any, namespace: str, fetch: int
    ) -> tuple[list[tuple[Key, float]], bool]:
        faiss = self._faiss
        with self._lock:
            number = self._namespaces.get(namespace)
            size = self._sizes.get(namespace, 0)
            limit = min(fetch, size)
            if number is None or limit == 0 or self._index is None:
                return [], False
            params = faiss.SearchParameters()  # only this namespace's id range is looked at
            params.sel = faiss.IDSelectorRange(number << _LOCAL_BITS, (number + 1) << _LOCAL_BITS)
            scores, ids = self._index.search(prepared, limit, params=params)
            found = [(float(s), int(i)) for s, i in zip(scores[0], ids[0], strict=True)]
            # equal similarities: the earlier-indexed memory first, whatever FAISS's heap did
            found.sort(key=lambda row: (-row[0], row[1]))
            rows = [(self._keys[i], s) for s, i in found if i in self._keys]
        return rows, limit < size

    # -- persistence
    def _maybe_save(self) -> None:
        if self.path is not None and self._unsaved >= self.autosave:
            try:
                self.save()
            except OSError as exc:  # the vectors are in memory; the next save tries again
                logger.warning("dense index: saving %s failed (%s)", self.path, exc)

    def save(self) -> None:
        """Write ``<path>`` and ``<path>.json`` (atomically, owner-only); no-op in memory."""
        if self.path is None or self.json_path is None:
            return
        with self._lock:
            blob = b"" if self._index is None else bytes(self._faiss.serialize_index(self._index))
            meta = self._metadata(blob)
            self._unsaved = 0
        _write_private(self.path, blob)
        _write_private(self.json_path, json.dumps(meta, ensure_ascii=False).encode("utf-8"))

    def _metadata(self, blob: bytes) -> dict[str, Any]:
        entries = [
            [ns, mid, number, self._digests[(ns, mid)]] for (ns, mid), number in self._ids.items()
        ]
        return {
            "format": FORMAT_VERSION,
            "model": self.embedder.name,
            "dimension": None if self._index is None else int(self._index.d),
            "vectors": len(entries),
            "index_sha256": hashlib.sha256(blob).hexdigest(),
            "fingerprint": memory_fingerprint(
                (ns, mid, d) for (ns, mid), d in self._digests.items()
            ),
            "namespaces": dict(self._namespaces),
            "next_local": dict(self._next_local),
            "entries": entries,
        }

    def sync(self, records: Sequence[MemoryRecord]) -> None:
        """Load the persisted index (if usable), then bring it in step with ``records``."""
        if self.path is not None and self._index is None and not self._ids:
            self._load()
        super().sync(records)
        if self.path is not None and (self._unsaved or not self.path.exists()):
            self.save()

    def _load(self) -> None:
        reason = self._try_load()
        if reason == _NO_FILES:
            logger.info("dense index %s: %s; building it", self.path, reason)
        elif reason:
            logger.warning("dense index %s: %s; rebuilding", self.path, reason)

    def _try_load(self) -> str | None:
        """Load the files; return why they cannot be used (None when loaded)."""
        assert self.path is not None and self.json_path is not None  # callers check
        if not self.path.exists() or not self.json_path.exists():
            return _NO_FILES if not self.path.exists() else "metadata file missing"
        try:
            meta = json.loads(self.json_path.read_text(encoding="utf-8"))
            blob = self.path.read_bytes()
        except (OSError, ValueError) as exc:
            return f"unreadable ({exc})"
        problem = self._check_meta(meta, blob)
        if problem:
            return problem
        try:
            index = (
                None
                if not blob
                else self._faiss.deserialize_index(self._np.frombuffer(blob, dtype=self._np.uint8))
            )
        except RuntimeError as exc:
            return f"FAISS file unreadable ({exc})"
        self._adopt(meta, index)
        return None

    def _check_meta(self, meta: Any, blob: bytes) -> str | None:
        if not isinstance(meta, dict) or meta.get("format") != FORMAT_VERSION:
            return "unknown metadata format"
        if meta.get("model") != self.embedder.name:
            return f"made by model {meta.get('model')!r}, not {self.embedder.name!r}"
        dimension = _dimension_of(self.embedder)
        if meta.get("dimension") not in (None, dimension) and dimension is not None:
            return f"dimension {meta.get('dimension')}, not {dimension}"
        if meta.get("index_sha256") != hashlib.sha256(blob).hexdigest():
            return "FAISS file does not match its metadata (SHA-256)"
        return None

    def _adopt(self, meta: dict[str, Any], index: Any) -> None:
        with self._lock:
            self._index = index
            self._namespaces = {str(k): int(v) for k, v in meta["namespaces"].items()}
            self._next_local = {str(k): int(v) for k, v in meta["next_local"].items()}
            for namespace, memory_id, number, digest in meta["entries"]:
                key = (str(namespace), str(memory_id))
                self._ids[key], self._keys[int(number)] = int(number), key
                self._set_digest(key, str(digest))

    def close(self) -> None:
        """Save, and stop the exit hook (idempotent)."""
        self.save()
        if self._exit_hook is not None:
            atexit.unregister(self._exit_hook)
            self._exit_hook = None


def _dimension_of(embedder: Embedder) -> int | None:
    """The embedder's dimension, or None when it cannot be asked now (it may probe and fail)."""
    try:
        return embedder.dimension
    except Exception as exc:  # an unreachable model: the first embedding will check it
        logger.warning("dense index: cannot ask %s for its dimension (%s)", embedder.name, exc)
        return None


def _save_at_exit(ref: weakref.ReferenceType[DenseIndex]) -> None:
    index = ref()
    if index is None or index._unsaved == 0:
        return
    try:
        index.save()
    except Exception:  # at exit: report, never raise
        logger.exception("dense index: saving at exit failed")


def _write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file (mode 0600) and an atomic rename."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


ScoreKind = Literal["similarity", "cosine_distance", "squared_l2"]
_TO_SIMILARITY: dict[str, Callable[[float], float]] = {
    "similarity": lambda s: s,
    "cosine_distance": lambda d: 1.0 - d,
    "squared_l2": lambda d: 1.0 - d / 2.0,  # for unit vectors: |a - b|^2 = 2 - 2 cos
}


class LangChainVectorIndex(_Mirror):
    """Any LangChain ``VectorStore`` as the dense side (duck-typed: no LangChain import).

    The store embeds with its own embeddings. Each memory is one document: text = the content,
    id = ``"cuemap:" + sha256(namespace, memory_id)`` (stable), metadata ``namespace``,
    ``memory_id`` and ``cuemap_digest``.

    Args:
        vector_store: has ``add_texts(texts, metadatas=, ids=)``,
            ``similarity_search_with_score(query, k=, **kwargs)`` and ``delete(ids=)``.
        name: the identity reported in stats (default: the store's class).
        scores: what the store's scores are: ``"similarity"`` (higher is closer, e.g.
            ``InMemoryVectorStore``), ``"cosine_distance"`` (Chroma's cosine space) or
            ``"squared_l2"`` (FAISS ``IndexFlatL2`` over unit vectors); converted to cosine.
        namespace_filter: ``namespace -> filter`` passed as ``filter=`` to the search (e.g.
            ``lambda ns: {"namespace": ns}`` for Chroma); None searches unfiltered and filters
            the results (every result's namespace is checked in both cases).
        batch_size: documents per ``add_texts`` call.
    """

    kind = "langchain"

    def __init__(
        self,
        vector_store: Any,
        *,
        name: str | None = None,
        scores: ScoreKind = "similarity",
        namespace_filter: Callable[[str], Any] | None = None,
        batch_size: int = 64,
        progress: bool | None = None,
    ) -> None:
        super().__init__(batch_size, progress)
        for method in ("add_texts", "similarity_search_with_score", "delete"):
            if not callable(getattr(vector_store, method, None)):
                raise ValidationError(
                    "vector_store", vector_store, f"a LangChain VectorStore (no {method})"
                )
        if scores not in _TO_SIMILARITY:
            raise ValidationError("scores", scores, f"choose from {', '.join(_TO_SIMILARITY)}")
        self.vector_store = vector_store
        self._name = name or f"{type(vector_store).__module__}.{type(vector_store).__qualname__}"
        self._to_similarity = _TO_SIMILARITY[scores]
        self.namespace_filter = namespace_filter

    @property
    def model_name(self) -> str:
        """The vector store's name."""
        return self._name

    @staticmethod
    def document_id(namespace: str, memory_id: str) -> str:
        """The stable document id of a memory."""
        return "cuemap:" + hashlib.sha256(f"{namespace}\x00{memory_id}".encode()).hexdigest()[:32]

    def _vector_count(self) -> int:
        return len(self._digests)

    def _store(self, records: Sequence[MemoryRecord], on_done: Callable[[int], None]) -> None:
        for start in range(0, len(records), self.batch_size):
            chunk = records[start : start + self.batch_size]
            with self._lock:
                replaced = [self.document_id(*_key(r)) for r in chunk if _key(r) in self._digests]
            if replaced:
                self.vector_store.delete(ids=replaced)
            self.vector_store.add_texts(
                [r.content for r in chunk],
                metadatas=[{"namespace": r.namespace, "memory_id": r.memory_id,
                            "cuemap_digest": _digest(r.content)} for r in chunk],
                ids=[self.document_id(*_key(r)) for r in chunk],
            )  # fmt: skip
            with self._lock:
                for record in chunk:
                    self._stored(record)
            on_done(len(chunk))

    def _drop(self, keys: Sequence[Key]) -> None:
        with self._lock:
            for key in keys:
                self._pop_digest(key)
        self.vector_store.delete(ids=[self.document_id(*key) for key in keys])

    def sync(self, records: Sequence[MemoryRecord]) -> None:
        """Learn which memories the store already holds (``get_by_ids``), then add the rest."""
        getter = getattr(self.vector_store, "get_by_ids", None)
        if callable(getter) and records:
            try:
                docs = getter([self.document_id(*_key(r)) for r in records])
            except NotImplementedError:
                docs = []
            with self._lock:
                for doc in docs:
                    meta = getattr(doc, "metadata", None) or {}
                    key = (meta.get("namespace"), meta.get("memory_id"))
                    if isinstance(key[0], str) and isinstance(key[1], str):
                        self._set_digest((key[0], key[1]), str(meta.get("cuemap_digest")))
        super().sync(records)

    def _candidates(
        self, prepared: Any, namespace: str, fetch: int
    ) -> tuple[list[tuple[Key, float]], bool]:
        query: str = prepared
        kwargs = (
            {} if self.namespace_filter is None else {"filter": self.namespace_filter(namespace)}
        )
        results = self.vector_store.similarity_search_with_score(query, k=fetch, **kwargs)
        rows: list[tuple[Key, float]] = []
        for doc, score in results:
            meta = getattr(doc, "metadata", None) or {}
            ns, memory_id = meta.get("namespace"), meta.get("memory_id")
            if isinstance(ns, str) and isinstance(memory_id, str):
                rows.append(((ns, memory_id), float(self._to_similarity(float(score)))))
        rows.sort(key=lambda row: -row[1])  # stable: the store's order breaks ties
        with self._lock:
            known = len(self._digests)
        # a full page may hide more; past twice the documents we wrote, the rest is foreign
        return rows, len(results) >= fetch and fetch < 2 * known
