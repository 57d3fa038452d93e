"""Variant names: encoding, parsing, round trips and the running environment's variant (docs/layout.md).

The versions here are examples of the naming rules (including historical and unsupported ones), not the
matrix's: the supported set is read through tests/matrix_data.py where a test needs it. That the parser gives
upstream ``kernels`` 0.19.1's verdict on every name is tests/test_upstream_variants.py's subject.
"""

from __future__ import annotations

import re

import pytest
from fake_torch import install_fake_torch, make_fake_torch

from kernel_builder.formats import runtime
from kernel_builder.formats.matrix import MatrixEntry
from kernel_builder.formats.runtime import Environment
from kernel_builder.formats.variants import (
    UnsupportedEnvironmentError,
    Variant,
    compute_name,
    framework_version_name,
    noarch_variant,
    parse_variant,
    to_major_minor,
    variant_for_entry,
    variant_for_environment,
)

# Every kind of name, produced or parse-only, with the parts it stands for.
# fmt: off
NAMES = {
    "torch212-cxx11-cu126-x86_64-linux": Variant("torch", (2, 12), (12, 6), "cxx11", "cuda", "x86_64", "linux"),
    "torch213-cxx11-cpu-aarch64-linux": Variant("torch", (2, 13), None, "cxx11", "cpu", "aarch64", "linux"),
    "torch29-cxx11-cu130-x86_64-linux": Variant("torch", (2, 9), (13, 0), "cxx11", "cuda", "x86_64", "linux"),
    "torch212-cxx11-rocm71-x86_64-linux": Variant("torch", (2, 12), (7, 1), "cxx11", "rocm", "x86_64", "linux"),
    "torch212-cxx11-xpu20253-x86_64-linux": Variant(
        "torch", (2, 12), (2025, 3), "cxx11", "xpu", "x86_64", "linux"
    ),
    "torch212-cxx11-cann81-aarch64-linux": Variant("torch", (2, 12), (8, 1), "cxx11", "cann", "aarch64", "linux"),
    "torch212-cxx11-neuron-x86_64-linux": Variant("torch", (2, 12), None, "cxx11", "neuron", "x86_64", "linux"),
    "torch212-cxx11-tpu-x86_64-linux": Variant("torch", (2, 12), None, "cxx11", "tpu", "x86_64", "linux"),
    "torch-stable-abi211-cu126-x86_64-linux": Variant(
        "torch-stable-abi", (2, 11), (12, 6), None, "cuda", "x86_64", "linux"
    ),
    "torch-stable-abi210-metal-aarch64-darwin": Variant(
        "torch-stable-abi", (2, 10), None, None, "metal", "aarch64", "darwin"
    ),
    # parse only: tagless, cxx98, darwin, windows, tvm-ffi
    "torch212-cu128-x86_64-linux": Variant("torch", (2, 12), (12, 8), None, "cuda", "x86_64", "linux"),
    "torch26-cxx98-cu118-x86_64-linux": Variant("torch", (2, 6), (11, 8), "cxx98", "cuda", "x86_64", "linux"),
    "torch212-metal-aarch64-darwin": Variant("torch", (2, 12), None, None, "metal", "aarch64", "darwin"),
    "torch212-cpu-aarch64-darwin": Variant("torch", (2, 12), None, None, "cpu", "aarch64", "darwin"),
    "torch212-cu126-x86_64-windows": Variant("torch", (2, 12), (12, 6), None, "cuda", "x86_64", "windows"),
    "tvm-ffi01-cu126-x86_64-linux": Variant("tvm-ffi", (0, 1), (12, 6), None, "cuda", "x86_64", "linux"),
    # noarch and legacy universal
    "torch-cpu": Variant("noarch", None, None, None, "cpu", None, None),
    "torch-cuda": Variant("noarch", None, None, None, "cuda", None, None),
    "torch-rocm": Variant("noarch", None, None, None, "rocm", None, None),
    "torch-metal": Variant("noarch", None, None, None, "metal", None, None),
    "torch-xpu": Variant("noarch", None, None, None, "xpu", None, None),
    "torch-cann": Variant("noarch", None, None, None, "cann", None, None),
    "torch-neuron": Variant("noarch", None, None, None, "neuron", None, None),
    "torch-tpu": Variant("noarch", None, None, None, "tpu", None, None),
    "torch-universal": Variant("universal", None, None, None, "universal", None, None),
    # noarch words are any word (kernels 0.17's cann name, a backend no loader knows): they parse, and only a
    # backend of that name accepts them
    "torch-npu": Variant("noarch", None, None, None, "npu", None, None),
    "torch-opencl": Variant("noarch", None, None, None, "opencl", None, None),
    "mlx-metal": Variant("noarch", None, None, None, "metal", None, None, framework="mlx"),
    "mlx-universal": Variant("universal", None, None, None, "universal", None, None, framework="mlx"),
    # a CPU or OS no build targets parses too (a loader rejects it)
    "torch213-cxx11-cpu-riscv64-linux": Variant("torch", (2, 13), None, "cxx11", "cpu", "riscv64", "linux"),
    # ROCm 7.14 is the legacy format's one two-digit minor; 0.1 is tvm-ffi's major 0
    "torch213-cxx11-rocm714-x86_64-linux": Variant("torch", (2, 13), (7, 14), "cxx11", "rocm", "x86_64", "linux"),
    "tvm-ffi0123-cpu-x86_64-linux": Variant("tvm-ffi", (0, 123), None, None, "cpu", "x86_64", "linux"),
    # the new format (kernels 0.19): dotted versions, the backend written out, the Python ABI named
    "torch-2.13-cxx11-cuda-12.8-cpython-3.9-abi3-x86_64-linux": Variant(
        "torch", (2, 13), (12, 8), "cxx11", "cuda", "x86_64", "linux", python=(3, 9), python_abi="abi3", legacy=False
    ),
    "torch-2.13-cpu-cpython-3.15-abi3t-aarch64-darwin": Variant(
        "torch", (2, 13), None, None, "cpu", "aarch64", "darwin", python=(3, 15), python_abi="abi3t", legacy=False
    ),
    "torch-2.13-cxx11-rocm-7.14-cpython-3.12-abi3-x86_64-linux": Variant(
        "torch", (2, 13), (7, 14), "cxx11", "rocm", "x86_64", "linux", python=(3, 12), python_abi="abi3", legacy=False
    ),
    "torch-stable-abi-2.11-cuda-13.0-cpython-3.9-abi3-x86_64-linux": Variant(
        "torch-stable-abi", (2, 11), (13, 0), None, "cuda", "x86_64", "linux", python=(3, 9), python_abi="abi3", legacy=False
    ),
    "tvm-ffi-0.1-xpu-2025.3-cpython-3.10-abi3-x86_64-linux": Variant(
        "tvm-ffi", (0, 1), (2025, 3), None, "xpu", "x86_64", "linux", python=(3, 10), python_abi="abi3", legacy=False
    ),
    "torch-10.0-cxx11-cann-8.2-cpython-3.9-abi3-aarch64-linux": Variant(
        "torch", (10, 0), (8, 2), "cxx11", "cann", "aarch64", "linux", python=(3, 9), python_abi="abi3", legacy=False
    ),
    # SDKs: agnostic, one backend's (any word), compiled with and without a backend
    "sdk": Variant("sdk", None, None, None, None, None, None, legacy=False),
    "sdk-cuda": Variant("sdk", None, None, None, "cuda", None, None, legacy=False),
    "sdk-cpython-3.12-abi3-x86_64-linux": Variant(
        "sdk", None, None, None, None, "x86_64", "linux", python=(3, 12), python_abi="abi3", legacy=False
    ),
    "sdk-cuda-12.8-cpython-3.12-abi3-x86_64-linux": Variant(
        "sdk", None, (12, 8), None, "cuda", "x86_64", "linux", python=(3, 12), python_abi="abi3", legacy=False
    ),
    "sdk-cpu-cpython-3.15-abi3t-aarch64-linux": Variant(
        "sdk", None, None, None, "cpu", "aarch64", "linux", python=(3, 15), python_abi="abi3t", legacy=False
    ),
}
# fmt: on


@pytest.mark.parametrize(("name", "variant"), NAMES.items(), ids=NAMES.keys())
def test_name_round_trips(name: str, variant: Variant) -> None:
    assert parse_variant(name) == variant
    assert variant.name == name
    assert variant.variant_str == name
    assert parse_variant(variant.name) == variant


@pytest.mark.parametrize(
    ("version", "expected"), [((2, 12), "212"), ((2, 9), "29"), ((0, 1), "01"), ((2, 0), "20")]
)
def test_framework_version_encoding(version: tuple[int, int], expected: str) -> None:
    assert framework_version_name(version) == expected


def test_framework_major_must_be_one_digit() -> None:
    with pytest.raises(ValueError) as error:
        framework_version_name((10, 1))
    assert (
        str(error.value)
        == "Torch version 10.1 cannot be encoded in a variant name: the major must be one digit"
    )


@pytest.mark.parametrize(
    ("backend", "version", "expected"),
    [
        ("cuda", "12.6", "cu126"),
        ("cuda", "13.0", "cu130"),
        ("cuda", "13", "cu130"),
        ("rocm", "7.1", "rocm71"),
        ("xpu", "2025.3.2", "xpu20253"),
        ("cann", "8.1", "cann81"),
    ],
)
def test_compute_encoding(backend: str, version: str, expected: str) -> None:
    assert compute_name(backend, to_major_minor(version)) == expected


@pytest.mark.parametrize("backend", ["cpu", "metal", "neuron", "tpu"])
def test_plain_compute(backend: str) -> None:
    assert compute_name(backend, None) == backend


@pytest.mark.parametrize(
    ("backend", "version", "message"),
    [
        (
            "cuda",
            (12, 10),
            "cuda version 12.10 cannot be encoded in a variant name: the minor must be one digit",
        ),
        (
            "rocm",
            (7, 11),
            "rocm version 7.11 cannot be encoded in a variant name: the minor must be one digit",
        ),
        ("cuda", None, "backend cuda needs a version to name a compiled variant"),
        ("cpu", (1, 0), "backend cpu takes no version, got 1.0"),
        (
            "opencl",
            None,
            "unknown backend 'opencl' (expected one of cpu, cuda, rocm, xpu, metal, neuron, tpu, cann)",
        ),
    ],
)
def test_compute_encoding_errors(backend: str, version: tuple[int, int] | None, message: str) -> None:
    with pytest.raises(ValueError) as error:
        compute_name(backend, version)
    assert str(error.value) == message


def test_variant_rejects_minor_of_ten() -> None:
    with pytest.raises(ValueError, match=re.escape("cuda version 12.10 cannot be encoded")):
        Variant("torch", (2, 12), (12, 10), "cxx11", "cuda", "x86_64", "linux")


@pytest.mark.parametrize(
    ("fields", "options", "message"),
    [
        (("torch-stable-abi", (2, 11), None, "cxx11", "cpu", "x86_64", "linux"), {}, "a torch-stable-abi variant has no C++ ABI tag"),
        (("noarch", None, None, None, "cuda", "x86_64", None), {}, "a noarch variant has no cpu"),
        (("noarch", None, None, None, "universal", None, None), {}, "a noarch variant needs a backend word other than 'universal', got 'universal'"),
        (("torch", None, None, "cxx11", "cpu", "x86_64", "linux"), {}, "a torch variant needs a framework_version"),
        (("torch", (2, 12), None, "cxx11", "opencl", "x86_64", "linux"), {}, "unknown backend 'opencl' (expected one of cpu, cuda, rocm, xpu, metal, neuron, tpu, cann)"),
        (("torch", (2, 12), None, "cxx11", "cpu", "x86-64", "linux"), {}, "a torch variant needs a CPU without '-', got 'x86-64'"),
        (("tvm-ffi", (10, 1), None, None, "cpu", "x86_64", "linux"), {}, "tvm-ffi version 10.1 cannot be encoded in a variant name: the major must be one digit"),
        (("torch", (2, 12), None, None, "cpu", "x86_64", "linux"), {"python": (3, 12), "python_abi": "abi3"}, "a legacy-format variant names no Python ABI (it is CPython 3.9 abi3); use legacy=False"),
        (("torch", (2, 12), None, None, "cpu", "x86_64", "linux"), {"legacy": False}, "a new-format torch variant needs its Python version and ABI"),
        (("torch", (2, 12), None, None, "cpu", "x86_64", "linux"), {"legacy": False, "python": (3, 14), "python_abi": "abi3t"}, "abi3t starts with CPython 3.15; a variant cannot need 3.14 abi3t"),
        (("sdk", None, None, None, None, "x86_64", "linux"), {"legacy": False}, "an sdk variant names its Python ABI, CPU and OS together, or none of them"),
        (("sdk", None, None, None, "cuda", None, None), {}, "an sdk variant exists in the new format only (legacy=False)"),
        (("torch", (2, 12), None, None, "rocm", "x86_64", "linux"), {}, "backend rocm needs a version to name a compiled variant"),
        (("torch", (2, 12), (71, 4), None, "rocm", "x86_64", "linux"), {}, "rocm version 71.4 cannot be encoded in a legacy variant name (rocm714 is ROCm 7.14)"),
    ],
)  # fmt: skip
def test_variant_rejects_invalid_parts(
    fields: tuple[object, ...], options: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError) as error:
        Variant(*fields, **options)  # type: ignore[arg-type]
    assert str(error.value) == message


@pytest.mark.parametrize(
    ("name", "detail"),
    [
        ("cuda-12.6", "expected it to start with 'torch', 'tvm-ffi', 'mlx-' or 'sdk'"),
        ("torch2-cxx11-cu126-x86_64-linux", "'torch2-cxx11' is not a Torch version (legacy format)"),
        ("torchxy-cxx11-cu126-x86_64-linux", "'torchxy-cxx11' is not a Torch version (legacy format)"),
        ("torch212-cxx17-cu126-x86_64-linux", "expected one compute part, got 'cxx17-cu126'"),
        ("torch212-cxx11-cu126-x86_64", "it names no backend"),
        ("torch212", "expected '<compute>-<cpu>-<os>' after the Torch version"),
        ("torch212-cxx11-cuda-x86_64-linux", "compute 'cuda' needs at least two digits after 'cu' (major, then minor digit)"),
        ("torch212-cxx11-cu6-x86_64-linux", "compute 'cu6' needs at least two digits after 'cu' (major, then minor digit)"),
        ("torch212-cxx11-opencl-x86_64-linux", "unknown compute 'opencl'"),
        ("torch-stable-abi2-cu126-x86_64-linux", "'torch-stable-abi2' is not a stable ABI version (legacy format)"),
        ("torch-stable-abi211-cxx11-cu126-x86_64-linux", "expected one compute part, got 'cxx11-cu126'"),
        ("tvm-ffi1-cu126-x86_64-linux", "'tvm-ffi1' is not a tvm-ffi version (legacy format)"),
        ("torch-2.13-cpu-x86_64-linux", "a dotted-format name names its Python ABI ('cpython-<version>-<abi>')"),
        ("torch-2.13-cpu-cpython-3.14-abi3t-x86_64-linux", "abi3t starts with CPython 3.15; a variant cannot need 3.14 abi3t"),
        ("torch-2.13-cpu-cpython-3.12-abi4-x86_64-linux", "Python ABI 'abi4' is not abi3 or abi3t"),
        ("torch-2.13-cuda-13-cpython-3.9-abi3-x86_64-linux", "expected 'cuda-<major>.<minor>', got 'cuda-13'"),
        ("torch-2.13-cu130-cpython-3.9-abi3-x86_64-linux", "unknown backend 'cu130'"),
        ("torch213-cxx11-cu130-cpython-3.9-abi3-x86_64-linux", "expected one compute part, got 'cu130-cpython-3.9-abi3'"),
        ("sdk-cuda-12.8", "expected 'sdk-<backend>', got 'sdk-cuda-12.8'"),
        ("mlx", "expected it to start with 'torch', 'tvm-ffi', 'mlx-' or 'sdk'"),
        # names upstream reads, but as another spelling: a loader that chose one would look for that other directory
        ("torch2012-cxx11-cu126-x86_64-linux", "it reads as 'torch212-cxx11-cu126-x86_64-linux', which is how that variant is spelled (a leading zero, or a version split differently)"),
        ("torch212-cxx11-cu0126-x86_64-linux", "it reads as 'torch212-cxx11-cu126-x86_64-linux', which is how that variant is spelled (a leading zero, or a version split differently)"),
        ("torch-2.013-cpu-cpython-3.9-abi3-x86_64-linux", "it reads as 'torch-2.13-cpu-cpython-3.9-abi3-x86_64-linux', which is how that variant is spelled (a leading zero, or a version split differently)"),
        ("torch", "it reads as 'torch-', which is how that variant is spelled (a leading zero, or a version split differently)"),
    ],
)  # fmt: skip
def test_parse_errors_name_the_part(name: str, detail: str) -> None:
    with pytest.raises(ValueError) as error:
        parse_variant(name)
    assert str(error.value) == f"invalid variant name {name!r}: {detail}"


@pytest.mark.parametrize(
    "name",
    [
        "torch\uff1213-cxx11-cpu-x86_64-linux",  # fullwidth 2
        "torch\u0662\u0661\u0663-cxx11-cpu-x86_64-linux",  # Arabic-Indic 213
        "torch213-cxx11-cu\u0661\u0663\u0660-x86_64-linux",  # Arabic-Indic CUDA 13.0
        "torch-stable-abi\u0662\u0661\u0661-cu130-x86_64-linux",
        "torch-\u0662.13-cpu-cpython-3.9-abi3-x86_64-linux",  # a dotted version, as upstream's isdigit() sees it
        "torch-2.13-cpu-cpython-3.\u0661\u0662-abi3-x86_64-linux",
    ],
)
def test_look_alike_digits_are_never_a_version(name: str) -> None:
    """``str.isdigit`` accepts every Unicode digit; a look-alike never parses as Torch 2.13 (or any version). Upstream's
    parser refuses these too (its version type takes ASCII digits only)."""
    with pytest.raises(ValueError) as error:
        parse_variant(name)
    assert repr(name) in str(error.value)


def test_a_look_alike_cpu_is_another_cpu() -> None:
    """Only versions are digits: a CPU or OS with a zero-width space is just an unknown CPU (upstream parses it too),
    which no loader accepts (tests/test_loader_resolve.py)."""
    assert parse_variant("torch213-cxx11-cpu-x86\u200b_64-linux").cpu == "x86\u200b_64"


@pytest.mark.parametrize("version", ["\uff12.13", "2.\u0661\u0663", "\u0662"])
def test_to_major_minor_takes_ascii_digits_only(version: str) -> None:
    with pytest.raises(ValueError, match="expected numbers separated by dots"):
        to_major_minor(version)


@pytest.mark.parametrize(
    ("backend", "expected"),
    [
        ("cpu", "torch-cpu"),
        ("cuda", "torch-cuda"),
        ("cann", "torch-cann"),
        ("npu", "torch-cann"),
        ("xpu", "torch-xpu"),
    ],
)
def test_noarch_variant(backend: str, expected: str) -> None:
    variant = noarch_variant(backend)
    assert variant.name == expected
    assert parse_variant(expected) == variant


def test_noarch_cann_backend() -> None:
    assert noarch_variant("npu").backend == "cann"


def _entry(backend: str, version: tuple[int, ...] | None, systems: tuple[str, ...]) -> MatrixEntry:
    return MatrixEntry(
        torch=(2, 13),
        torch_pin="2.13.0",
        backend=backend,
        version=version,
        systems=systems,
        required=True,
        index_url=None,
    )


def test_variant_for_entry_linux_is_cxx11() -> None:
    entry = _entry("cuda", (13, 0), ("x86_64-linux", "aarch64-linux"))
    assert variant_for_entry(entry, "x86_64-linux").name == "torch213-cxx11-cu130-x86_64-linux"
    assert variant_for_entry(entry, "aarch64-linux").name == "torch213-cxx11-cu130-aarch64-linux"


def test_variant_for_entry_darwin_has_no_tag() -> None:
    entry = _entry("metal", None, ("aarch64-darwin",))
    assert variant_for_entry(entry, "aarch64-darwin").name == "torch213-metal-aarch64-darwin"


def test_variant_for_entry_xpu_uses_two_parts_of_version() -> None:
    entry = _entry("xpu", (2025, 3, 2), ("x86_64-linux",))
    assert variant_for_entry(entry, "x86_64-linux").name == "torch213-cxx11-xpu20253-x86_64-linux"


@pytest.mark.parametrize("stable_abi", [(2, 11), "2.11"])
def test_variant_for_entry_stable_abi(stable_abi: tuple[int, int] | str) -> None:
    entry = _entry("cuda", (12, 6), ("x86_64-linux",))
    assert (
        variant_for_entry(entry, "x86_64-linux", stable_abi).name == "torch-stable-abi211-cu126-x86_64-linux"
    )


def test_variant_for_entry_stable_abi_newer_than_torch() -> None:
    entry = _entry("cuda", (12, 6), ("x86_64-linux",))
    with pytest.raises(ValueError) as error:
        variant_for_entry(entry, "x86_64-linux", (2, 14))
    assert str(error.value) == "stable ABI 2.14 is newer than the entry's Torch 2.13"


def test_variant_for_entry_unknown_system() -> None:
    entry = _entry("cpu", None, ("x86_64-linux",))
    with pytest.raises(ValueError) as error:
        variant_for_entry(entry, "aarch64-linux")
    assert str(error.value) == "system 'aarch64-linux' is not one of the entry's systems (x86_64-linux)"


# variant_for_environment through detect_environment and detect_backend, with a faked torch
ENVIRONMENT_CASES = [
    ("cu126", make_fake_torch("2.12.0+cu126", cuda="12.6"), "x86_64", "Linux", "torch212-cxx11-cu126-x86_64-linux"),
    ("cu130", make_fake_torch("2.14.1+cu130", cuda="13.0"), "x86_64", "Linux", "torch214-cxx11-cu130-x86_64-linux"),
    ("cpu-only", make_fake_torch("2.13.0+cpu"), "x86_64", "Linux", "torch213-cxx11-cpu-x86_64-linux"),
    ("arm64 cpu", make_fake_torch("2.13.0"), "arm64", "Linux", "torch213-cxx11-cpu-aarch64-linux"),
    ("hip", make_fake_torch("2.12.0+rocm7.1", hip="7.1.25424-4179531dcd"), "x86_64", "Linux", "torch212-cxx11-rocm71-x86_64-linux"),
    ("xpu", make_fake_torch("2.12.0+xpu", xpu="20250300"), "x86_64", "Linux", "torch212-cxx11-xpu20253-x86_64-linux"),
    ("mps", make_fake_torch("2.12.0", mps=True), "arm64", "Darwin", "torch212-metal-aarch64-darwin"),
    ("macos cpu", make_fake_torch("2.13.0"), "arm64", "Darwin", "torch213-cpu-aarch64-darwin"),
    ("windows", make_fake_torch("2.12.0+cu126", cuda="12.6"), "AMD64", "Windows", "torch212-cu126-x86_64-windows"),
    ("pre-release", make_fake_torch("2.15.0a0+git1234"), "x86_64", "Linux", "torch215-cxx11-cpu-x86_64-linux"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("torch", "machine", "system", "expected"),
    [case[1:] for case in ENVIRONMENT_CASES],
    ids=[case[0] for case in ENVIRONMENT_CASES],
)
def test_variant_for_environment(
    monkeypatch: pytest.MonkeyPatch, torch: object, machine: str, system: str, expected: str
) -> None:
    install_fake_torch(monkeypatch, torch, machine=machine, system=system)  # type: ignore[arg-type]
    variant = variant_for_environment()
    assert variant.name == expected
    assert parse_variant(expected) == variant


def test_variant_for_environment_stable_abi(monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_torch(monkeypatch, make_fake_torch("2.14.1+cu130", cuda="13.0"))
    assert variant_for_environment(stable_abi="2.11").name == "torch-stable-abi211-cu130-x86_64-linux"


def test_variant_for_environment_stable_abi_needs_no_cxx11(monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_torch(monkeypatch, make_fake_torch("2.12.0", cxx11_abi=False))
    assert variant_for_environment(stable_abi=(2, 12)).name == "torch-stable-abi212-cpu-x86_64-linux"


def _environment_error(monkeypatch: pytest.MonkeyPatch, torch: object, **kwargs: object) -> str:
    install_fake_torch(monkeypatch, torch)  # type: ignore[arg-type]
    monkeypatch.setattr(runtime, "_cudart_version", lambda: None)
    with pytest.raises(UnsupportedEnvironmentError) as error:
        variant_for_environment(**kwargs)  # type: ignore[arg-type]
    assert isinstance(error.value, ValueError)
    return str(error.value)


def test_non_cxx11_torch_on_linux_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    message = _environment_error(monkeypatch, make_fake_torch("2.12.0", cxx11_abi=False))
    assert message == (
        "Torch 2.12 was not built with the C++11 ABI (torch.compiled_with_cxx11_abi() is not True); "
        "Linux variants need a cxx11 Torch"
    )


def test_stable_abi_newer_than_torch_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    message = _environment_error(monkeypatch, make_fake_torch("2.12.0", cuda="12.6"), stable_abi="2.13")
    assert message == "Torch 2.12 is older than the stable ABI 2.13; install torch>=2.13"


def test_no_torch_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    message = _environment_error(monkeypatch, None)
    assert (
        message
        == "Torch is not installed in this interpreter; install torch to build or name a compiled variant"
    )


def test_backend_without_detectable_version_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    message = _environment_error(monkeypatch, make_fake_torch("2.12.0", privateuse1="npu"))
    assert message == "cannot name a variant for backend cann: its version could not be detected"


def test_variant_for_environment_accepts_a_record() -> None:
    record = Environment(
        cpu="aarch64",
        os="linux",
        torch_version=(2, 13),
        cxx11_abi=True,
        backend="cuda",
        backend_version=(13, 2),
    )
    assert variant_for_environment(environment=record).name == "torch213-cxx11-cu132-aarch64-linux"


@pytest.mark.parametrize(
    ("cpu", "os", "message"),
    [
        ("ppc64le", "linux", "unsupported CPU 'ppc64le': variants exist for x86_64 and aarch64 only"),
        ("x86_64", "freebsd", "unsupported OS 'freebsd': variants exist for linux, darwin, windows"),
    ],
)
def test_variant_for_environment_unsupported_platform(cpu: str, os: str, message: str) -> None:
    record = Environment(
        cpu=cpu, os=os, torch_version=(2, 13), cxx11_abi=True, backend="cpu", backend_version=None
    )
    with pytest.raises(UnsupportedEnvironmentError) as error:
        variant_for_environment(environment=record)
    assert str(error.value) == message
