"""Check the core's tuned rules held out: leave-one-conversation-out over a small grid.

The defaults ``date_bonus`` (8), ``speaker_bonus`` (1) and ``feedback_hits`` (5) of
:class:`~cuemap_integrations.config.RecallConfig` were tuned on the LoCoMo dev file, so the
bench's figures on it are in-sample. Here each fold chooses them on the other conversations and
scores the choice on the held-out one; the estimate for conversations we have not seen is the
mean of the held-out scores (one per conversation).

* Each conversation is one ``cuemap`` store (``bench.systems.build_store``), built once; the
  grid points swap the store's ``config`` (these three options are read at recall time only,
  and the bench's ``frequency`` weight is 0, so the access counts recall keeps change nothing).
* Per question, as ``cuemap bench locomo`` computes them at depth 20: R@10 and H@10 over
  categories 1-4 (strict), W@20 over categories 1-5. The bench's W@k is the top-k, not cut by
  its token budget; the tokens of each top-20 context (cl100k) are kept, and ``cut`` reports
  the share of questions whose context would exceed the 3,000-token budget (then W@20 would be
  the budget's, not the top-20's).
* A fold's choice maximises the training conversations' metric over all their questions, for
  two objectives side by side: W@20 alone, and R@10 + H@10 + W@20. Ties go to the defaults,
  then to the earlier grid point.

Usage (from the project root; 5-7 minutes on 2 busy cores)::

    .venv/bin/python benchmarks/core_loco.py ../shared/locomo_dev.json \\
        --json benchmarks/results/core_loco.json
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, NamedTuple

from cuemap_integrations.bench.data import (
    ALL_CATEGORIES,
    STRICT_CATEGORIES,
    Conversation,
    Question,
    load_locomo,
)
from cuemap_integrations.bench.locomo import context_text, scored
from cuemap_integrations.bench.metrics import hit_at_k, recall_at_k, window_hit_at_k
from cuemap_integrations.bench.report import code_info, format_table, machine_info, write_json
from cuemap_integrations.bench.systems import NAMESPACE, build_store
from cuemap_integrations.bench.tokens import TokenCounter
from cuemap_integrations.config import RecallConfig
from cuemap_integrations.core import CueMap

DATE_BONUSES = (0.0, 2.0, 4.0, 8.0, 16.0)
SPEAKER_BONUSES = (0.0, 0.5, 1.0, 2.0)
FEEDBACK_HITS = (3, 4, 5, 6, 8)
DEPTH = 20  # the bench's depth: max of its ks
BUDGET_TOKENS = 3000  # the bench's --budget-tokens default
KEYS = ("date_bonus", "speaker_bonus", "feedback_hits")
Point = tuple[float, float, int]
_DEFAULTS = RecallConfig()
DEFAULT: Point = (_DEFAULTS.date_bonus, _DEFAULTS.speaker_bonus, _DEFAULTS.feedback_hits)


class Row(NamedTuple):
    """One question's scores at one grid point (R@10 and H@10 are None outside 1-4)."""

    recall: float | None
    hit: float | None
    window: float
    tokens: int


class Scores(NamedTuple):
    """Pooled means over some questions: strict R@10 and H@10, W@20 and tokens over 1-5."""

    recall: float
    hit: float
    window: float
    tokens: float
    cut: float

    @property
    def total(self) -> float:
        """The second objective: R@10 + H@10 + W@20."""
        return self.recall + self.hit + self.window


Table = dict[str, dict[Point, list[Row]]]  # sample -> point -> per question
Objective = Callable[[Scores], float]
OBJECTIVES: Mapping[str, Objective] = {
    "W@20": lambda s: s.window,
    "R@10+H@10+W@20": lambda s: s.total,
}


def mean(values: Iterable[float]) -> float:
    """The mean (0.0 for nothing: a conversation without such questions)."""
    items = list(values)
    return sum(items) / len(items) if items else 0.0


def grid() -> list[Point]:
    """Every point of the grid, date bonus slowest."""
    return list(itertools.product(DATE_BONUSES, SPEAKER_BONUSES, FEEDBACK_HITS))


def row(
    conversation: Conversation, question: Question, ranking: list[str], counter: TokenCounter
) -> Row:
    """The bench's per-question metrics of ``ranking`` (evidence ids only, no text kept)."""
    strict = scored(question, STRICT_CATEGORIES)
    return Row(
        recall_at_k(ranking, question.evidence, 10) if strict else None,
        hit_at_k(ranking, question.evidence, 10) if strict else None,
        window_hit_at_k(ranking, question.evidence, DEPTH),
        counter.count(context_text(conversation, ranking, DEPTH)),
    )


def ask(
    store: CueMap, base: RecallConfig, questions: Sequence[Question], point: Point
) -> list[list[str]]:
    """Each question's ranking with the store's config set to ``base`` changed at ``point``."""
    store.config = base.with_changes(**named(point))
    return [store.recall(q.text, k=DEPTH, namespace=NAMESPACE).memory_ids for q in questions]


def run_conversation(
    conversation: Conversation, points: Sequence[Point], counter: TokenCounter
) -> dict[Point, list[Row]]:
    """Every scored question (categories 1-5) of one store at every grid point."""
    store = build_store(conversation)
    questions = [q for q in conversation.questions if scored(q, ALL_CATEGORIES)]
    base = store.config
    out = {}
    for point in points:
        rankings = ask(store, base, questions, point)
        out[point] = [
            row(conversation, q, r, counter) for q, r in zip(questions, rankings, strict=True)
        ]
    store.close()
    return out


def measure(path: str, counter: TokenCounter | None = None) -> Table:
    """Per conversation, grid point and question: :class:`Row`.

    Raises:
        SystemExit: the file has fewer than two conversations.
    """
    conversations = load_locomo(path)
    if len(conversations) < 2:
        raise SystemExit(f"core_loco.py: {path} has {len(conversations)} conversation(s); "
                         "leaving one out needs at least 2")  # fmt: skip
    counter = counter or TokenCounter.cl100k()
    table: Table = {}
    for conversation in conversations:
        table[conversation.sample_id] = run_conversation(conversation, grid(), counter)
        print(f"core loco: {conversation.sample_id} done", file=sys.stderr, flush=True)
    return table


def pooled(table: Table, samples: Sequence[str], point: Point) -> Scores:
    """Means over every question of ``samples`` at ``point``."""
    rows = [r for s in samples for r in table[s][point]]
    return Scores(
        mean(r.recall for r in rows if r.recall is not None),
        mean(r.hit for r in rows if r.hit is not None),
        mean(r.window for r in rows),
        mean(r.tokens for r in rows),
        mean(1.0 if r.tokens > BUDGET_TOKENS else 0.0 for r in rows),
    )


def choose(
    table: Table, samples: Sequence[str], points: Sequence[Point], objective: Objective
) -> Point:
    """The best point on ``samples``; ties: the defaults, then the earlier point."""
    values = {p: round(objective(pooled(table, samples, p)), 12) for p in points}
    return min(points, key=lambda p: (-values[p], p != DEFAULT, points.index(p)))


def folds(table: Table, points: Sequence[Point], objective: Objective) -> list[dict[str, Any]]:
    """Per held-out conversation: the point chosen on the others and its held-out scores."""
    samples = list(table)
    out = []
    for held in samples:
        point = choose(table, [s for s in samples if s != held], points, objective)
        out.append(
            {"held_out": held, "chosen": named(point), **figures(pooled(table, [held], point))}
        )
    return out


def figures(scores: Scores) -> dict[str, float]:
    """JSON names of a :class:`Scores`."""
    return {"R@10": scores.recall, "H@10": scores.hit, "W@20": scores.window,
            "tok@20": scores.tokens, "cut": scores.cut}  # fmt: skip


def averaged(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """The mean of each figure over ``rows`` (one per conversation)."""
    return {key: mean(r[key] for r in rows) for key in ("R@10", "H@10", "W@20", "tok@20", "cut")}


def report(table: Table, path: str) -> dict[str, Any]:
    """Folds and held-out means per objective, beside the defaults' in-sample figures."""
    points = grid()
    samples = list(table)
    per_conversation = [{"sample": s, **figures(pooled(table, [s], DEFAULT))} for s in samples]
    objectives = {}
    for name, objective in OBJECTIVES.items():
        held = folds(table, points, objective)
        objectives[name] = {"folds": held, "held_out_mean": averaged(held),
                            "chosen_on_all": named(choose(table, samples, points, objective))}  # fmt: skip
    return {
        "benchmark": "core-rules-loco",
        "file": path,
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        "machine": machine_info(),
        "code": code_info(),
        "depth": DEPTH,
        "budget_tokens": BUDGET_TOKENS,
        "grid": {
            "date_bonus": list(DATE_BONUSES),
            "speaker_bonus": list(SPEAKER_BONUSES),
            "feedback_hits": list(FEEDBACK_HITS),
        },  # fmt: skip
        "defaults": named(DEFAULT),
        "objectives": objectives,
        "defaults_in_sample": {
            "all_questions": figures(pooled(table, samples, DEFAULT)),
            "conversation_mean": averaged(per_conversation),
            "per_conversation": per_conversation,
        },  # fmt: skip
        "all_points": [{**named(p), **figures(pooled(table, samples, p))} for p in points],
    }


def named(point: Point) -> dict[str, Any]:
    """A point as ``{option: value}``."""
    return dict(zip(KEYS, point, strict=True))


def text(result: Mapping[str, Any]) -> str:
    """The printed table: one row per fold and objective, then the means."""
    headers = ["held out", "objective", "chosen (date, speaker, feedback)"]
    headers += ["R@10", "H@10", "W@20", "tok@20"]
    rows = []
    for name, block in result["objectives"].items():
        for fold in block["folds"]:
            rows.append([fold["held_out"], name, _short(fold["chosen"]), *_cells(fold)])
        rows.append(["held-out mean", name, "", *_cells(block["held_out_mean"])])
    defaults = result["defaults_in_sample"]
    rows.append(["defaults, in sample", "conversation mean", _short(result["defaults"]),
                 *_cells(defaults["conversation_mean"])])  # fmt: skip
    rows.append(["defaults, in sample", "all questions", _short(result["defaults"]),
                 *_cells(defaults["all_questions"])])  # fmt: skip
    cut = max(p["cut"] for p in result["all_points"])
    note = (
        f"largest share of top-{DEPTH} contexts over {BUDGET_TOKENS} tokens, any point: {cut:.3f}"
    )
    return format_table(headers, rows) + "\n" + note


def _short(point: Mapping[str, Any]) -> str:
    return ", ".join(f"{point[k]:g}" for k in KEYS)


def _cells(scores: Mapping[str, float]) -> list[str]:
    return [
        f"{scores['R@10']:.4f}",
        f"{scores['H@10']:.4f}",
        f"{scores['W@20']:.4f}",
        f"{scores['tok@20']:.0f}",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    """``core_loco.py FILE [--json OUT]``: prints the folds and the means."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", help="a LoCoMo-format JSON file (e.g. ../shared/locomo_dev.json)")
    parser.add_argument("--json", help="write the full report here")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    result = report(measure(args.path), args.path)
    result["seconds"] = round(time.perf_counter() - started, 1)
    print(text(result))
    print(f"({result['seconds']} s)")
    if args.json:
        write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
