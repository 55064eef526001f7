"""Our packages live inside LlamaIndex's namespace packages without breaking them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("llama_index.core")

ADAPTERS = Path(__file__).resolve().parents[3] / "adapters" / "llama_index"


def test_namespace_packages_have_no_init() -> None:
    for directory in (ADAPTERS, ADAPTERS / "retrievers", ADAPTERS / "memory"):
        assert directory.is_dir() and not (directory / "__init__.py").exists()


def test_llama_index_packages_still_import_beside_ours() -> None:
    pytest.importorskip("llama_index.retrievers.bm25")
    code = """
import json
import llama_index, llama_index.retrievers, llama_index.memory
import llama_index.core, llama_index.core.memory, llama_index.retrievers.bm25
import llama_index.retrievers.cuemap, llama_index.memory.cuemap
from llama_index.core.memory import Memory
from llama_index.retrievers.bm25 import BM25Retriever
from llama_index.retrievers.cuemap import CueMapRetriever
from llama_index.memory.cuemap import CueMapMemory, CueMapMemoryBlock
print(json.dumps({
    "llama_index": getattr(llama_index, "__file__", None),
    "retrievers": list(llama_index.retrievers.__path__),
    "memory": list(llama_index.memory.__path__),
    "ours": [llama_index.retrievers.cuemap.__file__, llama_index.memory.cuemap.__file__],
    "core": llama_index.core.__file__,
}))
"""
    out = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, check=True
    )
    found = json.loads(out.stdout)
    assert found["llama_index"] is None  # still a namespace package
    assert len(found["retrievers"]) >= 2  # bm25's site-packages directory and ours
    assert any(str(ADAPTERS) in p for p in found["retrievers"])
    assert all(str(ADAPTERS) in p for p in found["ours"])
    assert str(ADAPTERS) not in found["core"]


def test_public_surface_is_pinned() -> None:
    import llama_index.memory.cuemap as memory
    import llama_index.retrievers.cuemap as retrievers

    assert retrievers.__all__ == ["CueMapRetriever"]
    assert memory.__all__ == ["CueMapMemory", "CueMapMemoryBlock"]


def test_docstring_examples_run() -> None:
    modules = [
        "llama_index.retrievers.cuemap", "llama_index.retrievers.cuemap.base",
        "llama_index.retrievers.cuemap.nodes", "llama_index.memory.cuemap.base",
        "llama_index.memory.cuemap.block",
    ]  # fmt: skip
    code = (
        "import doctest, importlib, sys\n"
        f"results = [doctest.testmod(importlib.import_module(m)) for m in {modules!r}]\n"
        "print(sum(r.attempted for r in results), sum(r.failed for r in results))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    attempted, failed = map(int, out.stdout.split())
    assert failed == 0 and attempted >= 20
