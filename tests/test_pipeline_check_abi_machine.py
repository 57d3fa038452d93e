"""check-abi and ELF machines (docs/cross.md): an extension is judged under the manylinux_2_28 policy of its own
ELF machine (``manylinux_2_28_aarch64`` for an aarch64 file, whichever host checks it), and one whose machine is
not the CPU its variant's name says is a ``machine`` violation. Real ELF files: this host's zlib and, where
Debian's aarch64 cross toolchain is installed, its aarch64 libm."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kernel_builder.pipeline.abi_policy import manylinux_policy
from kernel_builder.pipeline.check.abi import check_directories, check_library, read_elf, variant_cpu

X86_64_LIBRARY = Path("/usr/lib/x86_64-linux-gnu/libz.so.1")
AARCH64_LIBRARY = Path("/usr/aarch64-linux-gnu/lib/libm.so.6")


def variant_with(tmp_path: Path, name: str, library: Path) -> Path:
    if not library.is_file():
        pytest.skip(f"{library} is not on this machine")
    variant = tmp_path / "build" / name
    variant.mkdir(parents=True)
    (variant / "metadata.json").write_text(json.dumps({"name": "k", "id": "_k"}))
    shutil.copy(library, variant / "_k.abi3.so")
    return variant


def test_the_variant_name_gives_the_cpu() -> None:
    assert variant_cpu("torch213-cxx11-cpu-aarch64-linux") == "aarch64"
    assert variant_cpu("torch-stable-abi211-cu130-x86_64-linux") == "x86_64"
    assert variant_cpu("torch-cuda") is None


def test_an_x86_64_file_in_an_aarch64_variant_is_a_machine_violation(tmp_path: Path) -> None:
    variant = variant_with(tmp_path, "torch213-cxx11-cpu-aarch64-linux", X86_64_LIBRARY)
    report = check_directories([variant])
    machine = [v for v in report.violations if v.kind == "machine"]
    assert [v.detail for v in machine] == ["the ELF file is for x86_64, the variant for aarch64"]


def test_an_x86_64_file_in_an_x86_64_variant_has_no_machine_violation(tmp_path: Path) -> None:
    variant = variant_with(tmp_path, "torch213-cxx11-cpu-x86_64-linux", X86_64_LIBRARY)
    assert not [v for v in check_directories([variant]).violations if v.kind == "machine"]


def test_an_aarch64_file_is_judged_under_the_aarch64_policy(tmp_path: Path) -> None:
    if not AARCH64_LIBRARY.is_file():
        pytest.skip(f"{AARCH64_LIBRARY} is not here (apt-get install g++-aarch64-linux-gnu)")
    assert read_elf(AARCH64_LIBRARY).machine == "aarch64"
    policy = manylinux_policy("aarch64")
    assert policy is not None and policy.name == "manylinux_2_28_aarch64"
    # aarch64's glibc starts at GLIBC_2.17 (x86_64's at 2.2.5): the policy of the file's machine knows that.
    assert "2.17" in policy.symbol_versions["GLIBC"] and "2.2.5" not in policy.symbol_versions["GLIBC"]
    assert any(version == "GLIBC_2.17" for _, version in read_elf(AARCH64_LIBRARY).undefined)
    findings = check_library(AARCH64_LIBRARY, cpu="aarch64")
    assert not [v for v in findings if v.kind in ("machine", "symbol-version")], findings
