"""Target environments (docs/cross.md): another system's Torch wheel fetched with ``pip download --platform`` and
unpacked — only what a build reads — never imported; its facts read from its files."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest
import torch

from kernel_builder.pipeline.environment import target_env
from kernel_builder.pipeline.environment.interpreter import details_from_files, torch_details
from kernel_builder.pipeline.environment.target_env import (
    TargetSpec,
    ensure_target,
    target_interpreter,
    wheel_of,
)

PY = f"cp{sys.version_info[0]}{sys.version_info[1]}"
VERSION_PY = (
    "__version__ = '2.13.0+cu130'\ncuda: Optional[str] = '13.0'\nhip: Optional[str] = None\nxpu = None\n"
)
CPP_EXTENSION = (
    "COMMON_NVCC_FLAGS = [\n    '-D__CUDA_NO_HALF_OPERATORS__',\n    '--expt-relaxed-constexpr'\n]\n"
)
#: A real C++11-ABI libc10 (the CPU test Torch's) for the ABI reading.
LIBC10 = Path(torch.__file__).parent / "lib" / "libc10.so"


@pytest.fixture
def wheels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A find-links directory with an aarch64 ``torch`` wheel, as the only source pip reads; the cache in tmp."""
    links = tmp_path / "links"
    links.mkdir()
    wheel = links / f"torch-2.13.0-{PY}-{PY}-manylinux_2_28_aarch64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("torch/version.py", VERSION_PY)
        archive.writestr("torch/utils/cpp_extension.py", CPP_EXTENSION)
        archive.writestr("torch/include/torch/extension.h", "#pragma once\n")
        archive.writestr("torch/share/cmake/Torch/TorchConfig.cmake", "# config\n")
        archive.write(LIBC10, "torch/lib/libc10.so")
        archive.writestr("torch/_C/__init__.pyi", "")  # not read by builds: not unpacked
        archive.writestr(
            "torch-2.13.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: torch\nVersion: 2.13.0\n"
        )
        archive.writestr(
            "torch-2.13.0.dist-info/WHEEL",
            f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {PY}-{PY}-manylinux_2_28_aarch64\n",
        )
        archive.writestr("torch-2.13.0.dist-info/RECORD", "")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    monkeypatch.setenv("KERNEL_BUILDER_CACHE", str(tmp_path / "cache"))
    return links


def test_the_spec_names_system_and_python() -> None:
    spec = TargetSpec("2.13.0", "cpu", "aarch64-linux")
    assert spec.platform == "manylinux_2_28_aarch64"
    assert spec.key == f"torch2.13.0-cpu-aarch64-linux-py{sys.version_info[0]}{sys.version_info[1]}"


def test_a_target_environment_holds_what_builds_read(wheels: Path) -> None:
    lines: list[str] = []
    root = ensure_target(TargetSpec("2.13.0", "cpu", "aarch64-linux"), log=lines.append)
    assert root == target_env.target_dir(TargetSpec("2.13.0", "cpu", "aarch64-linux"))
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert files == [
        "kernel-builder-target.json",
        "torch/include/torch/extension.h",
        "torch/lib/libc10.so",
        "torch/share/cmake/Torch/TorchConfig.cmake",
        "torch/utils/cpp_extension.py",
        "torch/version.py",
    ]
    assert wheel_of(root) == f"torch-2.13.0-{PY}-{PY}-manylinux_2_28_aarch64.whl"
    assert lines == [f"fetching torch 2.13.0 for aarch64-linux (manylinux_2_28_aarch64) into {root}"]
    (next(wheels.iterdir())).unlink()  # made once: the second call fetches nothing
    assert ensure_target(TargetSpec("2.13.0", "cpu", "aarch64-linux")) == root


def test_its_interpreter_is_the_targets_and_its_facts_come_from_files(wheels: Path) -> None:
    root = ensure_target(TargetSpec("2.13.0", "cpu", "aarch64-linux"))
    interpreter = target_interpreter(root, "aarch64-linux")
    assert interpreter.target == "aarch64-linux" and interpreter.system == "aarch64-linux"
    assert interpreter.torch_version == "2.13.0+cu130" and interpreter.torch_builds == (("cuda", "13.0"),)
    assert interpreter.python == Path(sys.executable)
    details = torch_details(interpreter)  # nothing imported: an import of this stand-in would fail
    assert details == details_from_files(root / "torch")
    assert details.version == "2.13.0+cu130"
    assert details.cxx11_abi is True
    assert details.nvcc_flags == ("-D__CUDA_NO_HALF_OPERATORS__", "--expt-relaxed-constexpr")
    assert details.cmake_prefix_path == str(root / "torch" / "share" / "cmake")


def test_a_wheel_pip_cannot_find_fails_with_pips_error(wheels: Path) -> None:
    from kernel_builder.errors import BuildError

    with pytest.raises(BuildError) as info:
        ensure_target(TargetSpec("2.99.0", "cpu", "aarch64-linux"))
    assert str(info.value).startswith("cannot fetch torch 2.99.0 for manylinux_2_28_aarch64: ERROR: ")
    assert not target_env.target_dir(TargetSpec("2.99.0", "cpu", "aarch64-linux")).exists()


# --- a cuda variant's CUDA tree: the host's nvcc, the target's files -----------------------------------------

PYPI_PROFILE = 'TOP = $(_HERE_)/..\nINCLUDES += "-I$(TOP)/include" $(_SPACE_)\nLIBRARIES =+ "-L$(TOP)/lib"\n'
SYSTEM_PROFILE = (
    'TOP = $(_HERE_)/..\nINCLUDES += "-I$(TOP)/$(_TARGET_DIR_)/include" $(_SPACE_)\n'
    'LIBRARIES =+ "-L$(TOP)/$(_TARGET_DIR_)/lib$(_TARGET_SIZE_)"\n'
)


def nvidia_wheel(links: Path, name: str, files: dict[str, str]) -> None:
    """A stand-in aarch64 wheel of NVIDIA's CUDA 13.0 ``name``, with ``files`` under ``nvidia/cu13/``."""
    dist = name.replace("-", "_")
    with zipfile.ZipFile(links / f"{dist}-13.0.96-py3-none-manylinux_2_28_aarch64.whl", "w") as archive:
        for path, text in files.items():
            archive.writestr(f"nvidia/cu13/{path}", text)
        archive.writestr(
            f"{dist}-13.0.96.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 13.0.96\n"
        )
        archive.writestr(
            f"{dist}-13.0.96.dist-info/WHEEL",
            "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: py3-none-manylinux_2_28_aarch64\n",
        )
        archive.writestr(f"{dist}-13.0.96.dist-info/RECORD", "")


@pytest.mark.slow  # two pip downloads
@pytest.mark.parametrize(
    ("profile", "linked"), [(PYPI_PROFILE, True), (SYSTEM_PROFILE, False)], ids=["pypi-nvcc", "system-nvcc"]
)
def test_the_cuda_tree_serves_either_kind_of_host_nvcc(
    wheels: Path, tmp_path: Path, profile: str, linked: bool
) -> None:
    """A system toolkit's nvcc reads the target's files from ``targets/<dir>``; NVIDIA's PyPI nvcc (a cross build
    of a CUDA release the system lacks) from ``include`` and ``lib``: the tree points those at the target's."""
    nvidia_wheel(wheels, "nvidia-cuda-runtime", {"include/cuda_runtime.h": "", "lib/libcudart.so.13": ""})
    nvidia_wheel(wheels, "nvidia-cuda-crt", {"include/crt/host_config.h": ""})
    nvidia_wheel(wheels, "nvidia-cuda-cccl", {"include/cccl/cuda/std/version": ""})
    host = tmp_path / "host-toolkit"
    (host / "bin").mkdir(parents=True)
    (host / "nvvm" / "bin").mkdir(parents=True)
    (host / "include").mkdir()
    (host / "include" / "fatbinary_section.h").write_text("// host\n")
    (host / "bin" / "nvcc").write_text("#!/bin/sh\n")
    (host / "bin" / "nvcc.profile").write_text(profile)
    (host / "bin" / "ptxas").write_text("#!/bin/sh\n")
    root = ensure_target(TargetSpec("2.13.0", "cu130", "aarch64-linux"), host_nvcc=host / "bin" / "nvcc")
    tree = target_env.cuda_tree(root)
    assert tree is not None
    target = tree / "targets" / "sbsa-linux"
    assert (target / "include" / "cuda_runtime.h").is_file() and (
        target / "include" / "fatbinary_section.h"
    ).is_file()
    assert (target / "lib" / "libcudart.so").resolve() == target / "lib" / "libcudart.so.13"
    assert (tree / "bin" / "ptxas").resolve() == host / "bin" / "ptxas"
    if linked:
        assert (tree / "include").resolve() == target / "include" and (
            tree / "lib"
        ).resolve() == target / "lib"
    else:
        assert not (tree / "include").exists() and not (tree / "lib").exists()
