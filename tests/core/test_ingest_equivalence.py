"""The ingest speed-ups change no output: same cues, terms, tokens, redactions, records, rankings.

Two kinds of evidence:

* a digest of everything ingest derives from a fixed varied corpus (:mod:`tests.core.ingest_corpus`),
  computed with the code before the speed-ups (commit 1527219) and pinned here;
* each exact prefilter is checked against the regex it guards: hypothesis generates texts that the
  regex matches (``from_regex``) and every one of them holds the trigger, and the per-rule
  redaction screen gives the answer of the one-alternation screen on arbitrary text.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuemap_integrations import redact as redact_module
from cuemap_integrations import text as text_module
from cuemap_integrations.text import content_terms, normalize, stem, word_stems, words
from tests.core.ingest_corpus import FRAGMENTS, corpus, store_digest, text_digest

# Both computed by running ingest_corpus on commit 1527219 (before the speed-ups).
TEXT_DIGEST = "08cb42efd69e70c14de65d2363625c4aca26caa1089ecae25764445689abbabf"
STORE_DIGEST = "67538b0cc6ec72565bdff39adc8bbd28969d5ca41969d807e9db2b94b786dbfb"


def test_text_outputs_match_the_code_before_the_speed_ups(tmp_path: Path) -> None:
    texts = corpus(tmp_path)
    assert len(texts) > 2700
    assert text_digest(texts) == TEXT_DIGEST


def test_records_index_keys_and_rankings_match_the_code_before_the_speed_ups(
    tmp_path: Path,
) -> None:
    assert store_digest(tmp_path) == STORE_DIGEST


def test_word_stems_is_the_stem_set_of_words(tmp_path: Path) -> None:
    for text in corpus(tmp_path)[::7]:
        assert word_stems(normalize(text)) == {stem(w) for w in words(text)}


# Text with the characters the prefilters look for, so that both branches are taken often.
_PIECES = st.sampled_from([
    *FRAGMENTS, "://", "`", "```", '"', "'", "-", ".", "@", "+", "1", "18", "2023", "may", "MAY",
    "pass", "PWD", "Key", "token", "api", "aws", "Bearer ", "sk-", "gh", "AKIA", "\u212a",
    "\u0130", "\u0131", "\u017f", "<", " ", "\n", "a", "Z", "é", "密码", "是", "x" * 20, "0" * 9,
])  # fmt: skip
MIXED_TEXT = st.one_of(st.lists(_PIECES, max_size=8).map("".join), st.text(max_size=80))


@settings(max_examples=400, deadline=None)
@given(MIXED_TEXT)
def test_redaction_screen_agrees_with_the_one_alternation_screen(text: str) -> None:
    expected = redact_module._SCREEN.search(text) is not None
    assert redact_module._may_match(text) is expected


def _folded(text: str, pattern: re.Pattern[str]) -> str:
    if pattern.flags & re.IGNORECASE:
        return text.translate(redact_module._FOLD).lower()
    return text


@pytest.mark.parametrize("rule", range(len(redact_module.PATTERNS)))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_redaction_match_holds_a_trigger_of_its_rule(rule: int, data: st.DataObject) -> None:
    _, pattern = redact_module.PATTERNS[rule]
    text = data.draw(st.from_regex(pattern))
    match = pattern.search(text)
    assert match is not None
    found = _folded(match.group(), pattern)
    assert any(t in found for t in redact_module._TRIGGERS[rule])


def test_the_case_fold_covers_every_letter_ignorecase_adds() -> None:
    """Under re.IGNORECASE exactly these non-ASCII letters match an ASCII letter; _FOLD maps them."""
    letter = re.compile("[a-z]", re.IGNORECASE)
    extra = {chr(cp) for cp in range(0x80, 0x30000) if letter.fullmatch(chr(cp))}
    assert extra == {"\u0130", "\u0131", "\u017f", "\u212a"}
    for ch in extra:
        folded = ch.translate(redact_module._FOLD)
        assert folded.isascii() and re.fullmatch(folded, ch, re.IGNORECASE)


_TEXT_GUARDS = [
    (text_module._URL_RE, (text_module._URL_TRIGGER,)),
    (text_module._CODE_OR_URL_RE, ("`", text_module._URL_TRIGGER)),
    (text_module._FENCE_RE, ("```",)),
    (text_module._APOS_RE, ("'",)),
    (text_module._NUMBER_RE, tuple("0123456789")),
    *(
        (regex, (mark,))
        for regex, mark in zip(text_module._QUOTE_RES, text_module._QUOTE_MARKS, strict=True)
    ),
    *((regex, tuple("0123456789")) for regex in text_module._DATE_RES),
]


@pytest.mark.parametrize("guard", range(len(_TEXT_GUARDS)))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_cue_regex_match_holds_its_trigger(guard: int, data: st.DataObject) -> None:
    pattern, triggers = _TEXT_GUARDS[guard]
    text = data.draw(st.from_regex(pattern))
    match = pattern.search(text)
    assert match is not None
    # One character either side: _APOS_RE's apostrophe sits in a lookaround next to its match.
    # Case-insensitive patterns: the trigger characters have no case, so no folding is needed.
    window = text[max(match.start() - 1, 0) : match.end() + 1]
    assert any(t in window for t in triggers)


@settings(max_examples=400, deadline=None)
@given(st.one_of(MIXED_TEXT, st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=90)))
def test_text_taken_as_already_normal_is_a_fixed_point_of_normalize(text: str) -> None:
    if text_module._is_normal_ascii(text):
        assert text_module._normalize(text) == text
    assert normalize(text) == text_module._normalize(text)


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(
        MIXED_TEXT,
        st.text(
            alphabet=st.sampled_from(["'", "a", "B", "é", "1", "_", " ", "-", "超"]), max_size=30
        ),
    )
)
def test_dropping_apostrophe_letters_matches_the_regex_substitution(text: str) -> None:
    assert text_module._drop_apostrophes(text) == text_module._APOS_RE.sub("", text)


ASCII_TEXT = st.one_of(
    MIXED_TEXT.map(lambda t: t.encode("ascii", "ignore").decode()),
    st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=90),
)


@settings(max_examples=500, deadline=None)
@given(ASCII_TEXT)
def test_ascii_identifier_patterns_find_what_the_full_patterns_find(text: str) -> None:
    pairs = text_module._SCAN_RE.findall(text)
    assert text_module._ASCII_ID_RE.findall(text) == [ident for ident, _ in pairs]
    assert text_module._ASCII_ID_SPLIT_RE.split(text) == text_module._ID_SPLIT_RE.split(text)


@settings(max_examples=300, deadline=None)
@given(st.one_of(MIXED_TEXT, ASCII_TEXT))
def test_latin_tokens_and_terms_are_those_of_the_full_scan(text: str) -> None:
    normalized = normalize(text)
    pairs = text_module._scan(normalized)
    assert list(text_module._latin_tokens(normalized)) == [i for i, _ in pairs if i]
    expected = []
    for ident, cjk in pairs:
        expected += text_module._cjk_terms(cjk) if cjk else text_module._latin_terms(ident)
    assert content_terms(text) == expected


def _runs_before(text: str) -> list[list[str]]:
    """_capitalized_runs as it was before the speed-ups (one list per token, then filtered)."""
    runs: list[list[str]] = [[]]
    last_end = 0
    for match in re.finditer(text_module._ID, text):
        word = match.group() if text_module._is_name_word(match.group()) else ""
        gap = text[last_end : match.start()]
        if not word or not gap or gap.strip(" \t"):
            runs.append([])
        if word:
            runs[-1].append(word)
        last_end = match.end()
    return [run for run in runs if run]


_NAME_PIECES = st.sampled_from(
    ["Ana", "New", "York", "API", "EC2", "the", "GB", "May", "x", "Ñandú", "北京", "2FA", "a-b"]
)
_NAME_GAPS = st.sampled_from([" ", "  ", "\t", "\n", ", ", "", "-", " / "])


@settings(max_examples=400, deadline=None)
@given(st.one_of(MIXED_TEXT, st.lists(st.tuples(_NAME_PIECES, _NAME_GAPS), max_size=12)))
def test_name_runs_match_the_loop_before_the_speed_ups(draw: str | list[tuple[str, str]]) -> None:
    text = draw if isinstance(draw, str) else "".join(word + gap for word, gap in draw)
    assert text_module._capitalized_runs(text) == _runs_before(text)
