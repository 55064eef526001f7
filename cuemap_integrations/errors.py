"""Exceptions raised by cuemap-integrations.

Every error the library raises on purpose derives from :class:`CueMapError`::

    CueMapError
    ├── ValidationError      bad input: names the field, the value received and what is allowed
    │   ├── DuplicateIdError a memory id already stored in that namespace
    │   ├── SecretError      the redaction policy drops a memory holding a secret
    │   └── ConfigError      an unknown rule, weight or option, or a value out of range
    ├── NotFoundError        no memory with that id in that namespace
    └── StoreError           the storage backend failed (I/O, corruption, schema too new)

``ValidationError`` also derives from ``ValueError`` and ``NotFoundError`` from ``KeyError`` so code
written against the built-in exceptions keeps working.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ConfigError",
    "CueMapError",
    "DuplicateIdError",
    "NotFoundError",
    "SecretError",
    "StoreError",
    "ValidationError",
]

_MAX_VALUE_REPR = 80


def _short_repr(value: Any) -> str:
    text = repr(value)
    if len(text) > _MAX_VALUE_REPR:
        text = text[: _MAX_VALUE_REPR - 3] + "..."
    return text


class CueMapError(Exception):
    """Base class of every error raised by cuemap-integrations."""


class ValidationError(CueMapError, ValueError):
    """Input that the library refuses; nothing was stored or changed.

    Attributes:
        field: the parameter or record field at fault.
        value: the value received.
        allowed: what would have been accepted.
    """

    def __init__(self, field: str, value: Any, allowed: str) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        super().__init__(f"invalid {field}={_short_repr(value)}: {allowed}")


class DuplicateIdError(ValidationError):
    """A memory with this id already exists in the namespace."""

    def __init__(self, memory_id: str, namespace: str) -> None:
        super().__init__(
            "memory_id", memory_id, f"already stored in namespace {namespace!r}; ids are unique"
        )
        self.namespace = namespace


class SecretError(ValidationError):
    """A memory holds a secret whose policy is ``drop``; nothing was stored.

    The message names the secret classes found, never the secret.
    """

    def __init__(self, position: int, classes: list[str]) -> None:
        super().__init__(
            f"items[{position}].content",
            "[withheld]",
            f"holds {', '.join(classes)}, which the redaction policy drops",
        )
        self.classes = tuple(classes)


class ConfigError(ValidationError):
    """An unknown configuration key or an out-of-range configuration value."""


class NotFoundError(CueMapError, KeyError):
    """No memory with the given id exists in the namespace."""

    def __init__(self, memory_id: str, namespace: str) -> None:
        self.memory_id = memory_id
        self.namespace = namespace
        super().__init__(f"no memory with memory_id={memory_id!r} in namespace {namespace!r}")

    def __str__(self) -> str:  # KeyError quotes its message; keep ours readable.
        return str(self.args[0])


class StoreError(CueMapError):
    """The storage backend failed or holds data this version cannot read."""
