"""Variant names: encoding, parsing, round trips and the running environment's variant (docs/layout.md).

The versions here are examples of the naming rules (including historical and unsupported ones), not the
matrix's: the supported set is read through tests/matrix_data.py where a test needs it.
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
    "torch-npu": Variant("noarch", None, None, None, "cann", None, None),
    "torch-neuron": Variant("noarch", None, None, None, "neuron", None, None),
    "torch-tpu": Variant("noarch", None, None, None, "tpu", None, None),
    "torch-universal": Variant("universal", None, None, None, "universal", None, None),
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
    ("fields", "message"),
    [
        (("torch-stable-abi", (2, 11), None, "cxx11", "cpu", "x86_64", "linux"), "a torch-stable-abi variant has no C++ ABI tag"),
        (("noarch", None, None, None, "cuda", "x86_64", None), "a noarch variant has no cpu"),
        (("noarch", None, None, None, "opencl", None, None), "unknown backend 'opencl' (expected one of cpu, cuda, rocm, xpu, metal, neuron, tpu, cann)"),
        (("torch", None, None, "cxx11", "cpu", "x86_64", "linux"), "a torch variant needs a framework_version"),
        (("torch", (2, 12), None, "cxx11", "cpu", "i686", "linux"), "unknown CPU 'i686' (expected one of x86_64, aarch64)"),
        (("torch", (2, 12), None, "cxx11", "cpu", "x86_64", "freebsd"), "unknown OS 'freebsd' (expected one of linux, darwin, windows)"),
        (("tvm-ffi", (10, 1), None, None, "cpu", "x86_64", "linux"), "tvm-ffi version 10.1 cannot be encoded in a variant name: the major must be one digit"),
    ],
)  # fmt: skip
def test_variant_rejects_invalid_parts(fields: tuple[object, ...], message: str) -> None:
    with pytest.raises(ValueError) as error:
        Variant(*fields)  # type: ignore[arg-type]
    assert str(error.value) == message


@pytest.mark.parametrize(
    ("name", "detail"),
    [
        ("cuda-12.6", "expected it to start with 'torch', 'torch-stable-abi', 'tvm-ffi' or 'torch-'"),
        ("torch2-cxx11-cu126-x86_64-linux", "Torch version '2' must be at least two digits (major digit, then minor)"),
        ("torchxy-cxx11-cu126-x86_64-linux", "Torch version 'xy' must be at least two digits (major digit, then minor)"),
        ("torch2012-cxx11-cu126-x86_64-linux", "Torch version '2012' has a minor with a leading zero"),
        ("torch212-cxx17-cu126-x86_64-linux", "unknown C++ ABI tag 'cxx17' (expected cxx11 or cxx98)"),
        ("torch212-cxx11-cu126-x86_64", "expected '<compute>-<cpu>-<os>' after the Torch version, got 'cu126-x86_64'"),
        ("torch212", "expected '<compute>-<cpu>-<os>' after the Torch version, got ''"),
        ("torch212-cxx11-cuda-x86_64-linux", "compute 'cuda' needs at least two digits after 'cu' (major, then minor digit)"),
        ("torch212-cxx11-cu6-x86_64-linux", "compute 'cu6' needs at least two digits after 'cu' (major, then minor digit)"),
        ("torch212-cxx11-cu0126-x86_64-linux", "compute 'cu0126' has a major with a leading zero"),
        ("torch212-cxx11-opencl-x86_64-linux", "unknown compute 'opencl' (expected cpu, metal, neuron, tpu, or cu/rocm/xpu/cann followed by a version)"),
        ("torch212-cxx11-cu126-i686-linux", "unknown CPU 'i686' (expected x86_64 or aarch64)"),
        ("torch212-cxx11-cu126-amd64-linux", "unknown CPU 'amd64' (expected x86_64 or aarch64)"),
        ("torch212-cxx11-cu126-x86_64-freebsd", "unknown OS 'freebsd' (expected linux, darwin, windows)"),
        ("torch-stable-abi2-cu126-x86_64-linux", "stable ABI version '2' must be at least two digits (major digit, then minor)"),
        ("torch-stable-abi211-cxx11-cu126-x86_64-linux", "expected '<compute>-<cpu>-<os>' after the stable ABI version, got 'cxx11-cu126-x86_64-linux'"),
        ("tvm-ffi1-cu126-x86_64-linux", "tvm-ffi version '1' must be at least two digits (major digit, then minor)"),
        ("torch-opencl", "unknown noarch backend 'opencl' (expected one of cpu, cuda, rocm, xpu, metal, neuron, tpu, npu, universal)"),
        ("torch-cann", "unknown noarch backend 'cann' (expected one of cpu, cuda, rocm, xpu, metal, neuron, tpu, npu, universal)"),
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
        "torch213-cxx11-cpu-x86\u200b_64-linux",  # a zero-width space
    ],
)
def test_look_alike_digits_and_other_non_ascii_names_are_refused(name: str) -> None:
    """``str.isdigit`` accepts every Unicode digit; a variant name is ASCII, so a look-alike never parses as
    Torch 2.13 (or any version)."""
    with pytest.raises(ValueError) as error:
        parse_variant(name)
    assert "non-ASCII characters" in str(error.value)
    assert repr(name) in str(error.value)


@pytest.mark.parametrize("version", ["\uff12.13", "2.\u0661\u0663", "\u0662"])
def test_to_major_minor_takes_ascii_digits_only(version: str) -> None:
    with pytest.raises(ValueError, match="expected numbers separated by dots"):
        to_major_minor(version)


@pytest.mark.parametrize(
    ("backend", "expected"),
    [
        ("cpu", "torch-cpu"),
        ("cuda", "torch-cuda"),
        ("cann", "torch-npu"),
        ("npu", "torch-npu"),
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
