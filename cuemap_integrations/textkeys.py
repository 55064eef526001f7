"""What ingest derives from a memory's content alone, computed once per batch.

A batch passes each content through several steps that all need its normalized text: cue
derivation and validation (:meth:`CueMap._prepare`), duplicate planning (:func:`plan_writes`),
then indexing (:meth:`CueMap._index`). The text module's caches are deliberately small (a few
recent texts), so by the time a 10,000-memory batch reaches planning and indexing they no longer
hold its first texts: each would be normalized and tokenized again. A :class:`TextMemo` keeps,
for the length of one batch, each content's normalized text and index terms, and each record's
duplicate key (which planning and indexing both ask for). Everything in it is a pure function
of the content and namespace (and of the store's alias table, which a batch cannot change: it
holds the store's lock), so using it cannot change a result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import NamedTuple

from . import text as _text
from .aliases import AliasTable
from .lifecycle import ContentKey, content_digest, content_digests
from .records import MemoryRecord
from .text import derive_cues_and_keys, normalize, stems_and_terms

__all__ = ["TextKeys", "TextMemo", "index_cues", "text_keys"]


class TextKeys(NamedTuple):
    """The index keys that depend on a memory's content alone."""

    normalized: str  # normalize(content)
    aliases: list[str]  # the alias terms found in it
    terms: list[str]  # content_terms(content): its BM25 terms, in text order


def text_keys(content: str, aliases: AliasTable) -> TextKeys:
    """The :class:`TextKeys` of ``content`` with the store's ``aliases``."""
    text = normalize(content)
    stems, terms = stems_and_terms(text)
    return TextKeys(text, aliases.find_in(text, stems), terms)


def index_cues(record: MemoryRecord, keys: TextKeys, aliases: AliasTable) -> list[str]:
    """The cues to index ``record`` under: its cues and the alias terms of its content
    (``keys``), each with its equivalent terms, without duplicates."""
    return aliases.expand([*record.cues, *keys.aliases])


class TextMemo:
    """:func:`text_keys` by content for one batch (dropped with the batch).

    Example:
        >>> memo = TextMemo(AliasTable([("db", "database")]))
        >>> memo.keys("The DB is down").aliases, memo.normalized("The DB is down")
        (['db'], 'the db is down')
    """

    def __init__(self, aliases: AliasTable) -> None:
        self._aliases = aliases
        self._keys: dict[str, TextKeys] = {}
        self._content_keys: dict[tuple[str, str], ContentKey] = {}
        self._derived: dict[str, tuple[str, ...]] = {}  # content -> the cues derived here
        self._vocab = aliases.stems_read()  # the table cannot change during the batch
        self._terms = aliases.terms()  # likewise

    def keys(self, content: str) -> TextKeys:
        """The text keys of ``content``, computed on first use."""
        keys = self._keys.get(content)
        if keys is None:
            keys = self._keys[content] = text_keys(content, self._aliases)
        return keys

    def keys_of(self, contents: Sequence[str]) -> list[TextKeys]:
        """:meth:`keys` of each of ``contents`` (a bulk batch's: found in one C-level pass)."""
        found = list(map(self._keys.get, contents))
        if None in found:
            found = [self.keys(content) if keys is None else keys
                     for keys, content in zip(found, contents, strict=True)]  # fmt: skip
        return found  # type: ignore[return-value]  # every None replaced

    def derived_cues(self, content: str) -> tuple[str, ...]:
        """``derive_cues(content)`` as a tuple; the text keys of ``content`` come out of the
        same pass (:func:`~cuemap_integrations.text.derive_cues_and_keys`) and are kept for
        :meth:`keys`, the tuple for :meth:`index_cues`."""
        cues, text, stems, terms = derive_cues_and_keys(content, vocab=self._vocab)
        if content not in self._keys:
            # no stem of the table's terms (most texts): find_in finds nothing in ASCII text
            found = self._aliases.find_in(text, stems) if stems or not text.isascii() else []
            self._keys[content] = TextKeys(text, found, terms)
        derived = self._derived[content] = tuple(cues)
        return derived

    def derive(self) -> Callable[[str], tuple[str, ...]]:
        """:meth:`derived_cues`, as ``_textc.memo_derived`` when the text extension is there:
        for plain ASCII content (no digit, "`" or "/": most memories) it derives the cues and
        keeps them and the text keys in this memo's dicts in one C call, and calls
        :meth:`derived_cues` for any other content. The method's Python frames (and
        :func:`derive_cues_and_keys`', and the :class:`TextKeys` call) cost ~15,000
        instructions a bench memory around the ~34,000 of the C derivation. A new object per
        batch (``CueMap._layout``'s): the memo holds no reference to it (no cycle)."""
        compiled = _text._C  # read per call: None (patched) means the Python rules alone
        if compiled is None:
            return self.derived_cues
        sets = (_text.STOP_WORDS, _text._CALENDAR_WORDS, _text._UNIT_SET, _text._WEB_PARTS)
        spec = (self._keys, self._derived, TextKeys, self._aliases.find_in, self.derived_cues,
                _text.CUE_LIMIT, *sets, _text._STEMS, self._vocab)  # fmt: skip
        return partial(compiled.memo_derived, spec)

    def index_cues(self, record: MemoryRecord, keys: TextKeys) -> Sequence[str]:
        """:func:`index_cues` of ``record`` (``keys``: its content's), which is its own cue
        tuple when the cues are the ones derived here (distinct) and neither they nor its
        content hold an alias term: expanding them then changes nothing (97 % of the bench
        memories; the expansion was ~3 % of ``add_many``)."""
        return self.index_cues_of((record,), (keys,))[0]

    def index_cues_of(
        self, records: Sequence[MemoryRecord], keys: Sequence[TextKeys]
    ) -> list[Sequence[str]]:
        """:meth:`index_cues` of each record (``keys``: its content's), without a method
        call per record (nor one of ``AliasTable.holds_any``: the set of the table's terms
        tells, where the dict view's test of a record's twenty cues was ~4,700 instructions);
        for a batch's lists in one C call with the text extension (``_textc.index_cues_of``:
        ~4,500 -> ~3,700 instructions a bench memory, ~1,100 of them the 2.5 % expanded)."""
        compiled = _text._C  # read per call: None (patched) means the Python alone
        if (
            compiled is None
            or type(records) is not list
            or type(keys) is not list
            or len(records) != len(keys)  # (zip's error)
        ):
            return self._py_index_cues_of(records, keys)
        expand = partial(index_cues, aliases=self._aliases)
        return compiled.index_cues_of(  # type: ignore[no-any-return]
            records, keys, self._derived, self._terms, TextKeys, expand
        )

    def _py_index_cues_of(
        self, records: Sequence[MemoryRecord], keys: Sequence[TextKeys]
    ) -> list[Sequence[str]]:
        """:meth:`index_cues_of` in Python: ``_textc.index_cues_of``'s reference."""
        derived, terms = self._derived.get, self._terms
        return [
            record.cues
            if not key.aliases and record.cues is derived(record.content)
            and terms.isdisjoint(record.cues)
            else index_cues(record, key, self._aliases)
            for record, key in zip(records, keys, strict=True)
        ]  # fmt: skip

    def content_keys_of(
        self, records: Sequence[MemoryRecord], keys: Sequence[TextKeys] | None = None
    ) -> list[ContentKey]:
        """:meth:`content_key` of each record (a bulk batch's: those planning asked for found
        in one C-level pass, the others, all of a batch that planning found plainly new,
        digested in one call: :func:`~cuemap_integrations.lifecycle.content_digests`);
        ``keys``: the records' text keys, if the caller has them. When planning asked none
        (a plainly new batch), every record's key is digested at once, without the pairs'
        lookups and their keeping (their tuples hashed three times: ~2,500 instructions a
        bench memory); a later :meth:`content_key` digests again, to the same key."""
        if not self._content_keys:
            keys = self.keys_of([r.content for r in records]) if keys is None else keys
            return content_digests([r.namespace for r in records], [k.normalized for k in keys])
        pairs = [(r.namespace, r.content) for r in records]
        found = list(map(self._content_keys.get, pairs))
        if None in found:
            missing = [pair for pair, key in zip(pairs, found, strict=True) if key is None]
            texts = [keys.normalized for keys in self.keys_of([content for _, content in missing])]
            made = content_digests([namespace for namespace, _ in missing], texts)
            self._content_keys.update(zip(missing, made, strict=True))
            found = list(map(self._content_keys.__getitem__, pairs))
        return found  # type: ignore[return-value]  # every None replaced

    def normalized(self, content: str) -> str:
        """``normalize(content)``, from the memo."""
        return self.keys(content).normalized

    def content_key(self, record: MemoryRecord) -> ContentKey:
        """:func:`~cuemap_integrations.lifecycle.content_key` of ``record``: planning asks it of
        every new record, then indexing again (a digest of its namespace and normalized content
        each time), so the second ask is a lookup."""
        pair = (record.namespace, record.content)
        key = self._content_keys.get(pair)
        if key is None:
            # self.normalized(content), without its two calls when planning asks (after
            # _prepare: the keys are there)
            keys = self._keys.get(record.content) or self.keys(record.content)
            text = keys.normalized
            key = self._content_keys[pair] = content_digest(record.namespace, text)
        return key
