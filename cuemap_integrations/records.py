"""Memory records: the typed, validated unit of storage.

A :class:`MemoryRecord` is immutable. Every constructor path validates its fields and raises
:class:`~cuemap_integrations.errors.ValidationError` naming the field and the value, so an invalid
record can never reach a store.

Example:
    >>> from datetime import datetime, timezone
    >>> t = datetime(2026, 1, 2, tzinfo=timezone.utc)
    >>> r = MemoryRecord(memory_id="m1", content="The API uses port 8001", created_at=t, updated_at=t)
    >>> r.type, r.namespace
    (<MemoryType.NOTE: 'note'>, 'default')
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import MISSING, dataclass, field, fields, replace
from datetime import datetime, timezone
from enum import Enum
from typing import Any, Literal

from .errors import ValidationError

__all__ = [
    "CueOrigin",
    "JSONValue",
    "MemoryRecord",
    "MemoryType",
    "check_unicode",
    "coerce_timestamp",
    "json_safe_copy",
    "validate_content",
]

JSONValue = Any  # None | bool | int | float | str | list[JSONValue] | dict[str, JSONValue]
CueOrigin = Literal["given", "derived"]

_MAX_ID_LEN = 256
_ID_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f]")
_MAX_JSON_DEPTH = 32


class MemoryType(str, Enum):
    """What kind of thing a memory is; drives formatting headings and type priority."""

    PREFERENCE = "preference"
    CONVENTION = "convention"
    FACT = "fact"
    TASK = "task"
    EVENT = "event"
    NOTE = "note"

    @classmethod
    def coerce(cls, value: object, field_name: str = "type") -> MemoryType:
        """Return the member for ``value`` (a member or its string), or raise ValidationError."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            exact = _TYPE_OF_VALUE.get(value)  # the usual spelling, without an Enum lookup
            if exact is not None:
                return exact
            try:
                return cls(value.strip().lower())
            except ValueError:
                pass
        allowed = ", ".join(m.value for m in cls)
        raise ValidationError(field_name, value, f"choose from {allowed}")


_TYPE_OF_VALUE: dict[str, MemoryType] = {member.value: member for member in MemoryType}


def coerce_timestamp(value: object, field_name: str) -> datetime:
    """Return ``value`` as a timezone-aware UTC datetime.

    Accepts an aware ``datetime`` or an ISO 8601 string with an offset. Naive datetimes are refused:
    a memory's age decides its recency score, and guessing the zone would silently shift it.

    Raises:
        ValidationError: naive, unparsable or of another type.
    """
    if type(value) is datetime and value.tzinfo is timezone.utc:
        return value  # what astimezone(timezone.utc) returns for it (ingest coerces each twice)
    given = value  # errors show what the caller passed, not what it was parsed into
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValidationError(
                field_name, given, "an ISO 8601 timestamp with a UTC offset"
            ) from None
    if not isinstance(value, datetime):
        raise ValidationError(field_name, given, "a timezone-aware datetime or ISO 8601 string")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValidationError(field_name, given, "a timezone-aware timestamp (no UTC offset)")
    return value.astimezone(timezone.utc)


def check_unicode(value: str, field_name: str) -> str:
    """Return ``value`` if it is valid Unicode; a lone surrogate (e.g. from undecodable bytes
    read with ``surrogateescape``) cannot be stored as UTF-8.

    Raises:
        ValidationError: ``value`` holds a lone surrogate.
    """
    if value.isascii():  # a flag CPython keeps on every str: no encoding needed to know
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(
            field_name, value[:40], f"valid Unicode (lone surrogate at position {exc.start})"
        ) from None
    return value


def _optional_timestamp(value: object, field_name: str) -> datetime | None:
    return None if value is None else coerce_timestamp(value, field_name)


def json_safe_copy(value: object, field_name: str = "metadata", _depth: int = 0) -> JSONValue:
    """Deep-copy ``value`` checking that it is JSON-safe (str keys, finite numbers).

    The copy means a caller mutating their dict later cannot change a stored record.
    """
    if _depth > _MAX_JSON_DEPTH:
        raise ValidationError(field_name, "...", f"JSON nested at most {_MAX_JSON_DEPTH} levels")
    if type(value) is dict and _depth < _MAX_JSON_DEPTH and _flat_ascii(value):
        return dict(value)  # the walk's copy (its items, one level deeper, are within bounds)
    if isinstance(value, str):
        return check_unicode(value, field_name)
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValidationError(field_name, value, "finite numbers only (JSON has no NaN/inf)")
        return value
    if isinstance(value, Mapping):
        out: dict[str, JSONValue] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValidationError(f"{field_name} key", key, "string keys only")
            check_unicode(key, f"{field_name} key")
            out[key] = json_safe_copy(item, f"{field_name}.{key}", _depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [json_safe_copy(item, field_name, _depth + 1) for item in value]
    raise ValidationError(
        field_name, value, "JSON-safe values: None, bool, int, float, str, list, dict"
    )


_FLAT_VALUES = frozenset({int, bool, type(None)})  # exact types json_safe_copy keeps as they are


def _flat_ascii(metadata: dict[Any, Any]) -> bool:
    """Whether :func:`json_safe_copy` of ``metadata`` is the plain copy ``dict(metadata)``, seen
    without its walk (a ``Mapping`` check and a field name per entry): ASCII string keys to
    ints, bools, None or ASCII strings, the usual metadata. Anything else takes the walk."""
    for key, item in metadata.items():
        if type(key) is not str or not key.isascii():
            return False
        kind = type(item)
        if not (kind in _FLAT_VALUES or (kind is str and item.isascii())):
            return False
    return True


def _string_tuple(value: object, field_name: str) -> tuple[str, ...]:
    if value is None or (type(value) is tuple and not value):  # no tags: most records
        return ()
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ValidationError(field_name, value, "a list of strings")
    items = tuple(value)
    if _plain_strings(items):
        return items
    for item in items:  # find the first bad item, to name it
        if not isinstance(item, str):
            raise ValidationError(field_name, item, f"every {field_name[:-1]} must be a string")
        if not item.strip():
            raise ValidationError(field_name, item, f"every {field_name[:-1]} must be non-empty")
        check_unicode(item, field_name)
    return items


def _plain_strings(items: tuple[object, ...]) -> bool:
    """Whether ``items`` are all exact ``str``, none blank, all valid Unicode: the common case,
    checked with C-level calls instead of a Python loop (a record has dozens of cues)."""
    if not {str}.issuperset(map(type, items)):
        return False
    strings: tuple[str, ...] = items  # type: ignore[assignment]  # all str, checked just above
    if not all(strings) or any(map(str.isspace, strings)):  # strip() empty, without copies
        return False
    if all(map(str.isascii, strings)):  # no surrogate in ASCII: nothing to encode
        return True
    try:  # a str never pairs surrogate code points: one lone surrogate fails the whole encode
        "".join(strings).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def validate_memory_id(value: object, field_name: str = "memory_id") -> str:
    """Return a valid memory id or raise ValidationError."""
    if (
        type(value) is str
        and 0 < len(value) <= _MAX_ID_LEN
        and value.isascii()
        and value.isprintable()
        and not value.isspace()
    ):  # the usual id, valid as it is: its only blank can be " ", and no control character
        return value  # nor surrogate is printable ASCII (the checks below, without 3 calls)
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(field_name, value, "a non-empty string")
    # printable ASCII has none of _ID_FORBIDDEN's characters: most ids skip the search
    forbidden = not (value.isascii() and value.isprintable()) and _ID_FORBIDDEN.search(value)
    if len(value) > _MAX_ID_LEN or forbidden:
        raise ValidationError(
            field_name, value, f"at most {_MAX_ID_LEN} characters, no control characters"
        )
    return check_unicode(value, field_name)


def validate_namespace(value: object) -> str:
    """Return a valid namespace or raise ValidationError."""
    return validate_memory_id(value, "namespace")


def validate_content(value: object) -> str:
    """Return valid memory text (a non-empty string, no NUL, valid Unicode) or raise
    ValidationError."""
    if not isinstance(value, str):
        raise ValidationError("content", value, "a string")
    if not value or value.isspace():  # what strip() would leave empty, without the copy
        raise ValidationError("content", value, "non-empty text")
    if "\x00" in value:
        raise ValidationError("content", value[:40], "text without NUL characters")
    return check_unicode(value, "content")


@dataclass(frozen=True)
class MemoryRecord:
    """One stored memory. Immutable: changes go through ``CueMap.update`` (or ``evolve``).

    Attributes:
        memory_id: unique within ``namespace``; stable for the memory's life.
        content: the remembered text.
        cues: normalized retrieval cues; derived from the content when none were given.
        tags: normalized labels (a softer signal than cues).
        type: what kind of memory this is.
        source: where it came from (``"chat"``, ``"import"``, a file name...), or None.
        namespace: isolation boundary (a user, a tenant, a project).
        created_at / updated_at / last_accessed: aware UTC datetimes.
        access_count: how many recalls returned it.
        expires_at: hidden from recall from this moment on; None never expires.
        supersedes / superseded_by: links to the memory this one replaces / that replaced it.
        superseded_at: when it was replaced.
        key: what the memory is about (``"user.display_name"``, ``"api.orders.method"``); a new
            memory with the same key and namespace supersedes the active one.
        metadata: a JSON-safe dict of the caller's own data.
        cue_origin: ``"given"`` when the caller supplied cues, ``"derived"`` when the core did.
    """

    memory_id: str
    content: str
    created_at: datetime
    updated_at: datetime
    cues: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    type: MemoryType = MemoryType.NOTE
    source: str | None = None
    namespace: str = "default"
    last_accessed: datetime | None = None
    access_count: int = 0
    expires_at: datetime | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    superseded_at: datetime | None = None
    key: str | None = None
    metadata: dict[str, JSONValue] = field(default_factory=dict, hash=False)
    cue_origin: CueOrigin = "given"

    def __post_init__(self) -> None:
        put = object.__setattr__  # frozen: normalise fields once, at construction
        put(self, "content", validate_content(self.content))
        put(self, "memory_id", validate_memory_id(self.memory_id))
        put(self, "namespace", validate_namespace(self.namespace))
        put(self, "cues", _string_tuple(self.cues, "cues"))
        _check_from_tags(self.__dict__)  # the frozen record's own fields, checked in place

    @classmethod
    def _prevalidated(cls, values: Mapping[str, Any], *, cues_checked: bool) -> MemoryRecord:
        """The record ``cls(**values)`` would be, for values whose ``content`` and ``namespace``
        (and, with ``cues_checked``, ``cues``) the caller has already put through this module's
        own checks (``CueMap._build``); the other fields are checked in ``__post_init__``'s
        order, so an invalid one raises the same error. Bulk ingest builds every record this
        way: the checks it skips and the frozen dataclass's field-by-field set-up were about
        half of a record's construction. The fields are checked in their dict before the
        record holds it (item stores, not a call of ``object.__setattr__`` each)."""
        checked = _FIELD_TEMPLATE.copy()  # field order (dict(template, **values) also made
        checked.update(values)  # a keyword dict of values first)
        return cls._of_fields(checked, cues_checked=cues_checked)

    @classmethod
    def _of_fields(cls, checked: dict[str, Any], *, cues_checked: bool) -> MemoryRecord:
        """:meth:`_prevalidated` of ``checked``, a dict of every field in declaration order
        (``CueMap._build`` lays a new memory's out so), checked in place and then held by the
        record."""
        checked["memory_id"] = validate_memory_id(checked["memory_id"])
        if not cues_checked:
            checked["cues"] = _string_tuple(checked["cues"], "cues")
        _check_from_tags(checked)
        record = object.__new__(cls)
        object.__setattr__(record, "__dict__", checked)
        return record

    @classmethod
    def _unchecked(cls, values: dict[str, Any]) -> MemoryRecord:
        """A record from the fields of one validated before (the store's packed rows,
        :mod:`.recordtable`): validating again would cost more than the rest of a read.
        ``values``, a new dict of every field in declaration order, is the record's from then
        on (not copied into it)."""
        record = object.__new__(cls)
        object.__setattr__(record, "__dict__", values)
        return record

    def evolve(self, **changes: Any) -> MemoryRecord:
        """Return a copy with ``changes`` applied (validated like a new record)."""
        return replace(self, **changes)

    def is_expired(self, now: datetime) -> bool:
        """True when ``expires_at`` is at or before ``now``."""
        return self.expires_at is not None and self.expires_at <= now

    def to_dict(self) -> dict[str, JSONValue]:
        """A JSON-safe dict (timestamps as ISO 8601 strings); inverse of :meth:`from_dict`."""
        out: dict[str, JSONValue] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, datetime):
                value = value.isoformat()
            elif isinstance(value, MemoryType):
                value = value.value
            elif isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, dict):
                value = json_safe_copy(value)
            out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemoryRecord:
        """Build a record from :meth:`to_dict` output; unknown keys are refused."""
        if not isinstance(data, Mapping):
            raise ValidationError("record", data, "a JSON object")
        known = {f.name for f in fields(cls)}
        for key in data:
            if key not in known:
                raise ValidationError(
                    "record field", key, f"choose from {', '.join(sorted(known))}"
                )
        for name in ("memory_id", "content", "created_at", "updated_at"):
            if name not in data:
                raise ValidationError(name, None, "required in a stored record")
        return cls(**dict(data))


def _check_from_tags(values: dict[str, Any]) -> None:
    """``__post_init__``'s checks from ``tags`` on, normalising a record's field ``values``
    in place (a frozen record's ``__dict__``: the same as setting its attributes). A value
    already in its checked form (no tags, a member of the type, a UTC datetime or None, no
    id field, a flat ASCII metadata dict) is passed over without the call that would return
    it unchanged: a bulk ingest's records hold little else."""
    tags = values["tags"]
    if type(tags) is not tuple or tags:
        values["tags"] = _string_tuple(tags, "tags")
    if type(values["type"]) is not MemoryType:
        values["type"] = MemoryType.coerce(values["type"])
    created, updated = values["created_at"], values["updated_at"]
    if not (
        type(created) is datetime
        and created.tzinfo is _UTC
        and type(updated) is datetime
        and updated.tzinfo is _UTC
        and values["last_accessed"] is None
        and values["expires_at"] is None
        and values["superseded_at"] is None
    ):  # a new memory's are so: the loop over them would pass over each
        _check_timestamps(values)
    source, count = values["source"], values["access_count"]
    if not (
        (source is None or (type(source) is str and source.isascii()))
        and type(count) is int
        and count >= 0
        and values["supersedes"] is None
        and values["superseded_by"] is None
        and values["key"] is None
        and values["cue_origin"] in _ORIGINS
    ):  # else what _check_scalars checks holds as it is
        _check_scalars(values)
    given = values["metadata"]
    if type(given) is dict and _flat_ascii(given):
        values["metadata"] = dict(given)  # what json_safe_copy returns for it
        return
    metadata = json_safe_copy(given if given is not None else {})
    if not isinstance(metadata, dict):
        raise ValidationError("metadata", given, "a dict")
    values["metadata"] = metadata


def _check_timestamps(values: dict[str, Any]) -> None:
    for name, optional in _TIMESTAMP_FIELDS:
        value = values[name]
        if (value is None and optional) or (type(value) is datetime and value.tzinfo is _UTC):
            continue
        values[name] = (
            _optional_timestamp(value, name) if optional else coerce_timestamp(value, name)
        )


_UTC = timezone.utc
# the timestamp fields in declaration order, each with "may be None"
_TIMESTAMP_FIELDS = (("created_at", False), ("updated_at", False), ("last_accessed", True),
                     ("expires_at", True), ("superseded_at", True))  # fmt: skip


def _check_scalars(values: dict[str, Any]) -> None:
    source = values["source"]
    if source is not None:
        if not isinstance(source, str):
            raise ValidationError("source", source, "a string or None")
        check_unicode(source, "source")
    count = values["access_count"]
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ValidationError("access_count", count, "an integer >= 0")
    for name in _ID_FIELDS:
        value = values[name]
        if value is not None:
            validate_memory_id(value, name)
    if values["cue_origin"] not in _ORIGINS:
        raise ValidationError("cue_origin", values["cue_origin"], "'given' or 'derived'")


_ID_FIELDS = ("supersedes", "superseded_by", "key")  # checked as memory ids, in this order
_ORIGINS = ("given", "derived")


RECORD_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(MemoryRecord))
# Every field in declaration order, with its default (None for the required ones and for
# metadata, which __post_init__ turns into {}): MemoryRecord._prevalidated's starting point.
_FIELD_TEMPLATE: dict[str, Any] = {
    f.name: None if f.default is MISSING else f.default for f in fields(MemoryRecord)
}
