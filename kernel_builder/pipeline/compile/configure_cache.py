"""What CMake's configure learns about the compilers, kept once per environment.

Most of a fresh configure goes into ``project()`` identifying the C++ and CUDA compilers and checking their
ABI (for nvcc, several compilations: ~10 s of a ~14 s configure). CMake keeps the answers in
``CMakeFiles/<cmake version>/CMake<LANG>Compiler.cmake`` and ``CMakeSystem.cmake`` and skips the checks when
a build directory already has them and its cache says the platform is initialised. After a fresh configure
those files are stored under ``<cache>/configure/<key>/``; a later fresh build directory whose key matches —
the same CMake, compilers and everything the project sets before ``project()`` — starts from them.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from pathlib import Path

from kernel_builder.pipeline.environment.env_facts import cache_root

#: Passed to CMake with restored files: the platform information is already there, do not redo it.
INITIALIZED = "-DCMAKE_PLATFORM_INFO_INITIALIZED:INTERNAL=1"
_FILES = re.compile(r"^(CMake\w+Compiler\.cmake|CMakeSystem\.cmake|CMakeDetermineCompilerABI_\w+\.bin)$")
_VERSION_DIR = re.compile(r"^\d+\.\d+(\.\d+)*")


def key(project_dir: Path, compilers: dict[str, Path], cmake: Path, cmake_version: str) -> str:
    """Everything the compiler checks depend on: CMake, the compilers (path, size, time) and what the
    generated CMakeLists.txt sets before ``project()``, with the project's own name left out."""
    text = (project_dir / "CMakeLists.txt").read_text(encoding="utf-8")
    prelude = []
    for line in text.splitlines():
        if line.startswith("project("):
            prelude.append(re.sub(r"^project\(\S+", "project(", line))
            break
        if not line.startswith("#"):
            prelude.append(line)
    digest = hashlib.sha256()
    digest.update(f"{cmake}\0{cmake_version}\0".encode())
    paths = dict(compilers)
    for match in re.finditer(r'set\(CMAKE_(\w+)_COMPILER "([^"]+)"\)', "\n".join(prelude)):
        paths[match[1]] = Path(match[2])
    for name, path in sorted(paths.items()):
        digest.update(f"{name}={path}\0{_identity(path)}\0".encode())
    digest.update("\n".join(prelude).encode())
    for flags in ("CXXFLAGS", "CUDAFLAGS", "CUDAHOSTCXX", "LDFLAGS"):  # read by CMake's compiler checks
        digest.update(f"\0{flags}={os.environ.get(flags, '')}".encode())
    return digest.hexdigest()[:32]


def _identity(path: Path) -> str:
    try:
        resolved = path.resolve()
        stat = resolved.stat()
    except OSError:
        return "missing"
    return f"{resolved}:{stat.st_size}:{stat.st_mtime_ns}"


def _entry(key: str) -> Path:
    return cache_root() / "configure" / key


def restore(build_dir: Path, key: str) -> bool:
    """Put the stored compiler information into a fresh ``build_dir``; False when there is none."""
    entry = _entry(key)
    if (build_dir / "CMakeCache.txt").exists() or not entry.is_dir():
        return False
    versions = [d for d in entry.iterdir() if d.is_dir() and _VERSION_DIR.match(d.name)]
    if len(versions) != 1:
        return False
    target = build_dir / "CMakeFiles" / versions[0].name
    target.mkdir(parents=True, exist_ok=True)
    for file in versions[0].iterdir():
        shutil.copy2(file, target / file.name)
    return True


def store(build_dir: Path, key: str) -> None:
    """Keep a fresh configure's compiler information (the first one stored for a key stays)."""
    entry = _entry(key)
    if entry.exists():
        return
    versions = [d for d in (build_dir / "CMakeFiles").iterdir() if d.is_dir() and _VERSION_DIR.match(d.name)]
    if len(versions) != 1:
        return
    files = [f for f in versions[0].iterdir() if f.is_file() and _FILES.match(f.name)]
    if not any(f.name.endswith("Compiler.cmake") for f in files):
        return
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=entry.parent))
    except OSError:
        return  # a read-only cache (a sandboxed build's home) only costs the next build the checks again
    try:
        (staging / versions[0].name).mkdir()
        for file in files:
            shutil.copy2(file, staging / versions[0].name / file.name)
        os.rename(staging, entry)  # atomic; another build that stored it first wins
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
