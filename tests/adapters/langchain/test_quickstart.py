"""examples/langchain_quickstart.py prints what the README says it prints."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langchain")

from cuemap_integrations.tokens import load_encoding

QUICKSTART = Path(__file__).resolve().parents[3] / "examples" / "langchain_quickstart.py"

EXPECTED = """\
why were orders timing out? -> Orders were timing out because the Redis cache expired
how did we fix it? -> Fixed the order timeout with curl -X POST /ops/clear-cache
Remember that the API uses port 8001. -> [] (0 tokens)
which port does the API use? -> ['the API uses port 8001'] (31 tokens)
captured: ['the API uses port 8001']
search: ['tz']
"""


def _masked(text: str) -> str:
    """Token counts are exact with a local BPE file, UTF-8 bytes without one."""
    return re.sub(r"\(\d+ tokens\)", "(N tokens)", text)


def test_quickstart_output(capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(QUICKSTART), run_name="__main__")
    out = capsys.readouterr().out
    assert _masked(out) == _masked(EXPECTED)
    if load_encoding().exact:
        assert out == EXPECTED
