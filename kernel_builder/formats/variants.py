"""Variant names: the ``build/<variant>/`` directory names, their parser and how they are derived.

One implementation, shared by the build tool and the loader (docs/layout.md). A :class:`Variant` holds the
parts of a name; :attr:`Variant.name` renders it and :func:`parse_variant` reads it back, so that
``parse_variant(v.name) == v`` for every variant and ``parse_variant(s).name == s`` for every valid name.

Version encoding (docs/layout.md): a framework version (Torch, stable ABI, tvm-ffi) is its major digit followed
by its minor (``2.12`` → ``212``, ``2.9`` → ``29``, ``0.1`` → ``01``), so the major must be one digit; a compute
version is its major followed by its minor digit (``12.6`` → ``cu126``, ``2025.3`` → ``xpu20253``), so the minor
must be one digit. Parsers rely on both rules. Non-canonical digit strings (a leading zero that would not survive
a round trip) are rejected.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import kernel_builder.backends as backends
from kernel_builder.backends import noarch
from kernel_builder.errors import KernelBuilderError
from kernel_builder.formats.runtime import Environment, detect_environment, normalize_cpu

__all__ = [
    "CPUS",
    "OPERATING_SYSTEMS",
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

VariantKind = Literal["torch", "torch-stable-abi", "tvm-ffi", "noarch", "universal"]
CxxAbi = Literal["cxx11", "cxx98"]

CPUS = ("x86_64", "aarch64")
OPERATING_SYSTEMS = ("linux", "darwin", "windows")

_STABLE_PREFIX = "torch-stable-abi"
_TVM_FFI_PREFIX = "tvm-ffi"
_NOARCH_PREFIX = noarch.NOARCH_PREFIX
_TORCH_PREFIX = "torch"
_UNIVERSAL = noarch.UNIVERSAL_NAME


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
    """The compute part of a name: ``("cuda", (13, 0))`` → ``"cu130"``, ``("metal", None)`` → ``"metal"``."""
    found = backends.find(backend)
    if found is None:
        raise _unknown_backend(backend)
    return found.variant_part(version)


@dataclass(frozen=True)
class Variant:
    """The parts of a variant directory name (docs/layout.md). Invalid combinations raise ``ValueError``.

    ``backend`` is a registered backend (:mod:`kernel_builder.backends`), or ``"universal"`` for the legacy
    ``torch-universal`` kind.
    ``framework_version`` is the Torch version (kind ``torch``), the stable-ABI version (``torch-stable-abi``) or
    the tvm-ffi version (``tvm-ffi``); noarch and universal variants have no versions, CPU or OS.
    """

    kind: VariantKind
    framework_version: tuple[int, int] | None
    backend_version: tuple[int, int] | None
    cxx_abi: CxxAbi | None
    backend: str
    cpu: str | None
    os: str | None

    def __post_init__(self) -> None:
        if self.kind in ("noarch", "universal"):
            if self.kind == "universal" and self.backend != "universal":
                raise ValueError(f"a universal variant has backend 'universal', not {self.backend!r}")
            if self.kind == "noarch" and backends.find(self.backend) is None:
                raise _unknown_backend(self.backend)
            extra = [
                name
                for name in ("framework_version", "backend_version", "cxx_abi", "cpu", "os")
                if getattr(self, name) is not None
            ]
            if extra:
                raise ValueError(f"a {self.kind} variant has no {', '.join(extra)}")
            return
        if self.kind not in ("torch", "torch-stable-abi", "tvm-ffi"):
            raise ValueError(f"unknown variant kind {self.kind!r}")
        if self.framework_version is None:
            raise ValueError(f"a {self.kind} variant needs a framework_version")
        framework_version_name(self.framework_version, _FRAMEWORK_LABEL[self.kind])
        compute_name(self.backend, self.backend_version)
        if self.cxx_abi is not None and self.kind != "torch":
            raise ValueError(f"a {self.kind} variant has no C++ ABI tag")
        if self.cxx_abi not in (None, "cxx11", "cxx98"):
            raise ValueError(f"unknown C++ ABI tag {self.cxx_abi!r} (expected cxx11 or cxx98)")
        if self.cpu not in CPUS:
            raise ValueError(f"unknown CPU {self.cpu!r} (expected one of {', '.join(CPUS)})")
        if self.os not in OPERATING_SYSTEMS:
            raise ValueError(f"unknown OS {self.os!r} (expected one of {', '.join(OPERATING_SYSTEMS)})")

    @property
    def compute(self) -> str | None:
        """The compute part of the name (``cu130``, ``metal``, …); ``None`` for noarch and universal variants."""
        if self.kind in ("noarch", "universal"):
            return None
        return compute_name(self.backend, self.backend_version)

    @property
    def name(self) -> str:
        """The directory name, e.g. ``torch212-cxx11-cu126-x86_64-linux`` or ``torch-cuda``."""
        if self.kind == "universal":
            return _UNIVERSAL
        if self.kind == "noarch":
            return noarch.noarch_name(self.backend)
        assert self.framework_version is not None
        version = framework_version_name(self.framework_version)
        tail = f"{self.compute}-{self.cpu}-{self.os}"
        if self.kind == "torch-stable-abi":
            return f"{_STABLE_PREFIX}{version}-{tail}"
        if self.kind == "tvm-ffi":
            return f"{_TVM_FFI_PREFIX}{version}-{tail}"
        abi = f"-{self.cxx_abi}" if self.cxx_abi else ""
        return f"{_TORCH_PREFIX}{version}{abi}-{tail}"

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


def _canonical_digits(digits: str) -> bool:
    return _ascii_digits(digits) and (digits == "0" or not digits.startswith("0"))


def _parse_framework_version(name: str, digits: str, what: str) -> tuple[int, int]:
    if not _ascii_digits(digits) or len(digits) < 2:
        raise ValueError(
            f"invalid variant name {name!r}: {what} version {digits!r} must be at least two digits "
            f"(major digit, then minor)"
        )
    if not _canonical_digits(digits[1:]):
        raise ValueError(
            f"invalid variant name {name!r}: {what} version {digits!r} has a minor with a leading zero"
        )
    return int(digits[0]), int(digits[1:])


def _parse_compute(name: str, compute: str) -> tuple[str, tuple[int, int] | None]:
    plain = backends.find(compute)
    if plain is not None and not plain.versioned:
        return compute, None
    versioned = [b for b in backends.all_backends() if b.compute_prefix is not None]
    for backend in sorted(versioned, key=lambda b: len(b.compute_prefix or ""), reverse=True):
        prefix = backend.compute_prefix or ""
        if compute.startswith(prefix):
            digits = compute[len(prefix) :]
            if not _ascii_digits(digits) or len(digits) < 2:
                raise ValueError(
                    f"invalid variant name {name!r}: compute {compute!r} needs at least two digits after "
                    f"{prefix!r} (major, then minor digit)"
                )
            if not _canonical_digits(digits[:-1]):
                raise ValueError(
                    f"invalid variant name {name!r}: compute {compute!r} has a major with a leading zero"
                )
            return backend.name, (int(digits[:-1]), int(digits[-1]))
    plain_names = ", ".join(b.name for b in backends.all_backends() if not b.versioned)
    prefixes = "/".join(b.compute_prefix or "" for b in versioned)
    raise ValueError(
        f"invalid variant name {name!r}: unknown compute {compute!r} "
        f"(expected {plain_names}, or {prefixes} followed by a version)"
    )


def _parse_arch(name: str, kind: VariantKind, rest: str) -> Variant:
    """Parse what follows the kind's prefix: ``<version>[-<abi>]-<compute>-<cpu>-<os>``."""
    what = _FRAMEWORK_LABEL[kind]
    digits, _, tail = rest.partition("-")
    framework_version = _parse_framework_version(name, digits, what)
    parts = tail.split("-") if tail else []
    cxx_abi: CxxAbi | None = None
    if kind == "torch" and parts and parts[0].startswith("cxx"):
        tag = parts.pop(0)
        if tag == "cxx11":
            cxx_abi = "cxx11"
        elif tag == "cxx98":
            cxx_abi = "cxx98"
        else:
            raise ValueError(
                f"invalid variant name {name!r}: unknown C++ ABI tag {tag!r} (expected cxx11 or cxx98)"
            )
    if len(parts) != 3:
        raise ValueError(
            f"invalid variant name {name!r}: expected '<compute>-<cpu>-<os>' after the {what} version, "
            f"got {'-'.join(parts)!r}"
        )
    compute, cpu, os_name = parts
    backend, backend_version = _parse_compute(name, compute)
    if cpu not in CPUS:
        raise ValueError(f"invalid variant name {name!r}: unknown CPU {cpu!r} (expected {' or '.join(CPUS)})")
    if os_name not in OPERATING_SYSTEMS:
        raise ValueError(
            f"invalid variant name {name!r}: unknown OS {os_name!r} (expected {', '.join(OPERATING_SYSTEMS)})"
        )
    return Variant(kind, framework_version, backend_version, cxx_abi, backend, cpu, os_name)


def parse_variant(name: str) -> Variant:
    """Parse a variant directory name; ``ValueError`` names the part that failed. Names are ASCII only."""
    if not name.isascii():
        raise ValueError(
            f"invalid variant name {name!r}: it has non-ASCII characters (variant names are ASCII letters, "
            f"digits, '-' and '_'); a look-alike character is never read as a version digit"
        )
    if name == _UNIVERSAL:
        return Variant("universal", None, None, None, "universal", None, None)
    if name.startswith(_STABLE_PREFIX):
        return _parse_arch(name, "torch-stable-abi", name[len(_STABLE_PREFIX) :])
    if name.startswith(_TVM_FFI_PREFIX):
        return _parse_arch(name, "tvm-ffi", name[len(_TVM_FFI_PREFIX) :])
    if name.startswith(_NOARCH_PREFIX):
        token = name[len(_NOARCH_PREFIX) :]
        backend = noarch.backend_for_token(token) if token != "universal" else None
        if backend is None or token != noarch.noarch_name(backend).removeprefix(_NOARCH_PREFIX):
            choices = ", ".join(noarch.tokens())
            raise ValueError(
                f"invalid variant name {name!r}: unknown noarch backend {token!r} (expected one of {choices})"
            )
        return noarch_variant(backend)
    if name.startswith(_TORCH_PREFIX):
        return _parse_arch(name, "torch", name[len(_TORCH_PREFIX) :])
    raise ValueError(
        f"invalid variant name {name!r}: expected it to start with 'torch', 'torch-stable-abi', 'tvm-ffi' or 'torch-'"
    )


def noarch_variant(backend: str) -> Variant:
    """The noarch variant of a backend: ``"cuda"`` → ``torch-cuda``; ``"cann"`` (or ``"npu"``) → ``torch-npu``."""
    canonical = noarch.backend_for_token(backend) or backend
    if canonical == noarch.UNIVERSAL:
        return Variant("universal", None, None, None, "universal", None, None)
    return Variant("noarch", None, None, None, canonical, None, None)


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
