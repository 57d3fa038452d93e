"""Variant names through both loaders: upstream ``kernels`` 0.19.1's parser and resolver and ours give the same
verdicts and the same order, for a generated set of names in both formats, every backend and framework, and
names neither accepts (docs/loading.md, "How a variant is chosen"); and each decision carries its variant in the
same structure as upstream's (docs/loading.md, "Inspecting the variants").

Each environment is simulated for both loaders the same way, at the level both read it: a stand-in ``torch``
module in ``sys.modules`` (``torch.version.cuda``/``hip``/``rocm``/``xpu``, ``torch.accelerator``,
``torch.backends.mps``, the privateuse1 backend name, ``torch_npu``'s CANN version), ``platform.machine``/
``system``/``mac_ver``, ``sys.version_info`` and the free-threading flag (``sysconfig``'s ``Py_GIL_DISABLED``,
which upstream reads, and ``sys.abiflags``, which we read: the same fact). Upstream notes whether ``tvm_ffi`` and
``mlx`` are installed once, at import (``find_spec``), so for it those two module constants are set; for ours the
stand-in modules are importable. Then each loader detects the environment itself: upstream's
``resolve_variants(variants)``, ours ``detect_environment()`` and ``resolve_variants``.

What "the same" means:

- parse: a name is valid for us exactly when upstream parses it and its ``variant_str`` is the name again (a name
  upstream reads as another spelling, ``torch2012-…`` for Torch 2.12, is one it cannot load: it would look for a
  directory of the other name; ours refuses it, docs/migrating.md);
- accepted: the same set of names;
- order: ours is an order upstream's sort could give: no name comes after one upstream strictly ranks below it.
  Upstream ranks some pairs equal (a build's legacy and new-format names; ``torch-`` and ``mlx-`` noarch variants
  of one backend) and then follows Python's string hashing; ours breaks those ties the same way every time;
- structure: each name's decision is of the same class, and its ``variant`` has the same
  ``variant_structure.structure`` (class of each part, versions, flags, ``variant_str``).
"""

from __future__ import annotations

import itertools
import platform
import random
import sys
import sysconfig
from dataclasses import dataclass, field
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
from fake_torch import make_fake_torch
from variant_structure import structure

from kernel_builder.formats import runtime
from kernel_builder.formats.variants import parse_variant
from kernel_builder.loader.decisions import public_decisions
from kernel_builder.loader.resolve import Accepted, resolve_variants, select_backend

upstream_variants: Any = pytest.importorskip(
    "kernels._internals.variants", reason="upstream kernels 0.19 (the test extra) is the reference"
)
upstream_backends: Any = pytest.importorskip("kernels._internals.backends")

# --- the names ------------------------------------------------------------------------------------------------

SYSTEMS = ("x86_64-linux", "aarch64-linux", "aarch64-darwin", "x86_64-windows")
LEGACY_COMPUTE = (
    "cpu", "cu126", "cu128", "cu129", "cu130", "cu132", "rocm64", "rocm71", "rocm72", "rocm714",
    "xpu20252", "xpu20253", "cann81", "cann82", "metal", "neuron", "tpu",
)  # fmt: skip
NEW_COMPUTE = (
    "cpu", "cuda-12.6", "cuda-12.8", "cuda-13.0", "rocm-6.4", "rocm-7.1", "rocm-7.2", "rocm-7.14",
    "xpu-2025.3", "cann-8.2", "metal", "neuron", "tpu",
)  # fmt: skip
PYTHONS = (
    "cpython-3.9-abi3",
    "cpython-3.11-abi3",
    "cpython-3.12-abi3",
    "cpython-3.15-abi3",
    "cpython-3.15-abi3t",
)
LEGACY_FRAMEWORKS = (
    "torch213-cxx11", "torch213", "torch212-cxx11", "torch213-cxx98", "torch29-cxx11",
    "torch-stable-abi211", "torch-stable-abi213", "torch-stable-abi214", "tvm-ffi01", "tvm-ffi02",
)  # fmt: skip
NEW_FRAMEWORKS = (
    "torch-2.13-cxx11", "torch-2.13", "torch-2.12-cxx11", "torch-2.13-cxx98", "torch-10.0",
    "torch-stable-abi-2.11", "torch-stable-abi-2.13", "torch-stable-abi-2.14", "tvm-ffi-0.1",
)  # fmt: skip
NOARCH = (
    *(f"torch-{word}" for word in ("cpu", "cuda", "rocm", "metal", "xpu", "cann", "npu", "neuron", "tpu", "universal", "opencl")),
    "mlx-metal", "mlx-cuda", "mlx-cpu", "mlx-universal",
    "sdk", "sdk-cuda", "sdk-rocm", "sdk-cpu", "sdk-cann",
    *(f"sdk-{c}-{p}-{s}" for c in ("cuda-12.8", "cuda-13.0", "rocm-7.1", "cpu", "cann-8.2") for p in ("cpython-3.9-abi3", "cpython-3.15-abi3t") for s in ("x86_64-linux", "aarch64-linux")),
    *(f"sdk-{p}-{s}" for p in PYTHONS[:3] for s in SYSTEMS[:2]),
)  # fmt: skip
#: Names neither loader accepts, or that upstream reads as another spelling.
INVALID = (
    "build", "notes", "torch", "mlx", "mlx-2", "cuda-12.8", "Torch213-cxx11-cpu-x86_64-linux",
    "torch213", "torch213-cpu", "torch213-cpu-x86_64", "torch213-cxx17-cpu-x86_64-linux",
    "torch213-cxx11-cuda-x86_64-linux", "torch213-cxx11-CPU-x86_64-linux", "torch213-cxx11-cu6-x86_64-linux",
    "torch2013-cxx11-cpu-x86_64-linux", "torch213-cxx11-cu0128-x86_64-linux", "torch213-cxx11-rocm0072-x86_64-linux",
    "torch-2.13-cxx11-cpu-x86_64-linux", "torch-2.13-cpu-cpython-3.14-abi3t-x86_64-linux",
    "torch-2.13-cpu-cpython-3-abi3-x86_64-linux", "torch-2.13-cpu-cpython-3.9-abi4-x86_64-linux",
    "torch-2.13-cuda-12-cpython-3.9-abi3-x86_64-linux", "torch-2.13-cuda-12.8.1-cpython-3.9-abi3-x86_64-linux",
    "torch-2.13-cu128-cpython-3.9-abi3-x86_64-linux", "torch213-cxx11-cuda-12.8-x86_64-linux",
    "torch-02.13-cpu-cpython-3.9-abi3-x86_64-linux", "torch-2.013-cpu-cpython-3.9-abi3-x86_64-linux",
    "torch-2.13-cpu-cpython-3.09-abi3-x86_64-linux", "torch-stable-abi", "torch-stable-abi-2.11",
    "torch-stable-abi2-cpu-x86_64-linux", "torch-stable-abi211-cxx11-cpu-x86_64-linux", "tvm-ffi", "tvm-ffi-",
    "tvm-ffi1-cpu-x86_64-linux", "tvm-ffi-0.1", "tvm-ff-0.1-cpu", "sdk-cuda-12.8", "sdk-cuda-cpython-3.9-abi3-x86_64-linux",
    "sdk-x-cpython", "sdk-cpython", "sdk-cpython-3.12-abi3", "sdk-cpython-3.14-abi3t-x86_64-linux",
    "torch\uff1213-cxx11-cpu-x86_64-linux", "torch213-cxx11-cu\u0661\u0662\u0668-x86_64-linux",
    "torch-\u0662.13-cpu-cpython-3.9-abi3-x86_64-linux", "torch213-cxx11-cpu-x86_64-linux-extra",
    "torch213-cxx11-cpu-x86_64-l\u00efnux", "torch213-cxx11-cpu-riscv64-linux", "torch-cuda-12.8", "torch-",
    "mlx-", "sdk-", "torch-stable", "torch-cxx11",
)  # fmt: skip


def generated_names() -> list[str]:
    """Every noarch, SDK and invalid name above, and compiled names in both formats: each framework with each
    compute part on the common systems, and a deterministic sample of the rest of the product."""
    legacy = [f"{f}-{c}-{s}" for f, c, s in itertools.product(LEGACY_FRAMEWORKS, LEGACY_COMPUTE, SYSTEMS)]
    new = [
        f"{f}-{c}-{p}-{s}" for f, c, p, s in itertools.product(NEW_FRAMEWORKS, NEW_COMPUTE, PYTHONS, SYSTEMS)
    ]
    common = [name for name in legacy + new if name.endswith("-x86_64-linux") and "cpython-3.9-abi3-" in name]
    common += [name for name in legacy if name.endswith("-x86_64-linux")]
    sample = random.Random(39)
    names = [*common, *sample.sample(legacy, 200), *sample.sample(new, 300), *NOARCH, *INVALID]
    return list(dict.fromkeys(names))


NAMES = generated_names()


def test_the_generated_set_covers_every_form() -> None:
    assert len(NAMES) >= 200
    joined = "\n".join(NAMES)
    for part in (
        *LEGACY_COMPUTE,
        *NEW_COMPUTE,
        "torch-stable-abi-",
        "tvm-ffi-",
        "tvm-ffi0",
        "abi3t",
        "sdk-",
        "mlx-",
    ):
        assert part in joined, part
    assert set(INVALID) <= set(NAMES)


# --- parse verdicts -----------------------------------------------------------------------------------------


def upstream_reading(name: str) -> str | None:
    """The name upstream reads ``name`` as, or ``None`` when it does not parse it."""
    try:
        return str(upstream_variants.parse_variant(name).variant_str)
    except ValueError:
        return None


def ours_parses(name: str) -> bool:
    try:
        parse_variant(name)
    except ValueError:
        return False
    return True


def test_parse_verdicts_are_upstreams() -> None:
    mismatches = []
    respelled = []
    for name in NAMES:
        reading = upstream_reading(name)
        if reading is not None and reading != name:
            respelled.append(name)
        if ours_parses(name) != (reading == name):
            mismatches.append((name, reading, ours_parses(name)))
    assert mismatches == []
    # the names upstream reads as another spelling, each refused here as such
    assert sorted(respelled) == sorted(
        [
            "torch",
            "torch2013-cxx11-cpu-x86_64-linux",
            "torch213-cxx11-cu0128-x86_64-linux",
            "torch213-cxx11-rocm0072-x86_64-linux",
            "torch-02.13-cpu-cpython-3.9-abi3-x86_64-linux",
            "torch-2.013-cpu-cpython-3.9-abi3-x86_64-linux",
            "torch-2.13-cpu-cpython-3.09-abi3-x86_64-linux",
        ]
    )
    for name in respelled:
        with pytest.raises(ValueError, match="it reads as"):
            parse_variant(name)
    valid = [name for name in NAMES if ours_parses(name)]
    assert len(valid) >= 200 and len(NAMES) - len(valid) >= 40


# --- simulated environments --------------------------------------------------------------------------------


class _VersionInfo(tuple):  # type: ignore[type-arg]
    """``sys.version_info`` for another CPython: a tuple with the named fields."""

    major = property(lambda self: self[0])
    minor = property(lambda self: self[1])
    micro = property(lambda self: self[2])
    releaselevel = property(lambda self: self[3])
    serial = property(lambda self: self[4])


@dataclass(frozen=True)
class Machine:
    """One simulated environment: what each loader reads, given to both."""

    torch: SimpleNamespace | None
    machine: str = "x86_64"
    system: str = "Linux"
    mac_version: str = ""
    python: tuple[int, int] | None = None  # None: this interpreter's
    free_threaded: bool = False
    cann: str | None = None  # torch_npu's get_cann_version()
    tvm_ffi: str | None = None
    mlx: bool = False
    modules: dict[str, ModuleType] = field(default_factory=dict)


def _module(name: str, **attributes: object) -> ModuleType:
    module = ModuleType(name)
    for key, value in attributes.items():
        setattr(module, key, value)
    return module


MACHINES = {
    "this machine": None,
    "CUDA 12.8": Machine(make_fake_torch("2.13.0+cu128", cuda="12.8")),
    "ROCm 7.2": Machine(make_fake_torch("2.13.0+rocm7.2", hip="7.2.53211-e1f5ce7b2b", rocm="7.2.0")),
    "free-threaded 3.15": Machine(make_fake_torch("2.13.0+cpu"), python=(3, 15), free_threaded=True),
    "GIL 3.15": Machine(make_fake_torch("2.13.0+cu130", cuda="13.0"), python=(3, 15)),
    "CANN": Machine(make_fake_torch("2.13.0", privateuse1="npu"), machine="aarch64", cann="8.2.RC1"),
    "XPU": Machine(make_fake_torch("2.13.0+xpu", xpu="20250300")),
    "TPU": Machine(make_fake_torch("2.13.0", tpu=True)),
    "Metal, macOS 26 with MLX": Machine(
        make_fake_torch("2.13.0", mps=True, cxx11_abi=False), "arm64", "Darwin", "26.1", mlx=True
    ),
    "CUDA 13.0 and tvm-ffi 0.1": Machine(make_fake_torch("2.12.0+cu130", cuda="13.0"), tvm_ffi="0.1.4"),
}


def simulate(monkeypatch: pytest.MonkeyPatch, machine: Machine | None) -> None:
    """Make this process look like ``machine`` to both loaders (``None``: leave it as it is)."""
    if machine is None:
        return
    monkeypatch.setitem(sys.modules, "torch", machine.torch)
    monkeypatch.setattr(platform, "machine", lambda: machine.machine)
    monkeypatch.setattr(platform, "system", lambda: machine.system)
    monkeypatch.setattr(platform, "mac_ver", lambda: (machine.mac_version, ("", "", ""), ""))
    if machine.python is not None:
        monkeypatch.setattr(sys, "version_info", _VersionInfo((*machine.python, 0, "final", 0)))
    real = sysconfig.get_config_var
    gil_disabled = 1 if machine.free_threaded else 0
    monkeypatch.setattr(
        sysconfig, "get_config_var", lambda name: gil_disabled if name == "Py_GIL_DISABLED" else real(name)
    )
    monkeypatch.setattr(sys, "abiflags", "t" if machine.free_threaded else "", raising=False)
    if machine.cann is not None:
        collect_env = _module("torch_npu.utils.collect_env", get_cann_version=lambda: machine.cann)
        monkeypatch.setitem(sys.modules, "torch_npu", _module("torch_npu"))
        monkeypatch.setitem(
            sys.modules, "torch_npu.utils", _module("torch_npu.utils", collect_env=collect_env)
        )
        monkeypatch.setitem(sys.modules, "torch_npu.utils.collect_env", collect_env)
    monkeypatch.setitem(
        sys.modules,
        "tvm_ffi",
        None if machine.tvm_ffi is None else _module("tvm_ffi", __version__=machine.tvm_ffi),
    )
    monkeypatch.setattr(upstream_variants, "has_tvm_ffi", machine.tvm_ffi is not None)
    if machine.mlx:
        monkeypatch.setitem(sys.modules, "mlx", _module("mlx"))
    else:
        monkeypatch.setitem(sys.modules, "mlx", None)
    monkeypatch.setattr(upstream_variants, "has_mlx", machine.mlx)
    monkeypatch.setattr(upstream_backends, "has_mlx", machine.mlx)


def upstream_accepts(names: list[str]) -> list[Any]:
    variants = [upstream_variants.parse_variant(name) for name in names]
    accepted, _ = upstream_variants.resolve_variants(variants)
    return list(accepted)


def strictly_before(first: Any, second: Any) -> bool:
    """Whether upstream's sort puts ``first`` before ``second`` whatever their input order."""
    ranked = upstream_variants._sort_variants(
        [upstream_variants.VariantAccepted(second), upstream_variants.VariantAccepted(first)]
    )
    return ranked[0].variant is first


@pytest.mark.parametrize("machine", MACHINES.values(), ids=MACHINES.keys())
def test_accepted_names_and_their_order_are_upstreams(
    monkeypatch: pytest.MonkeyPatch, machine: Machine | None
) -> None:
    valid = [name for name in NAMES if ours_parses(name)]
    simulate(monkeypatch, machine)
    env = runtime.detect_environment()
    decisions = resolve_variants(valid, env, select_backend(env, None))
    ours = [d.variant.variant_str for d in decisions if isinstance(d, Accepted)]
    theirs = upstream_accepts(valid)
    by_name = {variant.variant_str: variant for variant in theirs}
    assert sorted(ours) == sorted(by_name), "accepted sets differ"
    assert len(ours) >= 3, f"too few accepted names to compare an order: {ours}"
    inversions = [
        (earlier, later)
        for earlier, later in itertools.combinations(ours, 2)
        if strictly_before(by_name[later], by_name[earlier])
    ]
    assert inversions == []


def test_the_simulations_are_what_they_say() -> None:
    """Each simulated environment is detected as meant, by ours (the order test shows upstream agrees)."""
    detected = {}
    for label, machine in MACHINES.items():
        if machine is None:
            continue
        with pytest.MonkeyPatch.context() as monkeypatch:
            simulate(monkeypatch, machine)
            env = runtime.detect_environment()
            detected[label] = (env.backend, env.backend_version, env.python_version, env.free_threaded)
    assert detected == {
        "CUDA 12.8": ("cuda", (12, 8), sys.version_info[:2], False),
        "ROCm 7.2": ("rocm", (7, 2), sys.version_info[:2], False),
        "free-threaded 3.15": ("cpu", None, (3, 15), True),
        "GIL 3.15": ("cuda", (13, 0), (3, 15), False),
        "CANN": ("cann", (8, 2), sys.version_info[:2], False),
        "XPU": ("xpu", (2025, 3), sys.version_info[:2], False),
        "TPU": ("tpu", None, sys.version_info[:2], False),
        "Metal, macOS 26 with MLX": ("metal", None, sys.version_info[:2], False),
        "CUDA 13.0 and tvm-ffi 0.1": ("cuda", (13, 0), sys.version_info[:2], False),
    }


@pytest.mark.parametrize(
    ("machine", "expected"),
    [
        # ROCm minor compatibility (kernels 0.19): rocm71 loads on ROCm 7.2, after rocm72
        ("ROCm 7.2", ["torch213-cxx11-rocm72-x86_64-linux", "torch213-cxx11-rocm71-x86_64-linux"]),
        # free-threaded CPython loads abi3t only
        ("free-threaded 3.15", ["torch-2.13-cxx11-cpu-cpython-3.15-abi3t-x86_64-linux"]),
        # CANN's noarch variant is named after the backend
        ("CANN", ["torch-cann"]),
    ],
)
def test_a_few_verdicts_spelled_out(
    monkeypatch: pytest.MonkeyPatch, machine: str, expected: list[str]
) -> None:
    names = [
        "torch213-cxx11-rocm72-x86_64-linux",
        "torch213-cxx11-rocm71-x86_64-linux",
        "torch213-cxx11-cpu-x86_64-linux",
        "torch-2.13-cxx11-cpu-cpython-3.15-abi3t-x86_64-linux",
        "torch-cann",
        "torch-npu",
    ]
    simulate(monkeypatch, MACHINES[machine])
    env = runtime.detect_environment()
    decisions = resolve_variants(names, env, select_backend(env, None))
    accepted = [d.variant.variant_str for d in decisions if isinstance(d, Accepted)]
    assert accepted == expected
    assert [v.variant_str for v in upstream_accepts(names)] == expected


@pytest.mark.parametrize("machine", MACHINES.values(), ids=MACHINES.keys())
def test_decisions_carry_upstreams_variant_structure(
    monkeypatch: pytest.MonkeyPatch, machine: Machine | None
) -> None:
    """Every name's decision as users get it (our verdicts through ``public_decisions``, as ``get_kernel_variants``
    hands them out): the same class (``VariantAccepted`` or ``VariantRejected``) and the same structure of its
    ``variant`` (ArchVariant, NoarchVariant or SdkVariant, and their parts), ours and upstream's."""
    valid = [name for name in NAMES if ours_parses(name)]
    simulate(monkeypatch, machine)
    env = runtime.detect_environment()
    ours = {
        d.variant.variant_str: (type(d).__name__, structure(d.variant))
        for d in public_decisions(resolve_variants(valid, env, select_backend(env, None)))
    }
    _, trace = upstream_variants.resolve_variants([upstream_variants.parse_variant(name) for name in valid])
    theirs = {d.variant.variant_str: (type(d).__name__, structure(d.variant)) for d in trace}
    assert len(ours) == len(valid)
    assert ours == theirs
