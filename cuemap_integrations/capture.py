"""Capture: from conversation turns to clean, typed memories, by rule.

:func:`capture` reads chat messages and proposes :class:`~cuemap_integrations.records.MemoryRecord`
objects ready for ``CueMap.add_many``:

1. every message is coerced to a :class:`Message` (dicts, ``(role, content)`` tuples and
   LangChain- or LlamaIndex-like objects are accepted by duck typing; nothing is imported);
2. every message text is redacted first (:mod:`cuemap_integrations.redact`), so no secret can
   reach a record, a skipped excerpt, the metadata or an extractor;
3. the turns of the allowed roles are split into sentences, and the first rule of
   :data:`DEFAULT_RULES` (one table, English and Chinese) that matches a sentence proposes a
   :class:`Candidate`; an optional ``extractor`` (e.g. an LLM) adds or replaces candidates;
4. weak remarks (:data:`WEAK_MARKERS`), low confidence, too-short text and duplicates are
   skipped, each with a reason in :attr:`CaptureResult.skipped`: nothing is dropped silently.

Ids are stable: ``"c-" + sha256(namespace NUL type NUL normalize(content))[:12]``, so the same
conversation gives the same records under any ``PYTHONHASHSEED``.

Example:
    >>> from datetime import datetime, timezone
    >>> t = datetime(2026, 3, 1, tzinfo=timezone.utc)
    >>> result = capture(
    ...     [("user", "Please remember that the API uses port 8001. Thanks!"), ("assistant", "Sure.")],
    ...     session_id="s1", now=t)
    >>> [(r.type.value, r.content, r.metadata["rule"]) for r in result.records]
    [('convention', 'the API uses port 8001', 'en.remember>en.port')]
    >>> result.skipped
    (Skipped(excerpt='Thanks', reason='no rule'), Skipped(excerpt='Sure.', reason='assistant turn'))
"""

from __future__ import annotations

import hashlib
import re
import string
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Literal, NamedTuple

from .errors import ConfigError, ValidationError
from .records import JSONValue, MemoryRecord, MemoryType, coerce_timestamp, validate_namespace
from .redact import DEFAULT_POLICY, RedactionPolicy, RedactionReport, redact
from .text import derive_cues, normalize

__all__ = [
    "DEFAULT_RULES",
    "WEAK_EXCEPTIONS",
    "WEAK_MARKERS",
    "Candidate",
    "CaptureResult",
    "CaptureRule",
    "Extractor",
    "Message",
    "Skipped",
    "capture",
    "rule",
]

Language = Literal["en", "zh"]
Mode = Literal["rules", "all"]
ExtractorMode = Literal["replace", "extend"]
Weak = Literal["skip", "downweight"]

_LANGUAGES: tuple[Language, ...] = ("en", "zh")
_MODES: tuple[Mode, ...] = ("rules", "all")
_EXTRACTOR_MODES: tuple[ExtractorMode, ...] = ("replace", "extend")
_WEAK_MODES: tuple[Weak, ...] = ("skip", "downweight")
_WEAK_FACTOR = 0.5
_MIN_CONTENT_CHARS = 3  # letters, digits or CJK characters, placeholders not counted
_EXCERPT_CHARS = 40
_PLACEHOLDER_RE = re.compile(r"\[REDACTED:([a-z_]+)\]")
# A record refuses NUL and lone surrogates; they carry no meaning in a chat turn.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")

# --------------------------------------------------------------------------------------------
# Small validators
# --------------------------------------------------------------------------------------------


def _text(value: object, field_name: str, *, empty: bool = False) -> str:
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise ValidationError(field_name, value, "a string" if empty else "a non-empty string")
    return value


def _optional_text(value: object, field_name: str) -> str | None:
    return None if value is None else _text(value, field_name)


def _confidence(
    value: object, field_name: str, error: type[ValidationError] = ValidationError
) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise error(field_name, value, "a number between 0 and 1")
    return float(value)


def _strings(value: object, field_name: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ValidationError(field_name, value, "a list of non-empty strings")
    return tuple(_text(item, field_name) for item in value)


def _choice(value: object, field_name: str, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise ConfigError(field_name, value, f"choose from {', '.join(allowed)}")
    return str(value)


# --------------------------------------------------------------------------------------------
# Candidates and rules
# --------------------------------------------------------------------------------------------

_CANDIDATE_FIELDS = ("content", "type", "confidence", "rule", "key", "cues", "tags")


@dataclass(frozen=True)
class Candidate:
    """A memory proposed by a rule or an extractor, before it becomes a record.

    Attributes:
        content: the text to remember.
        type: the memory type.
        confidence: 0..1; compared with ``min_confidence``.
        rule: the rule (or extractor) that proposed it.
        key: what the memory is about (``"user.name"``), or None.
        cues / tags: given cues and tags; cues are derived from the content when empty.

    Example:
        >>> Candidate("I prefer tea", "preference", 0.8, "mine").type
        <MemoryType.PREFERENCE: 'preference'>
    """

    content: str
    type: MemoryType
    confidence: float
    rule: str
    key: str | None = None
    cues: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        values = {name: getattr(self, name) for name in _CANDIDATE_FIELDS}
        for name, value in _candidate_values(values, "").items():
            object.__setattr__(self, name, value)

    @classmethod
    def from_mapping(cls, data: Mapping[str, object], where: str = "candidate") -> Candidate:
        """Build a candidate from ``{"content", "type", "confidence"[, "key", "cues", "tags"]}``.

        Errors name the field as ``{where}.{field}`` (``extractor[2].type``).

        Example:
            >>> Candidate.from_mapping({"content": "Ship on Friday", "type": "task", "confidence": 0.7}).rule
            'extractor'
        """
        for name in data:
            if name not in _CANDIDATE_FIELDS:
                allowed = f"choose from {', '.join(_CANDIDATE_FIELDS)}"
                raise ValidationError(f"{where} field", name, allowed)
        for name in ("content", "type", "confidence"):
            if name not in data:
                raise ValidationError(f"{where}.{name}", None, "a value (the field is required)")
        values = {"rule": "extractor", "cues": (), "tags": (), "key": None, **data}
        return cls(**_candidate_values(values, where))  # type: ignore[arg-type]


def _field(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _candidate_values(values: Mapping[str, object], where: str) -> dict[str, object]:
    """Validated constructor arguments; error field names are prefixed with ``where``."""
    return {
        "content": _text(values["content"], _field(where, "content")),
        "type": MemoryType.coerce(values["type"], _field(where, "type")),
        "confidence": _confidence(values["confidence"], _field(where, "confidence")),
        "rule": _text(values["rule"], _field(where, "rule")),
        "key": _optional_text(values["key"], _field(where, "key")),
        "cues": _strings(values["cues"], _field(where, "cues")),
        "tags": _strings(values["tags"], _field(where, "tags")),
    }


def _template_fields(template: str) -> list[str]:
    return [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]


_STRIP = " \t\"'“”‘’「」『』.,;:!?。，；：！？"


@dataclass(frozen=True)
class CaptureRule:
    """One capture rule: a pattern, the memory type it proposes and how sure it is.

    Attributes:
        name: shown in ``metadata["rule"]`` (``"en.preference"``).
        language: ``"en"`` (patterns compiled case-insensitive by :func:`rule`) or ``"zh"``.
        pattern: searched in each sentence; the first rule of the table that matches wins.
        type: the memory type proposed.
        confidence: 0..1.
        key: what the memory is about (``"user.display_name"``); may use ``{group}`` fields.
        content_group: a named group holding the memory text; otherwise the whole sentence.
        template: builds the content from named groups (``"Call the user {name}"``); wins
            over ``content_group``.
        refine: for explicit requests ("remember that ..."): the captured content is matched
            again against the non-refining rules, and a match there gives the type, key and
            content (the confidence is the higher of the two).

    Raises:
        ConfigError: an invalid field; the message names the rule.

    Example:
        >>> r = rule("tea", "en", r"\\bi drink (?P<what>\\w+)", "preference", 0.7, template="Drinks {what}")
        >>> r.apply("Every morning I drink tea").content
        'Drinks tea'
    """

    name: str
    language: Language
    pattern: re.Pattern[str]
    type: MemoryType
    confidence: float
    key: str | None = None
    content_group: str | None = None
    template: str | None = None
    refine: bool = False

    def __post_init__(self) -> None:
        name = _text(self.name, "rule name")
        where = f"rules[{name}]"
        _choice(self.language, f"{where}.language", _LANGUAGES)
        if not isinstance(self.pattern, re.Pattern):
            raise ConfigError(f"{where}.pattern", self.pattern, "a compiled regular expression")
        object.__setattr__(self, "type", MemoryType.coerce(self.type, f"{where}.type"))
        confidence = _confidence(self.confidence, f"{where}.confidence", ConfigError)
        object.__setattr__(self, "confidence", confidence)
        self._check_groups(where)

    def _check_groups(self, where: str) -> None:
        groups = self.pattern.groupindex
        if self.content_group is not None and self.content_group not in groups:
            raise ConfigError(f"{where}.content_group", self.content_group, _named(groups))
        for attr in ("key", "template"):
            text = getattr(self, attr)
            for name in _template_fields(text) if text is not None else ():
                if name not in groups:
                    raise ConfigError(f"{where}.{attr}", text, f"fields from {_named(groups)}")

    def apply(self, sentence: str) -> Candidate | None:
        """The candidate this rule proposes for ``sentence``, or None if it does not match."""
        match = self.pattern.search(sentence)
        if match is None:
            return None
        groups = {k: v.strip(_STRIP) for k, v in match.groupdict().items() if v and v.strip(_STRIP)}
        content = _fill(self.template, groups) if self.template else None
        if content is None and self.content_group:
            content = groups.get(self.content_group)
        key = _fill(self.key, groups) if self.key else None
        if (self.template and content is None) or (self.key and key is None):
            return None
        return Candidate(content or sentence, self.type, self.confidence, self.name, key)


def _named(groups: Mapping[str, int]) -> str:
    return "one of the pattern's named groups: " + (", ".join(groups) or "(none)")


def _fill(template: str, groups: Mapping[str, str]) -> str | None:
    try:
        return template.format_map(groups)
    except (KeyError, IndexError):  # a group that did not take part in the match
        return None


def rule(
    name: str,
    language: Language,
    pattern: str,
    type: MemoryType | str,
    confidence: float,
    key: str | None = None,
    content_group: str | None = None,
    *,
    template: str | None = None,
    refine: bool = False,
) -> CaptureRule:
    """Compile a :class:`CaptureRule` (English patterns are case-insensitive).

    Raises:
        ConfigError: an invalid regular expression or field; the message names the rule.

    Example:
        >>> rule("en.deadline", "en", r"\\bdue (?:on|by)\\b", "task", 0.7).apply("Report due by Friday").type
        <MemoryType.TASK: 'task'>
    """
    flags = re.IGNORECASE if language == "en" else 0
    try:
        compiled = re.compile(pattern, flags)
    except (re.error, TypeError) as err:
        raise ConfigError(f"rules[{name}].pattern", pattern, f"a valid regex ({err})") from None
    kind = MemoryType.coerce(type, f"rules[{name}].type")
    return CaptureRule(
        name, language, compiled, kind, confidence, key, content_group, template, refine
    )


# --------------------------------------------------------------------------------------------
# The rule table
# --------------------------------------------------------------------------------------------

_P, _C, _F, _T = MemoryType.PREFERENCE, MemoryType.CONVENTION, MemoryType.FACT, MemoryType.TASK
_APOS = "['’]"
_LEAD_EN = (
    r"^(?:(?:also|and|oh|ok|okay|so|hey|btw|by the way|one more thing|fyi)\b[\s,:\-]*)*"
    r"(?:(?:can|could|will|would) you\s+|i (?:want|need) you to\s+)?(?:please\s+)?"
)
_LEAD_ZH = r"^(?:另外|还有|对了|顺便说一下|顺便|好的|嗯)?[，,、\s]*(?:请|麻烦)?(?:你)?(?:帮我)?"
_NAME_EN = r"[^\s\"“”,.;!?]+(?:\s+(?-i:[A-Z])[^\s\"“”,.;!?]*)?"  # one word, or two if Capitalized
_NOT_A_NAME = (
    r"(?!(?:later|back|tomorrow|tonight|when|if|at|on|in|sometime|anytime|again|now|asap|soon)\b)"
)
_NOT_SMALL_TALK = r"(?!\s+(?:it|that|this|those|these|them|you|your|so much)\b)"
_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"

DEFAULT_RULES: tuple[CaptureRule, ...] = (
    # Explicit requests. "call me X" / 以后叫我X set the display name.
    rule("en.call_me", "en",
         rf"\b(?:from now on,?\s+|going forward,?\s+)?(?:please\s+)?call me\s+[\"“']?{_NOT_A_NAME}"
         rf"(?P<name>{_NAME_EN})[\"”']?(?:,?\s+(?:from now on|please|instead|going forward|from here on))?\s*$",
         _P, 0.95, "user.display_name", template="Call the user {name}"),
    rule("zh.call_me", "zh",
         r"(?:以后|今后|之后|从现在起|从现在开始)?[，,\s]*(?:请)?(?:你)?(?:叫我|称呼我为?|喊我)[“\"「]?"
         r"(?P<name>[^\s，。！？,.!?；;“”\"」]{1,12}?)[”\"」]?(?:就好|就行|就可以|吧|好了|即可)?$",
         _P, 0.95, "user.display_name", template="称呼用户为{name}"),
    # "remember to X" is a task unless X says more; "remember that X" takes X's type.
    rule("en.remember_to", "en",
         rf"{_LEAD_EN}(?:remember|don{_APOS}?t forget|do not forget|make sure)\s+to\s+(?P<content>.+)",
         _T, 0.85, content_group="content", refine=True),
    rule("en.remember", "en",
         rf"{_LEAD_EN}(?:remember|note|keep in mind|don{_APOS}?t forget|do not forget|make a note|take note)"
         r"(?:\s+that)?\s*[:,\-]?\s+(?P<content>.+)",
         _F, 0.9, content_group="content", refine=True),
    rule("zh.dont_forget", "zh",
         rf"{_LEAD_ZH}(?:别忘了|别忘记|不要忘了|不要忘记|记得)[:：，,\s]*(?P<content>.+)",
         _T, 0.85, content_group="content", refine=True),
    rule("zh.remember", "zh",
         rf"{_LEAD_ZH}(?:记住|记一下|记好|记下来?|注意)[:：，,\s]*(?P<content>.+)",
         _F, 0.9, content_group="content", refine=True),
    # Facts about the user that have a key.
    rule("en.name", "en", rf"\b(?:my name is|i{_APOS}m called|i am called)\s+[\"“]?(?P<name>{_NAME_EN})",
         _F, 0.9, "user.name", template="The user's name is {name}"),
    rule("zh.name", "zh", r"(?:我叫|我的名字(?:是|叫)|我名叫)(?!了|过|你|他|她|什么)(?P<name>[^\s，。！？,.!?；;的]{1,10})",
         _F, 0.9, "user.name", template="用户的名字是{name}"),
    rule("en.email", "en", r"\bmy (?:work |personal )?e-?mail(?: address)? is\b", _F, 0.85, "user.email"),
    rule("zh.email", "zh", r"我的(?:邮箱|电子邮件|邮件)(?:地址)?(?:是|为)", _F, 0.85, "user.email"),
    rule("en.location", "en",
         rf"\bi(?: currently)? (?:live|am based|{_APOS}m based|reside|am located|{_APOS}m located)\s+(?:in|at|near|on)\b",
         _F, 0.8, "user.location"),
    rule("zh.location", "zh", r"我(?:现在|目前)?(?:住在|家在|常住)", _F, 0.8, "user.location"),
    # Preferences.
    rule("en.preference", "en",
         rf"\bi\s+(?:(?:\w+ly|much|still|also|just|do(?:n{_APOS}t| not))\s+)*"
         rf"(?:prefer|like|love|hate|dislike|enjoy|can{_APOS}?t stand|always|never|usually|normally"
         rf"|tend to|would rather)\b{_NOT_SMALL_TALK}|\bi{_APOS}d rather\b",
         _P, 0.8),
    rule("en.favourite", "en", r"\bmy (?:favou?rite|preferred|go-to)\s+\w+", _P, 0.8),
    rule("zh.preference", "zh",
         r"我(?:比较|很|最|更|特别|非常|一直|通常|总是|个人|还是)?"
         r"(?:更喜欢|喜欢|偏好|偏爱|习惯|讨厌|不喜欢|倾向于|最爱)(?!你|它|这个|那个)",
         _P, 0.8),
    # Conventions and constraints.
    rule("en.we_always", "en",
         rf"\bwe\s+(?:always|never|must|mustn{_APOS}t|should always|should never|only ever)\b", _C, 0.8),
    rule("en.we_use", "en",
         r"\b(?:we|our team|the team|this project|the project)\s+(?:(?:\w+ly|now|all|still|also)\s+)?"
         r"(?:use|uses|run|runs|deploy|deploys|store|stores|follow|follows|prefix|require|requires)\b"
         r"|\bour (?:convention|rule|standard|policy|style guide) is\b",
         _C, 0.75),
    rule("en.must", "en",
         rf"\b(?:must(?:\s+not|n{_APOS}t)?|should (?:always|never)|shall not|(?:is|are) (?:required|forbidden|not allowed))\b"
         r"(?!\s+(?:be (?:tired|joking|kidding)|say|admit))",
         _C, 0.75),
    rule("en.imperative", "en",
         rf"{_LEAD_EN}(?:always|never|do not|don{_APOS}t)\s+"
         r"(?!(?:worry|mind|know|think|care|forget|remember|bother|apologi[sz]e)\b)\w+",
         _C, 0.75),
    rule("en.port", "en",
         r"\b(?:uses?|runs? on|listens? on|serves? on|is (?:on|at)|binds? to)\s+port\s+\d{2,5}\b"
         r"|\bport (?:is|=|:)\s*\d{2,5}\b",
         _C, 0.75),
    rule("zh.convention", "zh",
         r"必须|务必|统一(?:采用|使用|用)|一律|禁止|严禁|不得|不允许|不准|不要(?!了|紧|客气|谢)", _C, 0.8),
    rule("zh.we_use", "zh",
         r"我们(?:现在|目前|暂时|先|一直|都|统一|只)?(?:用|使用|采用|遵循|部署在|跑在)"
         r"|端口(?:号)?(?:是|为|用)?\s*\d{2,5}|\d{2,5}\s*端口",
         _C, 0.75),
    # Facts about the project: versions and decisions.
    rule("en.version", "en",
         rf"\b(?:we{_APOS}re|we are|i{_APOS}m|i am|the project is|it{_APOS}s|it is)\s+(?:on|using|running)\s+"
         r"[\w.+#-]+(?:\s+[\w.+#-]+)?\s+v?\d+(?:\.\d+)+|\bversion\s+(?:is\s+|=\s*)?v?\d+(?:\.\d+)+",
         _F, 0.7),
    rule("en.decision", "en",
         rf"\bwe(?:{_APOS}ve| have)?\s+(?:decided|chose|chosen|agreed|settled on|picked|went with|opted)\b"
         r"|\bthe decision (?:is|was)\b",
         _F, 0.8),
    rule("zh.decision", "zh", r"我们(?:已经|最终|最后)?(?:决定|选择了?|选定|定了|商定)|最终决定|决定采用", _F, 0.8),
    rule("zh.version", "zh", r"版本(?:号)?(?:是|为|用的是)\s*\S*\d|升级到了?\s*\S*\d", _F, 0.7),
    # Tasks and plans.
    rule("en.todo", "en", r"^(?:todo\b|to-do\b|to do:)\s*[:\-]?\s*(?P<content>.+)",
         _T, 0.85, content_group="content"),
    rule("en.plan", "en",
         rf"\bnext,?\s+(?:we|i){_APOS}?(?:ll| will| need to| should)\b|\bnext steps?\b"
         rf"|\b(?:we|i)(?:{_APOS}re|{_APOS}m| are| am)? (?:plan(?:ning)?|going) to\b"
         rf"|\b(?:we|i) (?:need|have) to\b|\bremind me to\b",
         _T, 0.7),
    rule("en.deadline", "en",
         rf"\b(?:due (?:on|by)|deadline)\b|\bby (?:{_WEEKDAY}|tomorrow|tonight|eod|end of (?:the )?(?:day|week|month)|next week)\b",
         _T, 0.7),
    rule("zh.task", "zh",
         r"待办|(?:TODO|todo)[:：\s]|计划|打算|下一步|接下来(?:要|需要|我们)|提醒我|"
         r"(?:需要|要)在.{1,12}?(?:前|之前)|截止(?:日期|时间)?",
         _T, 0.7),
)  # fmt: skip
"""The default capture rules: one table, English and Chinese, in priority order."""

WEAK_MARKERS: tuple[str, ...] = (
    "for now", "maybe later", "maybe", "not sure", "probably", "temporarily",
    "先这样", "暂时", "不一定", "可能", "也许", "回头再说",
)  # fmt: skip
"""Markers of a weak or temporary remark (matched as whole words in Latin text)."""

WEAK_EXCEPTIONS: tuple[str, ...] = ("尽可能", "不可能", "可能性")
"""Words that contain a weak marker without being weak ("as far as possible", "impossible")."""


def _marker_regex(markers: Iterable[str]) -> re.Pattern[str]:
    parts = [
        rf"\b{re.escape(normalize(m))}\b" if normalize(m).isascii() else re.escape(normalize(m))
        for m in markers
    ]
    return re.compile("|".join(parts))


_WEAK_RE = _marker_regex(WEAK_MARKERS)
_EXCEPTION_RE = re.compile("|".join(re.escape(normalize(w)) for w in WEAK_EXCEPTIONS))


def _is_weak(text: str) -> bool:
    return _WEAK_RE.search(_EXCEPTION_RE.sub(" ", normalize(text))) is not None


# --------------------------------------------------------------------------------------------
# Messages
# --------------------------------------------------------------------------------------------

_ROLE_ALIASES = {
    "human": "user", "humanmessage": "user", "humanmessagechunk": "user",
    "ai": "assistant", "aimessage": "assistant", "aimessagechunk": "assistant", "model": "assistant",
    "bot": "assistant", "systemmessage": "system", "developer": "system",
    "function": "tool", "toolmessage": "tool",
}  # fmt: skip
_MESSAGE_FORMS = (
    "a Message, a {'role', 'content'} mapping, a (role, content) tuple "
    "or a chat message object with .type or .role and .content"
)


def _role(value: object, field_name: str) -> str:
    value = getattr(value, "value", value)  # an enum such as LlamaIndex's MessageRole
    role = _text(value, field_name).strip().lower()
    return _ROLE_ALIASES.get(role, role)


def _block_text(block: object) -> str | None:
    if isinstance(block, str):
        return block
    if isinstance(block, Mapping):
        text = block.get("text") if block.get("type", "text") == "text" else None
    else:
        text = getattr(block, "text", None)
    return text if isinstance(text, str) else None


def _content_text(value: object, field_name: str) -> str:
    """A message's text: a string, or the text blocks of a content list joined by newlines."""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return "\n".join(t for t in map(_block_text, value) if t is not None)
    raise ValidationError(field_name, value, "a string or a list of content blocks")


@dataclass(frozen=True)
class Message:
    """One chat turn.

    Attributes:
        role: ``"user"``, ``"assistant"``, ``"system"``, ``"tool"``... (``human``/``ai`` are
            mapped to ``user``/``assistant``).
        content: the text.
        timestamp: when it was said (aware; converted to UTC), or None.
        name: the speaker's name, or None.

    Example:
        >>> Message.coerce({"role": "human", "content": "hi", "name": "Ann"})
        Message(role='user', content='hi', timestamp=None, name='Ann')
    """

    role: str
    content: str
    timestamp: datetime | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        values = _message_args(self.role, self.content, self.timestamp, self.name, "")
        for attr, value in zip(("role", "content", "timestamp", "name"), values, strict=True):
            object.__setattr__(self, attr, value)

    @property
    def speaker(self) -> str:
        """The name, or the role when there is none."""
        return self.name or self.role

    @classmethod
    def coerce(cls, value: object, field_name: str = "message") -> Message:
        """Accept a Message, a dict, a ``(role, content)`` tuple or a duck-typed chat message.

        LangChain-like objects: ``.type`` in ``human/ai/system/tool`` and ``.content`` (a string
        or a list of content blocks with ``"text"``). LlamaIndex-like objects: ``.role`` (an
        enum with ``.value``, or a string) and ``.content`` (or ``.blocks`` with ``.text``).

        Raises:
            ValidationError: naming ``field_name`` (``messages[3]``, ``messages[3].role``).
        """
        if isinstance(value, Message):
            return value
        if isinstance(value, Mapping):
            return _from_mapping(value, field_name)
        if isinstance(value, tuple) and len(value) == 2:
            return cls(*_message_args(value[0], value[1], None, None, field_name))
        if hasattr(value, "content") and (hasattr(value, "type") or hasattr(value, "role")):
            return _from_object(value, field_name)
        raise ValidationError(field_name, value, _MESSAGE_FORMS)


def _message_args(
    role: object, content: object, timestamp: object, name: object, where: str
) -> tuple[str, str, datetime | None, str | None]:
    """Validated Message fields; error field names are prefixed with ``where``."""
    return (
        _role(role, _field(where, "role")),
        _content_text(content, _field(where, "content")),
        None if timestamp is None else coerce_timestamp(timestamp, _field(where, "timestamp")),
        _optional_text(name, _field(where, "name")),
    )


def _from_mapping(value: Mapping[object, object], where: str) -> Message:
    for required in ("role", "content"):
        if required not in value:
            raise ValidationError(f"{where}.{required}", None, "a value (the key is required)")
    get = value.get
    return Message(
        *_message_args(get("role"), get("content"), get("timestamp"), get("name"), where)
    )


def _duck_role(value: object) -> object:
    kind = getattr(value, "type", None)
    if isinstance(kind, str) and kind.lower() in (*_ROLE_ALIASES, "system", "tool"):
        return kind
    return getattr(value, "role", kind)


def _from_object(value: object, where: str) -> Message:
    content = getattr(value, "content", None)
    if content is None:  # LlamaIndex keeps text in .blocks when .content is unset
        content = getattr(value, "blocks", None)
    name = getattr(value, "name", None)
    timestamp = getattr(value, "timestamp", None)
    args = _message_args(
        _duck_role(value), content, timestamp, name if isinstance(name, str) else None, where
    )
    return Message(*args)


def _coerce_messages(messages: object) -> tuple[Message, ...]:
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Iterable):
        raise ValidationError("messages", messages, "a list of messages")
    return tuple(Message.coerce(m, f"messages[{i}]") for i, m in enumerate(messages))


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


class Skipped(NamedTuple):
    """Text that was read but not captured (the excerpt is already redacted)."""

    excerpt: str
    reason: str


@dataclass(frozen=True)
class CaptureResult:
    """What :func:`capture` produced.

    Attributes:
        records: the memories, in the order they were found; ready for ``CueMap.add_many``.
        skipped: ``(excerpt <= 40 chars, reason)`` for everything read but not captured;
            reasons: ``"{role} turn"``, ``"empty"``, ``"no rule"``, ``"too short"``, ``"weak"``,
            ``"low confidence"``, ``"duplicate"``, ``"secret:dropped"``.
        redactions: class -> count over all the text read (messages and extractor output).

    Example:
        >>> capture([("user", "I prefer tea, password=hunter2")], session_id="s").redactions
        {'password': 1}
    """

    records: tuple[MemoryRecord, ...]
    skipped: tuple[Skipped, ...] = ()
    redactions: Mapping[str, int] = field(default_factory=dict, hash=False)


Extractor = Callable[[Sequence[Message]], Iterable[Candidate | Mapping[str, object]]]
"""Called with the redacted messages; returns Candidates or mappings."""

# --------------------------------------------------------------------------------------------
# Capture
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Options:
    session_id: str
    namespace: str
    mode: str
    rules: tuple[CaptureRule, ...]
    extractor: Extractor | None
    extractor_mode: str
    weak: str
    min_confidence: float
    roles: frozenset[str]
    redaction: RedactionPolicy | None
    now: datetime
    source: str


def _check_rules(rules: object) -> tuple[CaptureRule, ...]:
    if isinstance(rules, (str, bytes)) or not isinstance(rules, Iterable):
        raise ConfigError("rules", rules, "a sequence of CaptureRule")
    out = tuple(rules)
    for i, item in enumerate(out):
        if not isinstance(item, CaptureRule):
            raise ConfigError(f"rules[{i}]", item, "a CaptureRule (see capture.rule())")
    return out


def _check_roles(roles: object) -> frozenset[str]:
    if isinstance(roles, (str, bytes)) or not isinstance(roles, Iterable):
        raise ValidationError("roles", roles, "a collection of role names such as ('user',)")
    return frozenset(_role(r, "roles") for r in roles)


def _check_now(now: object) -> datetime:
    if now is None:
        return datetime.now(timezone.utc)
    if not isinstance(now, datetime):
        raise ValidationError("now", now, "a timezone-aware datetime")
    return coerce_timestamp(now, "now")


def _check_policy(policy: object) -> RedactionPolicy | None:
    if policy is not None and not isinstance(policy, RedactionPolicy):
        raise ConfigError("redaction", policy, "a RedactionPolicy or None")
    return policy


def _check_extractor(extractor: object) -> Extractor | None:
    if extractor is not None and not callable(extractor):
        raise ConfigError("extractor", extractor, "a callable or None")
    return extractor


def _redact(text: str, policy: RedactionPolicy | None) -> RedactionReport:
    return RedactionReport(text, False, {}) if policy is None else redact(text, policy)


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _EXCERPT_CHARS else flat[: _EXCERPT_CHARS - 1].rstrip() + "…"


def _safe_excerpt(text: str, policy: RedactionPolicy | None) -> str:
    """An excerpt of a dropped text: what would be dropped is redacted instead."""
    if policy is None:
        return _excerpt(text)
    relaxed = RedactionPolicy(
        {c: "redact" if a == "drop" else a for c, a in policy.actions.items()}
    )
    return _excerpt(redact(text, relaxed).text or "")


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|[。！？；]+|\n+")
# Explicit requests stay requests even when asked politely ("could you remember that ...?").
_EXPLICIT_RULES = ("en.remember", "zh.remember", "en.call_me", "zh.call_me", "zh.dont_forget")


def _sentences_asked(text: str) -> list[tuple[str, bool]]:
    """Each sentence, and whether it was a question (ended with ``?`` or ``？``).

    English sentences end at ``.!?`` + space, Chinese at ``。！？；``; newlines always split."""
    out: list[tuple[str, bool]] = []
    start = 0
    for end in [*_SENTENCE_END.finditer(text), None]:
        stop = len(text) if end is None else end.start()
        raw = text[start:stop].strip()
        asked = raw.endswith("?") or (end is not None and "？" in end.group())
        sentence = raw.rstrip(".!?;,，、 \t").strip()
        if sentence:
            out.append((sentence, asked))
        start = len(text) if end is None else end.end()
    return out


def _too_short(content: str) -> bool:
    return sum(ch.isalnum() for ch in _PLACEHOLDER_RE.sub(" ", content)) < _MIN_CONTENT_CHARS


def _placeholder_counts(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for name in _PLACEHOLDER_RE.findall(text):
        counts[name] = counts.get(name, 0) + 1
    return counts


def _memory_id(namespace: str, kind: MemoryType, content: str) -> str:
    digest = hashlib.sha256(f"{namespace}\x00{kind.value}\x00{normalize(content)}".encode())
    return "c-" + digest.hexdigest()[:12]


def _match(sentence: str, rules: Sequence[CaptureRule]) -> Candidate | None:
    """The first matching rule's candidate; a refining rule defers to a more specific one."""
    for r in rules:
        found = r.apply(sentence)
        if found is None:
            continue
        if r.refine and found.content != sentence:
            inner = _match(found.content, [x for x in rules if not x.refine])
            if inner is not None:
                confidence = max(found.confidence, inner.confidence)
                rule_name = f"{r.name}>{inner.rule}"
                return Candidate(inner.content, inner.type, confidence, rule_name, inner.key)
        return found
    return None


class _Proposal(NamedTuple):
    candidate: Candidate
    message: Message | None  # the redacted message it came from; None for extractor output
    weak_text: str | None  # the text checked for weak markers; None: not checked


class _Run:
    """The state of one :func:`capture` call (nothing outlives it)."""

    def __init__(self, opts: _Options) -> None:
        self.opts = opts
        self.skipped: list[Skipped] = []
        self.redactions: dict[str, int] = {}
        self.seen: set[tuple[MemoryType, str]] = set()  # membership only

    def skip(self, text: str, reason: str) -> None:
        self.skipped.append(Skipped(_excerpt(text), reason))

    def redact(self, text: str) -> str | None:
        text = _UNSTORABLE.sub("", text)
        report = _redact(text, self.opts.redaction)
        for name, count in report.counts.items():
            self.redactions[name] = self.redactions.get(name, 0) + count
        if report.text is None:
            self.skipped.append(Skipped(_safe_excerpt(text, self.opts.redaction), "secret:dropped"))
        return report.text

    def clean(self, messages: Sequence[Message]) -> list[Message]:
        """The messages with redacted text and speaker name; dropped messages are left out."""
        out = []
        for message in messages:
            text = self.redact(message.content)
            name = None if message.name is None else self.redact(message.name)
            if text is not None and (message.name is None or name is not None):
                out.append(Message(message.role, text, message.timestamp, name))
        return out

    def from_rules(self, messages: Sequence[Message]) -> list[_Proposal]:
        out: list[_Proposal] = []
        for message in messages:
            if message.role not in self.opts.roles:
                self.skip(message.content, f"{message.role} turn")
            elif not message.content.strip():
                self.skip("", "empty")
            else:
                out.extend(self.sentence_proposals(message))
        return out

    def sentence_proposals(self, message: Message) -> list[_Proposal]:
        out = []
        for sentence, asked in _sentences_asked(message.content):
            found = _match(sentence, self.opts.rules)
            if found is None:
                self.skip(sentence, "no rule")
            elif asked and not found.rule.startswith(_EXPLICIT_RULES):
                self.skip(sentence, "question")  # "do we use tabs?" states nothing
            else:
                out.append(_Proposal(found, message, sentence))
        return out

    def transcript(self, messages: Sequence[Message]) -> list[_Proposal]:
        out = []
        for message in messages:
            text = message.content.strip()
            if not text:
                self.skip("", "empty")
                continue
            event = Candidate(f"{message.speaker}: {text}", MemoryType.EVENT, 1.0, "transcript")
            out.append(_Proposal(event, message, None))
        return out

    def extracted(self, messages: Sequence[Message]) -> list[_Proposal]:
        extractor = self.opts.extractor
        if extractor is None:
            return []
        produced = extractor(list(messages))
        if isinstance(produced, (str, bytes, Mapping)) or not isinstance(produced, Iterable):
            raise ValidationError("extractor", produced, "an iterable of Candidate or mappings")
        out = []
        for i, item in enumerate(produced):
            candidate = self.redact_candidate(_coerce_candidate(item, f"extractor[{i}]"))
            if candidate is not None:
                out.append(_Proposal(candidate, None, candidate.content))
        return out

    def redact_candidate(self, c: Candidate) -> Candidate | None:
        content, key = self.redact(c.content), None if c.key is None else self.redact(c.key)
        cues = [self.redact(x) for x in c.cues]
        tags = [self.redact(x) for x in c.tags]
        if content is None or (c.key is not None and key is None) or None in (*cues, *tags):
            return None
        kept_cues = tuple(x for x in cues if x)
        kept_tags = tuple(x for x in tags if x)
        return Candidate(content, c.type, c.confidence, c.rule, key, kept_cues, kept_tags)

    def accept(self, proposal: _Proposal) -> _Proposal | None:
        """Apply the too-short, weak, confidence and duplicate filters (recording skips)."""
        c = proposal.candidate
        weak = proposal.weak_text is not None and _is_weak(proposal.weak_text)
        if weak and self.opts.weak == "downweight":
            c = Candidate(
                c.content, c.type, c.confidence * _WEAK_FACTOR, c.rule, c.key, c.cues, c.tags
            )
        reason = self.rejection(c, weak)
        if reason is not None:
            self.skip(
                proposal.weak_text if reason == "weak" and proposal.weak_text else c.content, reason
            )
            return None
        self.seen.add((c.type, normalize(c.content)))
        return proposal._replace(candidate=c)

    def rejection(self, c: Candidate, weak: bool) -> str | None:
        if _too_short(c.content):
            return "too short"
        if weak and self.opts.weak == "skip":
            return "weak"
        if c.confidence < self.opts.min_confidence:
            return "low confidence"
        if (c.type, normalize(c.content)) in self.seen:
            return "duplicate"
        return None

    def record(self, proposal: _Proposal) -> MemoryRecord:
        c, message, opts = proposal.candidate, proposal.message, self.opts
        when = message.timestamp if message is not None and message.timestamp else opts.now
        cues = c.cues or tuple(derive_cues(_PLACEHOLDER_RE.sub(" ", c.content)))
        return MemoryRecord(
            memory_id=_memory_id(opts.namespace, c.type, c.content),
            content=c.content,
            created_at=when,
            updated_at=when,
            cues=cues,
            tags=c.tags,
            type=c.type,
            source=opts.source,
            namespace=opts.namespace,
            metadata=self.metadata(proposal, when),
            cue_origin="given" if c.cues else "derived",
            key=c.key,
        )

    def metadata(self, proposal: _Proposal, when: datetime) -> dict[str, JSONValue]:
        c, message = proposal.candidate, proposal.message
        meta: dict[str, JSONValue] = {}
        if message is not None:
            meta.update(speaker=message.speaker, role=message.role)
        meta.update(session_id=self.opts.session_id, rule=c.rule, confidence=round(c.confidence, 4))
        if c.key is not None:
            meta["key"] = c.key
        if message is not None:
            meta["timestamp"] = when.isoformat()
        counts = _placeholder_counts(c.content)
        if counts:
            meta["redacted"] = dict(counts)
        return meta


def _coerce_candidate(item: object, where: str) -> Candidate:
    if isinstance(item, Candidate):
        return item
    if isinstance(item, Mapping):
        return Candidate.from_mapping(item, where)
    raise ValidationError(where, item, "a Candidate or a mapping with content, type, confidence")


def capture(
    messages: Iterable[object],
    *,
    session_id: str,
    namespace: str = "default",
    mode: Mode = "rules",
    rules: Sequence[CaptureRule] = DEFAULT_RULES,
    extractor: Extractor | None = None,
    extractor_mode: ExtractorMode = "extend",
    weak: Weak = "skip",
    min_confidence: float = 0.5,
    roles: Collection[str] = ("user",),
    redaction: RedactionPolicy | None = DEFAULT_POLICY,
    now: datetime | None = None,
    source: str = "chat",
) -> CaptureResult:
    """Turn conversation turns into memory records, by rule (and optionally an extractor).

    Args:
        messages: chat turns; see :meth:`Message.coerce` for the accepted forms.
        session_id: stored in every record's metadata.
        namespace: the records' namespace (part of their id).
        mode: ``"rules"`` captures what :data:`DEFAULT_RULES` (or ``rules``) match in the
            turns of ``roles``; ``"all"`` stores every turn of every role as an ``event``
            (``"{speaker}: {text}"``, confidence 1.0, no rules, no weak filter): a transcript.
        rules: the rule table, in priority order; extend it with ``(*DEFAULT_RULES, rule(...))``.
        extractor: called with the redacted messages; returns Candidates or mappings
            (``content``, ``type``, ``confidence``, optional ``key``/``cues``/``tags``/``rule``).
        extractor_mode: ``"extend"`` adds its candidates after the rules' (or the transcript's);
            ``"replace"`` uses them instead.
        weak: weak or temporary remarks are skipped (``"skip"``) or kept with confidence x 0.5
            (``"downweight"``); ``min_confidence`` is applied afterwards.
        min_confidence: candidates below this are skipped ("low confidence").
        roles: the roles whose turns rules read (mode ``"rules"``).
        redaction: the policy applied to every text before anything else; None disables it
            (then secrets in the conversation can reach the records).
        now: aware time for records whose message has no timestamp (default: current UTC).
        source: the records' ``source``.

    Returns:
        A :class:`CaptureResult`. Records are not stored: pass them to ``CueMap.add_many``.
        Ids depend on namespace, type and content only, so capturing the same remark again
        gives the same id (storing it twice raises ``DuplicateIdError``).

    Raises:
        ValidationError: a bad message (``messages[i]``), extractor output (``extractor[i]``),
            ``now`` that is naive, or another bad argument.
        ConfigError: an unknown ``mode``/``extractor_mode``/``weak``, or a bad rule table.

    Example:
        >>> r = capture([{"role": "user", "content": "以后叫我小王"}], session_id="s").records[0]
        >>> r.content, r.type.value, r.metadata["key"]
        ('称呼用户为小王', 'preference', 'user.display_name')
    """
    opts = _Options(
        session_id=_text(session_id, "session_id"),
        namespace=validate_namespace(namespace),
        mode=_choice(mode, "mode", _MODES),
        rules=_check_rules(rules),
        extractor=_check_extractor(extractor),
        extractor_mode=_choice(extractor_mode, "extractor_mode", _EXTRACTOR_MODES),
        weak=_choice(weak, "weak", _WEAK_MODES),
        min_confidence=_confidence(min_confidence, "min_confidence"),
        roles=_check_roles(roles),
        redaction=_check_policy(redaction),
        now=_check_now(now),
        source=_text(source, "source"),
    )
    return _run(opts, _coerce_messages(messages))


def _run(opts: _Options, messages: Sequence[Message]) -> CaptureResult:
    run = _Run(opts)
    clean = run.clean(messages)
    proposals: list[_Proposal] = []
    if opts.extractor is None or opts.extractor_mode == "extend":
        proposals = run.transcript(clean) if opts.mode == "all" else run.from_rules(clean)
    proposals += run.extracted(clean)
    accepted = [p for p in map(run.accept, proposals) if p is not None]
    records = tuple(run.record(p) for p in accepted)
    return CaptureResult(records, tuple(run.skipped), dict(run.redactions))
