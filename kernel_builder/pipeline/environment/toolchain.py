"""The tools a compiled variant needs, found as typed values and checked before anything is configured.

CMake and Ninja come from their PyPI packages (pinned by this project's dependencies), or from ``PATH`` where
those packages are absent (Nix builds); the host compiler from ``$CXX`` or the system ``g++``; nvcc from
``CUDA_HOME``, ``PATH``, NVIDIA's PyPI toolkit packages or ``/usr/local/cuda``; nvcc's major.minor must equal the CUDA version Torch was built with.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernel_builder import backends
from kernel_builder.errors import BuildError
from kernel_builder.pipeline.environment.env_facts import remembered

if TYPE_CHECKING:
    from kernel_builder.pipeline.environment.interpreter import BuildInterpreter

_NVCC_RELEASE = re.compile(r"release (\d+)\.(\d+)")
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.\d+)*")
MIN_CMAKE = (3, 26)
MIN_NINJA = (1, 11)
#: Where a system CUDA toolkit lives when neither CUDA_HOME nor PATH names one.
DEFAULT_CUDA_HOME = Path("/usr/local/cuda")


@dataclass(frozen=True)
class Tool:
    path: Path
    version: str


@dataclass(frozen=True)
class CudaToolkit:
    nvcc: Path
    version: tuple[int, int]
    root: Path
    description: str  # nvcc's own version line, for the record

    @property
    def include(self) -> Path:
        return self.root / "include"


@functools.cache
def cmake() -> Tool:
    """CMake of the ``cmake`` PyPI package: a known CMake >= 3.26 whatever the system has. Where that package is
    absent (a Nix build brings its own CMake), the ``cmake`` on ``PATH``."""
    fast = _cmake_package_binary()
    if fast is not None:
        return fast
    try:
        import cmake as cmake_pkg
    except ImportError:
        return _on_path("cmake", "CMake", MIN_CMAKE)
    path = Path(cmake_pkg.CMAKE_BIN_DIR) / "cmake"
    return Tool(path, getattr(cmake_pkg, "__version__", "unknown"))


def _cmake_package_binary() -> Tool | None:
    """The ``cmake`` package's binary at its usual place, found without importing the package: its
    ``__init__`` lists every file of the distribution (thousands of ``stat`` calls, a third of a second of
    every no-op rebuild on a slow file system). ``None`` where the layout differs; the import then decides."""
    import importlib.util

    spec = importlib.util.find_spec("cmake")
    if spec is None or not spec.submodule_search_locations:
        return None
    package = Path(next(iter(spec.submodule_search_locations)))
    binary = package / "data" / "bin" / "cmake"
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        return None
    version = _dist_info_version(package.parent, "cmake")
    if version is None:  # another layout (an egg, several dist-info folders): importlib.metadata decides
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as metadata_version

        try:
            version = metadata_version("cmake")
        except PackageNotFoundError:
            return None
    return Tool(binary.resolve(), version)


def _dist_info_version(site: Path, name: str) -> str | None:
    """The ``Version`` of the one ``<name>-*.dist-info`` in ``site`` (what ``importlib.metadata.version`` reads),
    read directly: importing ``importlib.metadata`` and the ``email`` parser costs more than a no-op rebuild
    spends anywhere else. ``None`` unless exactly one such folder names ``name`` with a version."""
    found = [
        entry for entry in site.glob(f"{name}-*.dist-info") if entry.name.split("-", 1)[0].lower() == name
    ]
    if len(found) != 1:
        return None
    try:
        with (found[0] / "METADATA").open(encoding="utf-8") as metadata:
            for line in metadata:
                if not line.strip():
                    break  # the end of the headers
                key, _, value = line.partition(":")
                if key.strip().lower() == "version" and value.strip():
                    return value.strip()
    except (OSError, UnicodeDecodeError):
        pass
    return None


@functools.cache
def ninja() -> Tool:
    """Ninja of the ``ninja`` PyPI package, else (as for :func:`cmake`) the one on ``PATH``.

    The package's answer (its ``BIN_DIR``, which it finds through ``sysconfig`` at import, and its version) is
    kept per environment (``env_facts``) until the package, the binary or the scripts folder changes: a no-op
    rebuild needs it for the build record and does not import the package."""
    import importlib.util
    import sys

    spec = importlib.util.find_spec("ninja")
    if spec is None or spec.origin is None:
        return _on_path("ninja", "Ninja", MIN_NINJA)
    package = Path(spec.origin).parent

    def ask() -> tuple[list[str] | None, list[Path]]:
        try:
            import ninja as ninja_pkg
        except ImportError:
            return None, [package / "__init__.py"]
        import sysconfig

        path = Path(ninja_pkg.BIN_DIR) / "ninja"
        scripts = Path(sysconfig.get_path("scripts"))
        answer = [str(path), str(getattr(ninja_pkg, "__version__", "unknown"))]
        return answer, [package / "__init__.py", package / "_version.py", path, scripts]

    found = remembered("ninja-package", [sys.executable, str(package)], ask)
    if not (isinstance(found, list) and len(found) == 2):
        return _on_path("ninja", "Ninja", MIN_NINJA)
    return Tool(Path(found[0]), str(found[1]))


def _on_path(name: str, label: str, minimum: tuple[int, int]) -> Tool:
    wanted = f"{minimum[0]}.{minimum[1]}"
    found = shutil.which(name)
    if found is None:
        raise BuildError(
            f"no {label}: install the `{name}` Python package (a dependency of kernel-builder) or put {name} "
            f"{wanted} or newer on PATH"
        )
    match = _VERSION.search(_first_line([found, "--version"]))
    version = match[0] if match else "unknown"
    if match is None or (int(match[1]), int(match[2])) < minimum:
        raise BuildError(f"{name} {found} is {version}; kernel-builder needs {wanted} or newer")
    return Tool(Path(found), version)


def _first_line(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, check=False).stdout
    except OSError:
        return ""
    return out.strip().splitlines()[0] if out.strip() else ""


@functools.cache
def host_compiler() -> Tool:
    name = os.environ.get("CXX") or "g++"
    found = shutil.which(name)
    if found is None:
        raise BuildError(f"no C++ compiler: `{name}` not found (set CXX or install g++)")
    # Kept per environment until the compiler changes (env_facts): a no-op rebuild starts no process for it.
    version = remembered("host-compiler", [found], lambda: (_first_line([found, "--version"]), [found]))
    return Tool(Path(found), str(version))


def compiler_for(target: str | None = None) -> Tool:
    """The C++ compiler of a build for ``target`` (``<cpu>-<os>``): this host's (:func:`host_compiler`) when
    ``None``, else the cross compiler for that system (``target_env.cross_compiler``)."""
    if target is None:
        return host_compiler()
    from kernel_builder.pipeline.environment.target_env import cross_compiler, cross_compiler_problem

    found = cross_compiler(target)
    if found is None:
        raise BuildError(cross_compiler_problem(target) or f"no C++ cross compiler for {target}")
    version = remembered(
        "host-compiler", [str(found)], lambda: (_first_line([str(found), "--version"]), [found])
    )
    return Tool(found, str(version))


def compiler_accepts(flag: str, target: str | None = None) -> bool:
    """Whether the build's compiler (for ``target``) accepts ``flag`` (e.g. ``-fno-gnu-unique``, GCC only)."""
    return _accepts(str(compiler_for(target).path), flag)


@functools.cache
def _accepts(compiler: str, flag: str) -> bool:
    def ask() -> tuple[bool, list[str]]:
        result = subprocess.run(
            [compiler, flag, "-Werror", "-x", "c++", "-fsyntax-only", "-"], input="", capture_output=True,
            check=False, text=True,
        )  # fmt: skip
        return result.returncode == 0, [compiler]

    return bool(remembered("compiler-accepts", [compiler, flag], ask))


def _nvcc_candidates(purelib: Path | None) -> list[Path]:
    candidates = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            candidates.append(Path(os.environ[var]) / "bin" / "nvcc")
    on_path = shutil.which("nvcc")
    if on_path:
        candidates.append(Path(on_path))
    if purelib is not None:
        # NVIDIA's PyPI toolkit packages: nvidia/cu<major>/bin (CUDA 13 on), nvidia/cuda_nvcc/bin (CUDA 12).
        candidates += sorted((purelib / "nvidia").glob("cu[0-9]*/bin/nvcc"), reverse=True)
        candidates.append(purelib / "nvidia" / "cuda_nvcc" / "bin" / "nvcc")
    candidates.append(DEFAULT_CUDA_HOME / "bin" / "nvcc")
    return candidates


def _real_nvcc(nvcc: Path) -> Path:
    """The nvcc binary behind ``nvcc`` (which may be a wrapper script): nvcc's dry run names its own dir."""
    try:
        result = subprocess.run(
            [str(nvcc), "-dryrun", "-E", "-x", "cu", os.devnull], capture_output=True, text=True, check=False
        )
    except OSError:
        return nvcc.resolve()
    for line in (result.stderr + result.stdout).splitlines():
        if line.startswith("#$ _HERE_="):
            return (Path(line.split("=", 1)[1].strip()) / "nvcc").resolve()
    return nvcc.resolve()


@functools.cache
def cuda_toolkit(purelib: Path | None = None, wanted: tuple[int, int] | None = None) -> CudaToolkit:
    """The first nvcc of ``CUDA_HOME``/``CUDA_PATH``, ``PATH``, NVIDIA's PyPI packages in ``purelib`` (the build
    environment's site-packages) and the system default that answers ``--version`` — the first of CUDA
    ``wanted`` when one is, so a build environment's PyPI toolkit serves a CUDA version the system lacks."""
    candidates = _nvcc_candidates(purelib)

    def ask() -> tuple[list[list[Any]], list[Path]]:
        toolkits = _answering_toolkits(candidates, wanted)
        return [_toolkit_fields(t) for t in toolkits], [*candidates, *(t.nvcc for t in toolkits)]

    # Kept per environment until a candidate nvcc changes, appears or goes away (env_facts).
    found = [_toolkit_from(fields) for fields in remembered("cuda-toolkits", [*candidates, wanted], ask)]
    for toolkit in found:
        if wanted is None or toolkit.version == wanted:
            return toolkit
    if found:
        return found[0]
    where = (
        "CUDA_HOME, PATH"
        + (", NVIDIA's PyPI packages" if purelib is not None else "")
        + f" or {DEFAULT_CUDA_HOME}"
    )
    raise BuildError(f"no CUDA compiler: nvcc not found in {where} (set CUDA_HOME)")


def _answering_toolkits(candidates: list[Path], wanted: tuple[int, int] | None) -> list[CudaToolkit]:
    """The candidates that answer ``--version``, in order, up to the first of CUDA ``wanted``."""
    found: list[CudaToolkit] = []
    for nvcc in candidates:
        if nvcc.is_file():
            try:
                out = subprocess.run(
                    [str(nvcc), "--version"], capture_output=True, text=True, check=False
                ).stdout
            except OSError:  # not executable, or a broken interpreter line: try the next candidate
                continue
            match = _NVCC_RELEASE.search(out)
            if match:
                real = _real_nvcc(nvcc)
                version = (int(match[1]), int(match[2]))
                found.append(CudaToolkit(real, version, real.parent.parent, out.strip().splitlines()[-1]))
                if wanted is None or version == wanted:
                    break
    return found


def _toolkit_fields(toolkit: CudaToolkit) -> list[Any]:
    return [str(toolkit.nvcc), list(toolkit.version), str(toolkit.root), toolkit.description]


def _toolkit_from(fields: list[Any]) -> CudaToolkit:
    nvcc, version, root, description = fields
    return CudaToolkit(Path(nvcc), (int(version[0]), int(version[1])), Path(root), str(description))


def toolkit_for(interpreter: BuildInterpreter) -> CudaToolkit:
    """nvcc of the interpreter's CUDA version: the system's, or one its environment brought from PyPI."""
    backend, version = interpreter.backend()
    if interpreter.target is not None:  # a cross build: the target environment's toolkit (docs/cross.md)
        from kernel_builder.pipeline.environment.target_env import cuda_tree

        tree = cuda_tree(interpreter.purelib)
        if tree is None:
            raise BuildError(
                f"the target environment {interpreter.purelib} has no CUDA toolkit for {interpreter.target}: "
                "make it again with --refresh-envs"
            )
        found = _answering_toolkits([tree / "bin" / "nvcc"], version)
        if not found:
            raise BuildError(f"{tree / 'bin' / 'nvcc'} does not answer --version")
        return dataclasses.replace(found[0], nvcc=tree / "bin" / "nvcc", root=tree)
    return cuda_toolkit(interpreter.purelib, version if backends.get(backend).needs_nvcc else None)


def check_cuda_match(toolkit: CudaToolkit, torch_cuda: str | None) -> None:
    """nvcc's major.minor must equal ``torch.version.cuda``; checked before configuring."""
    match = re.match(r"(\d+)(?:\.(\d+))?", torch_cuda or "")
    wanted = (int(match[1]), int(match[2] or 0)) if match else None
    if wanted != toolkit.version:
        have = f"{toolkit.version[0]}.{toolkit.version[1]}"
        raise BuildError(
            f"nvcc {toolkit.nvcc} is CUDA {have}, but torch was built with CUDA {torch_cuda}: "
            f"install CUDA {torch_cuda} and set CUDA_HOME to it, or use a torch built for CUDA {have}"
        )


def fingerprint(*tools: Tool | CudaToolkit) -> str:
    text = "\n".join(
        f"{t.nvcc if isinstance(t, CudaToolkit) else t.path}={getattr(t, 'description', None) or getattr(t, 'version', '')}"
        for t in tools
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]
