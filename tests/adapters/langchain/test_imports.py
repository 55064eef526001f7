"""The package's public surface is pinned, documented, and a missing extra says how to get it."""

from __future__ import annotations

import doctest
import importlib
import subprocess
import sys

import pytest

pytest.importorskip("langchain_core")

import langchain_cuemap


def test_public_all_is_pinned() -> None:
    assert langchain_cuemap.__all__ == [
        "CueMapMemory",
        "CueMapMiddleware",
        "CueMapRetriever",
        "CueMapStore",
        "MemoryBlock",
    ]
    for name in langchain_cuemap.__all__:
        assert getattr(langchain_cuemap, name).__module__.startswith("langchain_cuemap.")


@pytest.mark.parametrize("name", langchain_cuemap.__all__)
def test_every_public_class_has_an_example(name: str) -> None:
    doc = getattr(langchain_cuemap, name).__doc__ or ""
    assert "Example:" in doc and ">>> " in doc


@pytest.mark.parametrize(
    "module", ["_extra", "_recall", "memory", "middleware", "retrievers", "store"]
)
def test_docstring_examples_run(module: str) -> None:
    imported = importlib.import_module(f"langchain_cuemap.{module}")
    failed, attempted = doctest.testmod(imported, optionflags=doctest.ELLIPSIS, report=False)
    assert failed == 0 and (attempted > 0 or module == "_extra")


BLOCK = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == {module!r} or name.startswith({module!r} + "."):
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, Block())
try:
    import langchain_cuemap
except ImportError as error:
    print(error)
"""


@pytest.mark.parametrize("module", ["langchain_core", "langgraph", "langchain_classic"])
def test_missing_extra_names_the_install_command(module: str) -> None:
    out = subprocess.run([sys.executable, "-c", BLOCK.format(module=module)],
                         capture_output=True, text=True, check=True)  # fmt: skip
    assert "pip install 'cuemap-integrations[langchain]'" in out.stdout
    assert module in out.stdout


def test_core_import_stays_framework_free() -> None:
    code = "import sys, cuemap_integrations; print(any(m.startswith('lang') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
