"""Build hook: compiles ``cuemap_integrations/_kernel.c`` (the array path's scoring kernel).

Hatchling runs :class:`KernelBuildHook` for the wheel, standard and editable. The kernel is plain
C loaded with ``ctypes`` (no Python headers), built with the interpreter's own compiler from
``sysconfig`` and portable flags (no ``-march=native``: a wheel must run on other machines).
When it does not compile, the build warns and goes on: the package then uses its NumPy path
(``cuemap_integrations/kernel.py``: ``available()`` is False).

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
# no fused multiply-add (GCC's default where the target has it, e.g. aarch64): the kernel's exact
# evidence must be the same floats as the Python pass's, rounded after every operation
FLAGS = ("-O2", "-shared", "-fPIC", "-std=c99", "-ffp-contract=off")


def kernel_path(package: Path = SOURCE.parent) -> Path:
    """Where the built library goes (and where ``kernel.py`` looks for it)."""
    return package / f"_kernel{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"


def compile_kernel(source: Path = SOURCE, target: Path | None = None) -> Path | None:
    """Compile ``source`` into ``target``; None (with a warning) when that fails."""
    target = kernel_path(source.parent) if target is None else target
    compiler = shlex.split(sysconfig.get_config_var("CC") or "cc")
    command = [*compiler, *FLAGS, "-o", str(target), str(source), "-lm"]
    try:
        subprocess.run(command, check=True, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError) as error:
        detail = getattr(error, "stderr", "") or str(error)
        warnings.warn(
            f"cuemap-integrations: the C kernel did not compile ({' '.join(command)}): "
            f"{detail.strip()}; recall uses the NumPy path",
            stacklevel=2,
        )
        return None
    return target


try:
    from hatchling.builders.hooks.plugin.interface import BuildHookInterface
except ImportError:  # run by hand, outside a build environment
    BuildHookInterface = object


class KernelBuildHook(BuildHookInterface):  # type: ignore[misc]
    """Compiles the kernel into the package before hatchling collects the wheel's files."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        """Build the kernel; a standard wheel then holds it and is platform-specific."""
        if self.target_name != "wheel":
            return
        built = compile_kernel()
        if built is None or version == "editable":  # editable: the checkout itself is used
            return
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        build_data["force_include"][str(built)] = f"cuemap_integrations/{built.name}"


if __name__ == "__main__":
    sys.exit(0 if compile_kernel() is not None else 1)
