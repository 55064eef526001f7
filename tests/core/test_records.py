"""Memory records: validation names the field and value, and a failed add leaves the store as it was."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta, timezone
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuemap_integrations import (
    CueMap,
    DuplicateIdError,
    MemoryRecord,
    MemoryType,
    NotFoundError,
    ValidationError,
)
from cuemap_integrations.records import (
    coerce_timestamp,
    validate_content,
    validate_memory_id,
    validate_namespace,
)
from cuemap_integrations.text import _C as _textc
from cuemap_integrations.text import derive_cues
from cuemap_integrations.textkeys import TextMemo
from cuemap_integrations.validation import normalized_list

T = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def snapshot(cm: CueMap) -> list[dict[str, object]]:
    return [r.to_dict() for r in cm.memories()]


@pytest.mark.parametrize(
    ("options", "field", "shown"),
    [
        ({"content": ""}, "content", "''"),
        ({"content": "   "}, "content", "'   '"),
        ({"content": 42}, "content", "42"),
        ({"content": "ok", "cues": ["fine", 7]}, "cues", "7"),
        ({"content": "ok", "cues": "single"}, "cues", "'single'"),
        ({"content": "ok", "type": "opinion"}, "type", "'opinion'"),
        ({"content": "ok", "created_at": datetime(2026, 1, 1)}, "created_at", "datetime"),
        ({"content": "ok", "created_at": "yesterday"}, "created_at", "'yesterday'"),
        ({"content": "ok", "expires_at": "2026-13-01T00:00:00+00:00"}, "expires_at", "2026-13-01"),
        ({"content": "ok", "metadata": {"x": float("nan")}}, "metadata.x", "nan"),
        ({"content": "ok", "metadata": {"x": object()}}, "metadata.x", "object"),
        ({"content": "ok", "namespace": ""}, "namespace", "''"),
        ({"content": "ok", "colour": "red"}, "add option", "'colour'"),
    ],
)
def test_bad_fields_raise_naming_field_and_value(cm: CueMap, options, field, shown) -> None:
    cm.add("An existing memory", memory_id="keep")
    before = snapshot(cm)
    options = dict(options)  # the parameter is shared by both backends: never mutate it
    content = options.pop("content")
    with pytest.raises(ValidationError) as info:
        cm.add(content, **options)
    assert info.value.field == field
    assert shown in str(info.value)
    assert str(info.value).startswith(f"invalid {field}=")
    assert snapshot(cm) == before


def test_duplicate_id_is_refused_and_nothing_changes(cm: CueMap) -> None:
    cm.add("first", memory_id="a")
    before = snapshot(cm)
    with pytest.raises(DuplicateIdError) as info:
        cm.add("second", memory_id="a")
    assert "memory_id='a'" in str(info.value)
    assert snapshot(cm) == before
    # the same id in another namespace is fine: ids are unique per namespace
    cm.add("second", memory_id="a", namespace="other")
    assert cm.get("a", namespace="other").content == "second"


def test_add_many_is_all_or_nothing(cm: CueMap) -> None:
    cm.add("kept", memory_id="k")
    with pytest.raises(ValidationError) as info:
        cm.add_many([{"content": "fine one"}, {"content": "bad", "type": "nope"}])
    assert info.value.field == "type"
    with pytest.raises(DuplicateIdError):
        cm.add_many([{"content": "x", "memory_id": "d"}, {"content": "y", "memory_id": "d"}])
    assert [r.memory_id for r in cm.memories()] == ["k"]
    assert len(cm.recall("fine one")) == 0


def test_generated_ids_are_stable_and_unique(clock) -> None:
    def ids(dedupe: bool) -> list[str]:
        with CueMap(clock=clock, config={"dedupe": dedupe}) as store:
            return [store.add(text).memory_id for text in ("alpha", "beta", "alpha")]

    first = ids(dedupe=False)
    assert first == ids(dedupe=False)  # same operations, same ids
    assert len(set(first)) == 3 and first[2].startswith(first[0] + "-")
    deduped = ids(dedupe=True)
    assert deduped[0] == deduped[2] != deduped[1]  # the repeat returns the stored memory


def test_record_defaults_and_round_trip(cm: CueMap, clock) -> None:
    rec = cm.add(
        "The API uses port 8001",
        type="convention",
        tags=["API", "Infra"],
        source="chat",
        metadata={"speaker": "ana", "nested": {"n": [1, 2.5, None]}},
    )
    assert rec.type is MemoryType.CONVENTION
    assert rec.namespace == "default"
    assert rec.created_at == rec.updated_at == clock.now
    assert rec.tags == ("api", "infra")
    assert rec.cue_origin == "derived" and "8001" in rec.cues
    assert MemoryRecord.from_dict(rec.to_dict()) == rec


def test_caller_metadata_is_copied_not_shared(cm: CueMap) -> None:
    meta = {"a": [1]}
    rec = cm.add("copy check", metadata=meta)
    meta["a"].append(2)
    assert cm.get(rec.memory_id).metadata == {"a": [1]}


def test_timestamps_become_utc_and_offsets_are_kept_exact(cm: CueMap) -> None:
    rec = cm.add("tz", created_at="2026-01-02T08:00:00+08:00")
    assert rec.created_at == datetime(2026, 1, 2, 0, 0, tzinfo=timezone.utc)
    assert rec.created_at.tzinfo == timezone.utc


def test_get_update_delete_and_not_found(cm: CueMap, clock) -> None:
    rec = cm.add("The staging API uses port 8002", memory_id="p")
    clock.advance(days=1)
    new = cm.update("p", content="The staging API uses port 9000")
    assert new.updated_at > rec.updated_at and new.created_at == rec.created_at
    assert "9000" in new.cues and "8002" not in new.cues  # derived cues follow the content
    assert cm.recall("port 9000").memory_ids == ["p"]
    assert cm.recall("8002").memory_ids == []
    with pytest.raises(ValidationError):
        cm.update("p", colour="red")
    with pytest.raises(ValidationError):
        cm.update("p", type="opinion")
    assert cm.get("p").evolve(access_count=0, last_accessed=None) == new
    assert cm.delete("p").memory_id == "p"
    with pytest.raises(NotFoundError) as info:
        cm.get("p")
    assert "memory_id='p'" in str(info.value)
    with pytest.raises(KeyError):
        cm.delete("p")


@pytest.mark.parametrize("call", ["get", "update", "delete"])
@pytest.mark.parametrize(
    ("given", "field"),
    [({"memory_id": ["p"]}, "memory_id"), ({"memory_id": "p", "namespace": 7}, "namespace")],
)
def test_lookups_refuse_a_non_string_id_or_namespace(cm: CueMap, call, given, field) -> None:
    cm.add("The staging API uses port 8002", memory_id="p")
    args = dict(given)
    memory_id = args.pop("memory_id")
    extra = {"content": "x"} if call == "update" else {}
    with pytest.raises(ValidationError) as info:
        getattr(cm, call)(memory_id, **args, **extra)
    assert info.value.field == field
    assert cm.get("p").content == "The staging API uses port 8002"  # nothing changed


def test_given_cues_survive_a_content_update(cm: CueMap) -> None:
    cm.add("Deploys go out on Tuesdays", memory_id="d", cues=["Release Day"])
    new = cm.update("d", content="Deploys go out on Thursdays")
    assert new.cues == ("release day",) and new.cue_origin == "given"


# ------------------------------------------------------------- add's record, as written plainly
_ODD = st.one_of(
    st.none(), st.text(max_size=6), st.integers(-1, 2), st.just(T), st.just(datetime(2026, 1, 2)),
    st.sampled_from(["", " ", "a\x00b", "\ud800", "x" * 300, " Fact ", "2026-01-02T03:04:05Z"]),
    st.lists(st.text(max_size=4), max_size=3), st.just({"k": [1, 2.5, "v"]}),
    st.just({1: "bad"}), st.just(float("nan")), st.just(MemoryType.FACT), st.just(()),
)  # fmt: skip
_GOOD = {
    "content": ["The API uses port 8001", "Caroline went to the LGBTQ support group", "x" * 90],
    "memory_id": ["m", "id-2"], "cues": [["Port", "api"], ("8001",), [], None],
    "tags": [["Ops", "ops"], (), None], "type": ["fact", MemoryType.EVENT, "event", " Note "],
    "source": ["chat", None], "namespace": ["default", "team-a"],
    "created_at": [T, "2026-01-02T03:04:05+02:00", None],
    "updated_at": [T, "2026-01-02T03:04:05Z"], "expires_at": [None, T],
    "supersedes": [None, "old-1"], "key": [None, "user.name"],
    "metadata": [{}, {"i": 1, "s": ["a", 2.5]}, None, {"i": 3}],
}  # fmt: skip
_ITEMS = st.tuples(
    st.fixed_dictionaries(
        {"content": st.sampled_from(_GOOD["content"])},
        optional={name: st.sampled_from(ok) for name, ok in _GOOD.items() if name != "content"},
    ),
    st.one_of(st.none(), st.tuples(st.sampled_from([*_GOOD, "colour"]), _ODD)),  # one odd field
    st.booleans(),  # a mapping that is not a dict
).map(lambda drawn: (dict(drawn[0], **dict([drawn[1]] if drawn[1] else [])), drawn[2]))


def _plain_record(cm: CueMap, item: dict[str, Any], now: datetime) -> MemoryRecord:
    """The record ``add`` makes of ``item``, written plainly: the constructor checks every
    field (the code before ``CueMap._build`` skipped what it had checked itself)."""
    options = dict(item)
    content = options.pop("content")
    allowed = {"memory_id", "key", "cues", "tags", "type", "source", "namespace", "created_at",
               "updated_at", "expires_at", "supersedes", "metadata"}  # fmt: skip
    if not allowed.issuperset(options):
        raise ValidationError("add option", sorted(set(options) - allowed)[0], "an option")
    if isinstance(content, str) and len(content) > cm.config.max_content_chars:
        raise ValidationError("content", content[:40], "shorter")
    content = validate_content(content)
    namespace = validate_namespace(options.get("namespace", "default"))
    cues = normalized_list(options.get("cues"), "cues")
    origin = "given" if cues else "derived"
    cues = cues or tuple(derive_cues(content))
    memory_id = options.get("memory_id")
    if memory_id is None:
        digest = hashlib.sha256(f"{namespace}\x00{content}".encode()).hexdigest()
        memory_id = "m-" + digest[:12]
    created = coerce_timestamp(options.get("created_at") or now, "created_at")
    kind = MemoryType.coerce(options.get("type", MemoryType.NOTE))
    tags = normalized_list(options.get("tags"), "tags")
    days = cm.config.ttl_days.get(kind.value)
    expiry = None if days is None else created + timedelta(days=days)
    return MemoryRecord(
        memory_id=memory_id, content=content, cues=cues, tags=tags, type=kind,
        source=options.get("source"), namespace=namespace, created_at=created,
        updated_at=options.get("updated_at") or created,
        expires_at=options.get("expires_at") or expiry, supersedes=options.get("supersedes"),
        key=options.get("key"), metadata=options.get("metadata") or {}, cue_origin=origin,
    )  # fmt: skip


def _outcome(build: Callable[[], MemoryRecord]) -> list[tuple[str, object]] | tuple[str, object]:
    """The record's fields in order, or the field and value of the error raised."""
    try:
        return list(vars(build()).items())
    except ValidationError as error:
        return (error.field, error.value)


@settings(max_examples=1500, deadline=None)
@given(_ITEMS)
def test_a_built_record_is_the_one_the_plain_add_makes(drawn: tuple[dict[str, Any], bool]) -> None:
    """CueMap._build (the record of an add_many item, its checks in one pass over a laid-out
    dict) gives the record, or the error, of the plain construction."""
    item, proxy = drawn
    config = {"ttl_days": {"event": 30}, "max_content_chars": 60}
    with CueMap(config=config, clock=lambda: T) as cm:
        given: Mapping[str, Any] = MappingProxyType(item) if proxy else item
        got = _outcome(lambda: cm._build(given, set(), T, TextMemo(cm.aliases)))
        expected = _outcome(lambda: _plain_record(cm, item, T))
    assert got == expected or repr(got) == repr(expected)  # NaN: equal only by repr


def _plain_id_outcome(value: object) -> object:
    """validate_memory_id's answer by its rules, written plainly: a string, not blank, at most
    256 characters, no control character, valid Unicode; the value itself, or the error."""
    if not isinstance(value, str) or not value.strip():
        return ("memory_id", value)
    if len(value) > 256 or any(c < "\x20" or c == "\x7f" for c in value):
        return ("memory_id", value)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return ("memory_id", value[:40])
    return value


@settings(max_examples=1500, deadline=None)
@given(
    st.one_of(
        st.text(st.sampled_from("ab -_.\t\n\x00\x7f\x1fé\ud800 "), max_size=8),
        st.sampled_from(["", " ", "  ", "x" * 256, "x" * 257, " x ", "m-1", "\u3000"]),
        st.integers(),
        st.none(),
    )
)
def test_a_memory_id_is_checked_as_its_rules_say(value: object) -> None:
    """The printable-ASCII shortcut of validate_memory_id gives the answer of its rules."""
    try:
        got: object = validate_memory_id(value)
        assert got is value
    except ValidationError as error:
        got = (error.field, error.value)
    assert got == _plain_id_outcome(value)


@pytest.mark.skipif(_textc is None, reason="the text extension is not built")
@settings(max_examples=1500, deadline=None)
@given(_ITEMS, st.booleans())
def test_the_compiled_build_of_an_item_is_build_s(
    drawn: tuple[dict[str, Any], bool], expiring: bool
) -> None:
    """_textc.new_record (add_many's usual item) gives None, or the record CueMap._build
    makes of the item: its fields in order, each of the same type and value."""
    item, _ = drawn
    config = {"ttl_days": {"event": 30} if expiring else {}, "max_content_chars": 60}
    with CueMap(config=config, clock=lambda: T) as cm:
        record = _textc.new_record(item, cm._layout(T, TextMemo(cm.aliases)))
        if record is None:
            return
        expected = cm._build(item, set(), T, TextMemo(cm.aliases))
    got, want = list(vars(record).items()), list(vars(expected).items())
    assert got == want
    assert [type(value) for _, value in got] == [type(value) for _, value in want]


@pytest.mark.skipif(_textc is None, reason="the text extension is not built")
def test_the_compiled_build_takes_the_usual_item_and_leaves_the_rest() -> None:
    with CueMap(clock=lambda: T) as cm:
        layout = cm._layout(T, TextMemo(cm.aliases))
        usual = {"content": "The API uses port 8001", "memory_id": "m1", "created_at": T,
                 "type": "event", "source": "chat", "metadata": {"i": 1, "s": "x"}}  # fmt: skip
        record = _textc.new_record(usual, layout)
        assert record == cm._build(usual, set(), T, TextMemo(cm.aliases))
        # keys equal to the option names but other strings (read by name, not in one pass)
        copied = {"".join(list(key)): value for key, value in usual.items()}
        assert all(a is not b for a, b in zip(copied, usual, strict=True))
        assert _textc.new_record(copied, layout) == record
        assert _textc.new_record({**copied, "".join(["colo", "ur"]): 1}, layout) is None
        assert _textc.new_record({**usual, "memory_id": None}, layout) is None  # None: absent
        assert record.metadata is not usual["metadata"]  # a copy, as json_safe_copy's
        for odd in ({"memory_id": None}, {"memory_id": " "}, {"content": "Straße"},
                    {"content": " \x1c"}, {"cues": ["port"]}, {"tags": ["ops"]},
                    {"namespace": None}, {"type": None}, {"type": " Note "},
                    {"created_at": "2026-01-02T03:04:05Z"}, {"metadata": {"k": [1]}},
                    {"metadata": {"k": 2.5}}, {"colour": "red"}, {"key": "x" * 257}):  # fmt: skip
            assert _textc.new_record({**usual, **odd}, layout) is None, odd
        with pytest.raises(TypeError):
            _textc.new_record(usual, layout[:-1])
        with pytest.raises(TypeError):  # a template without every field
            _textc.new_record(usual, (*layout[:-1], {"content": None}))
