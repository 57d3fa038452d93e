"""Header-only dependencies of kernel sections (CUTLASS), found offline once fetched.

In order:

1. a checkout named by ``CUTLASS_SRC_DIR`` (a version mismatch is a warning);
2. for the pins whose exact release is on PyPI as ``nvidia-cutlass`` (its wheel carries the C++ headers under
   ``cutlass_library/source/``): the headers kept in the user cache (``<cache>/cutlass/<version>/``), shared by
   every build environment and project, so a pin fetched once builds offline from then on;
   else that release already installed in the build environment; else the wheel fetched with
   ``pip download`` (PyPI, or whatever pip is configured with: a mirror, ``PIP_FIND_LINKS`` with a carried
   wheel, ...) and its headers unpacked into the cache, unless ``--offline``;
3. otherwise an error naming the pin, ``CUTLASS_SRC_DIR`` and the upstream tag to check out.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from kernel_builder.build.compile.interpreter import BuildInterpreter
from kernel_builder.build.compile.isolated_envs import cache_root
from kernel_builder.build.plan.planner import VariantPlan
from kernel_builder.common import processes
from kernel_builder.errors import BuildError
from kernel_builder.formats.dependencies import CUTLASS_PINS, CutlassPin

_VERSION_DEFINE = re.compile(r"#define\s+CUTLASS_(MAJOR|MINOR|PATCH)\s+(\d+)")
#: Where the nvidia-cutlass wheel keeps the C++ headers, and the directories a build needs from there.
WHEEL_SOURCE = PurePosixPath("cutlass_library/source")
HEADER_DIRS = (PurePosixPath("include"), PurePosixPath("tools/util/include"))


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
    return [root / d for d in HEADER_DIRS if (root / d).is_dir()]


def checkout_hint(spec: CutlassPin) -> str:
    """What to do without a PyPI release: the checkout to make and the variable to set."""
    return (
        f"set CUTLASS_SRC_DIR to a checkout of CUTLASS {spec.version} (git clone --depth 1 --branch {spec.tag} "
        "https://github.com/NVIDIA/cutlass)"
    )


def cached_headers(version: str) -> Path:
    return cache_root() / "cutlass" / version


def cutlass_includes(
    pin: str, interpreter: BuildInterpreter, log: Callable[[str], None], *, offline: bool = False
) -> list[Path]:
    """Include directories of ``pin``; ``offline`` (``build --offline``) forbids fetching the PyPI wheel."""
    spec = CUTLASS_PINS[pin]
    src_dir = os.environ.get("CUTLASS_SRC_DIR")
    if src_dir:
        root = Path(src_dir).expanduser().absolute()  # the include dirs are used from the generated project
        if not (root / "include" / "cutlass" / "cutlass.h").is_file():
            raise BuildError(
                f"CUTLASS_SRC_DIR={src_dir} is not a CUTLASS checkout (no include/cutlass/cutlass.h)"
            )
        found = checkout_version(root)
        if found != spec.version:
            log(
                f"warning: CUTLASS_SRC_DIR holds CUTLASS {found or 'of unknown version'}, but {pin} pins {spec.version}"
            )
        return _includes(root)
    if not spec.pypi:
        raise BuildError(
            f"{pin} needs CUTLASS {spec.version}, which no PyPI release of nvidia-cutlass provides with its C++ "
            f"headers: {checkout_hint(spec)}"
        )
    cached = cached_headers(spec.version)
    if checkout_version(cached) == spec.version:
        return _includes(cached)
    installed = interpreter.purelib / WHEEL_SOURCE
    if checkout_version(installed) == spec.version:
        return _includes(installed)
    if offline:
        raise BuildError(
            f"{pin} needs CUTLASS {spec.version}, and --offline forbids fetching nvidia-cutlass=={spec.version}: "
            f"install that package in the build environment, or {checkout_hint(spec)}"
        )
    log(f"fetching nvidia-cutlass=={spec.version} for {pin} (its headers are kept in {cached})")
    with tempfile.TemporaryDirectory(prefix="kernel-builder-cutlass-") as tmp:
        wheel = _download(spec, interpreter, Path(tmp))
        _unpack_headers(wheel, spec, cached)
    return _includes(cached)


def dependency_includes(
    variant: VariantPlan, interpreter: BuildInterpreter, log: Callable[[str], None], *, offline: bool
) -> tuple[Path, ...]:
    """The header directories of every CUTLASS pin the variant's kernels ``depend`` on."""
    pins = sorted({d for c in variant.components for d in c.depends if d.startswith("cutlass_")})
    includes: list[Path] = []
    for pin in pins:
        includes.extend(cutlass_includes(pin, interpreter, log, offline=offline))
    return tuple(includes)


def _download(spec: CutlassPin, interpreter: BuildInterpreter, into: Path) -> Path:
    """``pip download`` the exact release's wheel (no dependencies, no sdist) with the build interpreter's pip,
    or this one's when that has none."""
    requirement = f"nvidia-cutlass=={spec.version}"
    detail = ""
    for python in dict.fromkeys([str(interpreter.python), sys.executable]):
        argv = [
            python,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
            "-d",
            str(into),
            requirement,
        ]
        try:
            result = processes.run(argv, capture=True)
        except OSError as exc:
            detail = f"{python}: {exc.strerror}"
            continue
        wheels = sorted(into.glob("nvidia_cutlass-*.whl"))
        if result.returncode == 0 and len(wheels) == 1:
            return wheels[0]
        lines = [line for line in (result.stderr or result.stdout).strip().splitlines() if line.strip()]
        detail = lines[-1].strip() if lines else f"exit status {result.returncode}"
        if "No module named pip" not in detail:
            break
    raise BuildError(
        f"{spec.value}: could not fetch {requirement} ({detail[-300:]}); without network, point pip at a copy of "
        f"the wheel (PIP_FIND_LINKS=<dir> PIP_NO_INDEX=1) or {checkout_hint(spec)}"
    )


def _unpack_headers(wheel: Path, spec: CutlassPin, cached: Path) -> None:
    """The wheel's header directories into ``cached`` (through a rename: complete or absent)."""
    cached.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{cached.name}.", dir=cached.parent))
    try:
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.infolist():
                name = PurePosixPath(member.filename)
                if member.is_dir() or not any(_within(name, WHEEL_SOURCE / d) for d in HEADER_DIRS):
                    continue
                rel = name.relative_to(WHEEL_SOURCE)
                if ".." in rel.parts or rel.is_absolute():
                    raise BuildError(f"{wheel.name}: unsafe path {member.filename}")
                target = staging / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(member) as source, target.open("wb") as out:
                    shutil.copyfileobj(source, out)
        found = checkout_version(staging)
        if found != spec.version:
            raise BuildError(
                f"{wheel.name} holds CUTLASS {found or 'of unknown version'}, not {spec.version}"
            )
        try:
            os.rename(staging, cached)
        except OSError:
            if checkout_version(cached) != spec.version:  # not another build's identical copy: replace it
                shutil.rmtree(cached, ignore_errors=True)
                os.rename(staging, cached)
    except zipfile.BadZipFile as exc:
        raise BuildError(f"{wheel}: not a wheel ({exc})") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _within(name: PurePosixPath, directory: PurePosixPath) -> bool:
    return name.parts[: len(directory.parts)] == directory.parts
