"""Rule E20: a kernel whose capability (or arch) intersection is empty for a matrix entry it applies to.

Checked for every CUDA version of the matrix entries that apply to a kernel, and against the ROCm supported
list although ROCm is not built here (docs/build-toml.md). The same problems feed variant planning: an
optional variant they hit is listed as not buildable, with the message as its reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import kernel_builder.backends as backends
from kernel_builder.backends import gpu_archs
from kernel_builder.config.model import BuildConfig, Kernel, Torch
from kernel_builder.config.values import within_bounds
from kernel_builder.formats.matrix import Matrix, MatrixEntry

E20_HINT = "fix `cuda-capabilities`, or set `cuda-minver` so older CUDA skips this kernel"
E20_ROCM_HINT = "fix `rocm-archs`: list at least one supported arch, or remove it to build for all of them"


@dataclass(frozen=True)
class ArchProblem:
    kernel: Kernel
    backend: str
    version: tuple[int, ...] | None  # the CUDA version; None for ROCm (one supported list)
    required: bool  # whether a required matrix entry has that version
    message: str


def applicable_entries(config: BuildConfig, matrix: Matrix, backend: str) -> Iterable[MatrixEntry]:
    """Matrix entries of ``backend`` within the project's Torch and compute-version bounds (docs/build-toml.md)."""
    framework = config.framework
    bounds = config.general.settings(backend)
    for entry in matrix.entries:
        if entry.backend != backend:
            continue
        if isinstance(framework, Torch):
            if not within_bounds(entry.torch, framework.minver, framework.maxver):
                continue
            abi = framework.stable_abi_for(backend)
            if abi is not None and entry.torch < abi.major_minor:
                continue
        if entry.version is not None and not within_bounds(entry.version, bounds.minver, bounds.maxver):
            continue
        yield entry


def kernel_applies(kernel: Kernel, cuda_version: tuple[int, ...]) -> bool:
    """``cuda-minver`` drops only that component from variants with an older CUDA."""
    return kernel.cuda_minver is None or within_bounds(cuda_version, kernel.cuda_minver, None)


def _span(items: Iterable[str]) -> str:
    listed = list(items)
    return f"{listed[0]} … {listed[-1]}" if len(listed) > 2 else ", ".join(listed)


def arch_problems(config: BuildConfig, matrix: Matrix) -> list[ArchProblem]:
    """Every empty intersection of a built kernel section with a matrix entry that applies to it."""
    if not isinstance(config.framework, Torch):
        return []
    problems: list[ArchProblem] = []
    enabled = set(config.general.backends)
    for kernel in config.kernels:
        if kernel.backend not in enabled:
            continue
        gpu_arch = backends.get(kernel.backend).gpu_arch
        if gpu_arch == "capability":
            problems.extend(_cuda_problems(config, matrix, kernel))
        elif gpu_arch == "gfx":
            archs = gpu_archs.select_rocm_archs(kernel.rocm_archs)
            entries = list(applicable_entries(config, matrix, kernel.backend))
            if not archs and entries:
                requested = ", ".join(kernel.rocm_archs or ())
                problems.append(
                    ArchProblem(
                        kernel,
                        kernel.backend,
                        None,
                        any(e.required for e in entries),
                        f"[kernel.{kernel.name}]: none of the requested archs ({requested}) are supported by ROCm "
                        f"(supported: {_span(gpu_archs.ROCM_SUPPORTED_ARCHS)})",
                    )
                )
    return problems


def _cuda_problems(config: BuildConfig, matrix: Matrix, kernel: Kernel) -> list[ArchProblem]:
    required_by_version: dict[tuple[int, int], bool] = {}
    for entry in applicable_entries(config, matrix, kernel.backend):
        if entry.version is None or not kernel_applies(kernel, entry.version):
            continue
        version = (entry.version + (0, 0))[:2]
        key = (version[0], version[1])
        required_by_version[key] = required_by_version.get(key, False) or entry.required
    problems = []
    for version, required in sorted(required_by_version.items()):
        selection = gpu_archs.select_capabilities(kernel.cuda_capabilities, version)
        if selection.archs:
            continue
        requested = ", ".join(kernel.cuda_capabilities or gpu_archs.default_capabilities(version))
        targets = gpu_archs.default_targets(version)
        problems.append(
            ArchProblem(
                kernel,
                kernel.backend,
                version,
                required,
                f"[kernel.{kernel.name}]: none of the requested capabilities ({requested}) can be built with "
                f"CUDA {version[0]}.{version[1]} (supported: {_span(targets)})",
            )
        )
    return problems
