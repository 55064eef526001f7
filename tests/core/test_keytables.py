"""The compact id and content lookups behave exactly like the plain dicts they replace."""

from __future__ import annotations

from array import array
from collections.abc import Hashable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cuemap_integrations import keytables
from cuemap_integrations.keytables import SeqOf, SeqsByDigest


class SeqsByKey:
    """``key -> the seqs holding it``, in insertion order; a single seq is kept as an int: the
    dict-backed table the store used before :class:`SeqsByDigest`, kept as its reference."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held: dict[Hashable, int | tuple[int, ...]] = {}

    def add(self, key: Hashable, seq: int) -> None:
        """Add ``seq`` after the seqs already holding ``key``."""
        held = self._held.get(key)
        self._held[key] = seq if held is None else (*self.seqs(key), seq)

    def discard(self, key: Hashable, seq: int) -> None:
        """Remove ``seq`` from ``key``'s seqs (the key goes when none is left)."""
        rest = tuple(other for other in self.seqs(key) if other != seq)
        if not rest:
            self._held.pop(key, None)
        else:
            self._held[key] = rest[0] if len(rest) == 1 else rest

    def seqs(self, key: Hashable) -> tuple[int, ...]:
        """The seqs holding ``key``, oldest first (none if unknown)."""
        held = self._held.get(key)
        if held is None:
            return ()
        return (held,) if isinstance(held, int) else held

    def first(self, key: Hashable) -> int | None:
        """The oldest seq holding ``key``, or None."""
        held = self._held.get(key)
        return held if held is None or isinstance(held, int) else held[0]

    def __len__(self) -> int:
        return len(self._held)


_keys = st.tuples(st.sampled_from(["default", "bob", "x"]), st.sampled_from(["a", "b", "c", "d"]))
_ops = st.lists(st.tuples(st.booleans(), _keys, st.integers(0, 9)), max_size=40)


@settings(max_examples=200, deadline=None)
@given(_ops)
def test_seq_of_matches_a_dict_keyed_by_pairs(ops: list[tuple[bool, tuple[str, str], int]]) -> None:
    model: dict[tuple[str, str], int] = {}
    table = SeqOf()
    for put, key, seq in ops:
        if put:
            model[key] = table[key] = seq
        elif key in model:
            del model[key], table[key]
        else:
            assert key not in table and table.get(key) is None and table.get(key, -1) == -1
    assert dict(table) == model and len(table) == len(model) and set(table) == set(model)
    assert all(table.get(key) == seq and key in table for key, seq in model.items())
    assert ("default",) not in table and "default" not in table


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["put", "put", "del", "get"]),
            st.sampled_from(["default", "bob"]),
            st.integers(0, 80),  # memory ids m0..m80
            st.integers(0, 100),  # seqs: mostly one key's own, some given twice
        ),
        max_size=300,
    )
)
def test_seq_of_matches_a_dict_across_growth_and_removals(
    ops: list[tuple[str, str, int, int]],
) -> None:
    """Many keys: the tables grow (rehash) and keep removed slots, keys share seqs (the small
    dict); every read agrees with a dict after each step."""
    model: dict[tuple[str, str], int] = {}
    table = SeqOf()
    for op, namespace, number, seq in ops:
        key = (namespace, f"m{number}")
        if op == "put":
            model[key] = table[key] = seq
        elif op == "del" and key in model:
            del model[key], table[key]
        assert table.get(key) == model.get(key) and (key in table) == (key in model)
        assert len(table) == len(model)
    assert sorted(table) == sorted(model) and dict(table) == model


def test_seq_of_raises_key_error_naming_the_pair() -> None:
    table = SeqOf()
    table[("default", "a")] = 1
    for missing in (("default", "b"), ("bob", "a")):
        try:
            table[missing]
        except KeyError as exc:
            assert exc.args == (missing,)
        else:
            raise AssertionError("no KeyError")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.sampled_from([b"p", b"q"]), st.integers(0, 5))))
def test_seqs_by_key_keeps_insertion_order_like_tuples_in_a_dict(
    ops: list[tuple[bool, bytes, int]],
) -> None:
    model: dict[bytes, tuple[int, ...]] = {}
    table = SeqsByKey()
    for add, key, seq in ops:
        if add:
            model[key] = (*model.get(key, ()), seq)
            table.add(key, seq)
        elif key in model:
            model[key] = tuple(s for s in model[key] if s != seq)
            if not model[key]:
                del model[key]
            table.discard(key, seq)
    assert len(table) == len(model)
    for key in (b"p", b"q"):
        assert table.seqs(key) == model.get(key, ())
        assert table.first(key) == (model[key][0] if key in model else None)


# digests whose first 8 bytes (the table's hash) are equal or differ in one low bit: collisions
DIGESTS = [bytes(8) + bytes([n]) * 8 for n in range(3)] + [bytes([1]) + bytes(7) + b"x" * 8]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 3), st.integers(0, 40)), max_size=80))
def test_seqs_by_digest_finds_what_seqs_by_key_finds(ops: list[tuple[bool, int, int]]) -> None:
    """Each seq holds one digest at a time, as a memory holds one content key."""
    model, table, held = SeqsByKey(), SeqsByDigest(), dict[int, bytes]()
    for add, which, seq in ops:
        if add and seq not in held:
            held[seq] = DIGESTS[which]
            model.add(held[seq], seq)
            table.add(held[seq], seq)
        elif not add and seq in held:
            model.discard(held[seq], seq)
            table.discard(held.pop(seq), seq)
    assert len(table) == len(set(held.values()))
    for digest in [*DIGESTS, b"y" * 16]:
        assert table.seqs(digest) == model.seqs(digest)
        assert table.first(digest) == model.first(digest)


def test_seqs_by_digest_widens_its_table_for_a_seq_it_cannot_hold() -> None:
    table = SeqsByDigest()
    table.add(DIGESTS[0], 5)
    table._slots = array("b", table._slots)  # as an "i" table is for a seq past 2**31 - 1
    table.add(DIGESTS[1], 300)
    assert table._slots.typecode == "q"
    assert (table.first(DIGESTS[0]), table.first(DIGESTS[1])) == (5, 300)


# the compiled probes (_textc.id_slot, _textc.digest_slot) against their Python references
ID_EDITS = st.lists(
    st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 40), st.integers(0, 60), st.booleans()),
    max_size=60,
)


@pytest.mark.skipif(keytables._textc is None, reason="the text extension is not built")
@settings(max_examples=200, deadline=None)
@given(ID_EDITS, st.lists(st.integers(0, 45), max_size=20), st.booleans())
def test_the_compiled_id_probe_finds_the_slots_of_the_reference(
    edits: list[tuple[str, int, int, bool]], asked: list[int], wide: bool
) -> None:
    """Tables with deleted slots, collisions and rehashes; "q" slots too (a seq past 2**31)."""
    ids = SeqOf()
    for namespace, number, seq, remove in edits:
        key = (namespace, f"m{number}")
        if remove:
            ids.pop(key, None)
        elif key not in ids:
            ids[key] = seq
    for table in ids._tables.values():
        slots = array("q", table.slots) if wide else table.slots
        for number in asked:
            memory_id = f"m{number}"
            expected = keytables._id_slot(slots, ids._ids, memory_id)
            assert keytables._textc.id_slot(slots, ids._ids, memory_id) == expected


@pytest.mark.skipif(keytables._textc is None, reason="the text extension is not built")
@settings(max_examples=200, deadline=None)
@example([(n, n, False) for n in range(70)], [(n, 16) for n in range(0, 80, 3)], False)  # 256
@given(
    st.lists(st.tuples(st.integers(0, 80), st.integers(0, 90), st.booleans()), max_size=100),
    st.lists(st.tuples(st.integers(0, 80), st.sampled_from([16, 8, 5, 0])), max_size=20),
    st.booleans(),
)
def test_the_compiled_digest_probe_finds_the_slots_of_the_reference(
    edits: list[tuple[int, int, bool]], asked: list[tuple[int, int]], wide: bool
) -> None:
    """Digests that share their first bytes (probes collide), enough for tables of 256 slots;
    asked ones of other lengths (a prefix of a held one among them)."""

    def digest(number: int) -> bytes:
        return bytes([number * 37 % 256 if number % 4 else 0, number % 7, *[0] * 6, *[number] * 8])

    table = SeqsByDigest()
    for number, seq, remove in edits:
        if remove:
            table.discard(digest(number), seq)
        elif table.first(digest(number)) is None:
            table.add(digest(number), seq)
    slots = array("q", table._slots) if wide else table._slots
    for number, length in asked:
        key = digest(number)[:length]
        expected = keytables._digest_slot(slots, table._digests, key)
        assert keytables._textc.digest_slot(slots, table._digests, key) == expected


@pytest.mark.skipif(keytables._textc is None, reason="the text extension is not built")
@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 8),
    st.lists(
        st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(0, 2**64 - 1), st.integers(-3, 3)),
        max_size=256,
    ),
    st.booleans(),
)
def test_the_compiled_rehash_places_seqs_where_the_reference_does(
    log_size: int, hashes: list[int], wide: bool
) -> None:
    """Colliding and wrapping probes, negative hashes and hashes past 2**63 (SeqsByDigest's
    first words), "i" and "q" slots, a table filled to its last slot."""
    size = 2**log_size
    hashes = hashes[:size]
    seqs = [(2**40 if wide else 2**31 - 1) - n for n in range(len(hashes))]
    expected = keytables._empty_slots("q" if wide else "i", size)
    placed = keytables._empty_slots("q" if wide else "i", size)
    keytables._place(expected, seqs, hashes)
    keytables._textc.place(placed, seqs, hashes)
    assert placed == expected


def test_the_compiled_rehash_refuses_what_the_reference_cannot_place() -> None:
    if keytables._textc is None:
        pytest.skip("the text extension is not built")
    with pytest.raises(ValueError, match="no empty slot"):
        keytables._textc.place(keytables._empty_slots("i", 2), [1, 2, 3], [0, 0, 0])
    with pytest.raises(ValueError, match="power of two"):
        keytables._textc.place(array("i", [-1] * 3), [1], [0])
    with pytest.raises(OverflowError):
        keytables._textc.place(keytables._empty_slots("i", 4), [2**31], [0])


def _state(table: SeqOf | SeqsByDigest) -> object:
    """Every slot and count of a table (what its compiled and Python steps must agree on)."""
    if isinstance(table, SeqOf):
        slots = {ns: (t.slots.typecode, t.slots.tolist(), t.held, t.used)
                 for ns, t in table._tables.items()}  # fmt: skip
        return slots, list(table._ids), dict(table._others), table._count
    return (table._slots.typecode, table._slots.tolist(), bytes(table._digests), table._held,
            table._used, dict(table._many))  # fmt: skip


# batches of (namespace or digest number, id, seq): new keys, keys held, seqs shared,
# deletions between batches
_BATCHES = st.lists(
    st.tuples(
        st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 60),
                           st.integers(0, 200)), max_size=40),
        st.lists(st.integers(0, 200), max_size=5),
    ),
    max_size=6,
)  # fmt: skip


def _digest(n: int) -> bytes:
    """Digest number ``n``: seven probe starts among 61 digests (collisions to probe past)."""
    return (n % 7).to_bytes(8, "little") + n.to_bytes(8, "little")


@pytest.mark.skipif(keytables._textc is None, reason="the text extension is not built")
@settings(max_examples=300, deadline=None)
@given(_BATCHES)
def test_the_compiled_runs_of_set_many_and_add_many_leave_the_python_steps_tables(
    batches: list[tuple[list[tuple[str, int, int]], list[int]]],
) -> None:
    """SeqOf.set_many and SeqsByDigest.add_many with runs placed by _textc.ids_place and
    _textc.digests_place against the same calls one Python step per key."""
    compiled, reference = (SeqOf(), SeqsByDigest()), (SeqOf(), SeqsByDigest())
    holding: set[int] = set()  # the seqs holding a digest (each holds one at a time)
    for batch, dropped in batches:
        added = {s: n for _, n, s in batch if s not in holding}
        holding.update(added)
        holding.difference_update(dropped)
        for tables, place in ((compiled, True), (reference, False)):
            ids, digests = tables
            saved = keytables._IDS_PLACE, keytables._DIGESTS_PLACE
            if not place:
                keytables._IDS_PLACE = keytables._DIGESTS_PLACE = None
            try:
                for namespace in ("a", "b"):
                    run = [(f"m{n}", seq) for ns, n, seq in batch if ns == namespace]
                    ids.set_many(namespace, [i for i, _ in run], [s for _, s in run])
                digests.add_many([_digest(n) for n in added.values()], list(added))
            finally:
                keytables._IDS_PLACE, keytables._DIGESTS_PLACE = saved
            for seq in dropped:
                for pair in [p for p in ids if ids.get(p) == seq]:
                    del ids[pair]
                for n in range(61):
                    digests.discard(_digest(n), seq)
        assert _state(compiled[0]) == _state(reference[0])
        assert _state(compiled[1]) == _state(reference[1])


@pytest.mark.skipif(keytables._textc is None, reason="the text extension is not built")
def test_the_compiled_runs_stop_where_the_python_step_must_take_over() -> None:
    table = SeqsByDigest()
    table.add_many([DIGESTS[0]], [1])
    table._digests.extend(bytes(64))
    place = keytables._textc.digests_place
    pairs = [DIGESTS[1], DIGESTS[0], b"short", DIGESTS[2]], [2, 3, 4, 5]
    assert place(table._slots, table._digests, *pairs, 0, 10) == 1  # DIGESTS[0] is held
    assert place(table._slots, table._digests, *pairs, 2, 10) == 2  # not 16 bytes
    assert place(table._slots, table._digests, *pairs, 3, 0) == 3  # no room
    assert place(table._slots, table._digests, [DIGESTS[3]], [10**6], 0, 10) == 0  # past held
    narrow = array("b", table._slots)  # as an "i" table is for a seq past 2**31 - 1
    assert place(narrow, table._digests, [DIGESTS[3]], [200], 0, 10) == 0  # to widen
    ids = SeqOf()
    ids.set_many("a", ["x", "y"], [0, 1])
    table_a = ids._tables["a"]
    id_place = keytables._textc.ids_place
    assert id_place(table_a.slots, ids._ids + [None], ["x", "z"], [2, 2], 0, 10) == 0  # held
    assert id_place(table_a.slots, ids._ids, ["z"], [1], 0, 10) == 0  # seq 1 is y's
    assert id_place(array("b", table_a.slots), [None] * 300, ["z"], [200], 0, 10) == 0
    with pytest.raises(ValueError, match="16-byte"):
        table.add_many([b"short"], [9])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.booleans(), st.sampled_from(["default", "bob"]), st.integers(0, 40),
                  st.integers(0, 60)),
        max_size=120,
    ),
    st.lists(st.tuples(st.sampled_from(["default", "bob", "x"]), st.integers(0, 45)), max_size=30),
)  # fmt: skip
def test_get_many_gets_each_key(
    ops: list[tuple[bool, str, int, int]], asked: list[tuple[str, int]]
) -> None:
    """Across growth, removals and keys sharing a seq (the small dict), get_many answers what
    get answers, key by key."""
    table = SeqOf()
    for put, namespace, number, seq in ops:
        key = (namespace, f"m{number}")
        if put:
            table[key] = seq
        elif key in table:
            del table[key]
    keys = [(namespace, f"m{number}") for namespace, number in asked]
    assert table.get_many(keys) == [table.get(key) for key in keys]
