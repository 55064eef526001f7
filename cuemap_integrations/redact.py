"""Secret and personal-data redaction: secrets never reach storage or a prompt.

Detection is a table of regular expressions (:data:`PATTERNS`), applied in order to one text.
Each match is either replaced by a placeholder such as ``[REDACTED:api_key]``, makes the whole
text be dropped, or is kept, as a :class:`RedactionPolicy` says per :class:`SecretClass`.

Order and overlap: every rule sees the text with the spans earlier rules claimed blanked out,
so a JWT after ``Bearer`` is counted once (as ``jwt``), and a kept e-mail address is never
half-eaten by the phone rule. Where a rule has a ``value`` group (``password=...``,
``api_key: ...``, the ``user:pass`` of a URL) only that group is replaced and the key name
stays readable. Placeholders never match any rule, so redaction is idempotent.

Decisions:
    * ``<private>...</private>`` spans (case-insensitive, multi-line, nested, or unclosed to
      the end of the text) are cut first by a depth-counting scanner, whatever the policy says
      (``"keep"`` is refused for them; ``"drop"`` drops the whole text).
    * Connection strings: only the ``user:password`` part of a URL is replaced
      (``postgresql://[REDACTED:connection_string]@db:5432/app``): the host and database are
      useful memory, and the credential is what must not leak. Any scheme counts.
    * Passwords in prose (``my password is hunter2``) are caught only when the value contains a
      non-letter, so "the password is required" survives.
    * Personal data (e-mail, phone, Chinese resident ID) is kept by default (opt-in) and
      redacted by :meth:`RedactionPolicy.strict`. Resident IDs need a valid birth date and the
      ISO 7064 MOD 11-2 check character, so random 18-digit numbers are not flagged.

Example:
    >>> redact("key sk-proj-Ab3dEf6hIj9kLm2nOp5q and password=hunter2").text
    'key [REDACTED:api_key] and password=[REDACTED:password]'
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from itertools import compress, product
from operator import not_
from typing import Literal, NamedTuple, Protocol, TypeVar

from . import text as _text
from .errors import ConfigError, SecretError, ValidationError
from .records import JSONValue, MemoryRecord, json_safe_copy
from .text import derive_cues, has_ascii_digit

__all__ = [
    "ACTIONS",
    "DEFAULT_POLICY",
    "PATTERNS",
    "VALIDATORS",
    "Action",
    "MappingRedaction",
    "RedactionPolicy",
    "RedactionReport",
    "SecretClass",
    "placeholder",
    "redact",
    "redact_mapping",
    "redact_pairs",
    "redact_record",
]


class SecretClass(str, Enum):
    """A kind of secret or personal data; the value is the placeholder name."""

    API_KEY = "api_key"
    JWT = "jwt"
    BEARER = "bearer_token"
    PASSWORD = "password"
    PRIVATE_KEY = "private_key"
    CONNECTION_STRING = "connection_string"
    PRIVATE_SPAN = "private"
    EMAIL = "email"
    PHONE = "phone"
    CN_ID = "cn_id"


Action = Literal["redact", "drop", "keep"]
ACTIONS: tuple[Action, ...] = ("redact", "drop", "keep")
_OPT_IN = (SecretClass.EMAIL, SecretClass.PHONE, SecretClass.CN_ID)
_CLASS_NAMES = ", ".join(c.value for c in SecretClass)


def placeholder(secret: SecretClass) -> str:
    """The text that replaces a redacted span.

    Example:
        >>> placeholder(SecretClass.JWT)
        '[REDACTED:jwt]'
    """
    return f"[REDACTED:{secret.value}]"


# --------------------------------------------------------------------------------------------
# The rule table
# --------------------------------------------------------------------------------------------

_B = r"(?<![A-Za-z0-9_\-])"  # not inside an ASCII identifier
_E = r"(?![A-Za-z0-9_\-])"
_FRESH = r"(?!\[REDACTED:)"  # never re-redact a placeholder (idempotence)
_ASSIGN = r"[\"']?[ \t]*[:=]"  # the `=` or `:` after a key name, maybe quoted
_SEP = rf"{_ASSIGN}[ \t]*"  # `key = `, `"key": `, `KEY:` (never across a line)


def _t(char_class: str) -> str:
    """One character of ``char_class`` that does not start a placeholder.

    Values stop at a placeholder exactly as they stop at a blanked span in the first pass,
    which is what keeps a second pass from finding anything new.
    """
    return r"(?:(?!\[REDACTED:)" + char_class + ")"


# Spans claimed by earlier rules are blanked with \x00, so no value may contain one.
_DQ = _t(r'[^"\\\n\x00]')  # inside "..."
_SQ = _t(r"[^'\\\n\x00]")  # inside '...'
_BARE = _t(r"[^\s\x00\"'`]")
_BARE_END = _t(r"[^\s\x00\"'`.,;:)\]}>]")
_CJK_CHAR = _t(r"[^\s\x00，。；、！？“”\"'（）]")
_URL_USER = _t(r"[^\s/:@\x00\"'<>]")
_URL_PASS = _t(r"[^\s/\x00\"'<>]")
# A value: quoted (escapes allowed), or a bare run not ending in `.,;:` or a closing bracket
# (`Summer2024!` keeps its `!`: a leaked character is worse than an eaten one).
_VALUE = rf"(?P<value>\"(?:{_DQ}|\\.)+\"|'(?:{_SQ}|\\.)+'|{_BARE}*{_BARE_END})"
_CJK_VALUE = rf"(?P<value>{_CJK_CHAR}+)"
_PASSWORD_WORDS = ("password", "passwd", "passphrase", "pwd")
_PASSWORD_WORD = f"(?:{'|'.join(_PASSWORD_WORDS)})"
_PASSWORD_KEY = rf"[A-Za-z0-9_.\-]*{_PASSWORD_WORD}"
_TOKEN_WORD = (
    r"(?:api[_\-]?key|apikey|api[_\-]?token|access[_\-]?token|auth[_\-]?token"
    r"|refresh[_\-]?token|id[_\-]?token|session[_\-]?token|client[_\-]?secret|secret[_\-]?key"
    r"|private[_\-]?key|access[_\-]?key|private[_\-]?token|secret|token|credentials?)"
)
_TOKEN_KEY = rf"[A-Za-z0-9_.\-]*{_TOKEN_WORD}"
_AUTH_SCHEMES = r"(?:basic|bearer|token|digest|negotiate)"


def _rx(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags)


_I = re.IGNORECASE

PATTERNS: tuple[tuple[SecretClass, re.Pattern[str]], ...] = (
    # PEM private keys (RSA, EC, OPENSSH, ENCRYPTED, PGP ... BLOCK); unclosed: to the end.
    (SecretClass.PRIVATE_KEY, _rx(
        r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|\Z)"
    )),
    # Credentials in a URL: scheme://user:password@host -> only `user:password` is replaced.
    (SecretClass.CONNECTION_STRING, _rx(
        rf"{_B}[A-Za-z][A-Za-z0-9+.\-]*://{_FRESH}"
        rf"(?P<value>{_URL_USER}*:{_URL_PASS}+)@(?=[^\s@\x00])"
    )),
    # JSON Web Tokens: base64url header (always `eyJ`), payload and signature.
    (SecretClass.JWT, _rx(rf"{_B}eyJ[A-Za-z0-9_\-]{{4,}}\.[A-Za-z0-9_\-]{{4,}}\.[A-Za-z0-9_\-]{{8,}}")),
    # HTTP credentials: `Authorization: Basic ...` and a bare `Bearer <token>`.
    (SecretClass.BEARER, _rx(
        rf"{_B}(?:proxy-)?authorization{_SEP}[\"']?(?:{_AUTH_SCHEMES}[ \t]+)?{_FRESH}"
        rf"(?!{_AUTH_SCHEMES}\b)(?P<value>[A-Za-z0-9._~+/\-]{{8,}}=*)", _I
    )),
    (SecretClass.BEARER, _rx(rf"{_B}bearer[ \t]+{_FRESH}(?P<value>[A-Za-z0-9._~+/\-]{{16,}}=*)", _I)),
    # Provider keys by their documented prefixes.
    (SecretClass.API_KEY, _rx(  # OpenAI sk- / sk-proj- ..., Anthropic sk-ant-: needs a digit
        rf"{_B}sk-(?:ant-|proj-|svcacct-|admin-)?(?=[A-Za-z0-9_\-]*\d)[A-Za-z0-9_\-]{{20,}}"
    )),
    (SecretClass.API_KEY, _rx(rf"{_B}(?:gh[pousr]_[A-Za-z0-9]{{30,}}|github_pat_[A-Za-z0-9_]{{22,}})")),
    (SecretClass.API_KEY, _rx(rf"{_B}glpat-[A-Za-z0-9_\-]{{20,}}")),  # GitLab
    (SecretClass.API_KEY, _rx(rf"{_B}xox[abposr]-[A-Za-z0-9\-]{{10,}}")),  # Slack
    (SecretClass.API_KEY, _rx(rf"{_B}(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{{16,}}")),  # Stripe
    (SecretClass.API_KEY, _rx(rf"{_B}(?:AKIA|ASIA)[A-Z0-9]{{16}}{_E}")),  # AWS access key id
    (SecretClass.API_KEY, _rx(rf"{_B}AIza[A-Za-z0-9_\-]{{35}}")),  # Google
    (SecretClass.API_KEY, _rx(rf"{_B}hf_[A-Za-z0-9]{{30,}}")),  # Hugging Face
    (SecretClass.API_KEY, _rx(rf"{_B}npm_[A-Za-z0-9]{{36}}")),  # npm
    (SecretClass.API_KEY, _rx(rf"{_B}SG\.[A-Za-z0-9_\-]{{22}}\.[A-Za-z0-9_\-]{{43}}")),  # SendGrid
    (SecretClass.API_KEY, _rx(  # AWS secret access key (40 chars, no prefix of its own)
        rf"{_B}aws_?secret(?:_?access_?key)?{_SEP}[\"']?{_FRESH}(?P<value>[A-Za-z0-9/+]{{40}})(?![A-Za-z0-9/+])",
        _I,
    )),
    # Passwords: `password=...`, `"passwd": "..."`, `DB_PASSWORD: ...`, prose, Chinese.
    (SecretClass.PASSWORD, _rx(rf"{_B}{_PASSWORD_KEY}{_SEP}{_FRESH}{_VALUE}", _I)),
    (SecretClass.PASSWORD, _rx(
        rf"\bpassword[ \t]+(?:is|was|will be)[ \t]*:?[ \t]+{_FRESH}(?=\S*[^A-Za-z\s]){_VALUE}", _I
    )),
    (SecretClass.PASSWORD, _rx(
        r"(?:密码|密碼|口令)[ \t]*(?:是|为|為|:|：|=|改成了?|改为|设置为|设为)[ \t]*"
        rf"(?!什么|多少|啥){_FRESH}{_CJK_VALUE}"
    )),
    # Generic secrets by key name: `api_key=...`, `GITHUB_TOKEN: ...`, `client_secret`, 密钥.
    (SecretClass.API_KEY, _rx(rf"{_B}{_TOKEN_KEY}{_SEP}{_FRESH}(?=[\"']?{_BARE}{{8}}){_VALUE}", _I)),
    (SecretClass.API_KEY, _rx(
        rf"(?:api[ \t]*key|密钥|秘钥|令牌)[ \t]*(?:是|为|為|:|：|=)[ \t]*{_FRESH}(?={_CJK_CHAR}{{6}}){_CJK_VALUE}", _I
    )),
    # Personal data (kept unless the policy says otherwise).
    (SecretClass.EMAIL, _rx(
        r"(?<![A-Za-z0-9._%+\-/])[A-Za-z0-9._%+\-]+@(?:[A-Za-z0-9\-]+\.)+[A-Za-z]{2,}(?![A-Za-z0-9\-])"
    )),
    (SecretClass.CN_ID, _rx(
        rf"{_B}[1-9]\d{{5}}(?:18|19|20)\d{{2}}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{{3}}[\dXx]{_E}"
    )),
    (SecretClass.PHONE, _rx(  # international: +86 138 0013 8000, +1 (555) 123-4567
        r"(?<![A-Za-z0-9_+\-])\+\d{1,3}(?:[ .\-]?\(?\d{1,4}\)?){2,5}(?![A-Za-z0-9_\-])"
    )),
    (SecretClass.PHONE, _rx(rf"{_B}1[3-9]\d(?:[ \-]?\d{{4}}){{2}}{_E}")),  # Chinese mobile
    (SecretClass.PHONE, _rx(  # US: (555) 123-4567, 555-123-4567
        r"(?<![A-Za-z0-9_\-.(])(?:\(\d{3}\)[ .\-]?|\d{3}[.\-])\d{3}[.\-]\d{4}(?![A-Za-z0-9_\-])"
    )),
)  # fmt: skip
"""The detection rules, applied in this order (earlier rules claim their spans first)."""


def _cn_id_valid(text: str) -> bool:
    """ISO 7064 MOD 11-2 check character of an 18-character Chinese resident ID."""
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    total = sum(int(d) * w for d, w in zip(text[:17], weights, strict=True))
    return "10X98765432"[total % 11] == text[17].upper()


def _phone_valid(text: str) -> bool:
    return 7 <= sum(c.isdigit() for c in text) <= 15


VALIDATORS: Mapping[SecretClass, Callable[[str], bool]] = {
    SecretClass.CN_ID: _cn_id_valid,
    SecretClass.PHONE: _phone_valid,
}
"""Extra checks a match must pass (a checksum, a digit count) before it counts."""

_PRIVATE_TAG = re.compile(r"<\s*(/?)\s*private\s*>", re.IGNORECASE)

# --------------------------------------------------------------------------------------------
# Policy and report
# --------------------------------------------------------------------------------------------


def _coerce_class(name: object, field_name: str) -> SecretClass:
    if isinstance(name, SecretClass):
        return name
    for member in SecretClass:
        if name == member.value:
            return member
    raise ConfigError(field_name, name, f"choose from {_CLASS_NAMES}")


def _coerce_action(secret: SecretClass, action: object, field_name: str) -> Action:
    for allowed in ACTIONS:
        if action == allowed:
            break
    else:
        raise ConfigError(field_name, action, f"choose from {', '.join(ACTIONS)}")
    if secret is SecretClass.PRIVATE_SPAN and allowed == "keep":
        raise ConfigError(field_name, action, "'redact' or 'drop': <private> spans are never kept")
    return allowed


def _checked_actions(actions: Mapping[SecretClass, Action]) -> dict[SecretClass, Action]:
    """A full table in enum order; classes not listed are redacted (the safe side)."""
    if not isinstance(actions, Mapping):
        raise ConfigError("actions", actions, "a mapping of secret class to action")
    given = {_coerce_class(k, "actions"): v for k, v in actions.items()}
    out: dict[SecretClass, Action] = {}
    for secret in SecretClass:
        out[secret] = _coerce_action(secret, given.get(secret, "redact"), f"actions.{secret.value}")
    return out


def _default_actions() -> dict[SecretClass, Action]:
    return {c: ("keep" if c in _OPT_IN else "redact") for c in SecretClass}


@dataclass(frozen=True)
class RedactionPolicy:
    """What to do with each class of secret: ``"redact"``, ``"drop"`` the text, or ``"keep"``.

    The default redacts every secret class and keeps personal data (e-mail, phone, Chinese
    resident ID), which is opt-in. ``<private>`` spans are always removed.

    Attributes:
        actions: one action per :class:`SecretClass`; classes left out are redacted.

    Raises:
        ConfigError: an unknown class or action, or ``"keep"`` for ``private``.

    Example:
        >>> policy = RedactionPolicy().with_actions(email="redact", jwt="drop")
        >>> policy.action(SecretClass.EMAIL), policy.action(SecretClass.PHONE)
        ('redact', 'keep')
    """

    actions: Mapping[SecretClass, Action] = field(default_factory=_default_actions, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "actions", _checked_actions(self.actions))

    def __repr__(self) -> str:
        inner = ", ".join(f"{c.value}={a!r}" for c, a in self.actions.items())
        return f"RedactionPolicy({inner})"

    @classmethod
    def strict(cls) -> RedactionPolicy:
        """Redact everything, personal data included.

        Example:
            >>> RedactionPolicy.strict().action(SecretClass.PHONE)
            'redact'
        """
        return cls({c: "redact" for c in SecretClass})

    def action(self, secret: SecretClass) -> Action:
        """The action for ``secret``."""
        return self.actions[secret]

    def with_actions(self, **actions: Action) -> RedactionPolicy:
        """A copy with some actions changed, by class value name (``email="redact"``).

        Raises:
            ConfigError: an unknown class name or action; the message lists the valid ones.

        Example:
            >>> DEFAULT_POLICY.with_actions(password="drop").action(SecretClass.PASSWORD)
            'drop'
        """
        changed = dict(self.actions)
        for name, action in actions.items():
            secret = _coerce_class(name, "with_actions")
            changed[secret] = _coerce_action(secret, action, f"with_actions.{name}")
        return RedactionPolicy(changed)


DEFAULT_POLICY = RedactionPolicy()
"""Redact secrets, keep personal data, always remove ``<private>`` spans."""


@dataclass(frozen=True)
class RedactionReport:
    """The outcome of :func:`redact`: the safe text and what was found (never the secrets).

    Attributes:
        text: the redacted text, or None when the policy dropped it.
        dropped: whether a class with action ``"drop"`` was found.
        counts: class value -> number of spans redacted or dropped, in order of first
            occurrence in the text. Kept spans are not counted.

    Example:
        >>> report = redact("token=abcdef123456 <private>my diary</private>")
        >>> report.text, report.as_dict()
        ('token=[REDACTED:api_key] [REDACTED:private]', {'dropped': False, 'counts': {'api_key': 1, 'private': 1}})
    """

    text: str | None
    dropped: bool
    counts: Mapping[str, int] = field(default_factory=dict, hash=False)

    @property
    def changed(self) -> bool:
        """True when something was redacted or the text was dropped."""
        return self.dropped or bool(self.counts)

    def as_dict(self) -> dict[str, object]:
        """``{"dropped": ..., "counts": {...}}``: safe to log or store."""
        return {"dropped": self.dropped, "counts": dict(self.counts)}


# --------------------------------------------------------------------------------------------
# Redaction
# --------------------------------------------------------------------------------------------


class _Hit(NamedTuple):
    start: int
    end: int
    secret: SecretClass
    action: Action


def _private_spans(text: str) -> Iterator[tuple[int, int]]:
    """Outermost ``<private>`` spans; nesting is counted, an unclosed one runs to the end."""
    depth, start = 0, 0
    for tag in _PRIVATE_TAG.finditer(text):
        if not tag.group(1):
            start = tag.start() if depth == 0 else start
            depth += 1
        elif depth > 0:
            depth -= 1
            if depth == 0:
                yield start, tag.end()
    if depth > 0:
        yield start, len(text)


def _span(match: re.Match[str]) -> tuple[int, int]:
    return match.span("value") if "value" in match.re.groupindex else match.span()


def _rule_hits(masked: str, secret: SecretClass, pattern: re.Pattern[str]) -> list[tuple[int, int]]:
    check = VALIDATORS.get(secret)
    spans = []
    for match in pattern.finditer(masked):
        start, end = _span(match)
        if start < end and (check is None or check(masked[start:end])):
            spans.append((start, end))
    return spans


def _blank(masked: str, spans: list[tuple[int, int]]) -> str:
    """Blank claimed spans with NUL (same length, so positions stay those of the input)."""
    parts: list[str] = []
    last = 0
    for start, end in spans:
        parts.extend((masked[last:start], "\x00" * (end - start)))
        last = end
    parts.append(masked[last:])
    return "".join(parts)


def _screen_pattern() -> re.Pattern[str]:
    """All rules as one alternation (named groups dropped), to rule a text out in one scan."""
    parts = []
    for _, pattern in PATTERNS:
        body = pattern.pattern.replace("(?P<value>", "(?:")
        parts.append(f"(?i:{body})" if pattern.flags & re.IGNORECASE else f"(?:{body})")
    return re.compile("|".join(parts))


# Exact shortcut: if no rule matches the unmasked text, nothing is ever blanked, so no rule can
# match later either. Most memories hold no secret. _SCREEN (one alternation of every rule) says
# so in one scan, but that scan costs ~150 us on a 230-character turn; :func:`_may_match` gives
# the same answer by searching only the rules whose trigger occurs in the text (~10 us). _SCREEN
# stays as the reference the tests compare it with.
_SCREEN = _screen_pattern()

# Per rule of PATTERNS, in order: literals of which every match contains at least one. For the
# case-insensitive rules they are lower case and are looked up in the text folded by _FOLD plus
# lower(): under re.IGNORECASE an ASCII letter also matches exactly these four non-ASCII letters.
_TRIGGERS: tuple[tuple[str, ...], ...] = (
    ("-----BEGIN",), ("://",), ("eyJ",), ("authorization",), ("bearer",), ("sk-",),
    ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"), ("glpat-",), ("xox",), ("_live_", "_test_"), ("AKIA", "ASIA"),
    ("AIza",), ("hf_",), ("npm_",), ("SG.",), ("aws",), ("pass", "pwd"), ("password",),
    ("密码", "密碼", "口令"), ("key", "token", "secret", "credential"),
    ("api", "密钥", "秘钥", "令牌"), ("@",), ("18", "19", "20"), ("+",), ("1",), ("-", "."),
)  # fmt: skip
_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})
_FOLD_CHANGES = _text._changes_of(_FOLD)
# Second exact prefilters, for rules whose triggers are in many texts that hold no secret. The
# US phone rule's ("-", ".") are in almost every text, and each of its matches holds "ddd-dddd"
# or "ddd.dddd", hence _DIGIT_JOINED (a quick scan, where the rule's own search costs twice as
# much). "pass" (passion, passed) and "key"/"token" (monkey) are in a few texts in a hundred,
# and the password and secret-key rules cost 15-70 us each on such a text (their leading
# [A-Za-z0-9_.-]* is tried at every position): every match of theirs holds its key word right
# before `=` or `:`, which a scan for just that finds in a few microseconds.
_DIGIT_JOINED = re.compile(r"\d[.\-]\d")


class _Prefilter(Protocol):
    """A rule's second prefilter: a compiled pattern, or an object answering like one."""

    def search(self, text: str) -> object: ...


class _AssignedWord:
    """The second prefilter ``words`` + ``_ASSIGN`` (case-insensitive), whose own scan tries
    its alternation at every position of the text: ~35 us on a 250-character turn holding
    "key" (Keep, monkey), a few in a hundred bench memories. :meth:`search` looks first at the
    text's few ``:`` and ``=``: every match ends in one, right after one of ``endings`` (the
    last letters of ``words``' alternatives), maybe quoted, then blanks. Where none is, the
    answer is None, as the pattern's; else the pattern answers."""

    def __init__(self, words: str, endings: tuple[str, ...]) -> None:
        self.pattern = re.compile(f"{words}{_ASSIGN}", _I)
        self.endings = endings

    def search(self, text: str) -> re.Match[str] | None:
        if not _assigned_after(_folded(text), self.endings):
            return None
        return self.pattern.search(text)


def _assigned_after(folded: str, endings: tuple[str, ...]) -> bool:
    """Whether a ``:`` or ``=`` of ``folded`` (a text as :func:`_folded` folds it: the letters
    IGNORECASE matches, lower case) follows one of ``endings`` as ``_ASSIGN`` allows: blanks
    back from the sign, then maybe one quote, then the word."""
    for sign in ":=":
        at = folded.find(sign)
        while at >= 0:
            before = folded[:at].rstrip(" \t")
            if before.endswith(_QUOTES):
                before = before[:-1]
            if before.endswith(endings):
                return True
            at = folded.find(sign, at + 1)
    return False


_QUOTES = ('"', "'")
_SECOND_PREFILTERS: dict[tuple[str, ...], _Prefilter] = {
    ("-", "."): _DIGIT_JOINED,
    ("pass", "pwd"): _AssignedWord(_PASSWORD_WORD, _PASSWORD_WORDS),
    ("key", "token", "secret", "credential"): _AssignedWord(
        _TOKEN_WORD, ("key", "token", "secret", "credential", "credentials")
    ),
}
_NEEDS = tuple(map(_SECOND_PREFILTERS.get, _TRIGGERS))
# (pattern, its triggers, case-insensitive, its second prefilter or None)
_Rule = tuple[re.Pattern[str], tuple[str, ...], bool, "_Prefilter | None"]
_RULES: tuple[_Rule, ...] = tuple(
    (pattern, triggers, bool(pattern.flags & re.IGNORECASE), needs)
    for (_, pattern), triggers, needs in zip(PATTERNS, _TRIGGERS, _NEEDS, strict=True)
)


def _rules_for(ascii_text: bool, underscore: bool, digit: bool) -> tuple[_Rule, ...]:
    """:data:`_RULES` without the triggers that cannot occur in a text that is ASCII (then no
    CJK trigger can), has no "_" (then no trigger with one can) or has no ASCII digit (then
    no trigger with one can), and without rules left with no trigger: fewer substring
    searches, the same answer. In ASCII text without a digit, the ``\\d`` of _DIGIT_JOINED
    (which is Unicode-aware, so only in ASCII text) cannot match either: its rule goes too."""

    def possible(trigger: str) -> bool:
        return (
            (trigger.isascii() or not ascii_text)
            and ("_" not in trigger or underscore)
            and (digit or not has_ascii_digit(trigger))
        )

    rules: list[_Rule] = []
    for pattern, triggers, nocase, needs in _RULES:
        kept = tuple(filter(possible, triggers))
        if kept and not (needs is _DIGIT_JOINED and ascii_text and not digit):
            rules.append((pattern, kept, nocase, needs))
    return tuple(rules)


# (text is ASCII, text has "_", text has an ASCII digit) -> the rules and triggers to try
_RULES_FOR = {key: _rules_for(*key) for key in product((False, True), repeat=3)}
_RulesKey = tuple[bool, bool, bool]


def _rules_key(text: str) -> _RulesKey:
    """The key of the rules :func:`_may_match` tries on ``text`` (see :func:`_rules_for`)."""
    return text.isascii(), "_" in text, has_ascii_digit(text)


def _rules_of(text: str) -> tuple[_Rule, ...]:
    """The rules and triggers :func:`_may_match` tries on ``text`` (see :func:`_rules_for`)."""
    return _RULES_FOR[_rules_key(text)]


def _folded(text: str) -> str:
    """``text`` as the case-insensitive rules' triggers are looked up in (see _TRIGGERS)."""
    # the four letters _FOLD maps are not ASCII: ASCII text only needs lower(); other text is
    # scanned for them rather than translated (see text._translated: ~137,000 instructions a
    # 250-character memory holding an emoji, ~5 % of a bulk ingest's redaction)
    if text.isascii():
        return text.lower()
    return _text._translated(text, _FOLD, _FOLD_CHANGES).lower()


def _may_match(text: str) -> bool:
    """Whether some rule matches ``text`` (the answer of ``_SCREEN.search``, found faster)."""
    compiled = _text._C  # read per call: None (patched) means the Python rules alone
    if compiled is not None and _SCREEN_TABLE is not None and text.isascii():
        rules = compiled.screen(text, _SCREEN_TABLE)
    else:
        rules = _triggered_rules(text)
    return _some_rule_matches(text, rules)


def _some_rule_matches(text: str, rules: Iterable[_Rule]) -> bool:
    """Whether one of ``rules`` (those of ``text``'s key a trigger of which occurs in it)
    matches ``text``."""
    for pattern, _, _, needs in rules:
        if (needs is None or needs.search(text)) and pattern.search(text) is not None:
            return True
    return False


def _triggered_rules(text: str) -> list[_Rule]:
    """The rules of ``text``'s key (:func:`_rules_for`) of which a trigger occurs in it, in
    order: ``_textc.screen``'s twin (for any text; the C function takes ASCII text)."""
    folded = _folded(text)
    found = []
    for rule in _RULES_FOR[_rules_key(text)]:
        haystack = folded if rule[2] else text
        for trigger in rule[1]:  # a plain loop: any() with a generator costs more here
            if trigger in haystack:
                found.append(rule)
                break
    return found


def _screen_table() -> object:
    """The rules of each key of ASCII text, compiled for ``_textc.screen`` (None without it):
    one pass over the text finds its key and every rule's triggers, where a substring search
    per trigger (two dozen, each stopping at every "a", "s" or "t" of the text) and the
    key's three scans made the screen of a bench memory 27,000 instructions (10,500 now)."""
    if _text._C is None:
        return None
    keys = [(True, underscore, digit) for underscore in (False, True) for digit in (False, True)]
    return _text._C.screen_table(
        tuple(tuple((rule[1], rule[2], rule) for rule in _RULES_FOR[key]) for key in keys)
    )


_SCREEN_TABLE = _screen_table()


# Metadata keys and values ("session", "speaker", a name) recur in every memory of a batch:
# short texts are screened once per process (a pure function of the text, like the text caches).
_may_match_short = functools.lru_cache(maxsize=1 << 16)(_may_match)
_SHORT = 64


def _may_hold_secret(text: str) -> bool:
    """False when no rule can match ``text`` and it has no private tag: nothing to find."""
    return "<" in text or (_may_match_short(text) if len(text) <= _SHORT else _may_match(text))


def _find(text: str, policy: RedactionPolicy) -> list[_Hit]:
    """Every span to act on, in text order; each rule sees earlier claims blanked out."""
    if not _may_hold_secret(text):
        return []
    private = SecretClass.PRIVATE_SPAN
    spans = list(_private_spans(text))
    hits = [_Hit(s, e, private, policy.action(private)) for s, e in spans]
    masked = _blank(text, spans)
    for secret, pattern in PATTERNS:
        spans = _rule_hits(masked, secret, pattern)
        hits.extend(_Hit(s, e, secret, policy.action(secret)) for s, e in spans)
        masked = _blank(masked, spans)
    return sorted(hits)


def _rebuild(text: str, hits: list[_Hit]) -> str:
    parts: list[str] = []
    last = 0
    for hit in hits:
        if hit.action == "keep" or hit.end <= last:
            continue
        if hit.start >= last:
            parts.extend((text[last : hit.start], placeholder(hit.secret)))
        last = hit.end  # an overlapping span extends the placeholder before it
    parts.append(text[last:])
    return "".join(parts)


def redact(text: str, policy: RedactionPolicy = DEFAULT_POLICY) -> RedactionReport:
    """Replace secrets in ``text`` by placeholders, or drop it, as ``policy`` says.

    Args:
        text: any text (a chat turn, a document, a metadata value).
        policy: the action per secret class (default: :data:`DEFAULT_POLICY`).

    Returns:
        A :class:`RedactionReport`; ``text`` is None when a ``"drop"`` class was found.

    Raises:
        ValidationError: ``text`` is not a string.

    Example:
        >>> redact("db at postgresql://app:s3cr3t@db.internal:5432/orders").text
        'db at postgresql://[REDACTED:connection_string]@db.internal:5432/orders'
        >>> redact("Bearer abcdefghijklmnop1234", DEFAULT_POLICY.with_actions(bearer_token="drop"))
        RedactionReport(text=None, dropped=True, counts={'bearer_token': 1})
    """
    if not isinstance(text, str):
        raise ValidationError("text", text, "a string")
    hits = _find(text, policy)
    counts: dict[str, int] = {}
    for hit in hits:
        if hit.action != "keep":
            counts[hit.secret.value] = counts.get(hit.secret.value, 0) + 1
    dropped = any(hit.action == "drop" for hit in hits)
    return RedactionReport(None if dropped else _rebuild(text, hits), dropped, counts)


class MappingRedaction(NamedTuple):
    """The outcome of :func:`redact_mapping` (unpacks as ``value, counts, dropped``)."""

    value: JSONValue
    counts: dict[str, int]
    dropped: bool


def _merge(into: dict[str, int], counts: Mapping[str, int]) -> None:
    for name, count in counts.items():
        into[name] = into.get(name, 0) + count


def _unique_key(out: Mapping[str, JSONValue], key: str) -> str:
    """Two keys redacted to the same text must not overwrite each other."""
    candidate, n = key, 1
    while candidate in out:
        n += 1
        candidate = f"{key}#{n}"
    return candidate


_KEY_CLASSES = (
    (SecretClass.PASSWORD, re.compile(_PASSWORD_KEY, re.IGNORECASE)),
    (SecretClass.API_KEY, re.compile(_TOKEN_KEY, re.IGNORECASE)),
)


def _secret_key_class(key: str) -> SecretClass | None:
    if len(key) <= _SHORT:  # keys recur in every memory's metadata
        return _short_key_class(key)
    return _key_class(key)


def _key_class(key: str) -> SecretClass | None:
    for secret, pattern in _KEY_CLASSES:
        if pattern.fullmatch(key):
            return secret
    return None


_short_key_class = functools.lru_cache(maxsize=1 << 12)(_key_class)


class _Walk:
    """Accumulates counts (and whether anything was dropped) over one JSON value."""

    def __init__(self, policy: RedactionPolicy) -> None:
        self.policy = policy
        self.counts: dict[str, int] = {}
        self.dropped = False

    def text(self, value: str) -> str:
        if not _find(value, self.policy):  # most keys and values: nothing to report or merge
            return value
        report = redact(value, self.policy)
        _merge(self.counts, report.counts)
        self.dropped = self.dropped or report.dropped
        return "" if report.text is None else report.text

    def keyed(self, key: str, value: str) -> str:
        """A string under a secret-looking key (``"password"``, ``"api_key"``) is all secret."""
        secret = _secret_key_class(key)
        if secret is None or not value.strip() or value.startswith("[REDACTED:"):
            return self.text(value)
        action = self.policy.action(secret)
        if action == "keep":
            return value
        _merge(self.counts, {secret.value: 1})
        self.dropped = self.dropped or action == "drop"
        return placeholder(secret)

    def value(self, value: JSONValue) -> JSONValue:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, dict):
            out: dict[str, JSONValue] = {}
            for key, item in value.items():
                new = self.keyed(key, item) if isinstance(item, str) else self.value(item)
                out[_unique_key(out, self.text(key))] = new
            return out
        return value


def redact_mapping(value: object, policy: RedactionPolicy = DEFAULT_POLICY) -> MappingRedaction:
    """Redact every string (keys included) inside a JSON-safe dict or list, e.g. metadata.

    A string stored under a secret-looking key (``password``, ``db_passwd``, ``api_key``,
    ``GITHUB_TOKEN``, ``client_secret``...) is replaced whole, whatever it looks like. The input is never mutated; a new object is returned. When any string would be dropped,
    the whole value is dropped (``value`` is None, ``dropped`` True): a half-kept structure
    could still reveal what the secret was about.

    Args:
        value: a JSON-safe value (str keys, finite numbers; tuples are read as lists).
        policy: as for :func:`redact`.

    Returns:
        ``MappingRedaction(value, counts, dropped)``.

    Raises:
        ValidationError: ``value`` is not JSON-safe.

    Example:
        >>> redact_mapping({"env": {"DB_PASSWORD": "hunter2"}, "note": "Bearer abcdefghijklmnop1234"})
        MappingRedaction(value={'env': {'DB_PASSWORD': '[REDACTED:password]'}, 'note': 'Bearer [REDACTED:bearer_token]'}, counts={'password': 1, 'bearer_token': 1}, dropped=False)
    """
    walk = _Walk(policy)
    redacted = walk.value(json_safe_copy(value, "value"))
    return MappingRedaction(None if walk.dropped else redacted, walk.counts, walk.dropped)


_SCALARS = (int, bool, type(None))


def _plainly_clean(metadata: object) -> bool:
    """Whether :func:`redact_mapping` of ``metadata`` would find nothing to report and raise
    nothing, decided without its copy and walk (which cost more than screening a memory's
    text, for the usual two or three entries): a flat dict of ASCII keys to ``None``, bools,
    ints, finite floats or ASCII strings (all JSON-safe as they are), no key nor string that
    the screen says may hold a secret, and no string under a secret-looking key. Anything
    else (nesting, subclasses, non-ASCII text, a possible secret) answers False, and the
    caller takes the general path."""
    if type(metadata) is not dict:
        return False
    for key, value in metadata.items():
        if type(key) is not str or (key not in _CLEAN_KEYS and not _clean_key(key)):
            return False
        kind = type(value)
        if kind is str:
            if not value.isascii() or _secret_key_class(key) is not None:
                return False
            if _may_hold_secret(value):
                return False
        elif kind is float:
            if not math.isfinite(value):
                return False
        elif kind not in _SCALARS:
            return False
    return True


# The metadata keys found clean (ASCII, nothing to screen): a bulk batch's memories share their
# few keys, whose screen (a call and a cached screen each) was ~1,000 instructions a memory.
# A pure function of the key, like the screen's own cache; kept for the first few thousand.
_CLEAN_KEYS: set[str] = set()
_CLEAN_KEYS_MAX = 1 << 12


def _clean_key(key: str) -> bool:
    """Whether the str ``key`` is ASCII and the screen finds nothing in it (kept if so)."""
    if not key.isascii() or _may_hold_secret(key):
        return False
    if len(_CLEAN_KEYS) < _CLEAN_KEYS_MAX:
        _CLEAN_KEYS.add(key)
    return True


_PLACEHOLDER = re.compile(r"\[REDACTED:[a-z_]+\]")


def _plainly_clean_record(record: MemoryRecord) -> bool:
    """Whether :func:`redact_record` would return ``record`` as it is, decided by the screen
    alone: no rule can match its content, its cues were derived from that content (so they
    are derived again only from a changed text), it has no tags and its metadata is plainly
    clean. Most memories of a bulk ingest; for them the per-text reports, the count merge
    and the checks for a drop were a third of redaction's time."""
    return (
        record.cue_origin == "derived"
        and not record.tags
        and not _may_hold_secret(record.content)
        and (not record.metadata or _plainly_clean(record.metadata))
    )


def redact_record(
    record: MemoryRecord, policy: RedactionPolicy | None, position: int
) -> MemoryRecord:
    """``record`` with secrets replaced in its content, cues, tags and metadata (derived cues are
    derived again from the redacted text); raises SecretError when the policy drops it.

    ``position`` is the record's place in its batch, for the error message."""
    if policy is None or _plainly_clean_record(record):
        return record
    text = redact(record.content, policy)
    given = record.cue_origin == "given"  # derived cues come from the content: derived again
    cues = [redact(c, policy) for c in record.cues] if given else []
    tags = [redact(t, policy) for t in record.tags]
    if not record.metadata or _plainly_clean(record.metadata):
        meta = MappingRedaction(record.metadata, {}, False)  # what redact_mapping would return
    else:
        meta = redact_mapping(record.metadata, policy)
    counts: dict[str, int] = {}
    for report in (text, *cues, *tags):
        for name, n in report.counts.items():
            counts[name] = counts.get(name, 0) + n
    for name, n in meta.counts.items():
        counts[name] = counts.get(name, 0) + n
    if text.dropped or meta.dropped or any(r.dropped for r in (*cues, *tags)):
        raise SecretError(position, sorted(counts))
    if not counts:
        return record
    metadata = dict(meta.value) if isinstance(meta.value, dict) else {}
    metadata["redacted"] = counts
    content = text.text or ""
    if record.cue_origin == "derived":  # derive again: no cue may come from the removed text
        kept = tuple(derive_cues(_PLACEHOLDER.sub(" ", content)))
    else:
        kept = tuple(c.text for c in cues if c.text and "[REDACTED:" not in c.text)
    return record.evolve(
        content=content,
        cues=kept,
        tags=tuple(t.text for t in tags if t.text),
        metadata=metadata,
    )


_Flag = TypeVar("_Flag")


def redact_pairs(pairs: list[tuple[MemoryRecord, _Flag]], policy: RedactionPolicy | None) -> None:
    """:func:`redact_record` of the record of each pair of a batch (its position in ``pairs``
    for the error message), in place: a pair whose record is returned as it is stays, the
    others get the redacted record and their own second item. Most records of a bulk ingest
    are plainly clean: they are found for the batch at once (:func:`_plainly_clean_records`)
    and skipped, where a comprehension of ``redact_record`` calls made two and a new pair each."""
    if policy is None:
        return
    clean = _plainly_clean_records([record for record, _ in pairs])
    for position in compress(range(len(pairs)), map(not_, clean)):
        record, flag = pairs[position]
        redacted = redact_record(record, policy, position)
        if redacted is not record:
            pairs[position] = (redacted, flag)


def _plainly_clean_records(records: list[MemoryRecord]) -> list[bool]:
    """:func:`_plainly_clean_record` of each record of a batch, its content screened by
    :func:`_may_hold_secrets`: one comprehension where a call per record made three Python
    calls (~0.8 us a bench memory); in one C call with the text extension
    (``_textc.plainly_clean``, which finds a bench memory's metadata clean without a call of
    :func:`_plainly_clean`: ~3,400 -> ~1,000 instructions a memory)."""
    held = _may_hold_secrets([record.content for record in records])
    compiled = _text._C  # read per call: None (patched) means the Python rules alone
    if compiled is None:
        return _py_plainly_clean_records(records, held)
    return compiled.plainly_clean(  # type: ignore[no-any-return]
        records, held, _CLEAN_KEYS, _SCALARS, _plainly_clean
    )


def _py_plainly_clean_records(records: list[MemoryRecord], held: list[bool]) -> list[bool]:
    """The answers of :func:`_plainly_clean_records` given each content's screen (``held``):
    ``_textc.plainly_clean``'s reference, and the path without the extension."""
    return [
        record.cue_origin == "derived"
        and not record.tags
        and not secret
        and (not record.metadata or _plainly_clean(record.metadata))
        for record, secret in zip(records, held, strict=True)
    ]


def _may_hold_secrets(texts: list[str]) -> list[bool]:
    """:func:`_may_hold_secret` of each text: False at once for ASCII text with no "<" in
    which ``_textc.screen`` finds no rule's trigger (most of a bulk batch's contents), where
    no rule can match; for other ASCII text with no "<", whether one of the rules the screen
    found matches (what :func:`_may_match` asks after its own screen of the text: a second
    screen of a tenth of the bench memories, ~700 instructions a memory); the others ask
    :func:`_may_hold_secret`."""
    compiled, table = _text._C, _SCREEN_TABLE
    if compiled is None or table is None:  # (None: patched, the Python rules alone)
        return list(map(_may_hold_secret, texts))
    screen, may_hold, matches = compiled.screen, _may_hold_secret, _some_rule_matches
    return [
        may_hold(text)
        if "<" in text or not text.isascii()
        else bool(rules := screen(text, table)) and matches(text, rules)
        for text in texts
    ]
