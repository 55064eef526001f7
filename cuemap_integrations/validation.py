"""Checks of the public API's arguments, shared by :class:`~cuemap_integrations.CueMap` and
:class:`~cuemap_integrations.session.RecallSession`: a wrong value is a ValidationError that names
the argument, never a TypeError from deep inside."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from .errors import ValidationError
from .ranking import Filters
from .records import MemoryType
from .text import normalize

__all__ = ["build_filters", "check_recall_args", "id_list", "normalized_list"]


def normalized_list(values: Iterable[str] | None, field_name: str) -> tuple[str, ...]:
    if values is None:
        return ()
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise ValidationError(field_name, values, "a list of strings")
    out: dict[str, None] = {}
    for value in values:
        if not isinstance(value, str):
            raise ValidationError(field_name, value, f"every {field_name[:-1]} must be a string")
        norm = normalize(value)
        if not norm:
            raise ValidationError(field_name, value, f"every {field_name[:-1]} must be non-empty")
        out[norm] = None
    return tuple(out)


def check_recall_args(query: object, k: object, min_score: object, extra_cues: object) -> None:
    if not isinstance(query, str):
        raise ValidationError("query", query, "a string")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 10_000:
        raise ValidationError("k", k, "an integer from 1 to 10000")
    if min_score is not None and (
        isinstance(min_score, bool)
        or not isinstance(min_score, (int, float))
        or not math.isfinite(min_score)
    ):
        raise ValidationError("min_score", min_score, "a finite number or None")
    if isinstance(extra_cues, str) or not isinstance(extra_cues, Iterable):
        raise ValidationError("extra_cues", extra_cues, "a list of strings, not one string")
    for cue in extra_cues:
        if not isinstance(cue, str):
            raise ValidationError("extra_cues", cue, "every cue must be a string")


def id_list(memory_ids: object) -> list[str]:
    if not isinstance(memory_ids, Iterable):
        raise ValidationError("memory_ids", memory_ids, "a list of memory ids")
    ids = list(memory_ids)
    for memory_id in ids:
        if not isinstance(memory_id, str):
            raise ValidationError("memory_ids", memory_id, "every memory id must be a string")
    return ids


def _check_many(value: object, field_name: str) -> None:
    """A filter argument: None, one value, or an iterable of values (not, e.g., a number)."""
    if value is not None and not isinstance(value, (str, MemoryType, Iterable)):
        raise ValidationError(field_name, value, "a string or a list of strings")


def build_filters(*, types: object = None, sources: object = None, **bounds: Any) -> Filters:
    """:meth:`Filters.build` after checking that ``types`` and ``sources`` are iterable, so a
    wrong type is a ValidationError naming the argument, not a TypeError from inside."""
    _check_many(types, "types")
    _check_many(sources, "sources")
    return Filters.build(types=types, sources=sources, **bounds)  # type: ignore[arg-type]
