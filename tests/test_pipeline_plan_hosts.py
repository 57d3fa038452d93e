"""Which systems a host builds, natively or cross (docs/cross.md), with the host faked at its one detection
function (``platform.machine()`` / ``platform.system()``, read by ``formats.runtime.host_cpu_os``): an
aarch64-linux host (GitHub's ubuntu-24.04-arm) builds aarch64-linux variants natively and no x86_64 ones; an
x86_64-linux host builds its own and cross-compiles aarch64-linux cpu variants (with the cross compiler);
no host cross-compiles cuda."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
from stage_fixtures import CU130_213, fake_host, fake_interpreter, load

from kernel_builder.pipeline.environment import target_env
from kernel_builder.pipeline.plan.candidates import aot_candidates
from kernel_builder.pipeline.plan.planner import buildable_host, cross_targets, plan_build

RELU = Path(__file__).resolve().parents[1] / "examples" / "relu"


@pytest.fixture
def cross_compiler(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A cross compiler on PATH, found by name (its behaviour is the cross-build tests' business)."""
    compiler = tmp_path / "bin" / "aarch64-linux-gnu-g++"
    compiler.parent.mkdir()
    compiler.write_text("#!/bin/sh\nexit 1\n")
    compiler.chmod(0o755)
    monkeypatch.setenv("PATH", f"{compiler.parent}:/usr/bin:/bin")
    monkeypatch.delenv("KERNEL_BUILDER_CROSS_CXX", raising=False)
    return compiler


def buildable() -> dict[str, tuple[bool, bool]]:
    """relu's buildable candidates: name -> (cuda?, cross?)."""
    return {c.name: (c.backend == "cuda", c.cross) for c in aot_candidates(load(RELU)) if c.buildable}


@pytest.mark.parametrize(
    ("machine", "system", "host", "cross"),
    [
        ("x86_64", "Linux", "x86_64-linux", ("aarch64-linux",)),
        ("aarch64", "Linux", "aarch64-linux", ()),
        ("arm64", "Linux", "aarch64-linux", ()),
        ("arm64", "Darwin", None, ()),
        ("ppc64le", "Linux", None, ()),
    ],
)
def test_the_host_decides_what_is_built_natively_and_cross(
    monkeypatch: pytest.MonkeyPatch, machine: str, system: str, host: str | None, cross: tuple[str, ...]
) -> None:
    fake_host(monkeypatch, machine, system)
    assert buildable_host() == host
    assert cross_targets() == cross


def test_an_aarch64_host_builds_aarch64_variants_natively(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_host(monkeypatch, "aarch64", "Linux")
    found = buildable()
    assert found  # cpu and cuda alike, none of them cross
    assert all(name.endswith("-aarch64-linux") and not cross for name, (_, cross) in found.items())
    assert any(cuda for cuda, _ in found.values())
    x86 = [c for c in aot_candidates(load(RELU)) if c.system == "x86_64-linux"]
    assert x86 and all(
        c.reason is not None and "cannot be built on this host (aarch64-linux)" in c.reason for c in x86
    )


def test_an_x86_64_host_cross_compiles_aarch64_cpu_and_cuda_variants(
    monkeypatch: pytest.MonkeyPatch, cross_compiler: Path
) -> None:
    fake_host(monkeypatch, "x86_64", "Linux")
    candidates = {c.name: c for c in aot_candidates(load(RELU))}
    cpu = candidates["torch213-cxx11-cpu-aarch64-linux"]
    assert cpu.buildable and cpu.cross
    cuda = candidates["torch213-cxx11-cu130-aarch64-linux"]  # its nvcc is checked when probing, as for native
    assert cuda.buildable and cuda.cross
    native = candidates["torch213-cxx11-cpu-x86_64-linux"]
    assert native.buildable and not native.cross


def test_without_the_cross_compiler_the_reason_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_host(monkeypatch, "x86_64", "Linux")
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("KERNEL_BUILDER_CROSS_CXX", raising=False)
    (cpu,) = [c for c in aot_candidates(load(RELU)) if c.name == "torch213-cxx11-cpu-aarch64-linux"]
    assert cpu.reason == (
        "cross-compiling for aarch64-linux needs the C++ cross compiler aarch64-linux-gnu-g++, which is not on "
        "PATH: install it (Debian/Ubuntu: apt-get install g++-aarch64-linux-gnu) or set KERNEL_BUILDER_CROSS_CXX"
    )


def test_kernel_builder_cross_cxx_names_another_cross_compiler(
    monkeypatch: pytest.MonkeyPatch, cross_compiler: Path
) -> None:
    other = cross_compiler.with_name("my-aarch64-g++")
    shutil.copy(cross_compiler, other)
    monkeypatch.setenv("KERNEL_BUILDER_CROSS_CXX", "my-aarch64-g++")
    assert target_env.cross_compiler("aarch64-linux") == other


def test_an_aarch64_host_plans_its_own_variant(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake_host(monkeypatch, "aarch64", "Linux")
    monkeypatch.chdir(tmp_path)
    plan = plan_build(load(RELU), CU130_213, "0123456789", backend="cuda")
    assert [v.name for v in plan.variants if v.aot] == ["torch213-cxx11-cu130-aarch64-linux"]


def test_a_target_interpreter_names_the_targets_variant(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_host(monkeypatch, "x86_64", "Linux")
    target = dataclasses.replace(fake_interpreter("2.13.0+cu130", cuda="13.0"), target="aarch64-linux")
    assert target.system == "aarch64-linux"
    assert target.variant().name == "torch213-cxx11-cu130-aarch64-linux"
    assert dataclasses.replace(target, cpu_view=True).variant().name == "torch213-cxx11-cpu-aarch64-linux"
    assert target.torch_build == "cu130"
