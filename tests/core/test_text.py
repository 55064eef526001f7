"""cuemap_integrations.text: normalization, tokens, Porter stems, derived cues, the cue lexicon."""

from __future__ import annotations

import doctest
import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuemap_integrations import text as text_module
from cuemap_integrations.text import (
    CJK_FUNCTION_WORDS,
    CJK_STOP_CHARS,
    STOP_WORDS,
    CueLexicon,
    content_terms,
    derive_cues,
    is_cjk,
    joined_pairs,
    normalize,
    query_units,
    stem,
    word_unit,
    words,
)

ROOT = Path(__file__).resolve().parents[2]
# Every code point (lone surrogates included) plus characters known to need a second pass.
ANY_CHAR = st.one_of(
    st.characters(exclude_categories=()),
    st.sampled_from(["\u0345", "ß", "İ", "ﬁ", "\u0301", "\u3000", "\x00", "。", "「", "ǅ", "ﾞ"]),
)
EXAMPLE_EN = (
    "The order-timeout fix was `curl -X POST /ops/clear-cache` on api.example.com, "
    "see https://api.example.com/docs"
)
EXAMPLE_ZH = "订单超时是因为Redis缓存过期导致的"
EXAMPLE_ZH_FIX = "修复方法：执行 curl -X POST /ops/clear-cache 清理缓存"


# --- normalize ------------------------------------------------------------------------------


@settings(max_examples=500, database=None, deadline=None)
@given(st.text())
def test_normalize_is_idempotent(text: str) -> None:
    once = normalize(text)
    assert normalize(once) == once


@settings(max_examples=500, database=None, deadline=None)
@given(st.text(ANY_CHAR, max_size=12))
def test_normalize_is_idempotent_with_surrogates_and_marks(text: str) -> None:
    once = normalize(text)
    assert normalize(once) == once
    assert once == once.strip() and "  " not in once


def test_normalize_is_idempotent_for_every_bmp_character() -> None:
    # Each character alone and followed by a combining acute (which casefold can expose).
    samples = (s for cp in range(0x10000) for s in (chr(cp), chr(cp) + "\u0301"))
    bad = [s for s in samples if normalize(normalize(s)) != normalize(s)]
    assert bad == []


def test_normalize_reaches_the_fixed_point_after_casefold() -> None:
    # casefold turns ß into "ss" and Ϊ into "ϊ"; the following acute then composes under NFKC.
    assert normalize("ß\u0301") == "s\u015b" == normalize(normalize("ß\u0301"))
    assert normalize("\u03aa\u0301") == normalize(normalize("\u03aa\u0301"))
    assert normalize("a\u0345\u0301") == normalize(normalize("a\u0345\u0301"))


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("ＡＢＣ１２３", "abc123"),
        ("Ｒｅｄｉｓ　缓存", "redis 缓存"),
        ("Straße", "strasse"),
        ("你好。世界，对吗？（是的）！", "你好.世界,对吗?(是的)!"),
        ("甲、乙；丙：丁", "甲,乙;丙:丁"),
        ("「引用」『书名』“双引号”„x", '"引用""书名""双引号""x'),
        ("‘single’ 【注】《书》", "'single' [注]<书>"),
        ("等等… a—b–c ～", "等等... a-b-c ~"),
        ("  a \n\t b\u3000c\x00d\x1f e  ", "a b c d e"),
        ("\r\nline1\r\n\r\nline2\x85", "line1 line2"),
    ],
)
def test_normalize_examples(raw: str, expected: str) -> None:
    assert normalize(raw) == expected


def test_normalize_keeps_lone_surrogates_and_emoji() -> None:
    assert normalize("\ud800 X 😀") == "\ud800 x 😀"


# --- is_cjk ---------------------------------------------------------------------------------


@pytest.mark.parametrize("ch", ["订", "㐀", "豈", "𠀀", "〇", "あ", "カ", "한"])
def test_is_cjk_true(ch: str) -> None:
    assert is_cjk(ch)


@pytest.mark.parametrize("ch", ["a", "1", "。", "、", "・", " ", "é", "😀", "", "订单"])
def test_is_cjk_false(ch: str) -> None:
    assert not is_cjk(ch)


# --- stem -----------------------------------------------------------------------------------

# Pairs from the standard Porter vocabulary (voc.txt / output.txt) and the 1980 paper.
PORTER_GOLDEN = {
    "caresses": "caress", "ponies": "poni", "ties": "ti", "caress": "caress", "cats": "cat",
    "feed": "feed", "agreed": "agre", "plastered": "plaster", "bled": "bled", "motoring": "motor",
    "sing": "sing", "conflated": "conflat", "troubled": "troubl", "sized": "size",
    "hopping": "hop", "tanned": "tan", "falling": "fall", "hissing": "hiss", "fizzed": "fizz",
    "failing": "fail", "filing": "file", "happy": "happi", "sky": "sky",
    "relational": "relat", "conditional": "condit", "rational": "ration", "valenci": "valenc",
    "hesitanci": "hesit", "digitizer": "digit", "conformabli": "conform", "radicalli": "radic",
    "differentli": "differ", "vileli": "vile", "analogousli": "analog",
    "vietnamization": "vietnam", "predication": "predic", "operator": "oper",
    "feudalism": "feudal", "decisiveness": "decis", "hopefulness": "hope",
    "callousness": "callous", "formaliti": "formal", "sensitiviti": "sensit",
    "sensibiliti": "sensibl", "triplicate": "triplic", "formative": "form",
    "formalize": "formal", "electriciti": "electr", "electrical": "electr", "hopeful": "hope",
    "goodness": "good", "revival": "reviv", "allowance": "allow", "inference": "infer",
    "airliner": "airlin", "gyroscopic": "gyroscop", "adjustable": "adjust",
    "defensible": "defens", "irritant": "irrit", "replacement": "replac",
    "adjustment": "adjust", "dependent": "depend", "adoption": "adopt", "homologou": "homolog",
    "communism": "commun", "activate": "activ", "angulariti": "angular",
    "homologous": "homolog", "effective": "effect", "bowdlerize": "bowdler", "probate": "probat",
    "rate": "rate", "cease": "ceas", "controll": "control", "roll": "roll",
    "generalizations": "gener", "oscillators": "oscil", "abilities": "abil",
    "archaeology": "archaeolog", "orders": "order", "running": "run", "dominion": "dominion",
    "opinion": "opinion", "agreement": "agreement", "sensibly": "sensibl",
}  # fmt: skip


@pytest.mark.parametrize(("word", "expected"), sorted(PORTER_GOLDEN.items()))
def test_porter_golden(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_stem_spec_examples() -> None:
    assert stem("expires") == stem("expired") == "expir"
    assert stem("caresses") == "caress"


@pytest.mark.parametrize(
    "word", ["is", "ab", "user_id", "clear-cache", "v2", "8001", "café", "Orders", "a.b", "x:y"]
)
def test_stem_leaves_short_non_ascii_and_identifiers_alone(word: str) -> None:
    assert stem(word) == word


def test_stem_is_cached() -> None:
    stem("generalizations")
    assert text_module._STEMS["generalizations"] == "gener"
    memo = text_module._STEMS  # the C twin of _Memo when the extension is in use
    assert (memo._maxsize if text_module._C is None else memo.maxsize) == 1 << 14


def test_a_full_memo_keeps_one_older_generation_and_still_answers() -> None:
    calls: list[str] = []
    memo = text_module._Memo(lambda key: calls.append(key) or len(key), 2)
    assert (memo["a"], memo["bb"]) == (1, 2)
    assert memo["ccc"] == 3 and dict(memo) == {"ccc": 3}  # "a" and "bb" are the older ones
    assert memo["a"] == 1 and dict(memo) == {"ccc": 3, "a": 1} and calls == ["a", "bb", "ccc"]
    assert memo["dddd"] == 4 and dict(memo) == {"dddd": 4}  # "ccc" and "a" are the older now
    assert memo["a"] == 1 and calls[-1] == "dddd"  # asked in each generation: kept
    assert memo["bb"] == 2 and calls[-1] == "bb"  # not asked since two turnovers: derived again
    never = text_module._Memo(lambda key: None, 1)  # None and False are values like any other
    assert never["x"] is None and never["y"] is None and never["x"] is None


# --- words ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("run clear-cache now", ["run", "clear-cache", "clear", "cache", "now"]),
        ("the user_id field", ["the", "user_id", "user", "id", "field"]),
        ("port 8001.", ["port", "8001"]),
        ("upgrade to v2.1.", ["upgrade", "to", "v2.1", "v2", "1"]),
        (
            "POST /ops/clear-cache",
            ["post", "/ops/clear-cache", "ops", "clear-cache", "clear", "cache"],
        ),
        ("src/app/main.py", ["src/app/main.py", "src", "app", "main.py", "main", "py"]),
        ("mail bob@example.com", ["mail", "bob@example.com", "bob", "example", "com"]),
        ("I don't know, it's o'clock", ["i", "don", "know", "it", "clock"]),
        ("Ｐｏｒｔ 8001", ["port", "8001"]),
        ("订单超时 Redis 缓存", ["redis"]),
        ("a a a", ["a", "a", "a"]),
    ],
)
def test_words(text: str, expected: list[str]) -> None:
    assert words(text) == expected


def test_words_splits_latin_out_of_cjk() -> None:
    assert words("端口8001超时是因为Redis缓存") == ["8001", "redis"]


@settings(max_examples=200, database=None, deadline=None)
@given(st.text())
def test_words_are_invariant_under_normalization(text: str) -> None:
    assert words(normalize(text)) == words(text)


# --- content_terms / query_units ------------------------------------------------------------


def test_content_terms_english_drops_stop_words_and_stems() -> None:
    terms = content_terms("The orders were expired and the caches are running")
    assert terms == ["order", "expir", "cach", "run"]


def test_content_terms_keep_duplicates_and_identifiers() -> None:
    terms = content_terms("Orders, orders: see user_id")
    assert terms == ["order", "order", "user_id", "user", "id"]


def test_content_terms_chinese_bigrams_and_unigrams() -> None:
    assert content_terms("后来怎么修的") == [
        "后", "后来", "来", "来怎", "怎", "怎么", "么", "么修", "修", "修的",
    ]  # fmt: skip
    terms = content_terms("我的订单")
    assert "的" not in terms and "我" not in terms
    assert {"我的", "的订", "订单", "订", "单"} <= set(terms)


def test_content_terms_mixed_text() -> None:
    terms = content_terms("订单超时是因为Redis缓存过期")
    assert terms.index("因为") < terms.index("redi") < terms.index("缓存")
    assert "是" not in terms and "时是" in terms and "过期" in terms


def test_query_units() -> None:
    units = query_units("上次订单超时 Orders /ops/clear-cache!")
    assert units == ["上", "次", "订", "单", "超", "时", "order", "/ops/clear-cache"]
    assert query_units("  ,.;  ") == []


# plain words (letters and digits, any case), stop words, and anything else
_WORDISH = st.one_of(
    st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyzAZ0189"), max_size=14),
    st.sampled_from(sorted(STOP_WORDS)),
    st.text(ANY_CHAR, max_size=10),
)


@given(_WORDISH)
def test_word_unit_is_the_one_query_unit_of_a_plain_word(word: str) -> None:
    """word_unit (the feedback pass's shortcut for new carried cues) gives the one unit
    query_units finds, for a lower-case ASCII word of letters and digits, and None else."""
    unit = word_unit(word)
    plain = word.isascii() and word.isalnum() and word == word.lower()
    assert (unit is not None) == plain
    if unit is not None:
        assert query_units(word) == [unit]


@pytest.mark.parametrize("word", ["orders", "caroline", "2023", "the", "on", "a1b2", "lgbtq"])
def test_word_unit_examples(word: str) -> None:
    assert [word_unit(word)] == query_units(word)
    assert word_unit(word.capitalize() if word.isalpha() else word + "-x") is None


# --- word lists -----------------------------------------------------------------------------


def test_word_lists_shape() -> None:
    assert 150 <= len(STOP_WORDS) <= 260
    assert {"the", "a", "is", "did", "what", "how", "when", "we", "you", "i", "it"} <= STOP_WORDS
    assert all(w == w.lower() for w in STOP_WORDS)
    assert set("的了是在我你他们这那个和也就都") <= CJK_STOP_CHARS
    assert all(len(c) == 1 and is_cjk(c) for c in CJK_STOP_CHARS)
    lengths = [len(w) for w in CJK_FUNCTION_WORDS]
    assert lengths == sorted(lengths, reverse=True)
    assert {"因为", "所以", "为什么", "怎么", "导致", "上次"} <= set(CJK_FUNCTION_WORDS)


# --- derive_cues ----------------------------------------------------------------------------

DERIVE_GOLDEN = [
    (
        EXAMPLE_EN,
        [
            "curl -x post /ops/clear-cache", "curl", "order-timeout", "/ops/clear-cache",
            "clear-cache", "api.example.com", "order", "timeout", "fix", "post", "ops", "clear",
            "cache", "api", "example",
        ],
    ),
    ("The API uses port 8001", ["8001", "api", "uses", "port"]),
    (
        "Caroline moved to New York on 8 May, 2023",
        ["2023-05-08", "2023", "caroline", "new york", "new", "york", "moved"],
    ),
    (EXAMPLE_ZH, ["redis", "订单超时", "缓存过期"]),
    (
        EXAMPLE_ZH_FIX,
        [
            "/ops/clear-cache", "clear-cache", "post", "修复方法", "执行", "清理缓存", "curl",
            "ops", "clear", "cache",
        ],
    ),
    (
        "Latency went from 5 ms to 120ms; 10 GB used, 30 % of $20, 10,000 users",
        ["5ms", "120ms", "10gb", "30%", "$20", "10000", "latency", "went", "used", "users"],
    ),
    (
        "Met on May 8, 2023, again 2024-05-01, in May 2023 and 2023年6月1日 (a Monday in June)",
        ["2023-05-08", "2023", "2024-05-01", "2024", "2023-05", "2023-06-01", "met"],
    ),
    (
        "Don't say 'hello world' or “订单超时” — it's Caroline's idea",
        ["hello world", "订单超时", "caroline", "say", "world", "idea"],
    ),
    (
        "see src/app/main.py and config.yaml; e.g. user_id",
        ["src/app/main.py", "main.py", "config.yaml", "user_id", "src", "app", "main", "config",
         "yaml", "user"],
    ),
]  # fmt: skip


@pytest.mark.parametrize(("content", "expected"), DERIVE_GOLDEN)
def test_derive_cues_golden(content: str, expected: list[str]) -> None:
    assert derive_cues(content) == expected


def test_derive_cues_rejects_impossible_dates() -> None:
    # Impossible dates stay raw identifiers; "31 April" is no date, but "April 2024" still is.
    cues = derive_cues("deadline 2024-02-30 or 2024-05-00, not 31 April 2024")
    assert cues == ["2024-02-30", "2024-05-00", "31", "2024-04", "2024", "deadline"]


def test_derive_cues_url_gives_only_the_host() -> None:
    cues = derive_cues("docs at https://api.example.com/v1/orders?id=7#top")
    assert cues == ["api.example.com", "docs"]


def test_derive_cues_names_and_acronyms() -> None:
    cues = derive_cues("We asked Melanie about the DB; The Beatles played in Lord Of The Rings.")
    assert cues[:6] == ["melanie", "db", "beatles", "lord of the rings", "lord", "rings"]
    assert "the" not in cues and "we" not in cues


def test_derive_cues_months_and_weekdays_are_not_cues() -> None:
    assert derive_cues("See you on Monday in June") == []


def test_derive_cues_chinese_pieces_bounded() -> None:
    # Pieces of 2-8 characters are kept whole; a 10-character piece is dropped, not cut.
    assert derive_cues("我们的数据库连接池配置文件丢失了") == []
    assert derive_cues("上次数据库连接池满了") == ["数据库连接池满"]


def test_derive_cues_backtick_command() -> None:
    cues = derive_cues("run `kubectl rollout restart deploy/api --namespace prod now` please")
    assert cues[0] == "kubectl"  # the 7-word span is too long to be a quoted cue itself
    assert "deploy/api" in cues


def test_derive_cues_limit_and_empty() -> None:
    text = " ".join(f"token{i}" for i in range(100))
    assert derive_cues(text, limit=5) == ["token0", "token1", "token2", "token3", "token4"]
    assert len(derive_cues(text)) == 48
    assert derive_cues(text, limit=0) == []
    assert derive_cues("") == [] and derive_cues("!!! ... ???") == []


@settings(max_examples=300, database=None, deadline=None)
@given(st.text(), st.integers(min_value=0, max_value=60))
def test_derive_cues_properties(content: str, limit: int) -> None:
    cues = derive_cues(content, limit=limit)
    assert len(cues) <= limit
    assert len(set(cues)) == len(cues)
    for cue in cues:
        assert cue == normalize(cue) and cue
        assert any(c.isalnum() for c in cue)
    assert derive_cues(content, limit=limit) == cues


# --- CueLexicon -----------------------------------------------------------------------------


def lexicon(*cues: str) -> CueLexicon:
    lex = CueLexicon()
    for cue in cues:
        lex.add(cue)
    return lex


def test_lexicon_longest_match_in_chinese() -> None:
    lex = lexicon("订单超时", "超时", "订单", "缓存")
    assert lex.match("上次订单超时怎么修的") == ["订单超时"]
    assert lex.match("超时了") == ["超时"]
    assert lex.match("订单和缓存") == ["订单", "缓存"]


def test_lexicon_single_unit_cues_inside_a_longer_match() -> None:
    lex = lexicon("订单超时", "单")
    assert lex.match("订单超时") == ["订单超时", "单"]


def test_lexicon_word_alignment_in_english() -> None:
    lex = lexicon("port", "new york")
    assert lex.match("we need support for the import") == []
    assert lex.match("open the port") == ["port"]
    assert lex.match("moved to New York") == ["new york"]
    assert lex.match("new yorkshire") == []


def test_lexicon_matches_by_stem_and_returns_every_sharing_cue() -> None:
    lex = lexicon("order", "orders", "ordering")
    assert lex.match("my Orders") == ["order", "ordering", "orders"]
    assert lexicon("order").match("orders timed out") == ["order"]


def test_lexicon_identifier_parts() -> None:
    lex = lexicon("ops", "clear-cache", "cache", "/ops/clear-cache", "orders")
    assert lex.match("run /ops/clear-cache now") == [
        "/ops/clear-cache",
        "ops",
        "clear-cache",
        "cache",
    ]
    assert lex.match("orders-api is down") == ["orders"]


def test_lexicon_mixed_text() -> None:
    lex = lexicon("redis", "缓存过期", "订单超时")
    assert lex.match("订单超时是因为Redis缓存过期导致的") == ["订单超时", "redis", "缓存过期"]


def test_lexicon_reference_counting() -> None:
    lex = lexicon("port", "port", "超时")
    assert len(lex) == 2 and "port" in lex and "PORT" in lex
    lex.discard("port")
    assert "port" in lex and lex.match("port") == ["port"]
    lex.discard("port")
    assert "port" not in lex and lex.match("port") == [] and len(lex) == 1
    lex.discard("port")
    lex.discard("never added")
    assert len(lex) == 1 and lex.match("超时") == ["超时"]
    assert 42 not in lex


def test_lexicon_discard_keeps_other_cues_of_the_same_key() -> None:
    lex = lexicon("orders", "order", "订单超时", "订单")
    lex.discard("orders")
    assert lex.match("orders") == ["order"]
    lex.discard("订单超时")
    assert lex.match("订单超时") == ["订单"]


def test_lexicon_normalizes_cues() -> None:
    lex = lexicon("  Redis  ", "ＡＰＩ")
    assert len(lex) == 2 and "redis" in lex
    assert lex.match("the api talks to REDIS") == ["api", "redis"]
    lex.add("")
    lex.add("   ")
    assert len(lex) == 2


def test_lexicon_order_is_independent_of_insertion_order() -> None:
    cues = ["orders", "order", "订单超时", "超时", "port", "new york", "york"]
    query = "new york orders 订单超时了 port"
    forward, backward = lexicon(*cues), lexicon(*reversed(cues))
    assert forward.match(query) == backward.match(query)
    assert forward.match(query) == ["new york", "york", "order", "orders", "订单超时", "port"]


@settings(max_examples=100, database=None, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.booleans(),
            st.sampled_from(
                ["order", "orders", "port", "订单超时", "超时", "new york", "x-y", "!!"]
            ),
        ),
        max_size=40,
    )
)
def test_lexicon_matches_a_counting_model(ops: list[tuple[bool, str]]) -> None:
    lex, model = CueLexicon(), Counter[str]()
    for is_add, cue in ops:
        if is_add:
            lex.add(cue)
            model[cue] += 1
        elif model[cue]:
            lex.discard(cue)
            model[cue] -= 1
    present = {c for c, n in model.items() if n}
    assert len(lex) == len(present)
    assert all(c in lex for c in present)
    found = lex.match("new york orders 订单超时 port x-y")
    assert set(found) <= present
    assert ("port" in found) == ("port" in present)


def test_lexicon_is_fast_with_many_cues() -> None:
    lex = CueLexicon()
    for i in range(50_000):
        lex.add(f"cue{i}")
        lex.add(f"订单{i % 97}号")
    lex.add("订单超时")
    query = "上次订单超时怎么修的 cue17 and cue49999 " * 2
    assert lex.match(query) == ["订单超时", "cue17", "cue49999"]


def test_docstring_examples_hold() -> None:
    results = doctest.testmod(text_module)
    assert results.attempted >= 10 and results.failed == 0


# --- determinism across processes -----------------------------------------------------------

HASHSEED_SCRIPT = textwrap.dedent(
    """
    import json
    from cuemap_integrations.text import CueLexicon, content_terms, derive_cues
    corpus = json.loads({corpus!r})
    lex = CueLexicon()
    out = []
    for text in corpus:
        cues = derive_cues(text)
        out.append(cues)
        out.append(content_terms(text))
        for cue in cues:
            lex.add(cue)
    for text in corpus:
        out.append(lex.match(text))
    print(json.dumps(out, ensure_ascii=False))
    """
)


def _run_with_seed(seed: str) -> str:
    corpus = [EXAMPLE_EN, EXAMPLE_ZH, EXAMPLE_ZH_FIX, *(c for c, _ in DERIVE_GOLDEN)]
    script = HASHSEED_SCRIPT.format(corpus=json.dumps(corpus, ensure_ascii=False))
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_output_is_identical_across_hash_seeds() -> None:
    first = _run_with_seed("1")
    assert "订单超时" in first and "clear-cache" in first
    assert _run_with_seed("4242") == first


def test_alias_find_in_equals_lexicon_find() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from cuemap_integrations.aliases import AliasTable
    from cuemap_integrations.config import DEFAULT_ALIASES

    table = AliasTable(DEFAULT_ALIASES)
    pieces = ["we", "timed", "out", "time", "back", "up", "backed", "the", "db", "database",
              "订单", "超时", "缓存", "修了", "fix", "fixed", "orders", "ports", ".", ",", "api"]  # fmt: skip

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.sampled_from(pieces), max_size=12))
    def check(parts: list[str]) -> None:
        text = normalize(" ".join(parts))
        stems = {stem(w) for w in words(text)}
        assert set(table.find_in(text, stems)) == set(table.find(text))

    check()


class _EveryKeyLexicon(CueLexicon):
    """The reference: every key in the dict, a cue that is its own key too (the layout before
    own keys were left to the reference counts)."""

    def _held(self, key: object) -> tuple[str, ...]:
        held = self._keys.get(key, ())  # type: ignore[call-overload]
        return (held,) if isinstance(held, str) else held

    def _insert(self, cue: str) -> None:
        key = self._key_of(cue)
        if key:
            held = self._held(key)
            self._keys[key] = cue if not held else tuple(sorted((*held, cue)))
            if not held:
                self._count_key(key, 1)

    def _remove(self, cue: str) -> None:
        key = self._key_of(cue)
        rest = tuple(c for c in self._held(key) if c != cue)
        if rest:
            self._keys[key] = rest[0] if len(rest) == 1 else rest
        elif key in self._keys:
            del self._keys[key]
            self._count_key(key, -1)


_LEXICON_WORDS = [
    "order",
    "orders",
    "ordering",
    "table",
    "tables",
    "超",
    "超时",
    "x-y",
    "a.b",
    "run",
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.booleans(), st.lists(st.sampled_from(_LEXICON_WORDS), min_size=1, max_size=3))
    ),
    st.lists(st.lists(st.sampled_from(_LEXICON_WORDS), max_size=6), min_size=1, max_size=4),
)
def test_own_keys_left_to_the_counts_match_as_every_key_in_the_dict(
    edits: list[tuple[bool, list[str]]], queries: list[list[str]]
) -> None:
    """Adding and discarding cues in any order, the lexicon matches every query and answers
    every unit as the reference holding every key does."""
    lex, reference = CueLexicon(), _EveryKeyLexicon()
    for add, cue_words in edits:
        for each in (lex, reference):
            (each.add if add else each.discard)(" ".join(cue_words))
    assert lex._lengths == reference._lengths and len(lex) == len(reference)
    # the longest match skips units that start no key of several units: counted exactly
    starts = Counter(key[0] for key in lex._keys if isinstance(key, tuple))
    assert lex._firsts == dict(starts)
    for query_words in queries:
        query = " ".join(query_words)
        assert lex.match(query) == reference.match(query)
        for unit in text_module.query_units(query):
            assert lex.unit_cues(unit) == reference.unit_cues(unit)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(_LEXICON_WORDS), min_size=1, max_size=3), min_size=1),
    st.lists(st.lists(st.sampled_from(_LEXICON_WORDS), max_size=6), min_size=1, max_size=4),
)
def test_remembered_own_keys_are_what_key_of_says_even_when_emptied(
    cues: list[list[str]], queries: list[list[str]]
) -> None:
    """The memo of which strings are their own keys (``text._OWN_KEYS``, shared by every
    lexicon) holds exactly ``_key_of(cue) == cue``, and matching is the reference's whether
    the memo is full, empty, or emptied again and again as it fills (a room of two)."""
    lex, reference = CueLexicon(), _EveryKeyLexicon()
    for cue_words in cues:
        for each in (lex, reference):
            each.add(" ".join(cue_words))
    for room in (text_module._OWN_KEYS_MAX, 2):
        saved = text_module._OWN_KEYS_MAX
        text_module._OWN_KEYS_MAX = room
        try:
            for query_words in queries:
                query = " ".join(query_words)
                assert lex.match(query) == reference.match(query)
        finally:
            text_module._OWN_KEYS_MAX = saved
        assert len(text_module._OWN_KEYS) <= saved
        for cue, own in list(text_module._OWN_KEYS.items()):
            assert own == (lex._key_of(cue) == cue)


def test_lexicon_one_unit_keys_are_bare_strings_and_removal_empties_it() -> None:
    lex = CueLexicon()
    for cue in ("orders", "order", "order table", "超"):
        lex.add(cue)
    # stems; "order" and "超" are their own keys: held by the reference counts, not the dict
    assert lex._keys == {"order": "orders", ("order", "tabl"): "order table"}
    assert lex.unit_cues("order") == ("order", "orders") and lex.unit_cues("超") == ("超",)
    assert lex.match("the order table") == ["order table", "order", "orders"]
    lex.discard("order table")
    assert lex.match("the order table") == ["order", "orders"] and lex._lengths == (1,)
    for cue in ("orders", "order", "超"):
        lex.discard(cue)
    assert not lex._keys and lex._lengths == () and lex.match("order 超") == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ice cream cone", ["icecream", "creamcone"]),
        ("Data Base", ["database"]),  # normalized first
        ("is there a way to log in", []),  # a stop word on either side: never joined
        ("ice, cream", []),  # only words one space apart
        ("a web site? or not", ["website"]),  # the second word may end a clause
        ("e mail", []),  # a lone letter is no word here
        ("web2 site", []),  # letters only: identifiers stay whole
        ("订单 web site 超时", ["website"]),  # CJK around a Latin pair
        ("", []),
    ],
)
def test_joined_pairs(text: str, expected: list[str]) -> None:
    assert joined_pairs(text) == expected
