"""The hybrid modules import their heavy dependencies only when used."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("faiss", "torch", "sentence_transformers", "tiktoken", "numpy", "tqdm", "langchain",
         "langchain_core", "llama_index", "transformers")  # fmt: skip


def test_importing_the_hybrid_modules_loads_nothing_heavy() -> None:
    code = (
        "import sys, json; import cuemap_integrations.hybrid, cuemap_integrations.formatting, "
        "cuemap_integrations.tokens, cuemap_integrations.embeddings, cuemap_integrations.dense; "
        "print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout)
    assert [m for m in loaded if m.split(".")[0] in HEAVY] == []


def test_public_names_are_pinned() -> None:
    from cuemap_integrations import dense, embeddings, formatting, hybrid, tokens

    assert sorted(hybrid.__all__) == [
        "DEFAULT_THRESHOLDS",
        "HybridMode",
        "HybridRecall",
        "HybridStats",
    ]
    assert sorted(formatting.__all__) == [
        "ContextTemplate",
        "FormattedContext",
        "TEMPLATES",
        "format_context",
    ]
    assert sorted(dense.__all__) == ["DenseIndex", "DenseMatch", "IndexStats", "LangChainVectorIndex",
                                     "VectorIndex", "memory_fingerprint"]  # fmt: skip
    assert "as_embedder" in embeddings.__all__ and "default_embedder" in embeddings.__all__
    assert "load_encoding" in tokens.__all__ and "TokenCounter" in tokens.__all__
    for module in (dense, embeddings, formatting, hybrid, tokens):
        for name in module.__all__:
            assert getattr(module, name) is not None
