"""Inspecting what a build produced: the binary tools (nm, readelf, cuobjdump; nvcc and the include
directories for compiling a source directly), file listings and snapshots of output directories, CMake's
compile database and cache, and the checks every built extension must pass.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest
from build_runs import STATE_DIR, Built, metadata

# ---------------------------------------------------------------------------------------------------------
# Tools


def nvcc() -> Path:
    for candidate in (
        Path(os.environ["CUDA_HOME"]) / "bin" / "nvcc" if os.environ.get("CUDA_HOME") else None,
        Path(shutil.which("nvcc") or "/nonexistent"),
        Path("/usr/local/cuda/bin/nvcc"),
    ):
        if candidate is not None and candidate.exists():
            return candidate
    pytest.skip("no nvcc found (CUDA_HOME, PATH, /usr/local/cuda)")


def cuobjdump(python: Path) -> Path:
    """The ``cuobjdump`` shipped with the CUDA interpreter's ``triton`` (docs/layout.md)."""
    prefix = python.parent.parent
    for found in sorted(prefix.glob("lib/python3*/site-packages/triton/backends/nvidia/bin/cuobjdump")):
        return found
    system = shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump"
    if Path(system).exists():
        return Path(system)
    pytest.skip(f"no cuobjdump (triton's copy under {prefix}, or CUDA's)")


def tool_output(argv: Sequence[str | os.PathLike[str]]) -> str:
    result = subprocess.run([str(a) for a in argv], capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"{argv[0]} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def dynamic_symbols(so: Path) -> str:
    """``nm -D`` of a shared object."""
    return tool_output(["nm", "-D", so])


def dynamic_section(so: Path) -> str:
    return tool_output(["readelf", "-dW", so])


def symbol_table(so: Path) -> str:
    return tool_output(["readelf", "-sW", so])


def python_includes(python: Path) -> Path:
    out = tool_output([python, "-c", "import sysconfig; print(sysconfig.get_paths()['include'])"])
    return Path(out.strip())


def torch_includes(python: Path) -> list[Path]:
    out = tool_output(
        [
            python,
            "-c",
            "import importlib.util as u; print(u.find_spec('torch').submodule_search_locations[0])",
        ]
    )
    include = Path(out.strip()) / "include"
    return [include, include / "torch" / "csrc" / "api" / "include"]


# ---------------------------------------------------------------------------------------------------------
# Output directories


def variant_files(variant_dir: Path) -> list[str]:
    """Every entry under a variant directory (directories end in ``/``), sorted."""
    return sorted(
        p.relative_to(variant_dir).as_posix() + ("/" if p.is_dir() else "") for p in variant_dir.rglob("*")
    )


def snapshot(directory: Path) -> dict[str, tuple[str, int]]:
    """(sha256, mtime_ns) of every file under ``directory``, and the mtime of every directory."""
    result: dict[str, tuple[str, int]] = {".": ("dir", directory.stat().st_mtime_ns)}
    for path in sorted(directory.rglob("*")):
        rel = path.relative_to(directory).as_posix()
        if path.is_dir():
            result[rel] = ("dir", path.stat().st_mtime_ns)
        else:
            result[rel] = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
    return result


def contents(directory: Path) -> dict[str, str]:
    """sha256 of every file under ``directory`` (bytes only)."""
    return {k: v[0] for k, v in snapshot(directory).items() if v[0] != "dir"}


def extension(variant_dir: Path) -> Path:
    (so,) = variant_dir.glob("*.so")
    return so


def compile_commands(built: Built) -> dict[str, str]:
    """The compile command of each of the kernel's compiled files (relative to the kernel root), from CMake's
    database; the generated sources of the build's own (under ``.kernel-builder/``, e.g. the manylinux
    compatibility source) are left out."""
    entries = json.loads((built.cmake_build / "compile_commands.json").read_text(encoding="utf-8"))
    commands = {Path(e["file"]).relative_to(built.root).as_posix(): e["command"] for e in entries}
    return {rel: command for rel, command in commands.items() if not rel.startswith(f"{STATE_DIR}/")}


def cmake_cache_value(cmake_build: Path, key: str) -> str:
    for line in (cmake_build / "CMakeCache.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith(f"{key}:"):
            return line.split("=", 1)[1]
    raise AssertionError(f"{key} not in {cmake_build / 'CMakeCache.txt'}")


def object_files(cmake_build: Path, target: str) -> list[Path]:
    """The object files CMake compiled for one object library: ``kb_binding`` (the binding) or
    ``kb_kernel_<section>`` (a kernel section)."""
    return sorted((cmake_build / "CMakeFiles" / f"{target}.dir").rglob("*.o"))


def complete_variants(build_dir: Path) -> list[str]:
    """The entries of ``build/``, each checked complete: ``CARD.md``, or a variant whose ``metadata.json`` digest
    matches its files. Fails on anything else (a partial variant, a hidden temporary, a stray file)."""
    from kernel_builder.formats.metadata import digest_files

    names = []
    for entry in sorted(build_dir.iterdir()) if build_dir.exists() else []:
        assert not entry.name.startswith("."), f"hidden entry in build/: {entry.name}"
        if entry.name == "CARD.md":
            assert entry.is_file()
            names.append(entry.name)
            continue
        assert entry.is_dir(), f"not a variant directory: {entry}"
        data = metadata(entry)
        digest = data["digest"]
        assert isinstance(digest, dict), entry
        assert digest["files"] == digest_files(entry), f"{entry} is incomplete"
        names.append(entry.name)
    return names


# ---------------------------------------------------------------------------------------------------------
# The extension itself


#: The DT_NEEDED entries an extension may have (docs/layout.md): Torch's libraries, the CUDA runtime, glibc,
#: libstdc++ and libgcc_s.
ALLOWED_NEEDED = re.compile(
    r"lib(c10|c10_cuda|torch|torch_cpu|torch_cuda)\.so|libcudart\.so\.\d+|"
    r"lib(c|m|dl|pthread|rt)\.so\.\d+|libstdc\+\+\.so\.6|libgcc_s\.so\.1"
)


def needed(so: Path) -> list[str]:
    """The DT_NEEDED entries of a shared object."""
    return [
        line.split("[", 1)[1].rstrip("]") for line in dynamic_section(so).splitlines() if "(NEEDED)" in line
    ]


def undefined_symbols(so: Path) -> set[str]:
    """Names (without ``@VERSION``) of the dynamic symbols ``so`` imports."""
    out = tool_output(["nm", "-D", "--undefined-only", so])
    return {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}


def assert_clean_extension(so: Path) -> None:
    """What every built extension must be (docs/layout.md): abi3-named, linked only against the allowed
    libraries (never libpython or libtorch_python), without RPATH/RUNPATH, importing only ``PyModule_Create2``
    from Python."""
    assert so.name.endswith(".abi3.so")
    entries = needed(so)
    assert not [n for n in entries if "python" in n], entries
    assert [n for n in entries if not ALLOWED_NEEDED.fullmatch(n)] == []
    assert "libtorch_python.so" not in entries and "libtorch.so" in entries
    dynamic = dynamic_section(so)
    assert "(RUNPATH)" not in dynamic and "(RPATH)" not in dynamic
    assert {s for s in undefined_symbols(so) if s.startswith(("Py", "_Py"))} == {"PyModule_Create2"}


def assert_one_ops_name(built: Built, name: str) -> None:
    """Build-output, on disk: ``name`` is the .so's name, its ``PyInit_`` symbol and _ops.py's."""
    assert built.ops_name == name
    assert [p.name for p in built.variant_dir.glob("*.so")] == [f"{name}.abi3.so"]
    init_symbols = [
        line.split()[-1]
        for line in dynamic_symbols(extension(built.variant_dir)).splitlines()
        if "PyInit_" in line
    ]
    assert init_symbols == [f"PyInit_{name}"]
    ops_py = (built.variant_dir / "_ops.py").read_text(encoding="utf-8")
    assert f"from . import {name}" in ops_py
    assert f"ops = torch.ops.{name}\n" in ops_py
    assert f'return "{name}::" + op_name' in ops_py
