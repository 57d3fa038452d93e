"""Variant names: the ``build/<variant>/`` directory names, their parser and how they are derived.

One implementation, shared by the build tool and the loader (docs/layout.md). A :class:`Variant` holds the
parts of a name; :attr:`Variant.name` renders it and :func:`parse_variant` reads it back, so that
``parse_variant(v.name) == v`` for every variant and ``parse_variant(s).name == s`` for every valid name.

The grammar is upstream ``kernels`` 0.19's, in both of its formats (docs/layout.md):

- legacy (what the builders write today): ``torch213-cxx11-cu130-x86_64-linux``,
  ``torch-stable-abi211-cu130-x86_64-linux``, ``tvm-ffi01-cu130-x86_64-linux``. A framework version is its
  major digit followed by its minor (``2.13`` → ``213``); a compute version is its major followed by its minor
  digit (``12.6`` → ``cu126``, ``2025.3`` → ``xpu20253``), except ROCm 7.14 (``rocm714``). The Python ABI is
  implicitly CPython 3.9 ``abi3``.
- new (kernels 0.19): dotted versions, the backend written out and the Python ABI named:
  ``torch-2.13-cxx11-cuda-13.0-cpython-3.9-abi3-x86_64-linux``, ``torch-stable-abi-2.11-…``, ``tvm-ffi-0.1-…``;
  ``abi3t`` is the stable ABI of free-threaded CPython (3.15 or later).
- noarch: ``<framework>-<backend>`` with framework ``torch`` or ``mlx`` and any backend word (``torch-cuda``,
  ``mlx-metal``; ``torch-universal`` for every backend); SDKs: ``sdk``, ``sdk-<backend>`` and
  ``sdk-[<backend>[-<version>]-]cpython-<python>-<abi>-<cpu>-<os>``.

Names upstream's parser reads but that do not spell their own value (a leading zero, ``torch2012`` for Torch
2.12) are refused here: a loader that chose one would look for a directory of another name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import kernel_builder.backends as backends
from kernel_builder.backends import noarch
from kernel_builder.errors import KernelBuilderError
from kernel_builder.formats.runtime import Environment, detect_environment, normalize_cpu

__all__ = [
    "ABI3T_MIN_PYTHON",
    "CPUS",
    "LEGACY_PYTHON",
    "OPERATING_SYSTEMS",
    "PYTHON_ABIS",
    "UnsupportedEnvironmentError",
    "Variant",
    "VariantKind",
    "compute_name",
    "framework_version_name",
    "noarch_variant",
    "parse_variant",
    "to_major_minor",
    "variant_for_entry",
    "variant_for_environment",
]

VariantKind = Literal["torch", "torch-stable-abi", "tvm-ffi", "noarch", "universal", "sdk"]
CxxAbi = Literal["cxx11", "cxx98"]
PythonAbi = Literal["abi3", "abi3t"]
NoarchFramework = Literal["torch", "mlx"]

#: CPUs and operating systems this tool builds for; a name may carry any other (a loader rejects it).
CPUS = ("x86_64", "aarch64")
OPERATING_SYSTEMS = ("linux", "darwin", "windows")
PYTHON_ABIS: tuple[PythonAbi, ...] = ("abi3", "abi3t")
#: The Python a legacy-format compiled variant is for: CPython 3.9 or later, ``abi3``.
LEGACY_PYTHON = (3, 9)
#: ``abi3t`` (the stable ABI of free-threaded CPython, PEP 803) starts with CPython 3.15.
ABI3T_MIN_PYTHON = (3, 15)

ARCH_KINDS: tuple[VariantKind, ...] = ("torch-stable-abi", "torch", "tvm-ffi")
_NOARCH_FRAMEWORKS: tuple[NoarchFramework, ...] = ("torch", "mlx")
_PYTHON_MARKER = "cpython"
_CXX_ABIS = ("cxx11", "cxx98")
_UNIVERSAL = noarch.UNIVERSAL

# Upstream's patterns, with ASCII digits: a non-ASCII digit never makes a version (upstream's version parser
# refuses them too).
_LEGACY_FRAMEWORK = {
    "torch": re.compile(r"torch([0-9])([0-9]+)(?:-(cxx11|cxx98))?"),
    "torch-stable-abi": re.compile(r"torch-stable-abi([0-9])([0-9]+)"),
    "tvm-ffi": re.compile(r"tvm-ffi([0-9]+?)([0-9]+)"),
}
_NEW_FRAMEWORK = {
    "torch": re.compile(r"torch-([0-9]+)\.([0-9]+)(?:-(cxx11|cxx98))?"),
    "torch-stable-abi": re.compile(r"torch-stable-abi-([0-9]+)\.([0-9]+)"),
    "tvm-ffi": re.compile(r"tvm-ffi-([0-9]+)\.([0-9]+)"),
}
_DOTTED = re.compile(r"([0-9]+)\.([0-9]+)")
#: A legacy compute version: the major, then the minor digit; ROCm 7.14 is ``rocm714`` (upstream's rule).
_LEGACY_COMPUTE_VERSION = re.compile(r"([0-9]+)([0-9])")
_LEGACY_ROCM_VERSION = re.compile(r"(7(?=14$)|[0-9]+)([0-9]+)")


def _unknown_backend(backend: str) -> ValueError:
    return ValueError(f"unknown backend {backend!r} (expected one of {', '.join(backends.names())})")


class UnsupportedEnvironmentError(ValueError, KernelBuilderError):
    """The running environment has no variant name the tool can produce (no Torch, pre-C++11 ABI, …)."""


def to_major_minor(version: str | Sequence[int]) -> tuple[int, int]:
    """``"2.12"``, ``"12.6.3"`` or ``(2025, 3, 2)`` → ``(major, minor)``; a lone major is padded (``"2"`` → 2.0)."""
    if isinstance(version, str):
        parts = version.split(".")
        if not version or not all(_ascii_digits(part) for part in parts):
            raise ValueError(f"invalid version {version!r}: expected numbers separated by dots, e.g. '2.12'")
        numbers = [int(part) for part in parts]
    else:
        numbers = list(version)
        if not numbers or any(number < 0 for number in numbers):
            raise ValueError(f"invalid version {tuple(numbers)!r}: expected non-negative numbers")
    return numbers[0], (numbers[1] if len(numbers) > 1 else 0)


def framework_version_name(version: tuple[int, int], what: str = "Torch") -> str:
    """Encode a Torch, stable-ABI or tvm-ffi version: ``(2, 12)`` → ``"212"``. The major must be one digit."""
    major, minor = version
    if not 0 <= major <= 9 or minor < 0:
        raise ValueError(
            f"{what} version {major}.{minor} cannot be encoded in a variant name: the major must be one digit"
        )
    return f"{major}{minor}"


def compute_name(backend: str, version: tuple[int, int] | None) -> str:
    """The legacy compute part of a name: ``("cuda", (13, 0))`` → ``"cu130"``, ``("metal", None)`` → ``"metal"``."""
    found = backends.find(backend)
    if found is None:
        raise _unknown_backend(backend)
    if backend == "rocm" and version == (7, 14):
        return "rocm714"  # the one two-digit minor the legacy format spells (upstream's rule)
    part = found.variant_part(version)
    if part == "rocm714":  # ROCm 71.4 would read back as 7.14
        raise ValueError(
            "rocm version 71.4 cannot be encoded in a legacy variant name (rocm714 is ROCm 7.14)"
        )
    return part


def _new_compute_name(backend: str, version: tuple[int, int] | None) -> str:
    """The new-format compute part: ``cuda-13.0``, ``rocm-7.14``, ``cpu``."""
    found = backends.find(backend)
    if found is None:
        raise _unknown_backend(backend)
    if not found.versioned:
        if version is not None:
            raise ValueError(f"backend {backend} takes no version, got {version[0]}.{version[1]}")
        return backend
    if version is None:
        raise ValueError(f"backend {backend} needs a version to name a compiled variant")
    if version[0] < 0 or version[1] < 0:
        raise ValueError(f"invalid {backend} version {version!r}")
    return f"{backend}-{version[0]}.{version[1]}"


def _dotted(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


@dataclass(frozen=True)
class Variant:
    """The parts of a variant directory name (docs/layout.md). Invalid combinations raise ``ValueError``.

    ``kind`` is the framework of a compiled variant (``torch``, ``torch-stable-abi``, ``tvm-ffi``), ``noarch``
    (``<framework>-<backend>``), ``universal`` (``torch-universal``, ``mlx-universal``) or ``sdk``.
    ``framework_version`` is the Torch version (kind ``torch``), the stable-ABI version (``torch-stable-abi``) or
    the tvm-ffi version (``tvm-ffi``). ``backend`` is a registered backend for compiled variants; for noarch
    variants and backend-only SDKs it is the word of the name as written (``torch-npu`` has backend ``npu``),
    which loaders compare with the selected backend's name; ``None`` for a backend-agnostic SDK.

    ``python`` and ``python_abi`` are the CPython version and stable ABI a compiled new-format variant (or SDK)
    names (``cpython-3.12-abi3``); a legacy-format one names none and is for CPython 3.9 ``abi3``
    (:attr:`requires_python`, :attr:`abi`). ``legacy`` says which format a compiled variant is spelled in: the
    same build in both formats is two names, two variants. ``framework`` is ``torch`` or ``mlx`` for noarch and
    universal variants.
    """

    kind: VariantKind
    framework_version: tuple[int, int] | None
    backend_version: tuple[int, int] | None
    cxx_abi: CxxAbi | None
    backend: str | None
    cpu: str | None
    os: str | None
    python: tuple[int, int] | None = None
    python_abi: PythonAbi | None = None
    legacy: bool = True
    framework: NoarchFramework = "torch"

    def __post_init__(self) -> None:
        if self.kind in ("noarch", "universal"):
            self._check_noarch()
        elif self.kind == "sdk":
            self._check_sdk()
        elif self.kind in ARCH_KINDS:
            self._check_arch()
        else:
            raise ValueError(f"unknown variant kind {self.kind!r}")
        if self.kind not in ("noarch", "universal") and self.framework != "torch":
            raise ValueError(f"a {self.kind} variant has no framework {self.framework!r}")
        self._check_python()

    def _none(self, *names: str) -> None:
        extra = [name for name in names if getattr(self, name) is not None]
        if extra:
            raise ValueError(f"a {self.kind} variant has no {', '.join(extra)}")

    def _check_noarch(self) -> None:
        if self.kind == "universal" and self.backend != _UNIVERSAL:
            raise ValueError(f"a universal variant has backend 'universal', not {self.backend!r}")
        if self.kind == "noarch" and (self.backend is None or self.backend == _UNIVERSAL):
            raise ValueError(
                f"a noarch variant needs a backend word other than 'universal', got {self.backend!r}"
            )
        if self.framework not in _NOARCH_FRAMEWORKS:
            raise ValueError(f"unknown noarch framework {self.framework!r} (expected torch or mlx)")
        self._none("framework_version", "backend_version", "cxx_abi", "cpu", "os", "python", "python_abi")
        if not self.legacy:
            raise ValueError(f"a {self.kind} variant has one spelling only (legacy=True)")
        if self.framework == "mlx" and self.backend is not None and self.backend[:1].isdigit():
            raise ValueError(f"an mlx noarch backend word cannot start with a digit, got {self.backend!r}")

    def _check_sdk(self) -> None:
        self._none("framework_version", "cxx_abi")
        if self.legacy:
            raise ValueError("an sdk variant exists in the new format only (legacy=False)")
        compiled = (self.cpu, self.os, self.python)
        if any(part is None for part in compiled) and any(part is not None for part in compiled):
            raise ValueError("an sdk variant names its Python ABI, CPU and OS together, or none of them")
        if self.cpu is None:
            self._none("backend_version")
            if self.backend is not None and "-" in self.backend:
                raise ValueError(f"an sdk backend word has no '-', got {self.backend!r}")
            return
        self._check_system()
        if self.backend is not None:
            _new_compute_name(self.backend, self.backend_version)
        else:
            self._none("backend_version")

    def _check_arch(self) -> None:
        if self.framework_version is None:
            raise ValueError(f"a {self.kind} variant needs a framework_version")
        major, minor = self.framework_version
        if major < 0 or minor < 0:
            raise ValueError(f"invalid {_FRAMEWORK_LABEL[self.kind]} version {self.framework_version!r}")
        if self.legacy:
            framework_version_name(self.framework_version, _FRAMEWORK_LABEL[self.kind])
            if self.python is not None or self.python_abi is not None:
                raise ValueError(
                    "a legacy-format variant names no Python ABI (it is CPython 3.9 abi3); use legacy=False"
                )
        elif self.python is None:
            raise ValueError(f"a new-format {self.kind} variant needs its Python version and ABI")
        if self.backend is None:
            raise ValueError(f"a {self.kind} variant needs a backend")
        if self.legacy:
            compute_name(self.backend, self.backend_version)
        else:
            _new_compute_name(self.backend, self.backend_version)
        if self.cxx_abi is not None and self.kind != "torch":
            raise ValueError(f"a {self.kind} variant has no C++ ABI tag")
        if self.cxx_abi not in (None, "cxx11", "cxx98"):
            raise ValueError(f"unknown C++ ABI tag {self.cxx_abi!r} (expected cxx11 or cxx98)")
        self._check_system()

    def _check_system(self) -> None:
        for what, value in (("CPU", self.cpu), ("OS", self.os)):
            if value is None or "-" in value:
                raise ValueError(f"a {self.kind} variant needs a {what} without '-', got {value!r}")

    def _check_python(self) -> None:
        if (self.python is None) != (self.python_abi is None):
            raise ValueError("python and python_abi go together")
        if self.python is None:
            return
        if self.python_abi not in PYTHON_ABIS:
            raise ValueError(f"unknown Python ABI {self.python_abi!r} (expected abi3 or abi3t)")
        if min(self.python) < 0:
            raise ValueError(f"invalid Python version {self.python!r}")
        if self.python_abi == "abi3t" and self.python < ABI3T_MIN_PYTHON:
            raise ValueError(
                f"abi3t starts with CPython {_dotted(ABI3T_MIN_PYTHON)}; a variant cannot need "
                f"{_dotted(self.python)} abi3t"
            )

    @property
    def requires_python(self) -> tuple[int, int] | None:
        """The oldest CPython its compiled code loads in: the named one, CPython 3.9 for a legacy name; ``None``
        without compiled code."""
        if self.python is not None:
            return self.python
        return LEGACY_PYTHON if self.kind in ARCH_KINDS else None

    @property
    def abi(self) -> PythonAbi | None:
        """``abi3`` or ``abi3t`` for compiled code (``abi3`` for a legacy name); ``None`` without any."""
        if self.python_abi is not None:
            return self.python_abi
        return "abi3" if self.kind in ARCH_KINDS else None

    @property
    def compute(self) -> str | None:
        """The compute part of the name (``cu130``, ``cuda-13.0``, ``metal``, …); ``None`` for noarch and universal
        variants and SDKs without one."""
        if self.kind in ("noarch", "universal") or self.backend is None:
            return None
        if self.kind == "sdk":
            return self.backend if self.cpu is None else _new_compute_name(self.backend, self.backend_version)
        if self.legacy:
            return compute_name(self.backend, self.backend_version)
        return _new_compute_name(self.backend, self.backend_version)

    @property
    def name(self) -> str:
        """The directory name, e.g. ``torch212-cxx11-cu126-x86_64-linux`` or ``torch-cuda``."""
        if self.kind in ("noarch", "universal"):
            return f"{self.framework}-{self.backend}"
        python = None if self.python is None else f"{_PYTHON_MARKER}-{_dotted(self.python)}-{self.python_abi}"
        system = None if self.cpu is None else f"{self.cpu}-{self.os}"
        if self.kind == "sdk":
            return "-".join(part for part in ("sdk", self.compute, python, system) if part is not None)
        assert self.framework_version is not None
        abi = f"-{self.cxx_abi}" if self.cxx_abi else ""
        if self.legacy:
            version = framework_version_name(self.framework_version)
            return f"{self.kind}{version}{abi}-{self.compute}-{system}"
        return f"{self.kind}-{_dotted(self.framework_version)}{abi}-{self.compute}-{python}-{system}"

    @property
    def variant_str(self) -> str:
        """Alias of :attr:`name` (the attribute the ``kernels`` loader uses)."""
        return self.name

    def __str__(self) -> str:
        return self.name


_FRAMEWORK_LABEL = {"torch": "Torch", "torch-stable-abi": "stable ABI", "tvm-ffi": "tvm-ffi"}


def _ascii_digits(text: str) -> bool:
    """Whether ``text`` is one or more ASCII digits. ``str.isdigit`` alone also accepts fullwidth, Arabic-Indic
    and other Unicode digits, which would let a look-alike name parse as a real version."""
    return text.isascii() and text.isdigit()


# --- parsing (upstream kernels 0.19's grammar) ---------------------------------------------------------------


class _Invalid(ValueError):
    """One reason a name does not parse; :func:`parse_variant` names the name."""


def _version(pattern: re.Pattern[str], text: str, what: str) -> tuple[tuple[int, int], str | None]:
    match = pattern.fullmatch(text)
    if match is None:
        raise _Invalid(f"{text!r} is not a {what}")
    abi = match.group(3) if (pattern.groups or 0) >= 3 else None
    return (int(match.group(1)), int(match.group(2))), abi


def _parse_backend(parts: list[str], legacy: bool) -> tuple[str, tuple[int, int] | None]:
    """A compiled variant's backend parts: one legacy part (``cu130``) or the new ``cuda``, ``13.0``."""
    if legacy:
        if len(parts) != 1:
            raise _Invalid(f"expected one compute part, got {'-'.join(parts)!r}")
        compute = parts[0]
        plain = backends.find(compute)
        if plain is not None and not plain.versioned:
            return compute, None
        versioned = [b for b in backends.all_backends() if b.compute_prefix is not None]
        for backend in sorted(versioned, key=lambda b: len(b.compute_prefix or ""), reverse=True):
            prefix = backend.compute_prefix or ""
            if compute.startswith(prefix):
                pattern = _LEGACY_ROCM_VERSION if backend.name == "rocm" else _LEGACY_COMPUTE_VERSION
                match = pattern.fullmatch(compute[len(prefix) :])
                if match is None:
                    raise _Invalid(
                        f"compute {compute!r} needs at least two digits after {prefix!r} (major, then minor digit)"
                    )
                return backend.name, (int(match.group(1)), int(match.group(2)))
        raise _Invalid(f"unknown compute {compute!r}")
    spec = backends.find(parts[0]) if parts else None
    if spec is None:
        raise _Invalid(f"unknown backend {'-'.join(parts)!r}")
    if not spec.versioned:
        if parts != [spec.name]:
            raise _Invalid(f"backend {spec.name} takes no version, got {'-'.join(parts)!r}")
        return spec.name, None
    match = _DOTTED.fullmatch(parts[1]) if len(parts) == 2 else None
    if match is None:
        raise _Invalid(f"expected '{spec.name}-<major>.<minor>', got {'-'.join(parts)!r}")
    return spec.name, (int(match.group(1)), int(match.group(2)))


def _parse_python(parts: list[str]) -> tuple[tuple[int, int], PythonAbi]:
    """``cpython``, ``3.12``, ``abi3``."""
    if len(parts) != 3 or parts[0] != _PYTHON_MARKER:
        raise _Invalid(f"expected 'cpython-<major>.<minor>-<abi>', got {'-'.join(parts)!r}")
    match = _DOTTED.fullmatch(parts[1])
    if match is None:
        raise _Invalid(f"Python version {parts[1]!r} is not <major>.<minor>")
    if parts[2] not in PYTHON_ABIS:
        raise _Invalid(f"Python ABI {parts[2]!r} is not abi3 or abi3t")
    abi: PythonAbi = "abi3" if parts[2] == "abi3" else "abi3t"
    return (int(match.group(1)), int(match.group(2))), abi


def _split_python(parts: list[str]) -> tuple[list[str], tuple[int, int] | None, PythonAbi | None]:
    if _PYTHON_MARKER not in parts:
        return parts, None, None
    index = parts.index(_PYTHON_MARKER)
    python, abi = _parse_python(parts[index:])
    return parts[:index], python, abi


def _parse_sdk(parts: list[str]) -> Variant:
    rest = parts[1:]
    backend: str | None = None
    version: tuple[int, int] | None = None
    python: tuple[int, int] | None = None
    abi: PythonAbi | None = None
    cpu = os_name = None
    if _PYTHON_MARKER in rest:
        if len(rest) < 2:
            raise _Invalid("expected '<cpu>-<os>' at the end")
        cpu, os_name = rest[-2], rest[-1]
        rest, python, abi = _split_python(rest[:-2])
        if python is None:
            raise _Invalid("an sdk with a CPU and OS names its Python ABI ('cpython-<version>-<abi>')")
        if rest:
            backend, version = _parse_backend(rest, legacy=False)
    elif rest:
        if len(rest) != 1:
            raise _Invalid(f"expected 'sdk-<backend>', got {'-'.join(parts)!r}")
        backend = rest[0]
    return Variant(
        "sdk", None, version, None, backend, cpu, os_name, python=python, python_abi=abi, legacy=False
    )


def _parse(name: str) -> Variant:
    parts = name.split("-")
    kind: VariantKind
    if parts[0] == "sdk":
        return _parse_sdk(parts)
    if name.startswith("torch-stable-abi"):
        kind = "torch-stable-abi"
        legacy = not (len(parts) > 3 and parts[2] == "abi")
        taken = 3 if legacy else 4
    elif parts[0] == "torch" and len(parts) >= 2 and parts[1][:1].isdigit():
        kind, legacy = "torch", False
        taken = 3 if len(parts) >= 3 and parts[2] in _CXX_ABIS else 2
    elif parts[0] in _NOARCH_FRAMEWORKS and (
        parts[0] == "torch" or (len(parts) >= 2 and not parts[1][:1].isdigit())
    ):
        framework: NoarchFramework = "torch" if parts[0] == "torch" else "mlx"
        word = "-".join(parts[1:])
        if word == _UNIVERSAL:
            return Variant("universal", None, None, None, _UNIVERSAL, None, None, framework=framework)
        return Variant("noarch", None, None, None, word, None, None, framework=framework)
    elif parts[0].startswith("torch"):
        kind, legacy = "torch", True
        taken = 2 if len(parts) >= 2 and parts[1] in _CXX_ABIS else 1
    elif parts[0] == "tvm" and len(parts) >= 2 and parts[1].startswith("ffi"):
        kind = "tvm-ffi"
        legacy = not (len(parts) > 2 and parts[1] == "ffi")
        taken = 2 if legacy else 3
    else:
        raise _Invalid("expected it to start with 'torch', 'tvm-ffi', 'mlx-' or 'sdk'")
    what = f"{_FRAMEWORK_LABEL[kind]} version ({'legacy' if legacy else 'dotted'} format)"
    pattern = (_LEGACY_FRAMEWORK if legacy else _NEW_FRAMEWORK)[kind]
    framework_version, cxx_abi = _version(pattern, "-".join(parts[:taken]), what)
    rest = parts[taken:]
    if len(rest) < 2:
        raise _Invalid(f"expected '<compute>-<cpu>-<os>' after the {_FRAMEWORK_LABEL[kind]} version")
    cpu, os_name = rest[-2], rest[-1]
    backend_parts = rest[:-2]
    python: tuple[int, int] | None = None
    python_abi: PythonAbi | None = None
    if not legacy:
        backend_parts, python, python_abi = _split_python(backend_parts)
        if python is None:
            raise _Invalid("a dotted-format name names its Python ABI ('cpython-<version>-<abi>')")
    if not backend_parts:
        raise _Invalid("it names no backend")
    backend, backend_version = _parse_backend(backend_parts, legacy)
    abi: CxxAbi | None = None if cxx_abi is None else ("cxx11" if cxx_abi == "cxx11" else "cxx98")
    return Variant(
        kind,
        framework_version,
        backend_version,
        abi,
        backend,
        cpu,
        os_name,
        python=python,
        python_abi=python_abi,
        legacy=legacy,
    )


def parse_variant(name: str) -> Variant:
    """Parse a variant directory name as upstream ``kernels`` 0.19 does; ``ValueError`` names the part that failed.

    A name upstream reads but that is not the spelling of what it reads (``torch2012-…`` for Torch 2.12,
    ``cu0126``) is refused too: a loader that chose it would fetch a directory of another name.
    """
    try:
        variant = _parse(name)
    except ValueError as error:  # _Invalid, or a part out of range for its format (Variant's own checks)
        raise ValueError(f"invalid variant name {name!r}: {error}") from None
    if variant.name != name:
        raise ValueError(
            f"invalid variant name {name!r}: it reads as {variant.name!r}, which is how that variant is spelled "
            f"(a leading zero, or a version split differently)"
        )
    return variant


def noarch_variant(backend: str, framework: NoarchFramework = "torch") -> Variant:
    """The noarch variant of a backend: ``"cuda"`` → ``torch-cuda``; ``"cann"`` (or its alias ``"npu"``) →
    ``torch-cann``; ``"universal"`` → ``torch-universal``."""
    spec = backends.by_alias(backend)
    canonical = backend if spec is None else spec.name
    if canonical == _UNIVERSAL:
        return Variant("universal", None, None, None, _UNIVERSAL, None, None, framework=framework)
    if spec is None:
        raise _unknown_backend(backend)
    return Variant(
        "noarch",
        None,
        None,
        None,
        spec.noarch_name,
        None,
        None,
        framework=framework,
    )


class MatrixEntryLike(Protocol):
    """What :func:`variant_for_entry` reads of a :class:`kernel_builder.formats.matrix.MatrixEntry`.

    A protocol rather than an import: the matrix module builds on this one, so this one must not import it.
    """

    @property
    def torch(self) -> tuple[int, int]: ...
    @property
    def backend(self) -> str: ...
    @property
    def version(self) -> tuple[int, ...] | None: ...
    @property
    def systems(self) -> tuple[str, ...]: ...


def variant_for_entry(
    entry: MatrixEntryLike, system: str, stable_abi: tuple[int, int] | str | None = None
) -> Variant:
    """The variant of a matrix entry on one of its systems (``<cpu>-<os>``).

    Linux Torch variants carry the ``cxx11`` tag. With ``stable_abi`` (a version not newer than the entry's
    Torch) the result is the stable-ABI variant of that version.
    """
    if system not in entry.systems:
        raise ValueError(f"system {system!r} is not one of the entry's systems ({', '.join(entry.systems)})")
    cpu, _, os_name = system.partition("-")
    backend_version = None if entry.version is None else to_major_minor(entry.version)
    if stable_abi is not None:
        abi = to_major_minor(stable_abi)
        if abi > entry.torch:
            raise ValueError(
                f"stable ABI {abi[0]}.{abi[1]} is newer than the entry's Torch {entry.torch[0]}.{entry.torch[1]}"
            )
        return Variant("torch-stable-abi", abi, backend_version, None, entry.backend, cpu, os_name)
    cxx_abi: CxxAbi | None = "cxx11" if os_name == "linux" else None
    return Variant("torch", entry.torch, backend_version, cxx_abi, entry.backend, cpu, os_name)


def variant_for_environment(
    *, stable_abi: tuple[int, int] | str | None = None, environment: Environment | None = None
) -> Variant:
    """The variant of the running environment (``environment``, when given, replaces detection).

    Torch ``major.minor`` with the backend detected by :func:`kernel_builder.formats.runtime.detect_backend`;
    ``cxx11`` on Linux (a Torch built with the pre-C++11 ABI is an error there). With ``stable_abi`` the
    stable-ABI variant of that version, which must not be newer than the Torch.
    Raises :class:`UnsupportedEnvironmentError` when no name can be produced.
    """
    env = detect_environment() if environment is None else environment
    if env.torch_version is None:
        raise UnsupportedEnvironmentError(
            "Torch is not installed in this interpreter; install torch to build or name a compiled variant"
        )
    torch_text = f"{env.torch_version[0]}.{env.torch_version[1]}"
    try:
        cpu = normalize_cpu(env.cpu)
    except ValueError as error:
        raise UnsupportedEnvironmentError(str(error)) from None
    if env.os not in OPERATING_SYSTEMS:
        raise UnsupportedEnvironmentError(
            f"unsupported OS {env.os!r}: variants exist for {', '.join(OPERATING_SYSTEMS)}"
        )
    env_backend = backends.find(env.backend)
    if env_backend is not None and env_backend.versioned and env.backend_version is None:
        raise UnsupportedEnvironmentError(
            f"cannot name a variant for backend {env.backend}: its version could not be detected"
        )
    try:
        if stable_abi is not None:
            abi = to_major_minor(stable_abi)
            if abi > env.torch_version:
                raise UnsupportedEnvironmentError(
                    f"Torch {torch_text} is older than the stable ABI {abi[0]}.{abi[1]}; "
                    f"install torch>={abi[0]}.{abi[1]}"
                )
            return Variant("torch-stable-abi", abi, env.backend_version, None, env.backend, cpu, env.os)
        cxx_abi: CxxAbi | None = None
        if env.os == "linux":
            if env.cxx11_abi is not True:
                raise UnsupportedEnvironmentError(
                    f"Torch {torch_text} was not built with the C++11 ABI "
                    f"(torch.compiled_with_cxx11_abi() is not True); Linux variants need a cxx11 Torch"
                )
            cxx_abi = "cxx11"
        return Variant("torch", env.torch_version, env.backend_version, cxx_abi, env.backend, cpu, env.os)
    except UnsupportedEnvironmentError:
        raise
    except ValueError as error:
        raise UnsupportedEnvironmentError(f"cannot name this environment's variant: {error}") from None
