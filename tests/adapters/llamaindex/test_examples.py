"""The LlamaIndex examples run offline and show what they promise."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("llama_index.core")

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_query_engine_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert load("llamaindex_query_engine").main([]) == 0
    out = capsys.readouterr().out
    last = out.split("Q: how did we fix it?")[1]
    assert "/ops/clear-cache" in last.split("sources:")[1].splitlines()[1]  # top source
    assert "type: fact" in last


def test_query_engine_example_with_a_file_and_questions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    example = load("llamaindex_query_engine")
    db = str(tmp_path / "m.db")
    assert example.main(["--db", db, "which port does the api use?"]) == 0
    assert example.main(["--db", db, "which port does the api use?"]) == 0  # reuses the store
    out = capsys.readouterr().out
    assert out.count("The API uses port 8001  [") == 2


# FunctionAgent's constructor touches pydantic's deprecated attributes (PydanticDeprecatedSince20,
# PydanticDeprecatedSince211) through the `workflows` package's inspect.getmembers.
@pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning")
def test_chat_example(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("CUEMAP_EXAMPLE_LLM", raising=False)
    assert load("llamaindex_chat").main() == 0
    chat, agent = capsys.readouterr().out.split("== FunctionAgent")
    for transcript in (chat, agent):
        turn_2 = transcript.split("user: how did we fix it?")[1].split("user:")[0]
        assert "assistant: From memory: Fixed the order timeout" in turn_2
    assert "captured from the user's turns: ['we deploy on Fridays']" in chat
    assert "From memory: we deploy on Fridays" in agent  # found again in the next conversation
