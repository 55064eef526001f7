"""The README's examples print what the README says they print."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("example", ["quickstart.py", "context_block.py"])
def test_example_output_is_quoted_verbatim(example: str, tmp_path: Path) -> None:
    if example == "context_block.py":
        pytest.importorskip("tiktoken", reason="the exact token count needs the [hybrid] extra")
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / example)],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert done.stdout.strip() and done.stdout.strip() in README


def test_readme_quickstart_code_is_the_example() -> None:
    code = (ROOT / "examples" / "quickstart.py").read_text(encoding="utf-8").split("\n", 2)[2]
    assert code.strip() in README


def test_the_two_setup_commands_are_the_ones_ci_runs() -> None:
    assert "make demo" in README and "make test" in README
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
