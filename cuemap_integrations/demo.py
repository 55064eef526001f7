"""``cuemap demo``: a scripted, deterministic tour of continuous recall in English and Chinese.

A fresh in-memory store with a fixed clock receives a dozen developer and personal memories, then
two recall sessions replay short conversations in which a follow-up turn ("how did we fix it?",
"后来怎么修的？") has no cue of its own and is answered from the cues the session carried over.
The output is identical on every run.

Example:
    >>> import io
    >>> buffer = io.StringIO()
    >>> run_demo(out=buffer)
    0
    >>> "后来怎么修的" in buffer.getvalue()
    True
"""

from __future__ import annotations

import sys
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TextIO

from .cli import join_few, print_hits, trim
from .core import CueMap
from .results import RecallResult

__all__ = [
    "FIXED_NOW",
    "MEMORIES",
    "SESSIONS",
    "Scenario",
    "Turn",
    "build_store",
    "play",
    "run_demo",
]

FIXED_NOW = datetime(2026, 1, 15, 9, 30, tzinfo=timezone.utc)
"""The demo's "now": every run sees the same clock, so scores never drift."""


@dataclass(frozen=True)
class Memory:
    """One scripted memory: id, type, content and its age in days at ``FIXED_NOW``."""

    memory_id: str
    type: str
    content: str
    days_ago: int


@dataclass(frozen=True)
class Turn:
    """One user message and the memory it is meant to bring back first."""

    query: str
    expected: str


@dataclass(frozen=True)
class Scenario:
    """A recall session: its id, a title, and its turns in order."""

    session_id: str
    title: str
    turns: tuple[Turn, ...]


MEMORIES: tuple[Memory, ...] = (
    Memory("api-port", "convention", "The API uses port 8001", 40),
    Memory("db-backup", "convention", "Never change the DB schema without a backup", 35),
    Memory("timeout-cause", "fact", "Orders were timing out because the Redis cache expired", 6),
    Memory("timeout-fix", "fact", "The order-timeout fix was `curl -X POST /ops/clear-cache`", 6),
    Memory("lang-pref", "preference", "I prefer answers in Chinese", 60),
    Memory("zh-timeout-cause", "fact", "订单超时是因为 Redis 缓存过期", 5),
    Memory(
        "zh-timeout-fix",
        "fact",
        "订单超时的修复方法：执行 curl -X POST /ops/clear-cache 清理缓存",
        5,
    ),
    Memory("zh-payment-task", "task", "计划周五联调支付接口", 2),
    Memory("standup", "event", "The team standup moved to 10:30 on weekdays", 3),
    Memory("bike", "event", "Repaired my bike's flat tyre on Sunday", 4),
    Memory("zh-bike", "event", "周末修了自行车的刹车", 4),
    Memory("lunch", "note", "Lunch order for the team goes out at noon", 1),
)

SESSIONS: tuple[Scenario, ...] = (
    Scenario(
        "demo-en",
        "English: an incident follow-up, then a topic switch",
        (
            Turn("Why were orders timing out last week?", "timeout-cause"),
            Turn("How did we fix it?", "timeout-fix"),
            Turn("Which port does the API use?", "api-port"),
            Turn("Anything to watch out for before I touch the database?", "db-backup"),
        ),
    ),
    Scenario(
        "demo-zh",
        "中文：同一个故障的追问，然后换话题",
        (
            Turn("订单为什么超时？", "zh-timeout-cause"),
            Turn("后来怎么修的？", "zh-timeout-fix"),
            Turn("周五有什么安排？", "zh-payment-task"),
        ),
    ),
)

_HEADER = """\
CueMap demo: continuous recall
==============================
A recall session carries the cues of each turn (its query and its top memories) into the next
turns, weighted below the new turn's own cues and fading with age. A follow-up such as
"how did we fix it?" names no topic, yet it finds the memory that belongs to the conversation.
Everything is rule-based and deterministic: no model, a fixed clock, the same output every run.
"""


def build_store() -> CueMap:
    """A fresh in-memory store holding :data:`MEMORIES`, on the fixed demo clock."""
    cm = CueMap(clock=lambda: FIXED_NOW)
    cm.add_many(
        {
            "memory_id": m.memory_id,
            "type": m.type,
            "content": m.content,
            "source": "demo",
            "created_at": FIXED_NOW - timedelta(days=m.days_ago),
        }
        for m in MEMORIES
    )
    return cm


def _print_memories(cm: CueMap, out: TextIO) -> None:
    records = cm.memories()
    width = max(len(r.memory_id) for r in records)
    print(f"Stored {len(records)} memories:", file=out)
    for r in records:
        print(f"  {r.memory_id:<{width}}  {r.type.value:<10}  {trim(r.content)}", file=out)
    print(file=out)


def _width(text: str) -> int:
    """Terminal columns of ``text`` (wide CJK characters take two)."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _title(text: str, out: TextIO) -> None:
    print(text, file=out)
    print("-" * _width(text), file=out)


def play(cm: CueMap, scenario: Scenario, out: TextIO, k: int = 3) -> list[RecallResult]:
    """Replay one scenario as a session on ``cm``, printing every turn; return the results."""
    session = cm.session(scenario.session_id)
    results: list[RecallResult] = []
    _title(f"Session {scenario.session_id!r}: {scenario.title}", out)
    for number, turn in enumerate(scenario.turns, start=1):
        carried = [cue for cue, _ in session.carried_cues()]
        print(f"turn {number}: {turn.query}", file=out)
        if carried:
            print(f"  carried over from earlier turns: {join_few(carried, 8)}", file=out)
        results.append(session.recall(turn.query, k=k))
        print_hits(results[-1], out, why=True)
        print(file=out)
    return results


def run_demo(out: TextIO = sys.stdout) -> int:
    """Print the scripted demo to ``out``; return 0 (the process exit status)."""
    print(_HEADER, file=out)
    with build_store() as cm:
        _print_memories(cm, out)
        for scenario in SESSIONS:
            play(cm, scenario, out)
    print("Try it yourself: cuemap add ..., cuemap recall ... --explain, cuemap chat", file=out)
    return 0
