"""The second round of ingest speed-ups changes no output: each shortcut against what it replaces.

``test_ingest_equivalence.py`` pins digests of everything ingest derives; these tests check each
shortcut on generated input, where the corpus may not reach: a faster pattern against the one it
stands for, a prefilter against the rule it guards, a fast path against the general loop.
"""

from __future__ import annotations

import doctest
import gc
import re
import unicodedata
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuemap_integrations import CueMap
from cuemap_integrations import records as records_module
from cuemap_integrations import redact as redact_module
from cuemap_integrations import text as text_module
from cuemap_integrations.aliases import AliasTable
from cuemap_integrations.config import RecallConfig
from cuemap_integrations.errors import ValidationError
from cuemap_integrations.lifecycle import content_key
from cuemap_integrations.records import MemoryRecord, MemoryType
from cuemap_integrations.text import normalize, word_stems
from cuemap_integrations.textkeys import TextMemo
from tests.core.ingest_corpus import FRAGMENTS
from tests.core.test_ingest_equivalence import ASCII_TEXT, MIXED_TEXT

_SLASH_FREE_ASCII = ASCII_TEXT.map(lambda t: t.replace("/", " "))


@settings(max_examples=500, deadline=None)
@given(_SLASH_FREE_ASCII)
def test_the_slash_free_identifier_pattern_finds_what_the_general_one_finds(text: str) -> None:
    assert text_module._ASCII_NO_SLASH_RE.findall(text) == text_module._ASCII_ID_RE.findall(text)


# The single-quote pattern as it was: the edge lookbehind before the quote.
_QUOTE_BEFORE = re.compile(rf"(?<!{text_module._W})'([^'\s](?:[^']*[^'\s])?)'(?!{text_module._W})")


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(
        MIXED_TEXT,
        st.text(alphabet=st.sampled_from(["'", "a", "é", "超", " ", "1", "_", "\n"]), max_size=30),
    )
)
def test_the_single_quote_pattern_matches_like_the_one_it_replaced(text: str) -> None:
    def found(regex: re.Pattern[str]) -> list[tuple[tuple[int, int], str]]:
        return [(m.span(), m.group(1)) for m in regex.finditer(text)]

    assert found(text_module._QUOTE_RES[1]) == found(_QUOTE_BEFORE)


@settings(max_examples=300, deadline=None)
@given(st.one_of(MIXED_TEXT, ASCII_TEXT))
def test_cues_taken_as_normal_on_ascii_text_are_normal(text: str) -> None:
    """derive_cues skips normalizing every bucket but quotations and names on ASCII text."""
    normalized = normalize(text)
    if not normalized.isascii():
        return
    rest = text_module._mask(text_module._URL_RE, normalized, text_module._URL_TRIGGER)
    dates, rest = text_module._date_cues(rest)
    buckets = [
        text_module._identifier_cues(rest),
        text_module._url_hosts(normalized),
        text_module._number_cues(rest),
        dates,
        text_module._chinese_cues(rest),
        text_module._salient_cues(rest),
    ]
    for cue in (c for bucket in buckets for c in bucket):
        assert normalize(cue) == cue


def _first_unique_before(buckets: list[list[str]], limit: int) -> list[str]:
    """_first_unique as it was (every raw cue normalized, none skipped)."""
    out: list[str] = []
    for raw in (raw for bucket in buckets for raw in bucket):
        cue = normalize(raw)
        if cue not in out and text_module._is_valid_cue(cue):
            out.append(cue)
            if len(out) >= limit:
                break
    return out


_CUE = st.sampled_from(["api", "API", "Api ", "  ", "", "-", "x" * 130, "ＡＢ", "ab", "a b", "é"])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(_CUE, max_size=6), max_size=5), st.integers(1, 8))
def test_first_unique_and_first_valid_give_the_cues_of_the_plain_loop(
    buckets: list[list[str]], limit: int
) -> None:
    expected = _first_unique_before(buckets, limit)
    assert text_module._first_unique(buckets, limit) == expected
    normal = [[normalize(c) for c in bucket] for bucket in buckets]
    assert text_module._first_valid(normal, limit) == expected


@settings(max_examples=300, deadline=None)
@given(st.one_of(MIXED_TEXT, st.text(alphabet=st.sampled_from("a1٣９ 0_9x"), max_size=8)))
def test_the_digit_prefilter_is_the_ascii_digit_search(text: str) -> None:
    assert text_module.has_ascii_digit(text) is (re.search("[0-9]", text) is not None)


_SECOND = [i for i, needs in enumerate(redact_module._NEEDS) if needs is not None]


@pytest.mark.parametrize("index", _SECOND)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_match_of_a_rule_holds_its_second_prefilter(index: int, data: st.DataObject) -> None:
    _, rule = redact_module.PATTERNS[index]
    text = data.draw(st.from_regex(rule))
    match = rule.search(text)
    assert match is not None and redact_module._NEEDS[index].search(match.group())


def test_the_phone_password_and_secret_key_rules_have_a_second_prefilter() -> None:
    secrets = [redact_module.PATTERNS[i][0].value for i in _SECOND]
    assert secrets == ["password", "api_key", "phone"]
    assert redact_module._NEEDS[-1] is redact_module._DIGIT_JOINED


@settings(max_examples=300, deadline=None)
@given(st.one_of(MIXED_TEXT, st.text(max_size=40)))
def test_folding_ascii_with_lower_is_the_full_fold(text: str) -> None:
    assert redact_module._folded(text) == text.translate(redact_module._FOLD).lower()


_ALIAS_WORDS = st.sampled_from(
    ["the db", "timed out", "time out", "database", "超时了", "back up", "logs", "on", "one", "x"]
)
_TABLES = [
    AliasTable(RecallConfig().aliases),
    AliasTable([("on call", "pager"), ("db", "数据库")]),  # a phrase starting with a stop word
]


@pytest.mark.parametrize("table", range(len(_TABLES)))
@settings(max_examples=200, deadline=None)
@given(st.one_of(MIXED_TEXT, st.lists(_ALIAS_WORDS, max_size=6).map(" ".join)))
def test_alias_terms_found_with_the_early_exit_are_those_of_the_full_loop(
    table: int, text: str
) -> None:
    aliases = _TABLES[table]
    normalized = normalize(text)
    stems = word_stems(normalized)
    found = aliases.find_in(normalized, stems)
    aliases._probes()
    firsts, aliases._firsts = aliases._firsts, frozenset({""})
    always, aliases._always = aliases._always, True  # no early exit: every probe is tested
    try:
        assert found == aliases.find_in(normalized, stems)
    finally:
        aliases._firsts, aliases._always = firsts, always


@pytest.mark.parametrize("table", range(len(_TABLES)))
@settings(max_examples=200, deadline=None)
@given(st.one_of(MIXED_TEXT, st.lists(_ALIAS_WORDS, max_size=6).map(" ".join)))
def test_alias_terms_found_among_the_stems_read_are_those_of_every_stem(
    table: int, text: str
) -> None:
    """Ingest derives a memory's stems among ``stems_read()`` alone (``vocab``), and calls no
    find_in for ASCII text without one of them (TextMemo.derived_cues)."""
    aliases = _TABLES[table]
    normalized = normalize(text)
    stems = word_stems(normalized)
    found = aliases.find_in(normalized, stems)
    assert aliases.find_in(normalized, stems & aliases.stems_read()) == found
    if normalized.isascii() and not stems & aliases.stems_read():
        assert found == []


def test_the_stems_read_follow_the_groups() -> None:
    table = AliasTable([("db", "database")])
    assert table.stems_read() == {"db", "databas"}
    table.add_group(["on call", "pager"])
    assert table.stems_read() >= {"db", "databas", "on", "call", "pager"}


_T = datetime(2026, 1, 2, tzinfo=timezone.utc)
_PLUS_2 = timezone(timedelta(hours=2))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(st.text(max_size=6), st.sampled_from([" ", "\ud800", "a\udc00"])), max_size=5
    )
)
def test_cue_lists_are_checked_as_item_by_item(cues: list[str]) -> None:
    """The all-in-C check of a cue list accepts exactly the lists the per-item loop accepts."""
    bad = next(
        (c for c in cues if not c.strip() or any(0xD800 <= ord(ch) <= 0xDFFF for ch in c)), None
    )
    if bad is None:
        record = MemoryRecord(memory_id="m", content="x", created_at=_T, updated_at=_T, cues=cues)
        assert record.cues == tuple(cues)
    else:
        with pytest.raises(ValidationError) as error:
            MemoryRecord(memory_id="m", content="x", created_at=_T, updated_at=_T, cues=cues)
        assert (error.value.field, error.value.value) == ("cues", bad)


@pytest.mark.parametrize("enabled", [True, False])
def test_a_batch_leaves_the_garbage_collector_as_it_found_it(enabled: bool) -> None:
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        with CueMap() as cm:
            cm.add_many([{"content": "The API uses port 8001"}, {"content": "Redis on 6379"}])
            assert gc.isenabled() is enabled
            with pytest.raises(ValidationError):
                cm.add_many([{"content": ""}])
            assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def _consonants_before(word: str) -> list[bool]:
    """The stemmer's consonant mask as it was (one bool per letter)."""
    mask: list[bool] = []
    for ch in word:
        mask.append((not mask or not mask[-1]) if ch == "y" else ch not in "aeiou")
    return mask


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from("aeiouybcdrstwxyy"), max_size=12))
def test_word_shapes_spell_the_porter_consonant_mask(word: str) -> None:
    mask = _consonants_before(word)
    assert text_module._shape(word) == "".join("c" if c else "v" for c in mask)
    assert text_module._measure(word) == sum(
        1 for i in range(1, len(mask)) if mask[i] and not mask[i - 1]
    )


def test_textkeys_examples_run() -> None:
    from cuemap_integrations import textkeys

    results = doctest.testmod(textkeys)
    assert results.attempted and not results.failed


@pytest.mark.parametrize("table", range(len(_TABLES)))
@settings(max_examples=300, deadline=None)
@given(st.one_of(MIXED_TEXT, st.lists(_ALIAS_WORDS, max_size=6).map(" ".join)))
def test_a_phrase_found_in_the_units_passes_its_needs_test(table: int, text: str) -> None:
    """The word test before a phrase's unit scan is necessary: it never skips a phrase held."""
    aliases = _TABLES[table]
    normalized = normalize(text)
    units = f" {' '.join(text_module.query_units(normalized))} "
    for _, _, phrase in aliases._probes():
        if phrase is not None and f" {phrase} " in units:
            assert aliases._needs[phrase] <= word_stems(normalized)


_WORDISH = st.one_of(
    st.text(alphabet=st.sampled_from("abcxyzAZ019_-' 超é"), min_size=1, max_size=12),
    st.sampled_from(["the", "was", "on", "one", "running", "caresses", "8001", "v2", "x"]),
)


@settings(max_examples=500, deadline=None)
@given(_WORDISH)
def test_a_cue_lexicon_key_is_the_cue_query_units(cue: str) -> None:
    """The one-word fast path of CueLexicon._key_of gives the key of the general path."""
    cue = normalize(cue)
    units = text_module.query_units(cue)
    expected = units[0] if len(units) == 1 else tuple(units)  # one unit: a bare string
    assert text_module.CueLexicon()._key_of(cue) == expected


def _scanned_units(normalized: str) -> list[str]:
    """query_units as it was: every text through the general scan."""
    units: list[str] = []
    for ident, cjk in text_module._scan(normalized):
        if cjk:
            units.extend(cjk)
        else:
            stop = ident in text_module.STOP_WORDS
            units.append("\x00" + ident if stop else text_module.stem(ident))
    return units


@settings(max_examples=500, deadline=None)
@given(st.one_of(ASCII_TEXT, MIXED_TEXT))
def test_query_units_of_ascii_text_are_those_of_the_full_scan(text: str) -> None:
    """ASCII text takes its units from the Latin tokens: the same as from the general scan."""
    assert text_module._query_units(text) == _scanned_units(normalize(text))


@settings(max_examples=500, deadline=None)
@given(st.one_of(ASCII_TEXT, MIXED_TEXT, st.text(max_size=40)))
def test_a_scanned_token_is_an_identifier_when_not_alphanumeric(text: str) -> None:
    """_expand and _identifier_cues test tokens with str.isalnum instead of _is_identifier."""
    normalized = normalize(text)
    tokens = [*text_module._latin_tokens(normalized), *text_module._latin_tokens(text)]
    tokens += [ident for ident, _ in text_module._scan(normalized) if ident]
    for token in tokens:
        assert text_module._is_identifier(token) is not token.isalnum()


@settings(max_examples=500, deadline=None)
@given(st.one_of(ASCII_TEXT, MIXED_TEXT, st.text(max_size=12), st.text("ab-._:@/", max_size=5)))
def test_is_identifier_is_any_separator_in_the_token(token: str) -> None:
    """The set test gives what the character loop it replaced gave."""
    separators = text_module._SEPARATORS
    assert text_module._is_identifier(token) is any(ch in separators for ch in token)


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(
        ASCII_TEXT, MIXED_TEXT, st.lists(st.sampled_from(FRAGMENTS), max_size=4).map(" ".join)
    )
)
def test_the_worded_buckets_of_ascii_text_hold_a_letter_or_digit_in_every_cue(text: str) -> None:
    """derive_cues checks only the length of these cues (_first_valid's ``worded``) when the
    normalized text is ASCII."""
    normalized = normalize(text)
    if not normalized.isascii():
        return
    rest = text_module._mask(text_module._URL_RE, normalized, text_module._URL_TRIGGER)
    dates, rest = text_module._date_cues(rest)
    names = [normalize(n) for n in text_module._name_cues(text)]
    worded = [text_module._number_cues(rest), dates, names, text_module._chinese_cues(rest),
              text_module._salient_cues(rest)]  # fmt: skip
    assert len(worded) == text_module._WORDED_BUCKETS
    for cue in (c for bucket in worded for c in bucket):
        assert cue and any(ch.isalnum() for ch in cue), cue


def test_ascii_text_is_left_as_is_by_nfkc_and_the_punctuation_table() -> None:
    """_name_cues skips both for ASCII content."""
    ascii_chars = "".join(map(chr, range(128)))
    assert unicodedata.normalize("NFKC", ascii_chars) == ascii_chars
    assert ascii_chars.translate(text_module._PUNCT_TABLE) == ascii_chars


def _general_pass(text: str) -> str:
    """_normalize_pass as it was, for every text."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return " ".join(folded.translate(text_module._NORMALIZE_TABLE).split())


@settings(max_examples=500, deadline=None)
@given(st.one_of(ASCII_TEXT, st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=60)))
def test_the_ascii_normalize_pass_is_the_general_pass(text: str) -> None:
    assert text_module._normalize_ascii_pass(text) == _general_pass(text)


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(
        ASCII_TEXT, MIXED_TEXT, st.lists(st.sampled_from(FRAGMENTS), max_size=3).map(" ".join)
    )
)
def test_stems_and_terms_are_word_stems_and_content_terms(text: str) -> None:
    normalized = normalize(text)
    expected = (word_stems(normalized), text_module.content_terms(normalized))
    assert text_module.stems_and_terms(normalized) == expected


def test_no_stop_word_is_salient() -> None:
    """_salient_cues drops stop words before _is_salient_word."""
    assert not any(map(text_module._is_salient_word, text_module.STOP_WORDS))


def test_the_content_key_from_the_memo_is_the_content_key() -> None:
    memo = TextMemo(AliasTable(RecallConfig().aliases))
    for text in FRAGMENTS[:-1]:
        record = MemoryRecord(memory_id="m", content=text, created_at=_T, updated_at=_T)
        assert content_key(record, memo.normalized) == content_key(record)
        assert memo.content_key(record) == content_key(record)
        other = MemoryRecord(
            memory_id="n", content=text, created_at=_T, updated_at=_T, namespace="x"
        )
        assert memo.content_key(other) == content_key(other) != content_key(record)


_SECRETISH = st.lists(
    st.sampled_from(
        [*FRAGMENTS, "_", "ghp_", "_live_", "sk_test_abcdefghijklmnop1234", "hf_", "npm_", "密码",
         "api", "令牌", "是 abcdefgh", "=", " ", "x" * 36, "A" * 16, "passion", "PassWD", ":",
         "monkey", "TOKEN", '"', "ſecret", "555-123-4567", "5.5", "٣", "+", "18"]
    ),
    max_size=6,
).map("".join)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.one_of(_SECRETISH, MIXED_TEXT))
def test_the_rules_kept_for_a_text_screen_it_as_all_rules_do(text: str) -> None:
    """_may_match tries only the rules and triggers that can occur in the text (ASCII, "_",
    digits), and a rule's second prefilter only rules out texts the rule cannot match."""
    assert redact_module._may_match(text) is (redact_module._SCREEN.search(text) is not None)
    kept = redact_module._rules_of(text)
    folded = redact_module._folded(text)
    for pattern, triggers, nocase, _ in redact_module._RULES:
        tried = {t for p, ts, _, _ in kept if p is pattern for t in ts}
        if tried:  # the triggers left out cannot occur in the text
            assert not any(t in (folded if nocase else text) for t in set(triggers) - tried)
        else:  # a rule left out whole (no trigger, or no digit for its "\\d") cannot match
            assert pattern.search(text) is None


def _capitalized_runs_before(text: str) -> list[list[str]]:
    """_capitalized_runs as it was: every token of the split, with the gaps between them."""
    pieces = text_module._ID_SPLIT_RE.split(text)
    tokens, gaps = pieces[1::2], pieces[0::2]
    runs: list[list[str]] = []
    current: list[str] = []
    last = -2
    for i, token in enumerate(tokens):
        if not text_module._is_name_word(token):
            continue
        if current and (i != last + 1 or not gaps[i] or gaps[i].strip(" \t")):
            runs.append(current)
            current = []
        current.append(token)
        last = i
    if current:
        runs.append(current)
    return runs


_NAMEISH = st.lists(
    st.sampled_from(
        ["Caroline", "New", "York", "API", "2FA", "3M", "GB", "10", "iPhone", "McDonald", "the",
         "a", "X", "Foo", "bar", "_", "-", "--", ".", ":", "@", "'", ",", " ", "  ", "\t", "\n",
         "May", "EC2", "x"]
    ),
    max_size=12,
).map("".join)  # fmt: skip


@settings(max_examples=1000, deadline=None)
@given(st.one_of(_NAMEISH, ASCII_TEXT, MIXED_TEXT))
def test_name_runs_from_candidates_are_those_of_every_token(text: str) -> None:
    """The candidate-run regex of ASCII text finds the runs the token-by-token scan finds."""
    text = text_module._drop_apostrophes(text)
    assert text_module._capitalized_runs(text) == _capitalized_runs_before(text)


@settings(max_examples=500, deadline=None)
@given(st.one_of(ASCII_TEXT, MIXED_TEXT, st.text(max_size=10)))
def test_id_and_content_checks_agree_with_the_regex_and_strip(text: str) -> None:
    """validate_memory_id skips the control-character search for printable ASCII;
    validate_content tests blankness with isspace() instead of strip()."""
    if text.isascii() and text.isprintable():
        assert records_module._ID_FORBIDDEN.search(text) is None
    assert (not text or text.isspace()) is (not text.strip())


_ANY = st.one_of(
    st.none(), st.text(max_size=6), st.sampled_from(["", " ", "a\x00b", "\ud800", "x" * 300]),
    st.integers(-1, 2), st.just(_T), st.just(datetime(2026, 1, 2)), st.lists(st.text(max_size=4),
    max_size=3), st.just({"k": [1, 2.5, "v"]}), st.just({1: "bad key"}), st.just(float("nan")),
)  # fmt: skip
_ABSENT = object()
_VALID = {
    "memory_id": ["m", "id-2", "x" * 256], "cues": [["port", "api"], ("8001",), []],
    "tags": [["ops"], (), ["a", "b"]], "type": ["fact", MemoryType.EVENT, " Note "],
    "source": ["chat", None], "created_at": [_T, "2026-01-02T03:04:05+02:00"],
    "updated_at": [_T, "2026-01-02T03:04:05Z"], "expires_at": [None, _T],
    "supersedes": [None, "old-1"], "key": [None, "user.name"],
    "metadata": [{}, {"i": 1, "s": ["a", 2.5]}, None], "cue_origin": ["given", "derived"],
}  # fmt: skip
_VALUES = st.tuples(
    st.fixed_dictionaries(
        {name: st.one_of(st.just(_ABSENT), st.sampled_from(ok)) for name, ok in _VALID.items()}
    ),
    st.one_of(st.none(), st.tuples(st.sampled_from(sorted(_VALID)), _ANY)),  # one odd field
).map(
    lambda drawn: {
        k: v for k, v in {**drawn[0], **dict([drawn[1]] if drawn[1] else [])}.items()
        if v is not _ABSENT
    }
)  # fmt: skip


@settings(max_examples=1000, deadline=None)
@given(_VALUES, st.booleans())
def test_a_prevalidated_record_is_the_record_the_constructor_makes(
    values: dict[str, object], derived: bool
) -> None:
    """MemoryRecord._prevalidated gives the record (or the error) of MemoryRecord(**values)."""
    values = {"memory_id": "m", "created_at": _T, "updated_at": _T, **values}
    values.update(content="The API uses port 8001", namespace="default")
    if derived:  # the caller vouches for the cues
        values["cues"] = ("api", "8001")
    try:
        expected: MemoryRecord | tuple[str, object] = MemoryRecord(**values)  # type: ignore[arg-type]
    except ValidationError as error:
        expected = (error.field, error.value)
    try:
        got: MemoryRecord | tuple[str, object] = MemoryRecord._prevalidated(
            values, cues_checked=derived
        )
    except ValidationError as error:
        got = (error.field, error.value)
    if isinstance(expected, MemoryRecord):
        assert isinstance(got, MemoryRecord)
        assert list(vars(got).items()) == list(vars(expected).items())
    else:
        assert got == expected or (got[1] != got[1] and expected[1] != expected[1])  # NaN


def _plain_check_from_tags(values: dict[str, object]) -> None:
    """records._check_from_tags as it was written before its shortcuts: a call per field."""
    r = records_module
    values["tags"] = r._string_tuple(values["tags"], "tags")
    values["type"] = MemoryType.coerce(values["type"])
    for name in ("created_at", "updated_at"):
        values[name] = r.coerce_timestamp(values[name], name)
    for name in ("last_accessed", "expires_at", "superseded_at"):
        values[name] = r._optional_timestamp(values[name], name)
    if values["source"] is not None:
        if not isinstance(values["source"], str):
            raise ValidationError("source", values["source"], "a string or None")
        r.check_unicode(values["source"], "source")
    count = values["access_count"]
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ValidationError("access_count", count, "an integer >= 0")
    for name in ("supersedes", "superseded_by", "key"):
        if values[name] is not None:
            r.validate_memory_id(values[name], name)
    if values["cue_origin"] not in ("given", "derived"):
        raise ValidationError("cue_origin", values["cue_origin"], "'given' or 'derived'")
    metadata = r.json_safe_copy(values["metadata"] if values["metadata"] is not None else {})
    if not isinstance(metadata, dict):
        raise ValidationError("metadata", values["metadata"], "a dict")
    values["metadata"] = metadata


_MORE_FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "access_count": st.sampled_from([0, 3, -1, True, 2.0, "1"]),
        "last_accessed": st.sampled_from([None, _T, "2026-01-02T03:04:05Z", datetime(2026, 1, 2)]),
        "superseded_at": st.sampled_from([None, _T, datetime(2026, 1, 2, tzinfo=_PLUS_2)]),
        "superseded_by": st.sampled_from([None, "new-1", "", 5]),
        "tags": st.sampled_from([(), [], ["a", " "], ("ops",), "ops", None]),
        "type": st.sampled_from([MemoryType.FACT, "fact", " Note ", "nope", 3]),
    },
)


@settings(max_examples=1500, deadline=None)
@given(_VALUES, _MORE_FIELDS)
def test_the_field_checks_after_tags_are_the_plain_calls(
    values: dict[str, object], more: dict[str, object]
) -> None:
    """_check_from_tags passes over values already in checked form (no tags, a member, a UTC
    datetime, None, an exact int count) and otherwise makes the plain calls: the same fields,
    or the same error, as the call-per-field version."""
    fields = dict(records_module._FIELD_TEMPLATE, memory_id="m", created_at=_T, updated_at=_T)
    fields.update(values, **more)
    outcomes = []
    for check in (records_module._check_from_tags, _plain_check_from_tags):
        checked = dict(fields)
        try:
            check(checked)
            outcomes.append(repr(list(checked.items())))
        except ValidationError as error:
            outcomes.append(repr((error.field, error.value)))
    assert outcomes[0] == outcomes[1]


_META_TEXT = st.one_of(
    st.sampled_from(["session", "speaker", "password", "api_key", "GITHUB_TOKEN", "i", "<private>",
                     "Caroline", "", " ", "[REDACTED:password]", "call 555-123-4567",
                     "Bearer abcdefghijklmnop1234", "a@b.co", "Straße", "\ud800"]),
    _SECRETISH,
)  # fmt: skip
_META_VALUE = st.one_of(
    _META_TEXT, st.none(), st.booleans(), st.integers(), st.floats(),
    st.lists(_META_TEXT, max_size=2), st.dictionaries(_META_TEXT, _META_TEXT, max_size=2),
)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(_META_TEXT, _META_VALUE, max_size=4))
def test_metadata_plainly_clean_is_what_redact_mapping_finds_clean(metadata: dict) -> None:
    """redact_record skips redact_mapping for such metadata: it would report nothing."""
    if not redact_module._plainly_clean(metadata):
        return
    for policy in (redact_module.DEFAULT_POLICY, redact_module.RedactionPolicy.strict()):
        assert redact_module.redact_mapping(metadata, policy) == (metadata, {}, False)


def test_a_redacted_record_keeps_its_plainly_clean_metadata() -> None:
    record = MemoryRecord(
        memory_id="m", content="password=hunter2hunter2", created_at=_T, updated_at=_T,
        metadata={"session_id": "s1", "speaker": "Caroline", "i": 3, "ok": True, "x": 1.5},
    )  # fmt: skip
    assert redact_module._plainly_clean(record.metadata)
    redacted = redact_module.redact_record(record, redact_module.DEFAULT_POLICY, 0)
    assert redacted.metadata == {**record.metadata, "redacted": {"password": 1}}


_DATED_TEXT = st.one_of(
    MIXED_TEXT,
    st.lists(st.sampled_from(["2024", "2024-05-01", "5", "12", "of", "may", "June", "3rd", "年",
                              "月", "日", ",", " ", "/", "-", "."]), max_size=10).map("".join),
)  # fmt: skip


@settings(max_examples=800, deadline=None)
@given(_DATED_TEXT)
def test_the_year_prefilter_leaves_the_date_cues_of_every_pattern(text: str) -> None:
    """_date_cues skips its substitutions when no four digits are in a row: every date
    pattern needs them (its year); without the prefilter, the same cues and text."""
    text = normalize(text)
    found = text_module._date_cues(text)
    always = re.compile("")  # matches every text: the substitutions always run
    original = text_module._YEAR_RUN_RE
    text_module._YEAR_RUN_RE = always
    try:
        assert text_module._date_cues(text) == found
    finally:
        text_module._YEAR_RUN_RE = original
