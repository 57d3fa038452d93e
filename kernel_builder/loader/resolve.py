"""Variant resolution: judge each variant directory against the environment and sort them (docs/loading.md).

:func:`resolve_variants` is a pure function of the variant names, an environment record, the selected backend,
a metadata lookup and the visible GPUs; it never detects anything itself. Every decision keeps its reason, and
:func:`trace` renders them for :class:`~kernel_builder.loader.NoCompatibleVariantError`. Detection lives
apart: ``kernel_builder.formats.runtime.detect_environment`` for the record and :func:`probe_gpus` for the
devices, which callers hand in wrapped in a :class:`GpuProbe` so that Torch's CUDA state is touched only when
the GPU-architecture check needs it (docs/loading.md).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from kernel_builder.build.plan.capabilities import CAPABILITY_RE, device_runs, rocm_device_runs
from kernel_builder.formats.metadata import Metadata
from kernel_builder.formats.runtime import Environment
from kernel_builder.formats.variants import Variant, compute_name, parse_variant

__all__ = [
    "Decision",
    "Device",
    "GpuProbe",
    "MetadataLookup",
    "VariantAccepted",
    "VariantRejected",
    "allowed_backends",
    "environment_line",
    "metadata_disagreement",
    "probe_gpus",
    "resolve_variants",
    "select_backend",
    "trace",
]

logger = logging.getLogger("kernel_builder")

Device: TypeAlias = tuple[int, int] | str
"""A visible GPU: its CUDA compute capability ``(major, minor)`` or its ROCm architecture (``gfx942``)."""
MetadataLookup: TypeAlias = Callable[[str], Metadata | None]
"""Variant directory name → its ``metadata.json``, or ``None`` when the variant has none."""

_ARCH_KINDS = ("torch-stable-abi", "torch", "tvm-ffi")
# Preference of each kind, lower first (docs/loading.md, "How a variant is chosen").
_KIND_RANK = {"torch-stable-abi": 0, "torch": 1, "tvm-ffi": 2, "noarch": 3, "universal": 4}
_GPU_BACKENDS = ("cuda", "rocm")
_FREE_THREADING_OK = (3, 15)
_METAL_MIN_MACOS = (26, 0)


@dataclass(frozen=True)
class VariantAccepted:
    """A variant that can load here; ``variant.variant_str`` is its directory name."""

    variant: Variant


@dataclass(frozen=True)
class VariantRejected:
    """A variant that cannot load here, with the first failed check naming both sides' values."""

    variant: Variant
    reason: str


Decision: TypeAlias = VariantAccepted | VariantRejected


class GpuProbe:
    """The visible devices, from a probe that runs at most once and only when asked.

    ``GpuProbe([(9, 0)])`` wraps a fixed list (tests); ``GpuProbe(lambda: probe_gpus("cuda"))`` probes lazily.
    """

    def __init__(self, source: Sequence[Device] | Callable[[], Sequence[Device]]) -> None:
        self._source = source
        self._devices: tuple[Device, ...] | None = None

    def devices(self) -> tuple[Device, ...]:
        if self._devices is None:
            source = self._source
            self._devices = tuple(source() if callable(source) else source)
        return self._devices

    @property
    def probed(self) -> tuple[Device, ...] | None:
        """The devices if they have been probed, else ``None``."""
        return self._devices


def _version(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


# --- backend selection (docs/loading.md) -------------------------------------------------------------------------------


def allowed_backends(environment: Environment) -> tuple[str, ...]:
    """The values ``backend=`` may take here: ``cpu`` and the detected backend (``cann`` also as ``npu``)."""
    detected = environment.backend
    if detected == "cpu":
        return ("cpu",)
    if detected == "cann":
        return ("cpu", "cann", "npu")
    return ("cpu", detected)


def select_backend(environment: Environment, backend: str | None) -> str:
    """The backend variants are judged for: the detected one, or an explicit ``cpu`` / detected name.

    ``npu`` is returned as ``cann``. Any other value raises ``ValueError`` naming it and the allowed values.
    """
    if backend is None:
        return environment.backend
    allowed = allowed_backends(environment)
    if backend not in allowed:
        raise ValueError(
            f"invalid backend {backend!r}: on this system it must be one of {', '.join(allowed)} "
            f"(detected backend: {environment.backend})"
        )
    return "cann" if backend == "npu" else backend


def _selected_version(environment: Environment, backend: str) -> tuple[int, int] | None:
    return environment.backend_version if backend == environment.backend else None


def _compute_label(backend: str, version: tuple[int, int] | None) -> str:
    """The environment's side of a backend comparison: ``cu130``, ``cpu``, ``rocm (version unknown)``."""
    try:
        return compute_name(backend, version)
    except ValueError:
        return f"{backend} (version unknown)" if version is None else f"{backend} {_version(version)}"


# --- name-based checks (docs/loading.md) -------------------------------------------------------------------------------


def _check_arch(variant: Variant, env: Environment, backend: str) -> str | None:
    assert variant.framework_version is not None
    version = _version(variant.framework_version)
    if env.free_threaded and env.python_version < _FREE_THREADING_OK:
        return (
            f"compiled variants cannot load in free-threaded CPython {_version(env.python_version)} "
            f"(supported from {_version(_FREE_THREADING_OK)}); only noarch variants can"
        )
    if variant.cpu != env.cpu:
        return f"built for CPU {variant.cpu}; this machine is {env.cpu}"
    if variant.os != env.os:
        return f"built for OS {variant.os}; this machine runs {env.os}"
    torch = env.torch_version
    if variant.kind == "torch":
        if torch is None:
            return f"built for Torch {version}; Torch is not installed"
        if variant.framework_version != torch:
            return f"built for Torch {version}; this environment has Torch {_version(torch)}"
        if variant.cxx_abi is not None:
            actual = {True: "cxx11", False: "cxx98", None: None}[env.cxx11_abi]
            if variant.cxx_abi != actual:
                uses = f"uses the {actual} ABI" if actual else "has an unknown C++ ABI"
                return f"built with the {variant.cxx_abi} ABI; Torch {_version(torch)} {uses}"
    elif variant.kind == "torch-stable-abi":
        if torch is None:
            return f"built for stable ABI {version}; Torch is not installed"
        if variant.framework_version > torch:
            return f"built for stable ABI {version}, newer than this environment's Torch {_version(torch)}"
    else:
        tvm_ffi = env.tvm_ffi_version
        if tvm_ffi is None:
            return f"built for tvm-ffi {version}; tvm-ffi is not installed"
        if variant.framework_version != tvm_ffi:
            return f"built for tvm-ffi {version}; this environment has tvm-ffi {_version(tvm_ffi)}"
    return _check_backend(variant, env, backend)


def _check_backend(variant: Variant, env: Environment, backend: str) -> str | None:
    env_version = _selected_version(env, backend)
    env_label = _compute_label(backend, env_version)
    compute = variant.compute
    if variant.backend != backend:
        return f"built for {compute}; the selected backend is {env_label}"
    if backend == "cuda":
        assert variant.backend_version is not None
        cuda = f"CUDA {_version(variant.backend_version)} ({compute})"
        if env_version is None:
            return f"built for {cuda}; the environment's CUDA version is unknown"
        if variant.backend_version[0] != env_version[0]:
            return (
                f"built for {cuda}, major version differs from the environment's CUDA {_version(env_version)}"
            )
        if variant.backend_version[1] > env_version[1]:
            return (
                f"built for {cuda}, minor version newer than the environment's CUDA {_version(env_version)}"
            )
        return None
    if compute != env_label:
        return f"built for {compute}; the environment has {env_label}"
    if backend == "metal":
        macos = env.macos_version
        if macos is None or macos < _METAL_MIN_MACOS:
            running = f"macOS {_version(macos)}" if macos is not None else "an unknown macOS version"
            needs = f"macOS {_version(_METAL_MIN_MACOS)} or later"
            return f"built for metal, which needs {needs}; this machine runs {running}"
    return None


def _check_name(variant: Variant, env: Environment, backend: str) -> str | None:
    """The first failed name-based check (docs/loading.md), or ``None``."""
    if variant.kind in _ARCH_KINDS:
        return _check_arch(variant, env, backend)
    if variant.kind == "universal" or variant.backend == backend:
        return None
    token = variant.variant_str.removeprefix("torch-")
    return f"noarch variant for {token}; the selected backend is {backend}"


def _preference(variant: Variant) -> tuple[int, int, int, int, int, str]:
    """The sort key among accepted variants (docs/loading.md): kind, newer stable ABI, tagless, newer backend, name."""
    abi = variant.framework_version if variant.kind == "torch-stable-abi" else None
    backend_version = variant.backend_version or (0, 0)
    return (
        _KIND_RANK[variant.kind],
        -(abi[0] * 1000 + abi[1]) if abi else 0,
        1 if variant.cxx_abi is not None else 0,
        -backend_version[0],
        -backend_version[1],
        variant.variant_str,
    )


# --- the name and the metadata agree ---------------------------------------------------------------------


def metadata_disagreement(name: str, metadata: Metadata) -> str | None:
    """Why a variant's ``metadata.json`` contradicts its directory name ``name``, or ``None``.

    Resolution trusts the name; the metadata must then say the same: the backend the name gives (any, for
    ``torch-universal``), and GPU architectures only for a GPU backend. ``metadata.json`` records no Torch
    version, so that part of the name cannot be cross-checked here.
    """
    variant = parse_variant(name)
    if variant.kind != "universal" and metadata.backend_type != variant.backend:
        return (
            f"the directory name says backend {variant.backend}, but its metadata.json says backend "
            f"{metadata.backend_type!r}"
        )
    if metadata.backend_archs and metadata.backend_type not in _GPU_BACKENDS:
        return (
            f"its metadata.json lists backend.archs {list(metadata.backend_archs)!r}, but a "
            f"{metadata.backend_type} variant has no GPU architectures"
        )
    return None


# --- GPU architectures (docs/loading.md) -------------------------------------------------------------------------------


def _check_gpus(name: str, metadata: Metadata | None, backend: str, devices: Sequence[Device]) -> str | None:
    if metadata is None:
        return "no metadata.json to check the visible GPUs against"
    archs = metadata.backend_archs
    if archs is None:
        return None
    if backend == "cuda":
        valid = [entry for entry in archs if CAPABILITY_RE.fullmatch(entry)]
    else:
        valid = [entry for entry in archs if entry.split(":", 1)[0].startswith("gfx")]
    ignored = [entry for entry in archs if entry not in valid]
    if ignored:
        logger.warning("variant %s: ignoring unparseable backend.archs entries %s", name, ", ".join(ignored))
    if not valid:
        return None
    provides = ", ".join(valid)
    for index, device in enumerate(devices):
        if isinstance(device, tuple):
            if not any(device_runs(device, entry) for entry in valid):
                return f"GPU {index} has compute capability {_version(device)}; build provides {provides}"
        elif not any(rocm_device_runs(device, entry) for entry in valid):
            return f"GPU {index} has architecture {device.split(':', 1)[0]}; build provides {provides}"
    return None


# --- resolution ---------------------------------------------------------------------------------------------


def resolve_variants(
    names: Iterable[str],
    environment: Environment,
    backend: str,
    metadata: MetadataLookup | None = None,
    *,
    gpus: GpuProbe | Sequence[Device] = (),
    check_gpu_arch: bool = True,
    first_only: bool = False,
) -> list[Decision]:
    """Judge every variant name and return the decisions in preference order (best accepted first; docs/loading.md).

    ``backend`` is the selected backend (:func:`select_backend`). Unparseable names are logged and appear in
    no decision. The GPU-architecture check runs, in preference order, on candidates that pass the name checks
    when ``backend`` is ``cuda`` or ``rocm``, ``check_gpu_arch`` is true and ``gpus`` has a device; it reads
    ``metadata(name)``. With ``first_only`` it stops at the first accepted candidate: later candidates are
    returned as accepted without their GPU check (enough for a load, which takes the first).
    """
    backend = "cann" if backend == "npu" else backend
    variants: dict[str, Variant] = {}
    for name in names:
        try:
            variants[name] = parse_variant(name)
        except ValueError as error:
            logger.warning("skipping variant directory %r: %s", name, error)

    accepted: list[Variant] = []
    rejected: list[VariantRejected] = []
    for variant in variants.values():
        reason = _check_name(variant, environment, backend)
        if reason is None:
            accepted.append(variant)
        else:
            rejected.append(VariantRejected(variant, reason))
    accepted.sort(key=_preference)

    probe = gpus if isinstance(gpus, GpuProbe) else GpuProbe(gpus)
    if accepted and check_gpu_arch and backend in _GPU_BACKENDS and probe.devices():
        checked: list[Variant] = []
        for position, variant in enumerate(accepted):
            if first_only and checked:
                checked.extend(accepted[position:])
                break
            name = variant.variant_str
            reason = _check_gpus(name, None if metadata is None else metadata(name), backend, probe.devices())
            if reason is None:
                checked.append(variant)
            else:
                rejected.append(VariantRejected(variant, reason))
        accepted = checked

    rejected.sort(key=lambda decision: decision.variant.variant_str)
    return [*(VariantAccepted(variant) for variant in accepted), *rejected]


def trace(decisions: Sequence[Decision]) -> list[str]:
    """One line per decision, in order.

    ``<variant>: compatible (preferred)`` for the first, ``<variant>: compatible`` for other accepted ones and
    ``<variant>: <reason>`` for rejected ones.
    """
    lines = []
    for index, decision in enumerate(decisions):
        name = decision.variant.variant_str
        if isinstance(decision, VariantRejected):
            lines.append(f"{name}: {decision.reason}")
        else:
            lines.append(f"{name}: compatible (preferred)" if index == 0 else f"{name}: compatible")
    return lines


def _device_label(device: Device) -> str:
    return _version(device) if isinstance(device, tuple) else device.split(":", 1)[0]


def environment_line(environment: Environment, backend: str, gpus: Sequence[Device] | None = None) -> str:
    """The environment as the error shows it: Torch and ABI, backend and version, cpu-os, GPUs if probed."""
    env = environment
    parts = []
    if env.torch_version is None:
        parts.append("Torch not installed")
    else:
        abi = {True: " (cxx11 ABI)", False: " (cxx98 ABI)", None: ""}[env.cxx11_abi]
        parts.append(f"Torch {_version(env.torch_version)}{abi}")
    if env.tvm_ffi_version is not None:
        parts.append(f"tvm-ffi {_version(env.tvm_ffi_version)}")
    detected = env.backend + (f" {_version(env.backend_version)}" if env.backend_version else "")
    if backend == env.backend:
        parts.append(f"backend {detected}")
    else:
        parts.append(f"backend {backend} (selected; detected {detected})")
    system = f"{env.cpu}-{env.os}"
    if env.macos_version is not None:
        system += f" (macOS {_version(env.macos_version)})"
    parts.append(system)
    if env.free_threaded:
        parts.append(f"free-threaded CPython {_version(env.python_version)}")
    if gpus is not None:
        parts.append(f"GPUs {', '.join(_device_label(d) for d in gpus)}" if gpus else "no GPU visible")
    return ", ".join(parts)


def describe_no_compatible(subject: str, environment: str, decisions: Sequence[Decision]) -> str:
    """The message of :class:`NoCompatibleVariantError`: subject, environment line, then the trace."""
    lines = [f"no compatible kernel variant in {subject}", f"environment: {environment}"]
    if decisions:
        lines.append("variants:")
        lines += [f"  {line}" for line in trace(decisions)]
    else:
        lines.append("variants: no build variants")
    return "\n".join(lines)


# --- device probing (impure; never called by resolve_variants) ----------------------------------------------


def probe_gpus(backend: str) -> list[Device]:
    """The visible devices of a CUDA or ROCm backend, through Torch; empty without Torch or devices.

    CUDA devices give ``torch.cuda.get_device_capability(i)``, ROCm devices their ``gcnArchName`` before the
    first ``:``. ``CUDA_VISIBLE_DEVICES`` / ``HIP_VISIBLE_DEVICES`` narrow the list as they narrow Torch's.
    """
    if backend not in _GPU_BACKENDS:
        return []
    try:
        torch: Any = importlib.import_module("torch")
    except ImportError:
        return []
    cuda = torch.cuda
    if not cuda.is_available():
        return []
    devices: list[Device] = []
    for index in range(cuda.device_count()):
        if backend == "cuda":
            major, minor = cuda.get_device_capability(index)
            devices.append((int(major), int(minor)))
        else:
            arch = str(getattr(cuda.get_device_properties(index), "gcnArchName", ""))
            devices.append(arch.split(":", 1)[0])
    return devices
