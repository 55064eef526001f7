"""The core imports nothing outside the standard library, and its public surface is pinned."""

from __future__ import annotations

import json
import subprocess
import sys

import cuemap_integrations

HEAVY = ("langchain", "llama_index", "faiss", "torch", "sentence_transformers", "tiktoken", "numpy")


def test_import_loads_only_the_standard_library() -> None:
    code = (
        "import sys, json; before = set(sys.modules); import cuemap_integrations; "
        "print(json.dumps(sorted(set(sys.modules) - before)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout)
    stdlib = sys.stdlib_module_names
    foreign = [
        m
        for m in loaded
        if m.split(".")[0] not in stdlib and m.split(".")[0] != "cuemap_integrations"
    ]
    assert foreign == []
    assert not [m for m in loaded if m.split(".")[0] in HEAVY]


def test_public_all_is_pinned() -> None:
    assert sorted(cuemap_integrations.__all__) == sorted(
        [
            "CaptureResult", "CaptureRule", "ConfigError", "ConflictNote", "CueMap", "CueMapError", "DuplicateIdError", "Hit", "MemoryRecord",
            "MemoryType", "NotFoundError", "RecallConfig", "RecallResult", "RecallSession",
            "RecallTrace", "RedactionPolicy", "ScoreBreakdown", "SecretError", "StoreError",
            "StoreStats", "ValidationError", "__version__", "derive_cues", "normalize",
        ]
    )  # fmt: skip
    for name in cuemap_integrations.__all__:
        assert getattr(cuemap_integrations, name) is not None
