"""Variant resolution: judge each variant directory against the environment and sort them (docs/loading.md).

:func:`resolve_variants` is a pure function of the variant names, an environment record, the selected backend,
a metadata lookup and the visible GPUs; it never detects anything itself. Every verdict keeps its reason, and
:func:`trace` renders them for :class:`~kernel_builder.loader.NoCompatibleVariantError`.

The verdicts here (:class:`Accepted`, :class:`Rejected`) are the loader's own: they hold our flat parsed name
and are all a load needs. Users get them in upstream ``kernels`` 0.19's form (``VariantAccepted``,
``VariantRejected``, each variant in upstream's structure), which :mod:`kernel_builder.loader.decisions` builds
from these where a decision reaches a user (``get_kernel_variants``, ``NoCompatibleVariantError.decisions``), so
that a load does not import those classes. Detection lives
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

import kernel_builder.backends as backends
from kernel_builder.formats.metadata import Metadata
from kernel_builder.formats.runtime import Environment
from kernel_builder.formats.variants import ARCH_KINDS, Variant, compute_name, parse_variant

__all__ = [
    "Accepted",
    "Device",
    "GpuProbe",
    "MetadataLookup",
    "Rejected",
    "Verdict",
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

_FRAMEWORK_RANK = {"torch-stable-abi": 0, "torch": 1, "tvm-ffi": 2}


@dataclass(frozen=True)
class Accepted:
    """A variant that can load here, as the loader keeps it: our parsed name (cheap to build on every load)."""

    variant: Variant


@dataclass(frozen=True)
class Rejected:
    """A variant that cannot load here, with the first failed check naming both sides' values."""

    variant: Variant
    reason: str


Verdict: TypeAlias = Accepted | Rejected
"""The loader's own verdicts: what :func:`resolve_variants` returns and every load path reads."""


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
    everywhere = backends.names(where="loads_everywhere")
    if detected in everywhere:
        return everywhere
    spec = backends.find(detected)
    return (*everywhere, detected, *(spec.aliases if spec is not None else ()))


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
    spec = backends.by_alias(backend)
    return backend if spec is None else spec.name


def _selected_version(environment: Environment, backend: str) -> tuple[int, int] | None:
    return environment.backend_version if backend == environment.backend else None


def _compute_label(backend: str, version: tuple[int, int] | None) -> str:
    """The environment's side of a backend comparison: ``cu130``, ``cpu``, ``rocm (version unknown)``."""
    try:
        return compute_name(backend, version)
    except ValueError:
        return f"{backend} (version unknown)" if version is None else f"{backend} {_version(version)}"


# --- name-based checks (docs/loading.md; upstream kernels 0.19's rules) -------------------------------------


def _check_python(variant: Variant, env: Environment) -> str | None:
    """Compiled code needs a CPython that loads its stable ABI: ``abi3`` never loads in a free-threaded build,
    and the interpreter must be at least the version the name gives (3.9 for a legacy name)."""
    required = variant.requires_python
    if required is None:
        return None
    if variant.abi == "abi3" and env.free_threaded:
        return (
            f"built for the abi3 stable ABI, which free-threaded CPython {_version(env.python_version)} cannot "
            f"load (it needs an abi3t variant)"
        )
    if env.python_version < required:
        return (
            f"built for CPython {_version(required)} or later ({variant.abi}); this is CPython "
            f"{_version(env.python_version)}"
        )
    return None


def _check_system(variant: Variant, env: Environment) -> str | None:
    if variant.cpu != env.cpu:
        return f"built for CPU {variant.cpu}; this machine is {env.cpu}"
    if variant.os != env.os:
        return f"built for OS {variant.os}; this machine runs {env.os}"
    return None


def _check_framework(variant: Variant, env: Environment) -> str | None:
    assert variant.framework_version is not None
    version = _version(variant.framework_version)
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
    return None


def _check_backend(variant: Variant, env: Environment, backend: str) -> str | None:
    """A compiled variant's backend against the selected one: the same backend; for CUDA and ROCm the same major
    and a minor not newer than the environment's, for other versioned backends the same version; Metal also
    needs a recent enough macOS."""
    env_version = _selected_version(env, backend)
    env_label = _compute_label(backend, env_version)
    compute = variant.compute
    if variant.backend != backend:
        return f"built for {compute}; the selected backend is {env_label}"
    spec = backends.find(backend)
    if spec is not None and spec.abi_compatible_minor:
        return _check_minor_compatible(variant, spec, env_version)
    if spec is not None and spec.versioned and variant.backend_version != env_version:
        return f"built for {compute}; the environment has {env_label}"
    if spec is not None and spec.min_macos is not None:
        macos = env.macos_version
        if macos is None or macos < spec.min_macos:
            running = f"macOS {_version(macos)}" if macos is not None else "an unknown macOS version"
            needs = f"macOS {_version(spec.min_macos)} or later"
            return f"built for {backend}, which needs {needs}; this machine runs {running}"
    return None


def _check_minor_compatible(
    variant: Variant, spec: backends.Backend, env_version: tuple[int, int] | None
) -> str | None:
    """Backends with minor-version compatibility (CUDA, ROCm): same major, a minor not newer than the
    environment's."""
    assert variant.backend_version is not None
    title = spec.title or spec.name
    built = f"{title} {_version(variant.backend_version)} ({variant.compute})"
    if env_version is None:
        return f"built for {built}; the environment's {title} version is unknown"
    if variant.backend_version[0] != env_version[0]:
        return (
            f"built for {built}, major version differs from the environment's {title} {_version(env_version)}"
        )
    if variant.backend_version[1] > env_version[1]:
        return (
            f"built for {built}, minor version newer than the environment's {title} {_version(env_version)}"
        )
    return None


def _check_noarch(variant: Variant, env: Environment, backend: str) -> str | None:
    if variant.framework == "mlx" and not env.mlx:
        return f"an {variant.framework} variant; MLX is not installed"
    if variant.kind == "universal" or variant.backend == backend:
        return None
    return f"noarch variant for {variant.backend}; the selected backend is {backend}"


def _check_sdk(variant: Variant, env: Environment, backend: str) -> str | None:
    reason = _check_python(variant, env)
    if reason is None and variant.cpu is not None:
        reason = _check_system(variant, env)
    if reason is not None or variant.backend is None:
        return reason
    if variant.cpu is None:  # sdk-<backend>: the backend's name only
        return (
            None
            if variant.backend == backend
            else f"sdk for {variant.backend}; the selected backend is {backend}"
        )
    return _check_backend(variant, env, backend)


def _check_name(variant: Variant, env: Environment, backend: str) -> str | None:
    """The first failed name-based check (docs/loading.md), or ``None``; the checks and their order are
    upstream ``kernels`` 0.19's: Python ABI, CPU and OS, framework, backend."""
    if variant.kind in ARCH_KINDS:
        return (
            _check_python(variant, env)
            or _check_system(variant, env)
            or _check_framework(variant, env)
            or _check_backend(variant, env, backend)
        )
    if variant.kind == "sdk":
        return _check_sdk(variant, env, backend)
    return _check_noarch(variant, env, backend)


def _python_order(variant: Variant) -> tuple[int, int, int]:
    """``abi3`` before ``abi3t``, then the newer Python first."""
    abi = variant.abi or "abi3"
    required = variant.requires_python or (0, 0)
    return (0 if abi == "abi3" else 1, -required[0], -required[1])


def _backend_order(variant: Variant) -> int:
    """A newer minor first among versioned backends (upstream compares the minor only: accepted variants of one
    versioned backend share the major)."""
    spec = None if variant.backend is None else backends.find(variant.backend)
    if spec is None or not spec.versioned or variant.backend_version is None:
        return 0
    return -variant.backend_version[1]


def _preference(variant: Variant) -> tuple[int | str, ...]:
    """The sort key among accepted variants (docs/loading.md), upstream ``kernels`` 0.19's order: compiled
    variants (stable ABI, newest first; then Torch, tagless before ``cxx11``; then tvm-ffi; each with the newest
    compatible backend minor, then ``abi3`` before ``abi3t`` and the newest Python), compiled SDKs (a backend's
    before the agnostic one), noarch variants (``universal`` last), then backend-only SDKs, then ``sdk``.

    Where upstream's order has a tie its choice depends on Python's string hashing; ours then takes the new
    format before the legacy one (the same build under both names), ``torch`` before ``mlx``, then the name.
    """
    if variant.kind in ARCH_KINDS:
        if variant.kind == "torch-stable-abi":
            assert variant.framework_version is not None
            abi_version: tuple[int, int] = (-variant.framework_version[0], -variant.framework_version[1])
        elif variant.kind == "torch":
            abi_version = (0, 1 if variant.cxx_abi is not None else 0)
        else:
            abi_version = (0, 0)
        key: tuple[int, ...] = (
            _FRAMEWORK_RANK[variant.kind],
            *abi_version,
            _backend_order(variant),
            *_python_order(variant),
        )
    elif variant.kind == "sdk" and variant.cpu is not None:
        backend_order = 1 if variant.backend is None else _backend_order(variant)
        key = (3, 0, 0, backend_order, *_python_order(variant))
    elif variant.kind == "sdk":
        key = (5 if variant.backend is not None else 6, 0, 0, 0, 0, 0, 0)
    else:
        key = (4, 0, 0, 1 if variant.kind == "universal" else 0, 0, 0, 0)
    return (
        *key,
        1 if variant.legacy and variant.kind in ARCH_KINDS else 0,
        variant.framework != "torch",
        variant.variant_str,
    )


# --- the name and the metadata agree ---------------------------------------------------------------------


def metadata_disagreement(name: str, metadata: Metadata) -> str | None:
    """Why a variant's ``metadata.json`` contradicts its directory name ``name``, or ``None``.

    Resolution trusts the name; the metadata must then say the same: the backend the name gives, and GPU
    architectures only for a GPU backend. A ``torch-universal`` variant or an SDK may hold any backend, and
    metadata of a backend-agnostic build (``"agnostic"``) or of a backend this loader does not know (a newer
    builder's) cannot be compared: upstream's loader reads such a backend only where it needs it, and loading
    does not. ``metadata.json`` records no Torch version, so that part of the name cannot be cross-checked here.
    """
    variant = parse_variant(name)
    declared = metadata.backend_type
    if declared is None or not metadata.backend_known or variant.kind in ("universal", "sdk"):
        return None
    if variant.kind == "noarch" and (variant.backend is None or backends.find(variant.backend) is None):
        return None  # a word that names no backend (a copy's name, torch-cuda.tmp): the name says nothing
    if declared != variant.backend:
        return (
            f"the directory name says backend {variant.backend}, but its metadata.json says backend "
            f"{declared!r}"
        )
    if metadata.backend_archs and _gpu(declared) is None:
        return (
            f"its metadata.json lists backend.archs {list(metadata.backend_archs)!r}, but a "
            f"{declared} variant has no GPU architectures"
        )
    return None


# --- GPU architectures (docs/loading.md) -------------------------------------------------------------------------------


def _check_gpus(name: str, metadata: Metadata | None, backend: str, devices: Sequence[Device]) -> str | None:
    if metadata is None:
        return "no metadata.json to check the visible GPUs against"
    archs = metadata.backend_archs
    if archs is None:
        return None
    gpu = _gpu(backend)
    if gpu is None:
        return None
    valid = [entry for entry in archs if gpu.entry_valid(entry)]
    ignored = [entry for entry in archs if entry not in valid]
    if ignored:
        logger.warning("variant %s: ignoring unparseable backend.archs entries %s", name, ", ".join(ignored))
    if not valid:
        return None
    provides = ", ".join(valid)
    for index, device in enumerate(devices):
        if not any(map(gpu.device_runs(device), valid)):
            return f"GPU {index} has {gpu.describe_device(device)}; build provides {provides}"
    return None


def _gpu(backend: str) -> backends.GpuArchs | None:
    spec = backends.find(backend)
    return None if spec is None else spec.gpu


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
) -> list[Verdict]:
    """Judge every variant name and return the verdicts in preference order (best accepted first; docs/loading.md).

    ``backend`` is the selected backend (:func:`select_backend`). Unparseable names are logged and appear in
    no decision. The GPU-architecture check runs, in preference order, on candidates that pass the name checks
    when ``backend`` is ``cuda`` or ``rocm``, ``check_gpu_arch`` is true and ``gpus`` has a device; it reads
    ``metadata(name)``. With ``first_only`` it stops at the first accepted candidate: later candidates are
    returned as accepted without their GPU check (enough for a load, which takes the first).
    """
    spec = backends.by_alias(backend)
    backend = backend if spec is None else spec.name
    variants: dict[str, Variant] = {}
    for name in names:
        try:
            variants[name] = parse_variant(name)
        except ValueError as error:
            logger.warning("skipping variant directory %r: %s", name, error)

    accepted: list[Variant] = []
    rejected: list[Rejected] = []
    for variant in variants.values():
        reason = _check_name(variant, environment, backend)
        if reason is None:
            accepted.append(variant)
        else:
            rejected.append(Rejected(variant, reason))
    accepted.sort(key=_preference)

    probe = gpus if isinstance(gpus, GpuProbe) else GpuProbe(gpus)
    if accepted and check_gpu_arch and _gpu(backend) is not None and probe.devices():
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
                rejected.append(Rejected(variant, reason))
        accepted = checked

    rejected.sort(key=lambda decision: decision.variant.variant_str)
    return [*(Accepted(variant) for variant in accepted), *rejected]


def trace(decisions: Sequence[Verdict]) -> list[str]:
    """One line per decision, in order.

    ``<variant>: compatible (preferred)`` for the first, ``<variant>: compatible`` for other accepted ones and
    ``<variant>: <reason>`` for rejected ones.
    """
    lines = []
    for index, decision in enumerate(decisions):
        name = decision.variant.variant_str
        if isinstance(decision, Rejected):
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


def describe_no_compatible(subject: str, environment: str, decisions: Sequence[Verdict]) -> str:
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
    gpu = _gpu(backend)
    if gpu is None:
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
        if gpu.kind == "capability":
            major, minor = cuda.get_device_capability(index)
            devices.append((int(major), int(minor)))
        else:
            arch = str(getattr(cuda.get_device_properties(index), "gcnArchName", ""))
            devices.append(arch.split(":", 1)[0])
    return devices
