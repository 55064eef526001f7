"""Capture: rules in English and Chinese, filters, redaction first, extractors, stable ids."""

from __future__ import annotations

import doctest
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from enum import Enum
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuemap_integrations import CueMap, MemoryType
from cuemap_integrations import capture as capture_module
from cuemap_integrations.capture import (
    DEFAULT_RULES,
    WEAK_MARKERS,
    Candidate,
    CaptureResult,
    CaptureRule,
    Message,
    Skipped,
    capture,
    rule,
)
from cuemap_integrations.errors import ConfigError, ValidationError
from cuemap_integrations.redact import DEFAULT_POLICY, RedactionPolicy

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
P, C, F, T = MemoryType.PREFERENCE, MemoryType.CONVENTION, MemoryType.FACT, MemoryType.TASK


def one(text: str, **kwargs: Any) -> CaptureResult:
    return capture([("user", text)], session_id="s1", now=T0, **kwargs)


# (user turn, type, content, key, lowest confidence, highest confidence)
CASES: list[tuple[str, MemoryType, str, str | None, float, float]] = [
    # explicit requests
    ("Please remember that the API uses port 8001.", C, "the API uses port 8001", None, 0.85, 1.0),
    ("Remember that I prefer tea.", P, "I prefer tea", None, 0.85, 1.0),
    ("Note that staging is slow on Mondays.", F, "staging is slow on Mondays", None, 0.85, 1.0),
    (
        "Don't forget to renew the TLS cert by Friday.",
        T,
        "renew the TLS cert by Friday",
        None,
        0.8,
        1.0,
    ),
    ("From now on call me Bobby.", P, "Call the user Bobby", "user.display_name", 0.9, 1.0),
    ("Please call me Dr Li from now on", P, "Call the user Dr Li", "user.display_name", 0.9, 1.0),
    ("请记住API用8001端口", C, "API用8001端口", None, 0.85, 1.0),
    ("记住：我们统一使用UTF-8。", C, "我们统一使用UTF-8", None, 0.85, 1.0),
    ("以后叫我小王", P, "称呼用户为小王", "user.display_name", 0.9, 1.0),
    ("叫我老李就好。", P, "称呼用户为老李", "user.display_name", 0.9, 1.0),
    ("别忘了周五前提交报告", T, "周五前提交报告", None, 0.8, 1.0),
    # preferences
    (
        "I prefer answers in short bullet points.",
        P,
        "I prefer answers in short bullet points",
        None,
        0.7,
        0.9,
    ),
    ("I hate YAML config files!", P, "I hate YAML config files", None, 0.7, 0.9),
    ("I usually deploy in the morning.", P, "I usually deploy in the morning", None, 0.7, 0.9),
    ("My favourite editor is Helix.", P, "My favourite editor is Helix", None, 0.7, 0.9),
    ("我喜欢简洁的回答。", P, "我喜欢简洁的回答", None, 0.7, 0.9),
    ("我不喜欢用分号", P, "我不喜欢用分号", None, 0.7, 0.9),
    ("我习惯用 vim 写代码", P, "我习惯用 vim 写代码", None, 0.7, 0.9),
    # conventions and constraints
    ("We use PostgreSQL for everything.", C, "We use PostgreSQL for everything", None, 0.7, 0.85),
    ("We always squash merge.", C, "We always squash merge", None, 0.7, 0.85),
    ("You must not push to main.", C, "You must not push to main", None, 0.7, 0.85),
    (
        "Always back up the database before migrations.",
        C,
        "Always back up the database before migrations",
        None,
        0.7,
        0.85,
    ),
    ("The API uses port 8001.", C, "The API uses port 8001", None, 0.7, 0.85),
    ("必须先备份再迁移。", C, "必须先备份再迁移", None, 0.7, 0.85),
    ("统一采用四个空格缩进", C, "统一采用四个空格缩进", None, 0.7, 0.85),
    ("禁止直接推送到主分支", C, "禁止直接推送到主分支", None, 0.7, 0.85),
    ("我们用 PostgreSQL 存订单", C, "我们用 PostgreSQL 存订单", None, 0.7, 0.85),
    # facts
    ("I live in Berlin.", F, "I live in Berlin", "user.location", 0.7, 0.9),
    ("My name is Alice Smith.", F, "The user's name is Alice Smith", "user.name", 0.85, 0.95),
    (
        "my name is alice and I live in Berlin",
        F,
        "The user's name is alice",
        "user.name",
        0.85,
        0.95,
    ),
    ("My email is alice@example.com.", F, "My email is alice@example.com", "user.email", 0.8, 0.9),
    ("We are on Python 3.11.", F, "We are on Python 3.11", None, 0.6, 0.8),
    ("We decided to drop MySQL.", F, "We decided to drop MySQL", None, 0.7, 0.9),
    ("我住在上海。", F, "我住在上海", "user.location", 0.7, 0.9),
    ("我叫张三，是后端工程师", F, "用户的名字是张三", "user.name", 0.85, 0.95),
    ("我们决定用 Redis 做缓存", F, "我们决定用 Redis 做缓存", None, 0.7, 0.9),
    ("版本是 3.11", F, "版本是 3.11", None, 0.6, 0.8),
    # tasks and plans
    ("TODO: migrate the users table.", T, "migrate the users table", None, 0.8, 0.9),
    ("Next we will add rate limiting.", T, "Next we will add rate limiting", None, 0.6, 0.8),
    ("We plan to move to Kubernetes.", T, "We plan to move to Kubernetes", None, 0.6, 0.8),
    ("I need to update the changelog.", T, "I need to update the changelog", None, 0.6, 0.8),
    ("Remind me to call the vendor.", T, "Remind me to call the vendor", None, 0.6, 0.8),
    ("计划下周迁移数据库。", T, "计划下周迁移数据库", None, 0.6, 0.8),
    ("下一步是加限流", T, "下一步是加限流", None, 0.6, 0.8),
    ("待办：更新文档", T, "待办：更新文档", None, 0.6, 0.8),
    ("需要在周五前提交报告", T, "需要在周五前提交报告", None, 0.6, 0.8),
]


@pytest.mark.parametrize(("text", "kind", "content", "key", "low", "high"), CASES)
def test_rule_families(
    text: str, kind: MemoryType, content: str, key: str | None, low: float, high: float
) -> None:
    result = one(text)
    assert len(result.records) == 1, result.skipped
    record = result.records[0]
    assert (record.type, record.content) == (kind, content)
    assert record.metadata.get("key") == key
    assert low <= record.metadata["confidence"] <= high
    assert record.metadata["rule"].split(">")[0].split(".")[0] in ("en", "zh")


def test_every_family_is_covered_in_both_languages() -> None:
    seen = {(r.language, r.type) for r in DEFAULT_RULES}
    for kind in (P, C, F, T):
        assert ("en", kind) in seen and ("zh", kind) in seen


@pytest.mark.parametrize(
    "text",
    [
        "thanks, that works",
        "好的谢谢",
        "I like it",
        "Don't worry about it",
        "call me later",
        "不要了，谢谢",
        "我叫了外卖",
        "ok",
        "",
    ],
)
def test_small_talk_stores_nothing(text: str) -> None:
    result = one(text)
    assert result.records == ()
    assert all(s.reason in ("no rule", "empty") for s in result.skipped)


def test_record_fields() -> None:
    result = capture(
        [Message("user", "I prefer tea.", T0 - timedelta(hours=1), "Ann")],
        session_id="s1",
        namespace="team",
        source="slack",
        now=T0,
    )
    (record,) = result.records
    assert record.memory_id.startswith("c-") and len(record.memory_id) == 14
    assert record.namespace == "team" and record.source == "slack"
    assert record.created_at == record.updated_at == T0 - timedelta(hours=1)
    assert record.cue_origin == "derived" and "tea" in record.cues
    assert record.metadata == {
        "speaker": "Ann",
        "role": "user",
        "session_id": "s1",
        "rule": "en.preference",
        "confidence": 0.8,
        "timestamp": (T0 - timedelta(hours=1)).isoformat(),
    }


def test_sentences_are_split_and_matched_separately() -> None:
    text = (
        "Hi there! I prefer tea. We use Redis for the cache\n我喜欢简洁的回答。好的；下一步是加限流"
    )
    result = one(text)
    assert [r.type for r in result.records] == [P, C, P, T]
    assert ("Hi there", "no rule") in result.skipped
    assert ("好的", "no rule") in result.skipped


def test_first_rule_wins_per_sentence() -> None:
    (record,) = one("Remember that my name is Bob").records
    assert record.content == "The user's name is Bob"
    assert record.metadata["key"] == "user.name"
    assert record.metadata["rule"] == "en.remember>en.name"


def test_assistant_and_system_turns_are_ignored_by_default() -> None:
    messages = [
        ("system", "You must answer in English."),
        ("assistant", "I prefer to use bullet points."),
        ("user", "thanks"),
    ]
    result = capture(messages, session_id="s", now=T0)
    assert result.records == ()
    assert Skipped("You must answer in English.", "system turn") in result.skipped
    assert ("I prefer to use bullet points.", "assistant turn") in result.skipped
    both = capture(messages, session_id="s", now=T0, roles=("user", "assistant"))
    assert [r.metadata["role"] for r in both.records] == ["assistant"]


# --- weak remarks ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "We use SQLite for now.",
        "Maybe we use Redis.",
        "I probably prefer dark mode.",
        "We temporarily deploy by hand.",
        "我们暂时用 SQLite",
        "先这样，我们用 MySQL",
        "可能我们用 Go 重写",
        "也许我更喜欢 Vue",
        "下一步回头再说",
    ],
)
def test_weak_remarks_are_skipped_or_downweighted(text: str) -> None:
    skipped = one(text)
    assert skipped.records == ()
    assert [s.reason for s in skipped.skipped] == ["weak"]
    kept = one(text, weak="downweight", min_confidence=0.3)
    (record,) = kept.records
    assert 0.3 <= record.metadata["confidence"] <= 0.5
    assert one(text, weak="downweight").records == ()  # 0.5 x confidence < 0.5 by default
    assert [s.reason for s in one(text, weak="downweight").skipped] == ["low confidence"]


def test_weak_markers_are_whole_words_and_exceptions_hold() -> None:
    assert "maybe" in WEAK_MARKERS and "可能" in WEAK_MARKERS
    assert len(one("We use Maybelline samples in tests.").records) == 1
    assert len(one("必须尽可能减少停机").records) == 1


def test_min_confidence_filters() -> None:
    result = one("We are on Python 3.11.", min_confidence=0.75)
    assert result.records == ()
    assert result.skipped == (Skipped("We are on Python 3.11", "low confidence"),)


def test_duplicates_within_a_call_are_captured_once() -> None:
    messages = [("user", "The API uses port 8001."), ("user", "the  API uses port 8001")]
    result = capture(messages, session_id="s", now=T0)
    assert len(result.records) == 1
    assert result.skipped == (Skipped("the API uses port 8001", "duplicate"),)


def test_too_short_content_is_skipped() -> None:
    result = one("Remember: ok?")
    assert result.records == ()
    assert result.skipped[0].reason == "too short"


# --- transcripts ----------------------------------------------------------------------------


def test_mode_all_stores_every_turn_as_an_event() -> None:
    messages = [
        {"role": "user", "content": "hi, thanks", "timestamp": "2026-03-01T10:00:00+00:00"},
        {"role": "assistant", "content": "Hello!\nHow can I help?", "name": "Bot"},
        {"role": "tool", "content": ""},
    ]
    result = capture(messages, session_id="s", now=T0, mode="all")
    assert [r.content for r in result.records] == [
        "user: hi, thanks",
        "Bot: Hello!\nHow can I help?",
    ]
    assert all(r.type is MemoryType.EVENT for r in result.records)
    first, second = result.records
    assert first.metadata["timestamp"] == "2026-03-01T10:00:00+00:00"
    assert first.created_at == datetime(2026, 3, 1, 10, tzinfo=timezone.utc)
    assert second.metadata["speaker"] == "Bot" and second.metadata["confidence"] == 1.0
    assert second.metadata["rule"] == "transcript" and second.created_at == T0
    assert result.skipped == (Skipped("", "empty"),)


def test_mode_all_redacts_too() -> None:
    result = capture([("user", "token=abcdef123456")], session_id="s", now=T0, mode="all")
    (record,) = result.records
    assert record.content == "user: token=[REDACTED:api_key]"
    assert record.metadata["redacted"] == {"api_key": 1}


# --- secrets --------------------------------------------------------------------------------

SECRETS = [
    "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
    "hunter2pw",
    "ghp_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3d",
    "s3cr3tPw",
    "diary-entry-42",
]


def test_secrets_never_reach_records_or_skipped_excerpts() -> None:
    messages = [
        ("user", f"Remember that the OpenAI key is {SECRETS[0]}."),
        ("user", f"We use password={SECRETS[1]} on staging. I prefer tea."),
        ("assistant", f"I will use {SECRETS[2]}"),
        (
            "user",
            f"Our DB is postgresql://app:{SECRETS[3]}@db.internal:5432/orders, we use it daily",
        ),
        ("user", f"I like dark mode <private>{SECRETS[4]}\nmore private</private> in my editor"),
        ("user", f"{SECRETS[0]} thanks"),
    ]
    for mode in ("rules", "all"):
        result = capture(messages, session_id="s", now=T0, mode=mode)  # type: ignore[arg-type]
        text = repr(result) + json.dumps([r.to_dict() for r in result.records])
        for secret in SECRETS:
            assert secret not in text
    result = capture(messages, session_id="s", now=T0)
    contents = [r.content for r in result.records]
    assert "the OpenAI key is [REDACTED:api_key]" in contents
    assert "I like dark mode [REDACTED:private] in my editor" in contents
    assert any("postgresql://[REDACTED:connection_string]@db.internal" in c for c in contents)
    assert result.redactions == {
        "api_key": 3,
        "password": 1,
        "connection_string": 1,
        "private": 1,
    }
    assert ("[REDACTED:api_key] thanks", "no rule") in result.skipped


def test_dropped_message_becomes_a_skipped_entry() -> None:
    policy = DEFAULT_POLICY.with_actions(password="drop")
    messages = [("user", f"We use password={SECRETS[1]} on staging."), ("user", "I prefer tea")]
    result = capture(messages, session_id="s", now=T0, redaction=policy)
    assert [r.content for r in result.records] == ["I prefer tea"]
    assert result.skipped == (Skipped("We use password=[REDACTED:password] on…", "secret:dropped"),)
    assert SECRETS[1] not in repr(result)
    assert result.redactions == {"password": 1}


def test_redaction_can_be_disabled_explicitly() -> None:
    (record,) = one("We use token=abcdef123456 on staging", redaction=None).records
    assert "abcdef123456" in record.content


def test_strict_policy_applies_to_personal_data() -> None:
    (record,) = one("My email is alice@example.com", redaction=RedactionPolicy.strict()).records
    assert record.content == "My email is [REDACTED:email]"
    assert record.metadata["redacted"] == {"email": 1}
    assert "redacted" not in record.cues


# --- extractors -----------------------------------------------------------------------------


def fake_llm(messages: Sequence[Message]) -> list[object]:
    assert all(isinstance(m, Message) for m in messages)
    return [
        {
            "content": "The user works at ACME",
            "type": "fact",
            "confidence": 0.9,
            "key": "user.employer",
        },
        Candidate("Ship v2 by Friday", MemoryType.TASK, 0.8, "llm", cues=("v2", "ship")),
        {"content": "maybe learn Rust", "type": "task", "confidence": 0.9},
        {"content": "I prefer tea", "type": "preference", "confidence": 0.95},
    ]


def test_extractor_extends_the_rules() -> None:
    result = one("I prefer tea.", extractor=fake_llm)
    assert [r.content for r in result.records] == [
        "I prefer tea",
        "The user works at ACME",
        "Ship v2 by Friday",
    ]
    by_content = {r.content: r for r in result.records}
    assert by_content["The user works at ACME"].metadata["key"] == "user.employer"
    assert by_content["The user works at ACME"].metadata["rule"] == "extractor"
    assert by_content["Ship v2 by Friday"].cues == ("v2", "ship")
    assert by_content["Ship v2 by Friday"].cue_origin == "given"
    assert ("maybe learn Rust", "weak") in result.skipped
    assert ("I prefer tea", "duplicate") in result.skipped


def test_extractor_replaces_the_rules() -> None:
    result = one("We use Redis.", extractor=fake_llm, extractor_mode="replace")
    assert [r.content for r in result.records] == [
        "The user works at ACME",
        "Ship v2 by Friday",
        "I prefer tea",
    ]


def test_extractor_sees_redacted_text_and_its_output_is_redacted() -> None:
    seen: list[str] = []

    def leaky(messages: Sequence[Message]) -> list[dict[str, object]]:
        seen.extend(m.content for m in messages)
        return [{"content": f"key is {SECRETS[0]}", "type": "fact", "confidence": 0.9}]

    result = one(f"my key is {SECRETS[0]}", extractor=leaky)
    assert seen == ["my key is [REDACTED:api_key]"]
    assert [r.content for r in result.records] == ["key is [REDACTED:api_key]"]
    assert SECRETS[0] not in repr(result)
    assert result.redactions == {"api_key": 2}


@pytest.mark.parametrize(
    ("output", "field_name"),
    [
        ([{"content": "x y z", "type": "opinion", "confidence": 0.9}], "extractor[0].type"),
        (
            [
                {"content": "ok ok", "type": "fact", "confidence": 0.9},
                {"content": "", "type": "fact", "confidence": 1},
            ],
            "extractor[1].content",
        ),
        ([{"content": "x y z", "type": "fact", "confidence": 2}], "extractor[0].confidence"),
        ([{"content": "x y z", "type": "fact"}], "extractor[0].confidence"),
        (
            [{"content": "x y z", "type": "fact", "confidence": 1, "colour": "red"}],
            "extractor[0] field",
        ),
        (
            [{"content": "x y z", "type": "fact", "confidence": 1, "cues": "one"}],
            "extractor[0].cues",
        ),
        (["just a string"], "extractor[0]"),
        (None, "extractor"),
    ],
)
def test_invalid_extractor_output_is_refused(output: object, field_name: str) -> None:
    with pytest.raises(ValidationError) as info:
        one("I prefer tea", extractor=lambda messages: output)  # type: ignore[arg-type,return-value]
    assert info.value.field == field_name


# --- message coercion -----------------------------------------------------------------------


@dataclass
class LCMessage:  # LangChain-like: .type and .content (str or content blocks)
    type: str
    content: object
    name: str | None = None


class Role(Enum):
    USER = "user"
    ASSISTANT = "assistant"


@dataclass
class TextBlock:
    text: str


@dataclass
class LIMessage:  # LlamaIndex-like: .role enum and .content, or .blocks
    role: object
    content: str | None = None
    blocks: list[TextBlock] = field(default_factory=list)


def test_message_coercion_from_many_shapes() -> None:
    when = "2026-03-01T09:00:00+08:00"
    raw: list[object] = [
        Message("user", "a"),
        {"role": "user", "content": "b", "timestamp": when, "name": "Ann"},
        ("human", "c"),
        LCMessage("human", "d", name="Bo"),
        LCMessage("ai", [{"type": "text", "text": "e1"}, {"type": "image_url"}, "e2"]),
        LCMessage("system", "f"),
        LCMessage("tool", "g"),
        LIMessage(Role.USER, "h"),
        LIMessage("assistant", None, [TextBlock("i1"), TextBlock("i2")]),
    ]
    got = [Message.coerce(m, f"messages[{i}]") for i, m in enumerate(raw)]
    assert [(m.role, m.content, m.name) for m in got] == [
        ("user", "a", None),
        ("user", "b", "Ann"),
        ("user", "c", None),
        ("user", "d", "Bo"),
        ("assistant", "e1\ne2", None),
        ("system", "f", None),
        ("tool", "g", None),
        ("user", "h", None),
        ("assistant", "i1\ni2", None),
    ]
    assert got[1].timestamp == datetime(2026, 3, 1, 1, tzinfo=timezone.utc)
    result = capture(raw, session_id="s", now=T0, mode="all")
    assert result.records[1].content == "Ann: b"


@pytest.mark.parametrize(
    ("messages", "field_name"),
    [
        (["hello"], "messages[0]"),
        ([("user", "ok"), 42], "messages[1]"),
        ([{"role": "user"}], "messages[0].content"),
        ([{"role": "", "content": "x"}], "messages[0].role"),
        ([{"role": "user", "content": 5}], "messages[0].content"),
        (
            [{"role": "user", "content": "x", "timestamp": datetime(2026, 1, 1)}],
            "messages[0].timestamp",
        ),
        ([("user", "ok"), ("user", "ok", "extra")], "messages[1]"),
        ([LCMessage("human", 3)], "messages[0].content"),
        ("just text", "messages"),
    ],
)
def test_bad_messages_name_their_index(messages: object, field_name: str) -> None:
    with pytest.raises(ValidationError) as info:
        capture(messages, session_id="s", now=T0)  # type: ignore[arg-type]
    assert info.value.field == field_name


# --- arguments ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "field_name"),
    [
        ({"mode": "everything"}, ConfigError, "mode"),
        ({"extractor_mode": "merge"}, ConfigError, "extractor_mode"),
        ({"weak": "keep"}, ConfigError, "weak"),
        ({"min_confidence": 1.5}, ValidationError, "min_confidence"),
        ({"roles": "user"}, ValidationError, "roles"),
        ({"now": datetime(2026, 1, 1)}, ValidationError, "now"),
        ({"now": "2026-01-01"}, ValidationError, "now"),
        ({"session_id": ""}, ValidationError, "session_id"),
        ({"namespace": ""}, ValidationError, "namespace"),
        ({"rules": ["not a rule"]}, ConfigError, "rules[0]"),
        ({"redaction": "strict"}, ConfigError, "redaction"),
        ({"extractor": 3}, ConfigError, "extractor"),
    ],
)
def test_bad_arguments(kwargs: dict[str, Any], error: type[Exception], field_name: str) -> None:
    options: dict[str, Any] = {"session_id": "s", "now": T0, **kwargs}
    with pytest.raises(error) as info:
        capture([("user", "I prefer tea")], **options)
    assert getattr(info.value, "field", None) == field_name


def test_now_defaults_to_current_utc() -> None:
    before = datetime.now(timezone.utc)
    (record,) = capture([("user", "I prefer tea")], session_id="s").records
    assert before <= record.created_at <= datetime.now(timezone.utc)


# --- rules as data --------------------------------------------------------------------------


def test_custom_rules_extend_the_table() -> None:
    coffee = rule(
        "en.drink", "en", r"\bi drink (?P<what>\w+)", "preference", 0.7,
        key="user.drink.{what}", template="The user drinks {what}",
    )  # fmt: skip
    result = one("Every morning I drink Coffee.", rules=(*DEFAULT_RULES, coffee))
    (record,) = result.records
    assert record.content == "The user drinks Coffee"
    assert record.metadata["key"] == "user.drink.Coffee"
    assert one("Every morning I drink Coffee.").records == ()


def test_rule_helper_validates() -> None:
    with pytest.raises(ConfigError) as info:
        rule("broken", "en", r"(unclosed", "fact", 0.5)
    assert info.value.field == "rules[broken].pattern"
    with pytest.raises(ConfigError) as info:
        rule("bad-group", "en", r"x", "fact", 0.5, content_group="missing")
    assert info.value.field == "rules[bad-group].content_group"
    with pytest.raises(ConfigError) as info:
        rule("bad-template", "en", r"(?P<a>x)", "fact", 0.5, template="{b}")
    assert info.value.field == "rules[bad-template].template"
    with pytest.raises(ConfigError) as info:
        rule("bad-conf", "en", r"x", "fact", 1.5)
    assert info.value.field == "rules[bad-conf].confidence"
    with pytest.raises(ConfigError) as info:
        rule("bad-lang", "fr", r"x", "fact", 0.5)  # type: ignore[arg-type]
    assert info.value.field == "rules[bad-lang].language"
    with pytest.raises(ValidationError) as info:
        rule("bad-type", "en", r"x", "opinion", 0.5)
    assert info.value.field == "rules[bad-type].type"


def test_default_rules_are_one_bilingual_table() -> None:
    assert all(isinstance(r, CaptureRule) for r in DEFAULT_RULES)
    names = [r.name for r in DEFAULT_RULES]
    assert len(names) == len(set(names))
    assert {r.language for r in DEFAULT_RULES} == {"en", "zh"}
    for r in DEFAULT_RULES:
        assert r.name.startswith(r.language + ".")
        assert bool(r.pattern.flags & 2) == (r.language == "en")  # re.IGNORECASE


# --- determinism and storage ----------------------------------------------------------------

CONVERSATION = [
    ("user", "Please remember that the API uses port 8001. I prefer tea."),
    ("assistant", "Noted."),
    ("user", "以后叫我小王。我们决定用 Redis 做缓存。TODO: migrate the users table"),
    ("user", "We always squash merge. 必须先备份再迁移"),
]


def test_same_input_gives_same_ids() -> None:
    first = capture(CONVERSATION, session_id="s", now=T0)
    second = capture(CONVERSATION, session_id="other", now=T0 + timedelta(days=1))
    assert [r.memory_id for r in first.records] == [r.memory_id for r in second.records]
    elsewhere = capture(CONVERSATION, session_id="s", now=T0, namespace="team")
    assert not {r.memory_id for r in first.records} & {r.memory_id for r in elsewhere.records}


SCRIPT = textwrap.dedent(
    """
    import json
    from datetime import datetime, timezone
    from cuemap_integrations.capture import capture
    from tests.core.test_capture import CONVERSATION
    result = capture(CONVERSATION, session_id="s", now=datetime(2026, 3, 1, tzinfo=timezone.utc))
    print(json.dumps([r.to_dict() for r in result.records], ensure_ascii=False, sort_keys=True))
    print(json.dumps(result.skipped, ensure_ascii=False))
    """
)


def test_records_are_identical_under_any_hash_seed() -> None:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    outputs = []
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT], env=env, cwd=root, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] == outputs[2]
    assert len(json.loads(outputs[0].splitlines()[0])) == 7


def test_captured_records_can_be_stored_and_recalled() -> None:
    result = capture(CONVERSATION, session_id="s", now=T0)
    with CueMap(clock=lambda: T0 + timedelta(hours=1)) as cm:
        stored = cm.add_many(result.records)
        assert len(stored) == len(result.records) == len(cm)
        port = cm.recall("which port does the API use?", k=3)
        assert port.memory_ids[0] == result.records[0].memory_id
        cache = cm.recall("缓存用什么", k=3)
        assert any("Redis" in hit.memory.content for hit in cache)


def test_docstring_examples_run() -> None:
    outcome = doctest.testmod(capture_module)
    assert outcome.attempted > 0 and outcome.failed == 0


PIECES = [text for text, *_ in CASES] + [f"token={s}" for s in SECRETS] + ["\n", "。", "maybe"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=6), st.text(max_size=30))
def test_any_mix_captures_without_error_or_leak(pieces: list[str], noise: str) -> None:
    text = " ".join(pieces) + noise
    result = capture([("user", text), ("assistant", text)], session_id="s", now=T0)
    for secret in SECRETS:
        if secret not in noise:
            assert secret not in repr(result)
    assert all(len(s.excerpt) <= 40 for s in result.skipped)
    ids = [r.memory_id for r in result.records]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize(
    "text", ["Do we use tabs?", "When do we deploy to production?", "我们统一使用哪个端口？"]
)
def test_questions_are_not_captured_as_statements(text: str) -> None:
    result = capture([{"role": "user", "content": text}], session_id="q")
    assert result.records == () and [r for _, r in result.skipped] == ["question"]


def test_a_polite_explicit_request_is_still_captured() -> None:
    result = capture(
        [{"role": "user", "content": "Could you remember that the API uses port 8001?"}],
        session_id="q",
    )
    assert [r.content for r in result.records] == ["the API uses port 8001"]
