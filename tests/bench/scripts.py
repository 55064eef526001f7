"""Load a script of ``benchmarks/`` (not a package) as a module, for its tests."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load(name: str) -> ModuleType:
    """``benchmarks/{name}.py`` as the module ``name`` (registered: dataclasses look it up)."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def run(name: str, *args: str, out: Path) -> tuple[str, Any]:
    """Run ``benchmarks/{name}.py`` with ``args`` and ``--json out``; what it printed, and the
    figures it wrote."""
    command = [sys.executable, str(BENCHMARKS / f"{name}.py"), *args, "--json", str(out)]
    printed = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return printed, json.loads(out.read_text())
