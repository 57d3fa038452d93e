"""Variant resolution with injected environment records (docs/loading.md).

The versions in variant names and environments here are the test's own: the loader does not read the
variant matrix, so a matrix bump leaves them alone.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import replace

import pytest
from loader_fixtures import make_env

from kernel_builder.formats.metadata import Metadata
from kernel_builder.formats.runtime import Environment
from kernel_builder.formats.variants import parse_variant
from kernel_builder.loader.resolve import (
    Accepted,
    Device,
    GpuProbe,
    Rejected,
    Verdict,
    describe_no_compatible,
    environment_line,
    resolve_variants,
    select_backend,
    trace,
)

LINUX = "x86_64-linux"


def summary(decisions: Sequence[Verdict]) -> list[tuple[str, str | None]]:
    """(name, None) for accepted, (name, reason) for rejected, in order."""
    return [(d.variant.variant_str, d.reason if isinstance(d, Rejected) else None) for d in decisions]


def resolve(
    names: Sequence[str], env: Environment, backend: str | None = None
) -> list[tuple[str, str | None]]:
    return summary(resolve_variants(names, env, select_backend(env, backend)))


def cuda(version: tuple[int, int], **changes: object) -> Environment:
    return make_env(backend="cuda", backend_version=version, **changes)


# --- names ---------------------------------------------------------------------------------------------

SPEC_NAMES = [
    "torch212-cxx11-cu128-x86_64-linux",
    "torch212-cu128-x86_64-linux",
    "torch212-metal-aarch64-darwin",
    "torch-stable-abi211-cu128-x86_64-linux",
    "tvm-ffi01-cu128-x86_64-linux",
    "torch212-cxx98-cu118-x86_64-linux",
    "torch212-cxx11-rocm71-x86_64-linux",
    "torch212-cxx11-xpu20253-x86_64-linux",
    "torch29-cxx11-cu130-aarch64-linux",
    "torch212-cu128-x86_64-windows",
    *(
        f"torch-{name}"
        for name in ("cpu", "cuda", "rocm", "metal", "xpu", "npu", "neuron", "tpu", "universal")
    ),
]


@pytest.mark.parametrize("name", SPEC_NAMES)
def test_every_form_round_trips(name: str) -> None:
    assert parse_variant(name).variant_str == name


def test_unparseable_names_are_logged_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="kernel_builder")
    decisions = resolve_variants(
        [*SPEC_NAMES, "torch-2.12-cu128-x86_64-linux", "torch212-cu128", "layers"], make_env(), "cuda"
    )
    assert sorted(d.variant.variant_str for d in decisions) == sorted(SPEC_NAMES)
    assert [(r.name, r.levelname) for r in caplog.records] == [("kernel_builder", "WARNING")] * 3
    assert (
        caplog.records[0]
        .getMessage()
        .startswith("skipping variant directory 'torch-2.12-cu128-x86_64-linux': invalid variant")
    )
    assert (
        caplog.records[2].getMessage().startswith("skipping variant directory 'layers': invalid variant name")
    )


# --- CUDA rule -----------------------------------------------------------------------------------------


def test_cuda_same_major_and_minor_not_newer() -> None:
    names = [f"torch212-cxx11-{cu}-{LINUX}" for cu in ("cu126", "cu130", "cu132")]
    assert resolve(names, cuda((13, 0))) == [
        (f"torch212-cxx11-cu130-{LINUX}", None),
        (
            f"torch212-cxx11-cu126-{LINUX}",
            "built for CUDA 12.6 (cu126), major version differs from the environment's CUDA 13.0",
        ),
        (
            f"torch212-cxx11-cu132-{LINUX}",
            "built for CUDA 13.2 (cu132), minor version newer than the environment's CUDA 13.0",
        ),
    ]


def test_cuda_minor_fallback_and_noarch() -> None:
    cu126, cu128 = (f"torch212-cxx11-{cu}-{LINUX}" for cu in ("cu126", "cu128"))
    assert resolve([cu126, cu128], cuda((12, 9))) == [(cu128, None), (cu126, None)]
    assert resolve([cu126, "torch-cuda"], cuda((12, 5))) == [
        ("torch-cuda", None),
        (cu126, "built for CUDA 12.6 (cu126), minor version newer than the environment's CUDA 12.5"),
    ]
    assert resolve([cu126, cu128, "torch-cuda"], cuda((11, 8))) == [
        ("torch-cuda", None),
        (cu126, "built for CUDA 12.6 (cu126), major version differs from the environment's CUDA 11.8"),
        (cu128, "built for CUDA 12.8 (cu128), major version differs from the environment's CUDA 11.8"),
    ]


def test_cuda_version_unknown() -> None:
    assert resolve([f"torch212-cxx11-cu126-{LINUX}"], make_env(backend_version=None)) == [
        (
            f"torch212-cxx11-cu126-{LINUX}",
            "built for CUDA 12.6 (cu126); the environment's CUDA version is unknown",
        )
    ]


# --- C++ ABI tags --------------------------------------------------------------------------------------


def test_tagless_preferred_over_tagged_and_cxx98_rejected() -> None:
    tagless, tagged, cxx98 = (
        f"torch212-cu126-{LINUX}",
        f"torch212-cxx11-cu128-{LINUX}",
        f"torch212-cxx98-cu128-{LINUX}",
    )
    assert resolve([tagged, cxx98, tagless], cuda((12, 8))) == [
        (tagless, None),
        (tagged, None),
        (cxx98, "built with the cxx98 ABI; Torch 2.12 uses the cxx11 ABI"),
    ]
    assert resolve([tagged, tagless], cuda((12, 8), cxx11_abi=False)) == [
        (tagless, None),
        (tagged, "built with the cxx11 ABI; Torch 2.12 uses the cxx98 ABI"),
    ]


# --- noarch fallback -----------------------------------------------------------------------------------


def test_noarch_fallback_order() -> None:
    arch = f"torch212-cxx11-cu130-{LINUX}"
    names = ["torch-universal", "torch-cpu", arch, "torch-cuda"]
    assert resolve(names, cuda((13, 0), torch_version=(2, 11))) == [
        ("torch-cuda", None),
        ("torch-universal", None),
        ("torch-cpu", "noarch variant for cpu; the selected backend is cuda"),
        (arch, "built for Torch 2.12; this environment has Torch 2.11"),
    ]
    assert resolve([arch, "torch-cuda"], cuda((13, 0), torch_version=None)) == [
        ("torch-cuda", None),
        (arch, "built for Torch 2.12; Torch is not installed"),
    ]


def test_noarch_for_cann_is_named_after_the_backend() -> None:
    """kernels 0.19 names cann's noarch variant ``torch-cann`` (0.17 read ``torch-npu``); ``backend="npu"`` is still
    accepted as another name for cann."""
    env = make_env(backend="cann", backend_version=(8, 1))
    assert select_backend(env, "npu") == "cann"
    assert resolve(["torch-npu", "torch-cann", "torch-cpu"], env, "npu") == [
        ("torch-cann", None),
        ("torch-cpu", "noarch variant for cpu; the selected backend is cann"),
        ("torch-npu", "noarch variant for npu; the selected backend is cann"),
    ]


def test_a_noarch_word_no_backend_has_is_never_accepted() -> None:
    assert resolve(["torch-opencl", "torch-cuda-12.8", "torch-"], cuda((13, 0))) == [
        ("torch-", "noarch variant for ; the selected backend is cuda"),
        ("torch-cuda-12.8", "noarch variant for cuda-12.8; the selected backend is cuda"),
        ("torch-opencl", "noarch variant for opencl; the selected backend is cuda"),
    ]


# --- stable ABI ----------------------------------------------------------------------------------------


def test_stable_abi_accepted_preferred_and_newer_rejected() -> None:
    names = [
        f"torch212-cxx11-cu130-{LINUX}",
        f"torch-stable-abi211-cu130-{LINUX}",
        f"torch-stable-abi210-cu130-{LINUX}",
        f"torch-stable-abi213-cu130-{LINUX}",
        f"tvm-ffi01-cu130-{LINUX}",
    ]
    assert resolve(names, cuda((13, 0), tvm_ffi_version=(0, 1))) == [
        (f"torch-stable-abi211-cu130-{LINUX}", None),
        (f"torch-stable-abi210-cu130-{LINUX}", None),
        (f"torch212-cxx11-cu130-{LINUX}", None),
        (f"tvm-ffi01-cu130-{LINUX}", None),
        (
            f"torch-stable-abi213-cu130-{LINUX}",
            "built for stable ABI 2.13, newer than this environment's Torch 2.12",
        ),
    ]


def test_tvm_ffi_needs_equal_version() -> None:
    name = f"tvm-ffi01-cu130-{LINUX}"
    assert resolve([name], cuda((13, 0))) == [(name, "built for tvm-ffi 0.1; tvm-ffi is not installed")]
    assert resolve([name], cuda((13, 0), tvm_ffi_version=(0, 2))) == [
        (name, "built for tvm-ffi 0.1; this environment has tvm-ffi 0.2")
    ]


# --- backend selection ---------------------------------------------------------------------------------


def test_backend_cpu_on_cuda_picks_the_cpu_variant() -> None:
    names = [f"torch212-cxx11-cu130-{LINUX}", f"torch212-cxx11-cpu-{LINUX}", "torch-cuda", "torch-cpu"]
    assert resolve(names, cuda((13, 0)), "cpu") == [
        (f"torch212-cxx11-cpu-{LINUX}", None),
        ("torch-cpu", None),
        ("torch-cuda", "noarch variant for cuda; the selected backend is cpu"),
        (f"torch212-cxx11-cu130-{LINUX}", "built for cu130; the selected backend is cpu"),
    ]
    # CPU is no implicit fallback on a GPU machine.
    assert resolve([f"torch212-cxx11-cpu-{LINUX}"], cuda((13, 0))) == [
        (f"torch212-cxx11-cpu-{LINUX}", "built for cpu; the selected backend is cu130")
    ]


@pytest.mark.parametrize(
    ("env", "value", "allowed"),
    [
        (cuda((13, 0)), "xpu", "cpu, cuda"),
        (cuda((13, 0)), "npu", "cpu, cuda"),
        (make_env(backend="cpu", backend_version=None), "cuda", "cpu"),
        (make_env(backend="cann", backend_version=(8, 1)), "rocm", "cpu, cann, npu"),
    ],
)
def test_invalid_backend(env: Environment, value: str, allowed: str) -> None:
    with pytest.raises(ValueError) as caught:
        select_backend(env, value)
    assert str(caught.value) == (
        f"invalid backend {value!r}: on this system it must be one of {allowed} "
        f"(detected backend: {env.backend})"
    )


def test_rocm_minor_versions_are_compatible_as_cuda_ones() -> None:
    """kernels 0.19: on ROCm 7.2 a rocm71 variant loads (the newest compatible minor first); another major, or a
    newer minor, does not."""
    rocm = make_env(backend="rocm", backend_version=(7, 2))
    names = [
        f"torch212-cxx11-rocm71-{LINUX}",
        f"torch212-cxx11-rocm72-{LINUX}",
        f"torch212-cxx11-rocm714-{LINUX}",
        f"torch212-cxx11-rocm64-{LINUX}",
        f"torch212-cxx11-cu130-{LINUX}",
    ]
    assert resolve(names, rocm) == [
        (f"torch212-cxx11-rocm72-{LINUX}", None),
        (f"torch212-cxx11-rocm71-{LINUX}", None),
        (f"torch212-cxx11-cu130-{LINUX}", "built for cu130; the selected backend is rocm72"),
        (
            f"torch212-cxx11-rocm64-{LINUX}",
            "built for ROCm 6.4 (rocm64), major version differs from the environment's ROCm 7.2",
        ),
        (
            f"torch212-cxx11-rocm714-{LINUX}",
            "built for ROCm 7.14 (rocm714), minor version newer than the environment's ROCm 7.2",
        ),
    ]


def test_other_versioned_backends_need_identical_versions() -> None:
    xpu = make_env(backend="xpu", backend_version=(2025, 3))
    names = [f"torch212-cxx11-xpu20253-{LINUX}", f"torch212-cxx11-xpu20252-{LINUX}"]
    assert resolve(names, xpu) == [
        (f"torch212-cxx11-xpu20253-{LINUX}", None),
        (f"torch212-cxx11-xpu20252-{LINUX}", "built for xpu20252; the environment has xpu20253"),
    ]
    unknown = make_env(backend="xpu", backend_version=None)
    assert resolve([f"torch212-cxx11-xpu20253-{LINUX}"], unknown) == [
        (f"torch212-cxx11-xpu20253-{LINUX}", "built for xpu20253; the environment has xpu (version unknown)")
    ]


def test_cpu_and_os_must_match() -> None:
    names = ["torch212-cxx11-cu130-aarch64-linux", "torch212-cu130-x86_64-windows"]
    assert resolve(names, cuda((13, 0))) == [
        ("torch212-cu130-x86_64-windows", "built for OS windows; this machine runs linux"),
        ("torch212-cxx11-cu130-aarch64-linux", "built for CPU aarch64; this machine is x86_64"),
    ]


# --- macOS and free-threading --------------------------------------------------------------------------


def test_metal_needs_macos_26() -> None:
    name = "torch212-metal-aarch64-darwin"
    mac = make_env(cpu="aarch64", os="darwin", cxx11_abi=None, backend="metal", backend_version=None)
    assert resolve([name, "torch-metal"], replace(mac, macos_version=(15, 5))) == [
        ("torch-metal", None),
        (name, "built for metal, which needs macOS 26.0 or later; this machine runs macOS 15.5"),
    ]
    assert resolve([name, "torch-metal"], replace(mac, macos_version=(26, 0))) == [
        (name, None),
        ("torch-metal", None),
    ]


def test_abi3_never_loads_in_free_threaded_python() -> None:
    """Free-threaded CPython loads no abi3 extension (a legacy name is abi3): only abi3t variants (3.15+) and noarch
    ones are left."""
    arch, abi = f"torch212-cxx11-cu130-{LINUX}", f"torch-stable-abi211-cu130-{LINUX}"
    abi3t = f"torch-2.12-cxx11-cuda-13.0-cpython-3.15-abi3t-{LINUX}"
    env = cuda((13, 0), free_threaded=True, python_version=(3, 14))
    reason = "built for the abi3 stable ABI, which free-threaded CPython 3.14 cannot load (it needs an abi3t variant)"
    assert resolve([arch, abi, abi3t, "torch-cuda", "torch-universal"], env) == [
        ("torch-cuda", None),
        ("torch-universal", None),
        (abi3t, "built for CPython 3.15 or later (abi3t); this is CPython 3.14"),
        (abi, reason),
        (arch, reason),
    ]
    env315 = cuda((13, 0), free_threaded=True, python_version=(3, 15))
    assert resolve([arch, abi3t], env315) == [(abi3t, None), (arch, reason.replace("3.14", "3.15"))]
    # With the GIL, 3.15 loads both and prefers abi3 (as upstream does)
    assert resolve([abi3t, arch], cuda((13, 0), python_version=(3, 15))) == [(arch, None), (abi3t, None)]


def test_the_named_python_is_the_oldest_it_loads_in_and_the_newest_is_preferred() -> None:
    names = [f"torch-2.12-cpu-cpython-3.{minor}-abi3-{LINUX}" for minor in (9, 11, 12, 13)]
    env = make_env(backend="cpu", backend_version=None, python_version=(3, 12))
    assert resolve(names, env) == [
        (names[2], None),
        (names[1], None),
        (names[0], None),
        (names[3], "built for CPython 3.13 or later (abi3); this is CPython 3.12"),
    ]


def test_both_names_of_one_variant_prefer_the_new_format() -> None:
    """Upstream ranks the two equal (its choice then follows Python's string hashing); this loader takes the new
    spelling, always."""
    legacy, new = f"torch212-cxx11-cu130-{LINUX}", f"torch-2.12-cxx11-cuda-13.0-cpython-3.9-abi3-{LINUX}"
    for names in ([legacy, new], [new, legacy]):
        assert resolve(names, cuda((13, 0))) == [(new, None), (legacy, None)]


def test_sdk_and_mlx_variants() -> None:
    names = [
        "sdk",
        "sdk-cuda",
        "sdk-rocm",
        f"sdk-cpython-3.9-abi3-{LINUX}",
        f"sdk-cuda-12.8-cpython-3.9-abi3-{LINUX}",
        f"sdk-cuda-12.6-cpython-3.9-abi3-{LINUX}",
        "mlx-cuda",
        "torch-cuda",
        f"torch212-cxx11-cu128-{LINUX}",
    ]
    assert resolve(names, cuda((12, 8))) == [
        (f"torch212-cxx11-cu128-{LINUX}", None),
        (f"sdk-cuda-12.8-cpython-3.9-abi3-{LINUX}", None),
        (f"sdk-cuda-12.6-cpython-3.9-abi3-{LINUX}", None),
        (f"sdk-cpython-3.9-abi3-{LINUX}", None),
        ("torch-cuda", None),
        ("sdk-cuda", None),
        ("sdk", None),
        ("mlx-cuda", "an mlx variant; MLX is not installed"),
        ("sdk-rocm", "sdk for rocm; the selected backend is cuda"),
    ]
    with_mlx = cuda((12, 8), mlx=True)
    assert resolve(["mlx-cuda", "torch-cuda", "mlx-universal"], with_mlx) == [
        ("torch-cuda", None),
        ("mlx-cuda", None),
        ("mlx-universal", None),
    ]


# --- / GPU architectures --------------------------------------------------------------------------


def meta(archs: Sequence[str] | None, backend: str = "cuda") -> Metadata:
    return Metadata(
        name="relu",
        id="_relu_x",
        python_depends=(),
        backend_type=backend,
        backend_archs=None if archs is None else tuple(archs),
    )


def test_arch_mismatch_falls_back_to_a_ptx_build() -> None:
    abi, arch = f"torch-stable-abi211-cu130-{LINUX}", f"torch212-cxx11-cu130-{LINUX}"
    lookups = {abi: meta(["8.0", "9.0"]), arch: meta(["9.0+PTX"])}
    decisions = resolve_variants([abi, arch], cuda((13, 0)), "cuda", lookups.get, gpus=[(10, 0)])
    assert summary(decisions) == [
        (arch, None),
        (abi, "GPU 0 has compute capability 10.0; build provides 8.0, 9.0"),
    ]


@pytest.mark.parametrize(
    ("devices", "archs", "reason"),
    [
        ([(9, 0)], ["9.0a"], None),
        ([(9, 1)], ["9.0a"], "GPU 0 has compute capability 9.1; build provides 9.0a"),
        ([(10, 0)], ["9.0a+PTX"], "GPU 0 has compute capability 10.0; build provides 9.0a+PTX"),
        ([(10, 3)], ["10.0f"], None),
        ([(12, 0)], ["10.0f"], "GPU 0 has compute capability 12.0; build provides 10.0f"),
        ([(8, 6)], ["8.0"], None),
        ([(9, 0)], ["8.0"], "GPU 0 has compute capability 9.0; build provides 8.0"),
        ([(9, 0)], ["8.0+PTX"], None),
        ([(9, 0), (8, 6)], ["9.0"], "GPU 1 has compute capability 8.6; build provides 9.0"),
        ([(9, 0), (8, 6)], ["8.0", "9.0"], None),
    ],
)
def test_cuda_arch_rules(devices: list[Device], archs: list[str], reason: str | None) -> None:
    name = f"torch212-cxx11-cu130-{LINUX}"
    decisions = resolve_variants([name], cuda((13, 0)), "cuda", {name: meta(archs)}.get, gpus=devices)
    assert summary(decisions) == [(name, reason)]


def test_rocm_arch_rules() -> None:
    name = f"torch212-cxx11-rocm71-{LINUX}"
    env = make_env(backend="rocm", backend_version=(7, 1))
    lookup = {name: meta(["gfx90a", "gfx942"], "rocm")}.get
    assert summary(resolve_variants([name], env, "rocm", lookup, gpus=["gfx1100"])) == [
        (name, "GPU 0 has architecture gfx1100; build provides gfx90a, gfx942")
    ]
    assert summary(resolve_variants([name], env, "rocm", lookup, gpus=["gfx942:sramecc+:xnack-"])) == [
        (name, None)
    ]


def test_arch_check_skipped(caplog: pytest.LogCaptureFixture) -> None:
    name = f"torch212-cxx11-cu130-{LINUX}"
    env = cuda((13, 0))

    def no_lookup(_: str) -> Metadata:
        raise AssertionError("metadata must not be read")

    def no_probe() -> list[Device]:
        raise AssertionError("GPUs must not be probed")

    # No GPU visible: metadata is not even read.
    assert summary(resolve_variants([name], env, "cuda", no_lookup, gpus=[])) == [(name, None)]
    # Disabled: neither probed nor read.
    probe = GpuProbe(no_probe)
    assert summary(resolve_variants([name], env, "cuda", no_lookup, gpus=probe, check_gpu_arch=False)) == [
        (name, None)
    ]
    assert probe.probed is None
    # Not a GPU backend: not probed.
    cpu_name = f"torch212-cxx11-cpu-{LINUX}"
    assert summary(resolve_variants([cpu_name], env, "cpu", no_lookup, gpus=GpuProbe(no_probe))) == [
        (cpu_name, None)
    ]
    # No archs, or only unparseable ones (logged).
    assert summary(resolve_variants([name], env, "cuda", {name: meta(None)}.get, gpus=[(10, 0)])) == [
        (name, None)
    ]
    caplog.set_level(logging.WARNING, logger="kernel_builder")
    lookup = {name: meta(["sm_90", "nine"])}.get
    assert summary(resolve_variants([name], env, "cuda", lookup, gpus=[(10, 0)])) == [(name, None)]
    assert [r.getMessage() for r in caplog.records] == [
        f"variant {name}: ignoring unparseable backend.archs entries sm_90, nine"
    ]


def test_arch_check_without_metadata_rejects_and_probes_once() -> None:
    name, noarch = f"torch212-cxx11-cu130-{LINUX}", "torch-cuda"
    calls: list[int] = []

    def probe() -> list[Device]:
        calls.append(1)
        return [(9, 0)]

    gpus = GpuProbe(probe)
    decisions = resolve_variants(
        [name, noarch], cuda((13, 0)), "cuda", {noarch: meta(["9.0"])}.get, gpus=gpus
    )
    assert summary(decisions) == [
        (noarch, None),
        (name, "no metadata.json to check the visible GPUs against"),
    ]
    assert calls == [1]
    assert gpus.probed == ((9, 0),)


def test_first_only_stops_at_the_first_accepted() -> None:
    first, second = f"torch212-cxx11-cu130-{LINUX}", "torch-cuda"
    seen: list[str] = []

    def lookup(name: str) -> Metadata:
        seen.append(name)
        return meta(["9.0"])

    decisions = resolve_variants(
        [first, second], cuda((13, 0)), "cuda", lookup, gpus=[(9, 0)], first_only=True
    )
    assert summary(decisions) == [(first, None), (second, None)]
    assert seen == [first]


# --- / order and trace --------------------------------------------------------------------------


def test_order_is_deterministic_and_rejected_sorted_by_name() -> None:
    names = [
        "torch-universal",
        "torch-cpu",
        f"torch212-cxx11-cu128-{LINUX}",
        f"torch212-cu126-{LINUX}",
        f"torch211-cxx11-cu128-{LINUX}",
        f"torch-stable-abi211-cu126-{LINUX}",
        f"torch-stable-abi211-cu128-{LINUX}",
        "torch-cuda",
        "torch212-cxx11-cu128-aarch64-linux",
        "torch-rocm",
    ]
    expected = [
        (f"torch-stable-abi211-cu128-{LINUX}", None),
        (f"torch-stable-abi211-cu126-{LINUX}", None),
        (f"torch212-cu126-{LINUX}", None),
        (f"torch212-cxx11-cu128-{LINUX}", None),
        ("torch-cuda", None),
        ("torch-universal", None),
        ("torch-cpu", "noarch variant for cpu; the selected backend is cuda"),
        ("torch-rocm", "noarch variant for rocm; the selected backend is cuda"),
        (f"torch211-cxx11-cu128-{LINUX}", "built for Torch 2.11; this environment has Torch 2.12"),
        ("torch212-cxx11-cu128-aarch64-linux", "built for CPU aarch64; this machine is x86_64"),
    ]
    shuffler = random.Random(0)
    for _ in range(20):
        shuffler.shuffle(names)
        assert resolve(names, cuda((12, 8))) == expected
    decisions = resolve_variants(names, cuda((12, 8)), "cuda")
    assert all(isinstance(d, Accepted) for d in decisions[:6])
    assert trace(decisions) == [
        f"torch-stable-abi211-cu128-{LINUX}: compatible (preferred)",
        f"torch-stable-abi211-cu126-{LINUX}: compatible",
        f"torch212-cu126-{LINUX}: compatible",
        f"torch212-cxx11-cu128-{LINUX}: compatible",
        "torch-cuda: compatible",
        "torch-universal: compatible",
        "torch-cpu: noarch variant for cpu; the selected backend is cuda",
        "torch-rocm: noarch variant for rocm; the selected backend is cuda",
        f"torch211-cxx11-cu128-{LINUX}: built for Torch 2.11; this environment has Torch 2.12",
        "torch212-cxx11-cu128-aarch64-linux: built for CPU aarch64; this machine is x86_64",
    ]


def test_environment_line_and_failure_message() -> None:
    env = cuda((13, 0))
    assert environment_line(env, "cuda") == "Torch 2.12 (cxx11 ABI), backend cuda 13.0, x86_64-linux"
    assert environment_line(env, "cpu", [(9, 0), (10, 0)]) == (
        "Torch 2.12 (cxx11 ABI), backend cpu (selected; detected cuda 13.0), x86_64-linux, GPUs 9.0, 10.0"
    )
    mac = make_env(
        cpu="aarch64",
        os="darwin",
        cxx11_abi=None,
        backend="metal",
        backend_version=None,
        macos_version=(15, 5),
        torch_version=None,
        tvm_ffi_version=(0, 1),
        free_threaded=True,
        python_version=(3, 14),
    )
    assert environment_line(mac, "metal", []) == (
        "Torch not installed, tvm-ffi 0.1, backend metal, aarch64-darwin (macOS 15.5), "
        "free-threaded CPython 3.14, no GPU visible"
    )
    decisions = resolve_variants(["torch-cpu"], env, "cuda")
    assert describe_no_compatible("org/relu at abc (v1)", "ENV", decisions) == (
        "no compatible kernel variant in org/relu at abc (v1)\n"
        "environment: ENV\n"
        "variants:\n"
        "  torch-cpu: noarch variant for cpu; the selected backend is cuda"
    )
    assert describe_no_compatible("org/relu", "ENV", []) == (
        "no compatible kernel variant in org/relu\nenvironment: ENV\nvariants: no build variants"
    )
