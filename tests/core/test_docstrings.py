"""Every example in the package's docstrings runs and shows what it says (doctest).

The examples are documentation a reader copies; stop 27 found one whose text a merge had broken
(a stray import line inside it) and one stale since a migration (a schema version), neither of
which any test ran. Modules whose examples need an optional extra skip, by name, without it."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import cuemap_integrations

# modules that are not imported for their examples: the CLI entry point runs on import
_SKIPPED = {"cuemap_integrations.__main__", "cuemap_integrations.bench.__main__"}
# the optional packages a module's examples need (the core's need nothing outside the standard
# library and NumPy)
_NEEDS = {"cuemap_integrations.dense": ("faiss",), "cuemap_integrations.hybrid": ("faiss",)}


def _modules() -> list[str]:
    found = pkgutil.walk_packages(cuemap_integrations.__path__, "cuemap_integrations.")
    return sorted(
        m.name for m in found if m.name not in _SKIPPED and not m.name.endswith("_kernel")
    )


def test_the_package_has_examples_to_run() -> None:
    """The walk finds the modules with examples (an empty walk would pass every case below)."""
    names = _modules()
    assert "cuemap_integrations.store" in names and "cuemap_integrations.text" in names


@pytest.mark.parametrize("name", _modules())
def test_the_modules_examples_run(name: str) -> None:
    for package in _NEEDS.get(name, ()):
        pytest.importorskip(package, reason=f"{name}'s examples need {package} (an extra)")
    module = importlib.import_module(name)
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(module, optionflags=flags, report=False, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} failed"
