"""The public form of a parsed variant name: the structured dataclasses ``kernels`` 0.19 hands its users.

Upstream's ``VariantAccepted`` and ``VariantRejected`` (what ``get_kernel_variants`` returns) carry an
:class:`ArchVariant`, :class:`NoarchVariant` or :class:`SdkVariant`, built from a framework (:class:`Torch`,
:class:`TorchStableAbi`, :class:`TvmFfi`, :class:`TorchNoarch`, :class:`MlxNoarch`), a backend (:class:`CPU`,
:class:`CUDA`, :class:`ROCm`, :class:`XPU`, :class:`Metal`, :class:`Neuron`, :class:`TPU`, :class:`CANN`, or
:class:`Noarch` for a pure-Python one), a :class:`Python` and a :class:`System`. Code written against upstream
inspects them (``decision.variant.backend.version``, ``isinstance(decision.variant.framework, Torch)``), so ours
hand out the same classes, by name, field and meaning, with ``packaging`` versions as upstream has them
(docs/loading.md, "Inspecting the variants").

The resolver itself works on :class:`kernel_builder.formats.variants.Variant` (one flat record, cheap to build on
every load); :func:`from_parsed` converts one into this form where a decision reaches a user. This module is
imported only then, so that a load that never looks at its decisions does not pay for these classes.

Equality and hashing follow upstream: every part compares by class and fields, except ``legacy`` (which of the
two name formats a part is spelled in), so a build's legacy and new-format names compare equal when they name the
same Python. The classes are mutable dataclasses, as upstream's; each conversion builds new ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal, Protocol, TypeAlias, runtime_checkable

from packaging.version import Version

from kernel_builder.formats import variants as names

__all__ = [
    "CANN",
    "CPU",
    "CUDA",
    "TPU",
    "XPU",
    "ArchVariant",
    "Backend",
    "Metal",
    "MlxNoarch",
    "Neuron",
    "Noarch",
    "NoarchVariant",
    "Python",
    "PythonAbi",
    "ROCm",
    "RegisteredBackend",
    "SdkVariant",
    "System",
    "Torch",
    "TorchNoarch",
    "TorchStableAbi",
    "TvmFfi",
    "Variant",
    "from_parsed",
    "parse_variant",
]

PythonAbi = Literal["abi3", "abi3t"]

_PYTHON_MARKER = "cpython"


def _version(major_minor: tuple[int, int]) -> Version:
    return Version(f"{major_minor[0]}.{major_minor[1]}")


_LEGACY_PYTHON = _version(names.LEGACY_PYTHON)
_ABI3T_MIN_PYTHON = _version(names.ABI3T_MIN_PYTHON)


def _spell(legacy_prefix: str, new_prefix: str, version: Version, legacy: bool) -> str:
    """A versioned part of a name: the major and minor run together after ``legacy_prefix`` (``cu128``,
    ``torch213``) in the legacy format, dotted after ``new_prefix`` (``cuda-12.8``, ``torch-2.13``) in the new."""
    if legacy:
        return f"{legacy_prefix}{version.major}{version.minor}"
    return f"{new_prefix}{version.major}.{version.minor}"


@dataclass(unsafe_hash=True)
class _Versioned:
    """A part named by a prefix and its ``major.minor`` version (a versioned backend, the stable ABI, tvm-ffi);
    ``legacy`` says which format spells it, and takes no part in comparisons."""

    _LEGACY_PREFIX: ClassVar[str] = ""
    _NEW_PREFIX: ClassVar[str] = ""

    version: Version
    legacy: bool = field(default=True, compare=False)

    @property
    def variant_str(self) -> str:
        return _spell(self._LEGACY_PREFIX, self._NEW_PREFIX, self.version, self.legacy)


# --- backends -------------------------------------------------------------------------------------------------


@runtime_checkable
class Backend(Protocol):
    """What every compiled variant's backend has: its short ``name`` and its part of the name."""

    @property
    def name(self) -> str:
        """``cuda``, ``rocm``, ``cpu``, ..."""
        ...

    @property
    def variant_str(self) -> str:
        """Its part of the variant name: ``cu128`` (legacy) or ``cuda-12.8``, ``cpu``."""
        ...


@dataclass(unsafe_hash=True)
class _VersionlessBackend:
    """A backend whose name carries no version; its instances are all equal."""

    _NAME: ClassVar[str] = ""

    @property
    def name(self) -> str:
        return self._NAME

    @property
    def variant_str(self) -> str:
        return self._NAME


class CPU(_VersionlessBackend):
    """The CPU backend (``cpu``)."""

    _NAME = "cpu"


class Metal(_VersionlessBackend):
    """Apple's Metal (``metal``)."""

    _NAME = "metal"


class Neuron(_VersionlessBackend):
    """AWS Neuron (``neuron``)."""

    _NAME = "neuron"


class TPU(_VersionlessBackend):
    """Google's TPU (``tpu``)."""

    _NAME = "tpu"


class _VersionedBackend(_Versioned):
    """A backend named with its version."""

    _NAME: ClassVar[str] = ""

    @property
    def name(self) -> str:
        return self._NAME


class CUDA(_VersionedBackend):
    """NVIDIA CUDA: ``cu128`` (legacy) or ``cuda-12.8``."""

    _NAME, _LEGACY_PREFIX, _NEW_PREFIX = "cuda", "cu", "cuda-"


class ROCm(_VersionedBackend):
    """AMD ROCm: ``rocm72`` (legacy; ROCm 7.14 is ``rocm714``) or ``rocm-7.2``."""

    _NAME, _LEGACY_PREFIX, _NEW_PREFIX = "rocm", "rocm", "rocm-"


class XPU(_VersionedBackend):
    """Intel XPU: ``xpu20253`` (legacy) or ``xpu-2025.3``."""

    _NAME, _LEGACY_PREFIX, _NEW_PREFIX = "xpu", "xpu", "xpu-"


class CANN(_VersionedBackend):
    """Huawei Ascend's CANN: ``cann82`` (legacy) or ``cann-8.2``."""

    _NAME, _LEGACY_PREFIX, _NEW_PREFIX = "cann", "cann", "cann-"


@dataclass(unsafe_hash=True)
class Noarch:
    """The backend of a pure-Python variant, or of an SDK without compiled code: the word of the name as written
    (``cuda``, ``universal``, any other), which the loader compares with the selected backend's name."""

    backend_name: str

    @property
    def variant_str(self) -> str:
        return self.backend_name


@dataclass(unsafe_hash=True)
class RegisteredBackend:
    """A backend registered with :mod:`kernel_builder.backends` that upstream has no class for (one a program
    adds at run time): its registered name, its version if it is versioned, spelled as the registry spells it.
    Every backend upstream knows has its own class above."""

    backend_name: str
    version: Version | None
    legacy: bool = field(default=True, compare=False)

    @property
    def name(self) -> str:
        return self.backend_name

    @property
    def variant_str(self) -> str:
        pair = None if self.version is None else (self.version.major, self.version.minor)
        if self.legacy:
            return names.compute_name(self.backend_name, pair)
        return self.backend_name if pair is None else f"{self.backend_name}-{pair[0]}.{pair[1]}"


#: Backend name (our registry's, kernel_builder.backends) → its class here.
_BACKENDS: dict[str, type[_VersionlessBackend] | type[_VersionedBackend]] = {
    backend._NAME: backend for backend in (CPU, Metal, Neuron, TPU, CUDA, ROCm, XPU, CANN)
}


# --- frameworks -----------------------------------------------------------------------------------------------


@dataclass(unsafe_hash=True)
class Torch:
    """A build for one Torch release: ``torch213`` / ``torch-2.13``, with ``-cxx11`` (``cxx11_abi`` true) or
    ``-cxx98`` (false) where the name carries a C++ ABI tag, ``None`` where it does not."""

    version: Version
    cxx11_abi: bool | None
    legacy: bool = field(default=True, compare=False)

    @property
    def variant_str(self) -> str:
        spelled = _spell("torch", "torch-", self.version, self.legacy)
        if self.cxx11_abi is None:
            return spelled
        return f"{spelled}-{'cxx11' if self.cxx11_abi else 'cxx98'}"


class TorchStableAbi(_Versioned):
    """A build against Torch's stable ABI of that version or later: ``torch-stable-abi211`` /
    ``torch-stable-abi-2.11``."""

    _LEGACY_PREFIX, _NEW_PREFIX = "torch-stable-abi", "torch-stable-abi-"


class TvmFfi(_Versioned):
    """A build against tvm-ffi: ``tvm-ffi01`` / ``tvm-ffi-0.1``."""

    _LEGACY_PREFIX, _NEW_PREFIX = "tvm-ffi", "tvm-ffi-"


@dataclass(unsafe_hash=True)
class TorchNoarch:
    """The framework of a pure-Python Torch variant (``torch-<backend>``)."""

    @property
    def variant_str(self) -> str:
        return "torch"


@dataclass(unsafe_hash=True)
class MlxNoarch:
    """The framework of a pure-Python MLX variant (``mlx-<backend>``)."""

    @property
    def variant_str(self) -> str:
        return "mlx"


# --- Python and system ----------------------------------------------------------------------------------------


@dataclass(unsafe_hash=True)
class Python:
    """The oldest CPython a variant's compiled code loads in, and the stable ABI it uses (``abi3``, or ``abi3t``
    for free-threaded CPython 3.15 and later). A legacy-format name names none: it is CPython 3.9 ``abi3``."""

    version: Version = _LEGACY_PYTHON
    abi: PythonAbi = "abi3"
    legacy: bool = field(default=True, compare=False)

    def __post_init__(self) -> None:
        if self.legacy and (self.version != _LEGACY_PYTHON or self.abi != "abi3"):
            raise ValueError(
                f"a legacy-format name is for CPython {_LEGACY_PYTHON} abi3 only, not {self.version} {self.abi}"
            )
        if self.abi == "abi3t" and self.version < _ABI3T_MIN_PYTHON:
            raise ValueError(f"abi3t starts with CPython {_ABI3T_MIN_PYTHON}; got {self.version}")

    @property
    def variant_str(self) -> str:
        """``cpython-3.12-abi3``; empty for the legacy format, which leaves it out of the name."""
        if self.legacy:
            return ""
        return f"{_PYTHON_MARKER}-{self.version.major}.{self.version.minor}-{self.abi}"


@dataclass(unsafe_hash=True)
class System:
    """The CPU (``platform``: ``x86_64``, ``aarch64``) and operating system a compiled variant is for."""

    platform: str
    os: str

    @property
    def variant_str(self) -> str:
        return f"{self.platform}-{self.os}"


# --- variants -------------------------------------------------------------------------------------------------


def _dashed(*parts: str | None) -> str:
    """A name from its parts, those present (not ``None``) joined by dashes; an empty part stays (``sdk-``)."""
    return "-".join(part for part in parts if part is not None)


@dataclass(unsafe_hash=True)
class ArchVariant:
    """A compiled variant: ``torch213-cxx11-cu128-x86_64-linux``, ``torch-2.13-cuda-12.8-cpython-3.9-abi3-…``."""

    framework: Torch | TorchStableAbi | TvmFfi
    backend: Backend
    python: Python
    system: System

    @property
    def variant_str(self) -> str:
        python = self.python.variant_str or None  # empty in the legacy format
        return _dashed(self.framework.variant_str, self.backend.variant_str, python, self.system.variant_str)


@dataclass(unsafe_hash=True)
class NoarchVariant:
    """A pure-Python variant: ``torch-cuda``, ``torch-universal``, ``mlx-metal``."""

    framework: TorchNoarch | MlxNoarch
    backend: Noarch

    @property
    def variant_str(self) -> str:
        return f"{self.framework.variant_str}-{self.backend.variant_str}"


@dataclass(unsafe_hash=True)
class SdkVariant:
    """An SDK variant (new format only): ``sdk``, ``sdk-<backend>`` (a :class:`Noarch` backend, no compiled
    code), or ``sdk-[<backend>-]cpython-<version>-<abi>-<cpu>-<os>`` (compiled code, with ``python`` and
    ``system``; a versioned backend only then). The combinations the name cannot spell raise ``ValueError``."""

    backend: Backend | Noarch | None
    python: Python | None
    system: System | None

    def __post_init__(self) -> None:
        compiled = self.system is not None
        if (self.python is not None) != compiled:
            raise ValueError("an SDK variant names its Python and its system together, or neither")
        if isinstance(self.backend, Noarch) and compiled:
            raise ValueError("an SDK variant with compiled code names a compiled backend, not a Noarch one")
        if self.backend is not None and not isinstance(self.backend, Noarch) and not compiled:
            raise ValueError("an SDK variant with a compiled backend also names its Python and system")

    @property
    def variant_str(self) -> str:
        backend = None if self.backend is None else self.backend.variant_str
        python = None if self.python is None else self.python.variant_str or None
        return _dashed("sdk", backend, python, None if self.system is None else self.system.variant_str)


Variant: TypeAlias = ArchVariant | NoarchVariant | SdkVariant
"""What ``VariantAccepted.variant`` and ``VariantRejected.variant`` hold (upstream's ``Variant``)."""


# --- from our parser's record ---------------------------------------------------------------------------------


def _backend(parsed: names.Variant) -> Backend:
    assert parsed.backend is not None
    version = None if parsed.backend_version is None else _version(parsed.backend_version)
    kind = _BACKENDS.get(parsed.backend)
    if kind is None:
        return RegisteredBackend(parsed.backend, version, legacy=parsed.legacy)
    if issubclass(kind, _VersionedBackend):
        assert version is not None
        return kind(version, legacy=parsed.legacy)
    return kind()


def _python(parsed: names.Variant) -> Python:
    if parsed.python is None or parsed.python_abi is None:
        return Python()
    return Python(_version(parsed.python), parsed.python_abi, legacy=False)


def _framework(parsed: names.Variant) -> Torch | TorchStableAbi | TvmFfi:
    assert parsed.framework_version is not None
    version = _version(parsed.framework_version)
    if parsed.kind == "torch":
        abi = None if parsed.cxx_abi is None else parsed.cxx_abi == "cxx11"
        return Torch(version, abi, legacy=parsed.legacy)
    if parsed.kind == "torch-stable-abi":
        return TorchStableAbi(version, legacy=parsed.legacy)
    return TvmFfi(version, legacy=parsed.legacy)


def _sdk(parsed: names.Variant) -> SdkVariant:
    if parsed.cpu is None or parsed.os is None:
        backend = None if parsed.backend is None else Noarch(parsed.backend)
        return SdkVariant(backend, None, None)
    compiled = None if parsed.backend is None else _backend(parsed)
    return SdkVariant(compiled, _python(parsed), System(parsed.cpu, parsed.os))


def from_parsed(parsed: names.Variant) -> Variant:
    """The public form of a name :func:`kernel_builder.formats.variants.parse_variant` read; its
    ``variant_str`` is that name again."""
    if parsed.kind in ("noarch", "universal"):
        framework = MlxNoarch() if parsed.framework == "mlx" else TorchNoarch()
        return NoarchVariant(framework, Noarch(parsed.backend or ""))
    if parsed.kind == "sdk":
        return _sdk(parsed)
    assert parsed.cpu is not None and parsed.os is not None
    return ArchVariant(_framework(parsed), _backend(parsed), _python(parsed), System(parsed.cpu, parsed.os))


def parse_variant(name: str) -> Variant:
    """Parse a variant directory name into its public form (``ValueError`` for a name that is not one, as
    :func:`kernel_builder.formats.variants.parse_variant`)."""
    return from_parsed(names.parse_variant(name))
