"""Target environments: another system's Torch, unpacked for a cross build and never imported here (docs/cross.md).

A cross build (aarch64-linux variants on an x86_64-linux host) compiles with Debian's cross compiler against the
target's Torch: its headers, its CMake files and its libraries to link. That Torch is the target's PyPI wheel,
fetched with ``pip download --platform`` and unpacked — only the parts a build reads — into the user cache next to
the isolated environments (``<cache>/targets/<key>/``), shared by every project and reused until
``--refresh-envs``. Nothing in it is imported by this host's interpreter: what the build needs to know about
that Torch (version, C++11 ABI, nvcc flags) is read from its files (``interpreter.details_from_files``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kernel_builder.common.file_lock import exclusive
from kernel_builder.errors import BuildError
from kernel_builder.formats.matrix import MatrixEntry
from kernel_builder.pipeline.environment.env_facts import cache_root
from kernel_builder.pipeline.environment.interpreter import BuildInterpreter, read_version_py, torch_builds

MARKER = "kernel-builder-target.json"
#: The wheel platform tag of each system a target environment can be made for (the manylinux policy too).
PLATFORMS = {"aarch64-linux": "manylinux_2_28_aarch64", "x86_64-linux": "manylinux_2_28_x86_64"}


def platform_tags(system: str) -> tuple[str, ...]:
    """Every manylinux platform tag a glibc 2.28 system of ``system``'s CPU installs, best first.

    pip matches ``--platform`` tags exactly: given only ``manylinux_2_28_aarch64`` it refuses NVIDIA's CUDA
    library wheels (tagged ``manylinux2014_aarch64.manylinux_2_17_aarch64`` or ``manylinux_2_27_aarch64``), which
    the target's CUDA Torch depends on. So every tag from the policy's glibc 2.28 down to 2.17
    (``manylinux2014``) is passed, as pip on such a system would accept them."""
    cpu = system.split("-", 1)[0]
    tags = [f"manylinux_2_{minor}_{cpu}" for minor in range(28, 16, -1)]
    return (*tags, f"manylinux2014_{cpu}")


def platform_argv(system: str) -> list[str]:
    """``--platform`` options for pip naming every tag of :func:`platform_tags`."""
    return [arg for tag in platform_tags(system) for arg in ("--platform", tag)]


#: The cross compiler of each target system, as Debian's ``g++-<triple>`` packages name it.
CROSS_COMPILERS = {"aarch64-linux": "aarch64-linux-gnu-g++"}
CROSS_PACKAGES = {"aarch64-linux": "g++-aarch64-linux-gnu"}
#: The directory of each target system's files in a CUDA toolkit (``targets/<name>``), as nvcc's
#: ``--target-directory`` names it.
CUDA_TARGET_DIRS = {"aarch64-linux": "sbsa-linux"}
#: NVIDIA's wheels with a CUDA toolkit's target files: runtime headers and libcudart, the ``crt/`` headers, CCCL.
CUDA_TARGET_WHEELS = ("nvidia-cuda-runtime", "nvidia-cuda-crt", "nvidia-cuda-cccl")
#: The parts of a Torch wheel a build reads: headers, CMake files, libraries and the files facts come from.
_KEPT = ("torch/include/", "torch/share/", "torch/lib/", "torch/version.py", "torch/utils/cpp_extension.py")


def link_cudart(lib: Path) -> None:
    """Give a CUDA toolkit's ``lib`` the ``libcudart.so`` link a system toolkit has, where it has only the
    versioned library: NVIDIA's runtime wheels ship ``libcudart.so.13`` alone, and the CMake modules Torch's
    config uses (FindCUDA, its FindCUDAToolkit) look for ``libcudart.so`` and stop without it ("Your installed
    Caffe2 version uses CUDA but I cannot find the CUDA libraries")."""
    link = lib / "libcudart.so"
    if link.exists() or link.is_symlink():
        return
    for library in sorted(lib.glob("libcudart.so.[0-9]*")):
        link.symlink_to(library.name)
        return


@dataclass(frozen=True)
class TargetSpec:
    torch_pin: str
    compute: str  # the variant's: "cpu", "cu130", ...
    system: str  # "aarch64-linux"
    index_url: str | None = None

    @classmethod
    def for_entry(cls, entry: MatrixEntry, system: str) -> TargetSpec:
        if entry.torch_pin is None:
            raise BuildError(
                f"matrix entry torch {entry.torch_str} {entry.compute} has no torch-pin to fetch"
            )
        return cls(entry.torch_pin, entry.compute, system, entry.index_url)

    @property
    def platform(self) -> str:
        return PLATFORMS[self.system]

    @property
    def key(self) -> str:
        return (
            f"torch{self.torch_pin}-{self.compute}-{self.system}-py{sys.version_info[0]}{sys.version_info[1]}"
        )


def target_dir(spec: TargetSpec) -> Path:
    return cache_root() / "targets" / spec.key


def target_ready(spec: TargetSpec) -> bool:
    """Whether ``spec``'s target environment exists complete (its marker is written last), with its CUDA tree
    for a cuda variant (one made before this kernel-builder made them has none: it is made again)."""
    root = target_dir(spec)
    if spec.compute.startswith("cu") and cuda_tree(root) is None:
        return False
    return (root / MARKER).is_file()


def pip_download_argv(system: str, requirement: str, dest: Path, *, deps: bool = False) -> list[str]:
    """``pip download`` of ``requirement``'s wheels for another system, for this interpreter's Python version."""
    argv = [
        sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
        "--only-binary=:all:", *platform_argv(system), "--implementation", "cp",
        "--python-version", f"{sys.version_info[0]}.{sys.version_info[1]}", "--dest", str(dest), requirement,
    ]  # fmt: skip
    return argv if deps else [*argv, "--no-deps"]


def ensure_target(
    spec: TargetSpec,
    *,
    refresh: bool = False,
    requirement: str | None = None,
    log: Callable[[str], None] = lambda _: None,
    host_nvcc: Path | None = None,
) -> Path:
    """The directory holding the target's ``torch/`` (unpacked as needed); ``requirement`` is the exact wheel
    to fetch (``provision.resolve_torch``'s choice for the target), else ``torch==<pin>``. ``host_nvcc``: this
    host's nvcc of the variant's CUDA version, for a cuda variant's CUDA tree (:func:`_cuda_tree`)."""
    root = target_dir(spec)
    with exclusive(root.parent / f".{spec.key}.lock"):
        if target_ready(spec) and not refresh:
            return root
        tmp = root.with_name(f".{spec.key}.{os.getpid()}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)
        wanted = requirement or f"torch=={spec.torch_pin}"
        log(f"fetching torch {spec.torch_pin} for {spec.system} ({spec.platform}) into {root}")
        argv = pip_download_argv(spec.system, wanted, tmp / "wheels")
        if spec.index_url:
            argv += ["--extra-index-url", spec.index_url]
        try:
            result = subprocess.run(argv, capture_output=True, text=True, check=False)
            if result.returncode != 0:
                errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR")]
                detail = errors[-1] if errors else result.stderr.strip()[-400:]
                raise BuildError(f"cannot fetch torch {spec.torch_pin} for {spec.platform}: {detail}")
            wheels = sorted((tmp / "wheels").glob("torch-*.whl"))
            if len(wheels) != 1:
                raise BuildError(
                    f"pip download of {wanted} for {spec.platform} gave {len(wheels)} torch wheels"
                )
            with zipfile.ZipFile(wheels[0]) as archive:
                for member in archive.infolist():
                    if member.filename.startswith(_KEPT) and not member.is_dir():
                        archive.extract(member, tmp / "site")
            for library in (tmp / "site" / "torch" / "lib").glob("*.so*"):
                library.chmod(0o755)
            cuda = read_version_py(tmp / "site" / "torch").get("cuda")
            if spec.compute.startswith("cu") and cuda:
                if host_nvcc is None:
                    raise BuildError(
                        f"cross-compiling CUDA {cuda} for {spec.system} needs this host's nvcc {cuda}"
                    )
                log(
                    f"fetching CUDA {cuda}'s {spec.system} runtime and headers ({', '.join(CUDA_TARGET_WHEELS)})"
                )
                _cuda_tree(spec, cuda, tmp / "cuda-wheels", tmp / "site" / "cuda", host_nvcc)
            os.rename(tmp / "site", root)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        (root / MARKER).write_text(
            json.dumps({"torch": spec.torch_pin, "system": spec.system, "wheel": wheels[0].name}, indent=2)
            + "\n"
        )
        return root


def _cuda_tree(spec: TargetSpec, cuda: str, wheels: Path, tree: Path, host_nvcc: Path) -> None:
    """A CUDA toolkit for cross-compiling to ``spec.system``: this host's nvcc (``host_nvcc``, of CUDA ``cuda``)
    and ``nvvm/`` with the target's headers and runtime libraries, from NVIDIA's wheels, as
    ``targets/<dir>/{include,lib}`` (docs/cross.md).

    nvcc finds its toolkit from where its binary really is, so it and its ``nvcc.profile`` are copied (the rest of
    ``bin/`` and ``nvvm/`` are links); ``fatbinary_section.h``, which nvcc's generated code includes, comes from the
    host toolkit (nvcc's own wheel carries it, not the runtime's)."""
    major, minor = (int(part) for part in cuda.split(".")[:2])
    host_root = host_nvcc.parent.parent
    requirements = [f"{name}=={major}.{minor}.*" for name in CUDA_TARGET_WHEELS]
    argv = pip_download_argv(spec.system, requirements[0], wheels)
    argv[-2:-1] = requirements  # the --no-deps stays last
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR")]
        detail = errors[-1] if errors else result.stderr.strip()[-400:]
        raise BuildError(f"cannot fetch CUDA {cuda} for {spec.platform}: {detail}")
    target = tree / "targets" / CUDA_TARGET_DIRS[spec.system]
    for wheel in sorted(wheels.glob("*.whl")):
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.infolist():
                parts = member.filename.split("/")
                # nvidia/cu13/{include,lib}/... (CUDA 13) or nvidia/cuda_runtime/{include,lib}/...
                if (
                    len(parts) > 3
                    and parts[0] == "nvidia"
                    and parts[2] in ("include", "lib")
                    and not member.is_dir()
                ):
                    if ".." in parts or parts[3] == "cmake":
                        continue
                    out = target.joinpath(*parts[2:])
                    out.parent.mkdir(parents=True, exist_ok=True)
                    with archive.open(member) as source, out.open("wb") as sink:
                        shutil.copyfileobj(source, sink)
    link_cudart(target / "lib")
    section = host_root / "targets" / "x86_64-linux" / "include" / "fatbinary_section.h"
    if not section.is_file():
        section = host_root / "include" / "fatbinary_section.h"
    if section.is_file() and not (target / "include" / section.name).exists():
        shutil.copy2(section, target / "include" / section.name)
    (tree / "bin").mkdir(parents=True)
    for tool in host_nvcc.parent.iterdir():
        if tool.name in ("nvcc", "nvcc.profile"):
            shutil.copy2(tool, tree / "bin" / tool.name)
        else:
            (tree / "bin" / tool.name).symlink_to(tool.resolve())
    (tree / "nvvm").symlink_to((host_root / "nvvm").resolve())
    profile = (tree / "bin" / "nvcc.profile").read_text(encoding="utf-8", errors="replace")
    if "_TARGET_DIR_" not in profile:
        # NVIDIA's PyPI nvcc (a toolkit of one system) reads its headers and libraries from $(TOP)/include and
        # $(TOP)/lib, not from the target's directory as a system toolkit's profile does: point them there.
        for part in ("include", "lib"):
            (tree / part).symlink_to(Path("targets") / CUDA_TARGET_DIRS[spec.system] / part)


def cuda_tree(root: Path) -> Path | None:
    """The cross CUDA toolkit of a target environment (``<root>/cuda``), if it has one."""
    tree = root / "cuda"
    return tree if (tree / "bin" / "nvcc").is_file() else None


def wheel_of(root: Path) -> str | None:
    """The file name of the wheel a target environment was unpacked from (for the variant's provenance)."""
    try:
        return str(json.loads((root / MARKER).read_text(encoding="utf-8"))["wheel"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def target_interpreter(root: Path, system: str) -> BuildInterpreter:
    """The build's view of a target environment: its Torch, with this interpreter's Python headers (the limited
    API the extension is compiled against is the same on every 64-bit Linux)."""
    torch_dir = root / "torch"
    values = read_version_py(torch_dir)
    paths = sysconfig.get_paths()
    return BuildInterpreter(
        python=Path(sys.executable),
        torch_dir=torch_dir,
        torch_version=values.get("__version__") or "0.0",
        torch_builds=torch_builds(values),
        python_version=(sys.version_info[0], sys.version_info[1]),
        python_include=Path(paths["include"]),
        purelib=root,
        target=system,
    )


def cross_compiler(system: str) -> Path | None:
    """The C++ cross compiler for ``system`` on ``PATH`` (``$KERNEL_BUILDER_CROSS_CXX`` overrides), or None."""
    name = os.environ.get("KERNEL_BUILDER_CROSS_CXX") or CROSS_COMPILERS.get(system)
    found = shutil.which(name) if name else None
    return Path(found) if found else None


def cross_compiler_problem(system: str) -> str | None:
    """Why this host cannot cross-compile C++ for ``system``, or None."""
    if system not in CROSS_COMPILERS:
        return f"this kernel-builder cannot cross-compile for {system}"
    if cross_compiler(system) is None:
        return (
            f"cross-compiling for {system} needs the C++ cross compiler {CROSS_COMPILERS[system]}, which is not on "
            f"PATH: install it (Debian/Ubuntu: apt-get install {CROSS_PACKAGES[system]}) or set "
            "KERNEL_BUILDER_CROSS_CXX"
        )
    return None
