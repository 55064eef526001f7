"""The compiled ASCII fast path (``_textc.c``) returns exactly what the Python text rules return.

Each C function is compared with its Python reference in :mod:`cuemap_integrations.text` (run
with the extension switched off: ``text._C`` set to None, the per-text caches cleared) on
hypothesis-generated ASCII text (punctuation, apostrophes, digits, capitals, URLs, paths,
quotes, backticks, e-mail addresses, control characters, long and odd strings) and on the fixed
ingest corpus. The tests load the built module directly, so they run under ``CUEMAP_TEXTC=0``
too; without a build they are skipped, unless ``CUEMAP_REQUIRE_KERNEL=1`` (CI) makes that fail.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuemap_integrations import text as text_module
from tests.core.ingest_corpus import FRAGMENTS, corpus


def _textc() -> ModuleType:
    try:
        module = importlib.import_module("cuemap_integrations._textc")
    except ImportError:
        if os.environ.get("CUEMAP_REQUIRE_KERNEL") == "1":
            pytest.fail("CUEMAP_REQUIRE_KERNEL=1 but the text extension is not built")
        pytest.skip("the text extension is not built (python hatch_build.py builds it)")
    return module


@pytest.fixture(scope="module")
def textc() -> ModuleType:
    return _textc()


_CACHED = (text_module._latin_tokens, text_module._words_of, text_module._scan)


@contextmanager
def _python_only() -> Iterator[None]:
    """The Python rules alone, with no per-text cache carrying a result of the C ones."""
    for cached in _CACHED:
        cached.cache_clear()
    try:
        with patch.object(text_module, "_C", None):
            yield
    finally:
        for cached in _CACHED:
            cached.cache_clear()


def _reference(fn: Callable[..., Any], *args: Any) -> Any:
    with _python_only():
        return fn(*args)


_PIECES = st.sampled_from([
    *(f for f in FRAGMENTS if f.isascii()), "don't", "it's", "o'clock", "rock'n'roll",
    "McDonald's", "'", "''", "a'b", "'x'",
    "x'", "'x", "_'a", "a'_", "'9", "https://api.example.com/v1/x?y=1", "HTTP://Host:80/a",
    "http://", "://", "/ops/clear-cache", "/a", "a//b", "x:/y", "/", "//", "~/x/y.py", "user_id",
    "__init__", "v2.1", "config.yaml", "bob@example.com", "@", "-", ".", ":", "_", "a-", "-a",
    "a.", "`curl -X POST`", "`", '"quoted words"', '"', "New York", "New  York", "New\tYork",
    "API", "EC2", "2FA", "GitHub", "I", "A", "May", "Monday", "The", "Of", "10 GB", "GB", "5ms",
    "$20", "10,000", "2023-05-08", "8 May, 2023", "Foo_bar", "A-B", "a-Foo", "Foo.", "Foo-",
    "caresses", "running", "generalizations", "happy", "sky", "yyy", "agreed", "hoping", "ies",
    "sses", "eed", "bled", "feed", "www", "com", "html", "123", "0", "a1", " ", "  ", "\t", "\n",
    "\r\n", "\x00", "\x0b", "\x1c", "\x1f", "\x7f", "x" * 300, "A" * 50, "a-" * 30, "'a" * 20,
    "Ab " * 40, "```", "```x```", "``", "`ls -la`", "`Make it`", "`the end`", "`a.b+c-d x`",
    "'a b'", "' a'", "'a '", "'one two three four five six seven'", '"?!"', '" . "', "\x1d",
    "\x0c", "'tis", "'a'b'",
])  # fmt: skip
ASCII_TEXT = st.one_of(
    st.lists(_PIECES, max_size=12).map(" ".join),
    st.lists(_PIECES, max_size=12).map("".join),
    st.text(alphabet=st.characters(max_codepoint=127), max_size=300),
    st.text(alphabet="aA1_-./:@' `\"\t\n", max_size=60),
)
# lower-case words with Porter's suffixes in them, and any short runs of the letters
_SUFFIXES = st.sampled_from(
    "s ss sses ies ied eed ed ing at bl iz y ational tional enci anci izer bli alli entli eli "
    "ousli ization ation ator alism iveness fulness ousness aliti iviti biliti logi icate ative "
    "alize iciti ical ful ness al ance ence er ic able ible ant ement ment ent ion sion tion ou "
    "ism ate iti ous ive ize e ll l".split()
)
_STEMS = st.text(alphabet="bcdfglmnprstvwxyzaeiouy", max_size=8)
WORDS = st.one_of(
    st.tuples(_STEMS, _SUFFIXES, st.one_of(st.just(""), _SUFFIXES)).map("".join),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz", max_size=14),
    st.text(alphabet=st.characters(max_codepoint=127), max_size=8),
    st.text(max_size=6),
)


def _normalized(text: str) -> str:
    return _reference(text_module._normalize, text)


@settings(max_examples=3000, deadline=None)
@given(WORDS)
def test_porter_is_the_python_stemmer(textc: ModuleType, word: str) -> None:
    assert textc.porter(word) == text_module._porter(word)


@settings(max_examples=1500, deadline=None)
@given(ASCII_TEXT)
def test_normalize_is_the_python_normalize(textc: ModuleType, text: str) -> None:
    assert textc.normalize(text) == text_module._normalize(text)


@settings(max_examples=1500, deadline=None)
@given(ASCII_TEXT)
def test_apostrophes_and_tokens_are_the_python_ones(textc: ModuleType, text: str) -> None:
    assert textc.drop_apostrophes(text) == text_module._drop_apostrophes(text)
    for source in (text, _normalized(text)):
        tokens = textc.latin_tokens(source)
        assert isinstance(tokens, tuple)
        assert tokens == _reference(text_module._latin_tokens.__wrapped__, source)


def _check_text(textc: ModuleType, content: str) -> None:
    """Every C function on ``content`` (ASCII) against its Python reference."""
    normalized = _normalized(content)
    tokens = _reference(text_module._latin_tokens.__wrapped__, normalized)
    stems, terms = textc.stems_terms(tokens, text_module.STOP_WORDS, text_module._STEMS)
    assert stems == _reference(text_module.word_stems, normalized)
    assert terms == _reference(text_module.content_terms, normalized)
    salient = textc.salient(
        tokens, text_module.STOP_WORDS, text_module._CALENDAR_WORDS, text_module._WEB_PARTS
    )
    assert salient == _reference(text_module._salient_cues, normalized)
    for source in (content, normalized):
        quoted = textc.quoted_cues(source, text_module.STOP_WORDS)
        assert quoted == _reference(text_module._quoted_cues, source)
    identifiers = textc.identifier_cues(tokens, text_module.STOP_WORDS)
    assert identifiers == _reference(text_module._identifier_cues, normalized)
    dropped = text_module._drop_apostrophes(content)
    if "/" not in dropped:
        names = textc.name_cues(
            dropped, text_module.STOP_WORDS, text_module._CALENDAR_WORDS, text_module._UNIT_SET
        )
        runs = _reference(text_module._ascii_name_runs, dropped)
        assert names == [cue for run in runs for cue in text_module._run_cues(run)]
    assert _reference(text_module._name_cues, content) == text_module._name_cues(content)


@settings(max_examples=1500, deadline=None)
@given(ASCII_TEXT)
def test_stems_terms_salient_words_and_names_are_the_python_ones(
    textc: ModuleType, text: str
) -> None:
    _check_text(textc, text)


_CUES = st.one_of(_PIECES, st.text(max_size=8), st.just(""), st.just("x" * 129), st.just("é" * 128))


@settings(max_examples=1500, deadline=None)
@given(
    st.lists(st.lists(_CUES, max_size=8), max_size=8),
    st.integers(min_value=1, max_value=60),
    st.integers(min_value=0, max_value=8),
)
def test_first_valid_is_the_python_choice(
    textc: ModuleType, buckets: list[list[str]], limit: int, worded: int
) -> None:
    worded = min(worded, len(buckets))
    expected = _reference(lambda: text_module._first_valid(buckets, limit, worded=worded))
    assert textc.first_valid(buckets, limit, worded) == expected


@settings(max_examples=300, deadline=None)
@given(ASCII_TEXT, st.integers(min_value=1, max_value=60))
def test_derive_cues_and_text_keys_are_the_python_ones(
    textc: ModuleType, text: str, limit: int
) -> None:
    from cuemap_integrations.aliases import AliasTable
    from cuemap_integrations.textkeys import text_keys

    if text_module._C is None:
        pytest.skip("CUEMAP_TEXTC=0: the extension is not in use")
    aliases = AliasTable([("db", "database"), ("k8s", "kubernetes")])
    expected = _reference(lambda: (text_module.derive_cues(text, limit=limit),
                                   text_keys(text, aliases)))  # fmt: skip
    assert (text_module.derive_cues(text, limit=limit), text_keys(text, aliases)) == expected


# Any text: English, Chinese, mixed, odd Unicode (the C call takes ASCII content only, the rest
# goes to the Python rules; both must give the Python reference).
_UNICODE_PIECES = st.sampled_from([
    "上次订单超时了", "为什么", "的", "Café", "naïve", "ＡＢＣ，Redis！", "「引号」", "“quoted”", "—",
    "\u212a", "\u0130", "\u017f", "\ud800", "e\u0301", "ß", "ﬁ", "①", "٣", "Ⅻ", "\u3000", "２０２３年５月８日",
])  # fmt: skip
ANY_TEXT = st.one_of(
    ASCII_TEXT,
    st.lists(st.one_of(_PIECES, _UNICODE_PIECES), max_size=12).map(" ".join),
    st.lists(st.one_of(_PIECES, _UNICODE_PIECES), max_size=12).map("".join),
    st.text(max_size=120),
)


def _derived_and_keys(content: str, limit: int) -> tuple[list[str], str, set[str], list[str]]:
    """The Python reference of derive_cues_and_keys: derive_cues, normalize, stems_and_terms."""
    text = text_module.normalize(content)
    return (text_module.derive_cues(content, limit=limit), text,
            *text_module.stems_and_terms(text))  # fmt: skip


# ASCII text with typographic punctuation in it (and now and then a character no table maps):
# derive_cues_and_keys reads it as its ASCII spelling (text._ascii_punctuated)
_PUNCTUATED_TEXT = st.lists(
    st.one_of(_PIECES, st.sampled_from([*text_module._PUNCT_MAP, "é", "🎉", "\u0338"])),
    max_size=12,
).flatmap(lambda parts: st.sampled_from([" ".join(parts), "".join(parts)]))


@settings(max_examples=2500, deadline=None)
@given(st.one_of(ANY_TEXT, _PUNCTUATED_TEXT), st.integers(min_value=-1, max_value=60))
def test_cues_and_keys_in_one_call_are_the_python_ones(
    textc: ModuleType, text: str, limit: int
) -> None:
    expected = _reference(_derived_and_keys, text, limit)
    with patch.object(text_module, "_C", textc):
        assert text_module.derive_cues_and_keys(text, limit=limit) == expected


def test_cues_and_keys_of_the_ingest_corpus_are_the_python_ones(
    textc: ModuleType, tmp_path: Path
) -> None:
    for content in corpus(tmp_path):
        expected = _reference(_derived_and_keys, content, 48)
        with patch.object(text_module, "_C", textc):
            assert text_module.derive_cues_and_keys(content) == expected


def test_each_punctuation_mark_reads_as_its_ascii_spelling(textc: ModuleType) -> None:
    """Every key of the table, alone and between words, in every case the rules look at."""
    for mark in text_module._PUNCT_MAP:
        assert text_module._ascii_punctuated(f"a{mark}b").isascii()
        for text in (
            mark,
            f"Bob{mark}Smith",
            f"New York {mark} 10 GB",
            f"{mark}Ann{mark}",
            f"x {mark}",
        ):
            expected = _reference(_derived_and_keys, text, 48)
            with patch.object(text_module, "_C", textc):
                assert text_module.derive_cues_and_keys(text) == expected, text


def test_text_with_other_unicode_is_left_as_it_is() -> None:
    assert text_module._ascii_punctuated("caf\u00e9 \u2013 ok") == "caf\u00e9 \u2013 ok"
    assert text_module._ascii_punctuated("a \u2013 b\u2026") == "a - b..."


# stems the texts above have (and one no text has): a vocab keeps these alone
_VOCAB = frozenset({"new", "york", "run", "gener", "caress", "x", "a", "db", "never-seen"})


@settings(max_examples=1000, deadline=None)
@given(ANY_TEXT, st.integers(min_value=-1, max_value=60))
def test_the_one_call_with_a_vocab_keeps_only_its_stems(
    textc: ModuleType, text: str, limit: int
) -> None:
    cues, normalized, stems, terms = _reference(_derived_and_keys, text, limit)
    with patch.object(text_module, "_C", textc):
        derived = text_module.derive_cues_and_keys(text, limit=limit, vocab=_VOCAB)
    assert derived == (cues, normalized, stems & _VOCAB, terms)
    python = _reference(lambda: text_module.derive_cues_and_keys(text, limit=limit, vocab=_VOCAB))
    assert python == derived


@settings(max_examples=300, deadline=None)
@given(st.lists(ANY_TEXT, max_size=6), st.integers(min_value=1, max_value=60))
def test_the_one_call_through_a_stem_memo_or_any_mapping_is_the_same(
    textc: ModuleType, texts: list[str], limit: int
) -> None:
    sets = (text_module.STOP_WORDS, text_module._CALENDAR_WORDS, text_module._UNIT_SET,
            text_module._WEB_PARTS)  # fmt: skip
    memo = textc.StemMemo(text_module._interned_stem, 3, *sets[:2], sets[3], sets[2])  # turns over
    mapping = text_module._Memo(text_module._interned_stem, 3)
    for text in (t for t in texts if t.isascii() and "`" not in t and "/" not in t):
        normalized = textc.normalize(text)
        args = (text, normalized, normalized, None, [], [], [], limit, *sets)
        assert textc.derive_keys(*args, memo, None) == textc.derive_keys(*args, mapping, None)
        cues, stems, terms = textc.derive_keys(*args, mapping, None)
        for vocab in (_VOCAB, frozenset(), set(_VOCAB), _VOCAB):  # its filter, none, again
            expected = (cues, stems & vocab, terms)
            assert textc.derive_keys(*args, memo, vocab) == expected
            assert textc.derive_keys(*args, mapping, vocab) == expected


_ALIKE = [
    "a", "bb", "ccc", "running", "", "x" * 40, "abcdefgh", "abcdefgi", "bbcdefgh", "abcdefghi",
    "abcdefghj", "bbcdefghi", "x" * 39 + "y", "y" + "x" * 39, "generalizations", "generalisations",
    "ab", "ba", "abc", "acb",
]  # fmt: skip
_KEYS = st.one_of(
    # the memo compares a word of 8 bytes or fewer by its packed head, a longer one by its
    # first 8 bytes and then the rest: words alike but for one byte, at each size
    st.sampled_from(_ALIKE),
    st.text(alphabet=st.characters(max_codepoint=127), max_size=6),
)


@settings(max_examples=500, deadline=None)
@given(st.lists(_KEYS, max_size=40), st.integers(min_value=1, max_value=5))
def test_the_stem_memo_remembers_as_the_python_memo_does(
    textc: ModuleType, keys: list[str], maxsize: int
) -> None:
    calls: dict[str, list[str]] = {"c": [], "python": []}

    def fn(name: str) -> Callable[[str], str]:
        return lambda key: calls[name].append(key) or key[::-1]

    sets = (frozenset(), frozenset(), frozenset(), frozenset())
    memo, python = textc.StemMemo(fn("c"), maxsize, *sets), text_module._Memo(fn("python"), maxsize)
    for key in keys:
        assert memo[key] == python[key] == key[::-1]
        assert len(memo) == len(python) and memo.older == len(python._older)
    assert calls["c"] == calls["python"]
    size = len(memo)
    for key in ("é", "上次", "\ud800", *keys):  # not remembered: fn each time, the same value
        assert memo[key + "é"] == (key + "é")[::-1]
    assert len(memo) == size


class _Colliding(str):
    """A cue whose hash is the same as every other's: only equality tells them apart."""

    def __hash__(self) -> int:
        return 7


def test_first_valid_keeps_many_and_colliding_cues_as_python_does(textc: ModuleType) -> None:
    """More cues than its table holds on the stack (64), and cues whose hashes collide."""
    many = [f"w{i}" for i in range(300)]
    colliding = [_Colliding(w) for w in many[:80]] + [_Colliding("zz"), "zz", _Colliding("zz")]
    buckets = [many[:150], [*many[100:300], *many[:50]], colliding, ["x" * 129, "", "!"]]
    for limit in (1, 64, 65, 200, 1000):
        for worded in (0, 2, 4):
            with _python_only():
                expected = text_module._first_valid(buckets, limit, worded=worded)
            got = textc.first_valid(buckets, limit, worded)
            assert got == expected
            assert [type(cue) for cue in got] == [type(cue) for cue in expected]


def test_a_long_text_gives_the_python_results(textc: ModuleType) -> None:
    """More terms, salient words and names than the one call gathers on the stack (128)."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = [f"{a}{b}ing" for a in letters for b in letters[:12]]
    words = [w.capitalize() if i % 5 < 2 else w for i, w in enumerate(words)]
    content = " ".join(words) + ". I'm in New York with Caroline, said 'Mister Jones'."
    expected = _reference(_derived_and_keys, content, 1000)
    with patch.object(text_module, "_C", textc):
        assert text_module.derive_cues_and_keys(content, limit=1000) == expected
        assert text_module.derive_cues_and_keys(content, limit=1000, vocab=_VOCAB) == (
            expected[0], expected[1], expected[2] & _VOCAB, expected[3])  # fmt: skip


def test_the_stem_memo_refuses_bad_arguments_and_passes_errors_on(textc: ModuleType) -> None:
    sets = (frozenset(), frozenset(), frozenset(), frozenset())
    with pytest.raises(ValueError, match="maxsize"):
        textc.StemMemo(str, 0, *sets)
    with pytest.raises(TypeError, match="set"):
        textc.StemMemo(str, 4, [], *sets[1:])
    memo = textc.StemMemo({}.__getitem__, 4, *sets)
    with pytest.raises(KeyError):
        memo["word"]
    assert len(memo) == 0


def test_the_one_call_keeps_no_string_it_made(textc: ModuleType) -> None:
    """Names, quotations and cues made in C and normalized there are freed with the result:
    a reference kept would hold every memory's names for good (bench scale 100k: 174 bytes a
    memory, seen as index bytes)."""
    import tracemalloc

    sets = (text_module.STOP_WORDS, text_module._CALENDAR_WORDS, text_module._UNIT_SET,
            text_module._WEB_PARTS)  # fmt: skip
    content = "Caroline and Melanie met 'Mister Jones' in New York, said \"Hello There\"."
    textc.derive_plain(content, 48, *sets, text_module._STEMS, None)  # the memo holds its words
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(2000):
            textc.derive_plain(content, 48, *sets, text_module._STEMS, None)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 20_000  # leaking the names alone: 2,000 x 6 x ~55 bytes


def test_the_one_call_refuses_what_it_cannot_derive(textc: ModuleType) -> None:
    sets = (text_module.STOP_WORDS, text_module._CALENDAR_WORDS, text_module._UNIT_SET,
            text_module._WEB_PARTS)  # fmt: skip
    for content in ("see `ls`", "a/b", "café"):  # names need the Python rules (or any text)
        with pytest.raises(ValueError):
            textc.derive_keys(content, "x", "x", None, [], [], [], 5, *sets, {"x": "x"}, None)
    with pytest.raises(ValueError, match="ASCII"):
        textc.derive_keys("a", "é", "é", [], [], [], [], 5, *sets, {}, None)
    for content in ("port 8001", "see `ls`", "a/b", "http://x"):  # the regex rules' share
        assert textc.derive_plain(content, 5, *sets, text_module._STEMS, None) is None
    with pytest.raises(ValueError, match="ASCII"):
        textc.derive_plain("café", 5, *sets, text_module._STEMS, None)
    with pytest.raises(KeyError):
        textc.derive_plain("Word", 5, *sets, {}, None)
    with pytest.raises(KeyError):  # an error from the stem mapping propagates
        textc.derive_keys("Word", "word", "word", None, [], [], [], 5, *sets, {}, None)
    with pytest.raises(TypeError, match="set"):
        textc.derive_keys("a", "a", "a", None, [], [], [], 5, [], *sets[1:], {}, None)
    with pytest.raises(TypeError, match="vocab"):
        textc.derive_plain("a", 5, *sets, text_module._STEMS, ["a"])


def test_the_ingest_corpus_gives_the_python_results(textc: ModuleType, tmp_path: Path) -> None:
    texts = [t for t in corpus(tmp_path) if t.isascii()]
    assert len(texts) > 1000
    for content in texts:
        _check_text(textc, content)
        assert textc.normalize(content) == text_module._normalize(content)
        for word in _reference(text_module.words, content):
            assert textc.porter(word) == text_module._porter(word)


def test_non_ascii_text_is_refused_and_left_to_python(textc: ModuleType) -> None:
    for fn in (textc.drop_apostrophes, textc.latin_tokens, textc.normalize):
        with pytest.raises(ValueError, match="ASCII"):
            fn("café")
        with pytest.raises(TypeError):
            fn(b"bytes")
    assert textc.porter("café") == "café"  # not [a-z]{3,}: unchanged, as in Python
    with pytest.raises(TypeError, match="set"):
        textc.salient((), [], frozenset(), frozenset())
    with pytest.raises(TypeError, match="tuple"):
        textc.stems_terms(["a"], frozenset(), {})
    with pytest.raises(ValueError, match="ASCII"):
        textc.stems_terms(("é",), frozenset(), {})
    assert text_module.derive_cues("Café in New York, don't") == _reference(
        text_module.derive_cues, "Café in New York, don't"
    )


def test_an_error_from_the_stem_mapping_propagates(textc: ModuleType) -> None:
    with pytest.raises(KeyError):
        textc.stems_terms(("unknown",), frozenset(), {})


def test_the_extension_is_chosen_unless_switched_off() -> None:
    module = _textc()
    if os.environ.get("CUEMAP_TEXTC", "1") == "0":
        assert text_module._C is None
    else:
        assert text_module._C is module
    code = "from cuemap_integrations import text; print(text._C is None)"
    env = {**os.environ, "CUEMAP_TEXTC": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "True", out.stderr
