"""Ingest shortcuts of the fresh-store bulk path, each against what it replaces: the batch memo's
compiled cue derivation (``TextMemo.derive``), the alias probes a text's stems start
(``AliasTable.find_in``) and the scan-then-replace translation of text that is not ASCII
(``text._translated``), and the memo's index cues."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuemap_integrations import redact as redact_module
from cuemap_integrations import text as text_module
from cuemap_integrations.aliases import AliasTable
from cuemap_integrations.config import RecallConfig
from cuemap_integrations.errors import ValidationError
from cuemap_integrations.records import MemoryRecord
from cuemap_integrations.text import normalize
from cuemap_integrations.textkeys import TextKeys, TextMemo, index_cues
from tests.core.ingest_corpus import FRAGMENTS
from tests.core.test_ingest_equivalence import ASCII_TEXT, MIXED_TEXT

_T = datetime(2026, 1, 2, tzinfo=timezone.utc)
needs_textc = pytest.mark.skipif(text_module._C is None, reason="the text extension is not built")

_ALIAS_TEXT = st.lists(
    st.sampled_from(
        ["the db", "timed out", "time out", "database", "back up", "logs", "on call", "pager",
         "Redis", "port 8001", "it's", "2024-05-01", "`make`", "a/b", "超时", "—", "é", "x"]
    ),
    max_size=8,
).map(" ".join)  # fmt: skip
_TABLES = [
    AliasTable(RecallConfig().aliases),
    AliasTable([("on call", "pager"), ("db", "数据库")]),  # a phrase starting with a stop word
    AliasTable(),
]


def _memo_state(memo: TextMemo) -> tuple[object, ...]:
    return dict(memo._keys), dict(memo._derived), {type(k) for k in memo._keys.values()}


@needs_textc
@pytest.mark.parametrize("table", range(len(_TABLES)))
@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(ASCII_TEXT, MIXED_TEXT, _ALIAS_TEXT, st.sampled_from(FRAGMENTS)),
                max_size=4))  # fmt: skip
def test_the_compiled_derivation_keeps_what_derived_cues_keeps(
    table: int, contents: list[str]
) -> None:
    """The same cues, and the same text keys and cue tuples kept in the memo (a content given
    twice keeps its first keys and its last tuple), for every kind of content: the compiled
    path takes plain ASCII, the method the rest."""
    aliases = _TABLES[table]
    compiled, reference = TextMemo(aliases), TextMemo(aliases)
    derive = compiled.derive()
    assert derive is not compiled.derived_cues  # the C call (the extension is built)
    for content in [*contents, *contents[:1]]:
        cues = derive(content)
        assert type(cues) is tuple
        assert cues == reference.derived_cues(content)
        assert compiled._derived[content] is cues  # the very tuple index_cues_of compares
    assert _memo_state(compiled) == _memo_state(reference)
    assert {type(k) for k in compiled._keys.values()} <= {TextKeys}


@needs_textc
def test_the_compiled_derivation_falls_back_for_content_it_does_not_take() -> None:
    memo = TextMemo(_TABLES[0])
    asked: list[str] = []
    derived_cues = memo.derived_cues
    memo.derived_cues = lambda content: asked.append(content) or derived_cues(content)  # type: ignore[method-assign]
    derive = memo.derive()
    for content in ("port 8001 is up", "see `make`", "a/b", "café au lait", "plain words here"):
        derive(content)
    assert asked == ["port 8001 is up", "see `make`", "a/b", "café au lait"]


def test_without_the_extension_the_memo_derives_in_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text_module, "_C", None)
    memo = TextMemo(_TABLES[0])
    assert memo.derive() == memo.derived_cues


@pytest.mark.parametrize("table", range(len(_TABLES)))
@settings(max_examples=300, deadline=None)
@given(st.one_of(MIXED_TEXT, _ALIAS_TEXT))
def test_the_probes_a_text_starts_find_what_every_probe_finds(table: int, text: str) -> None:
    aliases = _TABLES[table]
    normalized = text_module.normalize(text)
    stems = text_module.word_stems(normalized)
    found = aliases.find_in(normalized, stems)
    probes = aliases._probes()
    expected = [
        term for term, key, phrase in probes
        if (key is not None and key in stems)
        or (key is None and phrase is None and not normalized.isascii() and term in normalized)
        or (phrase is not None and aliases._needs[phrase] <= stems
            and f" {phrase} " in " " + " ".join(text_module.query_units(normalized)) + " ")
    ]  # fmt: skip
    assert found == expected


# Text holding what the tables change (punctuation, control and fold letters) among others
_CHANGED = st.text(
    alphabet=st.sampled_from(
        ["a", "B", " ", "\t", "\x00", "\x85", "\x9f", "é", "😀", "超", "—", "–", "“", "”", "…",
         "。", "，", "\u3000", "～", "İ", "ı", "ſ", "K", "k", "\ud800"]
    ),
    max_size=40,
)  # fmt: skip


@settings(max_examples=1000, deadline=None)
@given(st.one_of(_CHANGED, MIXED_TEXT, st.text(max_size=40)))
def test_the_scan_then_replace_translation_is_translate(text: str) -> None:
    for table, changes in (
        (text_module._PUNCT_TABLE, text_module._PUNCT_CHANGES),
        (text_module._NORMALIZE_TABLE, text_module._NORMALIZE_CHANGES),
        (redact_module._FOLD, redact_module._FOLD_CHANGES),
    ):
        assert text_module._translated(text, table, changes) == text.translate(table)
    assert redact_module._folded(text) == text.translate(redact_module._FOLD).lower()


def test_the_replacements_hold_no_character_a_table_changes() -> None:
    """What lets _translated replace one character after another in any order."""
    for table, changes in (
        (text_module._PUNCT_TABLE, text_module._PUNCT_CHANGES),
        (text_module._NORMALIZE_TABLE, text_module._NORMALIZE_CHANGES),
        (redact_module._FOLD, redact_module._FOLD_CHANGES),
    ):
        changed = {chr(cp) for cp, to in table.items() if to != chr(cp)}
        assert set(changes.findall("".join(map(chr, range(0x3100))))) == {
            c for c in changed if ord(c) < 0x3100
        }
        assert not any(changes.search(to) for to in table.values())


@pytest.mark.parametrize("table", range(len(_TABLES)))
@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_ALIAS_TEXT, MIXED_TEXT), min_size=1, max_size=4), st.data())
def test_the_memo_index_cues_are_those_of_index_cues(
    table: int, contents: list[str], data: st.DataObject
) -> None:
    """TextMemo.index_cues_of (the table's term set for holds_any) against index_cues, for
    records whose cues are the ones derived (an alias term among them or not) or given."""
    aliases = _TABLES[table]
    memo = TextMemo(aliases)
    records = []
    for at, content in enumerate(contents):
        content = content.replace("\x00", " ")
        if not normalize(content):
            continue
        cues = memo.derived_cues(content)
        if data.draw(st.booleans()):  # cues given: an alias term, maybe
            cues = tuple(data.draw(st.lists(st.sampled_from(["db", "timeout", "x", "port"]),
                                            min_size=1, max_size=3, unique=True)))  # fmt: skip
            if data.draw(st.booleans()):  # as if derived: only the term set tells
                memo._derived[content] = cues
        try:
            records.append(MemoryRecord(memory_id=f"m{at}", content=content, created_at=_T,
                                        updated_at=_T, cues=cues))  # fmt: skip
        except ValidationError:  # not a valid content (a lone surrogate...)
            continue
    keys = memo.keys_of([record.content for record in records])
    pairs = zip(records, keys, strict=True)
    expected = [index_cues(record, key, aliases) for record, key in pairs]
    assert list(map(list, memo.index_cues_of(records, keys))) == expected
    assert aliases.terms() == {term for group in aliases._groups for term in group}


def _plainly_clean_before(metadata: object) -> bool:
    """redact._plainly_clean as it was: every key screened."""
    if type(metadata) is not dict:
        return False
    for key, value in metadata.items():
        if type(key) is not str or not key.isascii() or redact_module._may_hold_secret(key):
            return False
        kind = type(value)
        if kind is str:
            if not value.isascii() or redact_module._secret_key_class(key) is not None:
                return False
            if redact_module._may_hold_secret(value):
                return False
        elif kind is float:
            if value != value or value in (float("inf"), float("-inf")):
                return False
        elif kind not in (int, bool, type(None)):
            return False
    return True


class _Key(str):
    """A str subclass key, equal to a plain one the cache may hold."""


_META_KEYS = st.sampled_from(["i", "session", "password", "api_key", "<b>", "naïve", "ok_1",
                              _Key("i"), "key: sk-abcdefghijklmnopqrstu"])  # fmt: skip
_META_VALUES = st.one_of(st.integers(), st.none(), st.booleans(), st.floats(),
                         st.sampled_from(["x", "hunter2", "é", "Bearer abcdefghijklmnop1234"]))  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(st.dictionaries(_META_KEYS, _META_VALUES, max_size=3), max_size=4))
def test_plainly_clean_metadata_with_the_clean_keys_kept_is_as_before(
    metadatas: list[dict[str, object]],
) -> None:
    for metadata in metadatas:
        assert redact_module._plainly_clean(metadata) is _plainly_clean_before(metadata)
    assert not any(type(key) is not str for key in redact_module._CLEAN_KEYS)


_NUMBERISH = st.lists(
    st.sampled_from([*"0123456789$€£¥,.-/:@ _aKkm%xé٣", "ms", " GB", "°c"]), max_size=30
).map("".join)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(_NUMBERISH, MIXED_TEXT, st.sampled_from(FRAGMENTS)))
def test_the_number_pattern_tried_where_a_match_can_start_finds_what_its_scan_finds(
    text: str,
) -> None:
    def found(matches: object) -> list[tuple[tuple[int, int], dict[str, str | None]]]:
        return [(m.span(), m.groupdict()) for m in matches]  # type: ignore[attr-defined]

    expected = found(text_module._NUMBER_RE.finditer(text))
    assert found(text_module._number_matches(text)) == expected


@needs_textc
def test_pack_cues_takes_its_five_arguments_as_it_parsed_them() -> None:
    from cuemap_integrations.recordtable import _python_packed_cues

    pack = text_module._C.pack_cues
    for bad in (((), set(), {}, []), ([], set(), {}, [], 5), ((), set(), [], [], 5)):
        with pytest.raises(TypeError):
            pack(*bad)
    with pytest.raises(OverflowError):
        pack(("a",), {"a"}, {}, [], 2**70)
    codes: dict[str, int] = {}
    names: list[str] = []
    expected = _python_packed_cues(("a", "b", "c"), {"a", "b"}, {}, [])
    assert pack(("a", "b", "c"), {"a", "b"}, codes, names, 65535) == expected
    assert (codes, names) == ({"a": 0, "b": 1}, ["a", "b"])


@needs_textc
def test_packed_row_takes_its_seven_arguments_as_it_parsed_them() -> None:
    from cuemap_integrations import recordtable

    record = recordtable.MemoryRecord(memory_id="m", content="c", created_at=_T, updated_at=_T)
    row = text_module._C.packed_row
    fixed = (recordtable._LAYOUT, recordtable._py_packed_row, recordtable._packed)
    for bad in ((record, {}, [], 4096, 1), (record, [], [], 4096), (record, {}, (), 4096),
                (record, {}, [], "4096")):  # fmt: skip
        with pytest.raises(TypeError):
            row(*fixed, *bad)
    assert row(*fixed, record, {}, [], 4096) == recordtable._py_packed_row(record, {}, [], 4096)
