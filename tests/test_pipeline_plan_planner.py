"""Planning the default selection (docs/layout.md; docs/build-toml.md)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import matrix_data as md
import pytest
from stage_fixtures import CPU_213, CU130_213, fake_host, fake_interpreter, load, write_files

from kernel_builder.common.diagnostics import Severity
from kernel_builder.errors import BuildError, ConfigError
from kernel_builder.pipeline.environment.interpreter import BuildInterpreter
from kernel_builder.pipeline.plan.planner import (
    OFF_MATRIX,
    BuildPlan,
    host_system,
    plan_build,
    plan_candidate,
)

UID = "0123456789"


@pytest.fixture(autouse=True)
def _host(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An x86_64 Linux host; projects are written to ``tmp_path/kernel`` and loaded as ``kernel``."""
    fake_host(monkeypatch)
    monkeypatch.chdir(tmp_path)


def cannot_build(backend: str, host: str = "x86_64-linux") -> str:
    """The docs/build-toml.md message, word for word."""
    return (
        f"backend '{backend}' cannot be built on this host ({host}): this kernel-builder compiles cpu and cuda "
        f"variants on x86_64-linux and aarch64-linux only. The [kernel.*] sections for {backend} were validated but not built."
    )


GENERAL = """\
[general]
name = "plan-me"
version = 1
edition = 5
license = "Apache-2.0"
backends = {backends}
"""

CPU_KERNEL = """
[kernel.plan_cpu]
backend = "cpu"
depends = ["torch"]
src = ["plan_cpu/plan.cpp"]
"""

CUDA_KERNEL = """
[kernel.plan_cuda]
backend = "cuda"
depends = ["torch"]
src = ["plan_cuda/plan.cu", "plan_cuda/plan.cuh"]
"""

TORCH = """
[torch]
src = ["torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h"]
"""


def project(tmp_path: Path, text: str, files: tuple[str, ...] = ()) -> Path:
    """Write ``kernel/build.toml`` and every file it needs (all those named in a ``src``, plus ``files``)."""
    listed = [
        "torch-ext/torch_binding.cpp",
        "torch-ext/torch_binding.h",
        "plan_cpu/plan.cpp",
        "plan_cuda/plan.cu",
        "plan_cuda/plan.cuh",
        "plan_rocm/plan.hip",
        "plan_metal/plan.metal",
        "plan_new/new.cu",
        "torch-ext/extra.cu",
        "tvm-ffi-ext/binding.cpp",
        *files,
    ]
    package = "tvm-ffi-ext/plan_me/__init__.py" if "[tvm-ffi]" in text else "torch-ext/plan_me/__init__.py"
    return write_files(
        tmp_path / "kernel", {"build.toml": text, package: "", **dict.fromkeys(listed, "// x\n")}
    )


def plan(
    tmp_path: Path,
    text: str,
    interpreter: BuildInterpreter | None = CPU_213,
    *,
    backend: str | None = None,
    native: tuple[str, ...] | None = None,
    explicit: tuple[str, ...] | None = None,
) -> BuildPlan:
    project(tmp_path, text)
    return plan_build(
        load(Path("kernel")),
        interpreter,
        UID,
        backend=backend,
        native_targets=native,
        explicit_archs=explicit,
    )


def names(build: BuildPlan) -> list[str]:
    return [v.name for v in build.variants]


def messages(build: BuildPlan, severity: Severity) -> list[str]:
    return [d.message for d in build.diagnostics if d.severity is severity]


# --- noarch -----------------------------------------------------------------------------------------------

ALL_BACKENDS = '["cann", "cpu", "cuda", "metal", "neuron", "rocm", "tpu", "xpu"]'
NOARCH = (
    GENERAL.format(backends=ALL_BACKENDS)
    + """
[torch-noarch]
cuda-capabilities = ["9.0a", "8.0"]
rocm-archs = ["gfx942"]
"""
)


@pytest.mark.parametrize("interpreter", [None, CPU_213, CU130_213], ids=["no-torch", "cpu", "cu130"])
def test_each_noarch_backend_gives_one_variant(tmp_path: Path, interpreter: BuildInterpreter | None) -> None:
    build = plan(tmp_path, NOARCH, interpreter)
    assert names(build) == [
        "torch-cann",
        "torch-cpu",
        "torch-cuda",
        "torch-metal",
        "torch-neuron",
        "torch-rocm",
        "torch-tpu",
        "torch-xpu",
    ]
    assert [v.backend for v in build.variants] == [
        "cann",
        "cpu",
        "cuda",
        "metal",
        "neuron",
        "rocm",
        "tpu",
        "xpu",
    ]
    assert [v.ops_name for v in build.variants][:2] == [f"_plan_me_cann_{UID}", f"_plan_me_cpu_{UID}"]
    assert not any(v.aot for v in build.variants)
    assert build.skipped == ()
    archs = {v.name: v.archs for v in build.variants if v.archs}
    assert archs == {"torch-cuda": ("9.0a", "8.0"), "torch-rocm": ("gfx942",)}  # as written


def test_backend_option_restricts_noarch_variants(tmp_path: Path) -> None:
    assert names(plan(tmp_path, NOARCH, backend="cann")) == ["torch-cann"]


def test_backend_option_must_be_a_project_backend(tmp_path: Path) -> None:
    text = GENERAL.format(backends='["cpu"]') + "\n[torch-noarch]\n"
    with pytest.raises(BuildError) as info:
        plan(tmp_path, text, backend="xpu")
    assert str(info.value) == "backend 'xpu' is not in `backends` of kernel/build.toml"


def test_torch_backend_without_kernel_sections_is_python_only(tmp_path: Path) -> None:
    text = GENERAL.format(backends='["cpu", "cuda"]') + TORCH + CUDA_KERNEL
    build = plan(tmp_path, text, CU130_213)
    assert names(build) == ["torch213-cxx11-cu130-x86_64-linux", "torch-cpu"]
    [cpu] = [v for v in build.variants if v.backend == "cpu"]
    assert not cpu.aot and cpu.components == () and cpu.archs == ()
    assert cpu.ops_name == f"_plan_me_cpu_{UID}"


def test_cpu_interpreter_skips_the_cuda_variant_once(tmp_path: Path) -> None:
    """The reason is the skipped entry (the build's table prints it), not also a note printed before it."""
    text = GENERAL.format(backends='["cpu", "cuda"]') + TORCH + CUDA_KERNEL
    build = plan(tmp_path, text, CPU_213)
    assert names(build) == ["torch-cpu"]
    reason = "no cuda variant is built: the build interpreter's torch is a cpu build (torch 2.13.0+cpu)"
    assert build.skipped == (("cuda", reason),)
    assert [
        m for m in messages(build, Severity.NOTE) + messages(build, Severity.WARNING) if reason in m
    ] == []


def test_backend_cuda_with_a_cpu_torch_says_how_to_build_one(tmp_path: Path) -> None:
    """The next step: a CUDA variant of this torch for the system's nvcc, built in an isolated environment,
    or another interpreter."""
    from kernel_builder.pipeline.environment.toolchain import cuda_toolkit

    text = GENERAL.format(backends='["cpu", "cuda"]') + TORCH + CUDA_KERNEL
    with pytest.raises(BuildError) as info:
        plan(tmp_path, text, CPU_213, backend="cuda")
    message = str(info.value)
    assert message.startswith("no cuda variant is built: the build interpreter's torch is a cpu build")
    try:
        cuda = "".join(str(n) for n in cuda_toolkit().version)
    except BuildError:
        cuda = None
    suggested = message.split("`kernel-builder build --variant ")[1].split("`")[0]
    assert suggested.endswith("-x86_64-linux"), message
    # A required variant, of the system's CUDA where a required entry has it, of this torch (2.13) where one of
    # those is, else of the newest such Torch.
    required = [
        (md.major_minor(e["torch"]), md.major_minor(e["version"]))
        for e in md.entries("cuda", system=md.HOST_SYSTEM)
        if e["required"]
    ]
    with_cuda = [t for t, c in required if cuda is not None and md.compute(c) == f"cu{cuda}"]
    if with_cuda:
        torch = (2, 13) if (2, 13) in with_cuda else max(with_cuda)
        assert suggested == f"{md.tag(torch)}-cxx11-cu{cuda}-x86_64-linux"
    else:
        assert any(suggested == md.variant(t, c) for t, c in required), message
    assert "`kernel-builder list-variants`" in message
    assert "`kernel-builder build --python PATH` with an interpreter whose torch is a cuda build" in message


def test_no_torch_skips_aot_variants(tmp_path: Path) -> None:
    text = GENERAL.format(backends='["cpu"]') + TORCH + CPU_KERNEL
    build = plan(tmp_path, text, None)
    assert names(build) == []
    assert build.skipped == (("cpu", "no cpu variant is built: the build interpreter has no torch"),)


# --- the running interpreter's variant ----------------------------------------------------------------------


def matrix_interpreter(torch: md.Version, cuda: md.Version | None = None) -> BuildInterpreter:
    """A fake interpreter with the Torch a matrix entry pins (cpu, or cuda ``cuda``)."""
    pin = md.torch_pin(torch, "cpu" if cuda is None else "cuda", cuda)
    return fake_interpreter(f"{pin}+{md.compute(cuda)}", cuda=None if cuda is None else md.dotted(cuda))


# Interpreters of matrix entries (the CPU and CUDA test Torch, the oldest and the newest entries).
MATRIX_INTERPRETERS = [
    (md.CPU_TEST_TORCH, None),
    (md.CUDA_TEST_TORCH, md.TEST_CUDA),
    (md.NEWEST_TORCH, md.cuda_versions(md.NEWEST_TORCH)[-1]),
    (md.OLDEST_TORCH, md.cuda_versions(md.OLDEST_TORCH)[0]),
]


@pytest.mark.parametrize(
    ("interpreter", "name"),
    [(matrix_interpreter(torch, cuda), md.variant(torch, cuda)) for torch, cuda in MATRIX_INTERPRETERS],
    ids=["cpu-test", "cuda-test", "newest", "oldest"],
)
def test_running_interpreters_variant(tmp_path: Path, interpreter: BuildInterpreter, name: str) -> None:
    assert interpreter.variant().name == name
    text = GENERAL.format(backends='["cpu", "cuda"]') + TORCH + CPU_KERNEL + CUDA_KERNEL
    build = plan(tmp_path, text, interpreter)
    [aot] = [v for v in build.variants if v.aot]
    assert aot.name == name
    assert aot.ops_name == f"_plan_me_{aot.backend}_{UID}"
    assert messages(build, Severity.WARNING) == []  # a matrix entry: no development warning
    assert len(build.skipped) == 1  # the other AOT backend


def test_cpu_variant_components(tmp_path: Path) -> None:
    text = GENERAL.format(backends='["cpu", "cuda"]') + TORCH + CPU_KERNEL + CUDA_KERNEL
    [variant] = plan(tmp_path, text, CPU_213).variants
    assert [(c.name, c.sources, c.archs) for c in variant.components] == [
        ("_torch_binding", ("torch-ext/torch_binding.cpp",), ()),
        ("plan_cpu", ("plan_cpu/plan.cpp",), ()),
    ]
    assert variant.archs == () and variant.arch_selection is None


def test_cuda_variant_components(tmp_path: Path) -> None:
    text = GENERAL.format(backends='["cpu", "cuda"]') + TORCH + CPU_KERNEL + CUDA_KERNEL
    variant = plan(tmp_path, text, CU130_213).variants[0]
    assert [(c.name, c.sources) for c in variant.components] == [
        ("_torch_binding", ("torch-ext/torch_binding.cpp",)),
        ("plan_cuda", ("plan_cuda/plan.cu",)),  # the header is tracked, not compiled
    ]
    default = ("7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "11.0", "12.0", "12.1+PTX")
    assert variant.components[1].archs == variant.archs == default
    assert variant.components[0].archs == ()  # no .cu in [torch] src


# --- backends this host cannot build ----------------------------------------------------------------------

MIXED = (
    GENERAL.format(backends='["cpu", "rocm", "metal"]')
    + TORCH
    + CPU_KERNEL
    + """
[kernel.plan_rocm]
backend = "rocm"
depends = ["torch"]
src = ["plan_rocm/plan.hip"]

[kernel.plan_metal]
backend = "metal"
depends = ["torch"]
src = ["plan_metal/plan.metal"]
"""
)


def test_rocm_and_metal_are_skipped_with_the_message(tmp_path: Path) -> None:
    build = plan(tmp_path, MIXED)
    assert names(build) == ["torch213-cxx11-cpu-x86_64-linux"]
    assert build.skipped == (("rocm", cannot_build("rocm")), ("metal", cannot_build("metal")))
    assert messages(build, Severity.WARNING) == [cannot_build("rocm"), cannot_build("metal")]


@pytest.mark.parametrize("backend", ["rocm", "metal"])
def test_naming_an_unbuildable_backend_is_an_error(tmp_path: Path, backend: str) -> None:
    with pytest.raises(BuildError) as info:
        plan(tmp_path, MIXED, backend=backend)
    assert str(info.value) == cannot_build(backend)
    assert info.value.exit_code == 1


@pytest.mark.parametrize(
    ("machine", "system", "host"),
    [("arm64", "Darwin", "aarch64-darwin"), ("AMD64", "Windows", "x86_64-windows")],
)  # fmt: skip
def test_other_hosts_build_no_aot_variant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, machine: str, system: str, host: str
) -> None:
    fake_host(monkeypatch, machine, system)
    assert host_system() == host
    text = GENERAL.format(backends='["cpu", "cuda"]') + TORCH + CPU_KERNEL
    build = plan(tmp_path, text, CPU_213)
    assert names(build) == ["torch-cuda"]  # noarch variants are built on any host
    assert build.skipped == (("cpu", cannot_build("cpu", host)),)
    with pytest.raises(BuildError) as info:
        plan(tmp_path, text, CPU_213, backend="cpu")
    assert str(info.value) == cannot_build("cpu", host)


def test_unknown_machine_is_named_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_host(monkeypatch, "ppc64le", "Linux")
    assert host_system() == "ppc64le-linux"


def test_tvm_ffi_is_not_built(tmp_path: Path) -> None:
    text = GENERAL.format(backends='["cpu"]') + '\n[tvm-ffi]\nsrc = ["tvm-ffi-ext/binding.cpp"]\n'
    with pytest.raises(BuildError) as info:
        plan(tmp_path, text)
    assert (
        str(info.value)
        == "framework tvm-ffi is validated but cannot be built by this version of kernel-builder"
    )


# --- what goes into a CUDA variant ------------------------------------------------------------------------

NEW_KERNEL = """
[kernel.plan_new]
backend = "cuda"
depends = ["torch"]
src = ["plan_new/new.cu"]
cuda-minver = "13.2"
"""


@pytest.mark.parametrize(
    ("interpreter", "components"),
    [
        (CU130_213, ["_torch_binding", "plan_cuda"]),
        (fake_interpreter("2.13.0+cu132", cuda="13.2"), ["_torch_binding", "plan_cuda", "plan_new"]),
    ],
)
def test_cuda_minver_drops_only_that_component(
    tmp_path: Path, interpreter: BuildInterpreter, components: list[str]
) -> None:
    text = GENERAL.format(backends='["cuda"]') + TORCH + CUDA_KERNEL + NEW_KERNEL
    [variant] = plan(tmp_path, text, interpreter).variants
    assert [c.name for c in variant.components] == components


def cuda_project(capabilities: str | None) -> str:
    kernel = CUDA_KERNEL + (f"cuda-capabilities = {capabilities}\n" if capabilities else "")
    return GENERAL.format(backends='["cuda"]') + TORCH + kernel


def kernel_line(text: str, section: str) -> int:
    return text.splitlines().index(section) + 1


def test_native_targets_that_no_section_lists(tmp_path: Path) -> None:
    """The GPU at hand is not one the kernel supports: an error that names --arch, not the CUDA version (CUDA
    13.0 builds 8.0)."""
    text = cuda_project('["8.0"]')
    with pytest.raises(ConfigError) as info:
        plan(tmp_path, text, CU130_213, native=("9.0",))
    line = kernel_line(text, "[kernel.plan_cuda]")
    assert str(info.value) == (
        f"kernel/build.toml:{line}: error: --arch native (9.0): none of the kernel's sections lists a capability "
        "for these GPUs ([kernel.plan_cuda]: 8.0)\n"
        "  hint: build on a GPU the kernel supports (or pass one of its capabilities), or leave --arch out to build "
        "its whole capability list"
    )
    assert info.value.exit_code == 2


@pytest.mark.parametrize(
    ("capabilities", "archs"),
    [
        (None, ("9.0",)),
        ('["8.0", "9.0a"]', ("9.0a",)),
        ('["8.0", "9.0"]', ("9.0",)),
        ('["8.0+PTX"]', ("8.0+PTX",)),
    ],
)
def test_native_targets(tmp_path: Path, capabilities: str | None, archs: tuple[str, ...]) -> None:
    [variant] = plan(tmp_path, cuda_project(capabilities), CU130_213, native=("9.0",)).variants
    assert variant.components[1].archs == variant.archs == archs
    assert variant.arch_selection == "native"


def test_native_targets_do_not_mark_cpu_variants(tmp_path: Path) -> None:
    text = GENERAL.format(backends='["cpu"]') + TORCH + CPU_KERNEL
    [variant] = plan(tmp_path, text, CPU_213, native=("9.0",)).variants
    assert variant.arch_selection is None


@pytest.mark.parametrize(
    ("capabilities", "explicit", "archs"),
    [
        (None, ("9.0",), ("9.0",)),
        (None, ("8.0", "9.0a"), ("8.0", "9.0a")),
        (None, ("8.0+PTX",), ("8.0+PTX",)),
        ('["8.0", "9.0a"]', ("9.0",), ("9.0a",)),
        ('["8.0", "9.0a"]', ("8.0", "9.0a"), ("8.0", "9.0a")),
        ('["8.0"]', ("8.6",), ("8.0",)),
    ],
)
def test_explicit_archs(
    tmp_path: Path, capabilities: str | None, explicit: tuple[str, ...], archs: tuple[str, ...]
) -> None:
    """``--arch LIST``: a kernel without cuda-capabilities gets the list; one with them is selected as if the
    listed capabilities were the GPUs."""
    [variant] = plan(tmp_path, cuda_project(capabilities), CU130_213, explicit=explicit).variants
    assert variant.components[1].archs == variant.archs == archs
    assert variant.components[0].archs == ()  # the binding has no .cu here
    assert variant.arch_selection == "explicit"


def test_explicit_archs_this_cuda_cannot_build(tmp_path: Path) -> None:
    build = plan(tmp_path, cuda_project(None), CU130_213, explicit=("9.0", "10.1"))
    assert build.variants[0].archs == ("9.0",)
    assert messages(build, Severity.WARNING) == [
        "[kernel.plan_cuda]: capability 10.1 dropped: CUDA 13.0 cannot build it"
    ]
    text = cuda_project('["8.0"]')
    with pytest.raises(ConfigError) as info:
        plan(tmp_path, text, CU130_213, explicit=("9.0",))
    line = kernel_line(text, "[kernel.plan_cuda]")
    assert str(info.value) == (
        f"kernel/build.toml:{line}: error: --arch 9.0: none of the kernel's sections lists a capability for these "
        "GPUs ([kernel.plan_cuda]: 8.0)\n"
        "  hint: build on a GPU the kernel supports (or pass one of its capabilities), or leave --arch out to build "
        "its whole capability list"
    )


def test_explicit_archs_do_not_mark_cpu_variants(tmp_path: Path) -> None:
    text = GENERAL.format(backends='["cpu"]') + TORCH + CPU_KERNEL
    [variant] = plan(tmp_path, text, CPU_213, explicit=("9.0",)).variants
    assert variant.arch_selection is None and variant.archs == ()


def test_dropped_capability_warns(tmp_path: Path) -> None:
    build = plan(tmp_path, cuda_project('["7.0", "8.0"]'), CU130_213)
    assert build.variants[0].archs == ("8.0",)
    assert messages(build, Severity.WARNING) == [
        "[kernel.plan_cuda]: capability 7.0 dropped: CUDA 13.0 cannot build it"
    ]


def test_torch_cu_source_is_skipped_on_cpu(tmp_path: Path) -> None:
    text = (
        GENERAL.format(backends='["cpu"]') + TORCH.replace('.h"]', '.h", "torch-ext/extra.cu"]') + CPU_KERNEL
    )
    build = plan(tmp_path, text, CPU_213)
    assert build.variants[0].components[0].sources == ("torch-ext/torch_binding.cpp",)
    assert messages(build, Severity.WARNING) == [
        "[torch] src `torch-ext/extra.cu` is a CUDA file and is not compiled into the cpu variant"
    ]


def test_torch_cu_source_is_compiled_on_cuda(tmp_path: Path) -> None:
    text = cuda_project('["8.0"]').replace('.h"]', '.h", "torch-ext/extra.cu"]')
    build = plan(tmp_path, text, CU130_213)
    binding = build.variants[0].components[0]
    assert binding.sources == ("torch-ext/torch_binding.cpp", "torch-ext/extra.cu")
    assert binding.archs == ("8.0",)
    assert messages(build, Severity.WARNING) == []


# --- version bounds and the matrix ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("interpreter", "name", "warned"),
    [
        # A Torch newer than the matrix's newest: the builder's notice says so (test_pipeline_builder_stale_matrix.py),
        # the plan adds nothing.
        (
            fake_interpreter(f"{md.NEWEST_TORCH[0]}.{md.NEWEST_TORCH[1] + 1}.0+cpu"),
            md.variant((md.NEWEST_TORCH[0], md.NEWEST_TORCH[1] + 1)),
            False,
        ),
        # A CUDA 13.1 no matrix has (deliberately unsupported).
        (fake_interpreter("2.13.0+cu131", cuda="13.1"), "torch213-cxx11-cu131-x86_64-linux", True),
    ],
)
def test_not_in_matrix_is_fine_for_development(
    tmp_path: Path, interpreter: BuildInterpreter, name: str, warned: bool
) -> None:
    text = GENERAL.format(backends='["cpu", "cuda"]') + TORCH + CPU_KERNEL + CUDA_KERNEL
    build = plan(tmp_path, text, interpreter)
    assert names(build) == [name]
    warning = f"{name} is not in the variant matrix: fine for development, but not part of the published set"
    assert messages(build, Severity.WARNING) == ([warning] if warned else [])


def test_a_selected_variant_leaves_out_the_off_matrix_warning_by_its_kind(tmp_path: Path) -> None:
    """The default plan warns that the running variant is off the matrix, with the warning's kind; planning the
    same variant as a selected candidate leaves out that kind, whatever its words, and keeps the others."""
    interpreter = fake_interpreter("2.13.0+cu131", cuda="13.1")
    name = "torch213-cxx11-cu131-x86_64-linux"
    # A capability CUDA 13.1 cannot build: a warning of another kind, which both plans keep.
    text = GENERAL.format(backends='["cuda"]') + TORCH + CUDA_KERNEL + 'cuda-capabilities = ["7.0", "9.0"]\n'
    build = plan(tmp_path, text, interpreter)
    off_matrix = [d for d in build.diagnostics if d.kind == OFF_MATRIX]
    assert [d.message for d in off_matrix] == [
        f"{name} is not in the variant matrix: fine for development, but not part of the published set"
    ]
    others = [d for d in build.diagnostics if d.kind != OFF_MATRIX]
    assert others and all(d.kind is None for d in others)
    selected, diagnostics = plan_candidate(load(Path("kernel")), name, "cuda", interpreter, UID)
    assert selected.name == name
    assert list(diagnostics) == others
    # The kind is not part of a diagnostic's identity: the same words at the same place are one problem.
    assert replace(off_matrix[0], kind=None) == off_matrix[0]


def test_torch_bounds_exclude_the_running_variant(tmp_path: Path) -> None:
    text = GENERAL.format(backends='["cpu"]') + TORCH + 'maxver = "2.12"\n' + CPU_KERNEL
    build = plan(tmp_path, text, CPU_213)
    assert names(build) == []
    # A skipped backend (the build's table gives the reason), not a note: a build of nothing fails with it.
    assert messages(build, Severity.NOTE) == []
    assert build.skipped == (("cpu", "no cpu variant is built: torch 2.13 is outside [torch] minver/maxver"),)


def test_cuda_bounds_exclude_the_running_variant(tmp_path: Path) -> None:
    text = GENERAL.format(backends='["cuda"]') + '\n[general.cuda]\nmaxver = "12.9"\n' + TORCH + CUDA_KERNEL
    build = plan(tmp_path, text, CU130_213)
    assert names(build) == []
    # A skipped backend (the build's table gives the reason), not a note: a build of nothing fails with it.
    assert messages(build, Severity.NOTE) == []
    assert build.skipped == (
        ("cuda", "no cuda variant is built: CUDA 13.0 is outside [general.cuda] minver/maxver"),
    )


@pytest.mark.parametrize(
    ("interpreter", "name"),
    [
        (CPU_213, "torch-stable-abi212-cpu-x86_64-linux"),
        # Not a matrix Torch, but the variant is named by the ABI and is a candidate all the same.
        (fake_interpreter("2.15.0+cpu"), "torch-stable-abi212-cpu-x86_64-linux"),
        (CU130_213, "torch-stable-abi212-cu130-x86_64-linux"),
    ],
)
def test_stable_abi_variant(tmp_path: Path, interpreter: BuildInterpreter, name: str) -> None:
    text = (
        GENERAL.format(backends='["cpu", "cuda"]')
        + TORCH
        + 'stable-abi = "2.12"\n'
        + CPU_KERNEL
        + CUDA_KERNEL
    )
    build = plan(tmp_path, text, interpreter)
    assert [v.name for v in build.variants if v.aot] == [name]
    assert messages(build, Severity.WARNING) == []


def test_stable_abi_newer_than_torch(tmp_path: Path) -> None:
    text = GENERAL.format(backends='["cpu"]') + TORCH + 'stable-abi = "2.14"\n' + CPU_KERNEL
    build = plan(tmp_path, text, CPU_213)
    assert names(build) == []
    # A skipped backend (the build's table gives the reason), not a note: a build of nothing fails with it.
    assert messages(build, Severity.NOTE) == []
    assert build.skipped == (
        (
            "cpu",
            "no cpu variant is built: torch 2.13 is older than the stable ABI 2.14 of [torch] stable-abi",
        ),
    )


def test_unreadable_cuda_version_is_a_build_error(tmp_path: Path) -> None:
    text = GENERAL.format(backends='["cuda"]') + TORCH + CUDA_KERNEL
    with pytest.raises(BuildError) as info:
        plan(tmp_path, text, fake_interpreter("2.13.0+cu", cuda="unknown"))
    assert str(info.value) == (
        "cannot name the cuda variant of the build interpreter /opt/python/bin/python3: "
        "cannot name a variant for backend cuda: its version could not be detected"
    )
