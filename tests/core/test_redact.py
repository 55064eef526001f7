"""Redaction: every class is caught in realistic text, negatives survive, secrets never leak."""

from __future__ import annotations

import doctest
from datetime import datetime, timezone

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cuemap_integrations import redact as redact_module
from cuemap_integrations.errors import ConfigError, SecretError, ValidationError
from cuemap_integrations.records import MemoryRecord
from cuemap_integrations.redact import (
    DEFAULT_POLICY,
    PATTERNS,
    RedactionPolicy,
    SecretClass,
    redact,
    redact_mapping,
)

STRICT = RedactionPolicy.strict()
C = SecretClass


def cn_id(first17: str) -> str:
    """A resident ID with its ISO 7064 MOD 11-2 check character (computed independently)."""
    total = sum(int(d) * (2 ** (17 - i) % 11) for i, d in enumerate(first17))
    return first17 + "10X98765432"[total % 11]


ID_1 = cn_id("11010519491231002")  # the well-known sample, ends in X
ID_2 = cn_id("44030419900307123")
ID_3 = cn_id("31011520011111456")

# (class, text, the secret substring that must disappear)
POSITIVE: list[tuple[SecretClass, str, str]] = [
    (C.API_KEY, "my key is sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z ok", "Ab3dEf6hIj9kLm2nOp5q"),
    (
        C.API_KEY,
        "OPENAI_API_KEY=sk-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3dEf6hIj9kLm2n",
        "Ab3dEf6hIj9k",
    ),
    (C.API_KEY, "use sk-ant-api03-Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2-Rr1Qq0 for Claude", "Zz9Yy8Xx7Ww6"),
    (C.API_KEY, "push with ghp_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3d please", "Ab3dEf6hIj9kLm2n"),
    (C.API_KEY, "GH token github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "11ABCDEFG0123456789"),
    (C.API_KEY, "gitlab: glpat-Ab3dEf6hIj9kLm2nOp5q", "Ab3dEf6hIj9kLm2nOp5q"),
    (C.API_KEY, "slack bot xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOp", "1234567890123"),
    (C.API_KEY, "stripe sk_live_51H8abcdefghijklmnop and rk_live_51H8zyxwvutsrqponm", "51H8"),
    (C.API_KEY, "aws id AKIAIOSFODNN7EXAMPLE in prod", "IOSFODNN7EXAMPLE"),
    (
        C.API_KEY,
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI",
    ),
    (C.API_KEY, "maps key AIzaSyA-1234567890abcdefghijklmnopqrstu", "SyA-1234567890"),
    (C.API_KEY, "HF_TOKEN is hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "AbCdEfGhIjKlMnOp"),
    (C.API_KEY, 'config: {"api_key": "abc123def456ghi"}', "abc123def456ghi"),
    (C.API_KEY, "apikey: 0123456789abcdef", "0123456789abcdef"),
    (C.API_KEY, "set GITHUB_TOKEN=Zx9yW8vU7tS6rQ5p and retry", "Zx9yW8vU7tS6rQ5p"),
    (C.API_KEY, "client_secret: hunter2hunter2", "hunter2hunter2"),
    (C.API_KEY, "API 密钥是 a1b2c3d4e5f6g7，别外传", "a1b2c3d4e5f6g7"),
    (
        C.JWT,
        "token eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U expired",
        "dozjgNryP4J3jVmNHl0w5N",
    ),
    (
        C.JWT,
        "curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlMTIz'",
        "c2lnbmF0dXJlMTIz",
    ),  # fmt: skip
    (
        C.JWT,
        "id_token:eyJraWQiOiIxIn0.eyJpc3MiOiJodHRwczovL2EifQ.QWxhZGRpbjpvcGVuIHNlc2FtZQ",
        "QWxhZGRpbjpvcGVu",
    ),  # fmt: skip
    (C.BEARER, "Authorization: Bearer abcdef0123456789abcdef", "abcdef0123456789abcdef"),
    (C.BEARER, "header Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA"),
    (C.BEARER, "send it as bearer 9f8e7d6c5b4a39281706f5e4", "9f8e7d6c5b4a39281706f5e4"),
    (C.PASSWORD, "password=hunter2", "hunter2"),
    (C.PASSWORD, "login with password: Summer2024! then", "Summer2024"),
    (C.PASSWORD, "DB_PASSWORD=s3cr3t-Pw", "s3cr3t-Pw"),
    (C.PASSWORD, "passwd=correct-horse", "correct-horse"),
    (C.PASSWORD, "ssh pwd=abc123xyz", "abc123xyz"),
    (C.PASSWORD, '{"user": "bob", "password": "p@ss w0rd"}', "p@ss w0rd"),
    (C.PASSWORD, "my password is hunter2.", "hunter2"),
    (C.PASSWORD, "数据库密码是abc123，别告诉别人", "abc123"),
    (C.PASSWORD, "密码：Qwe!2345", "Qwe!2345"),
    (C.PASSWORD, "服务器口令为x9y8z7。", "x9y8z7"),
    (
        C.PRIVATE_KEY,
        "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7secret\nZZZ\n-----END RSA PRIVATE KEY-----\nthanks",
        "MIIEowIBAAKCAQEA7secret",
    ),
    (
        C.PRIVATE_KEY,
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAA",
    ),
    (
        C.PRIVATE_KEY,
        "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBsecretbits\n",
        "MHcCAQEEIBsecretbits",
    ),
    (
        C.CONNECTION_STRING,
        "DATABASE_URL postgresql://admin:s3cr3tPw@db.example.com:5432/app",
        "s3cr3tPw",
    ),  # fmt: skip
    (C.CONNECTION_STRING, "mongodb+srv://u:p%40ssW0rd@cluster0.x.mongodb.net/db", "p%40ssW0rd"),
    (C.CONNECTION_STRING, "cache at redis://:foobared99@localhost:6379/0", "foobared99"),
    (C.CONNECTION_STRING, "broker amqp://guest:guestpw@rabbit:5672/", "guestpw"),
    (C.CONNECTION_STRING, "mysql://root:p@ssWd@10.0.0.1/db", "p@ssWd"),
    (C.EMAIL, "mail me at alice.smith+tag@example.co.uk today", "alice.smith+tag"),
    (C.EMAIL, "我的邮箱是 zhang.san@qq.com", "zhang.san"),
    (C.EMAIL, "cc: Bob_O@example.org.", "Bob_O"),
    (C.PHONE, "call +86 138 0013 8000 tonight", "138 0013 8000"),
    (C.PHONE, "我的手机13800138000", "13800138000"),
    (C.PHONE, "office (555) 123-4567", "123-4567"),
    (C.PHONE, "+1 (555) 987-6543 is the desk", "987-6543"),
    (C.PHONE, "fax 555-321-7654", "321-7654"),
    (C.CN_ID, f"身份证号 {ID_1}", ID_1),
    (C.CN_ID, f"ID:{ID_2}.", ID_2),
    (C.CN_ID, f"证件{ID_3}已登记", ID_3),
]

SECRET_CLASSES = {C.API_KEY, C.JWT, C.BEARER, C.PASSWORD, C.PRIVATE_KEY, C.CONNECTION_STRING}

NEGATIVE = [
    "request 550e8400-e29b-41d4-a716-446655440000 failed",
    "fixed in da39a3ee5e6b4b0d3255bfef95601890afd80709",
    "see commit a1b2c3d",
    "The API uses port 8001",
    "connect to localhost:5432",
    "GET https://api.example.com/v1/orders",
    "upgrade to v2.1.0",
    "order number 110105194912310022",
    "reset your password on the login page",
    "the password is required",
    "group by user_id",
    "task-skip and task-skipped-because-flaky-2",
    "meeting on 2023-05-08",
    "run clear-cache after deploy",
    "max_tokens: 4096",
    "the bearer of bad news",
    "basic authentication is fine",
    "密码是什么?",
    "ssh://git@github.com:22/org/repo.git",
]


def test_every_class_has_several_samples() -> None:
    for secret in SecretClass:
        if secret is not C.PRIVATE_SPAN:
            assert sum(1 for c, _, _ in POSITIVE if c is secret) >= 3, secret


@pytest.mark.parametrize(("secret", "text", "needle"), POSITIVE)
def test_each_sample_is_caught_under_strict(secret: SecretClass, text: str, needle: str) -> None:
    report = redact(text, STRICT)
    assert report.text is not None
    assert needle not in report.text
    assert f"[REDACTED:{secret.value}]" in report.text
    assert report.counts.get(secret.value, 0) >= 1
    assert report.changed and not report.dropped
    assert needle not in repr(report.as_dict())
    assert needle not in repr(report)


@pytest.mark.parametrize(("secret", "text", "needle"), POSITIVE)
def test_default_policy_redacts_secrets_and_keeps_personal_data(
    secret: SecretClass, text: str, needle: str
) -> None:
    report = redact(text)
    assert report.text is not None
    if secret in SECRET_CLASSES:
        assert needle not in report.text
    else:
        assert report.text == text
        assert report.counts == {}


@pytest.mark.parametrize("text", NEGATIVE)
@pytest.mark.parametrize("policy", [DEFAULT_POLICY, STRICT], ids=["default", "strict"])
def test_negative_samples_survive_untouched(text: str, policy: RedactionPolicy) -> None:
    report = redact(text, policy)
    assert report.text == text
    assert report.counts == {}
    assert not report.changed


def test_key_names_stay_and_only_values_go() -> None:
    assert redact("api_key=abcdef123456 next").text == "api_key=[REDACTED:api_key] next"
    assert redact("password: hunter2\nuser: bob").text == "password: [REDACTED:password]\nuser: bob"
    assert redact("密码是abc123").text == "密码是[REDACTED:password]"
    assert redact("password:\nnext line").text == "password:\nnext line"


def test_connection_string_keeps_host_and_database() -> None:
    text = "postgresql://admin:s3cr3t@db.internal:5432/orders"
    assert redact(text).text == "postgresql://[REDACTED:connection_string]@db.internal:5432/orders"


def test_bearer_jwt_is_counted_once_as_jwt() -> None:
    text = "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlMTIz"
    report = redact(text)
    assert report.text == "Authorization: Bearer [REDACTED:jwt]"
    assert dict(report.counts) == {"jwt": 1}


def test_counts_follow_first_occurrence() -> None:
    text = "a@b.io then password=x1 then sk-proj-Ab3dEf6hIj9kLm2nOp5q and c@d.io"
    report = redact(text, STRICT)
    assert list(report.counts.items()) == [("email", 2), ("password", 1), ("api_key", 1)]


def test_kept_email_is_not_eaten_by_the_phone_rule() -> None:
    policy = DEFAULT_POLICY.with_actions(phone="redact")
    text = "write to 13800138000@qq.com or call 13900139000"
    assert redact(text, policy).text == "write to 13800138000@qq.com or call [REDACTED:phone]"


# --- private spans --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("before <private>my diary</private> after", "before [REDACTED:private] after"),
        ("x <PRIVATE>a\nb\nc</Private> y", "x [REDACTED:private] y"),
        ("keep this <private>and not this\nnor this", "keep this [REDACTED:private]"),
        ("a <private>1 <private>2</private> 3</private> b", "a [REDACTED:private] b"),
        (
            "a <private>1</private> b <private>2</private> c",
            "a [REDACTED:private] b [REDACTED:private] c",
        ),  # fmt: skip
        ("< private >x</ private >", "[REDACTED:private]"),
    ],
)
def test_private_spans_are_always_removed(text: str, expected: str) -> None:
    everything_kept = RedactionPolicy(
        {c: ("redact" if c is C.PRIVATE_SPAN else "keep") for c in SecretClass}
    )
    for policy in (DEFAULT_POLICY, STRICT, everything_kept):
        report = redact(text, policy)
        assert report.text == expected
        assert report.counts["private"] >= 1


def test_private_span_hides_secrets_inside_without_counting_them() -> None:
    report = redact("<private>password=hunter2 sk-proj-Ab3dEf6hIj9kLm2nOp5q</private>")
    assert report.text == "[REDACTED:private]"
    assert dict(report.counts) == {"private": 1}


def test_private_can_drop_but_never_keep() -> None:
    policy = DEFAULT_POLICY.with_actions(private="drop")
    assert redact("ok <private>x</private>", policy).dropped
    with pytest.raises(ConfigError) as info:
        DEFAULT_POLICY.with_actions(private="keep")
    assert "never kept" in str(info.value)


# --- drop policy ----------------------------------------------------------------------------


def test_drop_policy_drops_the_whole_text() -> None:
    policy = DEFAULT_POLICY.with_actions(api_key="drop")
    report = redact("here: sk-proj-Ab3dEf6hIj9kLm2nOp5q", policy)
    assert report.text is None and report.dropped and report.changed
    assert report.as_dict() == {"dropped": True, "counts": {"api_key": 1}}
    clean = redact("nothing secret here", policy)
    assert clean.text == "nothing secret here" and not clean.dropped and not clean.changed


def test_drop_applies_to_opt_in_classes_too() -> None:
    policy = DEFAULT_POLICY.with_actions(email="drop")
    assert redact("mail bob@example.com", policy).dropped
    assert redact("mail nobody", policy).text == "mail nobody"


# --- policy validation ----------------------------------------------------------------------


def test_default_policy_table() -> None:
    assert RedactionPolicy() == DEFAULT_POLICY
    for secret in SecretClass:
        opt_in = secret in (C.EMAIL, C.PHONE, C.CN_ID)
        assert DEFAULT_POLICY.action(secret) == ("keep" if opt_in else "redact")
        assert STRICT.action(secret) == "redact"
    assert "email='keep'" in repr(DEFAULT_POLICY)


def test_with_actions_returns_a_copy() -> None:
    changed = DEFAULT_POLICY.with_actions(email="redact")
    assert changed.action(C.EMAIL) == "redact"
    assert DEFAULT_POLICY.action(C.EMAIL) == "keep"


def test_unknown_class_name_lists_valid_ones() -> None:
    with pytest.raises(ConfigError) as info:
        DEFAULT_POLICY.with_actions(emial="redact")  # type: ignore[arg-type]
    message = str(info.value)
    assert "'emial'" in message
    for secret in SecretClass:
        assert secret.value in message


def test_unknown_action_lists_valid_ones() -> None:
    with pytest.raises(ConfigError) as info:
        DEFAULT_POLICY.with_actions(email="hide")  # type: ignore[arg-type]
    message = str(info.value)
    assert "'hide'" in message and "with_actions.email" in message
    assert "redact, drop, keep" in message


def test_constructor_validates_and_copies() -> None:
    given = {"jwt": "drop"}
    policy = RedactionPolicy(given)  # type: ignore[arg-type]
    assert policy.action(C.JWT) == "drop"
    assert policy.action(C.EMAIL) == "redact"  # classes left out are redacted
    assert given == {"jwt": "drop"}
    with pytest.raises(ConfigError, match="'nope'"):
        RedactionPolicy({"nope": "keep"})  # type: ignore[dict-item]


def test_redact_refuses_non_strings() -> None:
    with pytest.raises(ValidationError):
        redact(42)  # type: ignore[arg-type]


# --- mappings -------------------------------------------------------------------------------


def test_redact_mapping_redacts_strings_and_secret_keys_without_mutating() -> None:
    original = {
        "env": {"DB_PASSWORD": "hunter2", "port": 8001, "tags": ["a", "token=abcdefgh1234"]},
        "note": "Bearer abcdefghijklmnop1234",
        "sk-proj-Ab3dEf6hIj9kLm2nOp5q": True,
    }
    snapshot = repr(original)
    value, counts, dropped = redact_mapping(original)
    assert repr(original) == snapshot
    assert value == {
        "env": {
            "DB_PASSWORD": "[REDACTED:password]",
            "port": 8001,
            "tags": ["a", "token=[REDACTED:api_key]"],
        },
        "note": "Bearer [REDACTED:bearer_token]",
        "[REDACTED:api_key]": True,
    }
    assert counts == {"password": 1, "api_key": 2, "bearer_token": 1}
    assert not dropped


def test_redact_mapping_keeps_colliding_keys_apart() -> None:
    value, counts, _ = redact_mapping(
        {"sk-proj-Ab3dEf6hIj9kLm2nOp5q": 1, "sk-proj-Zz3dEf6hIj9kLm2nOp5q": 2}
    )
    assert value == {"[REDACTED:api_key]": 1, "[REDACTED:api_key]#2": 2}
    assert counts == {"api_key": 2}


def test_redact_mapping_drop_and_validation() -> None:
    policy = DEFAULT_POLICY.with_actions(password="drop")
    result = redact_mapping({"a": "fine", "b": ["password=x1"]}, policy)
    assert result.value is None and result.dropped and result.counts == {"password": 1}
    with pytest.raises(ValidationError):
        redact_mapping({"x": object()})
    assert redact_mapping(("a", 1)).value == ["a", 1]


# --- properties -----------------------------------------------------------------------------

PIECES = [text for _, text, _ in POSITIVE] + NEGATIVE + ["<private>", "</private>", "密码", "="]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=6),
    st.lists(st.sampled_from([" ", "\n", ", ", "", "。", " and "]), min_size=6, max_size=6),
    st.sampled_from([DEFAULT_POLICY, STRICT]),
)
def test_redaction_is_idempotent(
    pieces: list[str], seps: list[str], policy: RedactionPolicy
) -> None:
    text = "".join(p + s for p, s in zip(pieces, seps, strict=False))
    once = redact(text, policy)
    assert once.text is not None
    again = redact(once.text, policy)
    assert again.text == once.text
    assert again.counts == {}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(POSITIVE), min_size=1, max_size=5))
def test_no_secret_survives_a_mix(samples: list[tuple[SecretClass, str, str]]) -> None:
    text = " | ".join(text for _, text, _ in samples)
    report = redact(text, STRICT)
    assert report.text is not None
    for _, _, needle in samples:
        assert needle not in report.text
        assert needle not in repr(report.as_dict())


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_arbitrary_text_never_crashes_and_is_idempotent(text: str) -> None:
    once = redact(text, STRICT)
    assert once.text is not None
    assert redact(once.text, STRICT).text == once.text


def test_rule_table_is_data() -> None:
    assert all(isinstance(secret, SecretClass) for secret, _ in PATTERNS)
    assert {secret for secret, _ in PATTERNS} == set(SecretClass) - {C.PRIVATE_SPAN}


def test_docstring_examples_run() -> None:
    result = doctest.testmod(redact_module)
    assert result.attempted > 0 and result.failed == 0


def _general_redact_record(record, policy):  # type: ignore[no-untyped-def]
    """redact_record without its screen-only shortcut (the reference it must agree with)."""
    shortcut = redact_module._plainly_clean_record
    redact_module._plainly_clean_record = lambda _record: False
    try:
        return redact_module.redact_record(record, policy, 0)
    finally:
        redact_module._plainly_clean_record = shortcut


_TEXTS = [text for _, text, _ in POSITIVE] + ["plain words", "call me at 5pm", "a_b 12 <i>"]


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(_TEXTS)
    | st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=60).filter(str.strip),
    st.sampled_from([{}, {"i": 3}, {"speaker": "Ann"}, {"password": "hunter2"}]),
    st.sampled_from([(), ("tag",)]),
    st.sampled_from(["derived", "given"]),
    st.sampled_from([DEFAULT_POLICY, STRICT]),
)
def test_redact_record_shortcut_returns_what_the_general_path_does(
    content: str, metadata: dict, tags: tuple, origin: str, policy: RedactionPolicy
) -> None:
    """A record the screen passes as clean is returned as it is, exactly as the general path
    (reports per text, count merge, drop checks) returns it."""
    when = datetime(2024, 1, 1, tzinfo=timezone.utc)
    record = MemoryRecord(
        "m", content, when, when, cues=("cue",), tags=tags, metadata=metadata, cue_origin=origin
    )
    try:
        expected = _general_redact_record(record, policy)
    except SecretError:
        assert not redact_module._plainly_clean_record(record)
        return
    got = redact_module.redact_record(record, policy, 0)
    assert got == expected
    if redact_module._plainly_clean_record(record):
        assert got is record and expected is record


_ASSIGNMENT_PIECES = st.sampled_from(
    ["key", "KEY", "Token", "secret", "credential", "credentials", "password", "passwd", "pwd",
     "passphrase", "api_", "monkey", "\u212aey", "\u017fecret", "\u0130", '"', "'", " ", "\t",
     ":", "=", "\n", "x", "é", "-"]
)  # fmt: skip


@settings(max_examples=2000, deadline=None)
@given(st.lists(_ASSIGNMENT_PIECES, max_size=10).map("".join))
def test_the_assignment_prefilters_answer_as_their_patterns(text: str) -> None:
    """_AssignedWord.search (a look at the text's `:` and `=` first) finds a match exactly
    when its pattern does, in ASCII text and in text with the letters IGNORECASE folds."""
    for prefilter in redact_module._SECOND_PREFILTERS.values():
        if isinstance(prefilter, redact_module._AssignedWord):
            expected = prefilter.pattern.search(text)
            got = prefilter.search(text)
            assert (got is None) is (expected is None)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(_TEXTS), st.sampled_from([{}, {"i": 3}, {"password": "hunter2"}])
        ),
        max_size=5,
    ),
    st.sampled_from([DEFAULT_POLICY, STRICT, DEFAULT_POLICY.with_actions(api_key="drop"), None]),
)
def test_redacting_pairs_in_place_is_redact_record_of_each(
    drawn: list[tuple[str, dict[str, object]]], policy: RedactionPolicy | None
) -> None:
    """redact_pairs: each pair's record as redact_record returns it (the same object when it
    is unchanged), its flag kept; or redact_record's first SecretError, naming its position."""
    when = datetime(2024, 1, 1, tzinfo=timezone.utc)
    records = [
        MemoryRecord(f"m{i}", text, when, when, metadata=meta, cue_origin="derived")
        for i, (text, meta) in enumerate(drawn)
    ]
    pairs = [(record, i) for i, record in enumerate(records)]
    try:
        expected = [(redact_module.redact_record(r, policy, i), i) for r, i in pairs]
    except SecretError as error:
        with pytest.raises(SecretError) as raised:
            redact_module.redact_pairs(pairs, policy)
        assert str(raised.value) == str(error)
        return
    redact_module.redact_pairs(pairs, policy)
    assert pairs == expected
    for (got, _), (want, _), record in zip(pairs, expected, records, strict=True):
        assert (got is record) is (want is record)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([*_TEXTS, "hello <b> world", "x <private>k</private>"])
            | st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=60).filter(
                str.strip
            ),
            st.sampled_from([{}, {"i": 3}, {"password": "hunter2"}]),
            st.sampled_from([(), ("tag",)]),
            st.sampled_from(["derived", "given"]),
        ),
        max_size=8,
    ),
    st.booleans(),
)
@example([("hello <b> world", {}, (), "derived"), ("plain words", {"i": 3}, (), "derived")], True)
def test_a_batch_is_found_plainly_clean_record_by_record(
    rows: list[tuple[str, dict, tuple, str]], compiled: bool
) -> None:
    """The batch's screen (redact._plainly_clean_records: one C screen per content) says of
    each record what _plainly_clean_record says, with the text extension or without it."""
    when = datetime(2024, 1, 1, tzinfo=timezone.utc)
    records = [
        MemoryRecord(
            "m", content, when, when, cues=("cue",), tags=tags, metadata=metadata, cue_origin=origin
        )  # fmt: skip
        for content, metadata, tags, origin in rows
    ]
    saved = redact_module._text._C
    redact_module._text._C = saved if compiled else None
    try:
        got = redact_module._plainly_clean_records(records)
        expected = [redact_module._plainly_clean_record(record) for record in records]
    finally:
        redact_module._text._C = saved
    assert got == expected


# texts the screen finds a trigger in (so the rules it found are tried), with and without a
# match, long (no cache) and short, and texts it leaves to the general path
_SCREENED = [
    "my passion is painting and we passed the test", "the api key is sk-" + "a" * 30,
    "password: hunter2 and more words to be long enough for the uncached path",
    "call 555-0100 or +1 555 0100", "a.b-c+d", "token", "x" * 70 + " secret", "pass",
    "naïve password: hunter2", "<private>k</private> and words",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(_SCREENED + _TEXTS)
        | st.text(st.sampled_from("ps aw-+.1_orkeyé<"), max_size=80)
        | st.text(st.characters(blacklist_categories=("Cs",)), max_size=80),
        max_size=8,
    )
)
def test_a_batch_screen_is_may_hold_secret_of_each_text(texts: list[str]) -> None:
    """redact._may_hold_secrets (which tries the rules its own screen found, without
    _may_match's second screen) says of each text what _may_hold_secret says."""
    assert redact_module._may_hold_secrets(texts) == [
        redact_module._may_hold_secret(text) for text in texts
    ]
