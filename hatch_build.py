"""Build hook: compiles ``cuemap_integrations/_kernel.c`` (the array path's scoring kernel) and
``cuemap_integrations/_textc.c`` (the ASCII fast path of the text rules).

Hatchling runs :class:`KernelBuildHook` for the wheel, standard and editable. The kernel is plain
C loaded with ``ctypes`` (no Python headers); ``_textc`` is a CPython extension module, built
against the interpreter's headers (``sysconfig``'s include directory). Both are built with the
interpreter's own compiler from ``sysconfig`` and portable flags (no ``-march=native``: a wheel
must run on other machines). When one does not compile, the build warns and goes on: the package
then uses its NumPy path (``cuemap_integrations/kernel.py``: ``available()`` is False) or its
pure-Python text rules (``cuemap_integrations/text.py``).

Run by hand to build it in place (e.g. in a checkout used through ``PYTHONPATH``)::

    python hatch_build.py
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import sysconfig
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
SOURCE = ROOT / "cuemap_integrations" / "_kernel.c"
TEXT_SOURCE = ROOT / "cuemap_integrations" / "_textc.c"
# no fused multiply-add (GCC's default where the target has it, e.g. aarch64): the kernel's exact
# evidence must be the same floats as the Python pass's, rounded after every operation
FLAGS = ("-O2", "-shared", "-fPIC", "-std=c99", "-ffp-contract=off")


def kernel_path(package: Path = SOURCE.parent) -> Path:
    """Where the built library goes (and where ``kernel.py`` looks for it)."""
    return package / f"_kernel{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"


def _compile(command: list[str], what: str, fallback: str) -> bool:
    """Run the compiler ``command``; False (with a warning naming ``what`` and ``fallback``) on
    failure: the package then runs without that library."""
    try:
        subprocess.run(command, check=True, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError) as error:
        detail = getattr(error, "stderr", "") or str(error)
        warnings.warn(
            f"cuemap-integrations: {what} did not compile ({' '.join(command)}): "
            f"{detail.strip()}; {fallback}",
            stacklevel=3,
        )
        return False
    return True


def _compiler() -> list[str]:
    return shlex.split(sysconfig.get_config_var("CC") or "cc")


def compile_kernel(source: Path = SOURCE, target: Path | None = None) -> Path | None:
    """Compile ``source`` into ``target``; None (with a warning) when that fails."""
    target = kernel_path(source.parent) if target is None else target
    command = [*_compiler(), *FLAGS, "-o", str(target), str(source), "-lm"]
    return target if _compile(command, "the C kernel", "recall uses the NumPy path") else None


def textc_path(package: Path = TEXT_SOURCE.parent) -> Path:
    """Where the built text extension goes (``import cuemap_integrations._textc`` finds it)."""
    return package / f"_textc{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"


def compile_textc(source: Path = TEXT_SOURCE, target: Path | None = None) -> Path | None:
    """Compile the extension module ``source`` into ``target``; None (with a warning) on failure."""
    target = textc_path(source.parent) if target is None else target
    include = sysconfig.get_paths()["include"]
    # macOS links an extension without libpython: its symbols come from the interpreter
    link = ["-undefined", "dynamic_lookup"] if sys.platform == "darwin" else []
    # -DNDEBUG as CPython's own extensions: the C API's macros (PyUnicode_GET_LENGTH ...) assert
    # their argument's type otherwise, a load of the type object per use
    command = [*_compiler(), "-O2", "-DNDEBUG", "-shared", "-fPIC", f"-I{include}", *link, "-o",
               str(target), str(source)]  # fmt: skip
    fallback = "ingest uses the pure-Python text rules"
    return target if _compile(command, "the text extension", fallback) else None


def compile_all() -> list[Path]:
    """Build the kernel and the text extension; the libraries that compiled."""
    return [built for built in (compile_kernel(), compile_textc()) if built is not None]


try:
    from hatchling.builders.hooks.plugin.interface import BuildHookInterface
except ImportError:  # run by hand, outside a build environment
    BuildHookInterface = object


class KernelBuildHook(BuildHookInterface):  # type: ignore[misc]
    """Compiles the kernel and the text extension into the package before hatchling collects
    the wheel's files."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        """Build the libraries; a standard wheel then holds them and is platform-specific."""
        if self.target_name != "wheel":
            return
        built = compile_all()
        if not built or version == "editable":  # editable: the checkout itself is used
            return
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        for library in built:
            build_data["force_include"][str(library)] = f"cuemap_integrations/{library.name}"


if __name__ == "__main__":
    sys.exit(0 if len(compile_all()) == 2 else 1)
