"""The configuration model: a kernel project with edition-5 semantics, whatever form its file had.

Every later stage (planning, generation, packaging, upload) reads only these frozen dataclasses.
Positions (``line``) are kept for build-time diagnostics but take no part in equality, so two files that
mean the same thing give equal models.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kernel_builder.config.values import Version
from kernel_builder.formats.dependencies import KernelDependency


@dataclass(frozen=True)
class BackendSettings:
    """A ``[general.<backend>]`` table: per-backend dependencies (and CUDA version bounds)."""

    python_depends: tuple[str, ...] = ()
    kernel_depends: tuple[KernelDependency, ...] = ()
    minver: Version | None = None
    maxver: Version | None = None


@dataclass(frozen=True)
class Hub:
    repo_id: str | None = None
    branch: str | None = None


@dataclass(frozen=True)
class General:
    name: str
    py_name: str
    version: int
    license: str
    backends: tuple[str, ...]
    upstream: str | None = None
    source: str | None = None
    python_depends: tuple[str, ...] = ()
    kernel_depends: tuple[KernelDependency, ...] = ()
    hub: Hub = Hub()
    backend_settings: tuple[tuple[str, BackendSettings], ...] = ()

    def settings(self, backend: str) -> BackendSettings:
        return dict(self.backend_settings).get(backend, BackendSettings())

    @property
    def cuda(self) -> BackendSettings:
        return self.settings("cuda")

    def python_depends_for(self, backend: str) -> tuple[str, ...]:
        return self.python_depends + self.settings(backend).python_depends

    def kernel_depends_for(self, backend: str) -> tuple[KernelDependency, ...]:
        return self.kernel_depends + self.settings(backend).kernel_depends


@dataclass(frozen=True)
class Torch:
    """``[torch]``: a compiled Torch extension."""

    src: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    pyext: tuple[str, ...] = ("py", "pyi")
    minver: Version | None = None
    maxver: Version | None = None
    cxx_flags: tuple[str, ...] = ()
    #: backend -> stable-ABI version; a string in the file applies to every AOT backend.
    stable_abi: tuple[tuple[str, Version], ...] = ()
    stable_abi_all: Version | None = None

    kind = "torch"

    def stable_abi_for(self, backend: str) -> Version | None:
        return dict(self.stable_abi).get(backend, self.stable_abi_all)


@dataclass(frozen=True)
class TorchNoarch:
    """``[torch-noarch]``: a pure-Python Torch kernel (Triton, plain PyTorch, ...)."""

    pyext: tuple[str, ...] = ("py", "pyi")
    cuda_capabilities: tuple[str, ...] | None = None
    rocm_archs: tuple[str, ...] | None = None

    kind = "torch-noarch"

    def archs_for(self, key: str | None) -> tuple[str, ...] | None:
        """The architectures listed under ``key`` (a backend's ``arch_key``: ``cuda-capabilities``, …)."""
        return {"cuda-capabilities": self.cuda_capabilities, "rocm-archs": self.rocm_archs}.get(key or "")


@dataclass(frozen=True)
class TvmFfi:
    """``[tvm-ffi]``: validated only; not built by this version."""

    src: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    pyext: tuple[str, ...] = ("py", "pyi")
    cxx_flags: tuple[str, ...] = ()

    kind = "tvm-ffi"


Framework = Torch | TorchNoarch | TvmFfi


@dataclass(frozen=True)
class Kernel:
    """One ``[kernel.<name>]`` section: a component of the compiled extension."""

    name: str
    backend: str
    src: tuple[str, ...]
    depends: tuple[str, ...]
    include: tuple[str, ...] = ()
    cxx_flags: tuple[str, ...] = ()
    cuda_capabilities: tuple[str, ...] | None = None
    cuda_flags: tuple[str, ...] = ()
    cuda_minver: Version | None = None
    rocm_archs: tuple[str, ...] | None = None
    hip_flags: tuple[str, ...] = ()
    sycl_flags: tuple[str, ...] = ()
    line: int | None = field(default=None, compare=False)


@dataclass(frozen=True)
class BuildConfig:
    """The meaning of a build.toml, independent of its form and layout."""

    general: General
    framework: Framework
    kernels: tuple[Kernel, ...] = ()

    def aot_backends(self) -> tuple[str, ...]:
        """Backends with compiled variants: those of ``general.backends`` with a kernel section (docs/build-toml.md)."""
        if not isinstance(self.framework, Torch):
            return ()
        used = {k.backend for k in self.kernels}
        return tuple(b for b in self.general.backends if b in used)

    def noarch_backends(self) -> tuple[str, ...]:
        aot = set(self.aot_backends())
        return tuple(b for b in self.general.backends if b not in aot)

    def kernels_for(self, backend: str) -> tuple[Kernel, ...]:
        return tuple(k for k in self.kernels if k.backend == backend)


@dataclass(frozen=True)
class KernelProject:
    """A loaded project: where it lives, which form its file had, and what it means."""

    root: Path
    file: Path
    display_path: str
    form: int
    config: BuildConfig

    @property
    def name(self) -> str:
        return self.config.general.name

    @property
    def py_name(self) -> str:
        return self.config.general.py_name
