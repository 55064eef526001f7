"""Reading a LoCoMo-format file into conversations, turns and questions.

The format (Maharana et al., ACL 2024; ``snap-research/LoCoMo`` ``data/locomo10.json``): a JSON list
of samples, each with ``sample_id``, ``conversation`` (``speaker_a``, ``speaker_b``,
``session_N_date_time`` and ``session_N`` turn lists) and ``qa`` (``question``, ``answer`` or
``adversarial_answer``, ``evidence`` dia ids, ``category`` 1-5).

Evidence ids are checked against the conversation's turns. Problems are recorded per kind and
never raise:

* ``split``: several ids in one string (``"D8:6; D9:17"``); the ids are recovered and used.
* ``unparseable``: not a dia id at all (``"D"``, ``"D:11:26"``); dropped.
* ``missing_turn``: a well-formed id with no such turn in the conversation; dropped.
* ``duplicate``: the same id twice in one question; counted once.

Example:
    >>> parse_dia_id("D3:14")
    (3, 14)
    >>> parse_dia_id("D8:6; D9:17") is None
    True
    >>> parse_session_date("1:56 pm on 8 May, 2023").isoformat()
    '2023-05-08T13:56:00+00:00'
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

__all__ = [
    "PROBLEM_KINDS",
    "STRICT_CATEGORIES",
    "Conversation",
    "EvidenceProblem",
    "LocomoError",
    "Question",
    "Turn",
    "load_locomo",
    "parse_conversations",
    "parse_dia_id",
    "parse_session_date",
    "turn_content",
]

STRICT_CATEGORIES: tuple[int, ...] = (1, 2, 3, 4)
ALL_CATEGORIES: tuple[int, ...] = (1, 2, 3, 4, 5)
CATEGORY_NAMES: Mapping[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
PROBLEM_KINDS: tuple[str, ...] = ("split", "unparseable", "missing_turn", "duplicate")

_DIA_ID = re.compile(r"D(\d+):(\d+)")
_SEPARATORS = re.compile(r"[;,\s]+")
_SESSION_KEY = re.compile(r"session_(\d+)")
_DATE = re.compile(
    r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})", re.IGNORECASE
)
_MONTHS = {
    name: number
    for number, name in enumerate(
        ("january february march april may june july august september october november "
         "december").split(),
        start=1,
    )
}  # fmt: skip


class LocomoError(ValueError):
    """The file is not LoCoMo-shaped (not a list of samples with conversations)."""


@dataclass(frozen=True)
class Turn:
    """One dialogue turn: one memory of the conversation's store."""

    dia_id: str
    speaker: str
    text: str
    session: int
    position: int
    created_at: datetime
    blip_caption: str | None = None

    @property
    def content(self) -> str:
        """The memory text: ``"{speaker}: {text}"`` plus the shared image's caption."""
        return turn_content(self.speaker, self.text, self.blip_caption)


@dataclass(frozen=True)
class EvidenceProblem:
    """One evidence id that could not be used as given."""

    kind: str
    raw: str
    sample_id: str
    question_index: int

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-safe data."""
        return {
            "kind": self.kind,
            "raw": self.raw,
            "sample_id": self.sample_id,
            "question_index": self.question_index,
        }


@dataclass(frozen=True)
class Question:
    """One question with the usable evidence ids (in the order given, deduplicated)."""

    index: int
    text: str
    category: int
    evidence: tuple[str, ...]
    raw_evidence: tuple[str, ...]
    problems: tuple[EvidenceProblem, ...] = ()


@dataclass(frozen=True)
class Conversation:
    """One sample: its turns (in dialogue order), questions and data problems."""

    sample_id: str
    speakers: tuple[str, ...]
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    date_problems: tuple[str, ...] = ()
    by_id: Mapping[str, Turn] = field(default_factory=dict, compare=False, repr=False)

    @property
    def last_date(self) -> datetime:
        """The latest session date: "now" for the questions asked about this conversation."""
        return max(turn.created_at for turn in self.turns)


def turn_content(speaker: str, text: str, caption: str | None) -> str:
    """The memory text of a turn, as the retrieval task defines it."""
    content = f"{speaker}: {text}"
    if caption:
        content += f" [shares an image: {caption}]"
    return content


def parse_dia_id(value: str) -> tuple[int, int] | None:
    """``(session, turn)`` of a well-formed dia id such as ``"D3:14"``, else None."""
    match = _DIA_ID.fullmatch(value.strip()) if isinstance(value, str) else None
    return (int(match.group(1)), int(match.group(2))) if match else None


def parse_session_date(value: str) -> datetime | None:
    """A LoCoMo session date (``"1:56 pm on 8 May, 2023"``) as aware UTC, or None."""
    match = _DATE.search(value) if isinstance(value, str) else None
    if match is None:
        return None
    hour, minute, half, day, month_name, year = match.groups()
    month = _MONTHS.get(month_name.lower())
    if month is None:
        return None
    hour_24 = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
    try:
        return datetime(int(year), month, int(day), hour_24, int(minute), tzinfo=timezone.utc)
    except ValueError:
        return None


def load_locomo(path: str | os.PathLike[str]) -> list[Conversation]:
    """Read and parse a LoCoMo-format JSON file.

    Raises:
        OSError: the file cannot be read.
        LocomoError: the file is not JSON or not LoCoMo-shaped.
    """
    with open(path, encoding="utf-8") as handle:
        try:
            data = json.load(handle)
        except json.JSONDecodeError as exc:
            raise LocomoError(f"{path}: not JSON ({exc})") from None
    return parse_conversations(data)


def parse_conversations(data: Any) -> list[Conversation]:
    """Parse the loaded JSON of a LoCoMo file (a list of samples)."""
    if not isinstance(data, list) or not data:
        raise LocomoError("expected a non-empty JSON list of LoCoMo samples")
    return [_parse_sample(sample, position) for position, sample in enumerate(data)]


def _parse_sample(sample: Any, position: int) -> Conversation:
    if not isinstance(sample, Mapping) or not isinstance(sample.get("conversation"), Mapping):
        raise LocomoError(f"sample #{position} has no 'conversation' object")
    sample_id = str(sample.get("sample_id", f"sample-{position}"))
    conv = sample["conversation"]
    turns, date_problems = _parse_turns(conv)
    if not turns:
        raise LocomoError(f"sample {sample_id!r} has no dialogue turns")
    by_id = {turn.dia_id: turn for turn in turns}
    qa = sample.get("qa") or []
    questions = tuple(_parse_question(sample_id, i, q, by_id) for i, q in enumerate(qa))
    speakers = tuple(str(conv[key]) for key in ("speaker_a", "speaker_b") if conv.get(key))
    return Conversation(sample_id, speakers, tuple(turns), questions, date_problems, by_id)


def _session_numbers(conv: Mapping[str, Any]) -> list[int]:
    numbers = []
    for key in conv:
        match = _SESSION_KEY.fullmatch(key)
        if match and isinstance(conv[key], list):
            numbers.append(int(match.group(1)))
    return sorted(numbers)


def _parse_turns(conv: Mapping[str, Any]) -> tuple[list[Turn], tuple[str, ...]]:
    turns: list[Turn] = []
    problems: list[str] = []
    previous = datetime(1970, 1, 1, tzinfo=timezone.utc)
    for number in _session_numbers(conv):
        raw_date = conv.get(f"session_{number}_date_time")
        when = parse_session_date(raw_date) if isinstance(raw_date, str) else None
        if when is None:
            problems.append(f"session_{number}_date_time={raw_date!r}")
            when = previous  # keep the order of sessions; the problem is reported
        previous = when
        turns.extend(_session_turns(conv[f"session_{number}"], number, when))
    return turns, tuple(problems)


def _session_turns(raw_turns: Iterable[Any], session: int, when: datetime) -> Iterable[Turn]:
    for position, raw in enumerate(raw_turns, start=1):
        if not isinstance(raw, Mapping) or not raw.get("dia_id"):
            continue
        dia_id = str(raw["dia_id"]).strip()
        parsed = parse_dia_id(dia_id)
        caption = raw.get("blip_caption")
        yield Turn(
            dia_id=dia_id,
            speaker=str(raw.get("speaker", "")),
            text=str(raw.get("text", "")),
            session=parsed[0] if parsed else session,
            position=parsed[1] if parsed else position,
            created_at=when,
            blip_caption=str(caption) if caption else None,
        )


def _parse_question(sample_id: str, index: int, raw: Any, turns: Mapping[str, Turn]) -> Question:
    raw = raw if isinstance(raw, Mapping) else {}
    raw_evidence = raw.get("evidence") or []
    if isinstance(raw_evidence, str):
        raw_evidence = [raw_evidence]
    raw_evidence = tuple(str(e) for e in raw_evidence)
    evidence, problems = clean_evidence(raw_evidence, turns, sample_id, index)
    try:
        category = int(raw.get("category", 0))
    except (TypeError, ValueError):
        category = 0
    return Question(index, str(raw.get("question", "")), category, evidence, raw_evidence, problems)


def clean_evidence(
    raw_evidence: Sequence[str], turns: Mapping[str, Turn], sample_id: str = "", index: int = 0
) -> tuple[tuple[str, ...], tuple[EvidenceProblem, ...]]:
    """The usable evidence ids of one question and the problems met on the way.

    Args:
        raw_evidence: the ``evidence`` list as given.
        turns: the conversation's turns by dia id.
        sample_id, index: where the question is (copied into each problem).

    Returns:
        ``(ids, problems)``: ids in the order given, deduplicated, each naming an existing turn.
    """
    ids: dict[str, None] = {}
    problems: list[EvidenceProblem] = []

    def problem(kind: str, raw: str) -> None:
        problems.append(EvidenceProblem(kind, raw, sample_id, index))

    for raw in raw_evidence:
        for dia_id in _split_ids(raw, problem):
            if dia_id not in turns:
                problem("missing_turn", dia_id)
            elif dia_id in ids:
                problem("duplicate", dia_id)
            else:
                ids[dia_id] = None
    return tuple(ids), tuple(problems)


def _split_ids(raw: str, problem: Any) -> list[str]:
    """Well-formed ids in ``raw``: itself, or its parts when it lists several ids."""
    text = raw.strip()
    if parse_dia_id(text):
        return [text]
    parts = [p for p in _SEPARATORS.split(text) if p]
    if len(parts) > 1 and all(parse_dia_id(p) for p in parts):
        problem("split", raw)
        return parts
    problem("unparseable", raw)
    return []
