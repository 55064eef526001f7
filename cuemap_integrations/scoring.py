"""Scoring rules: small pure functions registered by name.

A memory's score is ``sum(weights[name] * RULES[name](features, config))``. The weight names are
exactly the registry's keys, so the "choose from" text of a configuration error can never drift from
the code. Each rule sees only the :class:`Features` of one candidate and the configuration.

========== ==================================================================================
rule       value before its weight
========== ==================================================================================
cue        sum of IDF of the query's explicit cues (lexicon, tokens, aliases, extra_cues) the
           memory carries
session    saturated sum of IDF x turn weight of the cues a recall session carried over
           from earlier turns: ``S * (1 - exp(-raw / S))``, ``S = session_saturation``, so a
           memory matching many carried cues cannot outrank a strong new explicit match;
           multiplied by ``session_only_factor`` when the memory matches nothing of the query
           itself (context disambiguates the question, it does not replace it)
tag        sum of IDF of query terms matching the memory's tags
content    BM25 (k1, b from the config) of the query's content terms over the memory's text
recency    ``0.5 ** (age_days / half_life_days)``: 1 for a new memory, 0.5 after one half-life
frequency  ``-log1p(access_count)``: a penalty for memories recalled many times already
type       the configured priority of the memory's type (``type_priority``)
========== ==================================================================================
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .records import MemoryType

if TYPE_CHECKING:
    from .config import RecallConfig

__all__ = ["RULES", "Features", "bm25_idf", "bm25_term", "combine", "register_rule"]


@dataclass(frozen=True)
class Features:
    """What scoring knows about one candidate memory for one query."""

    cue: float = 0.0
    session: float = 0.0
    tag: float = 0.0
    content: float = 0.0
    age_days: float = 0.0
    access_count: int = 0
    type: MemoryType = MemoryType.NOTE
    answers_query: bool = False  # matched an explicit cue, tag or term of the query itself


Rule = Callable[[Features, "RecallConfig"], float]


def bm25_idf(n_docs: int, doc_freq: int) -> float:
    """BM25 inverse document frequency, floored at a small positive value."""
    return math.log(1.0 + (n_docs - doc_freq + 0.5) / (doc_freq + 0.5))


def bm25_term(tf: float, doc_len: int, avg_len: float, k1: float, b: float) -> float:
    """The term-frequency part of BM25 for one term in one document."""
    norm = k1 * (1.0 - b + b * doc_len / avg_len) if avg_len > 0 else k1
    return tf * (k1 + 1.0) / (tf + norm)


def _cue(f: Features, cfg: RecallConfig) -> float:
    return f.cue


def saturate(raw: float, cap: float) -> float:
    """``cap * (1 - exp(-raw / cap))``: about ``raw`` while small, never above ``cap``."""
    return cap * (1.0 - math.exp(-raw / cap)) if raw > 0 else 0.0


def session_value(raw: float, answers_query: bool, cfg: RecallConfig) -> float:
    """The ``session`` rule's value of a memory whose raw session evidence is ``raw``."""
    value = saturate(raw, cfg.session_saturation)
    # Context disambiguates the question; it does not replace it.
    return value if answers_query else value * cfg.session_only_factor


def _session(f: Features, cfg: RecallConfig) -> float:
    return session_value(f.session, f.answers_query, cfg)


def _tag(f: Features, cfg: RecallConfig) -> float:
    return f.tag


def _content(f: Features, cfg: RecallConfig) -> float:
    return f.content


def recency_value(age_days: float, half_life_days: float) -> float:
    """The ``recency`` rule's value: 1 for a memory updated now, halving every half-life."""
    return float(0.5 ** (max(age_days, 0.0) / half_life_days))


def _recency(f: Features, cfg: RecallConfig) -> float:
    return recency_value(f.age_days, cfg.half_life_days)


def _frequency(f: Features, cfg: RecallConfig) -> float:
    return -math.log1p(f.access_count)


def _type(f: Features, cfg: RecallConfig) -> float:
    return cfg.type_priority.get(f.type.value, 0.0)


RULES: dict[str, Rule] = {
    "cue": _cue,
    "session": _session,
    "tag": _tag,
    "content": _content,
    "recency": _recency,
    "frequency": _frequency,
    "type": _type,
}


def register_rule(name: str, rule: Rule) -> None:
    """Add a scoring rule; give it a weight in ``RecallConfig.weights`` to use it."""
    if not name.isidentifier():
        from .errors import ConfigError

        raise ConfigError("rule name", name, "a Python identifier")
    RULES[name] = rule


def combine(features: Features, cfg: RecallConfig) -> tuple[float, tuple[tuple[str, float], ...]]:
    """Score one candidate; return the total and each rule's weighted contribution."""
    parts: list[tuple[str, float]] = []
    total = 0.0
    for name, weight in cfg.weights.items():
        if weight == 0.0:
            continue
        value = weight * RULES[name](features, cfg)
        parts.append((name, value))
        total += value
    return total, tuple(parts)
