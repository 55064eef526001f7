"""A tiny hand-made LoCoMo-format conversation (never the shared data file)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

SESSION_1 = [
    ("D1:1", "Ana", "Hi Ben! I just adopted a puppy named Biscuit.", None),
    ("D1:2", "Ben", "Congrats! What breed is Biscuit?", None),
    ("D1:3", "Ana", "Biscuit is a golden retriever, very playful.", None),
    ("D1:4", "Ben", "I started learning the violin last week.", None),
    ("D1:5", "Ana", "That is great, who teaches you the violin?", None),
    ("D1:6", "Ben", "My neighbour Clara teaches me on Sundays.", "a violin on a wooden table"),
    ("D1:7", "Ana", "See you soon!", None),
]
SESSION_2 = [
    ("D2:1", "Ben", "I played my first violin concert yesterday in Lisbon.", None),
    ("D2:2", "Ana", "Amazing! Biscuit chewed my running shoes.", None),
    ("D2:3", "Ben", "Oh no, did you buy new shoes?", None),
    ("D2:4", "Ana", "Yes, I bought blue trail shoes for the marathon in June.", None),
    ("D2:5", "Ben", "Good luck with the marathon!", None),
]
QUESTIONS: list[dict[str, Any]] = [
    {"question": "What breed is Ana's puppy Biscuit?", "answer": "golden retriever",
     "evidence": ["D1:3"], "category": 4},
    {"question": "Who teaches Ben the instrument he played at his concert?", "answer": "Clara",
     "evidence": ["D1:6", "D2:1"], "category": 1},
    {"question": "Who asked about the breed of Biscuit?", "answer": "Ben",
     "evidence": ["D1:2; D1:3"], "category": 4},  # malformed: two ids in one string
    {"question": "When is Ana's marathon?", "answer": "June",
     "evidence": ["D2:4", "D2:9"], "category": 2},  # D2:9 does not exist
    {"question": "What did Ben say about his cat?", "adversarial_answer": "Ben has no cat",
     "evidence": ["D1:4"], "category": 5},
]  # fmt: skip


def _turns(rows: list[tuple[str, str, str, str | None]]) -> list[dict[str, str]]:
    out = []
    for dia_id, speaker, text, caption in rows:
        turn = {"speaker": speaker, "dia_id": dia_id, "text": text}
        if caption:
            turn["blip_caption"] = caption
        out.append(turn)
    return out


def sample() -> list[dict[str, Any]]:
    """The LoCoMo-format JSON data: one sample, two sessions, twelve turns, five questions."""
    return [
        {
            "sample_id": "tiny-1",
            "conversation": {
                "speaker_a": "Ana",
                "speaker_b": "Ben",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": _turns(SESSION_1),
                "session_2_date_time": "10:05 am on 20 May, 2023",
                "session_2": _turns(SESSION_2),
            },
            "qa": QUESTIONS,
        }
    ]


def write(folder: Path) -> Path:
    """Write the tiny file into ``folder`` and return its path."""
    path = folder / "tiny_locomo.json"
    path.write_text(json.dumps(sample()), encoding="utf-8")
    return path


def write_two(folder: Path) -> Path:
    """The tiny file twice; the second copy misses its first question, so the folds differ."""
    data = sample()
    second = copy.deepcopy(data[0])
    second["sample_id"] = "tiny-2"
    second["qa"] = second["qa"][1:]
    path = folder / "two.json"
    path.write_text(json.dumps([*data, second]), encoding="utf-8")
    return path


def content(dia_id: str) -> str:
    """The memory text of a turn, spelled out by hand."""
    for turn_id, speaker, text, caption in SESSION_1 + SESSION_2:
        if turn_id == dia_id:
            extra = f" [shares an image: {caption}]" if caption else ""
            return f"{speaker}: {text}{extra}"
    raise KeyError(dia_id)
