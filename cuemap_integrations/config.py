"""Recall configuration: weights, decay, session behaviour and aliases in one object.

Example:
    >>> cfg = RecallConfig.from_dict({"weights": {"recency": 0.0}, "half_life_days": 14})
    >>> cfg.weights["recency"], cfg.weights["cue"]
    (0.0, 1.0)
    >>> RecallConfig.from_dict({"weights": {"popularity": 1}})
    Traceback (most recent call last):
    ...
    cuemap_integrations.errors.ConfigError: invalid weights key='popularity': choose from cue, session, tag, content, recency, frequency, type
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .records import MemoryType
from .scoring import RULES

__all__ = ["DEFAULT_ALIASES", "DEFAULT_TYPE_PRIORITY", "DEFAULT_WEIGHTS", "RecallConfig"]

# Why these numbers: an explicit cue match (IDF about 2-8) must dominate; content BM25 backs it up
# for words that are not cues; the carried-over session cues count, but saturate well below one
# strong explicit cue; recency and type only break near-ties. Frequency is off by default because a
# penalty on access counts makes the same query rank differently each time it is asked.
DEFAULT_WEIGHTS: Mapping[str, float] = {
    "cue": 1.0,
    "session": 0.5,
    "tag": 0.5,
    "content": 0.6,
    "recency": 0.2,
    "frequency": 0.0,
    "type": 0.1,
}

DEFAULT_TYPE_PRIORITY: Mapping[str, float] = {
    "convention": 1.0,
    "preference": 0.8,
    "fact": 0.6,
    "task": 0.5,
    "event": 0.2,
    "note": 0.0,
}

# Groups of equivalent terms, applied when memories are indexed and when queries are read.
# Kept to general developer vocabulary in English and Chinese: nothing here is about one data set.
DEFAULT_ALIASES: tuple[tuple[str, ...], ...] = (
    ("timeout", "time out", "timed out", "超时"),
    ("fix", "fixed", "resolve", "resolved", "repair", "修复", "修好", "修了", "怎么修", "解决"),
    ("cache", "缓存"),
    ("database", "db", "数据库"),
    ("error", "报错", "错误"),
    ("deploy", "deployment", "部署", "上线"),
    ("config", "configuration", "配置"),
    ("port", "端口"),
    ("backup", "back up", "备份"),
    ("schema", "表结构"),
    ("order", "订单"),
    ("user", "用户"),
    ("password", "密码"),
    ("meeting", "会议"),
    ("afternoon", "下午"),
    ("morning", "上午"),
    ("test", "测试"),
    ("bug", "缺陷"),
    ("api", "接口"),
    ("server", "服务器"),
    ("log", "logs", "日志"),
)


@dataclass(frozen=True)
class RecallConfig:
    """All tunable numbers of the deterministic core. Immutable; use :meth:`with_changes`.

    Attributes:
        weights: rule name -> weight; names are :data:`~cuemap_integrations.scoring.RULES` keys.
        type_priority: memory type -> value of the ``type`` rule.
        half_life_days: age at which the recency rule gives 0.5.
        bm25_k1, bm25_b: the BM25 parameters of the content rule.
        session_history: how many earlier turns a session carries cues from.
        session_carry: how many top memories of each earlier turn give their cues.
        session_decay: turn weight multiplier per turn of age (1 turn ago: 1.0, 2 turns: decay...).
        session_saturation: the cap ``S`` of the session rule.
        session_min_share: a hit passes its cues on only if it scored at least this share of the
            turn's best hit (and with that share as their weight), so weak hits don't drift the topic.
        session_only_factor: multiplies the session rule for memories that match nothing of the
            query itself, so the turn's own words come first and context breaks their ties.
        session_self_factor: multiplies a carried cue's weight for the one memory it came from, so
            a follow-up finds what is related to the last answer before the last answer itself.
        feedback_hits: pseudo-relevance feedback: the cues of this many top hits of a first
            pass are carried into a second pass (as a session turn would); 0 turns it off.
        feedback_weight: multiplies the weight of those carried cues.
        carry_max_share / carry_min_df: a carried cue (session or feedback) is used only if at
            most ``max(carry_min_df, carry_max_share x memories)`` memories carry it: common
            cues tell memories apart poorly and would make every memory a candidate.
        context_weight: transcript turns (``event`` memories whose metadata names a
            ``session_id``, ``thread_id`` or ``session``) are also indexed with the words of the
            turns next to them, at this fraction of a word of their own; 0 turns it off.
        context_span: how many turns on each side count as next to a turn.
        date_bonus: added to the score of a memory created on the day or in the month the
            query names ("on 8 May, 2023", "in May 2023"), so "what did I do in May?" prefers
            what was remembered then; 0 turns it off. The default (8) is about one strong cue
            match: the date decides between comparable text matches, not over a far better one.
        date_days_after: a memory created up to this many days after the named period still
            counts as created in it (things are often told a day or a week after they happen).
        speaker_bonus: added to the score of a transcript turn whose ``speaker`` (or ``author``)
            metadata the query names ("what did Ana say about..."): questions about a person are
            mostly answered by what that person said; 0 turns it off.
        track_access: recall updates ``last_accessed`` / ``access_count``.
        prune: skip candidates that provably cannot reach the top k (exact; off only to compare).
        dedupe: an add without ``memory_id`` whose text is already stored returns the stored memory.
        conflict_types: memory types checked for likely conflicts when added.
        conflict_overlap: cue-set Jaccard similarity from which two memories of the same type
            with different text are linked as a possible conflict.
        ttl_days: memory type -> days until a new memory of that type expires (when no
            ``expires_at`` is given); types not listed never expire.
        aliases: groups of terms treated as the same cue.
        max_content_chars: longest content accepted by ``add``.
    """

    weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    type_priority: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_TYPE_PRIORITY))
    half_life_days: float = 30.0
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    session_history: int = 3
    session_carry: int = 3
    session_decay: float = 0.6
    session_saturation: float = 8.0
    session_min_share: float = 0.5
    session_only_factor: float = 0.5
    session_self_factor: float = 0.5
    feedback_hits: int = 5
    carry_max_share: float = 0.02
    carry_min_df: int = 20
    context_weight: float = 0.5
    context_span: int = 2
    feedback_weight: float = 1.0
    date_bonus: float = 8.0
    date_days_after: float = 1.0
    speaker_bonus: float = 1.0
    track_access: bool = True
    prune: bool = True
    dedupe: bool = True
    conflict_types: tuple[str, ...] = ("preference", "convention", "fact")
    conflict_overlap: float = 0.5
    ttl_days: Mapping[str, float] = field(default_factory=dict)
    aliases: tuple[tuple[str, ...], ...] = DEFAULT_ALIASES
    max_content_chars: int = 1_000_000

    def __post_init__(self) -> None:
        put = object.__setattr__
        put(self, "weights", _check_weights(self.weights))
        put(self, "type_priority", _check_type_priority(self.type_priority))
        put(self, "aliases", _check_aliases(self.aliases))
        put(self, "conflict_types", _check_types("conflict_types", self.conflict_types))
        put(self, "ttl_days", _check_ttl(self.ttl_days))
        _check_number("conflict_overlap", self.conflict_overlap, low=0.0, high=1.0)
        for name in ("half_life_days", "session_saturation", "bm25_k1"):
            _check_number(name, getattr(self, name), low=0.0, low_open=True)
        _check_number("bm25_b", self.bm25_b, low=0.0, high=1.0)
        _check_number("session_decay", self.session_decay, low=0.0, high=1.0)
        _check_number("session_min_share", self.session_min_share, low=0.0, high=1.0)
        _check_number("session_only_factor", self.session_only_factor, low=0.0, high=1.0)
        _check_number("session_self_factor", self.session_self_factor, low=0.0, high=1.0)
        _check_number("feedback_weight", self.feedback_weight, low=0.0)
        _check_number("date_bonus", self.date_bonus, low=0.0)
        _check_number("date_days_after", self.date_days_after, low=0.0)
        _check_number("speaker_bonus", self.speaker_bonus, low=0.0)
        _check_number("context_weight", self.context_weight, low=0.0, high=1.0)
        _check_number("carry_max_share", self.carry_max_share, low=0.0, high=1.0)
        for name in (
            "session_history",
            "session_carry",
            "max_content_chars",
            "feedback_hits",
            "carry_min_df",
            "context_span",
        ):
            _check_int(name, getattr(self, name), low=0 if name != "max_content_chars" else 1)
        for name in ("track_access", "dedupe", "prune"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(name, getattr(self, name), "True or False")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RecallConfig:
        """Defaults overridden by ``data``; ``weights`` and ``type_priority`` merge key by key."""
        if not isinstance(data, Mapping):
            raise ConfigError("config", data, "a mapping of option -> value")
        return cls().with_changes(**dict(data))

    @classmethod
    def from_toml(cls, path: str | Path) -> RecallConfig:
        """Read a TOML file whose top-level keys are the options (``[weights]`` a table)."""
        try:
            import tomllib
        except ModuleNotFoundError:  # Python 3.10
            raise ImportError(
                "reading TOML on Python 3.10 needs tomli: pip install tomli"
            ) from None
        try:
            with open(path, "rb") as handle:
                data = tomllib.load(handle)
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError("config file", str(path), f"a readable TOML file ({exc})") from None
        if "aliases" in data:
            data["aliases"] = tuple(tuple(group) for group in data["aliases"])
        return cls.from_dict(data)

    def with_changes(self, **changes: Any) -> RecallConfig:
        """A copy with ``changes``; mapping options merge into the current mappings."""
        known = [f.name for f in fields(self)]
        for key in changes:
            if key not in known:
                raise ConfigError("config key", key, f"choose from {', '.join(known)}")
        for key in ("weights", "type_priority", "ttl_days"):
            if key in changes and isinstance(changes[key], Mapping):
                changes[key] = {**getattr(self, key), **changes[key]}
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (for logs, ``cuemap stats`` and round-trips through :meth:`from_dict`)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["weights"] = dict(self.weights)
        out["type_priority"] = dict(self.type_priority)
        out["aliases"] = [list(group) for group in self.aliases]
        out["conflict_types"] = list(self.conflict_types)
        out["ttl_days"] = dict(self.ttl_days)
        return out


def _check_number(
    name: str, value: Any, *, low: float, high: float = math.inf, low_open: bool = False
) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if ok:
        ok = (value > low if low_open else value >= low) and value <= high
    if not ok:
        bound = f"> {low}" if low_open else f">= {low}"
        upper = "" if high == math.inf else f" and <= {high}"
        raise ConfigError(name, value, f"a finite number {bound}{upper}")


def _check_int(name: str, value: Any, *, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(name, value, f"an integer >= {low}")


def _check_weights(weights: Any) -> dict[str, float]:
    if not isinstance(weights, Mapping):
        raise ConfigError("weights", weights, "a mapping of rule name -> number")
    out = {name: 0.0 for name in RULES}
    for name, value in weights.items():
        if name not in RULES:
            raise ConfigError("weights key", name, f"choose from {', '.join(RULES)}")
        _check_number(f"weights[{name!r}]", value, low=-math.inf)
        out[name] = float(value)
    return out


def _check_type_priority(priority: Any) -> dict[str, float]:
    if not isinstance(priority, Mapping):
        raise ConfigError("type_priority", priority, "a mapping of memory type -> number")
    allowed = [t.value for t in MemoryType]
    out = {t: 0.0 for t in allowed}
    for name, value in priority.items():
        key = name.value if isinstance(name, MemoryType) else name
        if key not in allowed:
            raise ConfigError("type_priority key", name, f"choose from {', '.join(allowed)}")
        _check_number(f"type_priority[{key!r}]", value, low=-math.inf)
        out[key] = float(value)
    return out


def _check_aliases(aliases: Any) -> tuple[tuple[str, ...], ...]:
    if isinstance(aliases, (str, bytes)) or not hasattr(aliases, "__iter__"):
        raise ConfigError("aliases", aliases, "a list of groups of equivalent terms")
    groups: list[tuple[str, ...]] = []
    for group in aliases:
        if isinstance(group, str) or not hasattr(group, "__iter__"):
            raise ConfigError("aliases group", group, "a list of at least two strings")
        items = tuple(group)
        if len(items) < 2 or not all(isinstance(i, str) and i.strip() for i in items):
            raise ConfigError("aliases group", group, "a list of at least two non-empty strings")
        groups.append(items)
    return tuple(groups)


def _check_types(name: str, value: Any) -> tuple[str, ...]:
    allowed = [t.value for t in MemoryType]
    if isinstance(value, str) or not hasattr(value, "__iter__"):
        raise ConfigError(name, value, f"a list of memory types from {', '.join(allowed)}")
    for item in value:
        if item not in allowed:
            raise ConfigError(name, item, f"choose from {', '.join(allowed)}")
    return tuple(value)


def _check_ttl(value: Any) -> dict[str, float]:
    if not isinstance(value, Mapping):
        raise ConfigError("ttl_days", value, "a mapping of memory type -> days")
    allowed = [t.value for t in MemoryType]
    for name, days in value.items():
        if name not in allowed:
            raise ConfigError("ttl_days key", name, f"choose from {', '.join(allowed)}")
        _check_number(f"ttl_days[{name!r}]", days, low=0.0, low_open=True)
    return {name: float(days) for name, days in value.items()}
