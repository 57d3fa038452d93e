"""The backend registry: every module asks it what a backend is instead of comparing backend names.

A :class:`Backend` gathers everything the tool knows about one compute backend (cpu, cuda, rocm, …): the
build.toml keys that belong to it, how its compute part of a variant name is spelled, whether this tool can
compile it and with which CMake language and toolchain, which GPU architectures its variants list and how the
loader judges a variant against the running environment. One module per backend (``cpu.py``, ``cuda.py``, …)
builds its ``Backend`` and :mod:`kernel_builder.backends` registers them in a fixed order; adding a backend means
adding one such module and its tests (docs/backends.md).

This module is imported by the config validator, the shared formats, the build stages and the loader, so it
imports nothing of theirs and nothing heavy.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from kernel_builder.errors import KernelBuilderError

__all__ = [
    "Backend",
    "BackendExistsError",
    "GpuArchKind",
    "GpuArchs",
    "TorchBuild",
    "UnknownBackendError",
    "all_backends",
    "by_alias",
    "find",
    "get",
    "names",
    "register",
    "torch_build_attributes",
    "torch_build_of",
    "unregister",
]

GpuArchKind = Literal["capability", "gfx"]


@dataclass(frozen=True)
class GpuArchs:
    """How a GPU backend's variants list architectures and how the loader checks a visible GPU against them."""

    kind: GpuArchKind
    """``capability``: CUDA compute capabilities (``9.0``); ``gfx``: ROCm architecture names (``gfx942``)."""
    entry_valid: Callable[[str], bool]
    """Whether a metadata.json ``backend.archs`` entry is one the loader can judge (others are ignored)."""
    device_runs: Callable[[Any], Callable[[str], bool]]
    """``device_runs(device)(entry)``: whether a visible device runs code built for ``entry``."""
    describe_device: Callable[[Any], str]
    """How messages name a device: ``compute capability 9.0``, ``architecture gfx942``."""


#: ``major.minor`` at the start of a version, whole numbers both (``13.0``, ``13.0.1``; not ``13.0a``).
MAJOR_MINOR = r"([0-9]+)\.([0-9]+)(?:\.|$)"


@dataclass(frozen=True)
class TorchBuild:
    """How a Torch built for a backend says so in ``torch/version.py``, which the build reads without importing
    Torch: the attribute that is set (``torch.version.cuda``) and how its value spells the backend's version."""

    attribute: str
    """The ``torch.version`` attribute: ``cuda``, ``hip``, ``xpu``."""
    patterns: tuple[str, ...] = (MAJOR_MINOR,)
    """Regular expressions tried in turn at the start of the value, the first match giving ``(major, minor)`` from
    its two groups (xpu's ``20250300`` is 2025.3); none matching: the version cannot be read (``None``)."""

    def version(self, value: str) -> tuple[int, int] | None:
        for pattern in self.patterns:
            match = re.match(pattern, value.strip(), re.ASCII)
            if match is not None:
                return int(match[1]), int(match[2])
        return None


@dataclass(frozen=True)
class Backend:
    """One compute backend. Only ``name`` is required: the defaults describe a backend that variants and
    build.toml may name but that has no compiled kernel sections, no ``[general.<name>]`` table and no build
    support here (the state of neuron or tpu today)."""

    name: str
    """The name used in build.toml ``backends``, metadata.json ``backend.type`` and ``backend=`` of the loader."""

    # --- variant names (docs/layout.md) -----------------------------------------------------------------------
    compute_prefix: str | None = None
    """Versioned backends: the prefix of the compute part (``cu`` → ``cu130``). ``None``: the compute part is
    the name itself and takes no version (``cpu``, ``metal``)."""
    aliases: tuple[str, ...] = ()
    """Other names the loader's ``backend=`` accepts for this backend (``npu`` for cann)."""

    # --- build.toml (docs/build-toml.md) ----------------------------------------------------------------------
    kernel_sections: bool = False
    """Whether ``[kernel.<name>]`` sections may use ``backend = "<name>"`` (the backend has a compiled form)."""
    kernel_keys: tuple[str, ...] = ()
    """``[kernel.<name>]`` keys valid only with this backend (``cuda-capabilities``, …)."""
    general_table: frozenset[str] | None = None
    """The keys of its ``[general.<name>]`` table, ``None`` when it has none."""
    source_suffixes: tuple[str, ...] = ()
    """Source suffixes that only this backend (and others listing them) compiles (``.cu``, ``.metal``, …); the
    first is its usual one, suggested for a kernel section without ``src``."""

    # --- the variant matrix (kernel_builder/formats/build-matrix.json) ----------------------------------------
    in_matrix: bool = False
    """Whether matrix entries may name the backend."""
    pip_provisioned: bool = False
    """Whether its build environments are provisioned with pip (its matrix entries then need a ``torch-pin``)."""

    # --- building (docs/building.md) --------------------------------------------------------------------------
    buildable: bool = False
    """Whether this kernel-builder compiles its variants (on the buildable host)."""
    cmake_define: str | None = None
    """The ``<NAME>_KERNEL`` definition that tells sources which backend they are compiled for."""
    use_define: str | None = None
    """An extra ``USE_<NAME>=1`` definition Torch extension headers expect, if any."""
    cmake_languages: tuple[str, ...] = ("CXX",)
    """The languages of the generated CMake ``project()``."""
    torch_libraries: tuple[str, ...] = ()
    """Regular expressions of the shared libraries its Torch wheels bring, which an extension may link
    (``DT_NEEDED``) beyond libtorch's common ones (the ABI check)."""
    needs_nvcc: bool = False
    """Whether the build needs a CUDA toolkit (nvcc), matched to the Torch's CUDA version."""
    ships_triton: bool = False
    """Whether Torch's Linux builds for this backend install Triton (a kernel may import it unconditionally)."""
    torch_build: TorchBuild | None = None
    """How a build interpreter's Torch is recognised as built for it, and its compute version read (``None``: no
    Torch names it in ``version.py``; a Torch that names no backend is a CPU build)."""
    cmake_fragment: Path | None = None
    """A CMake file its generated projects include after ``KernelBuilder.cmake``: what only this backend's builds
    do, in the hooks that file calls (``kb_backend_torch``, ``kb_backend_extension``); ``None``: nothing more."""
    cross_builds: bool = False
    """Whether a host also compiles its variants for another system, from that system's Torch (docs/cross.md)."""

    # --- architectures and loading (docs/loading.md) ----------------------------------------------------------
    gpu: GpuArchs | None = None
    """Its GPU architectures (metadata.json ``backend.archs``, the loader's device check); ``None``: it has none."""
    arch_key: str | None = None
    """The build.toml key listing its GPU architectures, in kernel sections and ``[torch-noarch]``
    (``cuda-capabilities``, ``rocm-archs``)."""
    title: str | None = None
    """How messages name the backend with a version (``CUDA 13.0``); ``None`` means its name."""
    abi_compatible_minor: bool = False
    """Loader rule for versioned backends: ``True`` accepts a variant of the same major and an older or equal
    minor (CUDA's compatibility promise, and ROCm's since ``kernels`` 0.19); ``False`` needs the exact compute
    version."""
    loads_everywhere: bool = False
    """Whether every environment can load its variants (cpu): the fallback of the loader and of ``dev``."""
    min_macos: tuple[int, int] | None = None
    """The oldest macOS its variants load on (metal)."""

    @property
    def gpu_arch(self) -> GpuArchKind | None:
        """The kind of its architecture entries, ``None`` for backends without GPU architectures."""
        return None if self.gpu is None else self.gpu.kind

    @property
    def versioned(self) -> bool:
        """Whether its compiled variants carry a compute version (``cu130``, ``rocm63``)."""
        return self.compute_prefix is not None

    @property
    def compute_part_stem(self) -> str:
        """What its compute part starts with: the prefix of a versioned backend, else the name."""
        return self.compute_prefix or self.name

    @property
    def noarch_name(self) -> str:
        """The word after ``torch-`` of its noarch variant directory: its name, since loaders compare that word
        with the selected backend's name."""
        return self.name

    def variant_part(self, version: tuple[int, int] | None) -> str:
        """The compute part of a compiled variant name: ``cuda`` and ``(13, 0)`` → ``cu130``; ``cpu`` → ``cpu``."""
        if self.compute_prefix is None:
            if version is not None:
                raise ValueError(f"backend {self.name} takes no version, got {version[0]}.{version[1]}")
            return self.name
        if version is None:
            raise ValueError(f"backend {self.name} needs a version to name a compiled variant")
        major, minor = version
        if major < 0 or not 0 <= minor <= 9:
            raise ValueError(
                f"{self.name} version {major}.{minor} cannot be encoded in a variant name: the minor must be "
                "one digit"
            )
        return f"{self.compute_prefix}{major}{minor}"


class UnknownBackendError(KeyError, KernelBuilderError):
    """No backend of that name is registered."""


class BackendExistsError(ValueError, KernelBuilderError):
    """A backend of that name (or one of its spellings) is registered already."""


_REGISTRY: dict[str, Backend] = {}


def register(backend: Backend) -> Backend:
    """Add a backend; its name, noarch token, compute prefix and aliases must not clash with another's."""
    for other in _REGISTRY.values():
        mine = {backend.name, backend.noarch_name, *backend.aliases}
        theirs = {other.name, other.noarch_name, *other.aliases}
        if mine & theirs:
            taken = ", ".join(sorted(mine & theirs))
            raise BackendExistsError(f"backend {backend.name}: {taken} already names backend {other.name}")
        if backend.compute_part_stem == other.compute_part_stem:
            raise BackendExistsError(
                f"backend {backend.name}: compute part {backend.compute_part_stem!r} is backend {other.name}'s already"
            )
    _REGISTRY[backend.name] = backend
    return backend


def unregister(name: str) -> None:
    """Remove a backend (tests that register their own)."""
    if _REGISTRY.pop(name, None) is None:
        raise UnknownBackendError(name)


def get(name: str) -> Backend:
    """The backend of that name; :class:`UnknownBackendError` when there is none."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownBackendError(name) from None


def find(name: str) -> Backend | None:
    """The backend of that name, or ``None``."""
    return _REGISTRY.get(name)


def all_backends() -> tuple[Backend, ...]:
    """Every registered backend, in registration order."""
    return tuple(_REGISTRY.values())


def by_alias(name: str) -> Backend | None:
    """The backend of that name or alias (the loader's ``backend="npu"`` is cann), or ``None``."""
    found = _REGISTRY.get(name)
    if found is not None:
        return found
    return next((b for b in _REGISTRY.values() if name in b.aliases), None)


def names(*, where: str | None = None) -> tuple[str, ...]:
    """Registered backend names in registration order; ``where`` keeps those whose attribute of that name is
    true (``names(where="kernel_sections")``)."""
    return tuple(b.name for b in _iter(where))


def torch_build_attributes() -> tuple[str, ...]:
    """The ``torch.version`` attributes a registered backend's Torch builds set (what ``version.py`` is read for)."""
    return tuple(b.torch_build.attribute for b in _REGISTRY.values() if b.torch_build is not None)


def torch_build_of(values: Mapping[str, str | None]) -> tuple[str, tuple[int, int] | None]:
    """The backend a Torch was built for and its version, from its ``torch.version`` attributes: the first
    registered backend whose attribute is set, else ``cpu``. The same answer as the loader's
    ``kernel_builder.formats.runtime.detect_backend`` for the running Torch, whose ``_ops.py`` copy cannot ask the
    registry (``tests/test_backends.py`` holds them to it)."""
    for backend in _REGISTRY.values():
        value = values.get(backend.torch_build.attribute) if backend.torch_build is not None else None
        if value:
            assert backend.torch_build is not None
            return backend.name, backend.torch_build.version(value)
    return "cpu", None


def _iter(where: str | None) -> Iterator[Backend]:
    for backend in _REGISTRY.values():
        if where is None or getattr(backend, where):
            yield backend
