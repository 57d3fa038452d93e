"""Header-only dependencies of kernel sections (CUTLASS), found offline (docs/layout.md).

In order: a checkout named by ``CUTLASS_SRC_DIR`` (a version mismatch is a warning); for the pins whose
PyPI ``nvidia-cutlass`` wheel carries the C++ headers, that package in the build environment (installed there
unless ``--offline``); otherwise an error naming the pin, its version and ``CUTLASS_SRC_DIR``.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

from .buildenv import BuildInterpreter
from .dependencies import CUTLASS_PINS
from .errors import BuildError

_VERSION_DEFINE = re.compile(r"#define\s+CUTLASS_(MAJOR|MINOR|PATCH)\s+(\d+)")


def checkout_version(root: Path) -> str | None:
    header = root / "include" / "cutlass" / "version.h"
    try:
        found = dict(_VERSION_DEFINE.findall(header.read_text(encoding="utf-8", errors="replace")))
    except OSError:
        return None
    if not {"MAJOR", "MINOR"} <= found.keys():
        return None
    return f"{found['MAJOR']}.{found['MINOR']}.{found.get('PATCH', '0')}"


def _includes(root: Path) -> list[Path]:
    return [p for p in (root / "include", root / "tools" / "util" / "include") if p.is_dir()]


def cutlass_includes(
    pin: str, interpreter: BuildInterpreter, log: Callable[[str], None], *, offline: bool = False
) -> list[Path]:
    """Include directories of ``pin``; ``offline`` forbids installing the PyPI package (``build --offline``)."""
    spec = CUTLASS_PINS[pin]
    src_dir = os.environ.get("CUTLASS_SRC_DIR")
    if src_dir:
        root = Path(src_dir).expanduser().absolute()  # the include dirs are used from the generated project
        if not (root / "include" / "cutlass" / "cutlass.h").is_file():
            raise BuildError(f"CUTLASS_SRC_DIR={src_dir} is not a CUTLASS checkout (no include/cutlass/cutlass.h)")
        found = checkout_version(root)
        if found != spec.version:
            log(f"warning: CUTLASS_SRC_DIR holds CUTLASS {found or 'of unknown version'}, but {pin} pins {spec.version}")
        return _includes(root)
    if not spec.pypi:
        raise BuildError(
            f"{pin} needs CUTLASS {spec.version}, which no PyPI package provides with its C++ headers: "
            f"set CUTLASS_SRC_DIR to a checkout of CUTLASS {spec.version}"
        )
    source = interpreter.purelib / "cutlass_library" / "source"
    if checkout_version(source) != spec.version:
        if offline:
            raise BuildError(
                f"{pin} needs CUTLASS {spec.version}, and --offline forbids installing nvidia-cutlass=={spec.version}: "
                f"set CUTLASS_SRC_DIR to a checkout of CUTLASS {spec.version}, or install that package in the "
                "build environment"
            )
        log(f"installing nvidia-cutlass=={spec.version} into the build environment for {pin}")
        result = subprocess.run(
            [str(interpreter.python), "-m", "pip", "install", "--quiet", "--no-deps", f"nvidia-cutlass=={spec.version}"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if result.returncode != 0 or checkout_version(source) != spec.version:
            raise BuildError(
                f"{pin}: could not install nvidia-cutlass=={spec.version} ({result.stderr.strip()[-300:]}); "
                f"set CUTLASS_SRC_DIR to a checkout of CUTLASS {spec.version}"
            )
    return _includes(source)
