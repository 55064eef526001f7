"""The build hook (``hatch_build.py``): each compiled library builds loadable, or warns and is absent.

The package works without either library (the NumPy recall path, the pure-Python text rules), so
a failed compile must warn and leave nothing behind that the package would then load.
"""

from __future__ import annotations

import importlib.util
import shutil
import sysconfig
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from cuemap_integrations import kernel
from cuemap_integrations import text as text_module


def _load_textc(built: Path) -> Any:
    spec = importlib.util.spec_from_file_location("_textc", built)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Library(NamedTuple):
    source: str  # the C file's name beside the package's modules
    compile: str  # hatch_build's function that builds it
    path: str  # hatch_build's function that says where it goes
    warning: str  # what the warning of a failed compile says
    abi: Callable[[Path], int]  # the ABI version of the library built at this path
    expected_abi: int


LIBRARIES = {
    "kernel": Library(
        "_kernel.c", "compile_kernel", "kernel_path", "C kernel did not compile",
        lambda built: kernel.load(built.parent).cm_abi_version(), kernel.ABI_VERSION,
    ),
    "textc": Library(
        "_textc.c", "compile_textc", "textc_path", "text extension did not compile",
        lambda built: _load_textc(built).ABI_VERSION, text_module._TEXTC_ABI,
    ),
}  # fmt: skip


@pytest.fixture
def hatch_build() -> Any:
    return pytest.importorskip("hatch_build")  # the repository root's build hook


@pytest.mark.parametrize("name", sorted(LIBRARIES))
def test_the_build_hook_compiles_a_loadable_library(
    name: str, hatch_build: Any, tmp_path: Path
) -> None:
    library = LIBRARIES[name]
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(cc) is None:
        pytest.skip(f"no C compiler ({cc})")
    source = tmp_path / library.source
    shutil.copy(Path(kernel.__file__).with_name(library.source), source)
    built = getattr(hatch_build, library.compile)(source)
    assert built is not None and built.parent == tmp_path
    assert library.abi(built) == library.expected_abi


@pytest.mark.parametrize("name", sorted(LIBRARIES))
def test_a_failed_compile_warns_and_builds_nothing(
    name: str, hatch_build: Any, tmp_path: Path
) -> None:
    library = LIBRARIES[name]
    broken = tmp_path / library.source
    broken.write_text("this is not C\n")
    with pytest.warns(UserWarning, match=library.warning):
        assert getattr(hatch_build, library.compile)(broken) is None
    assert not getattr(hatch_build, library.path)(tmp_path).exists()


def test_the_textc_porter_of_a_fresh_build_stems(hatch_build: Any, tmp_path: Path) -> None:
    source = tmp_path / "_textc.c"
    shutil.copy(Path(text_module.__file__).with_name("_textc.c"), source)
    built = hatch_build.compile_textc(source)
    if built is None:
        pytest.skip("no C compiler")
    assert _load_textc(built).porter("generalizations") == "gener"
