"""``cuemap bench locomo``: retrieval quality and latency of each system on a LoCoMo-format file.

Method (also in ``benchmarks/README.md``):

1. Each conversation is one user's store; each turn one memory (see :mod:`.data`).
2. Every system indexes every conversation in this process, then answers every question of that
   conversation in file order; ``search(question, depth)`` is the only timed call
   (``time.perf_counter``), with ``depth = max(--k)`` unless ``--depth`` is larger.
3. Questions of categories 1-4 with at least one usable evidence id give R@k, H@k, W@k and
   MRR@max(k), per category and overall; W@k is also reported over categories 1-5.
4. The context of a question at ``k`` is the top-``k`` memory texts joined by newlines; its
   cl100k_base tokens are averaged per ``k``. Under ``--budget-tokens`` the context is the longest
   prefix of the ranking that fits, scored like a top-k.

Everything but the latency, build times, date and machine is deterministic.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, TextIO

from .data import (
    ALL_CATEGORIES,
    CATEGORY_NAMES,
    PROBLEM_KINDS,
    STRICT_CATEGORIES,
    Conversation,
    Question,
    load_locomo,
)
from .metrics import QuestionScores, aggregate, counts, mean, percentile, score_question
from .systems import BenchError, Searcher, System, make_system
from .tokens import TokenCounter

__all__ = ["LocomoOptions", "QuestionRun", "run_locomo", "select_conversations"]

DEFAULT_KS: tuple[int, ...] = (1, 5, 10, 20)
DEFAULT_SYSTEMS: tuple[str, ...] = (
    "cuemap", "cuemap-session", "bm25s", "dense", "cuemap-hybrid", "cuemap-fuse", "bm25s+dense-rrf",
)  # fmt: skip
_NEEDS_MODEL = frozenset({"dense", "cuemap-hybrid", "cuemap-fuse", "bm25s+dense-rrf"})


@dataclass(frozen=True)
class LocomoOptions:
    """What to run (the CLI's options)."""

    path: str
    ks: tuple[int, ...] = DEFAULT_KS
    systems: tuple[str, ...] = DEFAULT_SYSTEMS
    conversations: tuple[str, ...] = ()
    budget_tokens: int = 3000
    depth: int = 0
    tiktoken_file: str | None = None
    dense_model: str | None = None
    per_question: bool = False

    @property
    def retrieval_depth(self) -> int:
        """How many results each query asks for: ``max(max(ks), depth)``."""
        return max(max(self.ks), self.depth)


@dataclass
class QuestionRun:
    """One question answered by one system."""

    conversation: Conversation
    question: Question
    ranking: list[str]
    seconds: float
    scores: QuestionScores | None = None
    tokens: dict[int, int] = field(default_factory=dict)
    budget_count: int = 0
    budget_scores: QuestionScores | None = None


def select_conversations(
    conversations: Sequence[Conversation], wanted: Sequence[str]
) -> list[Conversation]:
    """The conversations named in ``wanted`` (all when empty), in file order.

    Raises:
        BenchError: a name that is not a sample id of the file (lists the valid ones).
    """
    if not wanted:
        return list(conversations)
    known = [c.sample_id for c in conversations]
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise BenchError(
            f"unknown conversation {', '.join(unknown)}; the file has {', '.join(known)}"
        )
    return [c for c in conversations if c.sample_id in wanted]


def scored(question: Question, categories: Sequence[int]) -> bool:
    """True for a question of ``categories`` with at least one usable evidence id."""
    return question.category in categories and bool(question.evidence)


def context_text(conversation: Conversation, ranking: Sequence[str], k: int) -> str:
    """The context a question gets at ``k``: the top-``k`` memory texts, one per line."""
    return "\n".join(conversation.by_id[i].content for i in ranking[:k] if i in conversation.by_id)


def _budget_prefix(run: QuestionRun, budget: int, counter: TokenCounter) -> int:
    """How many of the ranked memories fit in ``budget`` tokens (binary search on the prefix)."""
    low, high = 0, len(run.ranking)
    while low < high:
        middle = (low + high + 1) // 2
        if counter.count(context_text(run.conversation, run.ranking, middle)) <= budget:
            low = middle
        else:
            high = middle - 1
    return low


def _score(run: QuestionRun, options: LocomoOptions, counter: TokenCounter) -> None:
    if not scored(run.question, ALL_CATEGORIES):
        return
    ks = options.ks
    run.scores = score_question(run.ranking, run.question.evidence, ks)
    run.tokens = {k: counter.count(context_text(run.conversation, run.ranking, k)) for k in ks}
    run.budget_count = _budget_prefix(run, options.budget_tokens, counter)
    prefix = run.ranking[: run.budget_count]  # may be empty: nothing fits, nothing is found
    run.budget_scores = score_question(prefix, run.question.evidence, [max(1, len(prefix))])


def _ask_all(
    system: System, conversation: Conversation, depth: int
) -> tuple[list[QuestionRun], float]:
    """Index ``conversation`` and ask every question in order; returns the runs and build seconds."""
    started = time.perf_counter()
    searcher: Searcher = system.index(conversation)
    build = time.perf_counter() - started
    runs = []
    for question in conversation.questions:
        t0 = time.perf_counter()
        ranking = searcher.search(question.text, depth)
        seconds = time.perf_counter() - t0
        runs.append(QuestionRun(conversation, question, ranking, seconds))
    return runs, build


def _summary(runs: Sequence[QuestionRun], options: LocomoOptions, build: float) -> dict[str, Any]:
    """Every figure of one system, JSON-safe."""
    ks = options.ks
    strict = [r for r in runs if scored(r.question, STRICT_CATEGORIES)]
    wide = [r for r in runs if scored(r.question, ALL_CATEGORIES)]
    by_category = {
        str(c): aggregate([r.scores for r in strict if r.question.category == c and r.scores], ks)
        for c in STRICT_CATEGORIES
    }
    latencies = [r.seconds * 1000.0 for r in runs]
    return {
        "overall": aggregate([r.scores for r in strict if r.scores], ks),
        "by_category": by_category,
        "tokens_mean": {str(k): mean(r.tokens[k] for r in strict) for k in ks},
        "with_adversarial": {
            "categories": list(ALL_CATEGORIES),
            "n": len(wide),
            "W": {str(k): mean(r.scores.window[k] for r in wide if r.scores) for k in ks},
            "tokens_mean": {str(k): mean(r.tokens[k] for r in wide) for k in ks},
        },
        "budget": _budget_summary(strict, options.budget_tokens),
        "latency_ms": {
            "n": len(latencies),
            "p50": percentile(latencies, 50),
            "p95": percentile(latencies, 95),
            "mean": mean(latencies),
        },
        "build_seconds": build,
    }


def _budget_summary(runs: Sequence[QuestionRun], budget: int) -> dict[str, Any]:
    def first(values: dict[int, float]) -> float:
        return next(iter(values.values()))

    scores = [r.budget_scores for r in runs if r.budget_scores]
    return {
        "tokens": budget,
        "n": len(scores),
        "R": mean(first(s.recall) for s in scores),
        "H": mean(first(s.hit) for s in scores),
        "W": mean(first(s.window) for s in scores),
        "memories_mean": mean(r.budget_count for r in runs),
        "binding_share": mean(1.0 if r.budget_count < len(r.ranking) else 0.0 for r in runs),
    }


def _per_question(runs: Sequence[QuestionRun], max_k: int) -> list[dict[str, Any]]:
    """Ids only (no text from the data set): conversation, question index, ranking, evidence."""
    return [
        {
            "sample_id": r.conversation.sample_id,
            "question": r.question.index,
            "category": r.question.category,
            "evidence": list(r.question.evidence),
            "ranking": r.ranking[:max_k],
            "rr": r.scores.rr if r.scores else None,
        }
        for r in runs
    ]


def evidence_report(conversations: Sequence[Conversation]) -> dict[str, Any]:
    """Question counts and evidence problems of the selected conversations."""
    questions = [q for c in conversations for q in c.questions]
    problems = [p for q in questions for p in q.problems]
    return {
        "questions": len(questions),
        "by_category": {str(c): sum(q.category == c for q in questions) for c in ALL_CATEGORIES},
        "scored_strict": sum(scored(q, STRICT_CATEGORIES) for q in questions),
        "scored_with_adversarial": sum(scored(q, ALL_CATEGORIES) for q in questions),
        "without_evidence": sum(not q.raw_evidence for q in questions),
        "without_usable_evidence": sum(bool(q.raw_evidence) and not q.evidence for q in questions),
        "problem_counts": dict(counts((p.kind for p in problems), PROBLEM_KINDS)),
        "problems": [p.as_dict() for p in problems],
        "date_problems": {
            c.sample_id: list(c.date_problems) for c in conversations if c.date_problems
        },
    }


def run_system(
    system: System,
    conversations: Sequence[Conversation],
    options: LocomoOptions,
    counter: TokenCounter,
) -> dict[str, Any]:
    """Index, query and score one system over ``conversations``."""
    runs: list[QuestionRun] = []
    build = 0.0
    for conversation in conversations:
        conversation_runs, seconds = _ask_all(system, conversation, options.retrieval_depth)
        runs.extend(conversation_runs)
        build += seconds
    for run in runs:
        _score(run, options, counter)
    summary = _summary(runs, options, build)
    summary["describe"] = system.describe()
    if options.per_question:
        summary["per_question"] = _per_question(runs, max(options.ks))
    return summary


def run_locomo(
    options: LocomoOptions,
    *,
    progress: TextIO | None = sys.stderr,
    counter: TokenCounter | None = None,
    clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
) -> dict[str, Any]:
    """Run the benchmark and return the full report (see ``benchmarks/README.md`` for its shape).

    Raises:
        BenchError: unknown system or conversation, or a system's packages are missing.
        OSError, LocomoError: the file cannot be read or parsed.
    """
    from .report import code_info, machine_info

    systems = [make_system(n, model_path=options.dense_model) if n in _NEEDS_MODEL
               else make_system(n) for n in options.systems]  # fmt: skip
    conversations = select_conversations(load_locomo(options.path), options.conversations)
    counter = counter or TokenCounter.cl100k(options.tiktoken_file)
    started = clock()
    results: dict[str, Any] = {}
    for system in systems:
        t0 = time.perf_counter()
        results[system.name] = run_system(system, conversations, options, counter)
        _say(progress, f"bench locomo: {system.name} done in {time.perf_counter() - t0:.1f} s")
    return {
        "benchmark": "locomo-retrieval",
        "config": _config(options, conversations),
        "date": started.isoformat(timespec="seconds"),
        "machine": machine_info(),
        "code": code_info(),
        "tokens": counter.describe(),
        "categories": {str(c): CATEGORY_NAMES[c] for c in ALL_CATEGORIES},
        "evidence": evidence_report(conversations),
        "systems": results,
    }


def _config(options: LocomoOptions, conversations: Sequence[Conversation]) -> dict[str, Any]:
    return {
        "file": options.path,
        "conversations": [c.sample_id for c in conversations],
        "memories": sum(len(c.turns) for c in conversations),
        "ks": list(options.ks),
        "depth": options.retrieval_depth,
        "systems": list(options.systems),
        "budget_tokens": options.budget_tokens,
        "window": 2,
        "mrr_cutoff": max(options.ks),
        "context_joiner": "\\n",
    }


def _say(stream: TextIO | None, text: str) -> None:
    if stream is not None:
        print(text, file=stream, flush=True)
