"""Persisting a retriever: a consistent SQLite copy of its store plus a JSON file of settings.

The copy is made with SQLite's online backup API (``sqlite3.Connection.backup``) on the store's
own connection, under the store's lock, so it works for ``":memory:"`` stores too and never
copies a half-written transaction.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from cuemap_integrations import CueMap
from cuemap_integrations.errors import ValidationError

__all__ = ["SETTINGS_FILE", "STORE_FILE", "backup_store", "read_settings", "write_settings"]

STORE_FILE = "cuemap.db"
SETTINGS_FILE = "retriever.json"
FORMAT = 1


def _same_file(a: str, b: Path) -> bool:
    return a != ":memory:" and b.exists() and os.path.samefile(a, b)


def backup_store(cuemap: CueMap, target: Path) -> None:
    """Copy ``cuemap``'s database into ``target`` (created owner-only, replaced if present).

    Pending access statistics are written first, so the copy is the store as it is now.
    """
    if _same_file(cuemap.path, target):
        return  # the store already lives there; its committed state is on disk
    cuemap.backup(target)


def write_settings(directory: Path, settings: dict[str, Any], encoding: str = "utf-8") -> None:
    """Write the retriever's settings (JSON) next to the store copy."""
    with open(directory / SETTINGS_FILE, "w", encoding=encoding) as handle:
        json.dump({"format": FORMAT, **settings}, handle, indent=2, ensure_ascii=False)


def read_settings(directory: Path, encoding: str = "utf-8") -> dict[str, Any]:
    """Read the settings written by :func:`write_settings`.

    Raises:
        ValidationError: the directory holds no persisted retriever, or one of a newer format.
    """
    path = directory / SETTINGS_FILE
    if not path.is_file() or not (directory / STORE_FILE).is_file():
        raise ValidationError(
            "persist_dir", str(directory), f"a directory with {STORE_FILE} and {SETTINGS_FILE}"
        )
    with open(path, encoding=encoding) as handle:
        data = json.load(handle)
    if not isinstance(data, dict) or data.pop("format", None) != FORMAT:
        raise ValidationError(str(path), "format", f"a settings file of format {FORMAT}")
    return data
