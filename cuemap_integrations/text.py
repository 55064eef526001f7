"""Deterministic text processing for cue-based recall in English, Chinese and mixed text.

Everything here is rule-based and reproducible: the same input gives the same output under any
``PYTHONHASHSEED`` because no output order ever comes from iterating a ``set`` (sets are only used
for membership tests). Output lists follow the order of first occurrence in the text.

Pipeline:
    * :func:`normalize` - NFKC, casefold, CJK punctuation to ASCII, whitespace collapsed.
    * :func:`words` - Latin/number tokens (identifiers plus their parts), duplicates kept.
    * :func:`content_terms` - BM25 terms: stemmed non-stop words, CJK bigrams and unigrams.
    * :func:`query_units` - the unit sequence used by :class:`CueLexicon` (one unit per Latin
      identifier, one per CJK character).
    * :func:`derive_cues` - deterministic cues for a memory that was given none.
    * :class:`CueLexicon` - a reference-counted trie for longest-match of known cues in a query.

Script coverage: :func:`is_cjk` is true for Han ideographs (URO, Extensions A-I, compatibility
ideographs, 々 〆 〇) and also for Hiragana, Katakana and Hangul syllables, so Japanese and Korean
text is handled per character like Chinese. Latin tokens are any other letters and digits
(accented Latin, Greek and Cyrillic included); only plain lower-case ASCII words are stemmed.

Compiled fast path: the extension module ``_textc`` (``_textc.c``, built with the package by
``hatch_build.py``) implements the ASCII case of the hottest rules (normalizing, the Porter
stemmer, apostrophes and identifier tokens, stems and terms, quoted, identifier, name and
salient-word cues, the final choice of cues) and returns exactly what the Python code here
returns; it is chosen once at import when it is built and loads. The Python code stays the
reference and the fallback: non-ASCII text always takes it, and so does everything when the
extension is absent or ``CUEMAP_TEXTC=0`` is in the environment at import (the tests compare
the two that way).

Example:
    >>> normalize("ＡＢＣ，Redis！")
    'abc,redis!'
    >>> words("POST /ops/clear-cache")
    ['post', '/ops/clear-cache', 'ops', 'clear-cache', 'clear', 'cache']
    >>> query_units("上次 orders")
    ['上', '次', 'order']
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import sys
import unicodedata
from collections.abc import Callable, Container, Hashable, Iterable, Iterator, Sequence
from datetime import date
from itertools import chain, compress, filterfalse, islice, repeat
from operator import not_
from typing import Any, TypeAlias, TypeVar

__all__ = [
    "CJK_FUNCTION_WORDS",
    "CJK_STOP_CHARS",
    "STOP_WORDS",
    "CueKeys",
    "CueLexicon",
    "content_terms",
    "derive_cues",
    "has_ascii_digit",
    "is_cjk",
    "joined_pairs",
    "normalize",
    "query_units",
    "stem",
    "stems_and_terms",
    "word_stems",
    "words",
]

_TEXTC_ABI = 19  # the functions and arguments _textc.c implements (its ABI_VERSION)


def _load_textc() -> Any:
    """The compiled ASCII fast path (``_textc``); None when not built, stale or switched off."""
    if os.environ.get("CUEMAP_TEXTC", "1") == "0":
        return None
    try:
        module = importlib.import_module(f"{__package__}._textc")
    except ImportError:
        return None
    return module if getattr(module, "ABI_VERSION", None) == _TEXTC_ABI else None


# Chosen once; the call sites below test it (None: the Python code alone).
_C: Any = _load_textc()

# --------------------------------------------------------------------------------------------
# Word lists
# --------------------------------------------------------------------------------------------

STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above after again against all also although am among an and any anybody anyone
    anything are aren around as at be because been before being below between both but by can
    cannot could couldn d did didn do does doesn doing don down during each either else even ever
    every everyone everything few for from further get gets getting got had hadn has hasn have
    haven having he hello her here hers herself hey hi him himself his how however i if in into
    is isn it its itself just let lets like ll m ma may me might mightn more most must mustn my
    myself needn neither no nobody nor not nothing now o of off ok okay on once only onto or other
    ought our ours ourselves out over own per please quite rather re really s same see shall shan
    she should shouldn since so some somebody someone something still such t than thank thanks
    that the their theirs them themselves then there these they this those though through thus to
    too toward towards under unless until up upon us ve very via was wasn we well were weren what
    whatever when whenever where whereas wherever whether which while who whoever whom whose why
    will with within without would wouldn y yes yet you your yours yourself yourselves
    """.split()
)
"""English function words (lower case), dropped from content terms and salient-word cues."""

CJK_STOP_CHARS: frozenset[str] = frozenset(
    "的了是在我你他她它们这那个和与也就都而及着吗呢吧啊把被让给从对又还很要会能有没不嘛呀哦啦嗯哎呃噢"
)
"""Chinese single-character function words: never a unigram term, always a cue split point."""

_CJK_FUNCTION_WORDS_RAW = (
    "为什么 怎么样 是不是 有没有 因为 所以 但是 然后 后来 上次 怎么 什么 如何 哪里 哪个 "
    "还是 或者 以及 导致 已经 一下 可以 需要 应该 这个 那个 这些 那些 这样 那样 这里 "
    "那里 我们 你们 他们 她们 它们 如果 虽然 而且 并且 不过 于是 因此 由于 之前 之后 "
    "时候 的话 就是 只是 还有 没有 一个 一些 自己 大家 现在 当时 刚才 一直 其实 比如 "
    "例如 关于 对于 通过 根据 为了"
).split()

# Longest first so that a regex alternation built from it prefers 为什么 over 什么 (sorted() is
# stable, so equal lengths keep the listed order and the tuple is the same on every run).
CJK_FUNCTION_WORDS: tuple[str, ...] = tuple(sorted(_CJK_FUNCTION_WORDS_RAW, key=len, reverse=True))
"""Multi-character Chinese function words, longest first: split points for Chinese cue terms."""

# Month and weekday names (and relative days) are never cues by themselves: they only take part
# in dates, which are emitted in ISO form.
_CALENDAR_WORDS = frozenset(
    """
    january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday today tomorrow yesterday tonight
    """.split()
)

# Identifier parts that only say "this is a web address"; never worth a cue of their own.
_WEB_PARTS = frozenset("com org net www http https html htm".split())

_MONTHS: dict[str, int] = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
    "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9,
    "sept": 9, "sep": 9, "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12,
    "dec": 12,
}  # fmt: skip

# --------------------------------------------------------------------------------------------
# Character classes and compiled patterns
# --------------------------------------------------------------------------------------------

_CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x3005, 0x3007),  # 々 〆 〇 (Han script marks)
    (0x3041, 0x309F),  # Hiragana
    (0x30A1, 0x30FA),  # Katakana (without ゠ and the middle dot ・, which are punctuation)
    (0x30FC, 0x30FF),  # Katakana prolonged sound mark and iteration marks
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK Unified Ideographs Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xAC00, 0xD7A3),  # Hangul syllables
    (0xF900, 0xFAFF),  # CJK Compatibility Ideographs
    (0x20000, 0x2A6DF),  # Extension B
    (0x2A700, 0x2EE5F),  # Extensions C, D, E, F, I
    (0x2F800, 0x2FA1F),  # Compatibility Ideographs Supplement
    (0x30000, 0x323AF),  # Extensions G, H
)
_CJK = "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _CJK_RANGES)
_W = rf"[^\W{_CJK}]"  # a Latin "word" character: letter, digit or underscore, never CJK
_L = rf"[^\W\d_{_CJK}]"  # a Latin letter

_CJK_CHAR_RE = re.compile(f"[{_CJK}]")
_CJK_RUN_RE = re.compile(f"[{_CJK}]+")
# An identifier: word runs joined by - . / : @ (underscore is a word character). A leading "/"
# makes a path, but not after ":" or "/" so that "https://host/x" yields the token "host/x".
_ID = rf"(?:(?<!{_W})(?<![:/])/)?{_W}+(?:[-./:@]{_W}+)*"
_ID_SPLIT_RE = re.compile(f"({_ID})")
_AW = "[A-Za-z0-9_]"  # _W restricted to ASCII
_ASCII_ID = rf"(?:(?<!{_AW})(?<![:/])/)?{_AW}+(?:[-./:@]{_AW}+)*"
_ASCII_ID_RE = re.compile(_ASCII_ID)
_ASCII_ID_SPLIT_RE = re.compile(f"({_ASCII_ID})")
# The same pattern for text without "/": a match needs a "/" to take the optional leading slash
# or a "/" separator, so without one it finds exactly the same identifiers. It starts with a
# character class, which lets the regex engine skip ahead to candidate positions instead of
# trying the lookbehinds at every one: about 40% less time on a typical turn.
_ASCII_NO_SLASH = f"{_AW}+(?:[-.:@]{_AW}+)*"
_ASCII_NO_SLASH_RE = re.compile(_ASCII_NO_SLASH)
_SCAN_RE = re.compile(rf"(?P<id>{_ID})|(?P<cjk>[{_CJK}]+)")
# A lone letter glued on by an apostrophe ("don't", "it's", "o'clock") is dropped, keeping the
# apostrophe itself so that it still separates words.
_APOS_RE = re.compile(rf"(?<={_W}'){_L}(?!{_W})|(?<!{_W}){_L}(?='{_W})")
# The same pattern for ASCII text, where _W is [A-Za-z0-9_] and _L is [A-Za-z]: classes of a
# few ranges instead of a negated Unicode category less the CJK ranges, tested at each match.
_ASCII_APOS_RE = re.compile(rf"(?<={_AW}')[A-Za-z](?!{_AW})|(?<!{_AW})[A-Za-z](?='{_AW})")
_PART_SPLIT_RE = re.compile(r"[-._:@]+")
_SEPARATORS = frozenset("-._:@/")
_ASCII_WORD_RE = re.compile(r"[a-z]+")

# The scheme starts at a word edge and is short: otherwise every position of a long "a-a-a-..."
# token would start a scan to its end (quadratic time).
_URL = r"(?<![a-z0-9+.\-])[a-z][a-z0-9+.\-]{0,31}://(?:[^\s/?#@]*@)?(?P<host>[^\s/?#:\"'<>`]+)[^\s\"'<>`]*"
_URL_RE = re.compile(_URL)
_CODE_OR_URL_RE = re.compile(rf"`[^`]*`|{_URL}", re.IGNORECASE)
_FENCE_RE = re.compile(r"```.*?```")
_QUOTE_RES = (
    re.compile(r'"([^"]+)"'),
    # Single quotes only at word edges, so apostrophes in "don't" never open a quotation. The
    # edge test is a lookbehind over the quote and the character before it, placed after the
    # quote: the same test, but a pattern that starts with a literal lets the engine jump from
    # quote to quote instead of testing the lookbehind at every position of the text.
    re.compile(rf"'(?<!{_W}')([^'\s](?:[^']*[^'\s])?)'(?!{_W})"),
    re.compile(r"`([^`]+)`"),
)
_QUOTE_MARKS = ('"', "'", "`")  # the quotation mark each of _QUOTE_RES needs
_COMMAND_RE = re.compile(r"[a-z][a-z0-9_.+\-]*")

_UNITS = (
    "ms us μs ns s sec secs second seconds min mins minute minutes h hr hrs hour hours d day days "
    "wk week weeks month months yr yrs year years b byte bytes kb mb gb tb pb kib mib gib tib k m "
    "bn px qps rps tps rpm fps hz khz mhz ghz kg g lb lbs km cm mm ft mi kw w v x °c °f %"
).split()
_UNIT_SET = frozenset(_UNITS)
_UNIT_ALT = "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True))
# Numbers that are not part of an identifier ("v2.1", "2024-05-01" are identifiers), with an
# optional currency sign, thousands separators and a unit written with or without a space.
_NUMBER_RE = re.compile(
    rf"(?<!{_W})(?<![-./:@$€£¥])(?P<cur>[$€£¥])?"
    r"(?P<num>[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])|[0-9]+(?:\.[0-9]+)?)"
    rf"(?:\s?(?P<unit>{_UNIT_ALT})(?!{_W}))?(?!{_W})(?![-./:@]{_W})"
)

_MONTH = "(?P<mon>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_ORD = r"(?:st|nd|rd|th)?"
_DATE_RES = (
    re.compile(
        rf"(?<!{_W})(?<![-/.])(?P<y>[0-9]{{4}})(?P<sep>[-/.])(?P<m>[0-9]{{1,2}})(?P=sep)"
        rf"(?P<d>[0-9]{{1,2}})(?!{_W})(?![-/.][0-9])"
    ),
    re.compile(
        r"(?<![0-9])(?P<y>[0-9]{4}) ?年 ?(?P<m>[0-9]{1,2}) ?月(?: ?(?P<d>[0-9]{1,2}) ?[日号])?"
    ),
    re.compile(
        rf"(?<!{_W})(?P<d>[0-9]{{1,2}}){_ORD} (?:of )?{_MONTH}(?:, ?| )(?P<y>[0-9]{{4}})(?!{_W})"
    ),
    re.compile(rf"(?<!{_W}){_MONTH} (?P<d>[0-9]{{1,2}}){_ORD}(?:, ?| )(?P<y>[0-9]{{4}})(?!{_W})"),
    re.compile(rf"(?<!{_W}){_MONTH},? (?P<y>[0-9]{{4}})(?!{_W})"),
)

_YEAR_RUN_RE = re.compile(r"[0-9]{4}")  # what each of _DATE_RES needs (its year)

_CJK_SPLIT_RE = re.compile(
    "|".join(re.escape(w) for w in CJK_FUNCTION_WORDS)
    + "|["
    + "".join(sorted(CJK_STOP_CHARS))
    + "]"
)

# --------------------------------------------------------------------------------------------
# normalize / is_cjk
# --------------------------------------------------------------------------------------------

_PUNCT_MAP: dict[str, str] = {
    "。": ".", "，": ",", "、": ",", "；": ";", "：": ":", "？": "?", "！": "!",
    "（": "(", "）": ")",
    "「": '"', "」": '"', "『": '"', "』": '"', "“": '"', "”": '"', "„": '"', "«": '"', "»": '"',
    "‘": "'", "’": "'", "【": "[", "】": "]", "《": "<", "》": ">", "〈": "<", "〉": ">",
    "…": "...", "—": "-", "–": "-", "‐": "-", "‑": "-", "‒": "-", "−": "-", "～": "~", "〜": "~",
    "\u3000": " ",
}  # fmt: skip
# Every ASCII character maps to itself in the tables below: str.translate of text that is not
# ASCII looks each character up, and a character missing from the table costs a KeyError raised
# and cleared (~10.9 us -> ~4.0 us to translate a 170-character memory with one dash in it).
_ASCII_AS_IS: dict[int, str] = {cp: chr(cp) for cp in range(0x80)}
_PUNCT_TABLE: dict[int, str] = {**_ASCII_AS_IS, **{ord(k): v for k, v in _PUNCT_MAP.items()}}
# Control characters (Unicode category Cc) become spaces; the whitespace collapse then merges them.
_NORMALIZE_TABLE: dict[int, str] = {
    **_PUNCT_TABLE,
    **{cp: " " for cp in (*range(0x20), *range(0x7F, 0xA0))},
}
_MAX_NORMALIZE_PASSES = 8


def _changes_of(table: dict[int, str]) -> re.Pattern[str]:
    """One character class of the characters ``table`` maps to another string."""
    changed = (cp for cp, to in table.items() if to != chr(cp))
    return re.compile("[" + "".join(f"\\U{cp:08x}" for cp in changed) + "]")


_PUNCT_CHANGES, _NORMALIZE_CHANGES = _changes_of(_PUNCT_TABLE), _changes_of(_NORMALIZE_TABLE)
_REPLACED_MAX = 4  # distinct characters _translated replaces one by one (more: translate)


def _translated(text: str, table: dict[int, str], changes: re.Pattern[str]) -> str:
    """``text.translate(table)``, where ``changes`` (:func:`_changes_of`) finds the characters
    it changes, whose replacements hold none of them (ASCII here). For text that is not ASCII
    translate looks every character up in the table, ~550 instructions each (~137,000 for a
    bench memory holding one emoji); the scan for the few it changes (usually none) and a
    replace per distinct one cost a few percent of that."""
    found = changes.findall(text)
    if not found:
        return text
    distinct = set(found)
    if len(distinct) > _REPLACED_MAX:
        return text.translate(table)
    for char in distinct:
        text = text.replace(char, table[ord(char)])
    return text


def _normalize_pass(text: str) -> str:
    if text.isascii():
        return _normalize_ascii_pass(text)
    # NFKC again after casefold: casefold can produce sequences that NFKC composes or reorders.
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return " ".join(_translated(folded, _NORMALIZE_TABLE, _NORMALIZE_CHANGES).split())


def _normalize_ascii_pass(text: str) -> str:
    """:func:`_normalize_pass` of ASCII text: NFKC leaves it as is and casefold lower-cases it;
    of the table only the control characters can occur, so text without any (printable) skips
    the translation, which cost more than the rest of the pass."""
    folded = text.lower()
    if not folded.isprintable():
        folded = folded.translate(_NORMALIZE_TABLE)
    return " ".join(folded.split())


# Cues, tags, words and queries repeat endlessly: short strings are normalized, stemmed and split
# into units once per process (pure functions of the string, so a cache cannot change a result).
_CACHED_CHARS = 64
# Keys per generation of a cache (_Memo: it holds up to twice as many). The lru_caches these
# replaced held 65,536 keys; a memo of one generation of 131,072 (forgetting all at once when
# full) took 5.0 MB per cache once the 100,000 bench memories filled it (each brings a new word:
# 104,000 distinct), 86 bytes per memory for the two that fill (stems, salient words), plus the
# keys they kept. Two generations of 16,384: keys asked since the last turnover stay (a common
# word is copied from the older generation, not derived again), the rest go (membreak.py 100000:
# 57 bytes per memory less; ingest_ab and recall_ab at 100,000 the same within their noise).
_CACHE_SIZE = 1 << 14

_K = TypeVar("_K", bound=Hashable)
_V = TypeVar("_V")


class _Memo(dict[_K, _V]):
    """``memo[key] == fn(key)`` for a pure one-argument ``fn``, remembered for the last
    ``maxsize`` to ``2 * maxsize`` keys asked (a pure function gives the same values again).

    The per-word caches of ingest (stems, salient and name words ...) are asked dozens of times
    per memory and almost always hit: a hit here is one C-level dict lookup (``memo[key]``, or
    ``map(memo.__getitem__, words)``), where an ``lru_cache`` hit also moves a node in its
    recency list, which cost about twice as much, and each entry carries no list node either
    (measured: 38 bytes per entry instead of 94). Recency is kept by generations instead: when
    the memo holds ``maxsize`` keys, they become the older generation (the one before is
    forgotten) and the memo starts empty; a key asked again comes back from the older one."""

    __slots__ = ("_fn", "_maxsize", "_older")

    def __init__(self, fn: Callable[[_K], _V], maxsize: int) -> None:
        super().__init__()
        self._fn = fn
        self._maxsize = maxsize
        self._older: dict[_K, _V] = {}

    def __missing__(self, key: _K) -> _V:
        older = self._older
        value = older[key] if key in older else self._fn(key)
        if len(self) >= self._maxsize:
            self._older = self.copy()
            self.clear()
        self[key] = value
        return value


def _memoized(fn: Callable[[_K], _V]) -> Callable[[_K], _V]:
    """``fn`` through a :class:`_Memo` of :data:`_CACHE_SIZE` keys (its ``__getitem__``)."""
    return _Memo(fn, _CACHE_SIZE).__getitem__


def normalize(text: str) -> str:
    """Normalize text for matching: NFKC, casefold, ASCII punctuation, single spaces.

    Full-width ASCII becomes half-width, CJK and typographic punctuation is mapped to ASCII
    (``。``→``.``, ``「」``/``“”``→``"``, ``—``→``-`` ...), control characters become spaces, and
    every whitespace run becomes one space. The result is a fixed point: ``normalize`` is
    idempotent for every string.

    Args:
        text: any string (lone surrogates and combining marks included).

    Returns:
        The normalized string (possibly empty).
    """
    if len(text) <= _CACHED_CHARS:
        return _normalize_short(text)
    if _C is not None and text.isascii():  # one C pass, the same object back if unchanged
        out: str = _C.normalize(text)
        return out
    if _is_normal_ascii(text):  # e.g. a memory's normalized text, tokenized again for indexing
        return text
    if len(text) <= _RECENT_CHARS:
        return _normalize_recent(text)
    return _normalize(text)


def _is_normal_ascii(text: str) -> bool:
    """Whether ``text`` is ASCII that :func:`normalize` returns unchanged (checked in C).

    For printable lower-case ASCII every step of a pass is the identity (NFKC, casefold, the
    table only maps non-ASCII and control characters) except the whitespace collapse, which is
    too once spaces are single and inside."""
    return (
        text.isascii()
        and text.isprintable()
        and text == text.lower()
        and "  " not in text
        and text[:1] != " "
        and text[-1:] != " "
    )


def _normalize(text: str) -> str:
    out = _normalize_pass(text)
    for _ in range(_MAX_NORMALIZE_PASSES):
        # Lower-case ASCII output is already a fixed point: no later pass can change it.
        if out.isascii() and out == out.lower():
            return out
        again = _normalize_pass(out)
        if again == out:
            return out
        out = again
    return out


def _normalize_any(text: str) -> str:
    """:func:`_normalize`, compiled for ASCII text when the extension is there."""
    if _C is not None and text.isascii():
        out: str = _C.normalize(text)
        return out
    return _normalize(text)


_normalize_short = _memoized(_normalize_any)
# Indexing one memory normalizes its content more than once (its index keys, its duplicate key):
# a few recent long texts are enough for those calls to meet. Texts up to 4,096 characters only,
# so the cache never holds more than about a megabyte.
_RECENT_CHARS = 4096
_normalize_recent = functools.lru_cache(maxsize=32)(_normalize_any)


def is_cjk(ch: str) -> bool:
    """Whether ``ch`` is a single CJK character (Han ideograph, kana or Hangul syllable).

    Args:
        ch: a string; anything but exactly one character gives ``False``.

    Returns:
        ``True`` for Han ideographs (Unified, Extensions A-I, Compatibility, 々 〆 〇),
        Hiragana, Katakana and Hangul syllables.
    """
    return len(ch) == 1 and _CJK_CHAR_RE.match(ch) is not None


# --------------------------------------------------------------------------------------------
# Porter stemmer (Martin Porter's reference implementation of the 1980 algorithm)
# --------------------------------------------------------------------------------------------

_STEP2 = (
    ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("izer", "ize"),
    ("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous"),
    ("ization", "ize"), ("ation", "ate"), ("ator", "ate"), ("alism", "al"), ("iveness", "ive"),
    ("fulness", "ful"), ("ousness", "ous"), ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"),
    ("logi", "log"),
)  # fmt: skip
_STEP3 = (
    ("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"), ("ful", ""),
    ("ness", ""),
)  # fmt: skip
_STEP4 = "al ance ence er ic able ible ant ement ment ent ion ou ism ate iti ous ive ize".split()


# Porter's definition: a, e, i, o, u are vowels; y is a vowel only after a consonant. A word's
# shape spells each letter as "c" or "v": one C-level translate for words without a y (most),
# where a per-letter loop made the stemmer's measure the main cost of stemming a new word.
_SHAPE = str.maketrans({ch: "v" if ch in "aeiou" else "c" for ch in "abcdefghijklmnopqrstuvwxz"})


def _shape(word: str) -> str:
    """``"c"`` or ``"v"`` per letter of a lower-case ASCII word (Porter's consonants, vowels)."""
    if "y" not in word:
        return word.translate(_SHAPE)
    shape = ""
    for ch in word:
        if ch == "y":
            shape += "v" if shape[-1:] == "c" else "c"
        else:
            shape += "v" if ch in "aeiou" else "c"
    return shape


def _measure(stem_: str) -> int:
    """Porter's m: the number of vowel-consonant sequences in ``[C](VC){m}[V]``."""
    return _shape(stem_).count("vc")


def _has_vowel(stem_: str) -> bool:
    return "v" in _shape(stem_)


def _ends_double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _shape(word)[-1] == "c"


def _ends_cvc(word: str) -> bool:
    """Porter's *o: consonant-vowel-consonant at the end, the last not w, x or y."""
    if len(word) < 3 or word[-1] in "wxy":
        return False
    return _shape(word)[-3:] == "cvc"


def _step1a(word: str) -> str:
    if word.endswith(("sses", "ies")):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _step1b(word: str) -> str:
    if word.endswith("eed"):
        return word[:-1] if _measure(word[:-3]) > 0 else word
    for suffix in ("ed", "ing"):
        base = word[: -len(suffix)]
        if word.endswith(suffix) and _has_vowel(base):
            return _step1b_repair(base)
    return word


def _step1b_repair(base: str) -> str:
    if base.endswith(("at", "bl", "iz")):
        return base + "e"
    if _ends_double_consonant(base):
        return base if base[-1] in "lsz" else base[:-1]
    return base + "e" if _measure(base) == 1 and _ends_cvc(base) else base


def _step1c(word: str) -> str:
    return word[:-1] + "i" if word.endswith("y") and _has_vowel(word[:-1]) else word


# Every suffix of a step, for one C-level endswith() that rules out most words at once.
_STEP2_ENDINGS = tuple(suffix for suffix, _ in _STEP2)
_STEP3_ENDINGS = tuple(suffix for suffix, _ in _STEP3)
_STEP4_ENDINGS = tuple(_STEP4)


def _replace_suffix(word: str, rules: Sequence[tuple[str, str]], endings: tuple[str, ...]) -> str:
    # The first rule whose suffix matches decides, even when its (m > 0) condition fails.
    if not word.endswith(endings):
        return word
    for suffix, replacement in rules:
        if word.endswith(suffix):
            base = word[: -len(suffix)]
            return base + replacement if _measure(base) > 0 else word
    return word


def _step2(word: str) -> str:
    return _replace_suffix(word, _STEP2, _STEP2_ENDINGS)


def _step3(word: str) -> str:
    return _replace_suffix(word, _STEP3, _STEP3_ENDINGS)


def _step4(word: str) -> str:
    if not word.endswith(_STEP4_ENDINGS):
        return word
    for suffix in _STEP4:
        if word.endswith(suffix):
            base = word[: -len(suffix)]
            if suffix == "ion" and not base.endswith(("s", "t")):
                return word
            return base if _measure(base) > 1 else word
    return word


def _step5(word: str) -> str:
    if word.endswith("e"):
        m = _measure(word[:-1])
        if m > 1 or (m == 1 and not _ends_cvc(word[:-1])):
            word = word[:-1]
    if word.endswith("ll") and _measure(word) > 1:
        word = word[:-1]
    return word


_PORTER_STEPS: tuple[Callable[[str], str], ...] = (
    _step1a, _step1b, _step1c, _step2, _step3, _step4, _step5,
)  # fmt: skip


def stem(word: str) -> str:
    """Porter-stem a lower-case ASCII word.

    This is Martin Porter's reference implementation of the 1980 algorithm (the one that produces
    the official ``voc.txt``/``output.txt`` test vocabulary), including its two documented
    departures from the paper: step 2 maps ``bli``→``ble`` (not ``abli``→``able``) and adds
    ``logi``→``log``.

    Args:
        word: a token.

    Returns:
        The stem; words shorter than 3 letters and anything that is not purely lower-case ASCII
        letters (digits, non-ASCII, identifiers with ``- _ . / :``) come back unchanged.

    Example:
        >>> stem("caresses"), stem("running"), stem("expires")
        ('caress', 'run', 'expir')
    """
    return _stem(word)  # remembered per process (:data:`_STEMS`)


def _porter(word: str) -> str:
    """:func:`stem`, computed (the function :data:`_STEMS` remembers)."""
    if len(word) < 3 or _ASCII_WORD_RE.fullmatch(word) is None:
        return word
    for step in _PORTER_STEPS:
        word = step(word)
    return word


def _interned_stem(
    word: str, porter: Callable[[str], str] = _porter if _C is None else _C.porter
) -> str:
    """:func:`stem`'s value as the interned string: the index interns every term it posts (a
    lookup in the interpreter's table of interned strings, cache-cold for ~25 terms of every
    memory: ~8 % of bulk ingest), and a string interned already skips that lookup. Interning
    once per distinct word here, where the memo keeps it, makes the index's ``sys.intern`` of
    each term a flag check."""
    return sys.intern(porter(word))


def _stem_memo() -> Any:
    """stem's cache: a :class:`_Memo` of :func:`_interned_stem`, or with the extension its C
    twin (``_textc.StemMemo``: the same generations, looked up by a word's bytes). The C one
    lets ``derive_keys`` stem a text's words without making a string for each (a hit hands
    back the entry's stem, its word interned, and whether the word is a stop, calendar, web
    word or unit), where a dict lookup needs a new string for every word of every memory."""
    if _C is None:
        return _Memo(_interned_stem, _CACHE_SIZE)
    return _C.StemMemo(
        _interned_stem, _CACHE_SIZE, STOP_WORDS, _CALENDAR_WORDS, _WEB_PARTS, _UNIT_SET
    )


# the hot paths map its lookup over a text's words (no Python call per word)
_STEMS: Any = _stem_memo()
_stem: Callable[[str], str] = _STEMS.__getitem__


# --------------------------------------------------------------------------------------------
# Tokens
# --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=32)  # cue derivation, indexing and BM25 scan one text in turn
def _scan(normalized: str) -> tuple[tuple[str, str], ...]:
    """``(identifier, cjk_run)`` pairs in text order, exactly one of the two non-empty."""
    # findall (one tuple per match, no Match objects) is the hot path of bulk ingest; both groups
    # match non-empty text only, so an empty "cjk" group means the identifier group matched.
    return tuple(_SCAN_RE.findall(_drop_apostrophes(normalized)))


def _drop_apostrophes(text: str) -> str:
    """``_APOS_RE.sub("", text)``, testing only the positions next to an apostrophe.

    A match is one letter right before or right after an apostrophe, so only those positions
    can match; ``match(text, i)`` sees the whole string in its lookbehinds, which makes each
    test the one ``sub`` makes at ``i`` (matches are one character, so ``sub`` tests every
    position). Scanning the whole text costs ~10 us per memory; this, a few tests.
    """
    quote = text.find("'")
    if quote < 0:
        return text
    match = (_ASCII_APOS_RE if text.isascii() else _APOS_RE).match
    drop: list[int] = []
    while quote >= 0:
        for i in (quote - 1, quote + 1):
            if i >= 0 and (not drop or drop[-1] < i) and match(text, i):
                drop.append(i)  # increasing: each apostrophe's neighbours follow the last ones
        quote = text.find("'", quote + 1)
    if not drop:
        return text
    pieces = [
        text[start + 1 : end] for start, end in zip([-1, *drop], [*drop, len(text)], strict=True)
    ]
    return "".join(pieces)


@functools.lru_cache(maxsize=32)  # derivation, then indexing (stems, then terms) of one text
def _latin_tokens(normalized: str) -> tuple[str, ...]:
    """The identifier chunks of :func:`_scan`, in order."""
    if _C is not None and normalized.isascii():  # the two steps below in one C pass
        tokens: tuple[str, ...] = _C.latin_tokens(normalized)
        return tokens
    text = _drop_apostrophes(normalized)
    if text.isascii():
        # No CJK run can occur and an ASCII character is a word character exactly when it is
        # in [A-Za-z0-9_], so _ASCII_ID_RE (no groups, no CJK ranges) finds the same
        # identifiers as _SCAN_RE in about 40% of the time.
        return tuple(_ascii_id_re(text, _ASCII_ID_RE, _ASCII_NO_SLASH_RE).findall(text))
    return tuple(ident for ident, _ in _scan(normalized) if ident)


def _ascii_id_re(text: str, general: re.Pattern[str], no_slash: re.Pattern[str]) -> re.Pattern[str]:
    """``no_slash`` (the faster, equivalent pattern) when ``text`` has no "/", else ``general``."""
    return general if "/" in text else no_slash


def _is_identifier(token: str) -> bool:
    """True when ``token`` holds a separator. Not memoized: one C-level set test, asked once per
    distinct word (by the memoized :func:`_is_salient_word`), where a memo kept an entry per
    distinct word (38 bytes per memory at 100,000 bench memories, each of which has a new one)."""
    return not _SEPARATORS.isdisjoint(token)


def _atoms(segment: str) -> list[str]:
    """The non-empty parts of ``segment`` split at - . _ : @ (none if it has no separator)."""
    parts = [p for p in _PART_SPLIT_RE.split(segment) if p]
    return [] if parts == [segment] else parts


@_memoized
def _parts(token: str) -> tuple[str, ...]:
    """Parts of an identifier: for a path each segment followed by that segment's atoms."""
    if "/" not in token:
        return tuple(_atoms(token))
    out: list[str] = []
    for segment in token.split("/"):
        if segment:
            out.append(segment)
            out.extend(_atoms(segment))
    return tuple(out)


def _expand(tokens: Sequence[str]) -> list[str]:
    # Only identifiers (a separator inside) have parts; most texts have none. A scanned token
    # holds word characters (alphanumeric or "_") and separators, so it is an identifier
    # exactly when it is not all alphanumeric: one C-level test per token, no cache lookup.
    if all(map(str.isalnum, tokens)):
        return list(tokens)
    out: list[str] = []
    for token in tokens:
        out.append(token)
        out.extend(_parts(token))
    return out


@functools.lru_cache(maxsize=32)  # cue derivation (salient words), then indexing (stems)
def _words_of(normalized: str) -> tuple[str, ...]:
    """:func:`words` of an already normalized text."""
    return tuple(_expand(_latin_tokens(normalized)))


# No per-token cache beyond those of stem and _parts: bulk ingest meets a new token (a name, a
# number) in most memories, and each cache entry is resident memory (measured: four more
# per-token caches cost ~680 bytes per memory at 10,000 memories for ~4% more speed).
def word_stems(normalized: str) -> set[str]:
    """``{stem(w) for w in words(normalized)}`` for an already normalized text.

    Args:
        normalized: the output of :func:`normalize`.

    Returns:
        The set of stems (membership tests only; never iterated for an output order).
    """
    return set(map(_stem, _words_of(normalized)))


def stems_and_terms(normalized: str) -> tuple[set[str], list[str]]:
    """``(word_stems(normalized), content_terms(normalized))``, computed together.

    In ASCII text whose tokens are all plain words (no identifier, so no parts), the words are
    the tokens and a token's terms are its stem unless it is a stop word: one stem lookup per
    token serves both, where the two functions look up each token in a cache of their own.

    Args:
        normalized: the output of :func:`normalize`.

    Returns:
        The stem set and the term list.
    """
    tokens = _latin_tokens(normalized)
    if _C is not None and normalized.isascii():  # any ASCII tokens, identifiers too
        pair: tuple[set[str], list[str]] = _C.stems_terms(tokens, STOP_WORDS, _STEMS)
        return pair
    if normalized.isascii() and all(map(str.isalnum, tokens)):
        stems = list(map(_stem, tokens))
        kept = compress(stems, map(not_, map(STOP_WORDS.__contains__, tokens)))
        return set(stems), list(kept)
    return word_stems(normalized), content_terms(normalized)


def words(text: str) -> list[str]:
    """Latin and number tokens of ``text`` in order, duplicates kept (for term frequency).

    ``text`` is normalized first. Identifiers (``clear-cache``, ``user_id``, ``v2.1``,
    ``/ops/clear-cache``, ``bob@example.com``) are emitted whole and then part by part; for paths
    each segment follows, then that segment's own parts. A trailing sentence period is never part
    of a token. A lone letter joined by an apostrophe is dropped (``don't`` → ``don``). CJK
    characters are not returned.

    Args:
        text: any text.

    Returns:
        The tokens.

    Example:
        >>> words("user_id v2.1, port 8001.")
        ['user_id', 'user', 'id', 'v2.1', 'v2', '1', 'port', '8001']
    """
    return list(_words_of(normalize(text)))


@_memoized
def _latin_terms(token: str) -> tuple[str, ...]:
    return tuple(_stem(w) for w in _expand([token]) if w not in STOP_WORDS)


def _cjk_terms(run: str) -> list[str]:
    """Each character (unless a stop character) followed by the bigram starting there."""
    out: list[str] = []
    for i, ch in enumerate(run):
        if ch not in CJK_STOP_CHARS:
            out.append(ch)
        if i + 1 < len(run):
            out.append(run[i : i + 2])
    return out


def content_terms(text: str) -> list[str]:
    """Terms for BM25 indexing and for matching a query against content (duplicates kept).

    Latin tokens come from :func:`words` minus :data:`STOP_WORDS`, plain words Porter-stemmed,
    identifiers unchanged. Each CJK run yields, position by position, the character (unless it is
    in :data:`CJK_STOP_CHARS`) and the bigram starting there, so stop characters still appear
    inside bigrams.

    Args:
        text: any text.

    Returns:
        The terms in text order.

    Example:
        >>> content_terms("The orders 超时了")
        ['order', '超', '超时', '时', '时了']
    """
    normalized = normalize(text)
    if normalized.isascii():  # no CJK run: the Latin tokens are the whole scan
        return list(chain.from_iterable(map(_latin_terms, _latin_tokens(normalized))))
    terms: list[str] = []
    for ident, cjk in _scan(normalized):
        terms.extend(_cjk_terms(cjk) if cjk else _latin_terms(ident))
    return terms


def joined_pairs(text: str) -> list[str]:
    """Each pair of adjacent plain words of ``text`` written as one word, in text order.

    People write the same compound apart in one sentence and as one word in another ("ice
    cream" / "icecream", "data base" / "database", "web site" / "website"); the memory's word
    then never meets the query's two. The query side reads each pair of adjacent words (one
    space apart, letters only, neither a stop word, so "a way" never becomes "away") also as
    the joined word, and keeps it only where the index knows it (see ``ranking.plan_query``).
    Memories are not split or joined: that would guess, and cost every memory.

    Args:
        text: any text (normalized here).

    Returns:
        The joined words, without duplicates, unstemmed.

    Example:
        >>> joined_pairs("Any ice cream on the web site?")
        ['icecream', 'website']
    """
    tokens = normalize(text).split(" ")
    # the second word may end a clause ("web site?"); the first may not ("ice, cream")
    pairs = zip(tokens, (t.rstrip(_CLAUSE_END) for t in tokens[1:]), strict=False)
    return list(dict.fromkeys(a + b for a, b in pairs if _is_plain_word(a) and _is_plain_word(b)))


_CLAUSE_END = ",.;:!?)\"'"


def _is_plain_word(token: str) -> bool:
    """Two or more letters, no CJK character (a CJK run is no word), not a stop word."""
    return (
        len(token) > 1
        and token.isalpha()
        and (token.isascii() or _CJK_CHAR_RE.search(token) is None)
        and token not in STOP_WORDS
    )


_STOP_MARK = "\x00"


def query_units(text: str) -> list[str]:
    """The unit sequence used for lexicon matching.

    Each Latin identifier is one unit (whole, not split into parts; plain words stemmed) and each
    CJK character is one unit; punctuation and spaces only separate units.

    Args:
        text: any text (normalized here).

    Returns:
        The units in text order.

    Example:
        >>> query_units("Orders 超时 /ops/clear-cache")
        ['order', '超', '时', '/ops/clear-cache']
    """
    if len(text) <= _CACHED_CHARS:
        return list(_query_units_short(text))
    return _query_units(text)


def _query_units(text: str) -> list[str]:
    normalized = normalize(text)
    if normalized.isascii():  # no CJK run: the units are the Latin tokens (a faster scan, cached)
        return [_STOP_MARK + t if t in STOP_WORDS else _stem(t) for t in _latin_tokens(normalized)]
    units: list[str] = []
    for ident, cjk in _scan(normalized):
        if cjk:
            units.extend(cjk)
        elif ident in STOP_WORDS:
            # Marked, so a stop word never meets a content word with the same stem
            # ("on" vs "one" -> "on"); cues containing stop words still match verbatim.
            units.append(_STOP_MARK + ident)
        else:
            units.append(_stem(ident))
    return units


@_memoized
def _query_units_short(text: str) -> tuple[str, ...]:
    return tuple(_query_units(text))


def word_unit(word: str) -> str | None:
    """The one unit :func:`query_units` finds in ``word`` when it is one lower-case ASCII word
    of letters and digits (most cues a feedback pass carries: its lenders' names and numbers),
    without the general path's normalize, token scan and memo entries; None for any other
    string (:meth:`CueKeys._key_of` takes it too; ``tests/core/test_text.py`` compares the two
    ways)."""
    if word.isascii() and word.isalnum() and word == word.lower():
        return _STOP_MARK + word if word in STOP_WORDS else _stem(word)
    return None


# --------------------------------------------------------------------------------------------
# Cue derivation
# --------------------------------------------------------------------------------------------

_MAX_QUOTE_WORDS = 6
_MAX_QUOTE_CJK = 12
_MAX_NAME_WORDS = 4
_MIN_CJK_TERM, _MAX_CJK_TERM = 2, 8
_MAX_CUE_CHARS = 128


# Exact prefilters: each pattern below cannot match a text without its trigger (a literal it
# requires, or an ASCII digit), so a text without it skips the regex and gets the same result.
# Most memories have no URL, quotation, code span or date; these checks cost a fraction of a
# regex scan each. tests/core/test_ingest_equivalence.py checks each trigger against its regex.
_URL_TRIGGER = "://"
_ASCII_DIGITS = "0123456789"


def has_ascii_digit(text: str) -> bool:
    """Whether ``text`` holds one of ``0``-``9`` (the prefilter of every date and number rule).

    Ten substring tests, each a C-level scan: about a third of one ``[0-9]`` regex search,
    which steps through the text in the regex engine (most texts have no digit at all).

    Example:
        >>> has_ascii_digit("port 8001"), has_ascii_digit("port ８")
        (True, False)
    """
    return any(map(text.__contains__, _ASCII_DIGITS))


def _blank_match(match: re.Match[str]) -> str:
    return " " * len(match.group())


def _mask(regex: re.Pattern[str], text: str, trigger: str) -> str:
    """Blank out every match with spaces of the same length (positions are kept).

    ``trigger`` is a substring every match contains: without it nothing can match."""
    return regex.sub(_blank_match, text) if trigger in text else text


def _quote_cue(span: str) -> str | None:
    span = span.strip(" .,;:!?")
    n_cjk = len(_CJK_CHAR_RE.findall(span))
    if not span or len(span.split()) > _MAX_QUOTE_WORDS or n_cjk > _MAX_QUOTE_CJK:
        return None
    return span


def _command_cue(span: str) -> str | None:
    """The program name of a backtick span that looks like a command line (``curl -X ...``)."""
    parts = span.split()
    if len(parts) < 2 or _COMMAND_RE.fullmatch(parts[0]) is None or parts[0] in STOP_WORDS:
        return None
    return parts[0]


def _quoted_cues(text: str) -> list[str]:
    if _C is not None and text.isascii():  # the three scans and both rules in one C pass
        compiled: list[str] = _C.quoted_cues(text, STOP_WORDS)
        return compiled
    found: list[tuple[int, str]] = []
    unfenced = _mask(_FENCE_RE, text, "```")  # fenced blocks are code, not short quotations
    for regex, mark in zip(_QUOTE_RES, _QUOTE_MARKS, strict=True):
        if mark not in unfenced:
            continue
        for match in regex.finditer(unfenced):
            cues = [_quote_cue(match.group(1))]
            if match.group().startswith("`"):
                cues.append(_command_cue(match.group(1)))
            found.extend((match.start(), c) for c in cues if c)
    found.sort(key=lambda item: item[0])  # stable: cues of one quotation keep their order
    return [cue for _, cue in found]


def _is_salient_identifier(token: str) -> bool:
    """An identifier worth a cue: some part has a digit or is a 2+ letter non-stop word."""
    parts = _PART_SPLIT_RE.split(token.replace("/", "."))
    return any(any(c.isdigit() for c in p) or (len(p) >= 2 and p not in STOP_WORDS) for p in parts)


def _identifier_cues(text: str) -> list[str]:
    if _C is not None and text.isascii():  # the same tests on the same tokens, in C
        cues: list[str] = _C.identifier_cues(_latin_tokens(text), STOP_WORDS)
        return cues
    out: list[str] = []
    for token in filterfalse(str.isalnum, _latin_tokens(text)):  # identifiers (see _expand)
        if not _is_salient_identifier(token):
            continue
        out.append(token)
        if "/" in token:  # path segments that are identifiers themselves: clear-cache, main.py
            out.extend(s for s in token.split("/") if _is_identifier(s))
    return out


def _url_hosts(text: str) -> list[str]:
    if _URL_TRIGGER not in text:
        return []
    return [m.group("host").strip(".") for m in _URL_RE.finditer(text)]


def _number_matches(text: str) -> Iterator[re.Match[str]]:
    """``_NUMBER_RE.finditer(text)``, the pattern tried only where a match can start: at a
    currency sign or an ASCII digit (its number's first character), in order, each next one
    past the last match (its lookbehinds see the text before, as the scan's do). The scan
    tried its lookbehinds at every character: ~150,000 instructions a bench memory with a
    digit (2 % of them), ~15,000 so."""
    end, match_at = 0, _NUMBER_RE.match
    for start in _NUMBER_START_RE.finditer(text):
        if start.start() >= end and (match := match_at(text, start.start())) is not None:
            end = match.end()
            yield match


_NUMBER_START_RE = re.compile(r"[$€£¥0-9]")  # where a match of _NUMBER_RE can start


def _number_cues(text: str) -> list[str]:
    out: list[str] = []
    if not has_ascii_digit(text):
        return out
    for match in _number_matches(text):
        cur, num, unit = match.group("cur") or "", match.group("num"), match.group("unit") or ""
        if cur or unit or sum(c.isdigit() for c in num) >= 2:
            out.append(cur + num.replace(",", "") + unit)
    return out


def _date_cue(match: re.Match[str]) -> str | None:
    """``YYYY-MM-DD`` (or ``YYYY-MM`` without a day) for a valid calendar date, else None."""
    groups = match.groupdict()
    year = int(groups["y"])
    month = _MONTHS[groups["mon"]] if groups.get("mon") else int(groups["m"])
    day = int(groups["d"]) if groups.get("d") else None
    try:
        date(year, month, 1 if day is None else day)
    except ValueError:
        return None
    return f"{year:04d}-{month:02d}" + ("" if day is None else f"-{day:02d}")


def _date_cues(text: str) -> tuple[list[str], str]:
    """Date cues (each followed by its year) and ``text`` with the dates blanked out."""
    found: list[tuple[int, str]] = []
    # every date pattern needs a year, four ASCII digits in a row: 321 of the 347 texts with a
    # digit among 20,000 bench memories have none, and the five substitutions on them were
    # ~2 % of a bulk ingest's instructions (callgrind)
    if not has_ascii_digit(text) or _YEAR_RUN_RE.search(text) is None:
        return [], text

    def blank(match: re.Match[str]) -> str:
        cue = _date_cue(match)
        if cue is None:
            return match.group()
        found.append((match.start(), cue))
        return " " * len(match.group())  # same length, so later positions stay comparable

    for regex in _DATE_RES:  # most specific first; each blanks what it consumed
        text = regex.sub(blank, text)
    found.sort(key=lambda item: item[0])
    return [c for _, cue in found for c in (cue, cue[:4])], text


@_memoized
def _is_name_word(token: str) -> bool:
    """A Capitalized word (``Redis``, ``GitHub``) or an acronym of 2+ letters (``API``, ``EC2``)."""
    if not token.isalnum() or token.casefold() in _UNIT_SET:  # "10 GB": a unit, not a name
        return False
    capitalized = token[0].isupper() and any(c.islower() for c in token)
    acronym = token.isupper() and sum(c.isalpha() for c in token) >= 2
    return capitalized or acronym


@_memoized  # called on name words only: few, recurring
def _is_common(word: str) -> bool:
    folded = word.casefold()
    return folded in STOP_WORDS or folded in _CALENDAR_WORDS


def _capitalized_runs(text: str) -> list[list[str]]:
    """Maximal runs of name words separated only by spaces or tabs (not newlines)."""
    if text.isascii() and "/" not in text:
        return _ascii_name_runs(text)
    # split() with the identifier pattern as its one group gives [gap, token, gap, token, ...]
    # (the same matches as finditer), so gaps[i] is the text between tokens i - 1 and i.
    if text.isascii():
        pieces = _ASCII_ID_SPLIT_RE.split(text)
    else:
        pieces = _ID_SPLIT_RE.split(text)
    tokens, gaps = pieces[1::2], pieces[0::2]
    runs: list[list[str]] = []
    current: list[str] = []
    last = -2
    # Only the name words are visited (compress/map run in C): any other token between two of
    # them ends a run, which is what ``i != last + 1`` says. A name word has an upper-case
    # letter, so it is never ``islower()``: that C test leaves few tokens to check in Python.
    for i in compress(range(len(tokens)), map(not_, map(str.islower, tokens))):
        if not _is_name_word(tokens[i]):
            continue
        gap = gaps[i]
        if current and (i != last + 1 or not gap or gap.strip(" \t")):
            runs.append(current)
            current = []
        current.append(tokens[i])
        last = i
    if current:
        runs.append(current)
    return runs


# An alphanumeric token of ASCII text without "/" that starts with a capital or a digit (a name
# word is Capitalized or an acronym such as "2FA"): the whole token, so neither a word character
# nor a separator joined to one may sit on either side (the same boundaries as _ASCII_NO_SLASH,
# which makes "a-Foo" one identifier). The first character comes first and the lookbehinds look
# back over it, so the engine jumps between capitals and digits instead of trying every position.
_NAME_TOKEN = (
    f"[A-Z0-9](?<!{_AW}[A-Z0-9])(?<!{_AW}[-.:@][A-Z0-9])[A-Za-z0-9]*(?!{_AW})(?![-.:@]{_AW})"
)
_NAME_RUN_RE = re.compile(f"{_NAME_TOKEN}(?:[ \t]+{_NAME_TOKEN})*")


def _ascii_name_runs(text: str) -> list[list[str]]:
    """:func:`_capitalized_runs` of ASCII text without "/", from candidate runs instead of every
    token: tokens that could be name words, separated by spaces or tabs only. Any other token
    between two of them would end a run anyway; a candidate that is no name word ends it too."""
    runs: list[list[str]] = []
    for candidate in _NAME_RUN_RE.findall(text):  # the pattern has no group: whole matches
        tokens = candidate.split()
        if len(tokens) == 1:  # most candidates: one word, a run of its own if a name word
            if _is_name_word(candidate):
                runs.append(tokens)
            continue
        current: list[str] = []
        for token in tokens:
            if _is_name_word(token):
                current.append(token)
            elif current:
                runs.append(current)
                current = []
        if current:
            runs.append(current)
    return runs


def _run_cues(run: list[str]) -> list[str]:
    """A name run trimmed of stop/calendar words at its ends, then each of its words alone."""
    if len(run) == 1:  # most runs: one name ("Caroline"), kept unless it is a common word
        return [] if _is_common(run[0]) else run
    while run and _is_common(run[0]):
        run = run[1:]
    while run and _is_common(run[-1]):
        run = run[:-1]
    whole = [" ".join(run)] if 2 <= len(run) <= _MAX_NAME_WORDS else []
    return whole + [w for w in run if not _is_common(w)]


def _name_cues(content: str) -> list[str]:
    # Case matters here, so work on the original text (NFKC and punctuation only, no casefold);
    # code spans and URLs are not names.
    if content.isascii():  # NFKC and the punctuation table change only non-ASCII characters
        text = content
    else:
        text = _translated(unicodedata.normalize("NFKC", content), _PUNCT_TABLE, _PUNCT_CHANGES)
    if "`" in text or _URL_TRIGGER in text:
        text = _CODE_OR_URL_RE.sub(" | ", text)
    if _C is not None and text.isascii():
        text = _C.drop_apostrophes(text)
        if "/" not in text:  # _ascii_name_runs' text: runs and their cues in one C pass
            cues: list[str] = _C.name_cues(text, STOP_WORDS, _CALENDAR_WORDS, _UNIT_SET)
            return cues
    else:
        text = _drop_apostrophes(text)
    return [cue for run in _capitalized_runs(text) for cue in _run_cues(run)]


def _chinese_cues(text: str) -> list[str]:
    out: list[str] = []
    if text.isascii():  # CJK characters are never ASCII
        return out
    for run in _CJK_RUN_RE.findall(text):
        pieces = _CJK_SPLIT_RE.split(run)
        out.extend(p for p in pieces if _MIN_CJK_TERM <= len(p) <= _MAX_CJK_TERM)
    return out


@_memoized
def _is_salient_word(word: str) -> bool:
    if _is_identifier(word) or word.isdigit():
        return False
    if word in STOP_WORDS or word in _CALENDAR_WORDS or word in _WEB_PARTS:
        return False
    return len(word) >= 3 or any(c.isdigit() for c in word)


def _salient_cues(text: str) -> list[str]:
    # A stop word is never salient: a set lookup drops the many stop words before the cached
    # test (a bounded cache's hit costs several times a set lookup).
    if _C is not None and text.isascii():  # the words and the tests in one C pass
        salient: list[str] = _C.salient(
            _latin_tokens(text), STOP_WORDS, _CALENDAR_WORDS, _WEB_PARTS
        )
        return salient
    return list(filter(_is_salient_word, filterfalse(STOP_WORDS.__contains__, _words_of(text))))


def _is_valid_cue(cue: str) -> bool:
    # isalnum() first: true for most cues (words), and then any() would say the same.
    return 0 < len(cue) <= _MAX_CUE_CHARS and (cue.isalnum() or any(c.isalnum() for c in cue))


CUE_LIMIT = 48  # the cues derived from one content at most (derive_cues' default limit)


def _first_unique(buckets: Iterable[Iterable[str]], limit: int) -> list[str]:
    out: list[str] = []
    # Membership only (the order comes from ``out``): the raw strings already decided and the
    # cues already taken. A raw string seen before gets the same answer again, and one equal to
    # a taken cue normalizes to itself (normalize is idempotent): either way it is skipped
    # without normalizing it again. Salient words repeat: about a quarter of them are skipped.
    seen: set[str] = set()
    for bucket in buckets:
        for raw in bucket:
            if raw in seen:
                continue
            cue = normalize(raw)
            if cue not in seen and _is_valid_cue(cue):
                seen.add(cue)
                out.append(cue)
                if len(out) >= limit:
                    return out
            seen.add(raw)
    return out


def _first_valid(buckets: Sequence[Iterable[str]], limit: int, *, worded: int = 0) -> list[str]:
    """:func:`_first_unique` for cues that are already normalized (each loop in C).

    The last ``worded`` buckets hold only cues with a letter or digit in them: of those only
    the length is checked, without a Python call per cue. Whether a cue is valid depends on
    the cue alone, so dropping invalid ones before de-duplicating leaves the same list."""
    if _C is not None:  # the same loops in C (any cue: its test reads each code point)
        cues: list[str] = _C.first_valid(buckets, limit, worded)
        return cues
    split = len(buckets) - worded
    words = list(chain.from_iterable(buckets[split:]))
    short = compress(words, map(_MAX_CUE_CHARS.__ge__, map(len, words)))
    checked = filter(_is_valid_cue, chain.from_iterable(buckets[:split]))
    return list(islice(dict.fromkeys(chain(checked, short)), limit))


def derive_cues(content: str, *, limit: int = CUE_LIMIT) -> list[str]:
    """Derive retrieval cues from ``content`` by rule, deterministically.

    Cues are normalized, de-duplicated and ordered by kind, then by first occurrence:

    1. quoted terms (``"..."``, ``'...'``, backticks, ``「...」``, ``“...”``) of at most 6
       words and 12 CJK characters, and the program name of a backtick command (``curl``);
    2. identifiers with separators (``clear-cache``, ``user_id``, ``v2.1``, ``config.yaml``),
       paths (``/ops/clear-cache``) followed by their identifier segments (``main.py``);
    3. URL hosts (``api.example.com``); the rest of a URL yields nothing;
    4. numbers: a unit is attached without a space (``5 ms`` → ``5ms``, ``10 GB`` → ``10gb``,
       ``30 %`` → ``30%``), a currency sign is kept (``$20``), thousands separators are dropped
       (``10,000`` → ``10000``), plain numbers need 2+ digits (``8001``);
    5. dates as ``YYYY-MM-DD`` (ISO, ``8 May, 2023``, ``May 8, 2023``, ``2023年5月8日``) or
       ``YYYY-MM`` (``May 2023``), each followed by its year ``YYYY``;
    6. names from the original casing: runs of Capitalized words or acronyms (``New York``,
       ``API``), trimmed of stop words and month/weekday names, then each word alone;
    7. Chinese terms: CJK runs split at :data:`CJK_FUNCTION_WORDS` and :data:`CJK_STOP_CHARS`,
       pieces of 2-8 characters kept whole (longer pieces are dropped, never cut);
    8. salient words: other Latin words and identifier parts, not stop words, 3+ letters or
       containing a digit, unstemmed.

    Args:
        content: the memory text.
        limit: the maximum number of cues returned.

    Returns:
        At most ``limit`` cues, none empty, none pure punctuation, none over 128 characters.

    Example:
        >>> derive_cues("The API uses port 8001")
        ['8001', 'api', 'uses', 'port']
    """
    if limit <= 0:
        return []
    text = normalize(content)
    rest = _mask(_URL_RE, text, _URL_TRIGGER)
    dates, rest = _date_cues(rest)
    quoted, names = _quoted_cues(text), _name_cues(content)
    ascii_text = text.isascii()
    if ascii_text:
        # Every other cue is then a piece of the normalized ASCII text without spaces (or an
        # ISO date, a number with its unit), which normalize returns unchanged: only quotations
        # (spaces inside) and names (original casing) need normalizing.
        quoted, names = list(map(normalize, quoted)), list(map(normalize, names))
    buckets = (quoted, _identifier_cues(rest), _url_hosts(text), _number_cues(rest), dates,
               names, _chinese_cues(rest), _salient_cues(rest))  # fmt: skip
    if ascii_text:
        # numbers (digits), dates, names and salient words (alphanumeric words) are worded
        return _first_valid(buckets, limit, worded=_WORDED_BUCKETS)
    return _first_unique(buckets, limit)


_WORDED_BUCKETS = 5  # the last five of derive_cues' buckets (numbers to salient words)


def _ascii_punctuated(content: str) -> str:
    """``content`` with its typographic punctuation (dashes, curly quotes, an ellipsis: the
    keys of :data:`_PUNCT_MAP`) in ASCII, when that leaves no other non-ASCII character; else
    ``content`` itself. Both give the same cues and text keys: the rules read the content's
    normalized text, whose first step is this table (after NFKC, which leaves these
    characters to it), and names read the content through NFKC and this table too
    (:func:`_name_cues`). As ASCII, the content takes the C call: a bench memory holding a
    dash took ~170 us through the Python rules, ~7 us so (1.6 % of the bench memories, a
    quarter of their cue derivation)."""
    plain = _translated(content, _PUNCT_TABLE, _PUNCT_CHANGES)
    return plain if plain.isascii() else content


def derive_cues_and_keys(
    content: str, *, limit: int = CUE_LIMIT, vocab: frozenset[str] | None = None
) -> tuple[list[str], str, set[str], list[str]]:
    """``(derive_cues(content, limit=limit), text, *stems_and_terms(text))`` where ``text`` is
    ``normalize(content)``: what ingest asks of a new memory's content without cues. With a
    ``vocab``, the stems are only those in it (``stems & vocab``): ingest reads them for the
    alias table's terms alone (:meth:`AliasTable.stems_read
    <cuemap_integrations.aliases.AliasTable.stems_read>`), and a set of every stem of a text
    was ~9 % of the C call.

    Both scan the same normalized text and tokens. For ASCII content the regex rules (URLs,
    dates, numbers; names in text with a code span or a "/") run here, and everything else in
    one C call (``_textc.derive_keys``): tokens, quotations, identifiers, names, salient
    words, the choice of cues, stems and terms, each token visited once, where the two
    functions make a dozen calls with Python between them. Content with no digit, "`" or "/"
    (no rule's regex can match: most memories) is normalized in that call too
    (``_textc.derive_plain``). Content whose only non-ASCII characters are typographic
    punctuation (:func:`_ascii_punctuated`) is read as its ASCII spelling. Other text takes
    the two functions in turn."""
    if _C is not None and not content.isascii():
        content = _ascii_punctuated(content)
    if _C is None or limit <= 0 or not content.isascii():
        text = normalize(content)
        stems, terms = stems_and_terms(text)
        if vocab is not None:
            stems &= vocab
        return derive_cues(content, limit=limit), text, stems, terms
    sets = (STOP_WORDS, _CALENDAR_WORDS, _UNIT_SET, _WEB_PARTS)
    plain: tuple[list[str], str, set[str], list[str]] | None = _C.derive_plain(
        content, limit, *sets, _STEMS, vocab
    )
    if plain is not None:  # no digit, "`" or "/": no regex rule has anything to find
        return plain
    text = normalize(content)
    rest, hosts = text, []
    if _URL_TRIGGER in text:
        rest, hosts = _mask(_URL_RE, text, _URL_TRIGGER), _url_hosts(text)
    dates, rest = _date_cues(rest)
    numbers = _number_cues(rest)
    # None: the C call finds the names (content without a code span, URL or path to blank)
    names = list(map(normalize, _name_cues(content))) if "`" in content or "/" in content else None
    cues, stems, terms = _C.derive_keys(
        content, text, rest, names, hosts, numbers, dates, limit, *sets, _STEMS, vocab
    )
    return cues, text, stems, terms


# --------------------------------------------------------------------------------------------
# Cue lexicon
# --------------------------------------------------------------------------------------------

# What a key holds: one cue string (the common case, no tuple allocated) or several, sorted.
_Held: TypeAlias = "str | tuple[str, ...]"


# A key: its one unit as a bare string (most cues are one word: a 1-tuple would cost 48 bytes
# more each), or the tuple of its units; the same shape as _Held, read by the same _as_tuple.
_Key: TypeAlias = _Held


def _as_tuple(held: _Held) -> tuple[str, ...]:
    return (held,) if isinstance(held, str) else held


# held string -> is it its own key (CueKeys._key_of(cue) == cue: a pure function of the
# string, asked of each unit of each query; emptied when full)
_OWN_KEYS: dict[str, bool] = {}
_OWN_KEYS_MAX = 1 << 16


class CueKeys:
    """Known cues, found in a query by longest match over :func:`query_units`; each cue is
    inserted once and removed once (:class:`CueLexicon` counts references instead).

    The trie is stored flattened: a dict from each cue's units (a bare string for one unit, else
    a tuple) to the cue string(s) ending there, plus the set of key lengths present. Looking up
    the longest key at a position costs one dict probe per distinct key length (O(units ×
    longest key) for a whole query) and no intermediate node is ever allocated, which keeps a
    million cues at roughly 200-250 bytes each.

    Cues are inserted normalized and returned normalized. Several cue strings may share a key
    (``orders`` and ``order`` both key ``'order'``): all of them are returned, sorted, so the
    output never depends on the order cues were added.

    A cue that is its own key (a word that stems to itself: about 80% of the cues of the bench
    corpus) is not in the dict: ``own``, a container of every cue held, answers for it (a
    single-unit key ``u`` holds ``u`` itself when ``u`` is in ``own`` and keys itself). The
    caller keeps ``own`` in step: :class:`CueLexicon` passes its reference counts; a namespace
    index passes its postings table, as a cue is known while it has postings (the index
    inserts it with its first posting and removes it with its last one). Neither then keeps a
    second dict entry per distinct cue (membreak.py 100000: reference counts 38 bytes per
    memory, own keys 42).

    Example:
        >>> keys = CueKeys(own := {"port": 1, "orders": 1})
        >>> for cue in ("port", "orders"):
        ...     keys.insert(cue)
        >>> keys.match("support the port order"), "port" in keys, len(keys)
        (['port', 'orders'], True, 2)
    """

    def __init__(self, own: Container[str]) -> None:
        self._own = own
        self._keys: dict[_Key, _Held] = {}  # the cues that are not their own key
        self._length_counts: dict[int, int] = {}  # key length -> keys (own keys: cues)
        self._lengths: tuple[int, ...] = ()  # distinct key lengths, longest first
        # the first unit of each key of several units -> how many such keys it starts: a query
        # unit that starts none has no longer key to try (~100 of 13,000 keys at 10k bench
        # memories, so this costs nearly nothing and spares nearly every unit five probes)
        self._firsts: dict[str, int] = {}
        self._count = 0  # cues inserted (punctuation-only ones too: see _insert)

    def __len__(self) -> int:
        return self._count

    def __contains__(self, cue: object) -> bool:
        if not isinstance(cue, str):
            return False
        norm = normalize(cue)
        return bool(norm) and norm in self._held(self._key_of(norm))

    def insert(self, cue: str) -> None:
        """Add the normalized ``cue``, not held yet (an empty one is ignored)."""
        if cue:
            self._count += 1
            self._insert(cue)

    def insert_many(self, cues: Iterable[str]) -> None:
        """:meth:`insert` of each of ``cues`` (a flush's new cues), the cues that are their own
        key (most: a new word) counted in one step for all. Bulk ingest of bench memories
        posts about one new cue a memory (its counter word), for which one :meth:`insert`
        each made three Python calls more (a 10,000-memory batch at 100k memories: 232,297
        -> 230,443 instructions a memory)."""
        own = 0
        for cue in cues:
            if cue:
                self._count += 1
                key = self._key_of(cue)
                if key == cue:
                    own += 1
                elif key:
                    self._insert_key(key, cue)
        if own:
            self._count_length(1, own)

    def remove(self, cue: str) -> None:
        """Remove the normalized ``cue``, held (an empty one is ignored)."""
        if cue:
            self._count -= 1
            self._remove(cue)

    def match(self, query: str) -> list[str]:
        """The known cues in ``query``, ordered by first occurrence, without duplicates.

        Left to right, the longest cue key starting at a unit is taken and the scan resumes
        after it; in addition every unit, and every part of an identifier unit (``/ops/x-y`` →
        ``ops``, ``x-y``, ``x``, ``y``), is looked up as a single-unit key. Latin units are whole
        words, so ``port`` is never found inside ``support``; CJK units are characters, so
        ``订单超时`` is found anywhere.

        Args:
            query: free text (normalized here).

        Returns:
            The matched cue strings.
        """
        if not self._length_counts:  # an empty lexicon (e.g. the tags of a store without any)
            return []
        units = query_units(query)
        found: dict[str, None] = {}
        held, firsts, resume = self._held, self._firsts, 0
        for i, unit in enumerate(units):
            # the unit's own cues, asked once: the longest match tries it as its one-unit key
            own = held(unit)
            if i >= resume:
                # _longest's first test here: no key of several units starts at most units
                # (a call per unit of three lexicons a recall)
                resume, cues = self._longest(units, i, own) if unit in firsts else (i + 1, own)
                if cues:
                    found.update(dict.fromkeys(cues))
            if own:
                found.update(dict.fromkeys(own))
            for part in _parts(unit):  # memoized; none for a plain word
                found.update(dict.fromkeys(held(_stem(part))))
        return list(found)

    def unit_cues(self, unit: str) -> tuple[str, ...]:
        """The cues whose key is the one unit ``unit`` (a stemmed word, as :func:`query_units`
        gives it): what :meth:`match` finds for it."""
        return self._held(unit)

    def _held(self, key: _Key) -> tuple[str, ...]:
        """The cues of ``key`` (sorted): those in the dict, and the key itself if it is a cue
        that is its own key (whether it is, a pure function of the string, is remembered:
        :data:`_OWN_KEYS`; a query asks this of each of its units)."""
        held = _as_tuple(self._keys.get(key, ()))
        if isinstance(key, str) and key in self._own:
            own = _OWN_KEYS.get(key)
            if own is None:
                if len(_OWN_KEYS) >= _OWN_KEYS_MAX:
                    _OWN_KEYS.clear()
                own = _OWN_KEYS[key] = self._key_of(key) == key
            if own:
                return tuple(sorted((key, *held))) if held else (key,)
        return held

    def _longest(
        self, units: list[str], start: int, own: tuple[str, ...]
    ) -> tuple[int, tuple[str, ...]]:
        """End (exclusive) and cues of the longest key at ``start``; ``(start + 1, ())`` if none.
        ``own``: the cues of the one-unit key ``units[start]`` (the caller has them)."""
        if units[start] not in self._firsts:  # no key of several units starts here
            return start + 1, own
        rest, get = len(units) - start, self._keys.get
        for length in self._lengths:
            if length == 1:
                if own:
                    return start + 1, own
            elif length <= rest:
                # _held of a key of several units: only the dict holds it (inlined: dozens a query)
                found = get(tuple(units[start : start + length]))
                if found is not None:
                    return start + length, _as_tuple(found)
        return start + 1, ()

    def _key_of(self, cue: str) -> _Key:
        # One lower-case ASCII word (most new cues: a name, a number): query_units would find it
        # whole and stem or mark it; word_unit skips the normalize and scan (and their cache
        # entries) that bulk ingest otherwise pays for each new cue.
        unit = word_unit(cue)
        if unit is not None:
            return cue if unit == cue else sys.intern(unit)
        units = query_units(cue)
        if units == [cue]:
            return cue  # share the string object the reference count already holds
        if len(units) == 1:
            return sys.intern(units[0])
        # Interned: units such as CJK characters and common words recur across many keys.
        return tuple(sys.intern(u) for u in units)

    def _insert(self, cue: str) -> None:
        key = self._key_of(cue)
        if not key:  # punctuation only: counted, but no query can ever contain it
            return
        if key == cue:  # its own key: held by self._own (a cue, not a key, counted)
            self._count_length(1, 1)
            return
        self._insert_key(key, cue)

    def _insert_key(self, key: _Key, cue: str) -> None:
        """Hold ``cue`` under ``key``, a key that is not the cue itself."""
        held = self._keys.get(key)
        self._keys[key] = cue if held is None else tuple(sorted((*_as_tuple(held), cue)))
        if held is None:
            self._count_key(key, 1)

    def _remove(self, cue: str) -> None:
        key = self._key_of(cue)
        if key == cue:
            self._count_length(1, -1)
            return
        held = self._keys.get(key)
        if held is None:
            return
        rest = tuple(c for c in _as_tuple(held) if c != cue)
        if rest:
            self._keys[key] = rest[0] if len(rest) == 1 else rest
        else:
            del self._keys[key]
            self._count_key(key, -1)

    def _count_key(self, key: _Key, delta: int) -> None:
        """Count a key (``delta`` 1) added to the dict or removed from it (-1): its length, and
        for a key of several units its first unit."""
        if isinstance(key, str):
            self._count_length(1, delta)
            return
        self._count_length(len(key), delta)
        count = self._firsts.get(key[0], 0) + delta
        if count:
            self._firsts[key[0]] = count
        else:
            del self._firsts[key[0]]

    def _count_length(self, length: int, delta: int) -> None:
        count = self._length_counts.get(length, 0) + delta
        if count:
            self._length_counts[length] = count
        else:
            del self._length_counts[length]
        if count == 0 or count == delta:  # a length vanished or appeared
            self._lengths = tuple(sorted(self._length_counts, reverse=True))


class CueLexicon(CueKeys):
    """:class:`CueKeys` with a reference count per cue: ``add`` and ``discard`` it any number
    of times (it is known while its count is above zero).

    Example:
        >>> lex = CueLexicon()
        >>> for cue in ("订单超时", "超时", "port", "orders"):
        ...     lex.add(cue)
        >>> lex.match("上次订单超时怎么修的")
        ['订单超时']
        >>> lex.match("support the port order")
        ['port', 'orders']
    """

    def __init__(self) -> None:
        self._refs: dict[str, int] = {}
        super().__init__(self._refs)

    def __len__(self) -> int:
        return len(self._refs)

    def __contains__(self, cue: object) -> bool:
        return isinstance(cue, str) and normalize(cue) in self._refs

    def add(self, cue: str, *, normalized: bool = False) -> None:
        """Add one reference to ``cue`` (an empty normalized cue is ignored).

        ``normalized=True`` skips normalizing a cue the caller already normalized (the index
        does: it is the hot path of bulk ingest)."""
        norm = cue if normalized else normalize(cue)
        if not norm:
            return
        count = self._refs.get(norm, 0)
        self._refs[norm] = count + 1
        if count == 0:
            self._insert(norm)

    def add_counted(self, counted: Iterable[tuple[str, int]]) -> None:
        """Add ``n`` references to each already normalized ``cue`` of ``(cue, n)`` (``n >= 1``):
        what :meth:`add_all` of a batch's cues does, one step per distinct cue."""
        refs = self._refs
        for cue, n in counted:
            count = refs.get(cue)
            if count is not None:
                refs[cue] = count + n
            elif cue:
                refs[cue] = n
                self._insert(cue)

    def add_all(self, cues: Iterable[str]) -> None:
        """:meth:`add` each of these already normalized cues (the index's bulk path)."""
        self.add_counted(zip(cues, repeat(1)))

    def discard(self, cue: str, *, normalized: bool = False) -> None:
        """Drop one reference to ``cue``; unknown cues are a no-op."""
        norm = cue if normalized else normalize(cue)
        count = self._refs.get(norm, 0)
        if count > 1:
            self._refs[norm] = count - 1
        elif count == 1:
            del self._refs[norm]
            self._remove(norm)
