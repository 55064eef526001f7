"""Reliability workloads shared by ``tests/reliability`` and ``cuemap bench soak``.

Every memory written here carries a checksum of its own text (``... #sum:<12 hex>``), so any
recall hit can be verified: a half-written or mixed-up memory fails :func:`verify`. Each worker
keeps a ledger of what the store *acknowledged* (a call that returned), which the checks compare
with the store afterwards. Workers only update and delete their own memories (ids carry the
worker's name): with several processes each keeps its own in-memory index, loaded at open, and
sees the others' writes only after reopening (see the README's "Reliability" section).
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from typing import Any

from cuemap_integrations import CueMap, CueMapError

__all__ = [
    "NASTY",
    "CrashRound",
    "Ledger",
    "WorkerReport",
    "bad_call",
    "check_call",
    "crash_child",
    "crash_round",
    "fuzz",
    "lost_memories",
    "payload",
    "run_mixed",
    "snapshot",
    "verify",
]

NAMESPACE = "shared"
_TOPICS = ("order", "cache", "port", "deploy", "schema", "backup", "invoice", "bike")
_SUM = " #sum:"

Ledger = dict[str, str | None]  # memory_id -> acknowledged content (None: deleted)


def payload(label: str, version: int = 0) -> str:
    """A memory text that embeds a checksum of itself."""
    topic = _TOPICS[int(hashlib.sha256(label.encode()).hexdigest(), 16) % len(_TOPICS)]
    body = f"{label} v{version} notes about the {topic} and the {topic} service"
    return body + _SUM + hashlib.sha256(body.encode()).hexdigest()[:12]


def verify(content: str) -> bool:
    """True when ``content`` is a :func:`payload` whose checksum matches its text."""
    body, sep, digest = content.rpartition(_SUM)
    return bool(sep) and hashlib.sha256(body.encode()).hexdigest()[:12] == digest


@dataclass
class WorkerReport:
    """What one worker did: operations acknowledged, errors seen, bad hits, its ledger."""

    name: str
    operations: int = 0
    recalls: int = 0
    hits: int = 0  # recall hits verified against their checksum
    bad_hits: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    ledger: Ledger = field(default_factory=dict)


class _Worker:
    """Random adds, add_many batches, updates, deletes and recalls on one CueMap."""

    def __init__(self, cm: CueMap, name: str, seed: int) -> None:
        self.cm, self.rng = cm, random.Random(seed)
        self.report = WorkerReport(name)
        self.live: list[str] = []  # own ids still stored
        self.count = 0

    def _new_id(self) -> str:
        self.count += 1
        return f"{self.report.name}-{self.count}"

    def add(self) -> None:
        memory_id = self._new_id()
        content = payload(memory_id)
        self.cm.add(content, memory_id=memory_id, namespace=NAMESPACE)
        self._ack(memory_id, content)

    def add_many(self) -> None:
        ids = [self._new_id() for _ in range(self.rng.randint(2, 5))]
        items = [{"content": payload(i), "memory_id": i, "namespace": NAMESPACE} for i in ids]
        self.cm.add_many(items)
        for item in items:
            self._ack(str(item["memory_id"]), str(item["content"]))

    def update(self) -> None:
        if not self.live:
            return self.add()
        memory_id = self.rng.choice(self.live)
        content = payload(memory_id, self.rng.randint(1, 10**6))
        self.cm.update(memory_id, namespace=NAMESPACE, content=content)
        self.report.ledger[memory_id] = content

    def delete(self) -> None:
        if not self.live:
            return self.add()
        memory_id = self.live.pop(self.rng.randrange(len(self.live)))
        self.cm.delete(memory_id, namespace=NAMESPACE)
        self.report.ledger[memory_id] = None

    def recall(self) -> None:
        query = f"{self.rng.choice(_TOPICS)} service notes"
        for hit in self.cm.recall(query, k=10, namespace=NAMESPACE).hits:
            self.report.hits += 1
            if not verify(hit.memory.content):
                self.report.bad_hits.append(hit.memory.content[:120])
        self.report.recalls += 1

    def _ack(self, memory_id: str, content: str) -> None:
        self.report.ledger[memory_id] = content
        self.live.append(memory_id)

    def run(self, operations: int, deadline: float | None = None) -> WorkerReport:
        actions: list[Callable[[], None]] = [
            self.add, self.add, self.add_many, self.update, self.delete, self.recall, self.recall,
        ]  # fmt: skip
        for _ in range(operations):
            if deadline is not None and time.monotonic() > deadline:
                break
            action = self.rng.choice(actions)
            try:
                action()
            except Exception as exc:  # every error is a finding: record it, keep going
                self.report.errors.append(f"{action.__name__}: {type(exc).__name__}: {exc}")
            else:
                self.report.operations += 1
        return self.report


def _process_worker(path: str, name: str, seed: int, operations: int, seconds: float) -> Any:
    deadline = time.monotonic() + seconds if seconds else None
    with CueMap(path) as cm:
        return _Worker(cm, name, seed).run(operations, deadline)


def run_mixed(
    path: str,
    *,
    threads: int,
    processes: int,
    operations: int,
    seed: int = 0,
    seconds: float = 0.0,
    open_store: Callable[[str], CueMap] = CueMap,
) -> list[WorkerReport]:
    """Run ``threads`` workers sharing one CueMap and ``processes`` workers each with its own
    CueMap (spawned processes), all at once on the store at ``path``; return their reports.

    Each worker stops after ``operations`` operations or ``seconds`` (when > 0).
    """
    deadline = time.monotonic() + seconds if seconds else None
    with (
        open_store(path) as cm,
        ThreadPoolExecutor(max(threads, 1)) as pool,
        ProcessPoolExecutor(max(processes, 1), mp_context=get_context("spawn")) as procs,
    ):
        remote = [
            procs.submit(_process_worker, path, f"p{i}", seed * 1000 + 500 + i, operations, seconds)
            for i in range(processes)
        ]
        local = [
            pool.submit(_Worker(cm, f"t{i}", seed * 1000 + i).run, operations, deadline)
            for i in range(threads)
        ]
        return [f.result() for f in (*local, *remote)]


def lost_memories(cm: CueMap, ledgers: Iterable[Ledger]) -> list[str]:
    """Acknowledged writes the store does not hold as acknowledged, as sentences."""
    problems = []
    for ledger in ledgers:
        for memory_id, content in ledger.items():
            key = (NAMESPACE, memory_id)
            stored = cm.get(memory_id, namespace=NAMESPACE).content if key in cm else None
            if stored != content:
                problems.append(f"{memory_id}: acknowledged {content!r}, stored {stored!r}")
    return problems


# ---------------------------------------------------------------------------- crash
_CHILD = (
    "import sys\n"
    "from cuemap_integrations.bench.workload import crash_child\n"
    "crash_child(sys.argv[1], sys.argv[2], int(sys.argv[3]))\n"
)


def crash_child(path: str, prefix: str, seed: int) -> None:
    """Bulk-add checksummed memories forever, printing each acknowledged id (flushed at once).

    Run in a child process that the parent kills with SIGKILL at a random moment.
    """
    rng = random.Random(seed)
    with CueMap(path) as cm:
        n = 0
        while True:
            size = 1 if rng.random() < 0.5 else rng.randint(2, 20)
            ids = [f"{prefix}-{n + i}" for i in range(size)]
            n += size
            if size == 1:
                cm.add(payload(ids[0]), memory_id=ids[0], namespace=NAMESPACE)
            else:
                cm.add_many([{"content": payload(i), "memory_id": i, "namespace": NAMESPACE}
                             for i in ids])  # fmt: skip
            sys.stdout.write("".join(f"{i}\n" for i in ids))
            sys.stdout.flush()


@dataclass(frozen=True)
class CrashRound:
    """One kill: the ids acknowledged before it, the acknowledged memories missing or changed
    on reopen (``lost``) and any other problem found (``problems``)."""

    acknowledged: tuple[str, ...]
    lost: tuple[str, ...]
    problems: tuple[str, ...]


def crash_round(
    path: str, prefix: str, rng: random.Random, open_store: Callable[[str], CueMap] = CueMap
) -> CrashRound:
    """Start :func:`crash_child`, SIGKILL it after a random number of acknowledged ids (plus a
    random few milliseconds, so the kill lands anywhere in a write), reopen, check."""
    kill_after = rng.randint(1, 120)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    acknowledged: list[str] = []
    with subprocess.Popen(
        [sys.executable, "-c", _CHILD, path, prefix, str(rng.randrange(2**31))],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    ) as child:  # fmt: skip
        assert child.stdout is not None
        for line in child.stdout:
            acknowledged.append(line.strip())
            if len(acknowledged) >= kill_after:
                time.sleep(rng.random() * 0.02)
                os.kill(child.pid, signal.SIGKILL)
                break
        acknowledged += [line.strip() for line in child.stdout]  # acks flushed before the kill
        child.wait()
        errors = child.stderr.read() if child.stderr else ""
    problems = [f"child failed before the kill: {errors.strip()[-300:]}"] if errors else []
    with open_store(path) as cm:
        expected: Ledger = {i: payload(i) for i in acknowledged if i}
        lost = lost_memories(cm, [expected])
        problems += cm.check()
    return CrashRound(tuple(acknowledged), tuple(lost), tuple(problems))


# ---------------------------------------------------------------------------- bad input
NASTY: tuple[str, ...] = (
    "", " ", "\t\n  ", "\x00", "a\x00b", "\ud800", "ok \udfff tail", "\x01\x02\x1b[31m\x7f",
    "'); DROP TABLE memories; --", "\" OR 1=1 --", "%s %d {0} {{}}", "\u202eevil", "😀" * 3,
    "订单超时", "NULL", "\\x00", "line\nbreak", "port 8001",
)  # fmt: skip
"""Hostile strings: empty, whitespace, NUL and control characters, lone surrogates, SQL."""


def snapshot(cm: CueMap) -> tuple[Any, ...]:
    """Everything a failed call must leave unchanged: memories (with access data), namespaces,
    sessions and the result of an integrity check."""
    stats = cm.stats().as_dict()
    return ([m.to_dict() for m in cm.memories()], stats, cm.check())


def check_call(cm: CueMap, label: str, call: Callable[[], object]) -> list[str]:
    """Run ``call``; a failure must be a CueMapError and leave the store as it was.

    Returns the problems found, as sentences (an empty list: the call behaved).
    """
    before = snapshot(cm)
    try:
        call()
    except CueMapError as exc:
        after = snapshot(cm)
        return [] if after == before else [f"{label}: {type(exc).__name__} changed the store"]
    except Exception as exc:
        return [f"{label}: untyped {type(exc).__name__}: {exc}"]
    return []


def _nasty_text(rng: random.Random) -> str:
    """A hostile string: one of :data:`NASTY`, random code points (surrogates included), or
    text one character either side of a content limit of 2,000."""
    roll = rng.random()
    if roll < 0.4:
        return rng.choice(NASTY)
    if roll < 0.9:
        return "".join(chr(rng.randrange(0x110000)) for _ in range(rng.randint(0, 12)))
    return "x" * rng.randint(1_999, 2_001)


def _nasty_value(rng: random.Random) -> Any:
    choices: list[Callable[[], Any]] = [
        lambda: _nasty_text(rng),
        lambda: rng.randint(-(2**70), 2**70),
        lambda: rng.choice([float("nan"), float("inf"), -0.0, 1e308]),
        lambda: rng.choice([None, True, [], {}, [None], {"k": float("nan")}]),
        lambda: [_nasty_text(rng) for _ in range(rng.randint(1, 3))],
    ]
    return rng.choice(choices)()


def bad_call(cm: CueMap, rng: random.Random) -> tuple[str, Callable[[], object]]:
    """One public-API call with hostile arguments, as ``(label, call)``."""
    text, value = _nasty_text(rng), _nasty_value(rng)
    field_name = rng.choice(["memory_id", "namespace", "cues", "tags", "metadata", "type",
                             "source", "key", "expires_at", "supersedes"])  # fmt: skip
    calls: dict[str, Callable[[], object]] = {
        "add": lambda: cm.add(text),
        f"add {field_name}": lambda: cm.add("valid text", **{field_name: value}),
        "add_many": lambda: cm.add_many([{"content": "valid text"}, {"content": value}]),
        "update": lambda: cm.update("m1", **{rng.choice(["content", "cues", "tags"]): value}),
        "recall": lambda: cm.recall(text, k=value if isinstance(value, int) else 5),
        "recall min_score": lambda: cm.recall("port", min_score=value),
        "session": lambda: cm.session(text).recall("port", k=3),
        "forget": lambda: cm.forget(value, namespace="default"),
        "capture": lambda: cm.capture([{"role": "user", "content": value}], session_id="s"),
    }
    label = rng.choice(sorted(calls))
    return label, calls[label]


def fuzz(cm: CueMap, rng: random.Random, count: int) -> list[str]:
    """Try ``count`` hostile calls on ``cm``; return the problems (:func:`check_call`)."""
    problems: list[str] = []
    for _ in range(count):
        label, call = bad_call(cm, rng)
        problems += check_call(cm, label, call)
    return problems
