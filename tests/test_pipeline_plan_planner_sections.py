"""``--arch`` (native or a list) on a kernel with sections for other GPUs (:mod:`sectioned_projects`: sections for
9.0a, 10.0a and 8.0+, every op registered unconditionally). The selected GPUs narrow each section's capabilities;
a section that lists none of them is compiled for its lowest capability alone, so the extension links and loads,
and a note says so. Only when no section lists one is it an error, and that error names ``--arch``, not the CUDA
version, unless this CUDA version really builds none of the selected capabilities."""

from __future__ import annotations

from pathlib import Path

import pytest
from sectioned_projects import sectioned_project
from stage_fixtures import CU130_213, fake_host, fake_interpreter, load

from kernel_builder.common.diagnostics import Severity
from kernel_builder.errors import ConfigError
from kernel_builder.pipeline.environment.interpreter import BuildInterpreter
from kernel_builder.pipeline.plan.planner import BuildPlan, plan_build

CU126_213 = fake_interpreter("2.13.0+cu126", cuda="12.6")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sectioned_project(tmp_path_factory.mktemp("sections") / "kb-sections")


@pytest.fixture(autouse=True)
def _host(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    """An x86_64 Linux host; the project's directory is the working directory's `kb-sections`."""
    fake_host(monkeypatch)
    monkeypatch.chdir(root.parent)


def _plan(
    root: Path,
    *,
    native: tuple[str, ...] | None = None,
    explicit: tuple[str, ...] | None = None,
    interpreter: BuildInterpreter = CU130_213,
) -> BuildPlan:
    return plan_build(
        load(Path(root.name)), interpreter, "0123456789", native_targets=native, explicit_archs=explicit
    )


def _archs(build: BuildPlan) -> dict[str, tuple[str, ...]]:
    [variant] = build.variants
    return {c.name: c.archs for c in variant.components if c.name != "_torch_binding"}


def _line(root: Path, section: str) -> int:
    return (root / "build.toml").read_text(encoding="utf-8").splitlines().index(f"[kernel.{section}]") + 1


def test_native_on_a_hopper(root: Path) -> None:
    """The issue's case (an H200, CUDA 13.0): it exited 2 blaming CUDA 13.0, which builds 10.0a."""
    build = _plan(root, native=("9.0",))
    assert _archs(build) == {"add_sm90": ("9.0a",), "add_sm100": ("10.0a",), "add_generic": ("9.0",)}
    assert build.variants[0].archs == ("9.0", "9.0a", "10.0a")
    assert [
        (d.severity, d.line, d.message) for d in build.diagnostics if d.severity is not Severity.WARNING
    ] == [
        (
            Severity.NOTE,
            _line(root, "add_sm100"),
            "[kernel.add_sm100]: none of its capabilities (10.0a) is among --arch native (9.0): compiled for 10.0a "
            "only, its lowest, so the extension links and loads; its ops do not run on the selected GPUs",
        )
    ]
    assert build.variants[0].arch_selection == "native"


def test_explicit_9_0a(root: Path) -> None:
    build = _plan(root, explicit=("9.0a",))
    assert _archs(build) == {"add_sm90": ("9.0a",), "add_sm100": ("10.0a",), "add_generic": ("9.0",)}
    notes = [d.message for d in build.diagnostics if d.severity is Severity.NOTE]
    assert notes == [
        "[kernel.add_sm100]: none of its capabilities (10.0a) is among --arch 9.0a: compiled for 10.0a only, its "
        "lowest, so the extension links and loads; its ops do not run on the selected GPUs"
    ]
    assert not [d for d in build.diagnostics if d.severity is Severity.ERROR]


def test_native_on_a_blackwell_compiles_the_hopper_section_for_its_own_capability(root: Path) -> None:
    build = _plan(root, native=("10.0",))
    assert _archs(build) == {"add_sm90": ("9.0a",), "add_sm100": ("10.0a",), "add_generic": ("10.0",)}
    assert [d.message.split(":")[0] for d in build.diagnostics if d.severity is Severity.NOTE] == [
        "[kernel.add_sm90]"
    ]


def test_two_gpus_need_no_fallback(root: Path) -> None:
    build = _plan(root, explicit=("9.0a", "10.0a"))
    assert _archs(build) == {"add_sm90": ("9.0a",), "add_sm100": ("10.0a",), "add_generic": ("9.0", "10.0")}
    assert not [d for d in build.diagnostics if d.severity is Severity.NOTE]


def test_a_section_cuda_minver_drops_is_not_compiled_at_all(root: Path) -> None:
    """On CUDA 12.6, `cuda-minver = "12.8"` leaves the 10.0a section out of the variant, as without --arch."""
    build = _plan(root, native=("9.0",), interpreter=CU126_213)
    assert _archs(build) == {"add_sm90": ("9.0a",), "add_generic": ("9.0",)}
    assert not [d for d in build.diagnostics if d.severity is Severity.NOTE]


def test_a_gpu_no_section_lists_is_an_error_about_arch(root: Path) -> None:
    with pytest.raises(ConfigError) as info:
        _plan(root, explicit=("7.5",))
    assert str(info.value) == (
        f"kb-sections/build.toml:{_line(root, 'add_sm90')}: error: --arch 7.5: none of the kernel's sections lists a "
        "capability for these GPUs ([kernel.add_sm90]: 9.0a; [kernel.add_sm100]: 10.0a; [kernel.add_generic]: 8.0, "
        "8.9, 9.0, 10.0, 12.0)\n"
        "  hint: build on a GPU the kernel supports (or pass one of its capabilities), or leave --arch out to build "
        "its whole capability list"
    )
    assert "can be built with CUDA" not in str(info.value)
    assert info.value.exit_code == 2


def test_a_gpu_this_cuda_cannot_build_is_an_error_about_cuda(root: Path) -> None:
    """A V100 (7.0) with CUDA 13.0, whose lowest target is 7.5: here the CUDA version is the cause."""
    with pytest.raises(ConfigError) as info:
        _plan(root, native=("7.0",))
    assert str(info.value) == (
        "kb-sections/build.toml: error: --arch native (7.0): CUDA 13.0 builds none of these capabilities "
        "(supported: 7.5, 8.0, 8.6, 8.7, 8.9, 9.0, 10.0, 11.0, 12.0, 12.1)\n"
        "  hint: build with a CUDA version that supports these GPUs, or leave --arch out"
    )
